use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK")]
#[gsi1()]
struct Leaderboards;

fn main() {}

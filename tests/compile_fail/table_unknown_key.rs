use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pkey = "PK", sk = "SK")]
struct Leaderboards;

fn main() {}

use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK")]
#[table(sk = "SK")]
struct Leaderboards;

fn main() {}

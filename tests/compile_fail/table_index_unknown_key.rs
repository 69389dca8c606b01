use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK")]
#[gsi1(idx = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
struct Leaderboards;

fn main() {}

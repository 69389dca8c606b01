use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK")]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1PK")]
struct Leaderboards;

fn main() {}

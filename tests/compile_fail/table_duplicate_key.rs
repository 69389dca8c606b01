use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", pk = "ID")]
struct Leaderboards;

fn main() {}

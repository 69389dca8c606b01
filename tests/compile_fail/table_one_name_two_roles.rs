use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "ID", sk = "SK", tag = "ID")]
struct Leaderboards;

fn main() {}

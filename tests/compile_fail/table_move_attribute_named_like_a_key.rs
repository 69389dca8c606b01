use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", move_attribute = "SK")]
struct Leaderboards;

fn main() {}

use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", recognize = "tags")]
struct Leaderboards;

fn main() {}

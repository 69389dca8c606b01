use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(name = "lb", pk = "PK", sk = "SK")]
struct Leaderboards;

fn main() {}

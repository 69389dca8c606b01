use sharded::ShardedTable;

#[derive(ShardedTable)]
enum Leaderboards {}

fn main() {}

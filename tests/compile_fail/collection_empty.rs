use sharded::ShardedCollection;

#[derive(ShardedCollection)]
enum GamePage {}

fn main() {}

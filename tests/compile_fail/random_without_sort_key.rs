use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "VOTES#{candidate}", shard = "random", n = 10)]
struct Votes {
    candidate: String,
    count: i64,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
struct OpsEntry {
    at: i64,
    id: String,
}

fn main() {}

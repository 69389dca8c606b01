use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{region}", shard = "random", n = 4)]
#[sk(template = "{at:day}#{id}")]
struct OpsEntry {
    region: String,
    at: i64,
    id: String,
}

fn main() {}

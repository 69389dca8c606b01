use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
#[sk(template = "LOG#{id}#{at}")]
struct OpsEntry {
    at: i64,
    id: String,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}#{seen:hour}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: i64,
    seen: i64,
    id: String,
}

fn main() {}

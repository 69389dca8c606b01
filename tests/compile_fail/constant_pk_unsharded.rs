use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS_LOG")]
#[sk(template = "AT#{at}")]
struct OpsLog {
    at: String,
    message: String,
}

fn main() {}

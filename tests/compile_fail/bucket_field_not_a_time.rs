//! `{field:day}` buckets a time: a `String` field has no instant to bucket.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: String,
    id: String,
}

fn main() {}

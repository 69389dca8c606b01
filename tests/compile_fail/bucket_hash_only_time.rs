//! Writes made at the same moment share their time: hashing it alone puts them on one shard.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}", shard = "hash(at)", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: i64,
    id: String,
}

fn main() {}

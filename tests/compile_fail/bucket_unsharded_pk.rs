//! A day bucket alone is one partition per day: every write of today lands on today's.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:day}")]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: i64,
    id: String,
}

fn main() {}

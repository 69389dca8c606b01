use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    #[sharded(version)]
    version: u64,
    #[sharded(version)]
    revision: u64,
}

fn main() {}

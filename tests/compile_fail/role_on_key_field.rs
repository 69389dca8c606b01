use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    #[sharded(version)]
    rev: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "REV#{rev}")]
struct Keyed {
    #[sharded(updated_at)]
    rev: u64,
}

fn main() {}

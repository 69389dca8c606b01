use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    #[sharded(created_at)]
    created: bool,
}

fn main() {}

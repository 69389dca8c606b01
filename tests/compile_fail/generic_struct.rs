use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "DOC#{doc_id}")]
struct Document<T> {
    doc_id: String,
    body: T,
}

fn main() {}

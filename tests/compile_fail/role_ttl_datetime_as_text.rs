use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    #[sharded(ttl)]
    expires: chrono::DateTime<chrono::Utc>,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "EVENT#{id}")]
enum Event {
    Created { id: String },
    Deleted { id: String },
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "POST#{post_id}")]
#[sk(template = "TAGS#{tags}")]
struct Post {
    post_id: String,
    tags: Vec<String>,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "USER#{user_id}", legacy = "USER#{user_id}")]
struct User {
    user_id: String,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "USER#{user_id}")]
#[gsi1(pk = "EMAIL#{email}")]
struct User {
    user_id: String,
    email: Option<String>,
}

fn main() {}

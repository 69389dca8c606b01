use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "USER#{user_id}", previous_n = 4)]
struct User {
    user_id: String,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "USER#{user_id}", suffix = "#SHARD_{shard}")]
struct User {
    user_id: String,
}

fn main() {}

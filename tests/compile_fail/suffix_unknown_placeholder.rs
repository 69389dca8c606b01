use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "ACTIVE_USERS", shard = "hash(user_id)", n = 10, suffix = "#SHARD_{shrd}")]
#[sk(template = "USER#{user_id}")]
struct ActiveUser {
    user_id: String,
}

fn main() {}

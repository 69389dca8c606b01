use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "PLAYER#{player}")]
struct Player {
    player_id: String,
    name: String,
}

fn main() {}

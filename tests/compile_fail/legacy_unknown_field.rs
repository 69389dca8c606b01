use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, legacy = "GAME#{gme_id}")]
#[sk(template = "{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
}

fn main() {}

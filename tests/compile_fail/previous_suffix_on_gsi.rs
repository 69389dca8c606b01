use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", shard = 4, previous_suffix = "#SHARD_{shard}")]
struct Score {
    game_id: String,
    player_id: String,
}

fn main() {}

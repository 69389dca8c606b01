use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[gsi1(template = "PLAYER#{player_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

fn main() {}

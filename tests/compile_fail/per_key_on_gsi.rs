use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
#[gsi1(pk = "PLAYER#{player_id}", shard = 4, max_n = 16)]
#[gsi2(pk = [game_id], sk = [score], shard = 4, max_n = 16)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

fn main() {}

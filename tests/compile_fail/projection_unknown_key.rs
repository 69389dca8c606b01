use serde::{Deserialize, Serialize};
use sharded::{ShardedEntity, ShardedProjection};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedProjection, Deserialize)]
#[projection(entity = Score)]
struct ScoreLine {
    player_id: String,
}

fn main() {}

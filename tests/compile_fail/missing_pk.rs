use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sk(template = "SCORE#{score}")]
struct Score {
    game_id: String,
    score: u64,
}

fn main() {}

//! `player_id` ends the sort-key template: below `score == 100` a strict `<` on it is not one
//! DynamoDB key condition (`BETWEEN` is closed and the bound is an item's key), so no
//! real `sk_player_id_lt` is generated: a hidden stub whose bound fails with the reason.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

fn main() {
    let _ = Score::sk_player_id_lt(100, "p5");
}

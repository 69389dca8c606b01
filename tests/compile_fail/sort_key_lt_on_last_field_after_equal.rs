//! `player_id` ends the sort-key template: below `score == 100` a strict `<` on it is not one
//! DynamoDB key condition (`BETWEEN` is closed and the bound is an item's key), so `lt` after
//! an `eq` on the field that ends the template has a bound no state meets, saying why.

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
    let _ = Score::sk_sort().eq(100).lt("p5");
}

use serde::{Deserialize, Serialize};
use sharded::{Query, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

fn scores_after(q: Query<Score>) -> Query<Score> {
    // Only `score` is held: a whole-key bound needs `player_id` too.
    q.after(Score::sk_sort().eq(100))
}

fn main() {}

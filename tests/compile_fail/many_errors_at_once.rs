use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = "x")]
#[pk(template = "GAME#{gme_id}", shard = "hsh(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "ELECTION#2024")]
struct Score {
    game_id: String,
    player_id: String,
    score: f64,
}

fn main() {}

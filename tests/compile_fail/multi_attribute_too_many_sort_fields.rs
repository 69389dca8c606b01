use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id], sk = [score, level, player_id, at, id], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    player_id: String,
    score: u64,
    level: u32,
    at: i64,
}

fn main() {}

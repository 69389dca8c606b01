use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id], sk = [score])]
struct Run {
    id: String,
    game_id: String,
    score: u64,
}

fn main() {}

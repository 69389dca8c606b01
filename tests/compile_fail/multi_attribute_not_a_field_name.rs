use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// A multi-attribute key lists fields by name, not as strings or expressions.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = ["game_id"], sk = [score], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    score: u64,
}

fn main() {}

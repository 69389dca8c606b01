use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id], sk = [rating], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    rating: f64,
}

fn main() {}

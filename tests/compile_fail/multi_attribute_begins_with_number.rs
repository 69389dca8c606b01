use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id], sk = [score], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    score: u64,
}

fn main() {
    let _ = Run::gsi1_sort().begins_with(1u64);
}

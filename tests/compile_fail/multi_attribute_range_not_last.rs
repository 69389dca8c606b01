use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id], sk = [score, player_id], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    player_id: String,
    score: u64,
}

fn main() {
    // DynamoDB takes a range on the last conditioned attribute only.
    let _ = Run::gsi1_sort().gt(100).eq("p5");
}

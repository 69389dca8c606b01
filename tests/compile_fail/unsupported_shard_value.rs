use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = 10)]
struct Score {
    game_id: String,
    player_id: String,
}

fn main() {
    let _ = Score::pk_logical("g1");
}

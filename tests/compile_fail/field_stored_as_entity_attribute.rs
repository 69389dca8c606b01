use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
struct Score {
    game_id: String,
    player_id: String,
    #[serde(rename = "_entity")]
    kind: String,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "GAME#{game_id}-{season}",
    shard = "hash(player_id)",
    n = 10
)]
struct Score {
    game_id: String,
    season: u16,
    player_id: String,
}

fn main() {}

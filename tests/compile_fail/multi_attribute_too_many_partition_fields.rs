use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// Four partition fields and the shard attribute: five, and DynamoDB takes four.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [game_id, region, season, mode], sk = [score], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    region: String,
    season: u32,
    mode: String,
    score: u64,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [], sk = [score], shard = 4)]
struct Run {
    id: String,
    score: u64,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(Serialize, Deserialize)]
struct Region {
    code: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "REGION#{region}", shard = "hash(store_id)", n = 4)]
struct Store {
    region: Region,
    store_id: String,
}

fn main() {}

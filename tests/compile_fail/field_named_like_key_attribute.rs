use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "ORDER#{order_id}")]
struct Order {
    order_id: String,
    pk: String,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// serde turns `_pk` into `pk` under camelCase (PascalCase `Pk`, first letter lowered).
#[derive(ShardedEntity, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[pk(template = "ORDER#{order_id}")]
struct Order {
    order_id: String,
    _pk: String,
}

fn main() {}

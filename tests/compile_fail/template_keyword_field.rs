use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// The field is `r#type`: a template names it as the struct does.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "T#{type}", shard = "hash(id)", n = 4)]
struct Item {
    r#type: String,
    id: String,
}

fn main() {}

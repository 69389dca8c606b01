use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "THREAT#{brand}", shard = "hash(id)", n = 4)]
#[sk(template = "{id}")]
#[gsi1(pk = "BRAND#{brand}#{at:month}", sk = "ALERT#{kind}", shard = 4)]
struct Threat {
    brand: String,
    id: String,
    kind: String,
    at: i64,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "BRAND_INDEX", single_partition = "")]
#[sk(template = "BRAND#{brand}")]
struct Brand {
    brand: String,
}

fn main() {}

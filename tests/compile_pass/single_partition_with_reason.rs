//! A constant, unsharded partition key is accepted when the user says why it stays small.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "BRAND_INDEX",
    single_partition = "brand registrations: < 100/day"
)]
#[sk(template = "BRAND#{brand}")]
struct Brand {
    brand: String,
    owner: String,
}

fn main() {
    assert_eq!(Brand::pk().unwrap(), "BRAND_INDEX");
    assert_eq!(Brand::sk("acme").unwrap(), "BRAND#acme");
}

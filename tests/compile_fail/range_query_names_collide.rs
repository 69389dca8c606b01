use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// `<query>_range` drops the trailing underscore of `by_day_`: both keys would generate
// `by_day_range`.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "LOG#{at:day}", shard = "hash(id)", n = 2, query = "by_day")]
#[sk(template = "{at}#{id}")]
#[gsi1(pk = "AGENT#{agent}#{at:month}", sk = "{at}#{id}", shard = 2, query = "by_day_")]
struct Log {
    at: DateTime<Utc>,
    id: String,
    agent: String,
}

fn main() {}

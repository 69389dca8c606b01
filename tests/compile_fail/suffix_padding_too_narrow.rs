use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "EVENTS", shard = "hash(id)", n = 200, suffix = "#{shard:02}")]
#[sk(template = "E#{id}")]
struct Event {
    id: String,
}

fn main() {}

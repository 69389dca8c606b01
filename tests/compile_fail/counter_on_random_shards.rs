use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "LOG#{day}", shard = "random", n = 4)]
#[sk(template = "{id}")]
#[counter(name = "views", n = 10)]
struct LogLine {
    day: String,
    id: String,
}

fn main() {}

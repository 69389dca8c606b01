use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// A field named `__` in a sort key: `sk_<field>_eq` would have no field part.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "G#{game_id}", shard = "hash(__)", n = 4)]
#[sk(template = "S#{__}")]
struct Score {
    game_id: String,
    __: u32,
}

fn main() {}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// A field named `__` before a literal in a sort key: `sk_prefix_<field>` would have no
// field part.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "G#{game_id}", shard = "hash(__)", n = 4)]
#[sk(template = "S#{__}#END")]
struct Score {
    game_id: String,
    __: u32,
}

fn main() {}

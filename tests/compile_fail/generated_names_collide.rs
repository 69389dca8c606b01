use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// `sk_prefix_<field>` drops the field's trailing underscore: `{a_}` and `{a}` would both
// generate `sk_prefix_a`.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "G#{game_id}", shard = "hash(a)", n = 4)]
#[sk(template = "S#{a_}#{a}#END")]
struct Score {
    game_id: String,
    a_: u32,
    a: String,
}

fn main() {
    // Still callable after the error: the fallback emits each name once.
    let _ = Score::sk_prefix_a(1);
}

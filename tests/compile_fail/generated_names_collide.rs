use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

// `sk_<field>_<op>` drops the field's trailing underscore: `{a_}` and `{a}` would both
// generate `sk_a_eq`.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "G#{game_id}", shard = "hash(a)", n = 4)]
#[sk(template = "S#{a_}#{a}")]
struct Score {
    game_id: String,
    a_: u32,
    a: String,
}

fn main() {
    // Still callable after the error: the fallback emits each name once.
    let _ = Score::sk_a_eq(1);
}

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "RUN#{id}")]
#[gsi1(pk = [gme_id], sk = [score], shard = 4)]
struct Run {
    id: String,
    game_id: String,
    score: u64,
}

fn main() {
    // The query keeps its signature (the field `gme_id` most likely meant): one error only.
    let _ = |repo: &sharded::Repo<Run>| Run::query_gsi1(repo, "g1");
}

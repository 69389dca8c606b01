use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "CANDIDATE#{candidate}", shard = "random", n = 10)]
#[sk(template = "VOTER#{voter_id}")]
#[gsi1(pk = "ELECTION#2024", sk = "VOTER#{voter_id}")]
struct Vote {
    candidate: String,
    voter_id: String,
}

fn main() {}

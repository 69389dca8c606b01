use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "ELECTION#{election}")]
#[sk(template = "CANDIDATE#{name}")]
#[counter(name = "votes", n = 10)]
#[counter(name = "votes_", n = 4)]
struct Candidate {
    election: String,
    name: String,
}

fn main() {}

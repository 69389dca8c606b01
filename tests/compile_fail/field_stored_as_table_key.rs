use serde::{Deserialize, Serialize};
use sharded::{ShardedEntity, ShardedTable};

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK")]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
struct Leaderboards;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = Leaderboards)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[serde(rename_all = "UPPERCASE")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    pk: String,
    #[serde(rename = "GSI1PK")]
    index_key: String,
}

fn main() {}

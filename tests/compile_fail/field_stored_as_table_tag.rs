use serde::{Deserialize, Serialize};
use sharded::{ShardedEntity, ShardedTable};

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", tag = "_type")]
struct Leaderboards;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = Leaderboards)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    _type: String,
}

fn main() {}

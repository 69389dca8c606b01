//! A GSI refused by validation (a random shard moves items between GSI shards) is one error
//! under its `shard`: its query and key builders still exist, so the calls below report
//! nothing.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = "random", n = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

async fn _calls(repo: Repo<Score>) -> Result<(), sharded::Error> {
    let _: Vec<Score> = Score::query_gsi1(&repo, "p1").limit(5).collect().await?;
    let _: Vec<Score> = Score::query(&repo, "g1").collect().await?;
    let _: String = Score::gsi1_pk_on_shard("p1", 2)?;
    let _: usize = Score::gsi1_pk_all_shards("p1")?.count();
    let _: String = Score::gsi1_sk("g1")?;
    let (_game,): (String,) = Score::parse_gsi1_sk("GAME#g1")?;
    let _: Option<Score> = Score::get(&repo, "g1", "p1", 7).await?;
    Ok(())
}

fn main() {}

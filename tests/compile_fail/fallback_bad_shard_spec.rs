//! A misspelled shard expression is one error under it: the builders keep the arity of the
//! `hash(player_id)` it meant, so calls written against that API report nothing.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hsh(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

async fn _calls(repo: Repo<Score>) -> Result<(), sharded::Error> {
    let _: Vec<Score> = Score::query(&repo, "g1").descending().collect().await?;
    let _: Option<Score> = Score::get(&repo, "g1", "p1", 42).await?;
    Score::delete(&repo, "g1", "p1", 42).await?;
    let _: String = Score::pk("g1", "p1")?;
    let _: u32 = Score::shard_for("p1")?;
    let _: String = Score::pk_on_shard("g1", 3)?;
    let (_game, _shard): (String, u32) = Score::parse_pk("GAME#g1#3")?;
    let _: String = Score::sk(42, "p1")?;
    Ok(())
}

fn main() {}

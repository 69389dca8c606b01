//! A misspelled key is one error under it, and is read as the key it meant (`templte` as
//! `template`), so the entity keeps its whole API and the calls below report nothing.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(templte = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

async fn _calls(repo: Repo<Score>) -> Result<(), sharded::Error> {
    let _: u64 = Score::query(&repo, "g1").count().await?;
    let _: Option<Score> = Score::get(&repo, "g1", "p1", 42).await?;
    let _: String = Score::pk("g1", "p1")?;
    let _: String = Score::sk(42, "p1")?;
    let _: String = Score::sk_prefix_score(42)?;
    Ok(())
}

fn main() {}

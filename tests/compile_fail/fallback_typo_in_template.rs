//! A typo in a template is one error under the template: every generated function still
//! exists with the signature the user meant (`gme_id` is read as `game_id`), so the call
//! sites below report nothing.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{gme_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

async fn _calls(repo: Repo<Score>, score: Score) -> Result<(), sharded::Error> {
    let _: Vec<Score> = Score::query(&repo, "g1").limit(10).collect().await?;
    let _: Vec<Score> = Score::query_gsi1(&repo, "p1").collect().await?;
    let _: Option<Score> = Score::get(&repo, "g1", "p1", 42).await?;
    Score::delete(&repo, "g1", "p1", 42).await?;
    repo.put(&score).await?;
    let _: String = Score::pk("g1", "p1")?;
    let _: String = Score::pk_logical("g1")?;
    let _: String = Score::pk_on_shard("g1", 3)?;
    let _: usize = Score::pk_all_shards("g1")?.count();
    let _: u32 = Score::shard_for("p1")?;
    let (_game, _shard): (String, u32) = Score::parse_pk("GAME#g1#3")?;
    let _: String = Score::sk(42, "p1")?;
    let _: &str = Score::sk_prefix();
    let _: String = Score::sk_prefix_score(42)?;
    let (_score, _player): (u64, String) = Score::parse_sk("SCORE#1#p1")?;
    let _: String = Score::gsi1_pk_on_shard("p1", 1)?;
    let _: String = Score::gsi1_pk_logical("p1")?;
    let _: String = Score::gsi1_sk("g1")?;
    let (_player, _shard): (String, u32) = Score::parse_gsi1_pk("PLAYER#p1#1")?;
    Ok(())
}

fn main() {}

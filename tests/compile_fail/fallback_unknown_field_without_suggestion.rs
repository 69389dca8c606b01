//! A template field that resembles no field is one error: its parameter then accepts any
//! value, so calls keep their arity and report nothing more.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "TENANT#{xyz}#GAME#{game_id}", shard = "hash(player_id)", n = 10)]
struct Score {
    game_id: String,
    player_id: String,
}

async fn _calls(repo: Repo<Score>) -> Result<(), sharded::Error> {
    let _: Vec<Score> = Score::query(&repo, "t1", "g1").collect().await?;
    let _: Vec<Score> = Score::query(&repo, 7u32, "g1").collect().await?;
    let _: Option<Score> = Score::get(&repo, "t1", "g1", "p1").await?;
    let _: String = Score::pk_logical("t1", "g1")?;
    let (_tenant, _game, _shard): (String, String, u32) = Score::parse_pk("TENANT#t1#GAME#g1#3")?;
    Ok(())
}

fn main() {}

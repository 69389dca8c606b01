//! Declared transitions and randomly sharded entities compile, with the full point API.
use serde::{Deserialize, Serialize};
use sharded::{keys::Partitions, Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "ORG#{org}", shard = "random", n = 4, legacy = "ORG#{org}")]
#[sk(template = "{at}#{id}")]
#[counter(name = "views", n = 4)]
struct Event {
    org: String,
    at: u64,
    id: String,
}

#[allow(dead_code)]
async fn uses(scores: Repo<Score>, events: Repo<Event>) -> Result<(), sharded::Error> {
    let _: Partitions = Score::pk_partitions("g1")?;
    let _: Option<String> = Score::pk_previous("g1", "p1")?;
    let _ = Score::get(&scores, "g1", "p1", 3).await?;
    Score::delete(&scores, "g1", "p1", 3).await?;
    let _ = Event::get(&events, "o1", 5, "e1").await?;
    let _ = Event::get_from_all_shards(&events, "o1", 5, "e1").await?;
    let _ = Event::views_counter(&events, "o1", 5, "e1")?;
    Ok(())
}

fn main() {}

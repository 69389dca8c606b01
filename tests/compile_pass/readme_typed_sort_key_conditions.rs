//! The README's reading example, verbatim between the markers: typed sort-key conditions
//! compile as written there.

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

#[allow(unused_variables)]
async fn reading(repo: Repo<Score>) -> Result<(), sharded::Error> {
    // README begin
    let q = Score::query(&repo, "g1")
        .descending()                                  // ScanIndexForward = false
        .sk(Score::sk_sort().between(100, 200))         // 100 <= score <= 200 (closed)
        .limit(50);
    let items: Vec<Score> = q.collect().await?;        // or .stream(), .page(size, cursor), .count()

    // score == 100 and player_id >= "p5": equality on leading fields, a range on the next one.
    let from_p5: Vec<Score> = Score::query(&repo, "g1")
        .sk(Score::sk_sort().eq(100).ge("p5"))
        .collect()
        .await?;
    // README end
    Ok(())
}

fn main() {
    let _ = reading;
}

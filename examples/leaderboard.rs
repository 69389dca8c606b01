//! A viral game's leaderboard, end to end on a local DynamoDB:
//! 20,000 scores for one game written over 10 shards with batch writes, the top 10 by
//! scatter-gather (reading only the two attributes shown), one player's best by a single
//! GetItem, everything the game's partitions hold in one collection query, and how even the
//! shards are.
//!
//! ```text
//! cargo run --example leaderboard
//! ```
//! It runs on the test kit's backend (`sharded_testkit::backend`): an embedded DynamoDB by
//! default, nothing to install; DynamoDB Local with `SHARDED_TEST_BACKEND=dynamodb-local` (Java
//! 17 and npm), or the one `DYNAMODB_ENDPOINT` names.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedCollection, ShardedEntity, ShardedProjection};
use sharded_testkit::backend::{unique_table_name, Backend};

/// One score of one player in one game. `GAME#g1` is the hot key: sharded 10 ways by the
/// player, so a player's items always land on the same shard.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

/// A player's personal best, beside their scores on the same shard: a direct GetItem.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "BEST#{player_id}")]
struct PersonalBest {
    game_id: String,
    player_id: String,
    score: u64,
}

/// What the top-10 board shows: a projection, so `at` is never read from DynamoDB.
#[derive(ShardedProjection, Deserialize, Debug)]
#[projection(of = Score)]
struct BoardLine {
    player_id: String,
    score: u64,
}

/// Scores and personal bests share the game's partitions: one query reads both.
#[derive(ShardedCollection, Debug)]
enum GameItems {
    Score(Score),
    PersonalBest(PersonalBest),
}

const GAME: &str = "viral-game";
const SCORES: usize = 20_000;
const PLAYERS: usize = 5_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let local = Backend::shared().await?;
    println!("{} ({:.1?})", local, started.elapsed());

    let scores: Repo<Score> = Repo::new(local.client().await, unique_table_name("leaderboard"));
    let step = Instant::now();
    scores.create_table().await?;
    println!(
        "created table {} with its GSI ({:.1?})",
        scores.table(),
        step.elapsed()
    );

    // Deterministic pseudo-random scores, so runs are comparable.
    let mut seed = 0x5EED_u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let all: Vec<Score> = (0..SCORES)
        .map(|i| Score {
            game_id: GAME.into(),
            player_id: format!("player-{:05}", i % PLAYERS),
            score: next() % 1_000_000,
            at: format!("2026-06-22T01:{:02}:{:02}Z", (i / 60) % 60, i % 60),
        })
        .collect();
    let mut bests: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for s in &all {
        let best = bests.entry(&s.player_id).or_default();
        *best = (*best).max(s.score);
    }
    let personal_bests: Vec<PersonalBest> = bests
        .iter()
        .map(|(player, score)| PersonalBest {
            game_id: GAME.into(),
            player_id: (*player).into(),
            score: *score,
        })
        .collect();

    let step = Instant::now();
    scores.batch_put(&all).await?;
    scores
        .for_entity::<PersonalBest>()
        .batch_put(&personal_bests)
        .await?;
    println!(
        "wrote {SCORES} scores and {} personal bests with BatchWriteItem ({:.1?})",
        personal_bests.len(),
        step.elapsed()
    );

    let step = Instant::now();
    let top: Vec<BoardLine> = Score::query(&scores, GAME)
        .project::<BoardLine>()
        .descending()
        .limit(10)
        .collect()
        .await?;
    println!(
        "\ntop 10 of {GAME} (10 parallel Query(Limit=4), heap-merged, {:.1?}):",
        step.elapsed()
    );
    for (rank, s) in top.iter().enumerate() {
        println!("  {:>2}. {}  {:>7}", rank + 1, s.player_id, s.score);
    }

    let step = Instant::now();
    let player = "player-00042";
    let best = PersonalBest::get(&scores.for_entity(), GAME, player).await?;
    println!(
        "\n{player}'s best: {} (one GetItem on shard {}, {:.1?})",
        best.map_or("none".to_owned(), |b| b.score.to_string()),
        PersonalBest::shard_for(player)?,
        step.elapsed()
    );

    let step = Instant::now();
    let everything = Score::query(&scores, GAME)
        .collection::<GameItems>()
        .count()
        .await?;
    let lowest = Score::query(&scores, GAME)
        .collection::<GameItems>()
        .limit(1)
        .collect()
        .await?;
    println!(
        "\n{everything} items in {GAME}'s partitions (scores and personal bests, one collection \
         count), first by sort key: {:?} ({:.1?})",
        lowest.first().map(|item| match item {
            GameItems::Score(s) => format!("score of {}", s.player_id),
            GameItems::PersonalBest(b) => format!("personal best of {}", b.player_id),
        }),
        step.elapsed()
    );

    let step = Instant::now();
    let per_shard = Score::query(&scores, GAME).count_by_shard().await?;
    let total: u64 = per_shard.iter().sum();
    let mean = total as f64 / per_shard.len() as f64;
    let max = *per_shard.iter().max().unwrap_or(&0) as f64;
    println!(
        "\nitems per shard (Select=COUNT on each, {:.1?}):",
        step.elapsed()
    );
    for (shard, count) in per_shard.iter().enumerate() {
        println!(
            "  {GAME}#{shard}: {count:>5} {}",
            "#".repeat((*count as usize) / 100)
        );
    }
    println!("  total {total}, max/mean {:.3}", max / mean);
    println!("\ndone in {:.1?}", started.elapsed());
    Ok(())
}

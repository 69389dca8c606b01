//! A collection query vs one query per entity type (issue 10, section 4: "collection query vs
//! n hand-written queries per entity type").
//!
//! `cargo bench --bench collection` (rounds: `COLLECTION_ROUNDS`, default 30).
//!
//! One game's partitions on DynamoDB Local, 10 shards, hold three entities: 200 scores, 100
//! comments and 50 badges, plus 100 notes of a fourth entity that the page does not show.
//! Every request goes through `sharded_testkit::faults::Faults` with 10 ms injected, so the
//! round trips dominate as on the real service. The answer wanted: the game page, every score,
//! comment and badge of the game in sort-key order. Three ways, the same answer (asserted):
//!
//! - **collection**: `Score::query(&repo, "g1").collection::<GamePage>().collect()`: one
//!   Query per shard (`_entity IN (..)` filter), merged across shards and types.
//! - **per type, concurrent**: `Score::query`, `Comment::query`, `Badge::query` run at once
//!   (`futures::join!`), each a scatter over the 10 shards, then merged by sort key by hand.
//! - **per type, sequential**: the same three queries one after the other, as a hand-written
//!   page does when each entity has its own repository call.
//!
//! Printed: median time per answer, requests per answer, the ratio to the collection. The
//! sides take turns round by round. This binary reports; it never fails on a missed target.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedCollection, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod common;
mod stats;
use stats::median;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(id)", n = 10)]
#[sk(template = "COMMENT#{id}")]
struct Comment {
    game_id: String,
    id: String,
    text: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "BADGE#{player_id}")]
struct Badge {
    game_id: String,
    player_id: String,
    badge: String,
}

/// In the same partitions, not on the page.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(id)", n = 10)]
#[sk(template = "NOTE#{id}")]
struct Note {
    game_id: String,
    id: String,
}

#[derive(ShardedCollection, Debug, Clone, PartialEq)]
enum GamePage {
    Score(Score),
    Comment(Comment),
    Badge(Badge),
}

impl GamePage {
    fn sk(&self) -> String {
        match self {
            GamePage::Score(s) => Score::sk(s.score, &s.player_id).expect("key"),
            GamePage::Comment(c) => Comment::sk(&c.id).expect("key"),
            GamePage::Badge(b) => Badge::sk(&b.player_id).expect("key"),
        }
    }
}

const LATENCY: Duration = Duration::from_millis(10);

async fn collection(repo: &Repo<Score>) -> Vec<GamePage> {
    Score::query(repo, "g1")
        .collection::<GamePage>()
        .collect()
        .await
        .expect("collection")
}

async fn per_type_concurrent(repo: &Repo<Score>) -> Vec<GamePage> {
    let (scores, comments, badges) = futures::join!(
        Score::query(repo, "g1").collect(),
        Comment::query(&repo.for_entity(), "g1").collect(),
        Badge::query(&repo.for_entity(), "g1").collect(),
    );
    merge(scores, comments, badges)
}

async fn per_type_sequential(repo: &Repo<Score>) -> Vec<GamePage> {
    let scores = Score::query(repo, "g1").collect().await;
    let comments = Comment::query(&repo.for_entity(), "g1").collect().await;
    let badges = Badge::query(&repo.for_entity(), "g1").collect().await;
    merge(scores, comments, badges)
}

/// What a hand-written page does with three answers: one list, sorted by sort key.
fn merge(
    scores: Result<Vec<Score>, sharded::Error>,
    comments: Result<Vec<Comment>, sharded::Error>,
    badges: Result<Vec<Badge>, sharded::Error>,
) -> Vec<GamePage> {
    let mut all: Vec<GamePage> = scores
        .expect("scores")
        .into_iter()
        .map(GamePage::Score)
        .chain(
            comments
                .expect("comments")
                .into_iter()
                .map(GamePage::Comment),
        )
        .chain(badges.expect("badges").into_iter().map(GamePage::Badge))
        .collect();
    all.sort_by_cached_key(GamePage::sk);
    all
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("COLLECTION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-collection");
    let loader: Repo<Score> = Repo::new(Client::new(&sdk), &table);
    loader.create_table().await.expect("create table");
    let scores: Vec<Score> = (0..200)
        .map(|i| Score {
            game_id: "g1".into(),
            player_id: format!("p{i:03}"),
            score: (i * 7919 % 1000) as u64,
        })
        .collect();
    let comments: Vec<Comment> = (0..100)
        .map(|i| Comment {
            game_id: "g1".into(),
            id: format!("c{i:03}"),
            text: "good game".into(),
        })
        .collect();
    let badges: Vec<Badge> = (0..50)
        .map(|i| Badge {
            game_id: "g1".into(),
            player_id: format!("p{i:03}"),
            badge: "mvp".into(),
        })
        .collect();
    let notes: Vec<Note> = (0..100)
        .map(|i| Note {
            game_id: "g1".into(),
            id: format!("n{i:03}"),
        })
        .collect();
    loader.batch_put(&scores).await.expect("scores");
    loader
        .for_entity()
        .batch_put(&comments)
        .await
        .expect("comments");
    loader
        .for_entity()
        .batch_put(&badges)
        .await
        .expect("badges");
    loader.for_entity().batch_put(&notes).await.expect("notes");

    let faults = Faults::new();
    faults.set_latency(LATENCY);
    let repo: Repo<Score> = Repo::new(faults.client(&sdk), &table);
    let expected = collection(&loader).await;
    assert_eq!(expected.len(), 350);
    assert_eq!(per_type_concurrent(&loader).await, expected);
    assert_eq!(per_type_sequential(&loader).await, expected);

    let names = ["collection", "per type, concurrent", "per type, sequential"];
    let mut times: [Vec<f64>; 3] = Default::default();
    let mut requests = [0u64; 3];
    for round in 0..rounds + 2 {
        for offset in 0..3 {
            // Rotate the order each round so no side always runs first.
            let side = (round + offset) % 3;
            faults.reset_counts();
            let start = Instant::now();
            let answer = match side {
                0 => collection(&repo).await,
                1 => per_type_concurrent(&repo).await,
                _ => per_type_sequential(&repo).await,
            };
            let elapsed = start.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(answer, expected, "{}", names[side]);
            if round >= 2 {
                times[side].push(elapsed);
                requests[side] = faults.requests("Query");
            }
        }
    }
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    println!(
        "game page: 200 scores + 100 comments + 50 badges (+ 100 notes not shown), 10 shards, {} ms injected, {rounds} rounds",
        LATENCY.as_millis()
    );
    println!("| way | ms per page (median) | Query requests per page | time vs collection |");
    println!("|---|---:|---:|---:|");
    for side in 0..3 {
        println!(
            "| {} | {:.1} | {} | {:.2}x |",
            names[side],
            medians[side],
            requests[side],
            medians[side] / medians[0]
        );
    }
}

//! What a rank costs as the board grows: `Query::rank` (one scatter-gather of counts over
//! the shards) against the plain way of counting a composite position (two scatter counts:
//! `score > s`, then `score == s and player > p`), on boards of 10,000, 100,000 and 1,000,000
//! scores.
//!
//! `cargo bench --bench rank` (`RANK_SIZES=10000,100000` to run fewer boards; the backend is
//! `common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise). Each
//! board is one game of `n = 10` shards in one table, loaded with `batch_put` in concurrent
//! chunks; scores are uniform in 0..1,000,000 with ties broken by player. For the items at
//! rank 1%, 50% and 99% of each board, both sides run interleaved (`ROUNDS` rounds, the first
//! side alternating) and the table shows, per side: the rank found (both must agree, and the
//! brute-force rank from the loaded data), the `Query` requests and the read units DynamoDB
//! reported (read by an SDK interceptor on the `QueryOutput`s, the same for both sides), and
//! the median wall time. The machine has 2 cores shared with builds and with the database
//! itself: compare rows of one run, not absolute times.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;

mod common;
mod stats;
use common::meter::{Meter, Metering};
use stats::median;

#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

const ROUNDS: usize = 5;
const LOAD_CHUNK: usize = 500;
const LOAD_CHUNKS_AT_ONCE: usize = 8;

fn board(size: usize) -> Vec<Score> {
    let mut rng = common::SplitMix64::new(0x0052_414E_4B00 + size as u64);
    (0..size)
        .map(|i| Score {
            game_id: format!("g{size}"),
            player_id: format!("p{i:07}"),
            score: rng.next_u64() % 1_000_000,
        })
        .collect()
}

/// One side's measurements over the rounds.
#[derive(Default)]
struct Side {
    times: Vec<Duration>,
    rank: u64,
    requests: u64,
    units: f64,
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::var("RANK_SIZES")
        .unwrap_or_else(|_| "10000,100000,1000000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("RANK_SIZES: comma-separated numbers")
        })
        .collect();
    let backend = common::backend().await;
    let sdk = backend.sdk_config().await;
    let meter = Arc::new(Meter::default());
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .interceptor(Metering(meter.clone()))
        .build();
    let table = unique_table_name("bench-rank");
    let repo: Repo<Score> = Repo::new(Client::from_conf(config), &table);
    repo.create_table().await.expect("create table");
    println!(
        "| board | rank asked | side | rank | Query requests | read units | median time |\n\
         |---|---|---|---|---|---|---|"
    );
    for size in sizes {
        let mut scores = board(size);
        let load = Instant::now();
        futures::stream::iter(scores.chunks(LOAD_CHUNK))
            .map(|chunk| repo.batch_put(chunk))
            .buffer_unordered(LOAD_CHUNKS_AT_ONCE)
            .for_each(|r| async move { r.expect("load scores") })
            .await;
        eprintln!("loaded {size} scores in {:?}", load.elapsed());
        // Best first: the rank of `scores[i]` is i + 1.
        scores.sort_by(|a, b| (b.score, &b.player_id).cmp(&(a.score, &a.player_id)));
        let game = format!("g{size}");
        for percent in [1, 50, 99] {
            let at = (size * percent / 100).min(size - 1);
            let me = &scores[at];
            let mut ours = Side::default();
            let mut plain = Side::default();
            for round in 0..ROUNDS {
                for first in [round % 2 == 0, round % 2 == 1] {
                    let before = (
                        meter.requests.load(Ordering::Relaxed),
                        meter.milli_units.load(Ordering::Relaxed),
                    );
                    let started = Instant::now();
                    let (side, rank) = if first {
                        let rank = Score::query(&repo, game.as_str())
                            .descending()
                            .rank(me)
                            .await
                            .expect("rank");
                        (&mut ours, rank.position)
                    } else {
                        // The plain way: every higher score, then the same score's later
                        // players, two scatter counts one after the other.
                        let higher = Score::query(&repo, game.as_str())
                            .sk(Score::sk_sort().gt(me.score))
                            .count()
                            .await
                            .expect("count higher");
                        let tied = Score::query(&repo, game.as_str())
                            .sk(Score::sk_sort().eq(me.score).gt(me.player_id.as_str()))
                            .count()
                            .await
                            .expect("count ties");
                        (&mut plain, higher + tied + 1)
                    };
                    side.times.push(started.elapsed());
                    side.rank = rank;
                    side.requests = meter.requests.load(Ordering::Relaxed) - before.0;
                    side.units =
                        (meter.milli_units.load(Ordering::Relaxed) - before.1) as f64 / 1000.0;
                }
            }
            assert_eq!(ours.rank, at as u64 + 1, "rank of the item at {at}");
            assert_eq!(plain.rank, ours.rank, "the plain count agrees");
            for (name, side) in [("`rank`", &ours), ("two counts", &plain)] {
                println!(
                    "| {size} | {percent}% | {name} | {} | {} | {:.1} | {:.1} ms |",
                    side.rank,
                    side.requests,
                    side.units,
                    median(&side.times).as_secs_f64() * 1000.0
                );
            }
        }
    }
}

//! The same top-k read of a sharded GSI, keyed two ways: a string-keyed sharded GSI
//! (`#[gsi1(pk = "GAME#{game_id}", sk = "S#{score}#{player_id}", shard = 8)]`, the key strings
//! written into every item) against a multi-attribute one (`#[gsi1(pk = [game_id], sk =
//! [score, player_id], shard = 8)]`, keyed by the item's own attributes and a number shard).
//! Queries, read units and time, side by side in one run.
//!
//! `cargo bench --bench multi_attribute_gsi` (injected latency 10 ms per request; other
//! latencies: `cargo bench --bench multi_attribute_gsi -- 0 25`; rounds: `MA_ROUNDS=40`,
//! default 21).
//!
//! Two tables on DynamoDB Local (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise), one per
//! entity, hold the same 4,000 scores of one game (seeded: scores 0..1,000 with ties, 4,000
//! players). Every request of the measured client goes through `sharded_testkit::faults::Faults`,
//! which counts it and delays it by the injected latency. The read is the game's top 100,
//! `query_gsi1(&repo, "g1").descending().limit(100).collect()`:
//!
//! - **(a) string key**: `StringScore`, the 8 partitions `GAME#g1#0..7`, merged by the sort-key
//!   string.
//! - **(b) multi-attribute key**: `AttributeScore`, the 8 partitions `game_id = "g1" AND
//!   gsi1_shard = 0..7`, merged by `(score, player_id)`, the score compared as a number.
//!
//! Both answers are checked against the other and against brute force before timing. Read
//! units are what DynamoDB Local reports (`ReturnConsumedCapacity`, through the repository's
//! hot-key stats) for one run of each; items are smaller by the key strings the
//! multi-attribute key does not write. After warm-up rounds (at least 3, and 15 s for a fresh
//! JVM's JIT), the variants run interleaved (the first one alternating); medians of wall times
//! are compared. The machine has 2 cores shared with DynamoDB Local: only ratios mean
//! anything. This binary reports; it never fails on a missed target.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod stats;
use stats::median;

/// A score, indexed by a string-keyed sharded GSI.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "PLAYER#{player_id}")]
#[gsi1(pk = "GAME#{game_id}", sk = "S#{score}#{player_id}", shard = 8)]
struct StringScore {
    player_id: String,
    game_id: String,
    score: u64,
}

/// The same score, indexed by a multi-attribute sharded GSI.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "PLAYER#{player_id}")]
#[gsi1(pk = [game_id], sk = [score, player_id], shard = 8)]
struct AttributeScore {
    player_id: String,
    game_id: String,
    score: u64,
}

const ITEMS: usize = 4_000;
const TOP: usize = 100;
const DEFAULT_ROUNDS: usize = 21;
const WARM_UP_ROUNDS: usize = 3;
const FIRST_WARM_UP: Duration = Duration::from_secs(15);
/// Target: the multi-attribute key costs no more time than the string key (b / a <= 1.1).
const TIME_TARGET: f64 = 1.1;

const NAMES: [&str; 2] = [
    "(a) string-keyed sharded GSI: GAME#g1#0..7 / S#{score}#{player_id}",
    "(b) multi-attribute sharded GSI: [game_id, gsi1_shard] / [score, player_id]",
];

fn scores() -> Vec<StringScore> {
    let mut rng = fastrand::Rng::with_seed(4_000);
    (0..ITEMS)
        .map(|i| StringScore {
            player_id: format!("p{i:05}"),
            game_id: "g1".to_owned(),
            score: rng.u64(0..1_000),
        })
        .collect()
}

fn as_attribute(s: &StringScore) -> AttributeScore {
    AttributeScore {
        player_id: s.player_id.clone(),
        game_id: s.game_id.clone(),
        score: s.score,
    }
}

struct Bench {
    string: Repo<StringScore>,
    attribute: Repo<AttributeScore>,
}

impl Bench {
    /// One top-k read of `variant`, as `(score, player_id)` pairs.
    async fn run(&self, variant: usize) -> Vec<(u64, String)> {
        match variant {
            0 => StringScore::query_gsi1(&self.string, "g1")
                .descending()
                .limit(TOP)
                .collect()
                .await
                .expect("string-keyed query")
                .into_iter()
                .map(|s| (s.score, s.player_id))
                .collect(),
            _ => AttributeScore::query_gsi1(&self.attribute, "g1")
                .descending()
                .limit(TOP)
                .collect()
                .await
                .expect("multi-attribute query")
                .into_iter()
                .map(|s| (s.score, s.player_id))
                .collect(),
        }
    }
}

/// Read units of one run of each variant, from a fresh hot-key stats of its own.
async fn units(bench: &Bench) -> [f64; 2] {
    let string_stats = Arc::new(HotKeyStats::new(Duration::from_secs(600)));
    let attribute_stats = Arc::new(HotKeyStats::new(Duration::from_secs(600)));
    let with_stats = Bench {
        string: bench.string.clone().with_stats(string_stats.clone()),
        attribute: bench.attribute.clone().with_stats(attribute_stats.clone()),
    };
    with_stats.run(0).await;
    with_stats.run(1).await;
    let read = |stats: &HotKeyStats, key: &str| {
        stats
            .report()
            .logical_key(Some("gsi1"), key)
            .map_or(0.0, |k| k.read.units)
    };
    [
        read(&string_stats, "GAME#g1"),
        read(&attribute_stats, "game_id=g1"),
    ]
}

async fn phase(
    bench: &Bench,
    faults: &Faults,
    latency_ms: u64,
    rounds: usize,
    min_warm_up: Duration,
) {
    faults.set_latency(Duration::from_millis(latency_ms));
    let mut requests = [0; 2];
    for (v, count) in requests.iter_mut().enumerate() {
        faults.reset_counts();
        bench.run(v).await;
        *count = faults.requests("Query");
    }
    let units = units(bench).await;
    let warm_up = Instant::now();
    let mut warm_up_rounds = 0;
    while warm_up_rounds < WARM_UP_ROUNDS || warm_up.elapsed() < min_warm_up {
        for v in 0..2 {
            std::hint::black_box(bench.run(v).await);
        }
        warm_up_rounds += 1;
    }
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for j in 0..2 {
            let v = (round + j) % 2;
            let start = Instant::now();
            std::hint::black_box(bench.run(v).await);
            times[v].push(start.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let medians = [median(&times[0]), median(&times[1])];
    println!(
        "\n### {latency_ms} ms injected per request ({rounds} interleaved rounds after {warm_up_rounds} warm-up rounds)\n"
    );
    println!(
        "| variant (top {TOP} of {ITEMS}, 8 shards) | Query requests | read units | median ms |"
    );
    println!("|---|---:|---:|---:|");
    for (v, name) in NAMES.iter().enumerate() {
        println!(
            "| {name} | {} | {:.1} | {:.1} |",
            requests[v], units[v], medians[v]
        );
    }
    let ratio = medians[1] / medians[0];
    println!();
    println!(
        "| (b) / (a) time | {ratio:.2}x | target <= {TIME_TARGET}x | {} |",
        if ratio <= TIME_TARGET { "PASS" } else { "MISS" }
    );
    println!(
        "| (b) / (a) read units | {:.2}x | (diagnostic) | |",
        units[1] / units[0].max(f64::MIN_POSITIVE)
    );
}

async fn bench() {
    let latencies: Vec<u64> = common::numbers_from_args(&[10]);
    let rounds = common::env_number("MA_ROUNDS", DEFAULT_ROUNDS);
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let string_table = unique_table_name("bench-ma-string");
    let attribute_table = unique_table_name("bench-ma-attributes");
    let loader: Repo<StringScore> = Repo::new(local.client().await, &string_table);
    loader.create_table().await.expect("create table");
    let attribute_loader: Repo<AttributeScore> = Repo::new(local.client().await, &attribute_table);
    attribute_loader.create_table().await.expect("create table");
    let all = scores();
    loader.batch_put(&all).await.expect("load");
    let same: Vec<AttributeScore> = all.iter().map(as_attribute).collect();
    attribute_loader.batch_put(&same).await.expect("load");
    let mut expected: Vec<(u64, String)> =
        all.iter().map(|s| (s.score, s.player_id.clone())).collect();
    expected.sort();
    expected.reverse();
    expected.truncate(TOP);
    println!(
        "{}: {ITEMS} scores of one game in {string_table} and {attribute_table}",
        local
    );
    let faults = Faults::new();
    let client = faults.client(&sdk);
    let bench = Bench {
        string: Repo::new(client.clone(), &string_table),
        attribute: Repo::new(client, &attribute_table),
    };
    for (v, name) in NAMES.iter().enumerate() {
        assert_eq!(
            bench.run(v).await,
            expected,
            "{name} disagrees with brute force"
        );
    }
    for (i, latency) in latencies.into_iter().enumerate() {
        let warm = if i == 0 {
            FIRST_WARM_UP
        } else {
            Duration::ZERO
        };
        phase(&bench, &faults, latency, rounds, warm).await;
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}

//! Latency of a sharded top-100 read under injected network latency (issue 3, targets:
//! scatter-gather / one unsharded Query <= 1.5x, sequential hand-written / scatter-gather >= 5x).
//!
//! `cargo bench --bench scatter_latency` (injected latency 10 ms, then 0 ms). Other latencies:
//! `cargo bench --bench scatter_latency -- 25 0`; rounds: `SCATTER_ROUNDS=40` (default 25).
//!
//! One table on DynamoDB Local (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise) holds
//! 1,000 scores of game `g1` twice: as the 10-shard `Score` entity and as the unsharded twin
//! `FlatScore` (partition `FLAT#g1`, same sort key, another `_entity`). Every request of the
//! measured client goes through `sharded_testkit::faults::Faults`, which delays it by the
//! injected latency with an asynchronous sleep (concurrent requests overlap, as over a
//! network). Top 100, descending:
//!
//! - **(a) ours, n = 10, defaults**: `Score::query(&repo, "g1").descending().limit(100).collect()`
//!   (adaptive limits: each shard first asked for ceil(1.5 * 100 / 10) + 2 = 17).
//! - **(b) unsharded**: `FlatScore::query(&flat, "g1").descending().limit(100).collect()`, one
//!   Query(Limit=100): the floor a sharded read is compared with.
//! - **(c) naive sequential**: the 10 shard Queries (`Limit=100`, `ScanIndexForward=false`,
//!   keys from `Score::pk_on_shard`) sent one after another with the raw SDK, concatenated,
//!   sorted, truncated, deserialised with `serde_dynamo`.
//! - **(d) raw parallel** (diagnostic, no target): the same 10 raw Queries sent at once with
//!   `join_all`: what DynamoDB Local itself costs for 10 concurrent Queries, without our engine.
//! - **(e) baseline, the old default**: (a) with `.page_size(100)`, which asks every shard for
//!   `Limit = 100` as the engine did before adaptive limits (1,000 items read for 100).
//! - **(f) ours, defaults, skewed**: (a) on game `g2`, whose top 100 all sit on shard 3 (the
//!   worst case for adaptive limits: shard 3 is refilled lazily, 17 + 34 + 49).
//! - **(g) old default, skewed**: (e) on game `g2`.
//!
//! Read units per top-100 come from DynamoDB's `ConsumedCapacity` (`ReturnConsumedCapacity =
//! TOTAL`, which DynamoDB Local answers; checked and printed at start), summed per variant over
//! one run through a repository with `HotKeyStats` (variants through the repository only).
//!
//! CPU time per run of this process (the client) and of the DynamoDB Local JVM (from `/proc`,
//! 10 ms ticks summed over all rounds) is printed beside the wall times: on 2 shared cores,
//! DynamoDB Local's CPU is what a sharded read mostly waits for. The JVM's figure includes its
//! background work (JIT, GC) during the run, so compare variants, not absolute values.
//!
//! All five answers are checked equal before timing. After warm-up rounds (at least 5, and
//! 15 s before the first phase for the fresh JVM's JIT), the variants run interleaved (the
//! first one rotating each round); each one's median wall time is taken, and the ratios of the medians are printed with the medians of the per-round ratios as a
//! drift check. The machine has 2 cores shared with builds and with DynamoDB Local itself, so
//! only ratios mean anything. This binary reports; it never fails on a missed target.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::{keys::Item, Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod cpu;
mod stats;
use cpu::{per_run, CpuMeter};
use stats::median;

/// The leaderboard, sharded 10 ways.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

/// The same scores on one unsharded partition, in the same table.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "FlatScore")]
#[pk(template = "FLAT#{game_id}")]
#[sk(template = "SCORE#{score}#{player_id}")]
struct FlatScore {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

const GAME: &str = "g1";
/// The skewed game: its top 100 all on [`HOT_SHARD`].
const SKEWED: &str = "g2";
const HOT_SHARD: u32 = 3;
const SCORES: usize = 1_000;
const SHARDS: u32 = 10;
const TOP: usize = 100;
/// Per-shard `Limit` of the old default, reproduced by baseline (e): the whole limit.
const OLD_DEFAULT_PAGE_SIZE: u32 = TOP as u32;
const DEFAULT_ROUNDS: usize = 25;
const WARM_UP_ROUNDS: usize = 5;
/// Minimum warm-up of the first phase: DynamoDB Local's JVM was just started.
const FIRST_WARM_UP: Duration = Duration::from_secs(15);
const SHARDED_OVER_FLAT_TARGET: f64 = 1.5;
const SEQUENTIAL_OVER_OURS_TARGET: f64 = 5.0;
const UNITS_TARGET: f64 = 1.5;

type Answer = Vec<(u64, String)>;
type Run<'a> = Pin<Box<dyn Future<Output = Answer> + 'a>>;

fn scores() -> Vec<Score> {
    let mut seed = 0x5EED_0003_u64;
    (0..SCORES)
        .map(|i| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            Score {
                game_id: GAME.into(),
                player_id: format!("player-{i}"),
                score: (seed >> 33) % 1_000_000,
                at: format!("2026-06-22T01:{:02}:{:02}Z", (i / 60) % 60, i % 60),
            }
        })
        .collect()
}

/// Game `g2`: the same score values, but the 100 best given to players of shard
/// [`HOT_SHARD`].
fn skewed_scores() -> Vec<Score> {
    let mut values: Vec<u64> = scores().iter().map(|s| s.score).collect();
    values.sort_unstable_by(|a, b| b.cmp(a));
    let (mut hot, mut cold) = (Vec::new(), Vec::new());
    let mut i = 0;
    while hot.len() < TOP || cold.len() < SCORES - TOP {
        let player = format!("player-{i}");
        let on_hot = Score::shard_for(&player).expect("shard") == HOT_SHARD;
        if on_hot && hot.len() < TOP {
            hot.push(player);
        } else if !on_hot && cold.len() < SCORES - TOP {
            cold.push(player);
        }
        i += 1;
    }
    hot.into_iter()
        .chain(cold)
        .zip(values)
        .enumerate()
        .map(|(i, (player_id, score))| Score {
            game_id: SKEWED.into(),
            player_id,
            score,
            at: format!("2026-06-22T01:{:02}:{:02}Z", (i / 60) % 60, i % 60),
        })
        .collect()
}

fn top_of(scores: &[Score]) -> Answer {
    let mut expected = scores.to_vec();
    expected.sort_by(|a, b| {
        Score::sk(b.score, &b.player_id)
            .unwrap()
            .cmp(&Score::sk(a.score, &a.player_id).unwrap())
    });
    expected.truncate(TOP);
    scores_answer(&expected)
}

fn sk(item: &Item) -> &str {
    item.get("sk")
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .unwrap_or_default()
}

/// One shard Query as a hand-written scatter would send it.
async fn raw_shard_query(client: &Client, table: &str, shard: u32) -> Vec<Item> {
    let pk = Score::pk_on_shard(GAME, shard).expect("shard key");
    let output = client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(pk))
        .scan_index_forward(false)
        .limit(TOP as i32)
        .send()
        .await
        .expect("raw Query");
    output.items.unwrap_or_default()
}

/// Concatenate + sort descending + truncate + deserialise: the hand-written merge.
fn sort_top(mut all: Vec<Item>) -> Vec<Score> {
    all.sort_by(|a, b| sk(b).cmp(sk(a)));
    all.truncate(TOP);
    serde_dynamo::from_items(all).expect("deserialise")
}

async fn naive_sequential(client: &Client, table: &str) -> Vec<Score> {
    let mut all = Vec::new();
    for shard in 0..SHARDS {
        all.extend(raw_shard_query(client, table, shard).await);
    }
    sort_top(all)
}

async fn raw_parallel(client: &Client, table: &str) -> Vec<Score> {
    let pages =
        futures::future::join_all((0..SHARDS).map(|shard| raw_shard_query(client, table, shard)))
            .await;
    sort_top(pages.into_iter().flatten().collect())
}

fn answer<'a>(items: impl IntoIterator<Item = (&'a u64, &'a String)>) -> Answer {
    items.into_iter().map(|(s, p)| (*s, p.clone())).collect()
}

fn scores_answer(v: &[Score]) -> Answer {
    answer(v.iter().map(|s| (&s.score, &s.player_id)))
}

struct Bench {
    repo: Repo<Score>,
    flat: Repo<FlatScore>,
    client: Client,
    table: String,
}

impl Bench {
    const NAMES: [&'static str; 7] = [
        "(a) ours, defaults: Score::query(..).descending().limit(100).collect(), n = 10",
        "(b) unsharded: FlatScore::query(..).descending().limit(100).collect()",
        "(c) naive: 10 raw Queries one after another + concat + sort",
        "(d) diagnostic: 10 raw Queries at once (join_all) + concat + sort",
        "(e) baseline, old default: (a) with .page_size(100) (Limit = 100 on every shard)",
        "(f) skewed (top 100 all on shard 3): (a), defaults",
        "(g) skewed: (e), the old default",
    ];
    /// Whether a variant goes through the repository (and so has read units measured).
    const THROUGH_REPO: [bool; 7] = [true, true, false, false, true, true, true];
    /// The game each variant reads.
    const GAMES: [&'static str; 7] = [GAME, GAME, GAME, GAME, GAME, SKEWED, SKEWED];

    /// The same bench with every repository recording consumed capacity into `stats`.
    fn with_stats(&self, stats: &std::sync::Arc<HotKeyStats>) -> Bench {
        Bench {
            repo: self.repo.clone().with_stats(stats.clone()),
            flat: self.flat.clone().with_stats(stats.clone()),
            client: self.client.clone(),
            table: self.table.clone(),
        }
    }

    fn run(&self, variant: usize) -> Run<'_> {
        match variant {
            0 => Box::pin(async {
                let v = Score::query(&self.repo, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("scatter-gather");
                scores_answer(&v)
            }),
            1 => Box::pin(async {
                let v = FlatScore::query(&self.flat, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("unsharded query");
                answer(v.iter().map(|s| (&s.score, &s.player_id)))
            }),
            2 => Box::pin(async {
                scores_answer(&naive_sequential(&self.client, &self.table).await)
            }),
            3 => Box::pin(async { scores_answer(&raw_parallel(&self.client, &self.table).await) }),
            _ => Box::pin(async move {
                let mut q = Score::query(&self.repo, Bench::GAMES[variant])
                    .descending()
                    .limit(TOP);
                if variant != 5 {
                    q = q.page_size(OLD_DEFAULT_PAGE_SIZE);
                }
                let v = q.collect().await.expect("scatter-gather");
                scores_answer(&v)
            }),
        }
    }
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

fn add(sum: &mut Option<f64>, value: Option<f64>) {
    *sum = Some(sum.unwrap_or(0.0) + value.unwrap_or(f64::NAN));
}

async fn phase(
    bench: &Bench,
    meter: &CpuMeter,
    faults: &Faults,
    latency_ms: u64,
    rounds: usize,
    min_warm_up: Duration,
    expected: &[Answer],
) {
    faults.set_latency(Duration::from_millis(latency_ms));
    let variants = Bench::NAMES.len();
    // Warm-up rounds (DynamoDB Local's JIT, connection pools), at least WARM_UP_ROUNDS and
    // `min_warm_up` of wall time: the first checks every answer and counts the requests of
    // each variant.
    let warm_up = Instant::now();
    let mut requests = Vec::new();
    let mut units = Vec::new();
    for (v, expected) in expected.iter().enumerate() {
        faults.reset_counts();
        let got = bench.run(v).await;
        assert_eq!(&got, expected, "{} disagrees", Bench::NAMES[v]);
        requests.push((faults.requests("Query"), faults.max_in_flight()));
        // Read units of one run, from DynamoDB's ConsumedCapacity.
        let stats = std::sync::Arc::new(HotKeyStats::new(Duration::from_secs(3600)));
        if Bench::THROUGH_REPO[v] {
            std::hint::black_box(bench.with_stats(&stats).run(v).await);
            let total: f64 = stats.report().keys.iter().map(|k| k.read_units).sum();
            units.push(Some(total));
        } else {
            units.push(None);
        }
    }
    let mut warm_up_rounds = 1;
    while warm_up_rounds < WARM_UP_ROUNDS || warm_up.elapsed() < min_warm_up {
        for v in 0..variants {
            std::hint::black_box(bench.run(v).await);
        }
        warm_up_rounds += 1;
    }
    let mut times = vec![Vec::with_capacity(rounds); variants];
    let mut cpu = vec![(None, None); variants];
    for round in 0..rounds {
        for j in 0..variants {
            let v = (round + j) % variants;
            let before = meter.read();
            let start = Instant::now();
            std::hint::black_box(bench.run(v).await);
            times[v].push(start.elapsed().as_secs_f64() * 1000.0);
            let (client, server) = meter.read().since(&before);
            add(&mut cpu[v].0, client);
            add(&mut cpu[v].1, server);
        }
    }
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    let round_ratio = |num: usize, den: usize| {
        let r: Vec<f64> = times[num]
            .iter()
            .zip(&times[den])
            .map(|(n, d)| n / d)
            .collect();
        median(&r)
    };
    println!(
        "\n### {latency_ms} ms injected per request ({rounds} interleaved rounds after {warm_up_rounds} warm-up rounds)\n"
    );
    println!(
        "| variant | Query requests | max in flight | read units | median ms | min ms | max ms | client CPU ms/run | DynamoDB Local CPU ms/run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for v in 0..variants {
        let (min, max) = times[v]
            .iter()
            .fold((f64::MAX, 0.0_f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} |",
            Bench::NAMES[v],
            requests[v].0,
            requests[v].1,
            units[v].map_or("-".to_owned(), |u| format!("{u:.1}")),
            medians[v],
            min,
            max,
            per_run(cpu[v].0, rounds),
            per_run(cpu[v].1, rounds),
        );
    }
    let a_b = medians[0] / medians[1];
    let c_a = medians[2] / medians[0];
    let d_b = medians[3] / medians[1];
    let a_d = medians[0] / medians[3];
    println!();
    println!("| ratio | of medians | median of round ratios | target | |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| (a) ours / (b) unsharded | {a_b:.2}x | {:.2}x | <= {SHARDED_OVER_FLAT_TARGET}x | {} |",
        round_ratio(0, 1),
        verdict(a_b <= SHARDED_OVER_FLAT_TARGET)
    );
    println!(
        "| (c) naive sequential / (a) ours | {c_a:.2}x | {:.2}x | >= {SEQUENTIAL_OVER_OURS_TARGET}x | {} |",
        round_ratio(2, 0),
        verdict(c_a >= SEQUENTIAL_OVER_OURS_TARGET)
    );
    println!(
        "| (d) raw parallel / (b) unsharded | {d_b:.2}x | {:.2}x | (diagnostic) | |",
        round_ratio(3, 1)
    );
    println!(
        "| (a) ours / (d) raw parallel | {a_d:.2}x | {:.2}x | (diagnostic) | |",
        round_ratio(0, 3)
    );
    let unit_ratio = |num: usize, den: usize| match (units[num], units[den]) {
        (Some(n), Some(d)) if d > 0.0 => n / d,
        _ => f64::NAN,
    };
    let units_a_b = unit_ratio(0, 1);
    println!(
        "| (a) ours / (b) unsharded, read units | {units_a_b:.2}x | | <= {UNITS_TARGET}x | {} |",
        verdict(units_a_b <= UNITS_TARGET)
    );
    println!(
        "| (e) old default / (a) ours | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[4] / medians[0],
        round_ratio(4, 0)
    );
    println!(
        "| (e) old default / (b) unsharded | {:.2}x | {:.2}x | (baseline) | |",
        medians[4] / medians[1],
        round_ratio(4, 1)
    );
    println!(
        "| (c) naive sequential / (e) old default | {:.2}x | {:.2}x | (baseline) | |",
        medians[2] / medians[4],
        round_ratio(2, 4)
    );
    println!(
        "| (e) old default / (a) ours, read units | {:.2}x | | (diagnostic) | |",
        unit_ratio(4, 0)
    );
    println!(
        "| skewed: (f) ours / (g) old default, time | {:.2}x | {:.2}x | (report) | |",
        medians[5] / medians[6],
        round_ratio(5, 6)
    );
    println!(
        "| skewed: (f) ours / (g) old default, requests | {}/{} | | (report) | |",
        requests[5].0, requests[6].0
    );
    println!(
        "| skewed: (f) ours / (g) old default, read units | {:.2}x | | (report) | |",
        unit_ratio(5, 6)
    );
    println!(
        "| skewed: (f) ours / (b) unsharded (g1), time | {:.2}x | {:.2}x | (report) | |",
        medians[5] / medians[1],
        round_ratio(5, 1)
    );
}

/// Whether DynamoDB Local answers `ReturnConsumedCapacity = TOTAL` on a Query, and with what.
async fn check_consumed_capacity(client: &Client, table: &str) {
    let output = client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            AttributeValue::S(FlatScore::pk(GAME).expect("flat key")),
        )
        .scan_index_forward(false)
        .limit(TOP as i32)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .expect("raw Query");
    let size: usize = output
        .items()
        .iter()
        .map(sharded::capacity::item_size)
        .sum();
    println!(
        "ConsumedCapacity of an unsharded Query(Limit=100) with ReturnConsumedCapacity=TOTAL: {:?} \
         ({} items, {size} bytes by DynamoDB's size rules)",
        output.consumed_capacity().and_then(|c| c.capacity_units()),
        output.items().len(),
    );
}

async fn bench() {
    let latencies: Vec<u64> = common::numbers_from_args(&[10, 0]);
    let rounds = common::env_number("SCATTER_ROUNDS", DEFAULT_ROUNDS);

    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-scatter");
    let loader: Repo<Score> = Repo::new(Client::new(&sdk), &table);
    loader.create_table().await.expect("create table");
    let scores = scores();
    let flats: Vec<FlatScore> = scores
        .iter()
        .map(|s| FlatScore {
            game_id: s.game_id.clone(),
            player_id: s.player_id.clone(),
            score: s.score,
            at: s.at.clone(),
        })
        .collect();
    loader.batch_put(&scores).await.expect("load Score");
    let skewed = skewed_scores();
    loader.batch_put(&skewed).await.expect("load skewed Score");
    loader
        .for_entity::<FlatScore>()
        .batch_put(&flats)
        .await
        .expect("load FlatScore");
    let per_shard = Score::query(&loader, GAME)
        .count_by_shard()
        .await
        .expect("count");
    println!(
        "{}, table {table}: {SCORES} scores as Score (per shard: {per_shard:?}) \
         and as FlatScore",
        local
    );
    let top = top_of(&scores);
    let on_shard: Vec<usize> = (0..SHARDS)
        .map(|shard| {
            top.iter()
                .filter(|(_, p)| Score::shard_for(p).expect("shard") == shard)
                .count()
        })
        .collect();
    println!("top 100 of {GAME} per shard: {on_shard:?}; of {SKEWED}: all on shard {HOT_SHARD}");
    check_consumed_capacity(&Client::new(&sdk), &table).await;
    let top_skewed = top_of(&skewed);
    let expected: Vec<Answer> = Bench::GAMES
        .iter()
        .map(|g| {
            if *g == GAME {
                top.clone()
            } else {
                top_skewed.clone()
            }
        })
        .collect();

    let meter = CpuMeter::new();
    let faults = Faults::new();
    let client = faults.client(&sdk);
    let repo: Repo<Score> = Repo::new(client.clone(), &table);
    let bench = Bench {
        flat: repo.for_entity(),
        repo,
        client,
        table,
    };
    for (i, latency) in latencies.into_iter().enumerate() {
        // The first phase also warms up the freshly started JVM.
        let min_warm_up = if i == 0 {
            FIRST_WARM_UP
        } else {
            Duration::ZERO
        };
        phase(
            &bench,
            &meter,
            &faults,
            latency,
            rounds,
            min_warm_up,
            &expected,
        )
        .await;
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}

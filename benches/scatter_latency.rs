//! Latency of a sharded top-100 read under injected network latency (issue 3, targets:
//! scatter-gather / one unsharded Query <= 1.5x, sequential hand-written / scatter-gather >= 5x).
//!
//! `cargo bench --bench scatter_latency` (injected latency 10 ms, then 0 ms). Other latencies:
//! `cargo bench --bench scatter_latency -- 25 0`; rounds: `SCATTER_ROUNDS=40` (default 25).
//!
//! One table on DynamoDB Local (`sharded_testkit::local::DynamoDbLocal::shared()`) holds
//! 1,000 scores of game `g1` twice: as the 10-shard `Score` entity and as the unsharded twin
//! `FlatScore` (partition `FLAT#g1`, same sort key, another `_entity`). Every request of the
//! measured client goes through `sharded_testkit::faults::Faults`, which delays it by the
//! injected latency with an asynchronous sleep (concurrent requests overlap, as over a
//! network). Top 100, descending:
//!
//! - **(a) ours, n = 10**: `Score::query(&repo, "g1").descending().limit(100).collect()`.
//! - **(b) unsharded**: `FlatScore::query(&flat, "g1").descending().limit(100).collect()`, one
//!   Query(Limit=100): the floor a sharded read is compared with.
//! - **(c) naive sequential**: the 10 shard Queries (`Limit=100`, `ScanIndexForward=false`,
//!   keys from `Score::pk_on_shard`) sent one after another with the raw SDK, concatenated,
//!   sorted, truncated, deserialised with `serde_dynamo`.
//! - **(d) raw parallel** (diagnostic, no target): the same 10 raw Queries sent at once with
//!   `join_all`: what DynamoDB Local itself costs for 10 concurrent Queries, without our engine.
//! - **(e) ours, `.page_size(20)`** (diagnostic, no target): (a) with each shard request capped
//!   at 20 items (twice a fair share), shards refilled lazily when the merge reaches them: 10
//!   shards then read about 200 items instead of 1,000.
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

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::{Item, Repo, ShardedEntity};
use sharded_testkit::faults::Faults;
use sharded_testkit::local::{unique_table_name, DynamoDbLocal};

mod cpu;
use cpu::{per_run, CpuMeter};

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
const SCORES: usize = 1_000;
const SHARDS: u32 = 10;
const TOP: usize = 100;
/// Per-shard `Limit` of diagnostic (e): twice a fair share of the top 100 over 10 shards.
const PAGE_SIZE: u32 = 20;
const DEFAULT_ROUNDS: usize = 25;
const WARM_UP_ROUNDS: usize = 5;
/// Minimum warm-up of the first phase: DynamoDB Local's JVM was just started.
const FIRST_WARM_UP: Duration = Duration::from_secs(15);
const SHARDED_OVER_FLAT_TARGET: f64 = 1.5;
const SEQUENTIAL_OVER_OURS_TARGET: f64 = 5.0;

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
    const NAMES: [&'static str; 5] = [
        "(a) ours: Score::query(..).descending().limit(100).collect(), n = 10",
        "(b) unsharded: FlatScore::query(..).descending().limit(100).collect()",
        "(c) naive: 10 raw Queries one after another + concat + sort",
        "(d) diagnostic: 10 raw Queries at once (join_all) + concat + sort",
        "(e) diagnostic: (a) with .page_size(20): each shard asked for 20, refilled lazily",
    ];

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
            _ => Box::pin(async {
                let v = Score::query(&self.repo, GAME)
                    .descending()
                    .limit(TOP)
                    .page_size(PAGE_SIZE)
                    .collect()
                    .await
                    .expect("scatter-gather, small pages");
                scores_answer(&v)
            }),
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    expected: &Answer,
) {
    faults.set_latency(Duration::from_millis(latency_ms));
    let variants = Bench::NAMES.len();
    // Warm-up rounds (DynamoDB Local's JIT, connection pools), at least WARM_UP_ROUNDS and
    // `min_warm_up` of wall time: the first checks every answer and counts the requests of
    // each variant.
    let warm_up = Instant::now();
    let mut requests = Vec::new();
    for v in 0..variants {
        faults.reset_counts();
        let got = bench.run(v).await;
        assert_eq!(&got, expected, "{} disagrees", Bench::NAMES[v]);
        requests.push((faults.requests("Query"), faults.max_in_flight()));
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
        "| variant | Query requests | max in flight | median ms | min ms | max ms | client CPU ms/run | DynamoDB Local CPU ms/run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for v in 0..variants {
        let (min, max) = times[v]
            .iter()
            .fold((f64::MAX, 0.0_f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} |",
            Bench::NAMES[v],
            requests[v].0,
            requests[v].1,
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
    println!(
        "| (e) ours, page_size(20) / (b) unsharded | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[4] / medians[1],
        round_ratio(4, 1)
    );
    println!(
        "| (c) naive sequential / (e) ours, page_size(20) | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[2] / medians[4],
        round_ratio(2, 4)
    );
}

async fn bench() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let latencies = if args.is_empty() { vec![10, 0] } else { args };
    let rounds = std::env::var("SCATTER_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);

    let local = DynamoDbLocal::shared()
        .await
        .unwrap_or_else(|e| panic!("DynamoDB Local is needed for this benchmark: {e}"));
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
        "DynamoDB Local at {}, table {table}: {SCORES} scores as Score (per shard: {per_shard:?}) \
         and as FlatScore",
        local.endpoint()
    );

    let mut expected = scores.clone();
    expected.sort_by(|a, b| {
        Score::sk(b.score, &b.player_id)
            .unwrap()
            .cmp(&Score::sk(a.score, &a.player_id).unwrap())
    });
    expected.truncate(TOP);
    let expected = scores_answer(&expected);

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

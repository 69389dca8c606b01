//! A range query over 30 day buckets x 4 shards at 10 ms injected per request: ours (the
//! buckets read with a bounded read-ahead window) against walking the buckets one after
//! another (target: sequential / ours >= 5x), and the most requests in flight (never above
//! the repository's concurrency).
//!
//! `cargo bench --bench range_query` (injected latency 10 ms). Other latencies:
//! `cargo bench --bench range_query -- 25`; rounds: `RANGE_ROUNDS=40` (default 15).
//!
//! One table on DynamoDB Local (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise) holds an ops
//! log of 30 days, 40 entries a day, `#[pk(template = "OPS#{at:day}", shard = "random", n =
//! 4)]`, `#[sk(template = "{at}#{id}")]`. Every request of the measured client goes through
//! `sharded_testkit::faults::Faults`, which delays it by the injected latency with an
//! asynchronous sleep (concurrent requests overlap, as over a network). The range is the 30
//! whole days, oldest first:
//!
//! - **(a) ours**: `OpsEntry::query_range(&repo, &from, &to).collect()`, the repository's
//!   default concurrency of 32: a window of 32 / 4 = 8 buckets.
//! - **(b) sequential**: the same 30 buckets walked one after another, each read with our own
//!   scatter-gather (`OpsEntry::query(&repo, &day).collect()`, its 4 shards concurrent), the
//!   answers appended: what a loop over the days does.
//! - **(c) ours, window of 1** (diagnostic): (a) through a repository of concurrency 4, so
//!   `W = 4 / 4 = 1`: the walk without read-ahead.
//! - **(d) ours, newest 100** (diagnostic): `.descending().limit(100)`: the read-ahead opens
//!   only once the newest buckets cannot fill the limit, and only as wide as needed.
//! - **(e) raw floor** (diagnostic): the same 120 Queries with the raw SDK, 32 at a time
//!   (`buffer_unordered(32)`, keys from `OpsEntry::pk_on_shard`), concatenated, sorted and
//!   deserialised: what DynamoDB Local itself costs for them at this concurrency, without our
//!   walk and merge.
//!
//! Every answer is checked against what was written before timing. After warm-up rounds (at
//! least 3, and 15 s for the fresh JVM's JIT), the variants run interleaved (the first one
//! rotating each round); the medians of their wall times are compared, with the median of the
//! per-round ratios as a drift check. The machine has 2 cores shared with DynamoDB Local, so
//! only ratios mean anything. This binary reports; it never fails on a missed target.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeZone, Utc};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sharded::{keys::Item, Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod stats;
use stats::median;

/// The ops log: a day bucket, 4 random shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: DateTime<Utc>,
    id: String,
    agent: String,
}

const DAYS: i64 = 30;
const PER_DAY: i64 = 40;
const SHARDS: usize = 4;
const DEFAULT_ROUNDS: usize = 15;
const WARM_UP_ROUNDS: usize = 3;
const FIRST_WARM_UP: Duration = Duration::from_secs(15);
const SEQUENTIAL_OVER_OURS_TARGET: f64 = 5.0;
const NEWEST: usize = 100;

type Run<'a> = Pin<Box<dyn Future<Output = Vec<OpsEntry>> + 'a>>;

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 1, 0, 0, 0)
        .single()
        .expect("a valid time")
}

fn entries() -> Vec<OpsEntry> {
    let mut rng = fastrand::Rng::with_seed(30);
    (0..DAYS * PER_DAY)
        .map(|i| OpsEntry {
            at: start()
                + chrono::Duration::days(i / PER_DAY)
                + chrono::Duration::seconds(rng.i64(0..86_400)),
            id: format!("op{i:05}"),
            agent: ["scanner", "classifier"][(i % 2) as usize].to_owned(),
        })
        .collect()
}

struct Bench {
    repo: Repo<OpsEntry>,
    narrow: Repo<OpsEntry>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
}

impl Bench {
    const NAMES: [&'static str; 5] = [
        "(a) ours: query_range(..).collect(), concurrency 32 (window of 8 buckets)",
        "(b) sequential: 30 x OpsEntry::query(day).collect(), one bucket after another",
        "(c) ours, concurrency 4 (window of 1 bucket)",
        "(d) ours, newest 100: query_range(..).descending().limit(100)",
        "(e) raw floor: the 120 Queries, raw SDK, 32 at a time, + concat + sort",
    ];

    fn run(&self, variant: usize) -> Run<'_> {
        match variant {
            0 => Box::pin(async {
                OpsEntry::query_range(&self.repo, &self.from, &self.to)
                    .collect()
                    .await
                    .expect("range query")
            }),
            1 => Box::pin(async {
                let mut all = Vec::new();
                for day in 0..DAYS {
                    let at = self.from + chrono::Duration::days(day);
                    all.extend(
                        OpsEntry::query(&self.repo, &at)
                            .collect()
                            .await
                            .expect("bucket query"),
                    );
                }
                all
            }),
            2 => Box::pin(async {
                OpsEntry::query_range(&self.narrow, &self.from, &self.to)
                    .collect()
                    .await
                    .expect("range query")
            }),
            3 => Box::pin(async {
                OpsEntry::query_range(&self.repo, &self.from, &self.to)
                    .descending()
                    .limit(NEWEST)
                    .collect()
                    .await
                    .expect("range query")
            }),
            _ => Box::pin(self.raw_floor()),
        }
    }

    /// Every (day, shard) partition with the raw SDK, `concurrency` Queries at a time.
    async fn raw_floor(&self) -> Vec<OpsEntry> {
        let client = self.repo.client();
        let table = self.repo.table();
        let keys: Vec<String> = (0..DAYS)
            .flat_map(|day| {
                let at = self.from + chrono::Duration::days(day);
                (0..SHARDS as u32).map(move |shard| OpsEntry::pk_on_shard(&at, shard))
            })
            .collect::<Result<_, _>>()
            .expect("keys");
        let pages: Vec<Vec<Item>> = futures::stream::iter(keys)
            .map(|pk| async move {
                client
                    .query()
                    .table_name(table)
                    .key_condition_expression("pk = :pk")
                    .expression_attribute_values(":pk", AttributeValue::S(pk))
                    .send()
                    .await
                    .expect("raw Query")
                    .items
                    .unwrap_or_default()
            })
            .buffer_unordered(self.repo.concurrency())
            .collect()
            .await;
        let mut items: Vec<Item> = pages.into_iter().flatten().collect();
        let sk = |item: &Item| {
            item.get("sk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default()
        };
        items.sort_by_key(sk);
        serde_dynamo::from_items(items).expect("deserialise")
    }
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

async fn phase(
    bench: &Bench,
    faults: &Faults,
    latency_ms: u64,
    rounds: usize,
    min_warm_up: Duration,
    expected: &[Vec<OpsEntry>],
) {
    faults.set_latency(Duration::from_millis(latency_ms));
    let variants = Bench::NAMES.len();
    let warm_up = Instant::now();
    let mut requests = Vec::new();
    for (v, expected) in expected.iter().enumerate() {
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
    let mut in_flight = vec![0; variants];
    for round in 0..rounds {
        for j in 0..variants {
            let v = (round + j) % variants;
            faults.reset_counts();
            let start = Instant::now();
            std::hint::black_box(bench.run(v).await);
            times[v].push(start.elapsed().as_secs_f64() * 1000.0);
            in_flight[v] = in_flight[v].max(faults.max_in_flight());
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
    println!("| variant | items | Query requests | max in flight | median ms | min ms | max ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for v in 0..variants {
        let (min, max) = times[v]
            .iter()
            .fold((f64::MAX, 0.0_f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            Bench::NAMES[v],
            expected[v].len(),
            requests[v].0,
            requests[v].1.max(in_flight[v]),
            medians[v],
            min,
            max,
        );
    }
    let b_a = medians[1] / medians[0];
    println!();
    println!("| ratio | of medians | median of round ratios | target | |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| (b) sequential / (a) ours | {b_a:.2}x | {:.2}x | >= {SEQUENTIAL_OVER_OURS_TARGET}x | {} |",
        round_ratio(1, 0),
        verdict(b_a >= SEQUENTIAL_OVER_OURS_TARGET)
    );
    println!(
        "| (c) window of 1 / (a) ours | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[2] / medians[0],
        round_ratio(2, 0)
    );
    println!(
        "| (b) sequential / (c) window of 1 | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[1] / medians[2],
        round_ratio(1, 2)
    );
    println!(
        "| (a) ours / (e) raw floor | {:.2}x | {:.2}x | (diagnostic) | |",
        medians[0] / medians[4],
        round_ratio(0, 4)
    );
    let most = in_flight[0].max(requests[0].1);
    println!(
        "| (a) max requests in flight / concurrency | {most}/{} | | <= 1 | {} |",
        bench.repo.concurrency(),
        verdict(most <= bench.repo.concurrency())
    );
}

async fn bench() {
    let latencies: Vec<u64> = common::numbers_from_args(&[10]);
    let rounds = common::env_number("RANGE_ROUNDS", DEFAULT_ROUNDS);

    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-range");
    let loader: Repo<OpsEntry> = Repo::new(local.client().await, &table);
    loader.create_table().await.expect("create table");
    let mut all = entries();
    loader.batch_put(&all).await.expect("load");
    all.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    let (from, to) = (start(), start() + chrono::Duration::days(DAYS));
    let per_day = OpsEntry::query_range(&loader, &from, &to)
        .count_by_bucket()
        .await
        .expect("count");
    println!(
        "{}, table {table}: {} entries over {} day buckets x {SHARDS} shards \
         ({} to {} a day)",
        local,
        all.len(),
        per_day.len(),
        per_day.iter().map(|c| c.1).min().unwrap_or(0),
        per_day.iter().map(|c| c.1).max().unwrap_or(0),
    );
    let newest: Vec<OpsEntry> = all.iter().rev().take(NEWEST).cloned().collect();
    let expected = vec![all.clone(), all.clone(), all.clone(), newest, all];

    let faults = Faults::new();
    let client = faults.client(&sdk);
    let bench = Bench {
        repo: Repo::new(client.clone(), &table),
        narrow: Repo::new(client, &table).with_concurrency(SHARDS),
        from,
        to,
    };
    for (i, latency) in latencies.into_iter().enumerate() {
        let min_warm_up = if i == 0 {
            FIRST_WARM_UP
        } else {
            Duration::ZERO
        };
        phase(&bench, &faults, latency, rounds, min_warm_up, &expected).await;
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}

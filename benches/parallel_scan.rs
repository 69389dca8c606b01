//! Throughput of the parallel scan (issue 10, section 5): items/s of `repo.scan()` over 8
//! segments against sequential scans of the same items, side by side in one run.
//!
//! `cargo bench --bench parallel_scan` (10 ms injected per request; pages of 100 items, then
//! DynamoDB's 1 MB pages). Other latencies: `cargo bench --bench parallel_scan -- 25 0`;
//! rounds: `PARALLEL_SCAN_ROUNDS=15` (default 9); items: `PARALLEL_SCAN_ITEMS=50000` (default
//! 20,000).
//!
//! One table on DynamoDB Local (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise) holds the
//! items of a small entity (`Row`, ~80 bytes, one item per partition key). Every request of the
//! measured client goes through `sharded_testkit::faults::Faults`, which delays it by the
//! injected latency with an asynchronous sleep (concurrent requests overlap, as over a
//! network). Each variant reads every item and decodes it into `Row`:
//!
//! - **(a) ours, 8 segments**: `repo.scan().segments(8).page_size(p).collect()` (8 in flight).
//! - **(b) ours, defaults**: `repo.scan().page_size(p).collect()` (4 segments).
//! - **(c) ours, 1 segment**: `repo.scan().segments(1).page_size(p).collect()`: sequential.
//! - **(d) raw sequential**: a hand-written loop of raw SDK `Scan` requests (same entity
//!   filter and `Limit`, `ExclusiveStartKey` = the last `LastEvaluatedKey`), decoded with
//!   `serde_dynamo`: what a scan without this crate looks like.
//! - **(e) raw parallel, 8 segments** (diagnostic): 8 such loops, one per segment, at once
//!   (`join_all`): what DynamoDB Local itself allows, without our stream.
//!
//! Every answer is checked (count and sum of a field) before timing. After one warm-up
//! round (which also counts requests and the most in flight), the variants run interleaved,
//! the first one rotating each round; medians are taken and items/s = items / median. The
//! machine has 2 cores shared with builds and with DynamoDB Local itself, so only ratios mean
//! anything. This binary reports; it never fails.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod cpu;
mod stats;
use cpu::{per_run, CpuMeter};
use stats::median;

/// A small item: one per partition key, as exported rows usually are.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "ROW#{id}")]
struct Row {
    id: u64,
    group: u32,
    value: u64,
    label: String,
}

const DEFAULT_ITEMS: usize = 20_000;
const DEFAULT_ROUNDS: usize = 9;
const SEGMENTS: u32 = 8;
/// `Limit` of the first phase: a scan paced by a rate limit uses small pages.
const SMALL_PAGE: u32 = 100;

/// (items, sum of `value`): enough to tell a lost or repeated item.
type Answer = (usize, u64);
type Run<'a> = Pin<Box<dyn Future<Output = Answer> + 'a>>;

fn rows(count: usize) -> Vec<Row> {
    let mut seed = 0x5EED_0005_u64;
    (0..count as u64)
        .map(|id| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            Row {
                id,
                group: (id % 97) as u32,
                value: (seed >> 33) % 1_000_000,
                label: format!("row-{:05}", seed % 100_000),
            }
        })
        .collect()
}

fn answer(rows: &[Row]) -> Answer {
    (rows.len(), rows.iter().map(|r| r.value).sum())
}

/// One segment read to its end with raw SDK `Scan` requests, decoded.
async fn raw_segment(
    client: &Client,
    table: &str,
    segment: Option<(i32, i32)>,
    page: Option<u32>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut start = None;
    loop {
        let output = client
            .scan()
            .table_name(table)
            .set_segment(segment.map(|(s, _)| s))
            .set_total_segments(segment.map(|(_, n)| n))
            .filter_expression("#et = :et")
            .expression_attribute_names("#et", "_entity")
            .expression_attribute_values(":et", AttributeValue::S("Row".into()))
            .set_limit(page.map(|p| p as i32))
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("raw Scan");
        let items = output.items.unwrap_or_default();
        rows.extend(serde_dynamo::from_items::<_, Row>(items).expect("decode"));
        match output.last_evaluated_key {
            Some(key) => start = Some(key),
            None => return rows,
        }
    }
}

struct Bench {
    repo: Repo<Row>,
    client: Client,
    table: String,
}

impl Bench {
    const NAMES: [&'static str; 5] = [
        "(a) ours, 8 segments: repo.scan().segments(8)",
        "(b) ours, defaults (4 segments): repo.scan()",
        "(c) ours, 1 segment: repo.scan().segments(1)",
        "(d) raw SDK sequential Scan loop",
        "(e) diagnostic: 8 raw SDK segment loops at once (join_all)",
    ];

    fn run(&self, variant: usize, page: Option<u32>) -> Run<'_> {
        let ours = move |segments: Option<u32>| {
            let mut scan = self.repo.scan();
            if let Some(n) = segments {
                scan = scan.segments(n);
            }
            if let Some(p) = page {
                scan = scan.page_size(p);
            }
            scan
        };
        match variant {
            0 => Box::pin(
                async move { answer(&ours(Some(SEGMENTS)).collect().await.expect("scan")) },
            ),
            1 => Box::pin(async move { answer(&ours(None).collect().await.expect("scan")) }),
            2 => Box::pin(async move { answer(&ours(Some(1)).collect().await.expect("scan")) }),
            3 => Box::pin(async move {
                answer(&raw_segment(&self.client, &self.table, None, page).await)
            }),
            _ => Box::pin(async move {
                let n = SEGMENTS as i32;
                let segments = futures::future::join_all(
                    (0..n).map(|s| raw_segment(&self.client, &self.table, Some((s, n)), page)),
                )
                .await;
                answer(&segments.concat())
            }),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn phase(
    bench: &Bench,
    meter: &CpuMeter,
    faults: &Faults,
    latency_ms: u64,
    page: Option<u32>,
    rounds: usize,
    items: usize,
    expected: Answer,
) {
    faults.set_latency(Duration::from_millis(latency_ms));
    let variants = Bench::NAMES.len();
    // Warm-up round: checks every answer, counts requests and the most in flight.
    let mut requests = Vec::new();
    for v in 0..variants {
        faults.reset_counts();
        let got = bench.run(v, page).await;
        assert_eq!(got, expected, "{} disagrees", Bench::NAMES[v]);
        requests.push((faults.requests("Scan"), faults.max_in_flight()));
    }
    let mut times = vec![Vec::with_capacity(rounds); variants];
    let mut cpu = vec![(0.0, 0.0, true); variants];
    for round in 0..rounds {
        for j in 0..variants {
            let v = (round + j) % variants;
            let before = meter.read();
            let start = Instant::now();
            std::hint::black_box(bench.run(v, page).await);
            times[v].push(start.elapsed().as_secs_f64());
            match meter.read().since(&before) {
                (Some(client), Some(server)) => {
                    cpu[v].0 += client;
                    cpu[v].1 += server;
                }
                _ => cpu[v].2 = false,
            }
        }
    }
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    let rate = |v: usize| items as f64 / medians[v];
    let round_ratio = |num: usize, den: usize| {
        // Time of `den` over time of `num`: how many times faster `num` is.
        let r: Vec<f64> = times[num]
            .iter()
            .zip(&times[den])
            .map(|(n, d)| d / n)
            .collect();
        median(&r)
    };
    let page_text = page.map_or("DynamoDB's 1 MB pages".to_owned(), |p| {
        format!("pages of {p} items")
    });
    println!(
        "\n### {latency_ms} ms injected per request, {page_text} ({rounds} interleaved rounds)\n"
    );
    println!(
        "| variant | Scan requests | max in flight | median s | items/s | client CPU ms/run | DynamoDB Local CPU ms/run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for v in 0..variants {
        let (client, server, known) = cpu[v];
        println!(
            "| {} | {} | {} | {:.2} | {:.0} | {} | {} |",
            Bench::NAMES[v],
            requests[v].0,
            requests[v].1,
            medians[v],
            rate(v),
            per_run(known.then_some(client), rounds),
            per_run(known.then_some(server), rounds),
        );
    }
    println!();
    println!("| ratio (items/s) | of medians | median of round ratios |");
    println!("|---|---:|---:|");
    for (num, den, label) in [
        (0, 2, "(a) 8 segments / (c) ours, 1 segment"),
        (0, 3, "(a) 8 segments / (d) raw sequential loop"),
        (1, 3, "(b) defaults / (d) raw sequential loop"),
        (2, 3, "(c) ours, 1 segment / (d) raw sequential loop"),
        (0, 4, "(a) ours, 8 segments / (e) raw, 8 segments"),
    ] {
        println!(
            "| {label} | {:.2}x | {:.2}x |",
            rate(num) / rate(den),
            round_ratio(num, den)
        );
    }
}

async fn bench() {
    let latencies: Vec<u64> = common::numbers_from_args(&[10]);
    let rounds = common::env_number("PARALLEL_SCAN_ROUNDS", DEFAULT_ROUNDS).max(1);
    let items = common::env_number("PARALLEL_SCAN_ITEMS", DEFAULT_ITEMS).max(1);

    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-scan");
    let loader: Repo<Row> = Repo::new(Client::new(&sdk), &table);
    loader.create_table().await.expect("create table");
    let rows = rows(items);
    let started = Instant::now();
    loader.batch_put(&rows).await.expect("load rows");
    let size: usize = rows
        .iter()
        .map(|r| sharded::capacity::item_size(&r.to_item().expect("item")))
        .sum();
    println!(
        "{}, table {table}: {items} items of {} bytes on average (DynamoDB's \
         size rules), loaded in {:.1} s",
        local,
        size / items,
        started.elapsed().as_secs_f64()
    );
    let expected = answer(&rows);
    // The machine is shared: the load says how much to trust this run's absolute times.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!(
            "load average (1, 5, 15 min): {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let meter = CpuMeter::new();
    let faults = Faults::new();
    let client = faults.client(&sdk);
    let bench = Bench {
        repo: Repo::new(client.clone(), &table),
        client,
        table,
    };
    for latency in latencies {
        for page in [Some(SMALL_PAGE), None] {
            phase(
                &bench, &meter, &faults, latency, page, rounds, items, expected,
            )
            .await;
        }
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}

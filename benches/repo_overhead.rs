//! Overhead of the typed repository over the raw SDK + `serde_dynamo` on DynamoDB Local, no
//! injected latency (issue 3, target: throughput ours / raw >= 0.95x).
//!
//! `cargo bench --bench repo_overhead` (rounds: `REPO_ROUNDS=60`, default 40; a one-thread
//! tokio runtime instead of the multi-threaded one: `REPO_RUNTIME=current_thread`).
//!
//! Entity: the leaderboard score on one unsharded partition (`#[pk(template = "FLAT#{game_id}")]`,
//! `#[sk(template = "SCORE#{score}#{player_id}")]`), so both sides send the same requests.
//!
//! - **put**: 300 sequential `repo.put(&score)` vs 300 sequential raw
//!   `client.put_item().set_item(Some(item))`, where the raw item is what users write today:
//!   `serde_dynamo::to_item(&score)` plus the key strings built by hand with `format!`
//!   (`FLAT#{game_id}`, `SCORE#{score:020}#{player_id}`) and the `_entity` attribute. Both
//!   sides are checked to produce the same item, and both write the same 300 keys.
//! - **query**: 50 sequential reads of a 100-item partition: our `Query::collect()` (one Query
//!   with the sort-key prefix condition; the `_entity` check on the client, as the prefix
//!   confines the query to this entity's keys; heap merge of one shard,
//!   `from_item` per item) vs raw `client.query()` + `serde_dynamo::from_items`. Both sides
//!   are checked to return the same 100 items. Two diagnostic sides send the raw query with
//!   our key condition (`begins_with(sk, "SCORE#")`), with and without our `_entity` filter,
//!   to tell DynamoDB Local's share of the difference from the client's.
//!
//! A last diagnostic times the client-side work on one fetched 100-item page without
//! DynamoDB: the engine's path (`top_k` over the page keyed by `SortValue`, then `from_item`
//! per item) vs `serde_dynamo::from_items`.
//!
//! DynamoDB Local runs on the same 2-core machine, shared with builds, and is noisy: after
//! warm-up rounds (at least 2, and 15 s for the fresh JVM's JIT), the sides take turns
//! operation by operation (A, B, B, A, ... for puts; A, B, C, D, B, C, D, A, ... for queries) for many rounds; each side's median time per round is
//! taken, and the throughput ratio ours / raw = raw time / our time is printed as the ratio of
//! the medians and as the median of the per-round ratios. CPU time per operation of this
//! process and of the DynamoDB Local JVM (from `/proc`) is printed too. This binary reports;
//! it never fails on a missed target.

use std::collections::HashMap;
use std::time::Instant;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::{keys::Item, Repo, ShardedEntity};
use sharded_runtime::__bench::{top_k, SortValue};
use sharded_testkit::backend::unique_table_name;

mod common;
mod cpu;
mod stats;
use cpu::{per_run, CpuMeter};
use stats::median;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "FLAT#{game_id}")]
#[sk(template = "SCORE#{score}#{player_id}")]
struct FlatScore {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

const PUTS: usize = 300;
const QUERY_ITEMS: usize = 100;
const QUERIES: usize = 50;
const DEFAULT_ROUNDS: usize = 40;
const WARM_UP_ROUNDS: usize = 2;
const WARM_UP: std::time::Duration = std::time::Duration::from_secs(15);
/// Query sides: ours, raw, raw + our key condition + filter, raw + our key condition.
const SIDES: usize = 4;
const TARGET: f64 = 0.95;

fn scores(game: &str, count: usize, seed: u64) -> Vec<FlatScore> {
    let mut seed = seed;
    (0..count)
        .map(|i| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            FlatScore {
                game_id: game.into(),
                player_id: format!("player-{i}"),
                score: (seed >> 33) % 1_000_000,
                at: format!("2026-06-22T01:{:02}:{:02}Z", (i / 60) % 60, i % 60),
            }
        })
        .collect()
}

/// The item as a hand-written single-table design builds it today.
fn raw_item(score: &FlatScore) -> Item {
    let mut item: HashMap<String, AttributeValue> =
        serde_dynamo::to_item(score).expect("serialise");
    item.insert(
        "pk".to_owned(),
        AttributeValue::S(format!("FLAT#{}", score.game_id)),
    );
    item.insert(
        "sk".to_owned(),
        AttributeValue::S(format!("SCORE#{:020}#{}", score.score, score.player_id)),
    );
    item.insert(
        "_entity".to_owned(),
        AttributeValue::S("FlatScore".to_owned()),
    );
    item
}

async fn raw_put(client: &Client, table: &str, score: &FlatScore) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(raw_item(score)))
        .send()
        .await
        .expect("raw PutItem");
}

async fn ours_query(repo: &Repo<FlatScore>, game: &str) -> Vec<FlatScore> {
    FlatScore::query(repo, game).collect().await.expect("query")
}

async fn raw_query(client: &Client, table: &str, game: &str) -> Vec<FlatScore> {
    let output = client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(format!("FLAT#{game}")))
        .send()
        .await
        .expect("raw Query");
    assert!(output.last_evaluated_key.is_none(), "one page expected");
    serde_dynamo::from_items(output.items.unwrap_or_default()).expect("deserialise")
}

/// Diagnostic: the raw query with what our engine adds to it: the key condition on the
/// sort-key prefix (`begins_with(sk, "SCORE#")`) and, if `filter`, the `_entity` filter. Splits
/// our overhead into DynamoDB Local's side and ours.
async fn raw_query_as_ours(
    client: &Client,
    table: &str,
    game: &str,
    filter: bool,
) -> Vec<FlatScore> {
    let mut request = client
        .query()
        .table_name(table)
        .key_condition_expression("#pk = :pk AND begins_with(#sk, :sk0)")
        .expression_attribute_names("#pk", "pk")
        .expression_attribute_names("#sk", "sk")
        .expression_attribute_values(":pk", AttributeValue::S(format!("FLAT#{game}")))
        .expression_attribute_values(":sk0", AttributeValue::S("SCORE#".to_owned()));
    if filter {
        request = request
            .filter_expression("#et = :et")
            .expression_attribute_names("#et", "_entity")
            .expression_attribute_values(":et", AttributeValue::S("FlatScore".to_owned()));
    }
    let output = request.send().await.expect("raw Query as ours");
    assert!(output.last_evaluated_key.is_none(), "one page expected");
    serde_dynamo::from_items(output.items.unwrap_or_default()).expect("deserialise")
}

/// Prints one row: per-op medians of both sides and the throughput ratio ours / raw.
fn report(name: &str, ops: usize, ours: &[f64], raw: &[f64]) {
    let (o, r) = (median(ours), median(raw));
    let ratio = r / o;
    let rounds: Vec<f64> = ours.iter().zip(raw).map(|(o, r)| r / o).collect();
    let round_ratio = median(&rounds);
    let verdict = if ratio >= TARGET { "PASS" } else { "MISS" };
    println!(
        "| {name} | {ops} | {:.3} | {:.3} | {ratio:.3}x | {round_ratio:.3}x | >= {TARGET}x | {verdict} |",
        o * 1000.0 / ops as f64,
        r * 1000.0 / ops as f64,
    );
}

/// Prints one diagnostic row comparing `first` with `second`.
fn diagnostic(name: &str, ops: usize, first: &[f64], second: &[f64]) {
    let (f, s) = (median(first), median(second));
    let rounds: Vec<f64> = first.iter().zip(second).map(|(f, s)| s / f).collect();
    println!(
        "| {name} | {ops} | {:.3} | {:.3} | {:.3}x | {:.3}x |",
        f * 1000.0 / ops as f64,
        s * 1000.0 / ops as f64,
        s / f,
        median(&rounds)
    );
}

fn add(sum: &mut (Option<f64>, Option<f64>), (client, server): (Option<f64>, Option<f64>)) {
    let plus = |s: Option<f64>, v: Option<f64>| Some(s.unwrap_or(0.0) + v.unwrap_or(f64::NAN));
    *sum = (plus(sum.0, client), plus(sum.1, server));
}

/// Per-page client work of the engine (approximated by the public pieces it is made of).
fn engine_decode(page: Vec<Item>) -> Vec<FlatScore> {
    top_k(
        vec![page],
        QUERY_ITEMS,
        |item| item.get("sk").and_then(SortValue::from_attribute),
        false,
    )
    .into_iter()
    .map(|item| FlatScore::from_item(item).expect("from_item"))
    .collect()
}

fn raw_decode(page: Vec<Item>) -> Vec<FlatScore> {
    serde_dynamo::from_items(page).expect("deserialise")
}

/// Median µs per page of both decodes, interleaved, inputs cloned before the clock.
fn client_side(page: &[Item]) -> (f64, f64) {
    const BATCH: usize = 100;
    const ROUNDS: usize = 31;
    let decodes: [fn(Vec<Item>) -> Vec<FlatScore>; 2] = [engine_decode, raw_decode];
    assert_eq!(engine_decode(page.to_vec()), raw_decode(page.to_vec()));
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS + 1 {
        for j in 0..2 {
            let side = (round + j) % 2;
            let inputs: Vec<Vec<Item>> = (0..BATCH).map(|_| page.to_vec()).collect();
            let start = Instant::now();
            let outputs: Vec<Vec<FlatScore>> = inputs.into_iter().map(decodes[side]).collect();
            let elapsed = start.elapsed().as_secs_f64() * 1e6 / BATCH as f64;
            std::hint::black_box(outputs);
            if round > 0 {
                times[side].push(elapsed);
            }
        }
    }
    (median(&times[0]), median(&times[1]))
}

async fn bench() {
    let rounds = std::env::var("REPO_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let local = common::backend().await;
    let client = local.client().await;
    let table = unique_table_name("bench-repo");
    let repo: Repo<FlatScore> = Repo::new(client.clone(), &table);
    repo.create_table().await.expect("create table");
    println!("{}, table {table}", local);

    // Same item both ways, or the comparison means nothing.
    let puts = scores("put-g", PUTS, 0x5EED_0004);
    for score in &puts {
        assert_eq!(
            score.to_item().expect("to_item"),
            raw_item(score),
            "hand-written item differs"
        );
    }
    let stored = scores("q1", QUERY_ITEMS, 0x5EED_0005);
    repo.batch_put(&stored).await.expect("load query partition");
    let ours = ours_query(&repo, "q1").await;
    assert_eq!(ours.len(), QUERY_ITEMS);
    assert_eq!(ours, raw_query(&client, &table, "q1").await);
    assert_eq!(ours, raw_query_as_ours(&client, &table, "q1", true).await);
    assert_eq!(ours, raw_query_as_ours(&client, &table, "q1", false).await);

    let (mut put_ours, mut put_raw) = (Vec::new(), Vec::new());
    let mut query_times: [Vec<f64>; SIDES] = Default::default();
    // CPU sums (client, DynamoDB Local): put ours, put raw, then the query sides.
    let mut cpu = [(None, None); 2 + SIDES];
    let meter = CpuMeter::new();
    // Warm-up (DynamoDB Local's JIT, connection pools): at least WARM_UP_ROUNDS rounds and
    // WARM_UP of wall time, not recorded.
    let warm_up = Instant::now();
    let mut warm_up_rounds = 0;
    let mut recorded = 0;
    let mut round = 0;
    while recorded < rounds {
        let record = warm_up_rounds >= WARM_UP_ROUNDS && warm_up.elapsed() >= WARM_UP;
        if record {
            recorded += 1;
        } else {
            warm_up_rounds += 1;
        }
        round += 1;
        // Puts: ours and raw alternate item by item (who goes first alternating too), so a
        // burst of load from another process hits both sides alike.
        let mut put = [0.0_f64; 2];
        for (i, score) in puts.iter().enumerate() {
            for j in 0..2 {
                let side = (round + i + j) % 2;
                let before = meter.read();
                let start = Instant::now();
                if side == 0 {
                    repo.put(score).await.expect("put");
                } else {
                    raw_put(&client, &table, score).await;
                }
                put[side] += start.elapsed().as_secs_f64();
                if record {
                    add(&mut cpu[side], meter.read().since(&before));
                }
            }
        }
        // Queries: the sides take turns query by query, the first one rotating.
        let mut query = [0.0_f64; SIDES];
        for i in 0..QUERIES {
            for j in 0..SIDES {
                let side = (round + i + j) % SIDES;
                let before = meter.read();
                let start = Instant::now();
                let items = match side {
                    0 => ours_query(&repo, "q1").await,
                    1 => raw_query(&client, &table, "q1").await,
                    2 => raw_query_as_ours(&client, &table, "q1", true).await,
                    _ => raw_query_as_ours(&client, &table, "q1", false).await,
                };
                query[side] += start.elapsed().as_secs_f64();
                if record {
                    add(&mut cpu[2 + side], meter.read().since(&before));
                }
                std::hint::black_box(items);
            }
        }
        if record {
            put_ours.push(put[0]);
            put_raw.push(put[1]);
            for (times, t) in query_times.iter_mut().zip(query) {
                times.push(t);
            }
        }
    }

    println!(
        "\n{rounds} interleaved rounds after {warm_up_rounds} warm-up rounds; \
         ms per operation are medians of per-round means\n"
    );
    println!(
        "| operation | ops per round and side | ours ms/op | raw ms/op | throughput ours/raw (medians) | median of round ratios | target | |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    report(
        "put: repo.put vs format! + serde_dynamo::to_item + put_item",
        PUTS,
        &put_ours,
        &put_raw,
    );
    report(
        "query 100 items: Query::collect (unsharded) vs query + serde_dynamo::from_items",
        QUERIES,
        &query_times[0],
        &query_times[1],
    );
    println!();
    println!("Diagnostics (no target): where the query difference comes from.\n");
    println!(
        "| comparison | ops | first ms/op | second ms/op | throughput first/second (medians) | median of round ratios |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    diagnostic(
        "raw + our key condition vs plain raw (DynamoDB Local's side of what ours sends)",
        QUERIES,
        &query_times[3],
        &query_times[1],
    );
    diagnostic(
        "raw + key condition + `_entity` filter vs raw + key condition (what the filter would cost; ours no longer sends it here)",
        QUERIES,
        &query_times[2],
        &query_times[3],
    );
    diagnostic(
        "ours vs raw with our key condition (the client side: engine, entity check, from_item)",
        QUERIES,
        &query_times[0],
        &query_times[3],
    );

    println!("\nCPU per operation (client = this process, server = the DynamoDB Local JVM; /proc ticks summed over every recorded operation):\n");
    println!("| operation | client CPU ms/op | DynamoDB Local CPU ms/op |");
    println!("|---|---:|---:|");
    let cpu_names = [
        "put, ours",
        "put, raw",
        "query, ours",
        "query, raw",
        "query, raw + our key condition + filter",
        "query, raw + our key condition",
    ];
    for (name, (client_ms, server_ms)) in cpu_names.iter().zip(cpu) {
        let ops = rounds
            * if name.starts_with("put") {
                PUTS
            } else {
                QUERIES
            };
        println!(
            "| {name} | {} | {} |",
            per_run(client_ms, ops),
            per_run(server_ms, ops)
        );
    }

    let page = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S("FLAT#q1".to_owned()))
        .send()
        .await
        .expect("raw Query")
        .items
        .unwrap_or_default();
    let (engine, raw) = client_side(&page);
    let query_ms = median(&query_times[1]) * 1000.0 / QUERIES as f64;
    println!(
        "\nClient-side decode of one 100-item page, no DynamoDB: engine path (top_k + from_item) \
         {engine:.1} µs, serde_dynamo::from_items {raw:.1} µs; difference {:.1} µs = {:.2}% of a \
         raw query's {query_ms:.2} ms here.",
        engine - raw,
        (engine - raw) / (query_ms * 1000.0) * 100.0
    );
}

fn main() {
    // `REPO_RUNTIME=current_thread` runs everything on one thread (a diagnostic: no wake-ups
    // across worker threads); the default is tokio's multi-threaded runtime.
    let mut runtime = match std::env::var("REPO_RUNTIME").as_deref() {
        Ok("current_thread") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    runtime
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}

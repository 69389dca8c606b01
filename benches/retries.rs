//! What safe retries cost: exactly-once counter increments under injected transaction
//! conflicts, and a transaction commit that is sent again.
//!
//! `cargo bench --bench retries` (rounds: `RETRIES_ROUNDS`, default 5).
//!
//! On DynamoDB Local through `sharded_testkit::faults` (DynamoDB Local never cancels a
//! transaction for a conflict; the real service does whenever two transactions touch one item
//! at once, which a hot counter's increments do).
//!
//! 1. Counters: each round sends 500 `increment(1)` calls, 32 in flight, to a 10-shard
//!    counter whose client cancels 0%, 5% or 20% of the transactions with
//!    `TransactionConflict` before they reach DynamoDB Local (the settings take turns). Every
//!    canceled send is sent again, identical, under its token. Reported: increments/s
//!    (median round), transaction requests per increment, write units per acknowledged
//!    increment (applied sends x 2: a canceled send applies nothing; what the real service
//!    charges for a canceled transaction is not modelled), and acknowledged / counted, which
//!    must be exactly 1.0 (asserted).
//! 2. A retried commit: a two-action transaction at 10 ms injected latency, committed
//!    cleanly, against one whose first send is canceled for a conflict (sent again after the
//!    retry policy's backoff), and one whose first answer is lost after it was applied
//!    (`PreparedTransaction::commit` called again by the caller). Median of 40 each.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use sharded::{Repo, RetryPolicy, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod common;
mod stats;
use stats::median;

#[derive(ShardedEntity, Serialize, Deserialize, Debug)]
#[pk(template = "ELECTION#{election}")]
#[sk(template = "CANDIDATE#{name}")]
#[counter(name = "votes", n = 10)]
struct Candidate {
    election: String,
    name: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug)]
#[pk(template = "USER#{user_id}")]
#[sk(template = "WALLET")]
struct Wallet {
    user_id: String,
    coins: i64,
}

const PER_ROUND: usize = 500;
const CONCURRENCY: usize = 32;
const CONFLICT_RATES: [f64; 3] = [0.0, 0.05, 0.20];
const COMMITS: usize = 40;

fn faulty_client(
    faults: &Faults,
    sdk: &aws_config::SdkConfig,
    attempts: u32,
) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .http_client(faults.http_client(sdk))
        .retry_config(RetryConfig::standard().with_max_attempts(attempts))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("RETRIES_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-retries");
    let plain: Repo<Candidate> = Repo::new(local.client().await, table.clone());
    plain.create_table().await.expect("create table");

    // 1. Counters under conflicts.
    let faults: Vec<Faults> = CONFLICT_RATES
        .iter()
        .enumerate()
        .map(|(i, rate)| {
            let f = Faults::new().with_seed(100 + i as u64);
            f.conflict_transactions(*rate);
            f
        })
        .collect();
    let counters: Vec<_> = faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let repo: Repo<Candidate> = Repo::new(faulty_client(f, &sdk, 3), table.clone());
            Candidate::votes_counter(&repo, "e1", &format!("rate{i}")).expect("counter")
        })
        .collect();
    let mut times = vec![Vec::new(); CONFLICT_RATES.len()];
    let mut acknowledged = vec![0usize; CONFLICT_RATES.len()];
    for round in 0..rounds + 1 {
        for turn in 0..CONFLICT_RATES.len() {
            // The settings take turns, starting one later each round.
            let side = (turn + round) % CONFLICT_RATES.len();
            let counter = &counters[side];
            let start = Instant::now();
            let ok = stream::iter(0..PER_ROUND)
                .map(|_| counter.increment(1))
                .buffer_unordered(CONCURRENCY)
                .filter(|r| std::future::ready(r.is_ok()))
                .count()
                .await;
            acknowledged[side] += ok;
            if round > 0 {
                times[side].push(start.elapsed().as_secs_f64());
            }
        }
    }
    println!(
        "{rounds} rounds of {PER_ROUND} exactly-once increments per setting, {CONCURRENCY} in flight, after 1 warm-up round"
    );
    println!("| injected conflicts | increments/s (median round) | requests per increment | write units per acknowledged increment | acknowledged / counted |");
    println!("|---:|---:|---:|---:|---:|");
    for (side, rate) in CONFLICT_RATES.iter().enumerate() {
        let counted = counters[side].total().await.expect("total");
        let sends = faults[side].requests("TransactWriteItems") as f64;
        let canceled = faults[side].injected("TransactWriteItems") as f64;
        let ratio = acknowledged[side] as f64 / counted as f64;
        assert_eq!(
            acknowledged[side] as i64, counted,
            "exactly once: every acknowledged increment counted once ({rate})"
        );
        println!(
            "| {:.0}% | {:.0} | {:.3} | {:.2} | {ratio:.3} |",
            rate * 100.0,
            PER_ROUND as f64 / median(&times[side]),
            sends / acknowledged[side] as f64,
            2.0 * (sends - canceled) / acknowledged[side] as f64,
        );
    }

    // 2. A retried commit.
    let wallets: Repo<Wallet> = Repo::new(local.client().await, unique_table_name("bench-commit"));
    wallets.create_table().await.expect("create table");
    let faults = Faults::new();
    faults.set_latency(Duration::from_millis(10));
    // One SDK attempt per send: the resend measured is ours.
    let repo: Repo<Wallet> = Repo::new(faulty_client(&faults, &sdk, 1), wallets.table());
    let transfer = |i: usize| {
        repo.transaction()
            .put(&Wallet {
                user_id: format!("a{i}"),
                coins: 1,
            })
            .put(&Wallet {
                user_id: format!("b{i}"),
                coins: 1,
            })
    };
    let mut clean = Vec::new();
    let mut conflicted = Vec::new();
    let mut lost = Vec::new();
    for i in 0..COMMITS {
        let start = Instant::now();
        transfer(3 * i).commit().await.expect("clean commit");
        clean.push(start.elapsed().as_secs_f64());

        faults.conflict_next_transactions(1);
        let start = Instant::now();
        transfer(3 * i + 1)
            .commit()
            .await
            .expect("commit after a conflict");
        conflicted.push(start.elapsed().as_secs_f64());

        let prepared = transfer(3 * i + 2)
            .with_retry(RetryPolicy {
                max_attempts: 1,
                ..RetryPolicy::default()
            })
            .prepare()
            .await
            .expect("prepare");
        faults.drop_responses("TransactWriteItems", 1);
        let start = Instant::now();
        let first = prepared.commit().await;
        assert!(matches!(&first, Err(e) if e.outcome_unknown()), "{first:?}");
        prepared.commit().await.expect("the same request again");
        lost.push(start.elapsed().as_secs_f64());
    }
    let (c, k, l) = (median(&clean), median(&conflicted), median(&lost));
    println!();
    println!("{COMMITS} two-action commits each, 10 ms injected per request");
    println!("| commit | median ms | vs clean |");
    println!("|---|---:|---:|");
    println!("| clean | {:.1} | 1.00x |", c * 1e3);
    println!(
        "| first send canceled for a conflict, sent again by `commit` | {:.1} | {:.2}x |",
        k * 1e3,
        k / c
    );
    println!(
        "| first answer lost, `PreparedTransaction::commit` called again | {:.1} | {:.2}x |",
        l * 1e3,
        l / c
    );
}

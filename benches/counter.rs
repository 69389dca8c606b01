//! Exactly-once vs at-least-once counter increments: throughput and write units per
//! increment (write-side issue, section 6).
//!
//! `cargo bench --bench counter` (rounds: `COUNTER_ROUNDS`, default 10).
//!
//! On DynamoDB Local, no injected latency: each round sends 500 increments of each kind to a
//! 10-shard counter, 32 at a time, the kinds taking turns (A, B, B, A, ...). `increment` is a
//! one-action `TransactWriteItems` with a `ClientRequestToken`; `increment_at_least_once` a
//! plain `UpdateItem ADD`. Totals are checked after the run. Units per increment are measured
//! by sending one request of each shape with `ReturnConsumedCapacity = TOTAL` (the library's
//! own calls do not ask for it).

use std::time::Instant;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, TransactWriteItem, Update};
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;

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

const PER_ROUND: usize = 500;
const CONCURRENCY: usize = 32;

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("COUNTER_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let local = common::backend().await;
    let client = local.client().await;
    let repo: Repo<Candidate> = Repo::new(client.clone(), unique_table_name("bench-counter"));
    repo.create_table().await.expect("create table");
    let exact = Candidate::votes_counter(&repo, "e1", "exact").expect("counter");
    let loose = Candidate::votes_counter(&repo, "e1", "loose").expect("counter");

    let mut times = [Vec::new(), Vec::new()];
    for round in 0..rounds + 1 {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let start = Instant::now();
            stream::iter(0..PER_ROUND)
                .map(|_| async {
                    match side {
                        0 => exact.increment(1).await,
                        _ => loose.increment_at_least_once(1).await,
                    }
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect::<Vec<u32>>()
                .await
                .expect("increments");
            if round > 0 {
                times[side].push(start.elapsed().as_secs_f64());
            }
        }
    }
    let sent = (PER_ROUND * (rounds + 1)) as i64;
    assert_eq!(exact.total().await.expect("total"), sent);
    assert_eq!(loose.total().await.expect("total"), sent);

    // Units: one request of each shape, as the counter sends it, asking for the consumed
    // capacity.
    let key = |pk: &str| {
        [
            ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
            ("sk".to_owned(), AttributeValue::S("COUNTER".to_owned())),
        ]
        .into_iter()
        .collect::<std::collections::HashMap<_, _>>()
    };
    let update = |pk: &str| {
        Update::builder()
            .table_name(repo.table())
            .set_key(Some(key(pk)))
            .update_expression("ADD #c :by SET #et = :et")
            .expression_attribute_names("#c", "count")
            .expression_attribute_names("#et", "_entity")
            .expression_attribute_values(":by", AttributeValue::N("1".into()))
            .expression_attribute_values(":et", AttributeValue::S("ShardedCounter".into()))
            .build()
            .expect("update")
    };
    let tx = client
        .transact_write_items()
        .transact_items(
            TransactWriteItem::builder()
                .update(update("UNITS#a#0"))
                .build(),
        )
        .client_request_token("units-probe-0001")
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .expect("probe transaction");
    let tx_units: f64 = tx
        .consumed_capacity()
        .iter()
        .filter_map(|c| c.capacity_units)
        .sum();
    let plain = update("UNITS#b#0");
    let single = client
        .update_item()
        .table_name(repo.table())
        .set_key(Some(plain.key().clone()))
        .update_expression(plain.update_expression())
        .set_expression_attribute_names(plain.expression_attribute_names().cloned())
        .set_expression_attribute_values(plain.expression_attribute_values().cloned())
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .expect("probe update");
    let single_units = single
        .consumed_capacity()
        .and_then(|c| c.capacity_units)
        .unwrap_or(f64::NAN);

    let (e, l) = (median(&times[0]), median(&times[1]));
    println!("{rounds} rounds of {PER_ROUND} increments per kind, {CONCURRENCY} at a time, after 1 warm-up round");
    println!("| increment | increments/s (median round) | write units per increment |");
    println!("|---|---:|---:|");
    println!(
        "| exactly once: `increment` (TransactWriteItems + token) | {:.0} | {tx_units} |",
        PER_ROUND as f64 / e
    );
    println!(
        "| at least once: `increment_at_least_once` (UpdateItem ADD) | {:.0} | {single_units} |",
        PER_ROUND as f64 / l
    );
    println!("throughput exactly-once / at-least-once: {:.3}x", l / e);
}

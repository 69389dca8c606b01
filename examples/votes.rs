//! The vote-counter pattern on a local DynamoDB: concurrent votes spread over 10 shards of a
//! counter declared on the candidate (`#[counter(name = "votes", n = 10)]`); the total reads
//! every shard in one `BatchGetItem` (a missing shard counts 0, a failing one is an error,
//! never a silent 0). Then the same votes through a connection that loses one answer in
//! three after DynamoDB applied the write: the exactly-once `increment` still counts each
//! vote once, the at-least-once `increment_at_least_once` counts the lost ones twice.
//!
//! ```text
//! cargo run --example votes
//! ```

use std::time::Instant;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::faults::Faults;

/// An election's candidates, each with a sharded `votes` counter beside it.
#[derive(ShardedEntity, Serialize, Deserialize, Debug)]
#[pk(template = "ELECTION#{election}")]
#[sk(template = "CANDIDATE#{name}")]
#[counter(name = "votes", n = 10)]
struct Candidate {
    election: String,
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = Backend::shared().await?;
    let client = local.client().await;
    let candidates: Repo<Candidate> = Repo::new(client.clone(), unique_table_name("votes"));
    candidates.create_table().await?;

    let names = ["alice", "bob", "carol"];
    let mut counters = Vec::new();
    for name in names {
        candidates
            .put(&Candidate {
                election: "2026".into(),
                name: name.into(),
            })
            .await?;
        counters.push(Candidate::votes_counter(&candidates, "2026", name)?);
    }

    let started = Instant::now();
    let votes = 3_000;
    stream::iter(0..votes)
        .map(|i| counters[(i * 7) % 10 % 3].increment(1))
        .buffer_unordered(64)
        .try_collect::<Vec<u32>>()
        .await?;
    println!(
        "{votes} votes cast exactly once, 64 at a time ({:.1?})",
        started.elapsed()
    );
    for (name, counter) in names.iter().zip(&counters) {
        let shards = counter.shard_values().await?;
        println!(
            "{name:>6}: {:>5} votes, per shard {shards:?}",
            counter.total().await?
        );
    }
    let listed = Candidate::query(&candidates, "2026").collect().await?;
    println!(
        "candidates listed by query (counters never appear as candidates): {}",
        listed.len()
    );

    // A connection that loses answers: DynamoDB applies the write, the SDK never hears back
    // and sends it again.
    let faults = Faults::new();
    let sdk = local.sdk_config().await;
    let lossy_client = sharded::aws_sdk_dynamodb::Client::from_conf(
        sharded::aws_sdk_dynamodb::config::Builder::from(&sdk)
            .http_client(faults.http_client(&sdk))
            .retry_config(RetryConfig::standard().with_max_attempts(3))
            .build(),
    );
    let lossy: Repo<Candidate> = Repo::new(lossy_client, candidates.table());
    let exact = Candidate::votes_counter(&lossy, "2026-recount", "dave")?;
    let loose = Candidate::votes_counter(&lossy, "2026-recount", "erin")?;
    let (mut exact_ok, mut loose_ok) = (0, 0);
    for i in 0..300 {
        let lose = i % 3 == 0;
        if lose {
            faults.drop_responses("TransactWriteItems", 1);
        }
        exact_ok += i64::from(exact.increment(1).await.is_ok());
        if lose {
            faults.drop_responses("UpdateItem", 1);
        }
        loose_ok += i64::from(loose.increment_at_least_once(1).await.is_ok());
    }
    println!(
        "\nthrough a connection that lost {} answers after the write was applied:",
        faults.injected("TransactWriteItems") + faults.injected("UpdateItem")
    );
    println!(
        "  exactly once (increment):                 {exact_ok} Ok, total {}",
        exact.total().await?
    );
    println!(
        "  at least once (increment_at_least_once):  {loose_ok} Ok, total {}",
        loose.total().await?
    );
    Ok(())
}

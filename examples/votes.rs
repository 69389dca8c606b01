//! The vote-counter pattern on DynamoDB Local: concurrent votes spread over 10
//! shards by `ADD` on a random shard; the total reads every shard (a missing shard counts 0,
//! a failing one is an error, never a silent 0).
//!
//! ```text
//! cargo run --example votes
//! ```

use std::time::Instant;

use futures::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedCounter, ShardedEntity};
use sharded_testkit::local::{unique_table_name, DynamoDbLocal};

/// An election's candidates; the counters live in the same table.
#[derive(ShardedEntity, Serialize, Deserialize, Debug)]
#[pk(template = "ELECTION#{election}")]
#[sk(template = "CANDIDATE#{name}")]
struct Candidate {
    election: String,
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = DynamoDbLocal::shared().await?;
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
        let key = format!("VOTES#2026#{name}");
        counters.push(ShardedCounter::new(
            client.clone(),
            candidates.table(),
            &Candidate::table_definition(),
            key,
            10,
        )?);
    }

    let started = Instant::now();
    let votes = 3_000;
    stream::iter(0..votes)
        .map(|i| counters[(i * 7) % 10 % 3].increment(1))
        .buffer_unordered(64)
        .try_collect::<Vec<u32>>()
        .await?;
    println!(
        "{votes} votes cast, 64 at a time ({:.1?})",
        started.elapsed()
    );

    for (name, counter) in names.iter().zip(&counters) {
        let shards = counter.shard_values().await?;
        println!(
            "{name:>6}: {:>5} votes, per shard {shards:?}",
            shards.iter().sum::<i64>()
        );
    }
    let listed = Candidate::query(&candidates, "2026").collect().await?;
    println!(
        "candidates listed by query (counters never appear as candidates): {}",
        listed.len()
    );
    Ok(())
}

//! Vote totals kept from the table's stream: votes go to a sharded counter (10 rows per
//! candidate), a stream consumer folds each row's increments into one total item per
//! candidate, exactly once per stream record, so a total is one `GetItem` instead of one read
//! per shard. The whole stream is then delivered a second time, as a consumer restarted
//! from an old checkpoint would: the totals do not move. Each total is checked against the
//! counter's `total()`.
//!
//! Runs on the embedded backend (it serves the Streams API too) or on DynamoDB Local
//! (`SHARDED_TEST_BACKEND=dynamodb-local`).
//!
//! ```text
//! cargo run --example vote_totals
//! ```

use aws_sdk_dynamodb::types::{AttributeValue, StreamSpecification, StreamViewType};
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use sharded::schema::CreateTable;
use sharded::streams::{Folded, Record, Total};
use sharded::{Repo, ShardedCounter, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};

/// An election's candidates, each with a sharded `votes` counter beside it.
#[derive(ShardedEntity, Serialize, Deserialize, Debug)]
#[pk(template = "ELECTION#{election}")]
#[sk(template = "CANDIDATE#{name}")]
#[counter(name = "votes", n = 10)]
struct Candidate {
    election: String,
    name: String,
}

/// A Lambda's batch size for a DynamoDB stream (its default is 100).
const BATCH: usize = 100;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = Backend::shared().await?;
    let client = local.client().await;
    let table = unique_table_name("vote_totals");
    // The table, with a stream that carries both images of every change.
    Candidate::table_definition()
        .create_table(&client, &table)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()?,
        )
        .send()
        .await?;
    let candidates: Repo<Candidate> = Repo::new(client.clone(), &table);

    let names = ["alice", "bob", "carol"];
    let mut counters: Vec<ShardedCounter> = Vec::new();
    for name in names {
        let candidate = Candidate {
            election: "2026".into(),
            name: name.into(),
        };
        candidates.put(&candidate).await?;
        counters.push(Candidate::votes_counter(&candidates, "2026", name)?);
    }
    let votes = 600;
    stream::iter(0..votes)
        .map(|i| counters[(i * 7) % 10 % 3].increment(1))
        .buffer_unordered(32)
        .try_collect::<Vec<u32>>()
        .await?;
    println!(
        "{votes} votes cast on {} counters of 10 shards",
        names.len()
    );

    // One total item per candidate, outside the entity's partitions.
    let totals: Vec<Total> = names
        .iter()
        .map(|name| {
            let key = [
                ("pk".to_string(), AttributeValue::S("TOTALS#2026".into())),
                ("sk".to_string(), AttributeValue::S(format!("VOTES#{name}"))),
            ]
            .into_iter()
            .collect();
            Total::new(client.clone(), &table, key).with_attribute("votes")
        })
        .collect();

    // The stream, read as a consumer reads it: every shard, parents first.
    let shards = sharded_testkit::streams::read_all(&local.sdk_config().await, &table).await?;
    let records = shards
        .iter()
        .flat_map(|shard| &shard.records)
        .map(Record::from_sdk)
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "{} stream records on {} stream shards",
        records.len(),
        shards.len()
    );

    for delivery in ["first delivery", "the whole stream again"] {
        let mut sum = Folded::default();
        for batch in records.chunks(BATCH) {
            for (total, counter) in totals.iter().zip(&counters) {
                let folded = total.fold_counter(counter, batch).await?;
                sum.applied += folded.applied;
                sum.repeated += folded.repeated;
            }
        }
        println!(
            "{delivery}: {} records added, {} already added",
            sum.applied, sum.repeated
        );
    }

    for ((name, total), counter) in names.iter().zip(&totals).zip(&counters) {
        let kept = total.get().await?;
        let summed = counter.total().await?;
        println!("{name}: {kept} votes in one GetItem, {summed} summed over 10 shards");
        if kept != summed {
            return Err(format!("{name}'s total {kept} is not the counter's {summed}").into());
        }
    }
    Ok(())
}

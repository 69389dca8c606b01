//! A table's stream read back whole: every record of every stream shard, parents before
//! their children, for tests and examples that check what a stream consumer sees.

use std::collections::{HashMap, HashSet};

use aws_config::SdkConfig;
use aws_sdk_dynamodbstreams::types::{Record, Shard, ShardIteratorType};
use aws_sdk_dynamodbstreams::Client;

/// The records of one stream shard, in its order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShardRecords {
    /// The stream shard's id.
    pub shard_id: String,
    /// Its parent's, when it has one (its records come first).
    pub parent: Option<String>,
    /// Its records, from the oldest kept (`TRIM_HORIZON`).
    pub records: Vec<Record>,
}

/// Every record of the latest stream of `table` (DescribeStream, GetShardIterator from
/// `TRIM_HORIZON`, GetRecords until a shard has nothing more), shard by shard, each parent
/// before its children. A shard still open is read until a call returns no record.
///
/// # Errors
///
/// The table has no stream (enable one with a `StreamSpecification`), or a Streams call
/// failed: the message names the call.
///
/// ```no_run
/// # async fn demo(config: &aws_config::SdkConfig) -> Result<(), Box<dyn std::error::Error>> {
/// let shards = sharded_testkit::streams::read_all(config, "scores").await?;
/// let records: usize = shards.iter().map(|s| s.records.len()).sum();
/// println!("{records} records on {} stream shards", shards.len());
/// # Ok(()) }
/// ```
pub async fn read_all(config: &SdkConfig, table: &str) -> Result<Vec<ShardRecords>, String> {
    let dynamodb = aws_sdk_dynamodb::Client::new(config);
    let described = dynamodb
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| format!("DescribeTable {table}: {e:?}"))?;
    let arn = described
        .table
        .and_then(|t| t.latest_stream_arn)
        .ok_or_else(|| {
            format!("table {table} has no stream: create it with a StreamSpecification")
        })?;
    let streams = Client::new(config);
    let mut shards: Vec<Shard> = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let page = streams
            .describe_stream()
            .stream_arn(&arn)
            .set_exclusive_start_shard_id(start.take())
            .send()
            .await
            .map_err(|e| format!("DescribeStream {arn}: {e:?}"))?;
        let Some(description) = page.stream_description else {
            break;
        };
        shards.extend(description.shards.unwrap_or_default());
        match description.last_evaluated_shard_id {
            Some(last) => start = Some(last),
            None => break,
        }
    }
    let mut out = Vec::new();
    for shard in parents_first(shards) {
        let shard_id = shard.shard_id.clone().unwrap_or_default();
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(&shard_id)
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .map_err(|e| format!("GetShardIterator {shard_id}: {e:?}"))?
            .shard_iterator;
        let mut records = Vec::new();
        while let Some(current) = iterator.take() {
            let page = streams
                .get_records()
                .shard_iterator(current)
                .send()
                .await
                .map_err(|e| format!("GetRecords {shard_id}: {e:?}"))?;
            let got = page.records.unwrap_or_default();
            if got.is_empty() {
                break;
            }
            records.extend(got);
            iterator = page.next_shard_iterator;
        }
        out.push(ShardRecords {
            shard_id,
            parent: shard.parent_shard_id,
            records,
        });
    }
    Ok(out)
}

/// The shards ordered so that a parent comes before its children (a shard whose parent is
/// not listed, trimmed away, counts as a root).
fn parents_first(shards: Vec<Shard>) -> Vec<Shard> {
    let ids: HashSet<String> = shards.iter().filter_map(|s| s.shard_id.clone()).collect();
    let mut children: HashMap<Option<String>, Vec<Shard>> = HashMap::new();
    for shard in shards {
        let parent = shard.parent_shard_id.clone().filter(|p| ids.contains(p));
        children.entry(parent).or_default().push(shard);
    }
    let mut ordered = Vec::new();
    let mut queue: Vec<Shard> = children.remove(&None).unwrap_or_default();
    while let Some(shard) = queue.pop() {
        if let Some(kids) = children.remove(&shard.shard_id) {
            queue.extend(kids);
        }
        ordered.push(shard);
    }
    ordered
}

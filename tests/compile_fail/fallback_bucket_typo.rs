//! A misspelled granularity is one error under the template: the range query and the key
//! functions still exist (read as `day`), so the call sites below report nothing.

use serde::{Deserialize, Serialize};
use sharded::{bucket::Bucket, Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "OPS#{at:dy}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: i64,
    id: String,
}

async fn _calls(repo: Repo<OpsEntry>) -> Result<(), sharded::Error> {
    let _: Vec<OpsEntry> = OpsEntry::query_range(&repo, 0, 86_400).limit(10).collect().await?;
    let _: Vec<(String, u64)> = OpsEntry::query_range(&repo, 0, 86_400).count_by_bucket().await?;
    let _: Vec<OpsEntry> = OpsEntry::query(&repo, 0).collect().await?;
    let _: String = OpsEntry::pk_on_shard(0, 3)?;
    let (_bucket, _shard): (Bucket, u32) = OpsEntry::parse_pk("OPS#1970-01-01#3")?;
    Ok(())
}

fn main() {}

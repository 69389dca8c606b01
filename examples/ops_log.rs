//! The daily ops log, end to end on a local DynamoDB: a week of operation logs written into day
//! buckets over 4 random shards (no partition takes every write, not even today's), the last
//! three days read back in time order page by page, and how the days are filled.
//!
//! ```text
//! cargo run --example ops_log
//! ```
//! It runs on the test kit's backend (`sharded_testkit::backend`): an embedded DynamoDB by
//! default, nothing to install; DynamoDB Local with `SHARDED_TEST_BACKEND=dynamodb-local` (Java
//! 17 and npm), or the one `DYNAMODB_ENDPOINT` names.
//!
//! It checks what it prints against what it wrote, and exits with an error if an entry is
//! missing, duplicated or out of order.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use sharded::{Cursor, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::faults::Faults;

/// One AI operation's log line. Every entry of a day lands in that day's bucket, spread over
/// 4 partitions by a random shard; the sort key starts with the time, so a day reads back in
/// time order.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
struct OpsEntry {
    at: DateTime<Utc>,
    id: String,
    agent: String,
    latency_ms: u32,
}

const AGENTS: [&str; 4] = ["threat-detector", "classifier", "image-matcher", "reporter"];
const PER_DAY: usize = 1_500;
const PAGE: usize = 500;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let local = Backend::shared().await?;
    println!("{} ({:.1?})", local, started.elapsed());
    // Requests go through a counter, so the cost of each step is printed.
    let faults = Faults::new();
    let client = faults.client(&local.sdk_config().await);
    let repo: Repo<OpsEntry> = Repo::new(client, unique_table_name("ops-log"));
    repo.create_table().await?;

    // A week of entries up to a fixed "now", deterministic so that runs compare.
    let now = Utc
        .with_ymd_and_hms(2026, 6, 22, 13, 0, 0)
        .single()
        .ok_or("bad time")?;
    let week_ago = now - Duration::days(7);
    let mut rng = fastrand::Rng::with_seed(22);
    let entries: Vec<OpsEntry> = (0..7 * PER_DAY)
        .map(|i| {
            let at = week_ago
                + Duration::seconds(rng.i64(0..7 * 86_400))
                + Duration::milliseconds(rng.i64(0..1000));
            OpsEntry {
                at,
                id: format!("op{i:05}"),
                agent: AGENTS[i % AGENTS.len()].to_owned(),
                latency_ms: rng.u32(20..900),
            }
        })
        .collect();
    let step = Instant::now();
    repo.batch_put(&entries).await?;
    println!(
        "\nwrote {} entries from {week_ago} to {now} ({} BatchWriteItem, {:.1?})",
        entries.len(),
        faults.requests("BatchWriteItem"),
        step.elapsed()
    );
    let keys: Vec<String> = entries[..4]
        .iter()
        .map(|e| e.item_keys().map(|k| k.pk))
        .collect::<Result<_, _>>()?;
    println!("  partition keys of the first four: {}", keys.join(", "));

    // The last three days, oldest first, page by page: one cursor across days and shards.
    let from = now - Duration::days(3);
    println!("\nthe last 3 days, [{from}, {now}), in pages of {PAGE}:");
    faults.reset_counts();
    let step = Instant::now();
    let mut listed: Vec<OpsEntry> = Vec::new();
    let mut cursor: Option<Cursor> = None;
    let mut pages = 0;
    loop {
        let page = OpsEntry::query_range(&repo, &from, &now)
            .page(PAGE, cursor.as_ref())
            .await?;
        pages += 1;
        if let (Some(first), Some(last)) = (page.items.first(), page.items.last()) {
            println!(
                "  page {pages:>2}: {:>3} entries, {} .. {}  (first: {} {} {} ms)",
                page.items.len(),
                first.at.format("%m-%d %H:%M:%S%.3f"),
                last.at.format("%m-%d %H:%M:%S%.3f"),
                first.id,
                first.agent,
                first.latency_ms
            );
        }
        listed.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    println!(
        "  {} entries in {pages} pages: {} Query requests, {:.1?}",
        listed.len(),
        faults.requests("Query"),
        step.elapsed()
    );

    // The newest 5, newest first: the current day's bucket alone answers.
    faults.reset_counts();
    let step = Instant::now();
    let newest = OpsEntry::query_range(&repo, &from, &now)
        .descending()
        .limit(5)
        .collect()
        .await?;
    println!(
        "\nthe newest 5 ({} Query requests, {:.1?}):",
        faults.requests("Query"),
        step.elapsed()
    );
    for e in &newest {
        println!(
            "  {} {:<16} {:>3} ms",
            e.at.format("%m-%d %H:%M:%S%.3f"),
            e.agent,
            e.latency_ms
        );
    }

    // How the days are filled: Select=COUNT per shard of each day.
    faults.reset_counts();
    let step = Instant::now();
    let counts = OpsEntry::query_range(&repo, &from, &now)
        .count_by_bucket()
        .await?;
    println!(
        "\nentries per day bucket ({} Query requests, {:.1?}):",
        faults.requests("Query"),
        step.elapsed()
    );
    for (day, count) in &counts {
        println!("  {day}: {count}");
    }

    // Check everything printed against what was written.
    let mut expected: Vec<OpsEntry> = entries
        .iter()
        .filter(|e| from <= e.at && e.at < now)
        .cloned()
        .collect();
    expected.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    let mut problems = Vec::new();
    if listed != expected {
        let ids = |v: &[OpsEntry]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        let (got, want) = (ids(&listed), ids(&expected));
        let missing = want.iter().filter(|id| !got.contains(id)).count();
        let mut seen = std::collections::HashSet::new();
        let duplicated = got.iter().filter(|id| !seen.insert(*id)).count();
        problems.push(format!(
            "the listing has {} entries, {} expected: {missing} missing, {duplicated} duplicated, \
             or out of order",
            listed.len(),
            expected.len()
        ));
    }
    let newest_expected: Vec<OpsEntry> = expected.iter().rev().take(5).cloned().collect();
    if newest != newest_expected {
        problems.push("the newest 5 are not the last 5 written".to_owned());
    }
    let mut per_day: BTreeMap<String, u64> = BTreeMap::new();
    for e in &expected {
        *per_day
            .entry(e.at.format("%Y-%m-%d").to_string())
            .or_default() += 1;
    }
    let counted: BTreeMap<String, u64> = counts.iter().filter(|&(_, n)| *n > 0).cloned().collect();
    if counted != per_day {
        problems.push(format!("counts per day {counted:?}, expected {per_day:?}"));
    }
    if counts.len() != 4 {
        problems.push(format!(
            "{} day buckets, expected 4 (a partial first and last day)",
            counts.len()
        ));
    }
    if problems.is_empty() {
        println!(
            "\nchecked: every entry of the last 3 days exactly once, in time order; counts match ({:.1?} in all)",
            started.elapsed()
        );
        Ok(())
    } else {
        for p in &problems {
            eprintln!("FAILED: {p}");
        }
        Err(format!("{} check(s) failed", problems.len()).into())
    }
}

//! Shard only what is hot: a table of 200 quiet games where one goes viral. The hot-key
//! report flags it and names the shard count it needs; the game is widened online to that
//! count while writers keep writing at 5x its per-key limit and a reader checks its top-100
//! against every score written; afterwards its writes stop throttling, and the quiet games
//! are still one partition each.
//!
//! ```text
//! cargo run --example hot_key          # ~40 s; SHARDED_TEST_BACKEND=dynamodb-local for the reference
//! ```
//!
//! Limits are scaled (100 write units/s and 15 read units/s per key, 1 s of burst), as in the
//! `viral_game` example, so that a 5x overload shows in seconds.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sharded::capacity::{plan, HotKeyStats, PerKeyLimits, PlanInput, ReportHotKeys};
use sharded::layouts::{ChangeLayout, LayoutTiming};
use sharded::{Error, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::emulator::KeyLimitEmulator;

/// A score; every game is one partition until it is widened.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 40
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

const LIMITS: PerKeyLimits = PerKeyLimits {
    write_units_per_second: 100.0,
    read_units_per_second: 15.0,
};
const OVERLOAD: f64 = 5.0;
const VIRAL: &str = "viral";

fn score(game: &str, player: u64) -> Score {
    Score {
        game_id: game.into(),
        player_id: format!("p{player:07}"),
        score: player.wrapping_mul(7919) % 100_000,
    }
}

/// The scores written so far, as the writers saw them accepted.
type Written = Arc<Mutex<BTreeSet<(u64, String)>>>;

/// The write throttles the emulator answered so far (reads are metered too: the top-100
/// reader's are not counted here).
fn write_throttles(emulator: &KeyLimitEmulator) -> u64 {
    emulator
        .counts()
        .by_reason
        .iter()
        .filter(|(reason, _)| reason.contains("Write"))
        .map(|(_, n)| n)
        .sum()
}

/// Writes new scores of the viral game at `OVERLOAD` x its per-key limit for `seconds`;
/// returns how many were offered and how many writes the emulator throttled (before retries).
async fn write_for(
    repo: &Repo<Score>,
    emulator: &KeyLimitEmulator,
    written: &Written,
    first: u64,
    seconds: f64,
) -> (u64, u64) {
    let rate = LIMITS.write_units_per_second * OVERLOAD;
    let total = (rate * seconds) as u64;
    let throttled = write_throttles(emulator);
    let started = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..total {
        tokio::time::sleep_until(started + Duration::from_secs_f64(i as f64 / rate)).await;
        let (repo, written) = (repo.clone(), Arc::clone(written));
        tasks.push(tokio::spawn(async move {
            let item = score(VIRAL, first + i);
            if repo.put(&item).await.is_ok() {
                written
                    .lock()
                    .expect("written")
                    .insert((item.score, item.player_id));
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer");
    }
    (total, write_throttles(emulator) - throttled)
}

/// Reads the viral game's top-100 until `done`: every answer is in order, holds no score
/// twice, and holds every score written before the read began that belongs in it.
async fn check_top_100(repo: Repo<Score>, written: Written, done: Arc<AtomicBool>) -> usize {
    let mut reads = 0;
    while !done.load(Ordering::Acquire) {
        let before: BTreeSet<(u64, String)> = written.lock().expect("written").clone();
        let top = Score::query(&repo, VIRAL)
            .descending()
            .limit(100)
            .collect()
            .await
            .expect("top-100");
        let shown: Vec<(u64, String)> =
            top.iter().map(|s| (s.score, s.player_id.clone())).collect();
        let mut sorted = shown.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        sorted.dedup();
        assert_eq!(
            shown, sorted,
            "the top-100 is out of order or shows a score twice"
        );
        if let Some(last) = shown.last() {
            for ahead in before.range(last.clone()..).rev() {
                assert!(
                    shown.contains(ahead),
                    "{ahead:?}, written before the read, is missing"
                );
            }
        }
        reads += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reads
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = Backend::shared().await.expect("a local DynamoDB");
    let sdk = backend.sdk_config().await;
    let table = unique_table_name("hot-key");
    let timing = LayoutTiming::new(Duration::from_millis(500), Duration::from_secs(5));
    let admin: Repo<Score> = Repo::new(backend.client().await, &table).with_layout_timing(timing);
    admin.create_table().await?;
    let quiet: Vec<Score> = (0..200)
        .flat_map(|g| (0..10).map(move |p| score(&format!("g{g:03}"), p)))
        .collect();
    admin.batch_put(&quiet).await?;

    // The service: its requests through the per-key limit emulator, its load recorded.
    let emulator = KeyLimitEmulator::new(LIMITS).with_burst_seconds(1.0);
    emulator.register_table(&table, &Score::table_definition());
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(60)).with_limits(LIMITS));
    let service: Repo<Score> = Repo::new(emulator.client(&sdk), &table)
        .with_layout_timing(timing)
        .with_stats(Arc::clone(&stats));
    let written: Written = Arc::default();

    println!("1. the game goes viral: {OVERLOAD}x its per-key write limit on one partition");
    let (offered, throttled) = write_for(&service, &emulator, &written, 0, 3.0).await;
    println!(
        "   {offered} writes offered, {throttled} throttled by DynamoDB (the SDK retried them)"
    );

    let report = stats.report();
    let viral = report
        .logical_keys
        .iter()
        .find(|k| k.logical_key == "GAME#viral")
        .expect("the report lists the viral game");
    // The report measures what DynamoDB accepted, at most the per-key limit while the key is
    // throttled: the count for the load offered comes from the planner, and a count the report
    // names is never less.
    let max_n = Score::SCHEMA.pk.per_key.map_or(1, |p| p.max_n);
    let offered = LIMITS.write_units_per_second * OVERLOAD;
    let planned = plan(
        &PlanInput::new(offered, 110)
            .limits(LIMITS.write_units_per_second, LIMITS.read_units_per_second),
    )
    .expect("a plan")
    .base
    .derive_n()
    .unwrap_or(1);
    let n = planned
        .max(viral.advice.recommended_n.unwrap_or(1))
        .clamp(2, max_n);
    println!(
        "2. the hot-key report flags it: {:?}, peak {:.0} write units/s ({:.1}x the limit): {}",
        viral.pattern,
        viral.write.peak_units_per_sec,
        viral.write.peak_utilization,
        viral.advice.action
    );

    println!("   the planner, for the {offered} writes/s offered: {planned} shards");
    println!("3. widened online to {n} shards, while writers and a top-100 reader run");
    let done = Arc::new(AtomicBool::new(false));
    // Another process: its own directory cache, its reads not metered (the point is what they
    // return, not their throttles).
    let other: Repo<Score> = Repo::new(backend.client().await, &table).with_layout_timing(timing);
    let reader = tokio::spawn(check_top_100(
        other,
        Arc::clone(&written),
        Arc::clone(&done),
    ));
    let started = Instant::now();
    let change = {
        let layouts = admin.layouts();
        tokio::spawn(async move { layouts.change("GAME#viral", n).await })
    };
    let (during, throttled_during) = write_for(&service, &emulator, &written, 1_000_000, 3.0).await;
    let moved = change.await.expect("change")?;
    println!(
        "   done in {:.1?}: {} scores moved, {} already in place; {during} writes meanwhile, {throttled_during} throttled",
        started.elapsed(),
        moved.moved,
        moved.in_place
    );

    println!("4. the same load on {n} shards");
    let (after, throttled_after) = write_for(&service, &emulator, &written, 2_000_000, 3.0).await;
    done.store(true, Ordering::Release);
    let reads = reader.await.expect("reader");
    println!("   {after} writes offered, {throttled_after} throttled; {reads} top-100 reads checked, all correct");

    let stored = Score::query(&admin, VIRAL)
        .consistent_read(true)
        .collect()
        .await?;
    let accepted = written.lock().expect("written").len();
    assert!(
        stored.len() >= accepted,
        "{} stored, {accepted} accepted",
        stored.len()
    );
    let cold = Score::query(&admin, "g007").count_by_shard().await?;
    println!(
        "5. {} viral scores stored ({accepted} accepted, none lost); a quiet game is still {} partition",
        stored.len(),
        cold.len()
    );
    assert_eq!(cold.len(), 1);
    assert_eq!(throttled_after, 0, "writes throttled after widening");
    Ok(())
}

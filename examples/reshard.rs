//! Resharding a live leaderboard on a local DynamoDB, in two phases, while it is played and read:
//!
//! 1. **Adopting sharding.** A service that predates `sharded` wrote every score of the game
//!    under one unsharded key, `GAME#viral`, without an entity attribute. The entity now
//!    declares `n = 10, legacy = "GAME#{game_id}"`: reads cover both layouts, writes go to
//!    the 10 shards, and `repo.migrate()` moves the legacy items over.
//! 2. **Growing from 10 to 20 shards.** With nothing left under the legacy key, the entity
//!    declares `n = 20, previous_n = 10`, and a second migration moves about half the items.
//!
//! Throughout, one task keeps writing (new players, new best scores, which change the sort
//! key, and typed updates) and another keeps reading the top 100. Every top 100 is checked
//! against the log of the writes (`sharded_testkit::history`): it must equal the brute-force
//! top 100 of the writes, allowing only the writes in flight during that read to be there or
//! not. A progress bar follows each migration (its progress hook). At the end: no item lost,
//! none stored twice, none left at an old place, no duplicate in any read, and every top 100
//! right. The process exits non-zero on any violation.
//!
//! ```text
//! cargo run --example reshard
//! ```
//! It runs on the test kit's backend (`sharded_testkit::backend`): an embedded DynamoDB by
//! default, nothing to install; DynamoDB Local with `SHARDED_TEST_BACKEND=dynamodb-local` (Java
//! 17 and npm), or the one `DYNAMODB_ENDPOINT` names.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sharded::migrate::{Migrate, MigrateError};
use sharded::{Error, Query, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::history::History;

const GAME: &str = "viral";
/// Scores the pre-`sharded` service left under the legacy key.
const LEGACY_SCORES: usize = 1_000;
const TOP: usize = 100;
/// Each migration's write budget: the example's stand-in for "what the table can spare".
const WRITE_UNITS_PER_SECOND: f64 = 300.0;
/// How long an old copy outlives its copy. DynamoDB answers a top 100 in milliseconds and the
/// default (1 s) is ample; DynamoDB Local on a laptop's shared cores, under this example's
/// load, can take most of a second, so the example gives it more.
const DELETE_DELAY: Duration = Duration::from_secs(2);

/// Phase 1: sharded 10 ways, the unsharded legacy key still read (and migrated from).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 10,
    legacy = "GAME#{game_id}"
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Adopting {
    game_id: String,
    player_id: String,
    score: u64,
    /// How many times the player has played: changed by typed updates.
    plays: u64,
}

/// Phase 2: 20 shards, the 10 of phase 1 still read (and migrated from).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Growing {
    game_id: String,
    player_id: String,
    score: u64,
    plays: u64,
}

/// A leaderboard item as the model knows it: (score, player), the sort key's order.
type Key = (u64, String);

/// What the writer and reader need of each phase's declaration of the entity.
trait Layout: ShardedEntity + Clone + Send + Sync + 'static {
    fn new(player: &str, score: u64, plays: u64) -> Self;
    fn key(&self) -> Key;
    fn top(repo: &Repo<Self>) -> Query<Self>;
    fn delete(repo: &Repo<Self>, key: Key) -> impl Future<Output = Result<(), Error>> + Send;
    fn play(repo: &Repo<Self>, key: Key) -> impl Future<Output = Result<(), Error>> + Send;
}

macro_rules! layout {
    ($name:ident) => {
        impl Layout for $name {
            fn new(player: &str, score: u64, plays: u64) -> Self {
                $name {
                    game_id: GAME.into(),
                    player_id: player.into(),
                    score,
                    plays,
                }
            }
            fn key(&self) -> Key {
                (self.score, self.player_id.clone())
            }
            fn top(repo: &Repo<Self>) -> Query<Self> {
                $name::query(repo, GAME).descending().limit(TOP)
            }
            fn delete(
                repo: &Repo<Self>,
                key: Key,
            ) -> impl Future<Output = Result<(), Error>> + Send {
                let repo = repo.clone();
                async move { $name::delete(&repo, GAME, &key.1, key.0).await }
            }
            fn play(repo: &Repo<Self>, key: Key) -> impl Future<Output = Result<(), Error>> + Send {
                let repo = repo.clone();
                async move {
                    let f = $name::fields();
                    $name::update(&repo, GAME, &key.1, key.0)
                        .add(f.plays, 1)
                        .send()
                        .await
                }
            }
        }
    };
}
layout!(Adopting);
layout!(Growing);

/// The model both tasks share: the log of writes, each live player's score and plays, and
/// what the reads found.
#[derive(Default)]
struct Model {
    history: History<Key>,
    /// Player -> (score, plays), as the writer left them.
    players: Mutex<BTreeMap<String, (u64, u64)>>,
    writes: AtomicU64,
    samples: AtomicU64,
    duplicates: AtomicU64,
    violations: Mutex<Vec<String>>,
    slowest_read: Mutex<Duration>,
}

fn descending(a: &Key, b: &Key) -> std::cmp::Ordering {
    b.cmp(a)
}

/// Plays the game through `repo`'s layout until `stop`: new players, new best scores (a new
/// sort key: the old item is deleted and the new one put), and games played (a typed update,
/// which moves a not-yet-migrated item to its shard first).
async fn writer<L: Layout>(repo: Repo<L>, model: Arc<Model>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    while !stop.load(Ordering::SeqCst) {
        let result = write_once(&repo, &model, &mut rng).await;
        if let Err(e) = result {
            model
                .violations
                .lock()
                .unwrap()
                .push(format!("a write failed: {e}"));
            return;
        }
        model.writes.fetch_add(1, Ordering::SeqCst);
    }
}

async fn write_once<L: Layout>(
    repo: &Repo<L>,
    model: &Model,
    rng: &mut fastrand::Rng,
) -> Result<(), Error> {
    let live: Vec<(String, (u64, u64))> = {
        let players = model.players.lock().unwrap();
        let n = players.len();
        // A random live player: walk to a random index (the map is small).
        players
            .iter()
            .nth(rng.usize(..n.max(1)))
            .map(|(p, s)| (p.clone(), *s))
            .into_iter()
            .collect()
    };
    let roll = rng.u8(0..100);
    match live.first() {
        Some((player, (score, plays))) if roll < 60 => {
            // A better score: the sort key changes, so the item is replaced.
            let new = score + rng.u64(1..500);
            let old = (*score, player.clone());
            let write = model.history.delete(old.clone());
            L::delete(repo, old).await?;
            write.done();
            let write = model.history.put((new, player.clone()));
            repo.put(&L::new(player, new, plays + 1)).await?;
            write.done();
            model
                .players
                .lock()
                .unwrap()
                .insert(player.clone(), (new, plays + 1));
        }
        Some((player, (score, plays))) if roll < 85 => {
            // Presence unchanged, but of an item not yet migrated an update is a write of its
            // place (it moves the item first): a read it overlaps may or may not show it.
            let write = model.history.touch((*score, player.clone()));
            L::play(repo, (*score, player.clone())).await?;
            write.done();
            model
                .players
                .lock()
                .unwrap()
                .insert(player.clone(), (*score, plays + 1));
        }
        _ => {
            let player = format!("new-{}", model.writes.load(Ordering::SeqCst));
            let score = rng.u64(0..100_000);
            let write = model.history.put((score, player.clone()));
            repo.put_new(&L::new(&player, score, 1)).await?;
            write.done();
            model.players.lock().unwrap().insert(player, (score, 1));
        }
    }
    Ok(())
}

/// Reads the top 100 until `stop`, checking each answer against the history of the writes.
async fn reader<L: Layout>(repo: Repo<L>, model: Arc<Model>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        let started = model.history.now();
        let clock = Instant::now();
        let answer = L::top(&repo).collect().await;
        let took = clock.elapsed();
        let ended = model.history.now();
        let keys: Vec<Key> = match answer {
            Ok(items) => items.iter().map(Layout::key).collect(),
            Err(e) => {
                model
                    .violations
                    .lock()
                    .unwrap()
                    .push(format!("a read failed: {e}"));
                continue;
            }
        };
        let mut seen = std::collections::HashSet::new();
        let twice = keys.iter().filter(|k| !seen.insert(*k)).count() as u64;
        model.duplicates.fetch_add(twice, Ordering::SeqCst);
        if let Err(violation) = model
            .history
            .check(started, ended, &keys, Some(TOP), descending)
        {
            model
                .violations
                .lock()
                .unwrap()
                .push(format!("a top {TOP} read: {violation}"));
        }
        model.samples.fetch_add(1, Ordering::SeqCst);
        {
            let mut slowest = model.slowest_read.lock().unwrap();
            *slowest = (*slowest).max(took);
        }
        // A leaderboard panel refreshing, not a benchmark: leave the local DynamoDB some room.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One phase: the writer and the reader run through `repo`'s layout while the migration
/// moves what the previous layout left; returns the migration's report line.
async fn phase<L: Layout>(
    name: &str,
    repo: &Repo<L>,
    model: &Arc<Model>,
    seed: u64,
) -> Result<String, MigrateError> {
    let remaining = repo.migration_remaining().await?;
    println!("{name}: {remaining} items at their previous place");
    let stop = Arc::new(AtomicBool::new(false));
    let writing = tokio::spawn(writer(repo.clone(), model.clone(), stop.clone(), seed));
    let reading = tokio::spawn(reader(repo.clone(), model.clone(), stop.clone()));
    let writes_before = model.writes.load(Ordering::SeqCst);
    let samples_before = model.samples.load(Ordering::SeqCst);

    let bar = ProgressBar::new(remaining.items.max(1));
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:40}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_owned());
    let shown = bar.clone();
    let report = repo
        .migrate()
        .write_units_per_second(WRITE_UNITS_PER_SECOND)
        .delete_delay(DELETE_DELAY)
        .concurrency(8)
        .segments(8)
        .page_size(50)
        .on_progress(move |p| {
            // Superseded and gone items are dealt with too: a writer got there first.
            let handled = p.handled();
            if handled > shown.length().unwrap_or(0) {
                shown.set_length(handled);
            }
            shown.set_position(handled);
            shown.set_message(format!(
                "{:>4.0} WCU/s, {} superseded, {} conflicts",
                p.current_write_units_per_second, p.superseded, p.conflicts
            ));
        })
        .run()
        .await;
    bar.finish();
    stop.store(true, Ordering::SeqCst);
    let _ = writing.await;
    let _ = reading.await;
    let report = report?;
    let left = repo.migration_remaining().await?;
    println!(
        "{name}: {}\n{name}: {} writes and {} top-{TOP} reads during the migration; {left} items left at their previous place",
        report.progress,
        model.writes.load(Ordering::SeqCst) - writes_before,
        model.samples.load(Ordering::SeqCst) - samples_before,
    );
    if left != 0 {
        model
            .violations
            .lock()
            .unwrap()
            .push(format!("{name}: {left} items left at their previous place"));
    }
    Ok(format!(
        "{name}: {} moved, {} superseded, {:.0} write units at {:.0}/s (budget {WRITE_UNITS_PER_SECOND:.0})",
        report.progress.moved,
        report.progress.superseded,
        report.progress.write_units,
        report.progress.write_units_per_second()
    ))
}

/// The legacy service's writes: one unsharded key, no entity attribute.
async fn seed_legacy(
    repo: &Repo<Adopting>,
    model: &Model,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = fastrand::Rng::with_seed(2026);
    let mut requests = Vec::new();
    for i in 0..LEGACY_SCORES {
        let player = format!("veteran-{i:04}");
        let score = rng.u64(0..100_000);
        let item = HashMap::from([
            ("pk".to_owned(), AttributeValue::S(format!("GAME#{GAME}"))),
            (
                "sk".to_owned(),
                AttributeValue::S(Adopting::sk(score, &player)?),
            ),
            ("game_id".to_owned(), AttributeValue::S(GAME.into())),
            ("player_id".to_owned(), AttributeValue::S(player.clone())),
            ("score".to_owned(), AttributeValue::N(score.to_string())),
            ("plays".to_owned(), AttributeValue::N("1".into())),
        ]);
        requests.push(
            WriteRequest::builder()
                .put_request(PutRequest::builder().set_item(Some(item)).build()?)
                .build(),
        );
        model.history.put((score, player.clone())).done();
        model.players.lock().unwrap().insert(player, (score, 1));
    }
    for chunk in requests.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            let out = repo
                .client()
                .batch_write_item()
                .request_items(repo.table(), pending)
                .send()
                .await?;
            pending = out
                .unprocessed_items
                .and_then(|mut u| u.remove(repo.table()))
                .unwrap_or_default();
        }
    }
    Ok(())
}

/// Every stored score, read raw: each must be stored once, tagged, at its current place
/// under `L`; returns player -> (score, plays).
async fn stored<L: Layout>(
    repo: &Repo<L>,
    model: &Model,
) -> Result<BTreeMap<String, (u64, u64)>, Box<dyn std::error::Error>> {
    let mut found = BTreeMap::new();
    let mut start = None;
    loop {
        let page = repo
            .client()
            .scan()
            .table_name(repo.table())
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await?;
        for item in page.items() {
            let pk = item
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            let score = match L::from_item(item.clone()) {
                Ok(score) => score,
                Err(e) => {
                    model
                        .violations
                        .lock()
                        .unwrap()
                        .push(format!("an item not of the current layout: {e}"));
                    continue;
                }
            };
            if score.item_keys()?.pk != pk {
                model
                    .violations
                    .lock()
                    .unwrap()
                    .push(format!("{:?} still at {pk}", score.key()));
            }
            let key = score.key();
            let plays = item
                .get("plays")
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            if found.insert(key.1.clone(), (key.0, plays)).is_some() {
                model
                    .violations
                    .lock()
                    .unwrap()
                    .push(format!("{} stored twice", key.1));
            }
        }
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return Ok(found),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let local = Backend::shared().await?;
    println!("{} ({:.1?})", local, started.elapsed());
    let phase1: Repo<Adopting> = Repo::new(local.client().await, unique_table_name("reshard"));
    phase1.create_table().await?;
    let model = Arc::new(Model::default());
    seed_legacy(&phase1, &model).await?;
    println!(
        "the legacy service left {LEGACY_SCORES} scores under the unsharded key GAME#{GAME} in table {}",
        phase1.table()
    );

    let first = phase("phase 1", &phase1, &model, 1).await?;
    // Every item is on its 10 shards: the legacy declaration goes, 20 shards come.
    let phase2: Repo<Growing> = phase1.for_entity();
    let second = phase("phase 2", &phase2, &model, 2).await?;

    // After the writes: every read and the stored table agree with the model exactly.
    let expected = model
        .history
        .present()
        .map_err(|e| format!("the model: {e}"))?;
    let all: Vec<Key> = Growing::query(&phase2, GAME)
        .collect()
        .await?
        .iter()
        .map(Layout::key)
        .collect();
    let brute: Vec<Key> = expected.iter().cloned().collect();
    let lost = brute.iter().filter(|k| !all.contains(k)).count();
    if all != brute {
        model.violations.lock().unwrap().push(format!(
            "the final read has {} items, the model {} ({lost} lost)",
            all.len(),
            brute.len()
        ));
    }
    let top: Vec<Key> = Growing::top(&phase2)
        .collect()
        .await?
        .iter()
        .map(Layout::key)
        .collect();
    let brute_top: Vec<Key> = expected.iter().rev().take(TOP).cloned().collect();
    if top != brute_top {
        model
            .violations
            .lock()
            .unwrap()
            .push("the final top 100 differs from the brute-force one".to_owned());
    }
    let players = model.players.lock().unwrap().clone();
    let table = stored(&phase2, &model).await?;
    if table != players {
        model.violations.lock().unwrap().push(format!(
            "the table holds {} players, the model {}, or their scores or plays differ",
            table.len(),
            players.len()
        ));
    }

    let violations = model.violations.lock().unwrap().clone();
    println!("{first}\n{second}");
    println!(
        "{} players; {} top-{TOP} reads checked (slowest {:.0?}), {} duplicates in them, {lost} items lost, {} violations ({:.1?} in all)",
        players.len(),
        model.samples.load(Ordering::SeqCst),
        *model.slowest_read.lock().unwrap(),
        model.duplicates.load(Ordering::SeqCst),
        violations.len(),
        started.elapsed()
    );
    let slowest = *model.slowest_read.lock().unwrap();
    if slowest >= DELETE_DELAY {
        println!(
            "note: the slowest read ({slowest:.0?}) took longer than the delete delay \
             ({DELETE_DELAY:.0?}); a read that slow can miss an item moved under it"
        );
    }
    if !violations.is_empty() {
        for v in violations.iter().take(20) {
            eprintln!("violation: {v}");
        }
        std::process::exit(1);
    }
    Ok(())
}

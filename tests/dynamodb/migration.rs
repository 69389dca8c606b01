//! The migration runner (`repo.migrate()`): legacy -> sharded, 10 -> 20 and 10 -> 3 under a
//! concurrent writer, with reads sampled during the run checked against a history of the
//! writes; a run killed part-way and resumed from its checkpoint; run twice; the remaining
//! count; what it must refuse; items it cannot move; the move's condition on every attribute
//! type.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue as V, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::migrate::{Migrate, MigrateError, MigrationRefusal};
use sharded::{keys::Partitions, migrate, Error, Query, Repo, ShardedEntity};
use sharded_testkit::faults::Faults;
use sharded_testkit::history::History;

use crate::support::{faulty_client, page_to_end, raw_scan, repo};

mod units;

/// An item of the test's model: (score, player), the sort key's order.
type Key = (u64, String);

/// One leaderboard entity in some layout; every layout below is the same stored entity,
/// `Score`, declared as it is before or during a transition.
trait Board: ShardedEntity + Clone + std::fmt::Debug + Send + Sync + 'static {
    fn new(player: &str, score: u64, plays: u64) -> Self;
    fn key(&self) -> Key;
    fn plays(&self) -> u64;
    fn query(repo: &Repo<Self>, game: &str) -> Query<Self>;
    fn delete(
        repo: &Repo<Self>,
        player: &str,
        score: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn add_play(
        repo: &Repo<Self>,
        player: &str,
        score: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

const GAME: &str = "g1";

macro_rules! board {
    ($(#[$doc:meta])* $name:ident, $($pk:tt)*) => {
        $(#[$doc])*
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "Score")]
        #[pk($($pk)*)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        pub struct $name {
            pub game_id: String,
            pub player_id: String,
            pub score: u64,
            pub plays: u64,
        }

        impl Board for $name {
            fn new(player: &str, score: u64, plays: u64) -> Self {
                $name { game_id: GAME.into(), player_id: player.into(), score, plays }
            }
            fn key(&self) -> Key {
                (self.score, self.player_id.clone())
            }
            fn plays(&self) -> u64 {
                self.plays
            }
            fn query(repo: &Repo<Self>, game: &str) -> Query<Self> {
                $name::query(repo, game)
            }
            fn delete(
                repo: &Repo<Self>,
                player: &str,
                score: u64,
            ) -> impl Future<Output = Result<(), Error>> + Send {
                let (repo, player) = (repo.clone(), player.to_owned());
                async move { $name::delete(&repo, GAME, &player, score).await }
            }
            fn add_play(
                repo: &Repo<Self>,
                player: &str,
                score: u64,
            ) -> impl Future<Output = Result<(), Error>> + Send {
                let (repo, player) = (repo.clone(), player.to_owned());
                async move {
                    let f = $name::fields();
                    $name::update(&repo, GAME, &player, score).add(f.plays, 1).send().await
                }
            }
        }
    };
}

board!(
    /// Ten shards, no transition: how the table was written before resharding.
    At10, template = "GAME#{game_id}", shard = "hash(player_id)", n = 10
);
board!(
    /// Resharding from 10 to 20.
    To20, template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10
);
board!(
    /// Shrinking from 10 to 3.
    To3, template = "GAME#{game_id}", shard = "hash(player_id)", n = 3, previous_n = 10
);
board!(
    /// Adopting sharding over the unsharded key a pre-`sharded` service wrote.
    Adopted, template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, legacy = "GAME#{game_id}"
);

/// Another entity in the same partitions, and an untagged legacy item that is not a score:
/// a migration must leave both alone.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}")]
#[sk(template = "META")]
pub struct GameMeta {
    pub game_id: String,
    pub title: String,
}

fn player(i: usize) -> String {
    format!("p{i:04}")
}

fn initial(count: usize) -> Vec<(String, u64)> {
    (0..count)
        .map(|i| (player(i), (i as u64 * 7919) % 5_000))
        .collect()
}

/// Writes scores as a service did before adopting `sharded`: one unsharded key, no entity
/// attribute; plus a game record of its own kind under the same key.
async fn seed_legacy(client: &Client, table: &str, game: &str, scores: &[(String, u64)]) {
    let mut requests: Vec<WriteRequest> = scores
        .iter()
        .map(|(p, score)| {
            let item = HashMap::from([
                ("pk".to_owned(), V::S(format!("GAME#{game}"))),
                ("sk".to_owned(), V::S(Adopted::sk(*score, p).unwrap())),
                ("game_id".to_owned(), V::S(game.into())),
                ("player_id".to_owned(), V::S(p.clone())),
                ("score".to_owned(), V::N(score.to_string())),
                ("plays".to_owned(), V::N("1".into())),
            ]);
            WriteRequest::builder()
                .put_request(PutRequest::builder().set_item(Some(item)).build().unwrap())
                .build()
        })
        .collect();
    requests.push(
        WriteRequest::builder()
            .put_request(
                PutRequest::builder()
                    .item("pk", V::S(format!("GAME#{game}")))
                    .item("sk", V::S("INFO".into()))
                    .item("title", V::S("untagged, not a score".into()))
                    .build()
                    .unwrap(),
            )
            .build(),
    );
    for chunk in requests.chunks(25) {
        let out = client
            .batch_write_item()
            .request_items(table, chunk.to_vec())
            .send()
            .await
            .unwrap();
        assert!(out.unprocessed_items().is_none_or(|u| u.is_empty()));
    }
}

/// The stored scores: each (score, player) with its plays, asserting each is stored once, at
/// its current place under `B`'s layout.
async fn stored<B: Board>(repo: &Repo<B>) -> BTreeMap<Key, u64> {
    let mut found = BTreeMap::new();
    for item in raw_scan(repo.client(), repo.table()).await {
        let is_score = item.get("_entity").and_then(|v| v.as_s().ok()) == Some(&"Score".to_owned());
        if !is_score {
            continue;
        }
        let pk = item["pk"].as_s().unwrap().clone();
        let score = B::from_item(item).unwrap();
        assert_eq!(
            pk,
            score.item_keys().unwrap().pk,
            "{score:?} is stored at {pk}, not at its current place"
        );
        let previous = found.insert(score.key(), score.plays());
        assert!(previous.is_none(), "{:?} is stored twice", score.key());
    }
    found
}

/// What a test's writer did, and the reads made while it wrote.
struct Witness {
    history: History<Key>,
    /// Plays of each live item, as the writer left them.
    plays: Mutex<BTreeMap<Key, u64>>,
    writes: AtomicU64,
    reads: AtomicU64,
    /// The slowest read, in milliseconds.
    slowest: AtomicU64,
    violations: Mutex<Vec<String>>,
}

impl Witness {
    fn new(items: &[(String, u64)], plays: u64) -> Self {
        let history = History::new();
        let mut model = BTreeMap::new();
        for (p, score) in items {
            history.put((*score, p.clone())).done();
            model.insert((*score, p.clone()), plays);
        }
        Witness {
            history,
            plays: Mutex::new(model),
            writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            slowest: AtomicU64::new(0),
            violations: Mutex::new(Vec::new()),
        }
    }

    fn violation(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }
}

/// One writer through the current layout: new scores (a new sort key: delete, then put),
/// typed updates (which move a not-yet-migrated item first), overwrites at the current place
/// (which leave the old copy stale), new players, deletes. Stops when `stop` is set.
async fn writer<B: Board>(repo: Repo<B>, witness: Arc<Witness>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut next_player = 100_000;
    while !stop.load(Ordering::SeqCst) {
        let live: Vec<(Key, u64)> = witness
            .plays
            .lock()
            .unwrap()
            .iter()
            .map(|(k, p)| (k.clone(), *p))
            .collect();
        let roll = rng.u8(0..100);
        if live.is_empty() || roll >= 85 {
            let key = (rng.u64(0..5_000), player(next_player));
            next_player += 1;
            let write = witness.history.put(key.clone());
            repo.put_new(&B::new(&key.1, key.0, 0)).await.unwrap();
            write.done();
            witness.plays.lock().unwrap().insert(key, 0);
        } else {
            let ((score, p), plays) = live[rng.usize(..live.len())].clone();
            match roll {
                0..=29 => {
                    let new = (rng.u64(0..5_000), p.clone());
                    if new.0 == score {
                        continue;
                    }
                    let write = witness.history.delete((score, p.clone()));
                    B::delete(&repo, &p, score).await.unwrap();
                    write.done();
                    witness.plays.lock().unwrap().remove(&(score, p.clone()));
                    let write = witness.history.put(new.clone());
                    repo.put(&B::new(&p, new.0, plays)).await.unwrap();
                    write.done();
                    witness.plays.lock().unwrap().insert(new, plays);
                }
                30..=54 => {
                    // An update leaves the item there, but of an item not yet migrated it is a
                    // write of its place (it moves the item first, in one transaction): a read
                    // it overlaps may or may not show the item (README, "A write races a query").
                    let write = witness.history.touch((score, p.clone()));
                    B::add_play(&repo, &p, score).await.unwrap();
                    write.done();
                    witness.plays.lock().unwrap().insert((score, p), plays + 1);
                }
                55..=74 => {
                    let write = witness.history.put((score, p.clone()));
                    repo.put(&B::new(&p, score, plays + 1)).await.unwrap();
                    write.done();
                    witness.plays.lock().unwrap().insert((score, p), plays + 1);
                }
                _ => {
                    let write = witness.history.delete((score, p.clone()));
                    B::delete(&repo, &p, score).await.unwrap();
                    write.done();
                    witness.plays.lock().unwrap().remove(&(score, p));
                }
            }
        }
        witness.writes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Reads the top 50 (descending) and everything (ascending), over and over, each checked
/// against the history: every item once, none lost, in order.
async fn reader<B: Board>(repo: Repo<B>, witness: Arc<Witness>, stop: Arc<AtomicBool>) {
    let descending = |a: &Key, b: &Key| b.cmp(a);
    while !stop.load(Ordering::SeqCst) {
        for (limit, desc) in [(Some(50), true), (None, false)] {
            let mut query = B::query(&repo, GAME);
            if desc {
                query = query.descending();
            }
            if let Some(limit) = limit {
                query = query.limit(limit);
            }
            let started = witness.history.now();
            let clock = std::time::Instant::now();
            let answer = query.collect().await;
            let took = clock.elapsed();
            let ended = witness.history.now();
            witness
                .slowest
                .fetch_max(took.as_millis() as u64, Ordering::SeqCst);
            let keys: Vec<Key> = match answer {
                Ok(items) => items.iter().map(Board::key).collect(),
                Err(e) => {
                    witness.violation(format!("a read failed: {e}"));
                    continue;
                }
            };
            let checked = if desc {
                witness
                    .history
                    .check(started, ended, &keys, limit, descending)
            } else {
                witness
                    .history
                    .check(started, ended, &keys, limit, Ord::cmp)
            };
            if let Err(violation) = checked {
                witness.violation(format!("limit {limit:?}: {violation}"));
            }
            witness.reads.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// After everything: every read, the stored table and the plays agree with the model
/// exactly; nothing is left to migrate; a second run moves nothing.
async fn assert_settled<B: Board>(repo: &Repo<B>, witness: &Witness) {
    let expected = witness.history.present().unwrap();
    let plays = witness.plays.lock().unwrap().clone();
    assert_eq!(expected.len(), plays.len());
    let all: Vec<Key> = B::query(repo, GAME)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(Board::key)
        .collect();
    assert_eq!(
        all,
        expected.iter().cloned().collect::<Vec<_>>(),
        "every item once, in order"
    );
    for k in [1, 10, 100] {
        let top: Vec<Key> = B::query(repo, GAME)
            .descending()
            .limit(k)
            .collect()
            .await
            .unwrap()
            .iter()
            .map(Board::key)
            .collect();
        let brute: Vec<Key> = expected.iter().rev().take(k).cloned().collect();
        assert_eq!(top, brute, "top {k}");
    }
    assert_eq!(
        B::query(repo, GAME).count().await.unwrap(),
        expected.len() as u64
    );
    for size in [7, 100] {
        let pages: Vec<Key> = page_to_end(|| B::query(repo, GAME), size)
            .await
            .into_iter()
            .flatten()
            .map(|s| s.key())
            .collect();
        assert_eq!(pages.len(), expected.len(), "pages of {size}");
    }
    assert_eq!(
        stored(repo).await,
        plays,
        "stored once each, at its place, with its plays"
    );
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    let again = repo.migrate().run().await.unwrap();
    assert_eq!(
        (
            again.progress.moved,
            again.progress.superseded,
            again.progress.failed
        ),
        (0, 0, 0),
        "a second run moves nothing: {}",
        again.progress
    );
    assert_eq!(again.progress.in_place, expected.len() as u64);
}

/// Items whose stored partition key is not their current place under `B`.
async fn misplaced<B: Board>(repo: &Repo<B>) -> u64 {
    let mut count = 0;
    for mut item in raw_scan(repo.client(), repo.table()).await {
        let sk = item
            .get("sk")
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default();
        if !sk.starts_with("SCORE#") {
            continue;
        }
        item.entry("_entity".to_owned())
            .or_insert_with(|| V::S("Score".into()));
        let pk = item["pk"].as_s().unwrap().clone();
        if B::from_item(item).unwrap().item_keys().unwrap().pk != pk {
            count += 1;
        }
    }
    count
}

/// Runs a migration of `repo` while a writer writes and a reader checks every answer; then
/// checks the result.
async fn migrate_under_writers<B: Board>(repo: Repo<B>, witness: Witness, seed: u64) {
    let before = misplaced(&repo).await;
    assert!(before > 0, "the layout change moves something");
    assert_eq!(repo.migration_remaining().await.unwrap(), before);
    let witness = Arc::new(witness);
    let stop = Arc::new(AtomicBool::new(false));
    let writing = tokio::spawn(writer(repo.clone(), witness.clone(), stop.clone(), seed));
    let reading = tokio::spawn(reader(repo.clone(), witness.clone(), stop.clone()));
    let writes_at_start = witness.writes.load(Ordering::SeqCst);
    let last: Arc<Mutex<migrate::Progress>> = Arc::default();
    let seen = last.clone();
    let report = tokio::spawn(
        repo.migrate()
            .segments(4)
            .page_size(20)
            .concurrency(6)
            .write_units_per_second(400.0)
            // The default delete delay (1 s): longer than any read of this test takes.
            .on_progress(move |p| *seen.lock().unwrap() = p.clone())
            .run(),
    )
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("{e}"));
    let writes_during = witness.writes.load(Ordering::SeqCst) - writes_at_start;
    stop.store(true, Ordering::SeqCst);
    writing.await.unwrap();
    reading.await.unwrap();
    let violations = witness.violations.lock().unwrap().clone();
    let slowest = witness.slowest.load(Ordering::SeqCst);
    assert!(
        violations.is_empty(),
        "reads during the migration (slowest {slowest} ms): {violations:#?}"
    );
    assert!(
        writes_during > 10,
        "the writer wrote during the migration ({writes_during})"
    );
    assert!(
        witness.reads.load(Ordering::SeqCst) > 5,
        "reads were sampled"
    );
    let p = &report.progress;
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(report.checkpoint.is_complete());
    // Every misplaced item was dealt with: moved, found superseded by a newer write, or gone
    // (a writer moved or deleted it first), or never read at its old place because a write
    // (at most one per write) moved or deleted it before the scan came by.
    assert!(
        p.handled() + writes_during >= before,
        "{p} for {before} misplaced, {writes_during} writes"
    );
    assert!(p.moved > 0, "{p}");
    assert_eq!(
        *last.lock().unwrap(),
        report.progress,
        "the hook saw the final counts"
    );
    // Two-step moves: the copy (a put and a check, each 2 units in a transaction) and the
    // delete (1). DynamoDB Local leaves the check out of its consumed capacity: 3 at least.
    assert!(p.write_units >= 3.0 * p.moved as f64, "{p}");
    assert_settled(&repo, &witness).await;
}

#[tokio::test]
async fn legacy_to_sharded_under_a_writer() {
    let repo: Repo<Adopted> = repo("migrate-legacy").await;
    let scores = initial(300);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    repo.for_entity::<GameMeta>()
        .put(&GameMeta {
            game_id: "g2".into(),
            title: "another entity".into(),
        })
        .await
        .unwrap();
    migrate_under_writers(repo.clone(), Witness::new(&scores, 1), 11).await;
    // The untagged record that is not a score, and the other entity, are untouched.
    let raw = raw_scan(repo.client(), repo.table()).await;
    assert!(raw
        .iter()
        .any(|i| i["pk"].as_s().unwrap() == "GAME#g1" && i["sk"].as_s().unwrap() == "INFO"));
    assert!(raw
        .iter()
        .any(|i| i["pk"].as_s().unwrap() == "GAME#g2" && i["sk"].as_s().unwrap() == "META"));
}

#[tokio::test]
async fn ten_to_twenty_shards_under_a_writer() {
    let old: Repo<At10> = repo("migrate-grow").await;
    let scores = initial(400);
    let items: Vec<At10> = scores.iter().map(|(p, s)| At10::new(p, *s, 1)).collect();
    old.batch_put(&items).await.unwrap();
    migrate_under_writers(old.for_entity::<To20>(), Witness::new(&scores, 1), 12).await;
}

#[tokio::test]
async fn ten_to_three_shards_under_a_writer() {
    let old: Repo<At10> = repo("migrate-shrink").await;
    let scores = initial(300);
    let items: Vec<At10> = scores.iter().map(|(p, s)| At10::new(p, *s, 1)).collect();
    old.batch_put(&items).await.unwrap();
    migrate_under_writers(old.for_entity::<To3>(), Witness::new(&scores, 1), 13).await;
}

#[tokio::test]
async fn a_killed_migration_resumes_from_its_checkpoint() {
    let repo: Repo<Adopted> = repo("migrate-resume").await;
    let scores = initial(240);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    let witness = Witness::new(&scores, 1);
    let saved: Arc<Mutex<Option<String>>> = Arc::default();
    let kill = Arc::new(tokio::sync::Notify::new());
    let (save, killer) = (saved.clone(), kill.clone());
    let first = repo
        .migrate()
        .page_size(20)
        .concurrency(4)
        // Long enough that the kill comes while copies wait for their old copies' deletion.
        .delete_delay(Duration::from_millis(500))
        .on_checkpoint(move |c| *save.lock().unwrap() = Some(c.to_token()))
        .on_progress(move |p| {
            if p.moved >= 60 {
                killer.notify_one();
            }
        })
        .run();
    tokio::select! {
        result = first => panic!("the migration finished before it was killed: {result:?}"),
        () = kill.notified() => {}
    }
    // Killed part-way: some items moved, some not, some maybe copied with their old copy
    // still there. Reads still see every item exactly once.
    let left = repo.migration_remaining().await.unwrap().items;
    assert!(
        left > 0 && left < scores.len() as u64,
        "{left} of {} left",
        scores.len()
    );
    let (s, e) = (witness.history.now(), witness.history.now());
    let all: Vec<Key> = Adopted::query(&repo, GAME)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(Board::key)
        .collect();
    witness.history.check(s, e, &all, None, Ord::cmp).unwrap();
    // Resume from the last checkpoint, as a restarted process would: from its token.
    let token = saved
        .lock()
        .unwrap()
        .clone()
        .expect("a checkpoint was offered");
    let checkpoint: migrate::Checkpoint = token.parse().unwrap();
    assert!(!checkpoint.is_complete());
    let resumed = repo
        .migrate()
        .page_size(20)
        .resume_from(checkpoint)
        .run()
        .await
        .unwrap();
    let p = &resumed.progress;
    assert!(
        p.moved > 0 && p.moved < scores.len() as u64,
        "resumed, not restarted: {p}"
    );
    assert!(resumed.checkpoint.is_complete());
    assert_settled(&repo, &witness).await;
}

#[tokio::test]
async fn one_logical_key_at_a_time() {
    let repo: Repo<Adopted> = repo("migrate-only").await;
    let g1 = initial(50);
    let g2: Vec<(String, u64)> = initial(30);
    seed_legacy(repo.client(), repo.table(), GAME, &g1).await;
    seed_legacy(repo.client(), repo.table(), "g2", &g2).await;
    let only = || Adopted::pk_partitions(GAME).unwrap();
    assert_eq!(repo.migrate().only(only()).remaining().await.unwrap(), 50);
    let report = repo.migrate().only(only()).run().await.unwrap();
    assert_eq!(report.progress.moved, 50, "{}", report.progress);
    assert_eq!(
        report.checkpoint.parts(),
        1,
        "one previous partition: the legacy key"
    );
    assert_eq!(repo.migrate().only(only()).remaining().await.unwrap(), 0);
    // The other game is still at its legacy place, and still read there.
    assert_eq!(repo.migration_remaining().await.unwrap(), 30);
    assert_eq!(Adopted::query(&repo, "g2").count().await.unwrap(), 30);
    let again = repo.migrate().only(only()).run().await.unwrap();
    assert_eq!(again.progress.moved, 0);
    assert_settled_scores(&repo, &g1).await;
}

async fn assert_settled_scores(repo: &Repo<Adopted>, scores: &[(String, u64)]) {
    let mut expected: Vec<Key> = scores.iter().map(|(p, s)| (*s, p.clone())).collect();
    expected.sort();
    let all: Vec<Key> = Adopted::query(repo, GAME)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(Board::key)
        .collect();
    assert_eq!(all, expected);
}

#[tokio::test]
async fn settings_and_checkpoints_that_cannot_run_are_refused_before_any_request() {
    let faults = Faults::new();
    let client = faulty_client(&faults, 1).await;
    let repo: Repo<To20> = Repo::new(client.clone(), "no-such-table");
    let invalid = |e: MigrateError| match e {
        MigrateError::Refused(refusal) => refusal,
        other => panic!("expected Refused, got {other}"),
    };
    for (migration, says) in [
        (repo.migrate().segments(0), "segments(0)"),
        (repo.migrate().concurrency(0), "concurrency(0)"),
        (repo.migrate().page_size(0), "page_size(0)"),
        (
            repo.migrate().write_units_per_second(f64::NAN),
            "write_units_per_second(NaN)",
        ),
        (
            repo.migrate().write_units_per_second(0.0),
            "write_units_per_second(0)",
        ),
        (
            repo.migrate().read_units_per_second(f64::INFINITY),
            "read_units_per_second(inf)",
        ),
        (repo.migrate().max_attempts(0), "max_attempts(0)"),
    ] {
        let message = invalid(migration.run().await.unwrap_err()).to_string();
        assert!(message.starts_with(says), "{message}");
    }
    // Partitions of another template.
    let other = Partitions::new(
        sharded::keys::ShardKeys::new("USER#u1".into(), Some(2)),
        None,
    );
    let refusal = invalid(repo.migrate().only(other).run().await.unwrap_err());
    assert!(
        matches!(
            refusal,
            MigrationRefusal::OnlyNotAKey {
                entity: "Score",
                ..
            }
        ),
        "{refusal}"
    );
    // An entity with no transition declared has nothing to migrate from.
    let steady: Repo<At10> = repo.for_entity();
    let refusal = invalid(steady.migrate().run().await.unwrap_err());
    assert!(
        matches!(refusal, MigrationRefusal::NoTransition { .. }),
        "{refusal}"
    );
    let message = invalid(steady.migration_remaining().await.unwrap_err()).to_string();
    assert!(message.contains("previous_n"), "{message}");
    // Checkpoints of other migrations: a finished run of an empty table offers a complete one.
    let real: Repo<To20> = crate::support::repo("migrate-refuse").await;
    let offered: Arc<Mutex<Vec<migrate::Checkpoint>>> = Arc::default();
    let keep = offered.clone();
    let report = real
        .migrate()
        .segments(3)
        .on_checkpoint(move |c| keep.lock().unwrap().push(c.clone()))
        .run()
        .await
        .unwrap();
    assert_eq!(
        offered.lock().unwrap().len(),
        3,
        "one page per segment, each offered"
    );
    let checkpoint = report.checkpoint;
    assert!(checkpoint.is_complete());
    let refused = |e: MigrateError| match e {
        MigrateError::InvalidCheckpoint(m) => m,
        other => panic!("expected InvalidCheckpoint, got {other}"),
    };
    let message = refused(
        repo.migrate()
            .resume_from(checkpoint.clone())
            .run()
            .await
            .unwrap_err(),
    );
    assert!(message.contains("table"), "{message}");
    let message = refused(
        real.migrate()
            .segments(4)
            .resume_from(checkpoint.clone())
            .run()
            .await
            .unwrap_err(),
    );
    assert!(message.contains("3 segments, not 4"), "{message}");
    let message = refused(
        real.migrate()
            .only(To20::pk_partitions("g1").unwrap())
            .resume_from(checkpoint.clone())
            .run()
            .await
            .unwrap_err(),
    );
    assert!(message.contains("scope"), "{message}");
    let message = refused(
        real.for_entity::<To3>()
            .migrate()
            .resume_from(checkpoint.clone())
            .run()
            .await
            .unwrap_err(),
    );
    assert!(message.contains("layout"), "{message}");
    // Resuming a complete checkpoint reads nothing.
    let done = real.migrate().resume_from(checkpoint).run().await.unwrap();
    assert_eq!(done.progress.pages, 0);
    assert!(migrate::Checkpoint::from_token("garbage").is_err());
    assert_eq!(
        faults.requests("Scan") + faults.requests("Query"),
        0,
        "nothing was sent"
    );
}

#[tokio::test]
async fn what_cannot_be_moved_is_listed_and_kept_and_moved_later() {
    let repo: Repo<Adopted> = repo("migrate-throttled").await;
    let scores = initial(40);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    // An item whose stored data does not fit the struct: listed, never moved, never lost.
    repo.client()
        .put_item()
        .table_name(repo.table())
        .item("pk", V::S("GAME#g1".into()))
        .item("sk", V::S(Adopted::sk(7, "broken").unwrap()))
        .item("game_id", V::S("g1".into()))
        .item("player_id", V::S("broken".into()))
        .item("score", V::S("not a number".into()))
        .item("plays", V::N("1".into()))
        .send()
        .await
        .unwrap();
    // Shard 3 is throttled throughout, and some answers are lost (their moves applied).
    let faults = Faults::new();
    let hot = Adopted::pk_on_shard(GAME, 3).unwrap();
    faults.throttle_partition(hot.clone());
    faults.drop_responses("TransactWriteItems", 3);
    let flaky: Repo<Adopted> = Repo::new(faulty_client(&faults, 2).await, repo.table());
    let on_hot = scores
        .iter()
        .filter(|(p, s)| Adopted::new(p, *s, 1).item_keys().unwrap().pk == hot)
        .count() as u64;
    assert!(on_hot > 0);
    let result = flaky
        .migrate()
        .only(Adopted::pk_partitions(GAME).unwrap())
        .max_attempts(2)
        .delete_delay(Duration::from_millis(50))
        .run()
        .await;
    let Err(MigrateError::Incomplete {
        report,
        source: None,
    }) = result
    else {
        panic!("expected the items of the throttled shard listed, got {result:?}");
    };
    assert_eq!(report.progress.failed, on_hot, "{}", report.progress);
    assert_eq!(report.failed.len() as u64, on_hot);
    assert!(report.failed.iter().all(|f| f.reason.contains("throttled")));
    // The item that does not read as the entity, and the legacy partition's `INFO` record
    // (another record's key), are not the entity's to move: left where they are, listed
    // with the reason.
    let mut left: Vec<(String, &str)> = report
        .left_alone
        .iter()
        .map(|f| (f.key.sk.clone().unwrap_or_default(), f.reason.label()))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ("INFO".to_owned(), "other_keys"),
            (Adopted::sk(7, "broken").unwrap(), "unreadable")
        ]
    );
    assert!(
        !report.checkpoint.is_complete(),
        "it read everything, but its checkpoint stays before the items it could not move"
    );
    let message = MigrateError::Incomplete {
        report,
        source: None,
    }
    .to_string();
    assert!(message.contains("could not be moved"), "{message}");
    // Nothing was lost: the throttled ones are still at their legacy place, and read there;
    // the broken one is listed as left alone.
    let remaining = repo.migration_remaining().await.unwrap();
    assert_eq!(remaining, on_hot);
    assert_eq!(remaining.left_alone.count, 2);
    // Remove the broken item; once the shard cools down, a second run moves the rest.
    repo.client()
        .delete_item()
        .table_name(repo.table())
        .key("pk", V::S("GAME#g1".into()))
        .key("sk", V::S(Adopted::sk(7, "broken").unwrap()))
        .send()
        .await
        .unwrap();
    faults.clear();
    let report = flaky.migrate().run().await.unwrap();
    assert_eq!(report.progress.moved, on_hot);
    assert_settled_scores(&repo, &scores).await;
    assert_eq!(stored(&repo).await.len(), scores.len());
}

/// A checkpoint never passes an item that could not be moved: every checkpoint of a run
/// with failed items stops before them, and a run resumed from the last one reads their
/// pages again and moves them (issue 30, item 6: it used to resume past them, reading
/// nothing, while `remaining` still counted them).
#[tokio::test]
async fn a_checkpoint_stops_at_a_failed_item_and_resuming_moves_it() {
    let repo: Repo<Adopted> = repo("migrate-resume-failed").await;
    let scores = initial(40);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    // Moves to shard 3 are throttled until the faults are cleared.
    let faults = Faults::new();
    let hot = Adopted::pk_on_shard(GAME, 3).unwrap();
    faults.throttle_partition(hot.clone());
    let flaky: Repo<Adopted> = Repo::new(faulty_client(&faults, 2).await, repo.table());
    let on_hot = scores
        .iter()
        .filter(|(p, s)| Adopted::new(p, *s, 1).item_keys().unwrap().pk == hot)
        .count() as u64;
    assert!(on_hot > 0 && on_hot < scores.len() as u64);
    let offered: Arc<Mutex<Vec<migrate::Checkpoint>>> = Arc::default();
    let keep = offered.clone();
    let result = flaky
        .migrate()
        .segments(1)
        .page_size(10)
        .max_attempts(2)
        .delete_delay(Duration::from_millis(50))
        .on_checkpoint(move |c| keep.lock().unwrap().push(c.clone()))
        .run()
        .await;
    let Err(MigrateError::Incomplete {
        report,
        source: None,
    }) = result
    else {
        panic!("expected the items of the throttled shard listed, got {result:?}");
    };
    assert_eq!(report.progress.failed, on_hot, "{}", report.progress);
    assert!(
        !report.checkpoint.is_complete(),
        "the report's checkpoint stops before the failed items"
    );
    let offered = offered.lock().unwrap().clone();
    assert!(offered.len() >= 4, "a checkpoint after every page");
    assert!(offered.iter().all(|c| !c.is_complete()));
    assert_eq!(offered.last(), Some(&report.checkpoint));
    // Every other item moved all the same.
    assert_eq!(repo.migration_remaining().await.unwrap(), on_hot);
    // Resumed from the last checkpoint's token, as a restarted process would.
    faults.clear();
    let token = offered.last().unwrap().to_token();
    let resumed = flaky
        .migrate()
        .page_size(10)
        .resume_from(token.parse().unwrap())
        .run()
        .await
        .unwrap();
    assert_eq!(resumed.progress.moved, on_hot, "{}", resumed.progress);
    assert!(resumed.checkpoint.is_complete());
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    assert_settled_scores(&repo, &scores).await;
}

/// The move's conditions over every attribute type DynamoDB stores, reserved words as names,
/// and items wider than DynamoDB's 300-operator limit on one expression.
#[tokio::test]
async fn every_attribute_type_and_wide_items_move_unchanged() {
    let repo: Repo<Adopted> = repo("migrate-types").await;
    let mut originals = Vec::new();
    for (i, extra) in [0usize, 5, 200].into_iter().enumerate() {
        let p = player(i);
        let mut item = HashMap::from([
            ("pk".to_owned(), V::S("GAME#g1".into())),
            ("sk".to_owned(), V::S(Adopted::sk(i as u64, &p).unwrap())),
            ("game_id".to_owned(), V::S("g1".into())),
            ("player_id".to_owned(), V::S(p.clone())),
            ("score".to_owned(), V::N(i.to_string())),
            ("plays".to_owned(), V::N("15".into())),
            ("ratio".to_owned(), V::N("1.50E1".into())),
            // Reserved words as attribute names.
            ("name".to_owned(), V::S("n".into())),
            ("size".to_owned(), V::Null(true)),
            ("status".to_owned(), V::Bool(false)),
            (
                "data".to_owned(),
                V::M(HashMap::from([
                    (
                        "list".to_owned(),
                        V::L(vec![V::N("1".into()), V::S("".into()), V::Null(true)]),
                    ),
                    ("set".to_owned(), V::Ss(vec!["b".into(), "a".into()])),
                    ("empty".to_owned(), V::M(HashMap::new())),
                ])),
            ),
            (
                "tags".to_owned(),
                V::Ss(vec!["z".into(), "y".into(), "x".into()]),
            ),
            ("numbers".to_owned(), V::Ns(vec!["3".into(), "1.0".into()])),
            (
                "blobs".to_owned(),
                V::Bs(vec![Blob::new(*b"y"), Blob::new(*b"x")]),
            ),
            ("blob".to_owned(), V::B(Blob::new(vec![0, 255]))),
        ]);
        for n in 0..extra {
            item.insert(format!("extra{n:03}"), V::S(format!("v{n}")));
        }
        repo.client()
            .put_item()
            .table_name(repo.table())
            .set_item(Some(item.clone()))
            .send()
            .await
            .unwrap();
        originals.push(item);
    }
    let report = repo.migrate().run().await.unwrap();
    assert_eq!(report.progress.moved, 3, "{}", report.progress);
    let stored = raw_scan(repo.client(), repo.table()).await;
    for original in &originals {
        let sk = &original["sk"];
        let moved = stored
            .iter()
            .find(|i| &i["sk"] == sk)
            .unwrap_or_else(|| panic!("{sk:?} was lost"));
        assert_ne!(moved["pk"], original["pk"], "at its shard");
        assert_eq!(moved["_entity"], V::S("Score".into()));
        for (name, value) in original.iter().filter(|(n, _)| n.as_str() != "pk") {
            let kept = &moved[name];
            assert!(same(value, kept), "{name}: {value:?} became {kept:?}");
        }
    }
}

/// DynamoDB's equality: sets in any order.
fn same(a: &V, b: &V) -> bool {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    match (a, b) {
        // Numbers by value: DynamoDB may store `1.50E1` as `15`.
        (V::N(x), V::N(y)) => x.parse::<f64>().ok() == y.parse::<f64>().ok(),
        (V::Ns(x), V::Ns(y)) => {
            let mut x: Vec<f64> = x.iter().filter_map(|n| n.parse().ok()).collect();
            let mut y: Vec<f64> = y.iter().filter_map(|n| n.parse().ok()).collect();
            x.sort_by(f64::total_cmp);
            y.sort_by(f64::total_cmp);
            x == y
        }
        (V::Ss(x), V::Ss(y)) => sorted(x) == sorted(y),
        (V::Bs(x), V::Bs(y)) => {
            let mut x: Vec<Vec<u8>> = x.iter().map(|b| b.as_ref().to_vec()).collect();
            let mut y: Vec<Vec<u8>> = y.iter().map(|b| b.as_ref().to_vec()).collect();
            x.sort();
            y.sort();
            x == y
        }
        (V::M(x), V::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (V::L(x), V::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}

/// The write budget bounds the units a run uses: at most `rate × elapsed` plus the moves in
/// flight at the last start (an upper bound only: a slow machine can only loosen it).
#[tokio::test]
async fn the_write_budget_bounds_the_units_used() {
    let old: Repo<At10> = repo("migrate-budget").await;
    let scores = initial(200);
    let items: Vec<At10> = scores.iter().map(|(p, s)| At10::new(p, *s, 1)).collect();
    old.batch_put(&items).await.unwrap();
    let repo: Repo<To20> = old.for_entity();
    let rate = 150.0;
    let concurrency = 6;
    let report = repo
        .migrate()
        .write_units_per_second(rate)
        .concurrency(concurrency)
        .delete_delay(Duration::from_millis(50))
        .run()
        .await
        .unwrap();
    let p = &report.progress;
    // One move of a small item: a copy (2 + 2) and a delete (1); DynamoDB Local reports the
    // put and the delete (3), not the check.
    let one_move = 5.0;
    assert!(p.moved > 50, "{p}");
    assert!(
        p.write_units <= rate * p.elapsed.as_secs_f64() + concurrency as f64 * one_move,
        "{p}"
    );
    assert!(
        p.write_units >= 3.0 * p.moved as f64,
        "charged what DynamoDB reported: {p}"
    );
}

#[tokio::test]
async fn a_migration_runs_on_its_own_task() {
    // The future is Send + 'static: it can be spawned, and its hooks run there.
    let old: Repo<At10> = repo("migrate-spawn").await;
    let items: Vec<At10> = initial(20)
        .iter()
        .map(|(p, s)| At10::new(p, *s, 1))
        .collect();
    old.batch_put(&items).await.unwrap();
    let repo: Repo<To20> = old.for_entity();
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let handle = tokio::spawn(
        repo.migrate()
            .on_progress(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .run(),
    );
    let report = handle.await.unwrap().unwrap();
    assert!(calls.load(Ordering::SeqCst) >= report.progress.scanned);
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
}

/// `examined` counts what DynamoDB read to find the entity's items, every entity's: the
/// measure an ops tool sets against the table's item count.
#[tokio::test]
async fn examined_counts_every_item_the_scan_read() {
    let repo: Repo<Adopted> = repo("migrate-examined").await;
    let scores = initial(30);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    let before = raw_scan(repo.client(), repo.table()).await.len() as u64;
    assert!(
        before > scores.len() as u64,
        "the game record shares the table"
    );
    let report = repo.migrate().page_size(7).run().await.unwrap();
    let p = &report.progress;
    assert_eq!(p.moved, scores.len() as u64, "{p}");
    // Every item present at the start is examined once; a moved copy may be met again.
    assert!(p.examined >= before, "{} examined of {before}", p.examined);
    assert!(
        p.examined <= before + p.moved,
        "{} examined, {} moved",
        p.examined,
        p.moved
    );
    assert!(
        p.examined > p.scanned,
        "the game record is examined, not read as a score"
    );
}

/// An old copy that gains an attribute after its copy and before its delete (a writer of the
/// previous layout): it is not deleted with the attribute (it once was, since the delete
/// compared only the attributes read) but kept, and listed as failed.
#[tokio::test]
async fn an_old_copy_that_gained_an_attribute_after_its_copy_is_kept() {
    let repo: Repo<Adopted> = repo("migrate-gained").await;
    let scores = initial(30);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    let run = repo
        .migrate()
        .page_size(10)
        // Long enough for every addition below to come between copies and deletes.
        .delete_delay(Duration::from_secs(5))
        .run();
    let (client, table) = (repo.client().clone(), repo.table().to_owned());
    let added = async {
        let mut added = Vec::new();
        for (player, score) in &scores {
            let sk = V::S(Adopted::sk(*score, player).unwrap());
            let copied = HashMap::from([
                ("pk".to_owned(), V::S(Adopted::pk(GAME, player).unwrap())),
                ("sk".to_owned(), sk.clone()),
            ]);
            // Once the copy is at its current place, the old copy gains an attribute.
            loop {
                let got = client
                    .get_item()
                    .table_name(&table)
                    .set_key(Some(copied.clone()))
                    .consistent_read(true)
                    .send()
                    .await
                    .unwrap();
                if got.item.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let gained = client
                .update_item()
                .table_name(&table)
                .key("pk", V::S(format!("GAME#{GAME}")))
                .key("sk", sk)
                .update_expression("SET #note = :note")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_names("#note", "note")
                .expression_attribute_values(":note", V::S(format!("for {player}")))
                .send()
                .await;
            if gained.is_ok() {
                added.push((player.clone(), *score));
            }
        }
        added
    };
    let (result, added) = tokio::join!(run, added);
    let report = match result {
        Ok(report) => report,
        Err(MigrateError::Incomplete { report, .. }) => *report,
        Err(other) => panic!("{other}"),
    };
    assert!(
        !added.is_empty(),
        "no old copy gained an attribute: the test proves nothing"
    );
    // Every attribute added is still stored: on the old copy, kept.
    for (player, score) in &added {
        let old = client
            .get_item()
            .table_name(&table)
            .key("pk", V::S(format!("GAME#{GAME}")))
            .key("sk", V::S(Adopted::sk(*score, player).unwrap()))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        assert_eq!(
            old.item.and_then(|item| item.get("note").cloned()),
            Some(V::S(format!("for {player}"))),
            "{player}'s added attribute was lost"
        );
    }
    assert_eq!(
        report.progress.failed,
        added.len() as u64,
        "{}",
        report.progress
    );
    assert_eq!(
        report.progress.moved,
        (scores.len() - added.len()) as u64,
        "{}",
        report.progress
    );
    assert!(report
        .failed
        .iter()
        .all(|f| f.reason.contains("changed after it was copied")));
}

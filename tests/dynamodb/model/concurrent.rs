//! The concurrent mode: while a transition is migrated (growing 3 -> 5, shrinking 5 -> 3,
//! adopting sharding over a legacy key another service wrote untagged), three writers and the
//! migration runner run at once, and a reader pages and queries; every answer is checked
//! against the history of the writes (`sharded_testkit::history`): each item no write touched
//! while the read ran comes exactly once, in order, and none is lost. During the adoption the
//! legacy service keeps writing new items its own way. The writers check their
//! own results: each owns its keys, predicts every answer (conditional writes included) and
//! reads its write back through the repository, wherever the migration has the item.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sharded::migrate::Migrate;
use sharded::schema::CreateTable;
use sharded::{Cursor, Error, Repo};
use sharded_testkit::history::History;

use super::layouts::tagged::{A3Item, S3Item, S5Item, T3Item, T5Item};
use super::layouts::{Flavour, ModelEntity, UpdateSpec};
use super::reference::{Cond, Key, Kind, Phase, Rec, LIVE};

const GROUP: &str = "a";
/// Ids written: more than one page of a few shards, few enough that writers meet.
const IDS: u16 = 60;
/// The writers write the first ids only: the others are stable, and must be in every read.
const IDS_WRITTEN: u16 = 20;
const WRITES_PER_WRITER: usize = 40;
/// New items the legacy service writes during an adoption (ids from `IDS` on).
const LEGACY_WRITES: u16 = 10;
/// The migration's delete delay: the longest a page may take and still see every item the
/// migration moves under it. DynamoDB Local on 2 cores shared with the rest of the suite
/// answers a page in seconds at worst.
const MIGRATION_DELETE_DELAY: Duration = Duration::from_secs(8);

fn key(id: u16) -> Key {
    Key {
        kind: Kind::Item,
        group: 0,
        id,
    }
}

fn random_rec(rng: &mut fastrand::Rng) -> Rec {
    Rec {
        status: ["red", "green", "blue"][rng.usize(..3)].to_owned(),
        points: rng.i64(0..100),
        expires: Some(LIVE),
        version: 0,
    }
}

fn id_of<E: ModelEntity>(e: &E) -> u16 {
    e.to_model().0.id
}

/// What a writer holds of its own keys (no other writer writes them; the migration only
/// moves them): each key's content, if the item is there.
type Own = BTreeMap<u16, Option<Rec>>;

/// A result a writer did not predict, for its key.
fn unexpected<T: std::fmt::Debug>(
    which: u8,
    what: &str,
    id: u16,
    got: T,
    predicted: &str,
) -> String {
    format!("writer {which}: {what} of {id}: {got:?}, predicted {predicted}")
}

/// One writer's operations on the transition's layout, each recorded in `history` and each
/// checked: its answer is the one the writer predicts from its own keys (which no other
/// writer touches), and a `get` right after it reads what it wrote. Writer 0 uses point
/// writes (`put`, `delete`, `update`), writer 1 batches and transactions, writer 2
/// conditional writes (`put_if`, `delete_if`, `put_new`). Returns what did not hold.
async fn writer<T: ModelEntity>(
    repo: Repo<T>,
    history: Arc<History<u16>>,
    seed: u64,
    which: u8,
    mut own: Own,
) -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut violations = Vec::new();
    let ids: Vec<u16> = own.keys().copied().collect();
    for _ in 0..WRITES_PER_WRITER {
        let id = ids[rng.usize(..ids.len())];
        let rec = random_rec(&mut rng);
        let item = T::from_model(&key(id), &rec);
        let stored = own[&id].clone();
        let stored_points = stored.as_ref().map(|r| r.points);
        match (which, rng.u8(..4)) {
            (0, 0 | 1) => {
                let w = history.put(id);
                match repo.put(&item).await {
                    Ok(()) => {
                        w.done();
                        own.insert(id, Some(rec.clone()));
                    }
                    Err(e) => violations.push(unexpected(which, "put", id, e, "Ok")),
                }
            }
            (0, 2) => {
                let w = history.delete(id);
                match T::delete(&repo, &key(id)).await {
                    Ok(()) => {
                        w.done();
                        own.insert(id, None);
                    }
                    Err(e) => violations.push(unexpected(which, "delete", id, e, "Ok")),
                }
            }
            (0, _) => {
                // Changes the content, not whether the item is there; an update of an item
                // not yet migrated moves it to its current place first, so a read it
                // overlaps may or may not show it.
                let w = history.touch(id);
                let spec = UpdateSpec {
                    key: key(id),
                    status: None,
                    add: 1,
                    cond: None,
                    if_version: None,
                };
                let result = T::update(&repo, &spec).await;
                w.done();
                match (result, stored.clone()) {
                    (Ok(()), Some(mut updated)) => {
                        updated.points += 1;
                        own.insert(id, Some(updated));
                    }
                    (Err(Error::ConditionFailed { .. }), None) => {}
                    (got, _) => violations.push(unexpected(
                        which,
                        "update",
                        id,
                        got,
                        if stored.is_some() {
                            "Ok"
                        } else {
                            "ConditionFailed"
                        },
                    )),
                }
            }
            (1, 0) => {
                let next = ids[(ids.iter().position(|i| *i == id).unwrap_or(0) + 1) % ids.len()];
                let other_rec = random_rec(&mut rng);
                let other = T::from_model(&key(next), &other_rec);
                let writes = if next == id {
                    vec![history.put(id)]
                } else {
                    vec![history.put(id), history.put(next)]
                };
                let batch: Vec<&T> = if next == id {
                    vec![&item]
                } else {
                    vec![&item, &other]
                };
                match repo.batch_put(batch).await {
                    Ok(()) => {
                        writes.into_iter().for_each(|w| w.done());
                        own.insert(id, Some(rec.clone()));
                        if next != id {
                            own.insert(next, Some(other_rec.clone()));
                        }
                    }
                    Err(e) => violations.push(unexpected(which, "batch_put", id, e, "Ok")),
                }
            }
            (1, 1) => {
                let w = history.delete(id);
                match repo.batch_delete([&item]).await {
                    Ok(()) => {
                        w.done();
                        own.insert(id, None);
                    }
                    Err(e) => violations.push(unexpected(which, "batch_delete", id, e, "Ok")),
                }
            }
            (1, 2) => {
                let w = history.delete(id);
                match repo.transaction().delete(&item).commit().await {
                    Ok(()) => {
                        w.done();
                        own.insert(id, None);
                    }
                    Err(e) => violations.push(unexpected(which, "transaction delete", id, e, "Ok")),
                }
            }
            (1, _) => {
                let w = history.put(id);
                match repo.transaction().put(&item).commit().await {
                    Ok(()) => {
                        w.done();
                        own.insert(id, Some(rec.clone()));
                    }
                    Err(e) => violations.push(unexpected(which, "transaction put", id, e, "Ok")),
                }
            }
            (_, 0 | 1) => {
                // Only while the stored points reach a bound drawn at random, so that the
                // condition holds or not.
                let bound = rng.i64(0..100);
                let holds = stored_points.is_some_and(|p| p >= bound);
                let w = holds.then(|| history.put(id));
                let result = repo
                    .put_if(&item, T::condition(&Cond::PointsGe(bound)))
                    .await;
                match (result, w) {
                    (Ok(()), Some(w)) => {
                        w.done();
                        own.insert(id, Some(rec.clone()));
                    }
                    (Err(Error::ConditionFailed { .. }), None) => {}
                    (got, _) => violations.push(unexpected(
                        which,
                        &format!("put_if points >= {bound} (stored {stored_points:?})"),
                        id,
                        got,
                        if holds { "Ok" } else { "ConditionFailed" },
                    )),
                }
            }
            (_, 2) => {
                let bound = rng.i64(0..100);
                let holds = stored_points.is_some_and(|p| p >= bound);
                let w = holds.then(|| history.delete(id));
                let result = repo
                    .delete_if(&item, T::condition(&Cond::PointsGe(bound)))
                    .await;
                match (result, w) {
                    (Ok(()), Some(w)) => {
                        w.done();
                        own.insert(id, None);
                    }
                    (Err(Error::ConditionFailed { .. }), None) => {}
                    (got, _) => violations.push(unexpected(
                        which,
                        &format!("delete_if points >= {bound} (stored {stored_points:?})"),
                        id,
                        got,
                        if holds { "Ok" } else { "ConditionFailed" },
                    )),
                }
            }
            (_, _) => {
                // The same item again is not a conflict: it answers Ok and changes nothing.
                let same = stored.as_ref() == Some(&rec);
                let w = stored.is_none().then(|| history.put(id));
                let result = repo.put_new(&item).await;
                match (result, w) {
                    (Ok(()), Some(w)) => {
                        w.done();
                        own.insert(id, Some(rec.clone()));
                    }
                    (Ok(()), None) if same => {}
                    (Err(Error::AlreadyExists { .. }), None) if !same => {}
                    (got, _) => violations.push(unexpected(
                        which,
                        &format!("put_new (stored {stored:?})"),
                        id,
                        got,
                        if stored.is_none() || same {
                            "Ok"
                        } else {
                            "AlreadyExists"
                        },
                    )),
                }
            }
        }
        // Read-your-writes through the repository, wherever the migration has the item.
        match T::get(&repo, &key(id)).await {
            Ok(got) => {
                let got = got.map(|e| e.to_model().1);
                if got != own[&id] {
                    violations.push(format!(
                        "writer {which}: get of {id} read {got:?} after its write, it holds {:?}",
                        own[&id]
                    ));
                }
            }
            Err(e) => violations.push(format!("writer {which}: get of {id}: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(20..200))).await;
    }
    violations
}

/// Reads until `stop`: listings paged by 1 to 5, and top-10s, each checked against the
/// history. Returns the violations and the number of reads checked.
async fn reader<T: ModelEntity>(
    repo: Repo<T>,
    history: Arc<History<u16>>,
    stop: Arc<AtomicBool>,
    seed: u64,
) -> (Vec<String>, usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut violations = Vec::new();
    let mut reads = 0;
    while !stop.load(Ordering::SeqCst) {
        // Without paging across the migration (gated), one page holds the whole listing.
        let size = if super::PAGING_ACROSS_MIGRATION {
            rng.usize(1..=5)
        } else {
            usize::from(IDS) + 10
        };
        let started = history.now();
        let mut answer = Vec::new();
        let mut cursor: Option<Cursor> = None;
        loop {
            match T::query(&repo, GROUP).page(size, cursor.as_ref()).await {
                Ok(page) => {
                    answer.extend(page.items.iter().map(id_of));
                    // A reader that takes its time between pages: the migration and the
                    // writers move on under its cursor.
                    tokio::time::sleep(Duration::from_millis(rng.u64(10..80))).await;
                    match page.cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                Err(e) => {
                    violations.push(format!("paging by {size} failed: {e}"));
                    break;
                }
            }
        }
        let ended = history.now();
        if let Err(v) = history.check(started, ended, &answer, None, Ord::cmp) {
            violations.push(format!("pages of {size}: {v}"));
        }
        let started = history.now();
        match T::query(&repo, GROUP)
            .descending()
            .limit(10)
            .collect()
            .await
        {
            Ok(top) => {
                let ended = history.now();
                let ids: Vec<u16> = top.iter().map(id_of).collect();
                if let Err(v) = history.check(started, ended, &ids, Some(10), |a, b| b.cmp(a)) {
                    violations.push(format!("top-10: {v}"));
                }
            }
            Err(e) => violations.push(format!("top-10 failed: {e}")),
        }
        reads += 2;
    }
    (violations, reads)
}

/// How the items are there before the transition is declared.
#[derive(Clone, Copy, Debug)]
enum Before {
    /// Written through the steady layout `S`.
    Steady,
    /// Written by a service before it adopted `sharded`: untagged, at the legacy key.
    Legacy,
}

/// One concurrent run: items written as `before` says (through `S` when steady), then three
/// writers, the migration of the transition `T` and a reader at once, then the steady layout
/// `A` after it. Every read is checked against the history, every write against its writer's
/// prediction, and the end state against the history.
async fn concurrent<S: ModelEntity, T: ModelEntity, A: ModelEntity>(name: &str, before: Before) {
    let seed = super::env::<u64>("SHARDED_MODEL_SEED").unwrap_or(7);
    let client = crate::support::client().await;
    let table = sharded_testkit::backend::unique_table_name("model-concurrent");
    S::table_definition()
        .create_table(&client, &table)
        .send()
        .await
        .expect("create table");
    let history = Arc::new(History::new());
    let mut rng = fastrand::Rng::with_seed(seed);
    let seeded: Vec<(Key, Rec)> = (0..IDS)
        .filter(|id| id % 3 != 0)
        .map(|id| (key(id), random_rec(&mut rng)))
        .collect();
    let writes: Vec<_> = seeded.iter().map(|(k, _)| history.put(k.id)).collect();
    match before {
        Before::Steady => {
            let steady: Repo<S> = Repo::new(client.clone(), table.clone());
            let items: Vec<S> = seeded.iter().map(|(k, r)| S::from_model(k, r)).collect();
            steady.batch_put(&items).await.expect("seed the items");
        }
        Before::Legacy => {
            for (k, r) in &seeded {
                let item = super::exec::legacy_item(Flavour::Tagged, Phase::A3, 0, k, r);
                client
                    .put_item()
                    .table_name(&table)
                    .set_item(Some(item))
                    .send()
                    .await
                    .expect("seed a legacy item");
            }
        }
    }
    writes.into_iter().for_each(|w| w.done());
    // Each writer owns the written ids of its residue (mod 3), with their seeded content.
    let owned = |w: u8| -> Own {
        (0..IDS_WRITTEN)
            .filter(|id| id % 3 == u16::from(w))
            .map(|id| {
                (
                    id,
                    seeded
                        .iter()
                        .find(|(k, _)| k.id == id)
                        .map(|(_, r)| r.clone()),
                )
            })
            .collect()
    };

    // The transition declared: three writers, the migration and a reader at once.
    let repo: Repo<T> = Repo::new(client.clone(), table.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let reading = tokio::spawn(reader(repo.clone(), history.clone(), stop.clone(), seed));
    let writers = [0, 1, 2].map(|w| {
        tokio::spawn(writer(
            repo.clone(),
            history.clone(),
            seed * 10 + u64::from(w),
            w,
            owned(w),
        ))
    });
    // Adopting: the service that wrote the legacy items keeps writing new ones its own way
    // (untagged, at the legacy key) while the adoption runs: reads must see each once it is
    // acknowledged, and a migration run after it moves it.
    let legacy_writer = matches!(before, Before::Legacy).then(|| {
        let (client, table, history) = (client.clone(), table.clone(), history.clone());
        let mut rng = fastrand::Rng::with_seed(seed * 10 + 9);
        tokio::spawn(async move {
            let mut failures = Vec::new();
            for id in IDS..IDS + LEGACY_WRITES {
                let item = super::exec::legacy_item(
                    Flavour::Tagged,
                    Phase::A3,
                    0,
                    &key(id),
                    &random_rec(&mut rng),
                );
                let w = history.put(id);
                match client
                    .put_item()
                    .table_name(&table)
                    .set_item(Some(item))
                    .send()
                    .await
                {
                    Ok(_) => w.done(),
                    Err(e) => failures.push(format!("legacy writer: put of {id}: {e:?}")),
                }
                tokio::time::sleep(Duration::from_millis(rng.u64(100..400))).await;
            }
            failures
        })
    });
    // A slow migration (a few moves a second), so that reads and writes meet it everywhere.
    // Its delete delay is above the slowest page on a loaded machine, as the README asks of
    // a migration under live readers ("a query slower than the delete delay").
    let migration = repo
        .migrate()
        .delete_delay(MIGRATION_DELETE_DELAY)
        .page_size(7)
        .concurrency(2)
        .write_units_per_second(25.0)
        .run()
        .await;
    let mut violations = Vec::new();
    for w in writers {
        violations.extend(w.await.expect("writer"));
    }
    if let Some(w) = legacy_writer {
        violations.extend(w.await.expect("legacy writer"));
    }
    stop.store(true, Ordering::SeqCst);
    let (read_violations, reads) = reading.await.expect("reader");
    violations.extend(read_violations);
    if let Err(e) = &migration {
        panic!("{name}: the migration failed: {e}");
    }
    // Whatever the writers wrote behind the migration, a second run moves; then nothing is
    // left, and the steady layout after it reads exactly what the history holds.
    repo.migrate().run().await.expect("second migration run");
    assert_eq!(repo.migration_remaining().await.unwrap(), 0, "{name}");
    let after: Repo<A> = Repo::new(client, table);
    let ids: Vec<u16> = A::query(&after, GROUP)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let expected: Vec<u16> = history.present().unwrap().into_iter().collect();
    eprintln!("concurrent model ({name}): {reads} reads checked, seed {seed}");
    assert!(
        violations.is_empty(),
        "{name}, seed {seed}: reads and writes during the migration broke the history or \
         their writers' predictions:\n{}",
        violations.join("\n")
    );
    assert_eq!(ids, expected, "{name}, seed {seed}: after the migration");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_the_migration_keep_every_stable_item_in_reads() {
    concurrent::<S3Item, T5Item, S5Item>("growing 3 -> 5", Before::Steady).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_the_migration_keep_every_stable_item_in_reads_when_shrinking() {
    concurrent::<S5Item, T3Item, S3Item>("shrinking 5 -> 3", Before::Steady).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_the_migration_keep_every_stable_item_in_reads_when_adopting() {
    concurrent::<S3Item, A3Item, S3Item>("adopting a legacy key", Before::Legacy).await;
}

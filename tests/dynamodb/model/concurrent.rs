//! The concurrent mode: while a transition is migrated, two writers and the migration runner
//! run at once, and a reader pages and queries; every answer is checked against the history
//! of the writes (`sharded_testkit::history`): each item no write touched while the read ran
//! comes exactly once, in order, and none is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sharded::{Cursor, Repo, ShardedEntity};
use sharded_testkit::history::History;

use super::layouts::tagged::{S3Item, S5Item, T5Item};
use super::layouts::ModelEntity;
use super::reference::{Key, Kind, Rec, LIVE};

const GROUP: &str = "a";
/// Ids written: more than one page of a few shards, few enough that writers meet.
const IDS: u16 = 60;
/// The writers write the first ids only: the others are stable, and must be in every read.
const IDS_WRITTEN: u16 = 20;
const WRITES_PER_WRITER: usize = 40;
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

fn rec(rng: &mut fastrand::Rng) -> Rec {
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

/// One writer's operations on the transition's layout, each recorded in `history`. Writer 0
/// uses point writes (`put`, `delete`, `update`), writer 1 batches and transactions.
async fn writer(repo: Repo<T5Item>, history: Arc<History<u16>>, seed: u64, which: u8) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..WRITES_PER_WRITER {
        let id = rng.u16(..IDS_WRITTEN);
        let item = T5Item::from_model(&key(id), &rec(&mut rng));
        match (which, rng.u8(..4)) {
            (0, 0 | 1) => {
                let w = history.put(id);
                if repo.put(&item).await.is_ok() {
                    w.done();
                }
            }
            (0, 2) => {
                let w = history.delete(id);
                if T5Item::delete(&repo, GROUP, &item.id).await.is_ok() {
                    w.done();
                }
            }
            (0, _) => {
                // Changes the content, not whether the item is there (refused when the item
                // is absent); but an update of an item not yet migrated moves it to its
                // current place first, so a read it overlaps may or may not show it.
                let w = history.touch(id);
                let f = T5Item::fields();
                let _ = T5Item::update(&repo, GROUP, &item.id)
                    .add(f.points, 1)
                    .send()
                    .await;
                // Applied or refused, whatever it moved was moved before it returned.
                w.done();
            }
            (_, 0) => {
                let other = T5Item::from_model(&key((id + 1) % IDS_WRITTEN), &rec(&mut rng));
                let (a, b) = (history.put(id), history.put((id + 1) % IDS_WRITTEN));
                if repo.batch_put([&item, &other]).await.is_ok() {
                    a.done();
                    b.done();
                }
            }
            (_, 1) => {
                let w = history.delete(id);
                if repo.batch_delete([&item]).await.is_ok() {
                    w.done();
                }
            }
            (_, 2) => {
                let w = history.delete(id);
                let tx = repo.transaction().delete(&item);
                if tx.commit().await.is_ok() {
                    w.done();
                }
            }
            (_, _) => {
                let w = history.put(id);
                let tx = repo.transaction().put(&item);
                if tx.commit().await.is_ok() {
                    w.done();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(20..200))).await;
    }
}

/// Reads until `stop`: listings paged by 1 to 5, and top-10s, each checked against the
/// history. Returns the violations and the number of reads checked.
async fn reader(
    repo: Repo<T5Item>,
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
            match T5Item::query(&repo, GROUP)
                .page(size, cursor.as_ref())
                .await
            {
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
        match T5Item::query(&repo, GROUP)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_the_migration_keep_every_stable_item_in_reads() {
    let seed = super::env::<u64>("SHARDED_MODEL_SEED").unwrap_or(7);
    let client = crate::support::client().await;
    let table = sharded_testkit::backend::unique_table_name("model-concurrent");
    S3Item::table_definition()
        .create_table(&client, &table)
        .send()
        .await
        .expect("create table");
    let history = Arc::new(History::new());
    let mut rng = fastrand::Rng::with_seed(seed);
    let steady: Repo<S3Item> = Repo::new(client.clone(), table.clone());
    let seeded: Vec<S3Item> = (0..IDS)
        .filter(|id| id % 3 != 0)
        .map(|id| S3Item::from_model(&key(id), &rec(&mut rng)))
        .collect();
    let writes: Vec<_> = seeded.iter().map(|i| history.put(id_of(i))).collect();
    steady.batch_put(&seeded).await.expect("seed the items");
    writes.into_iter().for_each(|w| w.done());

    // The transition declared: two writers, the migration and a reader at once.
    let repo: Repo<T5Item> = Repo::new(client.clone(), table.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let reading = tokio::spawn(reader(repo.clone(), history.clone(), stop.clone(), seed));
    let writers = [0, 1].map(|w| {
        tokio::spawn(writer(
            repo.clone(),
            history.clone(),
            seed * 10 + u64::from(w),
            w,
        ))
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
    for w in writers {
        w.await.expect("writer");
    }
    stop.store(true, Ordering::SeqCst);
    let (violations, reads) = reading.await.expect("reader");
    if let Err(e) = &migration {
        panic!("the migration failed: {e}");
    }
    // Whatever the writers wrote behind the migration, a second run moves; then nothing is
    // left, and the steady 5-shard layout reads exactly what the history holds.
    repo.migrate().run().await.expect("second migration run");
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    let after: Repo<S5Item> = Repo::new(client, table);
    let ids: Vec<u16> = S5Item::query(&after, GROUP)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let expected: Vec<u16> = history.present().unwrap().into_iter().collect();
    eprintln!("concurrent model: {reads} reads checked, seed {seed}");
    assert!(
        violations.is_empty(),
        "seed {seed}: reads during the migration and the writes broke the history:\n{}",
        violations.join("\n")
    );
    assert_eq!(ids, expected, "seed {seed}: after the migration");
}

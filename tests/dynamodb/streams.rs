//! The table's stream read back through `sharded::streams`: random puts, overwrites and
//! deletes of an entity beside another entity's items, a hand-written record and a sharded
//! counter; every record decoded (nothing dropped), the changes with moves ignored replayed
//! per logical key (ordered by the entity's `at` field) to exactly the table's final logical
//! content, and totals kept from the stream equal to the counter's `total()` and the item
//! count after lost, repeated and out-of-order overlapping deliveries. A reshard 4 -> 8 with
//! writes and deletes before, during and after the migration runner is the second test: its
//! moves are told apart by the markers the write paths set, so the replay and the count kept
//! from the stream still give the table's content.

// The scores' generated `fields()` (and the struct it returns) are not used here.
#![allow(dead_code)]

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue as V, StreamSpecification, StreamViewType};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::schema::CreateTable;
use sharded::streams::{
    decode, ChangeKind, Decoded, EventName, FoldError, Folded, LogicalKey, NotOursReason, Record,
    SequenceNumber, Stopped, Total,
};
use sharded::{Repo, ShardedCounter, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

use crate::support::{client, faulty_client, local, raw_put, raw_scan, RawItem};

const GAME: &str = "g1";

macro_rules! score {
    ($name:ident, $($pk:tt)*) => {
        /// A score; `at` is the test's logical clock, set on every write, by which a replay
        /// orders the changes of one logical item.
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "Score")]
        #[pk($($pk)*)]
        #[sk(template = "SCORE#{player_id}")]
        pub struct $name {
            pub game_id: String,
            pub player_id: String,
            pub points: u64,
            pub at: u64,
        }
        impl Scored for $name {
            fn new(player: &str, points: u64, at: u64) -> Self {
                $name { game_id: GAME.into(), player_id: player.into(), points, at }
            }
            fn at(&self) -> u64 { self.at }
            fn view(&self) -> (u64, u64) { (self.points, self.at) }
            async fn remove(repo: &Repo<Self>, player: &str) {
                $name::delete(repo, GAME, player).await.expect("delete");
            }
        }
    };
}

trait Scored: ShardedEntity + Clone + std::fmt::Debug {
    fn new(player: &str, points: u64, at: u64) -> Self;
    fn at(&self) -> u64;
    fn view(&self) -> (u64, u64);
    fn remove(repo: &Repo<Self>, player: &str) -> impl std::future::Future<Output = ()>;
}

score!(
    Score4,
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 4
);
score!(
    Score8,
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 8,
    previous_n = 4
);

/// Another entity of the same partitions: its records are `NotOurs`, never a score.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(template = "GAME#{game_id}", shard = "hash(badge)", n = 4)]
#[sk(template = "BADGE#{badge}")]
struct Badge {
    game_id: String,
    badge: String,
}

/// A table for `E` whose stream carries both images.
async fn table_with_stream<E: ShardedEntity>(prefix: &str) -> (Client, String) {
    let client = client().await;
    let table = unique_table_name(prefix);
    E::table_definition()
        .create_table(&client, &table)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .expect("enabled is set"),
        )
        .send()
        .await
        .expect("create table with a stream");
    (client, table)
}

/// Every record of the table's stream, shard by shard (parents first), read as `Record`s.
async fn stream_records(table: &str) -> Vec<Record> {
    let config = local().await.sdk_config().await;
    let shards = sharded_testkit::streams::read_all(&config, table)
        .await
        .expect("read the stream");
    shards
        .iter()
        .flat_map(|shard| &shard.records)
        .map(|r| Record::from_sdk(r).expect("a well-formed record"))
        .collect()
}

/// The logical content the changes give, moves ignored, each logical item's changes ordered
/// by its `at` (a delete after the write it deleted: ranked `(at, 1)`).
fn replay<E: Scored>(records: &[Record]) -> (BTreeMap<LogicalKey, (u64, u64)>, Counts) {
    let mut counts = Counts::default();
    // Per logical item: the rank of the newest change seen, and what it left.
    type Newest = ((u64, u8), Option<(u64, u64)>);
    let mut state: BTreeMap<LogicalKey, Newest> = BTreeMap::new();
    for record in records {
        let change = match decode::<E>(record) {
            Decoded::Change(change) => change,
            Decoded::NotOurs(other) => {
                match other.reason {
                    NotOursReason::OtherEntity { .. } => counts.other_entity += 1,
                    _ => counts.foreign += 1,
                }
                continue;
            }
            Decoded::NeedsImage(missing) => panic!("{missing}"),
            other => panic!("{other:?}"),
        };
        let (rank, value) = match change.kind {
            ChangeKind::Move(_) => {
                counts.moves += 1;
                continue;
            }
            ChangeKind::Insert { new } | ChangeKind::Modify { new, .. } => {
                ((new.at(), 0), Some(new.view()))
            }
            ChangeKind::Remove { old } => ((old.at(), 1), None),
            other => panic!("{other:?}"),
        };
        counts.changes += 1;
        let slot = state.entry(change.key).or_insert(((0, 0), None));
        if rank > slot.0 {
            *slot = (rank, value);
        }
    }
    let content = state
        .into_iter()
        .filter_map(|(key, (_, value))| value.map(|v| (key, v)))
        .collect();
    (content, counts)
}

#[derive(Debug, Default)]
struct Counts {
    changes: usize,
    moves: usize,
    other_entity: usize,
    foreign: usize,
}

/// The table's logical content: every score, by logical key.
async fn content<E: Scored>(client: &Client, table: &str) -> BTreeMap<LogicalKey, (u64, u64)> {
    let mut out = BTreeMap::new();
    for item in raw_scan(client, table).await {
        if item
            .get("_entity")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
            != Some("Score")
        {
            continue;
        }
        let score = E::from_item(item.clone()).expect("a score");
        let sk = item["sk"].as_s().expect("a string sort key").clone();
        let key = LogicalKey {
            pk: format!("GAME#{GAME}"),
            sk: Some(sk),
        };
        assert!(out.insert(key, score.view()).is_none(), "one copy per item");
    }
    out
}

/// Random puts (new players and overwrites) and deletes of `E`, each stamped with the next
/// `at`; returns the next `at`.
async fn random_writes<E: Scored>(
    repo: &Repo<E>,
    rng: &mut fastrand::Rng,
    mut at: u64,
    n: usize,
) -> u64 {
    for _ in 0..n {
        at += 1;
        let player = format!("p{:02}", rng.u32(0..24));
        if rng.u8(0..4) == 0 {
            E::remove(repo, &player).await;
        } else {
            repo.put(&E::new(&player, rng.u64(0..1000), at))
                .await
                .expect("put");
        }
    }
    at
}

/// Folds `records` into `total` in deliveries of `size`, as a stream consumer meets them:
/// every third delivery is lost after part of it was applied and delivered again, every
/// fourth is delivered twice, and every fifth is followed by an earlier, overlapping one.
/// Returns what the repeated deliveries did (each must add nothing).
async fn deliver<F, Fut>(records: &[Record], size: usize, fold: F) -> Vec<Folded>
where
    F: Fn(Vec<Record>) -> Fut,
    Fut: std::future::Future<Output = Result<Folded, Stopped>>,
{
    let mut repeats = Vec::new();
    let mut start = 0;
    let mut delivery = 0;
    while start < records.len() {
        let end = (start + size).min(records.len());
        let batch = records[start..end].to_vec();
        delivery += 1;
        if delivery % 3 == 0 {
            // Lost: the consumer applied a part and stopped before acknowledging.
            let part = batch.len() / 2;
            fold(batch[..part].to_vec()).await.expect("a part applied");
        }
        fold(batch.clone()).await.expect("the delivery applied");
        if delivery % 4 == 0 {
            repeats.push(fold(batch.clone()).await.expect("delivered twice"));
        }
        if delivery % 5 == 0 && start >= size / 2 {
            let earlier = records[start - size / 2..end - size / 2].to_vec();
            repeats.push(
                fold(earlier)
                    .await
                    .expect("an earlier overlapping delivery"),
            );
        }
        start = end;
    }
    repeats
}

/// Folds `batch` into `total`, delivering it again from the record a lost answer stopped
/// it at, until it is through: what a consumer does with [`Stopped`].
async fn fold_through_lost_answers(
    total: &Total,
    votes: &ShardedCounter,
    batch: &[Record],
) -> Folded {
    let mut from = 0;
    let mut folded = Folded::default();
    loop {
        match total.fold_counter(votes, &batch[from..]).await {
            Ok(rest) => {
                folded.applied += rest.applied;
                folded.repeated += rest.repeated;
                return folded;
            }
            Err(stopped) => {
                assert!(matches!(stopped.error, FoldError::Dynamo(_)), "{stopped}");
                folded.applied += stopped.applied;
                folded.repeated += stopped.repeated;
                from += stopped.index;
            }
        }
    }
}

fn total_key() -> RawItem {
    RawItem::from([
        ("pk".to_string(), V::S("TOTAL#votes".into())),
        ("sk".to_string(), V::S("TOTAL".into())),
    ])
}

#[tokio::test]
async fn the_stream_replays_to_the_tables_content_and_keeps_totals_exactly_once() {
    let (client, table) = table_with_stream::<Score4>("streams").await;
    let repo: Repo<Score4> = Repo::new(client.clone(), &table);
    let mut rng = fastrand::Rng::with_seed(26);
    let votes = ShardedCounter::new(
        client.clone(),
        &table,
        &Score4::table_definition(),
        "VOTES#a",
        4,
    )
    .expect("a counter");

    let mut at = random_writes(&repo, &mut rng, 0, 60).await;
    for _ in 0..40 {
        // Never 0: an update that leaves the item as it was writes no stream record.
        let by = [-2, -1, 1, 2, 3, 5][rng.usize(0..6)];
        votes.increment(by).await.expect("increment");
    }
    Repo::<Badge>::new(client.clone(), &table)
        .put(&Badge {
            game_id: GAME.into(),
            badge: "gold".into(),
        })
        .await
        .expect("another entity's item");
    raw_put(
        &client,
        &table,
        RawItem::from([
            ("pk".to_string(), V::S(format!("GAME#{GAME}#1"))),
            ("sk".to_string(), V::S("LEGACY#x".into())),
        ]),
    )
    .await;
    at = random_writes(&repo, &mut rng, at, 30).await;
    let _ = at;

    let records = stream_records(&table).await;
    let (replayed, counts) = replay::<Score4>(&records);
    assert_eq!(replayed, content::<Score4>(&client, &table).await);
    assert!(!replayed.is_empty());
    assert_eq!(counts.moves, 0, "no layout changed");
    // 40 increments on the counter's rows, the badge: records of other entities.
    assert_eq!(counts.other_entity, 41, "{counts:?}");
    assert_eq!(counts.foreign, 1, "the hand-written record: {counts:?}");
    assert_eq!(
        counts.changes + counts.other_entity + counts.foreign,
        records.len()
    );

    // The vote total, kept from the stream through a client that loses a fifth of the
    // answers of its updates: the update is applied, the fold stops there, and the delivery
    // goes on from that record (found applied: a repeat, not a second add).
    let faults = Faults::new();
    faults.drop_response_rate("UpdateItem", 0.2);
    let total =
        Total::new(faulty_client(&faults, 1).await, &table, total_key()).with_attribute("votes");
    let repeats = deliver(&records, 7, |batch| {
        let (total, votes) = (&total, &votes);
        async move { Ok(fold_through_lost_answers(total, votes, &batch).await) }
    })
    .await;
    assert!(faults.injected("UpdateItem") > 0, "some answers were lost");
    assert!(repeats.iter().all(|f| f.applied == 0), "{repeats:?}");
    assert!(
        repeats.iter().any(|f| f.repeated > 0),
        "some repeat met counter records"
    );
    let reader = Total::new(client.clone(), &table, total_key()).with_attribute("votes");
    let kept = reader.get().await.expect("the total");
    assert_eq!(kept, votes.total().await.expect("total()"));

    // The whole stream delivered again adds nothing.
    let again = fold_through_lost_answers(&total, &votes, &records).await;
    assert_eq!(again.applied, 0, "{again:?}");
    assert_eq!(reader.get().await.expect("the total"), kept);

    // A record of a counter row without its images (a KEYS_ONLY stream) stops the fold at
    // itself, saying which view type is needed; nothing of it is added.
    let row = records
        .iter()
        .find(|r| {
            r.keys
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .is_some_and(|pk| pk.starts_with("VOTES#a#"))
        })
        .expect("a record of the counter");
    let keys_only = Record::new(row.event, row.sequence_number.clone(), row.keys.clone())
        .with_view_type("KEYS_ONLY");
    let stopped = total
        .fold_counter(&votes, &[keys_only])
        .await
        .expect_err("no image to count");
    assert_eq!(stopped.index, 0);
    assert!(
        stopped.to_string().contains("NEW_AND_OLD_IMAGES"),
        "{stopped}"
    );
    assert_eq!(reader.get().await.expect("the total"), kept);

    // The number of scores, kept from the same stream.
    let count_key = RawItem::from([
        ("pk".to_string(), V::S("TOTAL#scores".into())),
        ("sk".to_string(), V::S("TOTAL".into())),
    ]);
    let scores = Total::new(client.clone(), &table, count_key);
    deliver(&records, 6, |batch| {
        let scores = &scores;
        async move { scores.fold_count::<Score4>(&batch).await }
    })
    .await;
    assert_eq!(
        scores.get().await.expect("the count") as usize,
        replayed.len()
    );
}

#[tokio::test]
async fn a_reshard_in_the_stream_is_moves_and_the_replay_still_gives_the_content() {
    let (client, table) = table_with_stream::<Score4>("streams_reshard").await;
    let before: Repo<Score4> = Repo::new(client.clone(), &table);
    let mut rng = fastrand::Rng::with_seed(48);
    let at = random_writes(&before, &mut rng, 0, 50).await;

    // 4 -> 8: the transition declared, the runner moves every item, then more writes.
    let after: Repo<Score8> = Repo::new(client.clone(), &table);
    let at = random_writes(&after, &mut rng, at, 10).await;
    use sharded::migrate::Migrate;
    let report = after.migrate().run().await.expect("the migration");
    assert!(report.progress.moved > 0, "{report:?}");
    random_writes(&after, &mut rng, at, 20).await;

    let records = stream_records(&table).await;
    let (replayed, counts) = replay::<Score8>(&records);
    assert!(
        counts.moves > 0,
        "the reshard's moves are told apart: {counts:?}"
    );
    assert_eq!(replayed, content::<Score8>(&client, &table).await);
    // Counted from the stream, moves add nothing: the count is the content's.
    let count_key = RawItem::from([
        ("pk".to_string(), V::S("TOTAL#reshard".into())),
        ("sk".to_string(), V::S("SCORES".into())),
    ]);
    let scores = Total::new(client.clone(), &table, count_key);
    deliver(&records, 7, |batch| {
        let scores = &scores;
        async move { scores.fold_count::<Score8>(&batch).await }
    })
    .await;
    assert_eq!(
        scores.get().await.expect("the count") as usize,
        replayed.len()
    );
}

/// An item tagged as the entity counted whose image does not decode as it (written by another
/// version of the entity: a field missing) stops the count at its record: +1 on its insert
/// and nothing on its remove would leave the total wrong for good.
#[tokio::test]
async fn a_count_stops_at_an_item_of_the_entity_it_cannot_read() {
    let (client, table) = table_with_stream::<Score4>("streams_undecodable").await;
    let mut item = Score4::new("p1", 5, 1).to_item().expect("an item");
    let good = Record::new(
        EventName::Insert,
        SequenceNumber::parse("10").unwrap(),
        item.clone(),
    )
    .with_images(None, Some(item.clone()));
    item.remove("points");
    let older = Record::new(
        EventName::Insert,
        SequenceNumber::parse("11").unwrap(),
        item.clone(),
    )
    .with_images(None, Some(item));
    let count_key = RawItem::from([
        ("pk".to_string(), V::S("TOTAL#undecodable".into())),
        ("sk".to_string(), V::S("TOTAL".into())),
    ]);
    let scores = Total::new(client.clone(), &table, count_key);
    let stopped = scores
        .fold_count::<Score4>(&[good, older])
        .await
        .expect_err("the count stops");
    assert_eq!((stopped.applied, stopped.index), (1, 1));
    assert!(
        matches!(&stopped.error, FoldError::Undecodable { reason, .. } if reason.contains("points")),
        "{stopped}"
    );
    assert_eq!(
        scores.get().await.expect("the count"),
        1,
        "the first counted"
    );
}

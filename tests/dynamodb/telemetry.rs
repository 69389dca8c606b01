//! Telemetry: the spans (OpenTelemetry's DynamoDB attributes, one span per logical operation
//! with a child per physical request) and the metrics a repository emits, captured by a
//! `tracing-subscriber` layer and metrics-util's `DebuggingRecorder` while a query, a cursor
//! page, a batch, a transaction, a counter, a migration and a throttled write run against
//! DynamoDB Local. The fault-injecting HTTP client counts the requests really sent, so the
//! test can tell that every one of them was seen (the interceptor and the test kit's HTTP
//! wrapper compose).
//!
//! The subscriber and recorder are scoped to this thread (`set_default`,
//! `with_local_recorder`), and everything runs on a current-thread runtime on it, spawned
//! shard requests included: other tests running meanwhile are not captured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::migrate::Migrate;
use sharded::telemetry as t;
use sharded::{Repo, ShardedCounter, ShardedEntity};
use sharded_testkit::faults::{Faults, Throttle};
use sharded_testkit::local::unique_table_name;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::entities::{score, Score};
use crate::support::faulty_client;

/// A span as the capture saw it: name, parent (an index into the capture), fields.
#[derive(Debug, Clone)]
struct Captured {
    name: &'static str,
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

/// The capture's index of a live span (ids are reused once a span closes; indexes are not).
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push(Captured {
            name: attrs.metadata().name(),
            parent,
            fields,
        });
        span.extensions_mut().insert(Index(spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is registered");
        let Some(index) = span.extensions().get::<Index>().map(|i| i.0) else {
            return;
        };
        values.record(&mut Fields(&mut self.0.lock().unwrap()[index].fields));
    }
}

/// A sharded counter's entity-less table shares `Score`'s key schema.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Tally")]
#[pk(template = "TALLY#{k}", shard = "hash(id)", n = 2)]
#[sk(template = "ID#{id}")]
struct TallyV1 {
    k: String,
    id: String,
}

/// The same stored entity, grown to 4 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Tally")]
#[pk(template = "TALLY#{k}", shard = "hash(id)", n = 4, previous_n = 2)]
#[sk(template = "ID#{id}")]
struct TallyV2 {
    k: String,
    id: String,
}

/// Every metric of a snapshot: (name, labels) -> value.
type Metrics = Vec<(String, BTreeMap<String, String>, DebugValue)>;

fn samples<'a>(
    metrics: &'a Metrics,
    name: &str,
) -> impl Iterator<Item = &'a (String, BTreeMap<String, String>, DebugValue)> {
    let name = name.to_owned();
    metrics.iter().filter(move |(n, _, _)| *n == name)
}

fn histogram_len(value: &DebugValue) -> usize {
    match value {
        DebugValue::Histogram(values) => values.len(),
        other => panic!("a histogram, not {other:?}"),
    }
}

fn counter(value: &DebugValue) -> u64 {
    match value {
        DebugValue::Counter(n) => *n,
        other => panic!("a counter, not {other:?}"),
    }
}

#[test]
fn spans_and_metrics_cover_every_request() {
    // `tracing` caches each callsite's interest. With a single scoped dispatcher registered
    // in the process, a callsite first reached on another thread (another test, no
    // subscriber) is cached from that thread's default alone, as "never", and this thread's
    // subscriber would not see it. A second registered dispatcher makes every cache
    // computation consult all of them (tracing-core's `Dispatchers::has_just_one`).
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let faults = Faults::new();
    let (resume_requests, moved) =
        metrics::with_local_recorder(&recorder, || runtime.block_on(run_operations(&faults)));
    let metrics: Metrics = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            (key.name().to_owned(), labels, value)
        })
        .collect();
    let spans = capture.0.lock().unwrap().clone();
    let requests: Vec<(usize, &Captured)> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == t::REQUEST_SPAN)
        .collect();
    let op = |s: &Captured| {
        s.fields
            .get(t::DB_OPERATION_NAME)
            .cloned()
            .unwrap_or_default()
    };

    // Every request span: the OpenTelemetry system, its operation, and its table.
    for (_, span) in &requests {
        assert_eq!(
            span.fields[t::DB_SYSTEM_NAME],
            t::DB_SYSTEM_NAME_VALUE,
            "{span:?}"
        );
        assert!(!op(span).is_empty(), "{span:?}");
        assert!(
            span.fields[t::TABLE_NAMES].starts_with("telemetry"),
            "{span:?}"
        );
    }

    // One request span per request the HTTP client saw (no SDK retries: one attempt each),
    // and one duration sample per request span, per operation: whatever sent it (the
    // counter, the migration's moves) went through the one interceptor.
    let mut by_operation: BTreeMap<String, u64> = BTreeMap::new();
    for (_, span) in &requests {
        let attempts: u64 = span.fields[t::ATTEMPTS].parse().unwrap();
        *by_operation.entry(op(span)).or_default() += attempts;
    }
    for (operation, attempts) in &by_operation {
        assert_eq!(
            *attempts,
            faults.requests(operation),
            "{operation}: attempts vs HTTP requests"
        );
        let samples: usize = samples(&metrics, t::OPERATION_DURATION)
            .filter(|(_, labels, _)| labels[t::DB_OPERATION_NAME] == *operation)
            .map(|(_, labels, value)| {
                assert_eq!(labels[t::DB_SYSTEM_NAME], t::DB_SYSTEM_NAME_VALUE);
                histogram_len(value)
            })
            .sum();
        let spans = requests.iter().filter(|(_, s)| op(s) == *operation).count();
        assert_eq!(
            samples, spans,
            "{operation}: duration samples vs request spans"
        );
    }
    for operation in [
        "CreateTable",
        "PutItem",
        "Query",
        "BatchWriteItem",
        "TransactWriteItems",
        "Scan",
    ] {
        assert!(
            by_operation.contains_key(operation),
            "no {operation} seen: {by_operation:?}"
        );
    }

    // The counter's increment, sent outside any logical operation: still a request span (with
    // no `sharded.*` span above it, only the SDK's own when those are enabled), still counted
    // above.
    let logical_parent = |mut at: Option<usize>| {
        while let Some(i) = at {
            if spans[i].name.starts_with("sharded.") {
                return Some(spans[i].name);
            }
            at = spans[i].parent;
        }
        None
    };
    assert!(
        requests
            .iter()
            .any(|(_, s)| logical_parent(s.parent).is_none() && op(s) == "TransactWriteItems"),
        "the counter's request"
    );

    // The top-5 query: one `sharded.query` span whose children are its shard requests, one
    // per shard at least, every shard of 10, with the query's attributes.
    let queries: Vec<(usize, &Captured)> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == t::QUERY_SPAN && s.fields[t::RESUMED] == "false")
        .collect();
    let (query_at, query) = queries[0];
    assert_eq!(query.fields[t::SHARD_COUNT], "10");
    assert_eq!(query.fields[t::ENTITY], "Score");
    assert_eq!(query.fields[t::LIMIT], "5");
    assert_eq!(query.fields[t::SCAN_FORWARD], "false");
    assert_eq!(query.fields[t::ITEMS_EMITTED], "5");
    let children: Vec<&Captured> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(query_at))
        .map(|(_, s)| *s)
        .collect();
    let shards: BTreeSet<u32> = children
        .iter()
        .map(|s| s.fields[t::SHARD].parse().unwrap())
        .collect();
    assert_eq!(shards, (0..10).collect(), "a child per shard");
    let read: u64 = children
        .iter()
        .map(|s| s.fields[t::COUNT].parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        query.fields[t::ITEMS_READ],
        read.to_string(),
        "items read = the shards' counts"
    );
    for child in &children {
        assert_eq!(op(child), "Query");
        assert_eq!(child.fields[t::SCAN_FORWARD], "false");
        assert!(child.fields[t::LIMIT].parse::<u32>().unwrap() >= 1);
        assert!(
            child.fields[t::CONSUMED_CAPACITY].parse::<f64>().unwrap() > 0.0,
            "stats ask for capacity"
        );
        assert!(!child.fields.contains_key(t::ERROR_TYPE));
    }
    let width: Vec<usize> = samples(&metrics, t::FAN_OUT_WIDTH)
        .filter(|(_, labels, _)| labels[t::ENTITY] == "Score")
        .map(|(_, _, v)| histogram_len(v))
        .collect();
    assert_eq!(
        width.iter().sum::<usize>(),
        3,
        "three scatter-gathers of Score: {width:?}"
    );
    let waste: u64 = samples(&metrics, t::MERGE_WASTE)
        .filter(|(_, labels, _)| labels[t::ENTITY] == "Score")
        .map(|(_, _, v)| counter(v))
        .sum();
    let wasted_by_spans: u64 = spans
        .iter()
        .filter(|s| s.name == t::QUERY_SPAN)
        .map(|s| {
            s.fields[t::ITEMS_READ].parse::<u64>().unwrap()
                - s.fields[t::ITEMS_EMITTED].parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(
        waste, wasted_by_spans,
        "merge waste = items read - items emitted"
    );

    // The page resumed from a cursor: its span says so, and the resume cost is its requests.
    let resumed: Vec<&Captured> = spans
        .iter()
        .filter(|s| s.name == t::QUERY_SPAN && s.fields[t::RESUMED] == "true")
        .collect();
    assert_eq!(resumed.len(), 1);
    let resume: Vec<&DebugValue> = samples(&metrics, t::CURSOR_RESUME_REQUESTS)
        .map(|(_, _, v)| v)
        .collect();
    assert_eq!(resume.len(), 1);
    match resume[0] {
        DebugValue::Histogram(values) => {
            assert_eq!(
                values.iter().map(|v| v.0).collect::<Vec<_>>(),
                [resume_requests as f64]
            )
        }
        other => panic!("{other:?}"),
    }

    // The put: an item span with the logical key and the shard, its PutItem below it.
    let (put_at, put) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == t::ITEM_SPAN && s.fields[t::OPERATION] == "put")
        .expect("a put span");
    assert_eq!(put.fields[t::LOGICAL_KEY], "GAME#g1");
    let shard = Score::shard_for("solo").unwrap();
    assert_eq!(put.fields[t::SHARD], shard.to_string());
    assert_eq!(put.fields[t::SHARD_COUNT], "10");
    let below: Vec<(String, String)> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(put_at))
        .map(|(_, s)| (op(s), s.fields[t::SHARD].clone()))
        .collect();
    assert_eq!(below, [("PutItem".to_owned(), shard.to_string())]);

    // The scan: one span, a child request per segment (at least), each naming its segment.
    let (scan_at, _) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == t::SCAN_SPAN && s.fields[t::TOTAL_SEGMENTS] == "3")
        .expect("a scan span");
    let segments: BTreeSet<(String, String, String)> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(scan_at))
        .map(|(_, s)| {
            (
                op(s),
                s.fields[t::SEGMENT].clone(),
                s.fields[t::TOTAL_SEGMENTS].clone(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String, String)> = (0..3)
        .map(|i| ("Scan".to_owned(), i.to_string(), "3".to_owned()))
        .collect();
    assert_eq!(segments, expected);

    // The batch: one span, its two BatchWriteItem requests (30 items, 25 per request) below it.
    let (batch_at, _) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == t::BATCH_WRITE_SPAN)
        .expect("a batch span");
    let batch_children: Vec<String> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(batch_at))
        .map(|(_, s)| op(s))
        .collect();
    assert_eq!(batch_children, ["BatchWriteItem", "BatchWriteItem"]);

    // The transaction: one span, its TransactWriteItems below it.
    let (transaction_at, _) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == t::TRANSACTION_SPAN)
        .expect("a transaction span");
    let below: Vec<String> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(transaction_at))
        .map(|(_, s)| op(s))
        .collect();
    assert_eq!(below, ["TransactWriteItems"]);

    // The migration: its span holds its reads and moves; its progress is counted.
    let (migration_at, _) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == t::MIGRATION_SPAN)
        .expect("a migration span");
    let below: BTreeSet<String> = requests
        .iter()
        .filter(|(_, s)| s.parent == Some(migration_at))
        .map(|(_, s)| op(s))
        .collect();
    assert!(
        below.len() >= 2,
        "reads and moves under the migration: {below:?}"
    );
    let moved_metric: u64 = samples(&metrics, t::MIGRATION_ITEMS)
        .filter(|(_, labels, _)| labels[t::OUTCOME] == "moved" && labels[t::ENTITY] == "Tally")
        .map(|(_, _, v)| counter(v))
        .sum();
    assert!(moved > 0);
    assert_eq!(
        moved_metric, moved,
        "the migration metric counts what the report says moved"
    );

    // The throttled write: its span's error type and reason, the throttle counter by reason,
    // a failed duration sample, and (stats on) the throttle on the logical key.
    let throttled: Vec<&Captured> = requests
        .iter()
        .map(|(_, s)| *s)
        .filter(|s| s.fields.contains_key(t::ERROR_TYPE))
        .collect();
    assert_eq!(throttled.len(), 1, "{throttled:?}");
    assert_eq!(
        throttled[0].fields[t::ERROR_TYPE],
        "ProvisionedThroughputExceededException"
    );
    assert_eq!(
        throttled[0].fields[t::THROTTLING_REASON],
        "TableWriteKeyRangeThroughputExceeded"
    );
    let throttles: Vec<(&BTreeMap<String, String>, u64)> = samples(&metrics, t::THROTTLES)
        .map(|(_, labels, v)| (labels, counter(v)))
        .collect();
    assert_eq!(throttles.len(), 1);
    assert_eq!(
        throttles[0].0[t::THROTTLING_REASON],
        "TableWriteKeyRangeThroughputExceeded"
    );
    assert_eq!(
        (
            throttles[0].0[t::DB_OPERATION_NAME].as_str(),
            throttles[0].1
        ),
        ("PutItem", 1)
    );
    let failed: Vec<&BTreeMap<String, String>> = samples(&metrics, t::OPERATION_DURATION)
        .filter(|(_, labels, _)| labels.contains_key(t::ERROR_TYPE))
        .map(|(_, labels, _)| labels)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0][t::ERROR_TYPE],
        "ProvisionedThroughputExceededException"
    );
    let key_throttles: Vec<&BTreeMap<String, String>> = samples(&metrics, t::KEY_THROTTLES)
        .map(|(_, labels, _)| labels)
        .collect();
    assert_eq!(key_throttles.len(), 1);
    assert_eq!(
        key_throttles[0][t::LOGICAL_KEY],
        "GAME#hot",
        "the shard suffix stripped"
    );

    // Per logical key (stats on): one series per logical key, however many shards.
    let keys: BTreeSet<(String, String)> = samples(&metrics, t::KEY_UNITS)
        .map(|(_, labels, _)| (labels[t::LOGICAL_KEY].clone(), labels[t::ACCESS].clone()))
        .collect();
    assert!(
        keys.contains(&("GAME#g1".to_owned(), "write".to_owned())),
        "{keys:?}"
    );
    assert!(
        keys.contains(&("GAME#g1".to_owned(), "read".to_owned())),
        "{keys:?}"
    );
    assert!(
        keys.iter().all(|(key, _)| !key.contains("GAME#g1#")),
        "{keys:?}"
    );
}

/// Runs the operations the test checks; returns the Query requests of the resumed page and
/// the items the migration moved.
async fn run_operations(faults: &Faults) -> (u64, u64) {
    let client = faulty_client(faults, 1).await;
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(60)));
    let repo: Repo<Score> =
        Repo::new(client.clone(), unique_table_name("telemetry")).with_stats(stats);
    repo.create_table().await.unwrap();

    // A batch of 30 (two requests), a put, a transaction.
    let scores: Vec<Score> = (0..30).map(|i| score("g1", &format!("p{i}"), i)).collect();
    repo.batch_put(&scores).await.unwrap();
    repo.put(&score("g1", "solo", 99)).await.unwrap();
    repo.transaction()
        .put(&score("g1", "tx", 7))
        .commit()
        .await
        .unwrap();

    // A top-5 query, then two pages of 4 (the second resumed from the first's cursor).
    let top = Score::query(&repo, "g1")
        .descending()
        .limit(5)
        .collect()
        .await
        .unwrap();
    assert_eq!(top.len(), 5);
    let first = Score::query(&repo, "g1").page(4, None).await.unwrap();
    let before = faults.requests("Query");
    Score::query(&repo, "g1")
        .page(4, first.cursor.as_ref())
        .await
        .unwrap();
    let resume_requests = faults.requests("Query") - before;

    // A parallel scan's count.
    assert_eq!(repo.scan().segments(3).count().await.unwrap(), 32);

    // A counter, built on its own from the client: its requests are covered too.
    let votes = ShardedCounter::new(
        client.clone(),
        repo.table(),
        &Score::table_definition(),
        "VOTES#x",
        4,
    )
    .unwrap();
    votes.increment(1).await.unwrap();

    // A migration 2 -> 4 shards of another entity in the same table.
    let v1: Repo<TallyV1> = Repo::new(client.clone(), repo.table());
    let tallies: Vec<TallyV1> = (0..12)
        .map(|i| TallyV1 {
            k: "a".into(),
            id: format!("i{i}"),
        })
        .collect();
    v1.batch_put(&tallies).await.unwrap();
    let v2: Repo<TallyV2> = Repo::new(client.clone(), repo.table());
    let report = v2
        .migrate()
        .delete_delay(Duration::ZERO)
        .run()
        .await
        .unwrap();

    // A throttled write (the hot key's shard answers with a reason).
    let hot = score("hot", "p1", 1);
    let pk = Score::pk("hot", "p1").unwrap();
    faults.throttle_partition_because(pk, Throttle::table("TableWriteKeyRangeThroughputExceeded"));
    assert!(repo.put(&hot).await.is_err());
    faults.clear();
    (resume_requests, report.progress.moved)
}

/// A comment's likes: an entity with a field outside its keys, so it can be updated.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "POST#{post}", shard = "hash(id)", n = 4)]
#[sk(template = "LIKES#{id}")]
struct Likes {
    post: String,
    id: String,
    likes: i64,
}

/// The hot-key statistics hold every write of the repository on its partition, whatever
/// the request: a put, a conditional put, an update (the vote-counter pattern's hot key is
/// all updates), a delete, a conditional delete, a batch's deletes, a transaction.
#[tokio::test]
async fn the_hot_key_statistics_hold_every_write_of_the_repository() {
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(600)));
    let repo: Repo<Likes> = Repo::new(
        crate::support::client().await,
        unique_table_name("stats-writes"),
    )
    .with_stats(stats.clone());
    repo.create_table().await.unwrap();
    let likes = |n| Likes {
        post: "p1".into(),
        id: "c1".into(),
        likes: n,
    };
    let pk = Likes::pk("p1", "c1").unwrap();
    let units = || -> f64 {
        stats
            .report()
            .keys
            .iter()
            .filter(|k| k.index.is_none() && k.key == pk)
            .map(|k| k.write_units)
            .sum()
    };
    let f = Likes::fields();
    let mut last = 0.0;
    let mut grew = |what: &str| {
        let now = units();
        assert!(
            now > last,
            "{what}: the write units of {pk} went from {last} to {now}"
        );
        last = now;
    };
    repo.put(&likes(1)).await.unwrap();
    grew("put");
    repo.put_if(&likes(2), f.likes.eq(1)).await.unwrap();
    grew("put_if");
    Likes::update(&repo, "p1", "c1")
        .add(f.likes, 1)
        .send()
        .await
        .unwrap();
    grew("update");
    repo.transaction()
        .update(Likes::update(&repo, "p1", "c1").add(f.likes, 1))
        .commit()
        .await
        .unwrap();
    grew("transaction");
    repo.delete_if(&likes(4), f.likes.eq(4)).await.unwrap();
    grew("delete_if");
    repo.put(&likes(1)).await.unwrap();
    grew("put again");
    Likes::delete(&repo, "p1", "c1").await.unwrap();
    grew("delete");
    repo.batch_put(&[likes(1)]).await.unwrap();
    grew("batch_put");
    repo.batch_delete(&[likes(1)]).await.unwrap();
    grew("batch_delete");
}

/// During a layout transition, an unversioned put is the put and the previous place's check
/// in one transaction: the statistics hold it once, at a transaction's units (twice a plain
/// write's), not once for the transaction and again for the put.
#[tokio::test]
async fn the_hot_key_statistics_hold_a_put_of_a_transition_once() {
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(600)));
    let repo: Repo<TallyV2> = Repo::new(
        crate::support::client().await,
        unique_table_name("stats-transition"),
    )
    .with_stats(stats.clone());
    repo.create_table().await.unwrap();
    // An id whose shard under the previous layout (2 shards) is another key than under the
    // current one (4): its put carries the previous place's delete.
    let (id, pk, previous) = (0..64)
        .map(|n| format!("voter-{n}"))
        .find_map(|id| {
            let pk = TallyV2::pk("k1", &id).unwrap();
            let previous = TallyV2::pk_previous("k1", &id).unwrap()?;
            (previous != pk).then_some((id, pk, previous))
        })
        .expect("one of 64 ids moves between 2 and 4 shards");
    repo.put(&TallyV2 {
        k: "k1".into(),
        id: id.clone(),
    })
    .await
    .unwrap();
    let report = stats.report();
    let units = |key: &str| -> f64 {
        (report.keys.iter())
            .filter(|k| k.index.is_none() && k.key == key)
            .map(|k| k.write_units)
            .sum()
    };
    // A small item: 1 write unit, 2 in a transaction; the check that the previous place is
    // empty is charged as a write of it too.
    assert_eq!(units(&pk), 2.0, "the put of {id} at {pk}: {report}");
    assert_eq!(units(&previous), 2.0, "the check at {previous}: {report}");
}

//! Time-bucketed partition keys (`{at:day}`) and their range queries, against a brute-force
//! answer: every range across bucket edges, empty buckets, both orders, page sizes 1, 7 and
//! 100, limits, counts per bucket; `DateTime<Utc>`, epoch seconds (`i64`) and `NaiveDate`.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use sharded::{
    bucket::Bucket, bucket::Granularity, cursor::CursorError, query::RangeQuery, Cursor, Error,
    Repo, ShardedEntity,
};
use sharded_testkit::faults::Faults;

use crate::support::{faulty, repo};

/// The ops log of the user story: day buckets over 4 random shards, and a GSI by agent in
/// month buckets.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
#[sk(template = "{at}#{id}")]
#[gsi1(pk = "AGENT#{agent}#{at:month}", sk = "{at}#{id}", shard = 2)]
pub struct OpsEntry {
    pub at: DateTime<Utc>,
    pub id: String,
    pub agent: String,
}

/// Epoch seconds in hour buckets, hash-sharded, the time ending the sort key (so `BETWEEN`
/// alone would include an item at exactly `to`).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "EV#{stream}#{ts:hour}",
    shard = "hash(id)",
    n = 3,
    query = "events"
)]
#[sk(template = "T#{ts}")]
pub struct EpochEvent {
    pub stream: String,
    pub ts: i64,
    pub id: String,
}

/// Dates in day buckets.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "SALES#{day:day}", shard = "random", n = 2)]
#[sk(template = "{day}#{id}")]
pub struct Sale {
    pub day: NaiveDate,
    pub id: String,
}

fn t(day: u32, hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, minute, second)
        .single()
        .expect("a valid time")
}

/// Items over 2026-11-20 .. 11-29, with 11-24 and 11-25 empty, items exactly at midnights,
/// and one half a second after midnight.
fn ops_log() -> Vec<OpsEntry> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut items = Vec::new();
    for day in (20..30).filter(|d| *d != 24 && *d != 25) {
        for i in 0..25 {
            let at = t(day, rng.u32(0..24), rng.u32(0..60), rng.u32(0..60));
            items.push(OpsEntry {
                at,
                id: format!("e{day}-{i:02}"),
                agent: ["scanner", "classifier"][i % 2].to_owned(),
            });
        }
        items.push(OpsEntry {
            at: t(day, 0, 0, 0),
            id: format!("midnight-{day}"),
            agent: "scanner".to_owned(),
        });
    }
    items.push(OpsEntry {
        at: t(27, 0, 0, 0) + chrono::Duration::milliseconds(500),
        id: "half-second".to_owned(),
        agent: "scanner".to_owned(),
    });
    items
}

/// The answer by brute force: the items with `from <= at < to`, in sort-key order.
fn expected(
    items: &[OpsEntry],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    desc: bool,
) -> Vec<OpsEntry> {
    let mut out: Vec<OpsEntry> = items
        .iter()
        .filter(|e| from <= e.at && e.at < to)
        .cloned()
        .collect();
    out.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    if desc {
        out.reverse();
    }
    out
}

/// Every page of `query()`, paged by `size` (each page at most `size` items, checked).
async fn pages<E: ShardedEntity>(query: impl Fn() -> RangeQuery<E>, size: usize) -> Vec<E> {
    let mut all = Vec::new();
    let mut cursor: Option<Cursor> = None;
    for _ in 0..100_000 {
        let page = query().page(size, cursor.as_ref()).await.unwrap();
        assert!(
            page.items.len() <= size,
            "{} items, asked for {size}",
            page.items.len()
        );
        all.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
    panic!("paging never ended");
}

/// Ranges across bucket edges: inside one day, over an empty day, starting and ending on a
/// midnight (where items are), the whole log, an empty range, and the half second after a
/// midnight.
fn ranges() -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    vec![
        (t(21, 6, 0, 0), t(21, 18, 0, 0)),
        (t(21, 12, 0, 0), t(23, 12, 0, 0)),
        (t(22, 0, 0, 0), t(26, 0, 0, 0)),
        (t(23, 13, 30, 0), t(26, 0, 0, 1)),
        (t(24, 0, 0, 0), t(26, 0, 0, 0)),
        (t(19, 0, 0, 0), t(30, 0, 0, 0)),
        (t(22, 5, 0, 0), t(22, 5, 0, 0)),
        (
            t(26, 23, 0, 0),
            t(27, 0, 0, 0) + chrono::Duration::milliseconds(700),
        ),
        (
            t(26, 23, 0, 0),
            t(27, 0, 0, 0) + chrono::Duration::milliseconds(500),
        ),
    ]
}

#[tokio::test]
async fn range_queries_match_brute_force_across_bucket_edges() {
    let repo = repo::<OpsEntry>("bucket-ops").await;
    let items = ops_log();
    repo.batch_put(&items).await.unwrap();
    for (from, to) in ranges() {
        for desc in [false, true] {
            let want = expected(&items, from, to, desc);
            let q = || {
                let q = OpsEntry::query_range(&repo, &from, &to);
                if desc {
                    q.descending()
                } else {
                    q
                }
            };
            let what = format!("[{from}, {to}) desc={desc}");
            assert_eq!(q().collect().await.unwrap(), want, "collect {what}");
            for size in [1, 7, 100] {
                assert_eq!(pages(q, size).await, want, "pages of {size}, {what}");
            }
            for limit in [1, 5, 30] {
                let got = q().limit(limit).collect().await.unwrap();
                assert_eq!(got, want[..limit.min(want.len())], "limit {limit}, {what}");
            }
            use futures::TryStreamExt;
            let streamed: Vec<OpsEntry> = q().stream().try_collect().await.unwrap();
            assert_eq!(streamed, want, "stream {what}");
            assert_eq!(
                q().count().await.unwrap(),
                want.len() as u64,
                "count {what}"
            );
        }
    }
}

#[tokio::test]
async fn counts_by_bucket_list_every_bucket_of_the_range_empty_ones_too() {
    let repo = repo::<OpsEntry>("bucket-count").await;
    let items = ops_log();
    repo.batch_put(&items).await.unwrap();
    let (from, to) = (t(23, 12, 0, 0), t(26, 12, 0, 0));
    let counts = OpsEntry::query_range(&repo, &from, &to)
        .count_by_bucket()
        .await
        .unwrap();
    let day = |d: u32| {
        let start = t(d, 0, 0, 0).max(from);
        let end = t(d + 1, 0, 0, 0).min(to);
        expected(&items, start, end, false).len() as u64
    };
    assert_eq!(
        counts,
        [
            ("2026-11-23".to_owned(), day(23)),
            ("2026-11-24".to_owned(), 0),
            ("2026-11-25".to_owned(), 0),
            ("2026-11-26".to_owned(), day(26)),
        ]
    );
    assert!(day(23) > 0 && day(26) > 0);
    let desc = OpsEntry::query_range(&repo, &from, &to)
        .descending()
        .count_by_bucket()
        .await
        .unwrap();
    assert_eq!(desc.first().map(|c| c.0.as_str()), Some("2026-11-26"));
}

#[tokio::test]
async fn a_bucketed_gsi_has_its_own_range_query() {
    let repo = repo::<OpsEntry>("bucket-gsi").await;
    let items = ops_log();
    repo.batch_put(&items).await.unwrap();
    // Month buckets: the range crosses into December, an empty month.
    let (from, to) = (
        t(21, 12, 0, 0),
        Utc.with_ymd_and_hms(2026, 12, 3, 0, 0, 0).unwrap(),
    );
    for desc in [false, true] {
        let want: Vec<OpsEntry> = expected(&items, from, to, desc)
            .into_iter()
            .filter(|e| e.agent == "scanner")
            .collect();
        let q = || {
            let q = OpsEntry::query_gsi1_range(&repo, "scanner", &from, &to);
            if desc {
                q.descending()
            } else {
                q
            }
        };
        assert_eq!(q().collect().await.unwrap(), want);
        assert_eq!(pages(q, 7).await, want);
        let counts = q().count_by_bucket().await.unwrap();
        let labels: Vec<&str> = counts.iter().map(|c| c.0.as_str()).collect();
        if desc {
            assert_eq!(labels, ["2026-12", "2026-11"]);
        } else {
            assert_eq!(labels, ["2026-11", "2026-12"]);
        }
        assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), want.len() as u64);
    }
    // A consistent read of a GSI is refused, as for any GSI query.
    let err = OpsEntry::query_gsi1_range(&repo, "scanner", &from, &to)
        .consistent_read(true)
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidQuery(sharded::query::QueryRefusal::ConsistentGsi { .. })
        ),
        "{err}"
    );
}

const H: i64 = 3_600;
/// 2026-11-22T00:00:00Z
const T0: i64 = 1_795_305_600;

/// An id that `EpochEvent` puts on `shard`.
fn id_on_shard(shard: u32, salt: &str) -> String {
    (0..)
        .map(|i| format!("{salt}-{i}"))
        .find(|id| EpochEvent::shard_for(id).unwrap() == shard)
        .unwrap_or_default()
}

#[tokio::test]
async fn epoch_seconds_ending_the_sort_key_are_exact_at_both_ends() {
    let repo = repo::<EpochEvent>("bucket-epoch").await;
    let event = |ts: i64, id: String| EpochEvent {
        stream: "s".into(),
        ts,
        id,
    };
    // One event every 7 minutes for 30 hours, hours 5 to 8 left empty ...
    let mut items: Vec<EpochEvent> = (0..(30 * 60 / 7))
        .map(|k| event(T0 + k * 7 * 60, format!("ev{k}")))
        .filter(|e| !(T0 + 5 * H..T0 + 9 * H).contains(&e.ts))
        .collect();
    // ... and three at one second, 02:10, one per shard (a partition holds one item per
    // second: the time is the whole sort key).
    let edge = T0 + 2 * H + 600;
    for shard in 0..3 {
        items.push(event(edge, id_on_shard(shard, "edge")));
    }
    repo.batch_put(&items).await.unwrap();
    let brute = |from: i64, to: i64, desc: bool| {
        let mut v: Vec<i64> = items
            .iter()
            .filter(|e| from <= e.ts && e.ts < to)
            .map(|e| e.ts)
            .collect();
        v.sort_unstable();
        if desc {
            v.reverse();
        }
        v
    };
    assert_eq!(brute(edge, edge + 1, false).len(), 3);
    let ranges = [
        (T0 + H + 120, edge),           // two buckets, ending exactly at the edge items
        (T0 + 2 * H + 60, edge),        // one bucket, the edge items at exactly `to`
        (edge, edge + 1),               // one second: only the edge items
        (edge, T0 + 3 * H),             // starting exactly at them
        (T0 + 4 * H + 30, T0 + 10 * H), // across the empty hours
        (T0, T0 + 31 * H),
    ];
    for (from, to) in ranges {
        for desc in [false, true] {
            let want = brute(from, to, desc);
            let q = || {
                let q = EpochEvent::events_range(&repo, "s", from, to);
                if desc {
                    q.descending()
                } else {
                    q
                }
            };
            let what = format!("[{from}, {to}) desc={desc}");
            let got = q().collect().await.unwrap();
            // Equal times on several shards come in shard order: compare the times.
            assert_eq!(got.iter().map(|e| e.ts).collect::<Vec<_>>(), want, "{what}");
            for size in [1, 7, 100] {
                assert_eq!(pages(q, size).await, got, "pages of {size}, {what}");
            }
            // A limit of the whole answer, newest first: the items at `to` come first and are
            // dropped, so the bucket's engine meets its own limit early and resumes.
            let limited = q().limit(want.len().max(1)).collect().await.unwrap();
            assert_eq!(limited, got, "limit {}, {what}", want.len());
            assert_eq!(
                q().count().await.unwrap(),
                want.len() as u64,
                "count {what}"
            );
        }
    }
}

#[tokio::test]
async fn naive_dates_in_day_buckets() {
    let repo = repo::<Sale>("bucket-dates").await;
    let day = |d: u32| NaiveDate::from_ymd_opt(2026, 3, d).expect("a date");
    let mut items = Vec::new();
    for d in [1, 2, 3, 5, 8, 9] {
        for i in 0..6 {
            items.push(Sale {
                day: day(d),
                id: format!("s{d}-{i}"),
            });
        }
    }
    repo.batch_put(&items).await.unwrap();
    assert_eq!(Sale::pk_on_shard(&day(3), 1).unwrap(), "SALES#2026-03-03#1");
    let (bucket, shard) = Sale::parse_pk("SALES#2026-03-03#1").unwrap();
    assert_eq!((bucket.label(), shard), ("2026-03-03".to_owned(), 1));
    for (from, to) in [(2, 9), (1, 2), (4, 5), (3, 30)] {
        for desc in [false, true] {
            let mut want: Vec<Sale> = items
                .iter()
                .filter(|s| day(from) <= s.day && s.day < day(to))
                .cloned()
                .collect();
            want.sort_by(|a, b| (a.day, &a.id).cmp(&(b.day, &b.id)));
            if desc {
                want.reverse();
            }
            let q = || {
                let q = Sale::query_range(&repo, &day(from), &day(to));
                if desc {
                    q.descending()
                } else {
                    q
                }
            };
            assert_eq!(
                q().collect().await.unwrap(),
                want,
                "[{from}, {to}) desc={desc}"
            );
            assert_eq!(pages(q, 7).await, want);
            let counts = q().count_by_bucket().await.unwrap();
            assert_eq!(counts.len() as u32, to - from);
            assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), want.len() as u64);
        }
    }
}

#[tokio::test]
async fn cursors_of_another_range_entity_or_order_are_refused() {
    let repo = repo::<OpsEntry>("bucket-cursor").await;
    repo.batch_put(&ops_log()).await.unwrap();
    let (from, to) = (t(20, 0, 0, 0), t(23, 0, 0, 0));
    let page = OpsEntry::query_range(&repo, &from, &to)
        .page(5, None)
        .await
        .unwrap();
    let cursor = page.cursor.expect("more pages");
    let refused = |r: Result<_, Error>| match r {
        Err(Error::Cursor(CursorError::WrongQuery)) => {}
        other => panic!(
            "expected WrongQuery, got {:?}",
            other.map(|p: sharded::Page<OpsEntry>| p.items.len())
        ),
    };
    refused(
        OpsEntry::query_range(&repo, &from, &t(23, 0, 0, 1))
            .page(5, Some(&cursor))
            .await,
    );
    refused(
        OpsEntry::query_range(&repo, &from, &to)
            .descending()
            .page(5, Some(&cursor))
            .await,
    );
    refused(
        OpsEntry::query_gsi1_range(&repo, "scanner", &from, &to)
            .page(5, Some(&cursor))
            .await,
    );
    // A plain query's cursor is not a range cursor, nor the other way round.
    let plain = OpsEntry::query(&repo, &t(21, 0, 0, 0))
        .page(2, None)
        .await
        .unwrap();
    refused(
        OpsEntry::query_range(&repo, &from, &to)
            .page(5, plain.cursor.as_ref())
            .await,
    );
    let err = OpsEntry::query(&repo, &t(21, 0, 0, 0))
        .page(2, Some(&cursor))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Cursor(CursorError::WrongQuery)),
        "{err}"
    );
    // Sealed cursors: only with the key.
    let key = sharded::cursor::CursorKey::new(b"0123456789abcdef0123456789abcdef").unwrap();
    let sealed = OpsEntry::query_range(&repo, &from, &to)
        .seal_cursors(&key)
        .page(5, None)
        .await
        .unwrap()
        .cursor
        .expect("more pages");
    let err = OpsEntry::query_range(&repo, &from, &to)
        .page(5, Some(&sealed))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cursor(CursorError::Sealed)), "{err}");
    let next = OpsEntry::query_range(&repo, &from, &to)
        .seal_cursors(&key)
        .page(5, Some(&sealed))
        .await
        .unwrap();
    assert_eq!(next.items.len(), 5);
}

#[tokio::test]
async fn bad_ranges_are_errors_when_run_not_panics() {
    let repo = repo::<OpsEntry>("bucket-bad").await;
    let err = OpsEntry::query_range(&repo, &t(23, 0, 0, 0), &t(22, 0, 0, 0))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidQuery(sharded::query::QueryRefusal::BoundsReversed { .. })
        ),
        "{err}"
    );
    let far = Utc.with_ymd_and_hms(9999, 12, 31, 0, 0, 0).unwrap() + chrono::Duration::days(2);
    let err = OpsEntry::query_range(&repo, &t(23, 0, 0, 0), &far)
        .count()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err}");
    let err = OpsEntry::query_range(&repo, &t(22, 0, 0, 0), &t(23, 0, 0, 0))
        .page(0, None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidQuery(sharded::query::QueryRefusal::EmptyPage)
        ),
        "{err}"
    );
    // Keys of times without a bucket are refused too.
    assert!(OpsEntry::pk_on_shard(&far, 0).is_err());
    assert!(matches!(
        OpsEntry::parse_pk("OPS#2026-11-22T13#0"),
        Err(sharded::KeyError::Malformed { .. })
    ));
    let (bucket, _) = OpsEntry::parse_pk("OPS#2026-11-22#0").unwrap();
    assert_eq!(bucket, Bucket::containing(Granularity::Day, T0).unwrap());
}

#[tokio::test]
async fn buckets_are_read_ahead_within_the_repository_concurrency() {
    let table = repo::<OpsEntry>("bucket-window").await;
    let items = ops_log();
    table.batch_put(&items).await.unwrap();
    let faults = Faults::new();
    faults.set_latency(Duration::from_millis(20));
    // 8 concurrent requests over 4 shards: a window of 2 buckets.
    let repo: Repo<OpsEntry> = faulty(&table, &faults).await.with_concurrency(8);
    let (from, to) = (t(20, 0, 0, 0), t(30, 0, 0, 0));
    faults.reset_counts();
    let all = OpsEntry::query_range(&repo, &from, &to)
        .collect()
        .await
        .unwrap();
    assert_eq!(all, expected(&items, from, to, false));
    assert!(
        faults.max_in_flight() <= 8,
        "{} in flight",
        faults.max_in_flight()
    );
    assert!(
        faults.max_in_flight() > 4,
        "buckets were walked one after another"
    );
    // Ten buckets, one page each per shard (empty ones too).
    assert_eq!(faults.requests("Query"), 40);

    // A limit the newest bucket fills: one Query per shard, no read-ahead. (With a limit of
    // 2, each shard is asked for 2, so no shard can run dry before the limit is met.)
    faults.reset_counts();
    let newest = OpsEntry::query_range(&repo, &from, &to)
        .descending()
        .limit(2)
        .collect()
        .await
        .unwrap();
    assert_eq!(newest, expected(&items, from, to, true)[..2]);
    assert_eq!(faults.requests("Query"), 4);

    // Counting keeps the bound too.
    faults.reset_counts();
    let counted = OpsEntry::query_range(&repo, &from, &to)
        .count()
        .await
        .unwrap();
    assert_eq!(counted, items.len() as u64);
    assert!(
        faults.max_in_flight() <= 8,
        "{} in flight",
        faults.max_in_flight()
    );
}

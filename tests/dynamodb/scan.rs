//! The parallel scan: every item of the entity exactly once over any segment count, other
//! entities left out, invalid settings refused before sending, the concurrency bound, failed
//! segments named, and the read-unit rate limit.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use futures::{StreamExt, TryStreamExt};
use sharded::{query::Scan, Error, Repo, ShardedEntity};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Comment, Score};
use crate::support::{faulty, repo};

const SCORES: usize = 500;
const COMMENTS: usize = 200;

/// 500 scores over 5 games and, in the same table (and partly the same partitions), 200
/// comments.
async fn table(prefix: &str) -> (Repo<Score>, Vec<Score>, Vec<Comment>) {
    let repo = repo::<Score>(prefix).await;
    let scores: Vec<Score> = (0..SCORES)
        .map(|i| {
            score(
                &format!("g{}", i % 5),
                &format!("p{i:03}"),
                (i * 7919 % 1000) as u64,
            )
        })
        .collect();
    let comments: Vec<Comment> = (0..COMMENTS)
        .map(|i| Comment {
            game_id: format!("g{}", i % 5),
            player_id: format!("p{i:03}"),
            id: format!("c{i:03}"),
            text: "gg".into(),
        })
        .collect();
    repo.batch_put(&scores).await.unwrap();
    repo.for_entity::<Comment>()
        .batch_put(&comments)
        .await
        .unwrap();
    (repo, scores, comments)
}

/// The items sorted by player, after checking no player came twice.
fn by_player(mut scores: Vec<Score>) -> Vec<Score> {
    scores.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    for pair in scores.windows(2) {
        assert_ne!(pair[0].player_id, pair[1].player_id, "returned twice");
    }
    scores
}

#[tokio::test]
async fn every_item_of_the_entity_comes_back_exactly_once_whatever_the_segments() {
    let (repo, scores, comments) = table("scan-once").await;
    let expected = by_player(scores);
    // (segments, page size): one page per segment, and many.
    for (segments, page_size) in [(1, None), (1, Some(64)), (3, None), (8, Some(25))] {
        let mut scan = repo.scan().segments(segments);
        if let Some(p) = page_size {
            scan = scan.page_size(p);
        }
        let got = by_player(scan.collect().await.unwrap());
        assert_eq!(
            got, expected,
            "segments {segments}, page size {page_size:?}"
        );
    }
    let streamed: Vec<Score> = repo
        .scan()
        .segments(8)
        .page_size(30)
        .stream()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(by_player(streamed), expected, "stream");
    assert_eq!(
        repo.scan().segments(3).page_size(40).count().await.unwrap(),
        SCORES as u64
    );

    // The other entity of the table, scanned as itself.
    let mut got: Vec<Comment> = repo
        .for_entity::<Comment>()
        .scan()
        .segments(3)
        .collect()
        .await
        .unwrap();
    got.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(got, comments);
}

#[tokio::test]
async fn a_consistent_scan_is_accepted_and_sees_every_item() {
    let (repo, scores, _) = table("scan-consistent").await;
    let got = repo
        .scan()
        .segments(3)
        .consistent_read(true)
        .collect()
        .await
        .unwrap();
    assert_eq!(by_player(got), by_player(scores));
}

/// One setting applied to a scan.
type Setting = fn(Scan<Score>) -> Scan<Score>;

#[tokio::test]
async fn invalid_settings_are_invalid_queries_before_any_request() {
    let repo = repo::<Score>("scan-invalid").await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let cases: Vec<(&str, Setting)> = vec![
        ("segments(0)", |s| s.segments(0)),
        ("segments(1000001)", |s| s.segments(1_000_001)),
        ("concurrency(0)", |s| s.concurrency(0)),
        ("page_size(0)", |s| s.page_size(0)),
        ("page_size(4294967295)", |s| s.page_size(u32::MAX)),
        ("read_units_per_second(0)", |s| s.read_units_per_second(0.0)),
        ("read_units_per_second(-1)", |s| {
            s.read_units_per_second(-1.0)
        }),
        ("read_units_per_second(NaN)", |s| {
            s.read_units_per_second(f64::NAN)
        }),
    ];
    for (call, setting) in cases {
        match setting(counted.scan()).collect().await {
            Err(Error::InvalidQuery(refusal)) => {
                let message = refusal.to_string();
                assert!(message.starts_with(call), "{call}: {message}");
            }
            other => panic!("{call}: expected InvalidQuery, got {other:?}"),
        }
        let mut stream = setting(counted.scan()).stream();
        assert!(matches!(
            stream.next().await,
            Some(Err(Error::InvalidQuery(_)))
        ));
        assert!(stream.next().await.is_none(), "{call}: the error ends it");
        assert!(matches!(
            setting(counted.scan()).count().await,
            Err(Error::InvalidQuery(_))
        ));
    }
    assert_eq!(faults.requests("Scan"), 0, "nothing was sent");
    // The lower bound is valid (the upper one, 1,000,000 segments, costs a request each: it
    // is checked in the runtime's unit tests).
    assert_eq!(counted.scan().segments(1).count().await.unwrap(), 0);
    assert_eq!(faults.requests("Scan"), 1);
}

#[tokio::test]
async fn no_more_segments_are_in_flight_than_the_concurrency() {
    let (repo, scores, _) = table("scan-bound").await;
    let faults = Faults::new();
    faults.set_latency(Duration::from_millis(20));
    let slow = faulty(&repo, &faults).await;
    let got = slow
        .scan()
        .segments(8)
        .concurrency(3)
        .page_size(40)
        .collect()
        .await
        .unwrap();
    assert_eq!(by_player(got), by_player(scores));
    assert!(faults.requests("Scan") > 8, "several pages per segment");
    assert!(
        faults.max_in_flight() <= 3,
        "bound exceeded: {}",
        faults.max_in_flight()
    );
    assert!(faults.max_in_flight() >= 2, "not concurrent");

    // By default, every segment at once (up to the repository's concurrency).
    faults.reset_counts();
    slow.scan().segments(6).count().await.unwrap();
    assert!(faults.max_in_flight() <= 6, "{}", faults.max_in_flight());
    assert!(faults.max_in_flight() >= 2, "not concurrent");
    faults.reset_counts();
    slow.clone()
        .with_concurrency(2)
        .scan()
        .segments(6)
        .count()
        .await
        .unwrap();
    assert!(faults.max_in_flight() <= 2, "{}", faults.max_in_flight());
}

#[tokio::test]
async fn a_stream_reads_only_as_far_as_it_is_consumed() {
    let (repo, _, _) = table("scan-lazy").await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let mut stream = counted
        .scan()
        .segments(8)
        .concurrency(2)
        .page_size(10)
        .stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.player_id.starts_with('p'));
    // One page of one segment handed out: at most the other segment's request was sent.
    assert!(
        faults.requests("Scan") <= 2,
        "{} requests for one item",
        faults.requests("Scan")
    );
    drop(stream);
    let sent = faults.requests("Scan");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        faults.requests("Scan"),
        sent,
        "a dropped scan sends nothing"
    );
}

#[tokio::test]
async fn a_failed_segment_ends_the_scan_and_names_the_segment() {
    let (repo, _, _) = table("scan-fail").await;
    let faults = Faults::new();
    // Every Scan request names the table.
    faults.fail_partition(repo.table());
    let broken = faulty(&repo, &faults).await;
    match broken.scan().segments(4).collect().await {
        Err(e @ Error::SegmentFailed { .. }) => {
            let Error::SegmentFailed {
                segment,
                segments,
                table,
                source,
            } = &e
            else {
                unreachable!()
            };
            assert!(*segment < 4);
            assert_eq!((*segments, table.as_str()), (4, repo.table()));
            assert!(
                matches!(
                    **source,
                    Error::Dynamo {
                        operation: "Scan",
                        ..
                    }
                ),
                "{source:?}"
            );
            assert!(!e.is_throttling());
            assert!(e.to_string().contains("run it again"), "{e}");
        }
        other => panic!("expected SegmentFailed, got {other:?}"),
    }
    // The stream yields the error once, then ends.
    let results: Vec<Result<Score, Error>> = broken.scan().segments(4).stream().collect().await;
    assert_eq!(results.len(), 1);
    assert!(matches!(results[0], Err(Error::SegmentFailed { .. })));

    let throttling = Faults::new();
    throttling.throttle_partition(repo.table());
    let throttled = faulty(&repo, &throttling).await;
    let error = throttled.scan().segments(2).count().await.unwrap_err();
    assert!(
        matches!(error, Error::SegmentFailed { segments: 2, .. }),
        "{error:?}"
    );
    assert!(error.is_throttling(), "{error}");
}

#[tokio::test]
async fn an_invalid_request_or_a_missing_table_is_the_scans_error_not_a_segments() {
    let client = crate::support::client().await;
    // DynamoDB table names have at least 3 characters.
    let short: Repo<Score> = Repo::new(client.clone(), "ab");
    match short.scan().segments(4).collect().await {
        Err(e @ Error::Dynamo { .. }) => {
            assert!(e.is_validation(), "{e}");
            let Error::Dynamo { source, .. } = &e else {
                unreachable!()
            };
            assert_eq!(source.code(), Some("ValidationException"));
            assert!(!e.to_string().contains("segment"), "{e}");
        }
        other => panic!("expected the ValidationException itself, got {other:?}"),
    }
    let missing: Repo<Score> = Repo::new(client, "scan-no-such-table");
    match missing.scan().collect().await {
        Err(e @ Error::Dynamo { .. }) => {
            assert!(e.to_string().contains("ResourceNotFoundException"), "{e}");
        }
        other => panic!("expected the table's error, got {other:?}"),
    }
}

/// Read units of every page of `segment` of `segments`, as our scan sends them (same filter,
/// `Limit`, start keys), from the raw SDK.
async fn page_units(repo: &Repo<Score>, segment: i32, segments: i32, limit: i32) -> Vec<f64> {
    let mut units = Vec::new();
    let mut start = None;
    loop {
        let output = repo
            .client()
            .scan()
            .table_name(repo.table())
            .segment(segment)
            .total_segments(segments)
            .filter_expression("#et = :et")
            .expression_attribute_names("#et", sharded::schema::ENTITY_ATTRIBUTE)
            .expression_attribute_values(":et", AttributeValue::S(Score::SCHEMA.entity.into()))
            .limit(limit)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .unwrap();
        let consumed = output.consumed_capacity().and_then(|c| c.capacity_units());
        units.push(consumed.expect("DynamoDB Local reports ConsumedCapacity on Scan"));
        match output.last_evaluated_key {
            Some(key) => start = Some(key),
            None => return units,
        }
    }
}

#[tokio::test]
async fn the_rate_limit_holds_the_average_to_the_budget() {
    let (repo, scores, _) = table("scan-rate").await;
    let (segments, concurrency, page_size) = (3, 3, 25);
    // What each page costs, page by page; the table does not change in between, so our scan
    // reads the same pages.
    let mut pages = Vec::new();
    for segment in 0..segments {
        pages.extend(page_units(&repo, segment, segments, page_size).await);
    }
    let total: f64 = pages.iter().sum();
    let largest = pages.iter().copied().fold(0.0, f64::max);
    let rate = 10.0;
    // The limiter must have to wait for the bound below to say anything.
    assert!(
        total > concurrency as f64 * largest + rate,
        "{total} units in pages of at most {largest}: too few to need the limiter"
    );

    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let start = Instant::now();
    let got = counted
        .scan()
        .segments(segments as u32)
        .concurrency(concurrency)
        .page_size(page_size as u32)
        .read_units_per_second(rate)
        .collect()
        .await
        .unwrap();
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(by_player(got), by_player(scores));
    assert_eq!(
        faults.requests("Scan"),
        pages.len() as u64,
        "the same pages"
    );
    // The limiter's guarantee, not a timing expectation: units charged stay within the rate
    // times the elapsed time, plus what the requests in flight together can overshoot.
    assert!(
        total <= rate * elapsed + concurrency as f64 * largest,
        "{total} units in {elapsed:.2} s at {rate}/s (pages of at most {largest})"
    );
}

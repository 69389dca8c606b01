//! Batch writes and reads beyond one request's limits, and what happens when they cannot
//! finish: nothing is dropped silently.

use std::collections::HashSet;
use std::time::Duration;

use sharded::{Error, Repo, RetryPolicy, ShardedEntity};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty_client, repo};

#[tokio::test]
async fn batch_put_get_delete_beyond_request_limits() {
    let repo = repo::<Score>("batch-big").await;
    let scores: Vec<Score> = (0..260).map(|i| score("g1", &format!("p{i}"), i)).collect();
    repo.batch_put(&scores).await.unwrap();
    assert_eq!(Score::query(&repo, "g1").count().await.unwrap(), 260);

    let keys: Vec<(String, Option<String>)> = scores[..150]
        .iter()
        .map(|s| {
            (
                Score::pk(&s.game_id, &s.player_id).unwrap(),
                Some(Score::sk(s.score, &s.player_id).unwrap()),
            )
        })
        .chain(std::iter::once((
            Score::pk("g1", "nobody").unwrap(),
            Some(Score::sk(1, "nobody").unwrap()),
        )))
        .collect();
    let mut got = repo.batch_get(keys).await.unwrap();
    got.sort_by_key(|s| s.score);
    assert_eq!(
        got,
        scores[..150],
        "150 keys over two BatchGetItem calls; the missing key is absent"
    );

    repo.batch_delete(&scores[..200]).await.unwrap();
    assert_eq!(Score::query(&repo, "g1").count().await.unwrap(), 60);
}

#[tokio::test]
async fn the_last_write_of_a_key_wins_every_time() {
    let repo = repo::<Score>("batch-dup").await;
    // 20 keys, each written three times 20 items apart: sent as given, every repeat would be
    // in another request of 25, and concurrent requests would race.
    for round in 0..5 {
        let puts: Vec<Score> = (0..60)
            .map(|i| {
                let mut s = score("g1", &format!("p{}", i % 20), i % 20);
                s.at = format!("round {round} write {}", i / 20);
                s
            })
            .collect();
        repo.batch_put(&puts).await.unwrap();
        let mut stored = Score::query(&repo, "g1")
            .consistent_read(true)
            .collect()
            .await
            .unwrap();
        stored.sort_by_key(|s| s.score);
        assert_eq!(stored.len(), 20, "one item per key");
        assert_eq!(
            stored,
            puts[40..],
            "round {round}: every key holds the last value given"
        );
    }
    // Deletes are de-duplicated the same way: DynamoDB would refuse a batch naming a key twice.
    let twice: Vec<Score> = (0..30)
        .map(|i| score("g1", &format!("p{}", i % 20), i % 20))
        .collect();
    repo.batch_delete(&twice).await.unwrap();
    assert_eq!(Score::query(&repo, "g1").count().await.unwrap(), 0);
}

#[tokio::test]
async fn unfinished_batches_return_every_item_not_written() {
    let plain = repo::<Score>("batch-throttled").await;
    let faults = Faults::new();
    // A game of its own, so only its partition (and the batch holding it) is throttled.
    faults.throttle_partition(Score::pk("hot-game", "hot-player").unwrap());
    let repo: Repo<Score> = Repo::new(faulty_client(&faults, 1).await, plain.table())
        .with_batch_retry(RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        });
    let mut scores: Vec<Score> = (0..60).map(|i| score("g1", &format!("p{i}"), i)).collect();
    scores.push(score("hot-game", "hot-player", 99));
    let err = repo.batch_put(&scores).await.unwrap_err();
    assert!(err.is_throttling(), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("throttled") && message.contains("more shards"),
        "advice for throttling: {message}"
    );
    let Error::BatchIncomplete {
        operation,
        unprocessed,
        retrieved,
        attempts,
        source,
    } = err
    else {
        panic!("expected BatchIncomplete, got {err:?}");
    };
    assert_eq!(operation, "BatchWriteItem");
    assert_eq!(attempts, 3);
    assert!(retrieved.is_empty(), "a write retrieves nothing");
    let source = source.expect("the typed error of the last attempt");
    assert!(
        matches!(
            *source,
            Error::Dynamo {
                operation: "BatchWriteItem",
                ..
            }
        ),
        "{source:?}"
    );
    assert_eq!(
        source.throttling_reasons(),
        [("ProvisionedThroughputExceeded".to_owned(), None)]
    );
    let not_written: HashSet<String> = unprocessed
        .iter()
        .map(|item| Score::from_item(item.clone()).unwrap().player_id)
        .collect();
    assert!(not_written.contains("hot-player"));
    // Everything else was written; nothing is both or neither.
    let mut written: HashSet<String> = HashSet::new();
    for game in ["g1", "hot-game"] {
        written.extend(
            Score::query(&plain, game)
                .collect()
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.player_id),
        );
    }
    assert_eq!(
        written.len() + not_written.len(),
        scores.len(),
        "every item is written or returned"
    );
    assert!(written.is_disjoint(&not_written));
    assert!(
        !unprocessed.is_empty() && unprocessed.len() <= 25,
        "only the hot item's batch failed"
    );
    assert_eq!(
        faults.injected("BatchWriteItem"),
        3,
        "the hot batch was tried 3 times"
    );
    assert_eq!(
        faults.requests("BatchWriteItem"),
        5,
        "2 batches went through, the hot one 3 times"
    );
}

#[tokio::test]
async fn a_failing_batch_keeps_its_typed_cause_and_advice() {
    let plain = repo::<Score>("batch-failing").await;
    let faults = Faults::new();
    faults.fail_partition(Score::pk("bad-game", "p").unwrap());
    let repo: Repo<Score> = Repo::new(faulty_client(&faults, 1).await, plain.table())
        .with_batch_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        });
    let err = repo
        .batch_put([&score("bad-game", "p", 1)])
        .await
        .unwrap_err();
    assert!(
        !err.is_throttling(),
        "a server error is not throttling: {err}"
    );
    assert!(err.to_string().ends_with("retry them later"), "{err}");
    let source = std::error::Error::source(&err).expect("a source");
    assert!(
        source.to_string().contains("InternalServerError"),
        "{source}"
    );

    // A missing table: no retry helps, the advice says what does.
    let missing: Repo<Score> = Repo::new(plain.client().clone(), "no-such-table");
    let err = missing.batch_put([&score("g1", "p", 1)]).await.unwrap_err();
    let Error::BatchIncomplete { attempts, .. } = &err else {
        panic!("expected BatchIncomplete, got {err:?}");
    };
    assert_eq!(*attempts, 1, "not retried");
    assert!(err.to_string().contains("create it"), "{err}");
    assert!(!err.is_throttling() && !err.is_validation());
}

#[tokio::test]
async fn a_batch_get_that_fails_part_way_returns_what_it_read() {
    let plain = repo::<Score>("batch-get-partial").await;
    let scores: Vec<Score> = (0..10).map(|i| score("g1", &format!("p{i}"), i)).collect();
    plain.batch_put(&scores).await.unwrap();
    let hot = score("hot-game", "hot-player", 99);
    plain.put(&hot).await.unwrap();

    let faults = Faults::new();
    faults.throttle_partition(Score::pk("hot-game", "hot-player").unwrap());
    let repo: Repo<Score> = Repo::new(faulty_client(&faults, 1).await, plain.table())
        .with_batch_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        });
    let key = |s: &Score| {
        (
            Score::pk(&s.game_id, &s.player_id).unwrap(),
            Some(Score::sk(s.score, &s.player_id).unwrap()),
        )
    };
    // 100 keys per request: the hot key's request is the second, alone.
    let mut keys: Vec<(String, Option<String>)> = scores.iter().map(key).collect();
    keys.extend((0..90).map(|i| key(&score("g2", &format!("absent{i}"), i))));
    keys.push(key(&hot));
    let err = repo.batch_get(keys).await.unwrap_err();
    assert!(err.is_throttling(), "{err}");
    let Error::BatchIncomplete {
        operation,
        unprocessed,
        retrieved,
        ..
    } = err
    else {
        panic!("expected BatchIncomplete, got {err:?}");
    };
    assert_eq!(operation, "BatchGetItem");
    assert_eq!(unprocessed.len(), 1, "the hot key is not read");
    let mut read: Vec<Score> = retrieved
        .into_iter()
        .map(|item| Score::from_item(item).unwrap())
        .collect();
    read.sort_by_key(|s| s.score);
    assert_eq!(read, scores, "every item of the request that went through");
}

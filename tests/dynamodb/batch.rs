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
async fn duplicate_keys_in_one_batch_are_split_not_rejected() {
    let repo = repo::<Score>("batch-dup").await;
    let mut first = score("g1", "p1", 5);
    first.at = "first".into();
    let mut second = first.clone();
    second.at = "second".into();
    repo.batch_put([&first, &second]).await.unwrap();
    assert_eq!(
        Score::get(&repo, "g1", "p1", 5).await.unwrap().unwrap().at,
        "second",
        "the last write wins"
    );
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
    let Error::BatchIncomplete {
        operation,
        unprocessed,
        attempts,
        last_error,
    } = err
    else {
        panic!("expected BatchIncomplete, got {err:?}");
    };
    assert_eq!(operation, "BatchWriteItem");
    assert_eq!(attempts, 3);
    assert!(last_error
        .unwrap()
        .contains("ProvisionedThroughputExceeded"));
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

//! Point operations of the repository: put, put_new, get, delete, and what is refused before
//! anything is sent.

use sharded::{Error, KeyError};
use sharded_testkit::faults::Faults;

use crate::entities::{score, LogLine, Score};
use crate::support::{faulty, repo};

#[tokio::test]
async fn put_get_delete_roundtrip() {
    let repo = repo::<Score>("repo-crud").await;
    let s = score("g1", "p1", 42);
    repo.put(&s).await.unwrap();
    assert_eq!(
        Score::get(&repo, "g1", "p1", 42).await.unwrap(),
        Some(s.clone())
    );
    assert_eq!(Score::get(&repo, "g1", "p1", 43).await.unwrap(), None);
    Score::delete(&repo, "g1", "p1", 42).await.unwrap();
    assert_eq!(Score::get(&repo, "g1", "p1", 42).await.unwrap(), None);
}

#[tokio::test]
async fn calculated_shard_lookup_is_exactly_one_get_item() {
    let repo = repo::<Score>("repo-one-get").await;
    repo.put(&score("g1", "p1", 7)).await.unwrap();
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let found = Score::get(&counted, "g1", "p1", 7).await.unwrap();
    assert!(found.is_some());
    assert_eq!(faults.requests("GetItem"), 1);
    assert_eq!(
        faults.requests("Query") + faults.requests("BatchGetItem"),
        0
    );
}

#[tokio::test]
async fn put_new_refuses_to_overwrite() {
    let repo = repo::<Score>("repo-put-new").await;
    let s = score("g1", "p1", 42);
    repo.put_new(&s).await.unwrap();
    let mut changed = s.clone();
    changed.at = "later".into();
    match repo.put_new(&changed).await {
        Err(Error::AlreadyExists { entity, key }) => {
            assert_eq!(entity, "Score");
            assert_eq!(
                key.pk.as_deref(),
                Some(Score::pk("g1", "p1").unwrap().as_str())
            );
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        Score::get(&repo, "g1", "p1", 42).await.unwrap(),
        Some(s),
        "the original is kept"
    );
}

#[tokio::test]
async fn random_shard_lookup_asks_every_shard_in_one_batch() {
    let repo = repo::<LogLine>("repo-random").await;
    let line = LogLine {
        day: "2026-06-22".into(),
        at: "01:00".into(),
        id: "a".into(),
        message: "hello".into(),
    };
    repo.put(&line).await.unwrap();
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let found = LogLine::get_from_all_shards(&counted, "2026-06-22", "01:00", "a")
        .await
        .unwrap();
    assert_eq!(found, [line]);
    assert_eq!(
        faults.requests("BatchGetItem"),
        1,
        "6 shards fit one BatchGetItem"
    );
}

#[tokio::test]
async fn oversized_items_and_empty_keys_are_refused_before_sending() {
    let repo = repo::<Score>("repo-refuse").await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let mut big = score("g1", "p1", 1);
    big.at = "x".repeat(410 * 1024);
    match counted.put(&big).await {
        Err(Error::ItemTooLarge { size, limit, .. }) => assert!(size > limit),
        other => panic!("expected ItemTooLarge, got {other:?}"),
    }
    match counted.put(&score("g1", "", 1)).await {
        Err(Error::Key(KeyError::EmptyValue { field, .. })) => assert_eq!(field, "player_id"),
        other => panic!("expected an empty key error, got {other:?}"),
    }
    assert!(matches!(
        // The raw-key lookup under the generated `get`: an empty key never reaches DynamoDB.
        sharded::__private::get_by_key(&counted, String::new(), None).await,
        Err(Error::EmptyKeyAttribute { .. })
    ));
    assert_eq!(
        faults.requests("PutItem") + faults.requests("GetItem"),
        0,
        "nothing was sent"
    );
}

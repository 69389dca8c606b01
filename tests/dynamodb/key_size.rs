//! Keys over DynamoDB's size limits (partition key 2,048 bytes, sort key 1,024) are refused
//! before anything is sent, by every operation, on the table's keys and the index keys.

use sharded::schema::{MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES};
use sharded::{Error, KeyError};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty, repo};

fn too_long<T: std::fmt::Debug>(result: Result<T, Error>) -> (&'static str, usize) {
    match result {
        Err(Error::Key(KeyError::KeyTooLong {
            entity: "Score",
            attribute,
            size,
            limit,
        })) => {
            assert!(size > limit, "{size} <= {limit}");
            (attribute, limit)
        }
        other => panic!("expected KeyTooLong, got {other:?}"),
    }
}

#[tokio::test]
async fn oversized_keys_are_refused_and_nothing_is_written() {
    let plain = repo::<Score>("key-size").await;
    let faults = Faults::new();
    let repo = faulty(&plain, &faults).await;

    // `SCORE#<20 digits>#` and 1,000 bytes: a sort key of 1,027 bytes.
    let long_player = "p".repeat(1_000);
    let long = score("g1", &long_player, 1);
    let sk = ("sk", MAX_SORT_KEY_BYTES);
    assert_eq!(too_long(repo.put(&long).await), sk);
    assert_eq!(too_long(repo.put_new(&long).await), sk);
    assert_eq!(
        too_long(repo.batch_put([&score("g1", "ok", 2), &long]).await),
        sk
    );
    assert_eq!(too_long(repo.batch_delete([&long]).await), sk);
    assert_eq!(too_long(Score::get(&repo, "g1", &long_player, 1).await), sk);
    assert_eq!(
        too_long(Score::delete(&repo, "g1", &long_player, 1).await),
        sk
    );

    // A partition key of 2,049 bytes, by raw key.
    let long_pk = format!("GAME#{}", "g".repeat(MAX_PARTITION_KEY_BYTES - 4));
    let pk = ("pk", MAX_PARTITION_KEY_BYTES);
    assert_eq!(
        too_long(
            repo.batch_get([(long_pk.clone(), Some("SCORE#1".to_owned()))])
                .await
        ),
        pk
    );
    assert_eq!(
        too_long(sharded::__private::get_by_key(&repo, long_pk, None).await),
        pk
    );

    // An index key: a game id of 1,100 bytes fits the table's partition key (limit 2,048),
    // not the index's sort key `GAME#{game_id}` (limit 1,024).
    let long_game = score(&"g".repeat(1_100), "p1", 3);
    assert_eq!(
        too_long(repo.put(&long_game).await),
        ("gsi1sk", MAX_SORT_KEY_BYTES)
    );

    let sent: u64 = [
        "PutItem",
        "GetItem",
        "DeleteItem",
        "BatchWriteItem",
        "BatchGetItem",
    ]
    .iter()
    .map(|op| faults.requests(op))
    .sum();
    assert_eq!(sent, 0, "nothing was sent");
    let stored = plain
        .client()
        .scan()
        .table_name(plain.table())
        .send()
        .await
        .unwrap();
    assert_eq!(stored.count, 0, "nothing was written");
}

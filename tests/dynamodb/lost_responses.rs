//! Requests applied whose responses are lost (`Faults::drop_responses`): the SDK retries
//! them, and what the retry finds is the first attempt's own write.

use sharded::{Error, Repo};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty_client, repo};

/// The table of `plain` through a client that retries up to `attempts` times.
async fn retrying(plain: &Repo<Score>, faults: &Faults, attempts: u32) -> Repo<Score> {
    Repo::new(faulty_client(faults, attempts).await, plain.table())
}

#[tokio::test]
async fn a_put_new_retried_after_its_response_was_lost_succeeds() {
    let plain = repo::<Score>("lost-put-new").await;
    let faults = Faults::new();
    let repo = retrying(&plain, &faults, 3).await;
    faults.drop_responses("PutItem", 1);
    let s = score("g1", "p1", 42);
    repo.put_new(&s).await.unwrap();
    assert_eq!(
        (faults.requests("PutItem"), faults.injected("PutItem")),
        (2, 1),
        "written, answer lost, retried and refused by its own write: reported as success"
    );
    assert_eq!(
        Score::get(&plain, "g1", "p1", 42).await.unwrap(),
        Some(s.clone())
    );

    // A different item at the key is still someone else's.
    let mut other = s;
    other.at = "later".into();
    assert!(matches!(
        repo.put_new(&other).await,
        Err(Error::AlreadyExists {
            entity: "Score",
            ..
        })
    ));
}

#[tokio::test]
async fn a_dropped_response_is_applied_then_lost() {
    let plain = repo::<Score>("lost-applied").await;
    let faults = Faults::new();
    // No retry: the caller sees the lost response, yet the write happened.
    let repo = retrying(&plain, &faults, 1).await;
    faults.drop_responses("PutItem", 1);
    let s = score("g1", "p1", 7);
    let err = repo.put(&s).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Dynamo {
                operation: "PutItem",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("response dropped"),
        "the cause is named: {err}"
    );
    assert_eq!(
        Score::get(&plain, "g1", "p1", 7).await.unwrap(),
        Some(s.clone())
    );

    // Counted per operation and spent: the next PutItem is answered.
    faults.drop_responses("GetItem", 2);
    repo.put(&s).await.unwrap();
    assert!(Score::get(&repo, "g1", "p1", 7).await.is_err());
    assert!(Score::get(&repo, "g1", "p1", 7).await.is_err());
    assert!(Score::get(&repo, "g1", "p1", 7).await.unwrap().is_some());
    assert_eq!(
        (faults.injected("PutItem"), faults.injected("GetItem")),
        (1, 2)
    );
}

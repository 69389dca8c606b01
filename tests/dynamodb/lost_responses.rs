//! Requests applied whose responses are lost (`Faults::drop_responses`): the SDK retries
//! them, and what the retry finds is the first attempt's own write.

use serde::{Deserialize, Serialize};
use sharded::{Error, Repo, ShardedEntity};
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

/// A versioned document: `put` replaces only the version read.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    body: String,
    #[sharded(version)]
    version: u64,
}

#[tokio::test]
async fn a_versioned_put_retried_after_its_response_was_lost_succeeds() {
    let plain: Repo<Doc> = repo("lost-versioned").await;
    let doc = |body: &str, version| Doc {
        doc_id: "d1".into(),
        body: body.into(),
        version,
    };
    plain.put(&doc("v0", 0)).await.unwrap();
    let faults = Faults::new();
    let repo = Repo::new(faulty_client(&faults, 3).await, plain.table());
    let read = Doc::get(&repo, "d1").await.unwrap().unwrap();
    faults.drop_responses("PutItem", 1);
    repo.put(&doc("v1", read.version)).await.unwrap();
    assert_eq!(
        (faults.requests("PutItem"), faults.injected("PutItem")),
        (2, 1),
        "written, answer lost, retried and refused by its own write: reported as success"
    );
    assert_eq!(
        Doc::get(&plain, "d1").await.unwrap(),
        Some(doc("v1", read.version + 1))
    );
    // Another writer from the same read still loses, the stored item untouched.
    match repo.put(&doc("late", read.version)).await {
        Err(Error::VersionConflict {
            expected, found, ..
        }) => assert_eq!((expected, found), (read.version, Some(read.version + 1))),
        other => panic!("a second writer from the same read: {other:?}"),
    }
    assert_eq!(
        Doc::get(&plain, "d1").await.unwrap(),
        Some(doc("v1", read.version + 1))
    );
}

/// A conditional delete and a versioned update applied, their answers lost, sent again by the
/// SDK and refused: the refusal may be the first attempt's doing, so the error says the
/// outcome is unknown (`Error::WriteOutcomeUnknown`) instead of "nothing was written".
#[tokio::test]
async fn a_conditional_write_refused_after_a_lost_answer_says_its_outcome_is_unknown() {
    let plain: Repo<Doc> = repo("lost-conditional").await;
    let doc = |id: &str, body: &str, version| Doc {
        doc_id: id.into(),
        body: body.into(),
        version,
    };
    plain.put(&doc("d1", "v0", 0)).await.unwrap();
    plain.put(&doc("d2", "v0", 0)).await.unwrap();
    let faults = Faults::new();
    let repo = Repo::new(faulty_client(&faults, 3).await, plain.table());
    let f = Doc::fields();

    let read = Doc::get(&repo, "d1").await.unwrap().unwrap();
    faults.drop_responses("UpdateItem", 1);
    let err = Doc::update(&repo, "d1")
        .set(f.body, "v1")
        .if_version(read.version)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        faults.requests("UpdateItem"),
        2,
        "applied, answer lost, sent again"
    );
    assert!(err.outcome_unknown(), "{err:?}");
    match &err {
        Error::WriteOutcomeUnknown {
            operation, last, ..
        } => {
            assert_eq!(*operation, "UpdateItem");
            assert!(matches!(**last, Error::VersionConflict { .. }), "{last:?}");
        }
        other => panic!("{other:?}"),
    }
    let stored = Doc::get(&plain, "d1").await.unwrap().unwrap();
    assert_eq!(
        (stored.body.as_str(), stored.version),
        ("v1", read.version + 1)
    );

    let read = Doc::get(&repo, "d2").await.unwrap().unwrap();
    faults.drop_responses("DeleteItem", 1);
    let err = repo
        .delete_if(&read, f.body.eq("v0".to_owned()))
        .await
        .unwrap_err();
    assert!(err.outcome_unknown(), "{err:?}");
    assert!(
        matches!(&err, Error::WriteOutcomeUnknown { operation: "DeleteItem", last, .. }
            if matches!(**last, Error::ConditionFailed { current: None, .. })),
        "{err:?}"
    );
    assert_eq!(
        Doc::get(&plain, "d2").await.unwrap(),
        None,
        "it was applied"
    );

    // Without a lost attempt, a refusal is what it says.
    let stale = doc("d1", "late", read.version);
    assert!(matches!(
        repo.put(&stale).await,
        Err(Error::VersionConflict { .. })
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

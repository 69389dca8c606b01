//! Retries that are safe on the real service: a transaction is built once and every send is
//! the identical request under one token, conflicts and answers that never came are sent
//! again, and the errors DynamoDB Local never raises (`TransactionConflict`,
//! `TransactionInProgress`, `IdempotentParameterMismatch`) come from `sharded_testkit::faults`.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sharded::{Error, Repo, RetryPolicy, ShardedCounter, ShardedEntity};
use sharded_testkit::faults::{Faults, InjectedError, Throttle};

use crate::support::{faulty_client, repo};

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "ACCOUNT#{user_id}")]
struct Account {
    user_id: String,
    coins: i64,
    // RFC 3339 with milliseconds: a rebuilt request a few milliseconds later differs.
    #[sharded(created_at)]
    created: Option<chrono::DateTime<chrono::Utc>>,
    #[sharded(updated_at)]
    updated: Option<chrono::DateTime<chrono::Utc>>,
}

fn account(user_id: &str, coins: i64) -> Account {
    Account {
        user_id: user_id.into(),
        coins,
        created: None,
        updated: None,
    }
}

/// One send per commit: what the test's own retries do is all there is.
fn once() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    }
}

/// The table of `plain` through `faults`, with `attempts` SDK attempts per send.
async fn through(plain: &Repo<Account>, faults: &Faults, attempts: u32) -> Repo<Account> {
    Repo::new(faulty_client(faults, attempts).await, plain.table())
}

async fn coins(repo: &Repo<Account>, user_id: &str) -> Option<i64> {
    Account::get(repo, user_id).await.unwrap().map(|a| a.coins)
}

#[tokio::test]
async fn a_prepared_commit_is_sent_again_identically_and_applied_once() {
    let plain = repo::<Account>("retry-prepared").await;
    plain.put(&account("alice", 0)).await.unwrap();
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    let f = Account::fields();
    let prepared = repo
        .transaction()
        .with_retry(once())
        .update(Account::update(&repo, "alice").add(f.coins, 5))
        .put(&account("bob", 5))
        .prepare()
        .await
        .unwrap();

    // Applied, answer lost: the caller cannot tell.
    faults.drop_responses("TransactWriteItems", 1);
    let err = prepared.commit().await.unwrap_err();
    assert!(err.outcome_unknown(), "{err:?}");
    let bob = Account::get(&plain, "bob").await.unwrap().expect("applied");
    // Timestamps have millisecond precision: a rebuilt request would differ now.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    prepared.commit().await.unwrap();
    assert_eq!(coins(&plain, "alice").await, Some(5), "applied once");
    assert_eq!(
        Account::get(&plain, "bob").await.unwrap(),
        Some(bob),
        "the second send changed nothing, its stamps included"
    );
    assert_eq!(faults.requests("TransactWriteItems"), 2);
}

#[tokio::test]
async fn a_rebuilt_commit_under_the_same_token_is_a_typed_mismatch() {
    let repo = repo::<Account>("retry-mismatch").await;
    let build = || {
        repo.transaction()
            .with_token("order-17")
            .put(&account("carol", 3))
    };
    build().commit().await.unwrap();
    let first = Account::get(&repo, "carol").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // Rebuilt: new timestamps under the same token.
    let err = build().commit().await.unwrap_err();
    assert!(
        matches!(&err, Error::IdempotentParameterMismatch { token } if token == "order-17"),
        "{err:?}"
    );
    assert!(!err.outcome_unknown());
    assert!(err.to_string().contains("prepare"), "names the fix: {err}");
    assert_eq!(Account::get(&repo, "carol").await.unwrap(), first);

    // The same answer injected, on a table DynamoDB Local answers without one.
    let faults = Faults::new();
    let faulty = through(&repo, &faults, 1).await;
    faults.fail_next(
        "TransactWriteItems",
        InjectedError::IdempotentParameterMismatch,
        1,
    );
    let err = faulty
        .transaction()
        .with_token("order-18")
        .put(&account("dan", 1))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::IdempotentParameterMismatch { token } if token == "order-18"),
        "{err:?}"
    );
    assert_eq!(coins(&repo, "dan").await, None, "nothing applied");
}

#[tokio::test]
async fn conflicts_are_sent_again_under_the_same_token_until_the_policy_ends() {
    let plain = repo::<Account>("retry-conflict").await;
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    let f = Account::fields();
    plain.put(&account("erin", 0)).await.unwrap();

    faults.conflict_next_transactions(3);
    repo.transaction()
        .update(Account::update(&repo, "erin").add(f.coins, 1))
        .commit()
        .await
        .unwrap();
    assert_eq!(
        (
            faults.requests("TransactWriteItems"),
            faults.injected("TransactWriteItems")
        ),
        (4, 3)
    );
    assert_eq!(coins(&plain, "erin").await, Some(1));

    // Past the policy: the cancellation, typed, with the action and its reason.
    faults.conflict_next_transactions(2);
    let err = repo
        .transaction()
        .with_retry(RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        })
        .update(Account::update(&repo, "erin").add(f.coins, 1))
        .commit()
        .await
        .unwrap_err();
    match &err {
        Error::TransactionCanceled { actions } => {
            assert_eq!(actions.len(), 1, "{actions:?}");
            assert_eq!(actions[0].code, "TransactionConflict");
            assert_eq!(actions[0].kind, "update");
        }
        other => panic!("expected a cancellation, got {other:?}"),
    }
    assert_eq!(coins(&plain, "erin").await, Some(1), "nothing applied");
}

#[tokio::test]
async fn a_send_still_in_progress_is_waited_out_and_typed_when_it_lasts() {
    let plain = repo::<Account>("retry-in-progress").await;
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    faults.fail_next(
        "TransactWriteItems",
        InjectedError::TransactionInProgress,
        2,
    );
    repo.transaction()
        .put(&account("fay", 2))
        .commit()
        .await
        .unwrap();
    assert_eq!(faults.requests("TransactWriteItems"), 3);
    assert_eq!(coins(&plain, "fay").await, Some(2));

    faults.fail_next(
        "TransactWriteItems",
        InjectedError::TransactionInProgress,
        1,
    );
    let prepared = repo
        .transaction()
        .with_retry(once())
        .put(&account("gus", 4))
        .prepare()
        .await
        .unwrap();
    let err = prepared.commit().await.unwrap_err();
    assert!(
        matches!(&err, Error::TransactionInProgress { token } if token == prepared.token()),
        "{err:?}"
    );
    assert!(err.outcome_unknown());
    prepared.commit().await.unwrap();
    assert_eq!(coins(&plain, "gus").await, Some(4));
}

#[tokio::test]
async fn tokens_dynamodb_would_refuse_are_refused_before_sending() {
    let plain = repo::<Account>("retry-token").await;
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    let long = "x".repeat(37);
    let err = repo
        .transaction()
        .with_token(long.clone())
        .put(&account("hal", 1))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidToken { token, .. } if *token == long),
        "{err:?}"
    );
    let counter = ShardedCounter::new(
        repo.client().clone(),
        repo.table(),
        &Account::table_definition(),
        "VOTES#x",
        4,
    )
    .unwrap();
    let err = counter.increment_with_token(1, "").await.unwrap_err();
    assert!(matches!(&err, Error::InvalidToken { .. }), "{err:?}");
    assert_eq!(faults.requests("TransactWriteItems"), 0);
}

/// The hot-counter case: 200 exactly-once increments from 16 concurrent callers, while a
/// fifth of the transactions are canceled for conflicts and a fifth of the answers are lost
/// after DynamoDB applied them. Every increment is acknowledged, and counted once.
#[tokio::test]
async fn increments_under_conflicts_and_lost_responses_count_exactly() {
    let plain = repo::<Account>("retry-counter").await;
    let faults = Faults::new().with_seed(16);
    faults.conflict_transactions(0.2);
    faults.drop_response_rate("TransactWriteItems", 0.2);
    let counter = ShardedCounter::new(
        faulty_client(&faults, 3).await,
        plain.table(),
        &Account::table_definition(),
        "VOTES#hot",
        4,
    )
    .unwrap();
    let acknowledged = futures::stream::iter(0..200)
        .map(|_| counter.increment(1))
        .buffer_unordered(16)
        .filter(|r| std::future::ready(r.is_ok()))
        .count()
        .await;
    faults.clear();
    let injected = faults.injected("TransactWriteItems");
    assert!(
        injected >= 40,
        "both faults fired ({injected} of {} requests)",
        faults.requests("TransactWriteItems")
    );
    assert_eq!(acknowledged, 200);
    assert_eq!(
        counter.total().await.unwrap(),
        200,
        "counted exactly once each"
    );
}

#[tokio::test]
async fn an_increment_with_a_token_counts_once_however_often_it_is_sent() {
    let plain = repo::<Account>("retry-counter-token").await;
    let faults = Faults::new();
    let counter = ShardedCounter::new(
        faulty_client(&faults, 1).await,
        plain.table(),
        &Account::table_definition(),
        "VOTES#token",
        8,
    )
    .unwrap()
    .with_retry(once());
    // Applied, answer lost; the caller calls again, as another process would.
    faults.drop_responses("TransactWriteItems", 1);
    let err = counter.increment_with_token(1, "vote-1").await.unwrap_err();
    assert!(err.outcome_unknown(), "{err:?}");
    let shard = counter.increment_with_token(1, "vote-1").await.unwrap();
    assert_eq!(
        counter.increment_with_token(1, "vote-1").await.unwrap(),
        shard
    );
    assert_eq!(counter.total().await.unwrap(), 1);
    counter.increment_with_token(1, "vote-2").await.unwrap();
    assert_eq!(counter.total().await.unwrap(), 2);
    // Another amount under a used token is another request.
    let err = counter.increment_with_token(5, "vote-2").await.unwrap_err();
    assert!(
        matches!(&err, Error::IdempotentParameterMismatch { .. }),
        "{err:?}"
    );
    assert_eq!(counter.total().await.unwrap(), 2);
}

#[tokio::test]
async fn injected_throttles_name_their_reason_and_resource() {
    let plain = repo::<Account>("retry-throttle-reason").await;
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    faults.throttle_partition_because(
        "ACCOUNT#ivy",
        Throttle::index("IndexWriteKeyRangeThroughputExceeded", "byPlayer"),
    );
    faults.throttle_partition_because(
        "ACCOUNT#jo",
        Throttle::table("TableWriteMaxOnDemandThroughputExceeded"),
    );
    let err = repo.put(&account("ivy", 1)).await.unwrap_err();
    assert_eq!(
        err.throttling_reasons(),
        vec![(
            "IndexWriteKeyRangeThroughputExceeded".to_owned(),
            Some("byPlayer".to_owned())
        )]
    );
    let err = repo.put(&account("jo", 1)).await.unwrap_err();
    assert_eq!(
        err.throttling_reasons(),
        vec![("TableWriteMaxOnDemandThroughputExceeded".to_owned(), None)]
    );
}

#[tokio::test]
async fn a_transactional_read_canceled_for_a_conflict_is_read_again() {
    let plain = repo::<Account>("retry-transact-get").await;
    plain.put(&account("kim", 9)).await.unwrap();
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    faults.conflict_next_transactions(2);
    let kim = Account::key("kim").unwrap();
    let mut answer = repo.transact_get().get(&kim).send().await.unwrap();
    assert_eq!(answer.take(&kim).unwrap().map(|a| a.coins), Some(9));
    assert_eq!(
        (
            faults.requests("TransactGetItems"),
            faults.injected("TransactGetItems")
        ),
        (3, 2)
    );
}

/// A commit whose caller stopped waiting (a timeout drops the future while the request is on
/// its way) may have been applied: the next commit of the same prepared transaction, refused
/// for a reason that says nothing about the earlier one (a conflict), says the outcome is
/// unknown, and the identical request settles it.
#[tokio::test]
async fn a_commit_dropped_on_its_way_leaves_the_outcome_unknown() {
    let plain = repo::<Account>("retry-dropped").await;
    let faults = Faults::new();
    let repo = through(&plain, &faults, 1).await;
    let prepared = repo
        .transaction()
        .with_retry(once())
        .put(&account("kim", 7))
        .prepare()
        .await
        .unwrap();
    faults.set_latency(std::time::Duration::from_secs(5));
    let waited = tokio::time::timeout(std::time::Duration::from_millis(200), prepared.commit());
    assert!(waited.await.is_err(), "the commit was still on its way");
    faults.clear();
    faults.fail_next("TransactWriteItems", InjectedError::TransactionConflict, 1);
    let err = prepared.commit().await.unwrap_err();
    assert!(err.outcome_unknown(), "{err:?}");
    assert!(
        matches!(&err, Error::OutcomeUnknown { token, .. } if token == prepared.token()),
        "{err:?}"
    );
    prepared.commit().await.unwrap();
    assert_eq!(coins(&plain, "kim").await, Some(7));
}

/// A send whose outcome is unknown (DynamoDB's own failure here; a lost answer alike), then
/// refusals that say nothing about it (conflicts) until the retries end: the error still says
/// the outcome is unknown, whichever send refused last, the SDK's own retries included, and
/// in a later commit of the same prepared transaction. Only the identical request settles it.
#[tokio::test]
async fn an_unknown_outcome_stays_unknown_through_later_refusals() {
    let plain = repo::<Account>("retry-unknown").await;
    let faults = Faults::new();
    let quick = RetryPolicy {
        max_attempts: 3,
        base_delay: std::time::Duration::from_millis(1),
        max_delay: std::time::Duration::from_millis(5),
    };

    // Our resends: the first send fails on DynamoDB's side, the next two conflict.
    let repo = through(&plain, &faults, 1).await;
    faults.fail_next("TransactWriteItems", InjectedError::InternalServerError, 1);
    faults.fail_next("TransactWriteItems", InjectedError::TransactionConflict, 2);
    let prepared = repo
        .transaction()
        .with_retry(quick.clone())
        .put(&account("ida", 5))
        .prepare()
        .await
        .unwrap();
    let err = prepared.commit().await.unwrap_err();
    assert_eq!(faults.requests("TransactWriteItems"), 3);
    assert!(err.outcome_unknown(), "{err:?}");
    assert!(
        matches!(&err, Error::OutcomeUnknown { token, last }
            if token == prepared.token() && matches!(**last, Error::TransactionCanceled { .. })),
        "{err:?}"
    );
    // Committed again and refused again for conflicts only: the first send is still unknown.
    faults.fail_next("TransactWriteItems", InjectedError::TransactionConflict, 3);
    let again = prepared.commit().await.unwrap_err();
    assert!(again.outcome_unknown(), "{again:?}");
    prepared.commit().await.unwrap();
    assert_eq!(coins(&plain, "ida").await, Some(5));

    // The SDK's own retry of the failed send (two attempts per send), then one conflict.
    let sdk_retries = through(&plain, &faults, 2).await;
    faults.fail_next("TransactWriteItems", InjectedError::InternalServerError, 1);
    faults.fail_next("TransactWriteItems", InjectedError::TransactionConflict, 1);
    faults.reset_counts();
    let err = sdk_retries
        .transaction()
        .with_retry(once())
        .put(&account("jo", 1))
        .commit()
        .await
        .unwrap_err();
    assert_eq!(
        faults.requests("TransactWriteItems"),
        2,
        "one send, two attempts"
    );
    assert!(err.outcome_unknown(), "{err:?}");

    // Conflicts alone say the request was not applied: a known outcome.
    faults.fail_next("TransactWriteItems", InjectedError::TransactionConflict, 1);
    let err = repo
        .transaction()
        .with_retry(once())
        .put(&account("kit", 1))
        .commit()
        .await
        .unwrap_err();
    assert!(!err.outcome_unknown(), "{err:?}");
    assert_eq!(coins(&plain, "kit").await, None);
}

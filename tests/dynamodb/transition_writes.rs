//! Writes during a layout transition: no write leaves a copy of its item at the previous place,
//! conditions see an item that is still there, transactional reads find it, and a batch
//! deletes previous copies before current ones.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::migrate::Migrate;
use sharded::{Error, Repo, RetryPolicy, ShardedEntity};
use sharded_testkit::faults::Faults;

use crate::support::{faulty_client, repo};

/// A document before sharding: one unsharded partition per group.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Doc")]
#[pk(template = "OLD#{group}")]
#[sk(template = "DOC#{id}")]
pub struct DocOld {
    pub group: String,
    pub id: String,
    pub body: String,
}

/// The same document, adopting 3 hash shards under a new template.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Doc")]
#[pk(
    template = "DOC#{group}",
    shard = "hash(id)",
    n = 3,
    legacy = "OLD#{group}"
)]
#[sk(template = "DOC#{id}")]
pub struct Doc {
    pub group: String,
    pub id: String,
    pub body: String,
}

/// A versioned account, before and during a 2 -> 5 reshard.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Acct")]
#[pk(template = "ACCT#{org}", shard = "hash(id)", n = 2)]
#[sk(template = "A#{id}")]
pub struct AcctAt2 {
    pub org: String,
    pub id: String,
    pub coins: i64,
    #[sharded(version)]
    pub version: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Acct")]
#[pk(template = "ACCT#{org}", shard = "hash(id)", n = 5, previous_n = 2)]
#[sk(template = "A#{id}")]
pub struct Acct {
    pub org: String,
    pub id: String,
    pub coins: i64,
    #[sharded(version)]
    pub version: u64,
}

fn doc(id: &str, body: &str) -> Doc {
    Doc {
        group: "g".into(),
        id: id.into(),
        body: body.into(),
    }
}

fn old(id: &str, body: &str) -> DocOld {
    DocOld {
        group: "g".into(),
        id: id.into(),
        body: body.into(),
    }
}

/// Writes `doc` at its previous (legacy) place only, as the service did before the transition.
async fn at_previous(repo: &Repo<Doc>, doc: &DocOld) {
    repo.for_entity::<DocOld>().put(doc).await.unwrap();
}

/// Writes `doc` at its current place with the raw SDK, leaving whatever is at its previous
/// place: the state a write made before the rule "no copy left behind" (or the migration's
/// copy step) leaves.
async fn raw_current(repo: &Repo<Doc>, doc: &Doc) {
    repo.client()
        .put_item()
        .table_name(repo.table())
        .set_item(Some(doc.to_item().unwrap()))
        .send()
        .await
        .unwrap();
}

/// Whether a raw `GetItem` finds an item at exactly this key.
async fn stored(repo: &Repo<Doc>, pk: String, id: &str) -> Option<String> {
    let item = repo
        .client()
        .get_item()
        .table_name(repo.table())
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(Doc::sk(id).unwrap()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item?;
    item.get("body").and_then(|b| b.as_s().ok()).cloned()
}

async fn previous_copy(repo: &Repo<Doc>, id: &str) -> Option<String> {
    stored(repo, DocOld::pk("g").unwrap(), id).await
}

async fn current_copy(repo: &Repo<Doc>, id: &str) -> Option<String> {
    stored(repo, Doc::pk("g", id).unwrap(), id).await
}

/// What every read path says of `id`: `get`, the query, and the state after a migration.
async fn assert_gone_for_good(repo: &Repo<Doc>, id: &str) {
    assert_eq!(Doc::get(repo, "g", id).await.unwrap(), None, "get of {id}");
    let listed = Doc::query(repo, "g").collect().await.unwrap();
    assert!(
        listed.iter().all(|d| d.id != id),
        "the query shows {id}: {listed:?}"
    );
    repo.migrate()
        .delete_delay(Duration::ZERO)
        .run()
        .await
        .unwrap();
    assert_eq!(
        Doc::get(repo, "g", id).await.unwrap(),
        None,
        "{id} after the migration"
    );
    assert_eq!(previous_copy(repo, id).await, None);
    assert_eq!(current_copy(repo, id).await, None);
}

// Defect 3: a stale old copy must not outlive its item.

#[tokio::test]
async fn a_transactional_delete_if_removes_the_previous_copy_too() {
    let repo: Repo<Doc> = repo("tw-delete-if").await;
    at_previous(&repo, &old("a", "v1")).await;
    raw_current(&repo, &doc("a", "v2")).await;
    let f = Doc::fields();
    repo.transaction()
        .delete_if(&doc("a", "v2"), f.body.eq("v2".to_owned()))
        .commit()
        .await
        .unwrap();
    assert_gone_for_good(&repo, "a").await;
}

#[tokio::test]
async fn a_moved_items_source_leaves_no_previous_copy() {
    let repo: Repo<Doc> = repo("tw-move-source").await;
    at_previous(&repo, &old("a", "v1")).await;
    raw_current(&repo, &doc("a", "v2")).await;
    repo.transaction()
        .move_item(&doc("a", "v2"), &doc("b", "v2"))
        .commit()
        .await
        .unwrap();
    assert_eq!(
        Doc::get(&repo, "g", "b").await.unwrap().map(|d| d.body),
        Some("v2".into())
    );
    assert_gone_for_good(&repo, "a").await;
}

#[tokio::test]
async fn an_expired_current_copy_does_not_bring_the_old_one_back() {
    let repo: Repo<Doc> = repo("tw-ttl").await;
    at_previous(&repo, &old("a", "v1")).await;
    // A current-layout write of the item not yet migrated.
    let f = Doc::fields();
    Doc::update(&repo, "g", "a")
        .set(f.body, "v2".to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(current_copy(&repo, "a").await.as_deref(), Some("v2"));
    // DynamoDB's time-to-live sweeper deletes the current copy, and only it.
    repo.client()
        .delete_item()
        .table_name(repo.table())
        .key("pk", AttributeValue::S(Doc::pk("g", "a").unwrap()))
        .key("sk", AttributeValue::S(Doc::sk("a").unwrap()))
        .send()
        .await
        .unwrap();
    assert_gone_for_good(&repo, "a").await;
}

#[tokio::test]
async fn writes_during_a_transition_leave_no_copy_at_the_previous_place() {
    let repo: Repo<Doc> = repo("tw-no-copy").await;
    let f = Doc::fields();
    for id in [
        "put",
        "put_if",
        "update",
        "tx_put",
        "tx_put_if",
        "tx_update",
    ] {
        at_previous(&repo, &old(id, "v1")).await;
    }
    repo.put(&doc("put", "v2")).await.unwrap();
    repo.put_if(&doc("put_if", "v2"), f.body.eq("v1".to_owned()))
        .await
        .unwrap();
    Doc::update(&repo, "g", "update")
        .set(f.body, "v2".to_owned())
        .send()
        .await
        .unwrap();
    repo.transaction()
        .put(&doc("tx_put", "v2"))
        .put_if(&doc("tx_put_if", "v2"), f.body.eq("v1".to_owned()))
        .update(Doc::update(&repo, "g", "tx_update").set(f.body, "v2".to_owned()))
        .commit()
        .await
        .unwrap();
    for id in [
        "put",
        "put_if",
        "update",
        "tx_put",
        "tx_put_if",
        "tx_update",
    ] {
        assert_eq!(previous_copy(&repo, id).await, None, "{id}");
        assert_eq!(current_copy(&repo, id).await.as_deref(), Some("v2"), "{id}");
    }
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
}

// Defect 4: previous copies first, in a phase of their own.

#[tokio::test]
async fn a_batch_delete_whose_previous_deletes_stay_unprocessed_keeps_the_current_copies() {
    let plain: Repo<Doc> = repo("tw-batch-delete").await;
    // 13 items: 26 deletes, more than one request of 25.
    let docs: Vec<Doc> = (0..13).map(|i| doc(&format!("d{i}"), "v2")).collect();
    for d in &docs {
        at_previous(&plain, &old(&d.id, "v1")).await;
        raw_current(&plain, d).await;
    }
    let faults = Faults::new();
    faults.throttle_partition(DocOld::pk("g").unwrap());
    let repo: Repo<Doc> = Repo::new(faulty_client(&faults, 1).await, plain.table())
        .with_batch_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        });
    let err = repo.batch_delete(&docs).await.unwrap_err();
    let Error::BatchIncomplete { unprocessed, .. } = &err else {
        panic!("expected BatchIncomplete, got {err:?}");
    };
    let pk_of = |item: &sharded::keys::Item| item["pk"].as_s().unwrap().clone();
    for d in &docs {
        assert_eq!(previous_copy(&plain, &d.id).await.as_deref(), Some("v1"));
        assert_eq!(
            current_copy(&plain, &d.id).await.as_deref(),
            Some("v2"),
            "{}: its current copy went while its previous one stayed",
            d.id
        );
        let listed: Vec<String> = unprocessed
            .iter()
            .filter(|k| k["sk"].as_s().unwrap() == &Doc::sk(&d.id).unwrap())
            .map(pk_of)
            .collect();
        assert!(
            listed.contains(&DocOld::pk("g").unwrap())
                && listed.contains(&Doc::pk("g", &d.id).unwrap()),
            "{} is listed with both its keys: {listed:?}",
            d.id
        );
    }
    // Without the fault, the same batch completes.
    faults.clear();
    repo.batch_delete(&docs).await.unwrap();
    for d in &docs {
        assert_eq!(previous_copy(&plain, &d.id).await, None);
        assert_eq!(current_copy(&plain, &d.id).await, None);
    }
}

// Defect 6: the previous place is respected by conditional transactional writes.

#[tokio::test]
async fn a_move_onto_a_key_held_at_its_previous_place_is_refused() {
    let repo: Repo<Doc> = repo("tw-move-target").await;
    at_previous(&repo, &old("b", "original")).await;
    repo.put(&doc("a", "mover")).await.unwrap();
    let err = repo
        .transaction()
        .move_item(&doc("a", "mover"), &doc("b", "mover"))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::TransactionCanceled { .. }),
        "expected a cancellation, got {err:?}"
    );
    assert_eq!(
        Doc::get(&repo, "g", "a").await.unwrap().map(|d| d.body),
        Some("mover".into())
    );
    repo.migrate()
        .delete_delay(Duration::ZERO)
        .run()
        .await
        .unwrap();
    assert_eq!(
        Doc::get(&repo, "g", "b").await.unwrap().map(|d| d.body),
        Some("original".into()),
        "the item the move would have replaced is still there"
    );
}

#[tokio::test]
async fn a_transactional_put_if_sees_the_item_at_its_previous_place() {
    let repo: Repo<Doc> = repo("tw-tx-put-if").await;
    at_previous(&repo, &old("a", "v1")).await;
    let f = Doc::fields();
    // The stored item satisfies the condition: the put goes through.
    repo.transaction()
        .put_if(&doc("a", "v2"), f.body.eq("v1".to_owned()))
        .commit()
        .await
        .unwrap();
    assert_eq!(current_copy(&repo, "a").await.as_deref(), Some("v2"));
    assert_eq!(previous_copy(&repo, "a").await, None);
    // It does not: refused, nothing written.
    at_previous(&repo, &old("b", "v1")).await;
    let err = repo
        .transaction()
        .put_if(&doc("b", "v2"), f.body.eq("other".to_owned()))
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TransactionCanceled { .. }), "{err:?}");
    assert_eq!(
        Doc::get(&repo, "g", "b").await.unwrap().map(|d| d.body),
        Some("v1".into())
    );
}

#[tokio::test]
async fn a_version_zero_transactional_put_does_not_replace_an_item_at_its_previous_place() {
    let repo: Repo<Acct> = repo("tw-tx-version").await;
    let before = AcctAt2 {
        org: "o".into(),
        id: "x".into(),
        coins: 10,
        version: 0,
    };
    let at2 = repo.for_entity::<AcctAt2>();
    at2.put(&before).await.unwrap(); // version 1
    at2.put(&AcctAt2 {
        version: 1,
        ..before.clone()
    })
    .await
    .unwrap(); // version 2
    let fresh = Acct {
        org: "o".into(),
        id: "x".into(),
        coins: 99,
        version: 0,
    };
    let err = repo.transaction().put(&fresh).commit().await.unwrap_err();
    assert!(matches!(err, Error::TransactionCanceled { .. }), "{err:?}");
    repo.migrate()
        .delete_delay(Duration::ZERO)
        .run()
        .await
        .unwrap();
    let kept = Acct::get(&repo, "o", "x").await.unwrap().unwrap();
    assert_eq!((kept.coins, kept.version), (10, 2));
}

// Defect 9: transactional reads see the previous place.

#[tokio::test]
async fn a_transactional_read_finds_an_item_at_its_previous_place_current_first() {
    let repo: Repo<Doc> = repo("tw-tx-get").await;
    at_previous(&repo, &old("a", "old-only")).await;
    at_previous(&repo, &old("b", "stale")).await;
    raw_current(&repo, &doc("b", "current")).await;
    let a = Doc::key("g", "a").unwrap();
    let b = Doc::key("g", "b").unwrap();
    let c = Doc::key("g", "c").unwrap();
    let read = repo.transact_get().get(&a).get(&b).get(&c);
    let mut answer = read.send().await.unwrap();
    assert_eq!(
        answer.take(&a).unwrap().map(|d| d.body),
        Some("old-only".into())
    );
    assert_eq!(
        answer.take(&b).unwrap().map(|d| d.body),
        Some("current".into())
    );
    assert_eq!(answer.take(&c).unwrap(), None);
}

// Defect 10: a batch cannot bypass optimistic locking.

#[tokio::test]
async fn a_batch_put_of_a_versioned_entity_is_refused_before_sending() {
    let repo: Repo<AcctAt2> = repo("tw-batch-version").await;
    let acct = AcctAt2 {
        org: "o".into(),
        id: "x".into(),
        coins: 1,
        version: 0,
    };
    repo.put(&acct).await.unwrap();
    let stale = AcctAt2 { coins: 5, ..acct };
    let err = repo.batch_put(&[stale]).await.unwrap_err();
    assert!(
        matches!(err, Error::VersionedBatch { entity: "Acct", .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("put"), "{err}");
    let kept = AcctAt2::get(&repo, "o", "x").await.unwrap().unwrap();
    assert_eq!((kept.coins, kept.version), (1, 1));
}

/// `put_new` is safe to retry in a transition as outside one: an identical item already
/// stored (here at the previous place, written before the transition was declared) is this
/// call's own write, and a different one is `AlreadyExists`.
#[tokio::test]
async fn put_new_of_an_identical_item_at_its_previous_place_is_its_own_write() {
    let repo: Repo<Doc> = repo("tw-put-new-same").await;
    at_previous(&repo, &old("same", "v1")).await;
    at_previous(&repo, &old("other", "v1")).await;
    repo.put_new(&doc("same", "v1"))
        .await
        .expect("an identical item is this put_new's own write");
    match repo.put_new(&doc("other", "v2")).await {
        Err(Error::AlreadyExists { .. }) => {}
        other => panic!("a different item at the previous place: {other:?}"),
    }
    let found = Doc::get(&repo, "g", "other").await.unwrap();
    assert_eq!(
        found.map(|d| d.body).as_deref(),
        Some("v1"),
        "nothing replaced"
    );
}

//! The marks of a layout move (the table's `move_attribute`): every write of a move says so in
//! the item it writes, so one DynamoDB stream record tells a move from a new item or a delete.
//! The new copy carries `copy` (the migration's, in two steps or one, and a write that settles
//! its item first), a put that supersedes an item not yet migrated carries `replace`, and an
//! old copy is marked `moved` before it is deleted; a user's delete stays unmarked. The old
//! copy is read before its delete by failing every `DeleteItem` (a fault between the two
//! requests of a move). The entity refuses unknown fields, so every read also shows the
//! marker never reaches it.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::migrate::Migrate;
use sharded::schema::MOVE_ATTRIBUTE;
use sharded::{Repo, ShardedEntity};
use sharded_testkit::faults::{Faults, InjectedError};

use crate::support::{faulty_client, repo, RawItem};

/// A note before sharding: one unsharded partition per group.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
#[sharded(entity = "Note")]
#[pk(template = "OLD#{group}")]
#[sk(template = "NOTE#{id}")]
struct NoteOld {
    group: String,
    id: String,
    body: String,
}

/// The same note, adopting 3 hash shards under a new template.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
#[sharded(entity = "Note")]
#[pk(
    template = "NOTE#{group}",
    shard = "hash(id)",
    n = 3,
    legacy = "OLD#{group}"
)]
#[sk(template = "NOTE#{id}")]
struct Note {
    group: String,
    id: String,
    body: String,
}

fn note(id: &str, body: &str) -> Note {
    Note {
        group: "g".into(),
        id: id.into(),
        body: body.into(),
    }
}

/// Writes the note at its previous (legacy) place only, as the service did before.
async fn at_previous(repo: &Repo<Note>, id: &str, body: &str) {
    let old = NoteOld {
        group: "g".into(),
        id: id.into(),
        body: body.into(),
    };
    repo.for_entity::<NoteOld>().put(&old).await.unwrap();
}

/// The raw item at partition `pk`, read consistently.
async fn raw(repo: &Repo<Note>, pk: String, id: &str) -> Option<RawItem> {
    repo.client()
        .get_item()
        .table_name(repo.table())
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(Note::sk(id).unwrap()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

async fn previous(repo: &Repo<Note>, id: &str) -> Option<RawItem> {
    raw(repo, NoteOld::pk("g").unwrap(), id).await
}

async fn current(repo: &Repo<Note>, id: &str) -> Option<RawItem> {
    raw(repo, Note::pk("g", id).unwrap(), id).await
}

/// The body and the move marker of a raw item.
fn shown(item: Option<RawItem>) -> Option<(String, Option<String>)> {
    let item = item?;
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    Some((text("body")?, text(MOVE_ATTRIBUTE)))
}

fn marked(body: &str, mark: &str) -> Option<(String, Option<String>)> {
    Some((body.to_owned(), Some(mark.to_owned())))
}

fn unmarked(body: &str) -> Option<(String, Option<String>)> {
    Some((body.to_owned(), None))
}

/// A repository of the same table whose `DeleteItem`s all fail (HTTP 500, nothing applied),
/// and the faults, to clear.
async fn without_deletes(repo: &Repo<Note>) -> (Repo<Note>, Faults) {
    let faults = Faults::new();
    faults.fail_next("DeleteItem", InjectedError::InternalServerError, 10_000);
    (
        Repo::new(faulty_client(&faults, 1).await, repo.table()),
        faults,
    )
}

#[tokio::test]
async fn the_migrations_copy_is_marked_and_its_old_copy_marked_before_its_delete() {
    for (prefix, delay) in [
        ("mm-two-steps", Duration::from_millis(1)),
        ("mm-one-step", Duration::ZERO),
    ] {
        let repo: Repo<Note> = repo(prefix).await;
        at_previous(&repo, "a", "v1").await;
        let (stopped, faults) = without_deletes(&repo).await;
        let run = stopped
            .migrate()
            .delete_delay(delay)
            .max_attempts(1)
            .run()
            .await;
        assert!(run.is_err(), "{prefix}: the old copy's delete failed");
        assert_eq!(
            shown(previous(&repo, "a").await),
            marked("v1", "moved"),
            "{prefix}"
        );
        assert_eq!(
            shown(current(&repo, "a").await),
            marked("v1", "copy"),
            "{prefix}"
        );
        // Both copies are there; the item reads once, without the marker.
        assert_eq!(
            Note::get(&repo, "g", "a").await.unwrap(),
            Some(note("a", "v1"))
        );
        assert_eq!(
            Note::query(&repo, "g").collect().await.unwrap(),
            vec![note("a", "v1")],
            "{prefix}"
        );
        faults.clear();
        let report = repo.migrate().delete_delay(delay).run().await.unwrap();
        assert_eq!(
            report.progress.superseded, 1,
            "{prefix}: deleted, not copied again"
        );
        assert_eq!(previous(&repo, "a").await, None, "{prefix}");
        assert_eq!(
            shown(current(&repo, "a").await),
            marked("v1", "copy"),
            "{prefix}"
        );
        assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    }
}

#[tokio::test]
async fn an_old_copy_whose_current_place_holds_a_newer_write_is_marked_before_its_delete() {
    let repo: Repo<Note> = repo("mm-taken").await;
    at_previous(&repo, "a", "v1").await;
    // A newer write at the current place, by a writer that left the old copy.
    repo.client()
        .put_item()
        .table_name(repo.table())
        .set_item(Some(note("a", "v2").to_item().unwrap()))
        .send()
        .await
        .unwrap();
    let (stopped, faults) = without_deletes(&repo).await;
    let run = stopped.migrate().max_attempts(1).run().await;
    assert!(run.is_err());
    assert_eq!(shown(previous(&repo, "a").await), marked("v1", "moved"));
    assert_eq!(
        shown(current(&repo, "a").await),
        unmarked("v2"),
        "untouched"
    );
    faults.clear();
    repo.migrate().run().await.unwrap();
    assert_eq!(previous(&repo, "a").await, None);
    assert_eq!(shown(current(&repo, "a").await), unmarked("v2"));
}

#[tokio::test]
async fn an_update_of_an_item_not_yet_migrated_copies_it_marked_first() {
    let repo: Repo<Note> = repo("mm-update").await;
    at_previous(&repo, "a", "v1").await;
    let f = Note::fields();
    let (stopped, faults) = without_deletes(&repo).await;
    // The settle's copy is made and its old copy marked; its delete fails, and so does the
    // update, which is not sent.
    let failed = Note::update(&stopped, "g", "a")
        .set(f.body, "v2".to_owned())
        .send()
        .await;
    assert!(failed.is_err());
    assert_eq!(shown(previous(&repo, "a").await), marked("v1", "moved"));
    assert_eq!(shown(current(&repo, "a").await), marked("v1", "copy"));
    faults.clear();
    Note::update(&repo, "g", "a")
        .set(f.body, "v2".to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(previous(&repo, "a").await, None);
    // An update keeps the marker of the copy it changed (its stream record is a MODIFY).
    assert_eq!(shown(current(&repo, "a").await), marked("v2", "copy"));
    assert_eq!(
        Note::get(&repo, "g", "a").await.unwrap(),
        Some(note("a", "v2"))
    );
}

#[tokio::test]
async fn a_put_that_supersedes_an_item_not_yet_migrated_is_marked_replace() {
    let repo: Repo<Note> = repo("mm-put").await;
    at_previous(&repo, "a", "v1").await;
    let (stopped, faults) = without_deletes(&repo).await;
    // The put is written; the old copy's delete fails, and the marked copy is left.
    stopped.put(&note("a", "v2")).await.unwrap();
    assert_eq!(shown(current(&repo, "a").await), marked("v2", "replace"));
    assert_eq!(shown(previous(&repo, "a").await), marked("v1", "moved"));
    assert_eq!(
        Note::get(&repo, "g", "a").await.unwrap(),
        Some(note("a", "v2"))
    );
    assert_eq!(
        Note::query(&repo, "g").collect().await.unwrap(),
        vec![note("a", "v2")]
    );
    faults.clear();
    // The migration deletes the marked copy without copying it.
    repo.migrate().run().await.unwrap();
    assert_eq!(previous(&repo, "a").await, None);
    assert_eq!(shown(current(&repo, "a").await), marked("v2", "replace"));

    // Without the fault, the old copy is gone when the put returns.
    at_previous(&repo, "b", "v1").await;
    repo.put(&note("b", "v2")).await.unwrap();
    assert_eq!(previous(&repo, "b").await, None);
    assert_eq!(shown(current(&repo, "b").await), marked("v2", "replace"));

    // A put over an item already migrated, or of a new item, carries no marker.
    repo.put(&note("a", "v3")).await.unwrap();
    repo.put(&note("c", "v1")).await.unwrap();
    assert_eq!(shown(current(&repo, "a").await), unmarked("v3"));
    assert_eq!(shown(current(&repo, "c").await), unmarked("v1"));
}

#[tokio::test]
async fn a_delete_during_a_transition_is_not_marked() {
    let repo: Repo<Note> = repo("mm-delete").await;
    at_previous(&repo, "a", "v1").await;
    let faults = Faults::new();
    let counted = Repo::<Note>::new(faulty_client(&faults, 1).await, repo.table());
    Note::delete(&counted, "g", "a").await.unwrap();
    assert_eq!(previous(&repo, "a").await, None);
    assert_eq!(current(&repo, "a").await, None);
    // One transaction of the two deletes, and no mark (an `UpdateItem`, or a mark in a
    // transaction, which would need a second one: a transaction cannot write one item
    // twice): the old place's REMOVE reads as the delete it is.
    assert_eq!(faults.requests("TransactWriteItems"), 1);
    assert_eq!(faults.requests("UpdateItem"), 0);
    assert_eq!(faults.requests("DeleteItem"), 0);
}

#[tokio::test]
async fn an_old_copy_marked_moved_whose_current_place_is_empty_is_not_read() {
    let repo: Repo<Note> = repo("mm-deleted-after").await;
    at_previous(&repo, "a", "v1").await;
    at_previous(&repo, "b", "v1").await;
    let (stopped, faults) = without_deletes(&repo).await;
    assert!(stopped.migrate().max_attempts(1).run().await.is_err());
    faults.clear();
    assert_eq!(shown(previous(&repo, "a").await), marked("v1", "moved"));
    // Something that ignores the transition (the time to live) deletes the current copy.
    repo.client()
        .delete_item()
        .table_name(repo.table())
        .key("pk", AttributeValue::S(Note::pk("g", "a").unwrap()))
        .key("sk", AttributeValue::S(Note::sk("a").unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(Note::get(&repo, "g", "a").await.unwrap(), None);
    assert_eq!(
        Note::query(&repo, "g").collect().await.unwrap(),
        vec![note("b", "v1")]
    );
    let f = Note::fields();
    assert_eq!(
        Note::query(&repo, "g")
            .filter(f.body.eq("v1".to_owned()))
            .collect()
            .await
            .unwrap(),
        vec![note("b", "v1")],
        "the lookup of a filtered query"
    );
    // The migration deletes it and copies nothing back.
    repo.migrate().run().await.unwrap();
    assert_eq!(previous(&repo, "a").await, None);
    assert_eq!(current(&repo, "a").await, None);
    assert_eq!(
        Note::get(&repo, "g", "b").await.unwrap(),
        Some(note("b", "v1"))
    );
}

#[tokio::test]
async fn a_put_during_a_transition_costs_one_transaction_unless_it_supersedes() {
    let repo: Repo<Note> = repo("mm-put-cost").await;
    let faults = Faults::new();
    let counted = Repo::<Note>::new(faulty_client(&faults, 1).await, repo.table());
    // Nothing at the previous place (migrated, or new): the put and the check, as one
    // transaction, what the put and the previous place's delete were before.
    counted.put(&note("a", "v1")).await.unwrap();
    assert_eq!(faults.requests("TransactWriteItems"), 1);
    assert_eq!(faults.requests("GetItem"), 0);
    assert_eq!(faults.requests("DeleteItem"), 0);
    // The item still at its previous place: the refused check, the superseding transaction
    // (the put and the mark), and the old copy's delete.
    at_previous(&repo, "b", "v1").await;
    faults.reset_counts();
    counted.put(&note("b", "v2")).await.unwrap();
    assert_eq!(faults.requests("TransactWriteItems"), 2);
    assert_eq!(faults.requests("DeleteItem"), 1);
    assert_eq!(faults.requests("GetItem"), 0);
}

//! Versions, timestamps and time to live: what the runtime maintains in an entity's fields.

use serde::{Deserialize, Serialize};
use sharded::schema::CreateTable;
use sharded::{Error, Repo, ShardedEntity};

use crate::support::repo;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "DOC#{doc_id}")]
struct Doc {
    doc_id: String,
    body: String,
    #[sharded(version)]
    version: u64,
    #[sharded(updated_at)]
    #[serde(rename = "updatedAt")]
    updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "SESSION#{user}", shard = "hash(id)", n = 4)]
#[sk(template = "ID#{id}")]
struct Session {
    user: String,
    id: String,
    #[sharded(ttl)]
    expires: u64,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn updates_bump_the_version_and_only_the_version_read_wins() {
    let repo: Repo<Doc> = repo("lifecycle-version").await;
    repo.put(&Doc {
        doc_id: "d1".into(),
        body: "v0".into(),
        version: 0,
        updated_at: None,
    })
    .await
    .unwrap();
    let f = Doc::fields();
    let read = Doc::get(&repo, "d1").await.unwrap().unwrap();
    // Two writers read version `read.version` and race: exactly one wins.
    let (a, b) = tokio::join!(
        Doc::update(&repo, "d1")
            .set(f.body, "from a")
            .if_version(read.version)
            .send(),
        Doc::update(&repo, "d1")
            .set(f.body, "from b")
            .if_version(read.version)
            .send(),
    );
    let results = [a, b];
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{results:?}");
    let conflict = results.into_iter().find_map(Result::err).unwrap();
    match conflict {
        Error::VersionConflict {
            expected, found, ..
        } => assert_eq!((expected, found), (read.version, Some(read.version + 1))),
        other => panic!("{other}"),
    }
    let stored = Doc::get(&repo, "d1").await.unwrap().unwrap();
    assert_eq!(stored.version, read.version + 1);
    assert!(stored.body == "from a" || stored.body == "from b");
    // updated_at is written by every update (RFC 3339 text, read back by chrono).
    let stamp = stored.updated_at.expect("updated_at set");
    let age = chrono::Utc::now() - stamp;
    assert!(age.num_seconds().abs() < 120, "{stamp}");
    // The version is the runtime's.
    let err = Doc::update(&repo, "d1")
        .set(f.version, 7_u64)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidUpdate(sharded::update::UpdateRefusal::VersionChanged { .. })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn queries_hide_expired_items_unless_asked() {
    // A table without time to live enabled: DynamoDB Local deletes expired items in the
    // background when it is on, and this test needs one to stay, as on DynamoDB before its
    // lazy deletion gets to it.
    let client = crate::support::client().await;
    let table = sharded_testkit::local::unique_table_name("lifecycle-ttl");
    Session::table_definition()
        .create_table(&client, &table)
        .send()
        .await
        .unwrap();
    let repo: Repo<Session> = Repo::new(client, table);
    let session = |id: &str, expires| Session {
        user: "u1".into(),
        id: id.into(),
        expires,
    };
    repo.batch_put(&[
        session("live", now() + 3_600),
        session("expired", now() - 60),
    ])
    .await
    .unwrap();
    let ids =
        |sessions: Vec<Session>| -> Vec<String> { sessions.into_iter().map(|s| s.id).collect() };
    assert_eq!(
        ids(Session::query(&repo, "u1").collect().await.unwrap()),
        ["live"]
    );
    assert_eq!(
        ids(Session::query(&repo, "u1")
            .include_expired()
            .collect()
            .await
            .unwrap()),
        ["expired", "live"]
    );
}

#[tokio::test]
async fn create_table_enables_time_to_live_on_the_ttl_attribute() {
    let repo: Repo<Session> = repo("lifecycle-ttl-on").await;
    let ttl = repo
        .client()
        .describe_time_to_live()
        .table_name(repo.table())
        .send()
        .await
        .unwrap();
    let description = ttl.time_to_live_description.unwrap();
    assert_eq!(description.attribute_name.as_deref(), Some("expires"));
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "NOTE#{note_id}")]
struct Note {
    note_id: String,
    text: String,
    #[sharded(version)]
    version: u64,
    #[sharded(created_at)]
    created: Option<u64>,
    #[sharded(updated_at)]
    updated: Option<u64>,
}

#[tokio::test]
async fn puts_check_and_bump_the_version_and_stamp_the_times() {
    let repo: Repo<Note> = repo("lifecycle-put").await;
    let note = Note {
        note_id: "n1".into(),
        text: "first".into(),
        version: 0,
        created: None,
        updated: None,
    };
    repo.put(&note).await.unwrap();
    let stored = Note::get(&repo, "n1").await.unwrap().unwrap();
    assert_eq!(stored.version, 1, "a put writes the version read + 1");
    let created = stored.created.expect("created_at stamped");
    assert!(created.abs_diff(now()) < 120);
    assert!(stored.updated.is_some());
    // Two writers read version 1 and race their puts: exactly one wins, every time.
    for round in 0..5 {
        let read = Note::get(&repo, "n1").await.unwrap().unwrap();
        let edit = |text: &str| Note {
            text: text.into(),
            ..read.clone()
        };
        let (a, b) = (edit(&format!("a{round}")), edit(&format!("b{round}")));
        let (ra, rb) = tokio::join!(repo.put(&a), repo.put(&b));
        let results = [ra, rb];
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        let conflict = results.into_iter().find_map(Result::err).unwrap();
        assert!(
            matches!(conflict, Error::VersionConflict { expected, found: Some(found), .. } if expected == read.version && found == read.version + 1),
            "{conflict}"
        );
        let stored = Note::get(&repo, "n1").await.unwrap().unwrap();
        assert_eq!(stored.version, read.version + 1);
        assert_eq!(stored.created, Some(created), "created_at is kept");
    }
    // A stale put (version 0 again) is refused; nothing changes.
    let stale = repo.put(&note).await.unwrap_err();
    assert!(
        matches!(stale, Error::VersionConflict { expected: 0, .. }),
        "{stale}"
    );
}

#[tokio::test]
async fn a_transaction_put_checks_and_bumps_the_version_too() {
    let repo: Repo<Note> = repo("lifecycle-tx").await;
    let note = Note {
        note_id: "n1".into(),
        text: "first".into(),
        version: 0,
        created: None,
        updated: None,
    };
    repo.put(&note).await.unwrap();
    let read = Note::get(&repo, "n1").await.unwrap().unwrap();
    let tx = |n: &Note| repo.transaction().put(n);
    let stale = tx(&note).commit().await.unwrap_err();
    assert!(
        matches!(stale, Error::TransactionCanceled { .. }),
        "{stale}"
    );
    let edited = Note {
        text: "second".into(),
        ..read.clone()
    };
    tx(&edited).commit().await.unwrap();
    let stored = Note::get(&repo, "n1").await.unwrap().unwrap();
    assert_eq!(
        (stored.text.as_str(), stored.version),
        ("second", read.version + 1)
    );
    assert_eq!(stored.created, read.created, "created_at is kept");
}

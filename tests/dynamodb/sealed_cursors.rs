//! Cursors bound to everything that shapes a query's answer: a sealed cursor (and a plain
//! one) is accepted only by the query that issued it, with the same filter and values, the
//! same projection and the same expired-items mode; cursor keys are at least 16 bytes; a
//! rotated key still opens the cursors of the key it replaced.

use serde::{Deserialize, Serialize};
use sharded::{
    cursor::CursorError, cursor::CursorKey, Cursor, Error, Page, Query, Repo, ShardedEntity,
    ShardedProjection,
};
use sharded_testkit::faults::Faults;

use crate::support::{faulty, repo};

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "BOARD#{board}", shard = "hash(id)", n = 4)]
#[sk(template = "NOTE#{id}")]
struct Note {
    board: String,
    id: String,
    note: String,
    #[sharded(ttl)]
    expires: Option<u64>,
}

#[derive(ShardedProjection, Deserialize, Debug, PartialEq)]
#[projection(of = Note)]
struct NoteText {
    id: String,
    note: String,
}

/// 40 notes of board `b1`: `note` is `a` for even numbers, `b` for odd ones; none expires.
async fn board(prefix: &str) -> (Repo<Note>, Vec<Note>) {
    let repo = repo::<Note>(prefix).await;
    let notes: Vec<Note> = (0..40)
        .map(|i| Note {
            board: "b1".into(),
            id: format!("n{i:02}"),
            note: if i % 2 == 0 { "a" } else { "b" }.into(),
            expires: None,
        })
        .collect();
    repo.batch_put(&notes).await.unwrap();
    (repo, notes)
}

fn key(secret: &str) -> CursorKey {
    CursorKey::new(secret.as_bytes()).unwrap()
}

fn notes_a(repo: &Repo<Note>) -> Query<Note> {
    Note::query(repo, "b1").filter(Note::fields().note.eq("a"))
}

/// Every page of `query()` after `cursor`, to the page without a cursor.
async fn page_on<O>(
    query: impl Fn() -> Query<Note, O>,
    size: usize,
    mut cursor: Option<Cursor>,
) -> Vec<O> {
    let mut items = Vec::new();
    loop {
        let page = query().page(size, cursor.as_ref()).await.unwrap();
        assert!(page.items.len() <= size);
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return items,
        }
    }
}

fn refused_as_another_query<O>(result: Result<Page<O>, Error>, what: &str) {
    match result {
        Err(Error::Cursor(CursorError::WrongQuery)) => {}
        Err(other) => panic!("{what}: expected WrongQuery, got {other}"),
        Ok(page) => panic!("{what}: accepted, {} items", page.items.len()),
    }
}

/// The reproduction: a cursor of `filter note == a` continued with `note == b`, with no
/// filter, with `include_expired`, with a projection or in the other order is refused before
/// any request is sent, sealed or plain. The same query continues to the end, every item once.
///
/// Before cursors were bound to the whole query, the sealed cursor was accepted by the first
/// three (their fingerprint left the filter and the expiry mode out) and paged on.
#[tokio::test]
async fn a_cursor_opens_only_for_the_query_that_issued_it() {
    let (table, notes) = board("sealed-bound").await;
    let faults = Faults::new();
    let repo = faulty(&table, &faults).await;
    let key = key("0123456789abcdef0123456789abcdef");
    let f = Note::fields();
    let expected: Vec<Note> = notes.iter().filter(|n| n.note == "a").cloned().collect();

    for sealed in [true, false] {
        let seal = |q: Query<Note>| if sealed { q.seal_cursors(&key) } else { q };
        let first = seal(notes_a(&repo)).page(5, None).await.unwrap();
        assert_eq!(first.items, expected[..5]);
        let cursor = first.cursor.expect("more pages");
        let sent = faults.requests("Query");

        refused_as_another_query(
            seal(Note::query(&repo, "b1").filter(f.note.eq("b")))
                .page(5, Some(&cursor))
                .await,
            "another filter value",
        );
        refused_as_another_query(
            seal(Note::query(&repo, "b1")).page(5, Some(&cursor)).await,
            "no filter",
        );
        refused_as_another_query(
            seal(notes_a(&repo).include_expired())
                .page(5, Some(&cursor))
                .await,
            "include_expired",
        );
        refused_as_another_query(
            seal(notes_a(&repo).filter(f.id.ne("n40")))
                .page(5, Some(&cursor))
                .await,
            "one more filter",
        );
        refused_as_another_query(
            seal(notes_a(&repo).descending())
                .page(5, Some(&cursor))
                .await,
            "another order",
        );
        let projected = if sealed {
            notes_a(&repo).project::<NoteText>().seal_cursors(&key)
        } else {
            notes_a(&repo).project::<NoteText>()
        };
        refused_as_another_query(projected.page(5, Some(&cursor)).await, "a projection");
        assert_eq!(
            faults.requests("Query"),
            sent,
            "a refused cursor sends nothing"
        );

        // The same query continues: every item once, in order.
        let rest = page_on(|| seal(notes_a(&repo)), 5, Some(cursor)).await;
        assert_eq!(rest, expected[5..], "sealed: {sealed}");
    }

    // A projected query's cursor pages its own listing, and no other.
    let projected = || notes_a(&repo).project::<NoteText>().seal_cursors(&key);
    let first = projected().page(7, None).await.unwrap();
    let cursor = first.cursor.clone().expect("more pages");
    let mut ids: Vec<String> = first.items.into_iter().map(|t| t.id).collect();
    ids.extend(
        page_on(projected, 7, Some(cursor.clone()))
            .await
            .into_iter()
            .map(|t| t.id),
    );
    let expected_ids: Vec<String> = expected.iter().map(|n| n.id.clone()).collect();
    assert_eq!(ids, expected_ids);
    refused_as_another_query(
        notes_a(&repo)
            .seal_cursors(&key)
            .page(7, Some(&cursor))
            .await,
        "the projected query's cursor without the projection",
    );
}

/// A sealed cursor's seal covers the query's description: rewriting the fingerprint it
/// carries to another query's (computed from a plain cursor of that query, as anyone can)
/// does not make it open there.
#[tokio::test]
async fn a_sealed_cursor_with_another_querys_fingerprint_does_not_verify() {
    let (repo, _) = board("sealed-moved").await;
    let key = key("0123456789abcdef0123456789abcdef");
    let f = Note::fields();
    let sealed = notes_a(&repo)
        .seal_cursors(&key)
        .page(5, None)
        .await
        .unwrap()
        .cursor
        .unwrap();
    let other = || Note::query(&repo, "b1").filter(f.note.eq("b"));
    let plain_other = other().page(5, None).await.unwrap().cursor.unwrap();
    // Version, seal, then the 16-byte fingerprint.
    let mut raw = unb64(sealed.as_str());
    raw[2..18].copy_from_slice(&unb64(plain_other.as_str())[2..18]);
    let moved = Cursor::from(b64(&raw));
    let result = other().seal_cursors(&key).page(5, Some(&moved)).await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Unverified))),
        "{:?}",
        result.map(|p| p.items)
    );
}

#[tokio::test]
async fn cursor_keys_shorter_than_16_bytes_are_refused() {
    for secret in [&b""[..], b"key", b"fifteen bytes.."] {
        let error = CursorKey::new(secret).unwrap_err();
        assert_eq!(error.len(), secret.len());
        let message = error.to_string();
        assert!(message.contains("at least 16 bytes"), "{message}");
        // With `?` in a function returning `sharded::Error`.
        let error: Error = error.into();
        assert!(matches!(error, Error::CursorKey(_)), "{error}");
    }
    assert!(CursorKey::new(b"sixteen bytes..!").is_ok());
}

/// A rotation: cursors sealed with the old key still open under `new.accepting(&old)`, which
/// seals the next cursors with the new key: the old key alone refuses them, the new key alone
/// opens them, and the listing completes with every item once.
#[tokio::test]
async fn a_rotated_key_opens_old_cursors_and_seals_with_the_new_key() {
    let (repo, notes) = board("sealed-rotation").await;
    let expected: Vec<Note> = notes.iter().filter(|n| n.note == "a").cloned().collect();
    let old = key("the old secret, 32 random bytes.");
    let new = key("the new secret, 32 random bytes.");
    let rotated = new.clone().accepting(&old);

    let before = notes_a(&repo)
        .seal_cursors(&old)
        .page(5, None)
        .await
        .unwrap();
    let old_cursor = before.cursor.expect("more pages");
    let during = notes_a(&repo)
        .seal_cursors(&rotated)
        .page(5, Some(&old_cursor))
        .await
        .unwrap();
    assert_eq!(during.items, expected[5..10]);
    let new_cursor = during.cursor.expect("more pages");

    let result = notes_a(&repo)
        .seal_cursors(&old)
        .page(5, Some(&new_cursor))
        .await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Unverified))),
        "the old key alone: {:?}",
        result.map(|p| p.items)
    );
    let result = notes_a(&repo)
        .seal_cursors(&new)
        .page(5, Some(&old_cursor))
        .await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Unverified))),
        "the old key dropped: {:?}",
        result.map(|p| p.items)
    );
    let rest = page_on(|| notes_a(&repo).seal_cursors(&new), 5, Some(new_cursor)).await;
    let mut all = before.items;
    all.extend(during.items);
    all.extend(rest);
    assert_eq!(all, expected);
}

fn unb64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

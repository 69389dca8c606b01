//! Cursor paging: every item exactly once, in order, at any page size; bad cursors refused.

use sharded::{cursor::CursorError, Cursor};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sharded::{Error, Repo, ShardedEntity};

use crate::entities::{score, Comment, Event, Score, ScoreN20};
use crate::support::{page_to_end, repo};

async fn page_all(repo: &Repo<Score>, size: usize, descending: bool) -> (Vec<Score>, usize) {
    let pages = page_to_end(
        || {
            let q = Score::query(repo, "g1");
            if descending {
                q.descending()
            } else {
                q
            }
        },
        size,
    )
    .await;
    let count = pages.len();
    (pages.into_iter().flatten().collect(), count)
}

#[tokio::test]
async fn paging_5000_items_yields_each_exactly_once_in_order() {
    let repo = repo::<Score>("page-5000").await;
    let scores: Vec<Score> = (0..5000)
        .map(|i| score("g1", &format!("p{i:04}"), (i * 7) % 1000))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let everything = Score::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(everything.len(), 5000);
    for (size, descending) in [(100, false), (7, true), (1, false)] {
        let (paged, pages) = page_all(&repo, size, descending).await;
        let mut expected = everything.clone();
        if descending {
            expected.reverse();
        }
        assert_eq!(paged.len(), 5000, "page size {size}");
        assert_eq!(
            paged, expected,
            "page size {size}: order, duplicates or gaps"
        );
        assert!(pages >= 5000 / size, "page size {size}: only {pages} pages");
    }
}

#[tokio::test]
async fn items_written_between_pages_are_seen_once_and_never_repeat() {
    let repo = repo::<Score>("page-live").await;
    let scores: Vec<Score> = (0..100)
        .map(|i| score("g1", &format!("p{i:03}"), i))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let first = Score::query(&repo, "g1").page(30, None).await.unwrap();
    assert_eq!(first.items, scores[..30]);
    // Behind the cursor (never shown), and ahead of it (shown once, in place).
    repo.put(&score("g1", "late-low", 5)).await.unwrap();
    repo.put(&score("g1", "late-high", 1000)).await.unwrap();
    let mut rest = Vec::new();
    let mut cursor = first.cursor;
    while let Some(c) = cursor {
        let page = Score::query(&repo, "g1").page(30, Some(&c)).await.unwrap();
        rest.extend(page.items);
        cursor = page.cursor;
    }
    let mut expected = scores[30..].to_vec();
    expected.push(score("g1", "late-high", 1000));
    assert_eq!(rest, expected);
}

#[tokio::test]
async fn bad_cursors_are_refused_with_a_reason() {
    let repo = repo::<Score>("page-bad").await;
    let scores: Vec<Score> = (0..50).map(|i| score("g1", &format!("p{i}"), i)).collect();
    repo.batch_put(&scores).await.unwrap();
    repo.put(&score("g2", "p1", 1)).await.unwrap();
    let page = Score::query(&repo, "g1").page(10, None).await.unwrap();
    let cursor = page.cursor.expect("more pages");

    // Another logical key, another order, another condition: another query.
    let other_game = Score::query(&repo, "g2").page(10, Some(&cursor)).await;
    assert!(
        matches!(other_game, Err(Error::Cursor(CursorError::WrongQuery))),
        "{other_game:?}"
    );
    let other_order = Score::query(&repo, "g1")
        .descending()
        .page(10, Some(&cursor))
        .await;
    assert!(matches!(
        other_order,
        Err(Error::Cursor(CursorError::WrongQuery))
    ));
    // Another entity sharing the partitions.
    let comments = repo.for_entity::<Comment>();
    let other_entity = Comment::query(&comments, "g1")
        .page(10, Some(&cursor))
        .await;
    assert!(
        matches!(other_entity, Err(Error::Cursor(CursorError::WrongQuery))),
        "{other_entity:?}"
    );
    // The same key with another shard count (n changed from 10 to 20).
    let resharded = repo.for_entity::<ScoreN20>();
    let other_n = ScoreN20::query(&resharded, "g1")
        .page(10, Some(&cursor))
        .await;
    assert!(
        matches!(
            other_n,
            Err(Error::Cursor(CursorError::ShardCount {
                cursor: 10,
                query: 20
            }))
        ),
        "{other_n:?}"
    );
    // A modified token.
    let mut chars: Vec<char> = cursor.as_str().chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    let tampered = Cursor::from(chars.into_iter().collect::<String>());
    let result = Score::query(&repo, "g1").page(10, Some(&tampered)).await;
    assert!(matches!(result, Err(Error::Cursor(_))), "{result:?}");
    // Garbage.
    for garbage in [
        "",
        "not a cursor",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "%%%",
    ] {
        let result = Score::query(&repo, "g1")
            .page(10, Some(&Cursor::from(garbage.to_owned())))
            .await;
        assert!(
            matches!(result, Err(Error::Cursor(_))),
            "{garbage:?}: {result:?}"
        );
    }
    // The genuine cursor still works after all that.
    let next = Score::query(&repo, "g1")
        .page(10, Some(&cursor))
        .await
        .unwrap();
    assert_eq!(next.items, scores[10..20]);
}

/// A resumed page knows only keys the caller has seen (the cursor holds no shard's next
/// item), so it asks every unfinished shard once; the documented cost, asserted.
#[tokio::test]
async fn resumed_pages_ask_each_unfinished_shard_once() {
    use sharded_testkit::faults::Faults;
    let repo = repo::<Score>("page-cost").await;
    let scores: Vec<Score> = (0..200)
        .map(|i| score("g1", &format!("p{i:03}"), i))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    let counted = crate::support::faulty(&repo, &faults).await;
    let first = Score::query(&counted, "g1").page(5, None).await.unwrap();
    assert!(
        faults.requests("Query") >= 10,
        "a first page asks every shard"
    );
    let mut cursor = first.cursor;
    let mut seen = first.items;
    for _ in 0..20 {
        faults.reset_counts();
        let page = Score::query(&counted, "g1")
            .page(5, cursor.as_ref())
            .await
            .unwrap();
        seen.extend(page.items);
        cursor = page.cursor;
        let requests = faults.requests("Query");
        // 10 unfinished shards: one request each, plus refills of shards the page used up.
        assert!(
            (10..=20).contains(&requests),
            "{requests} requests for a resumed page of 5 over 10 shards"
        );
    }
    assert_eq!(seen, scores[..105]);
}

/// Encodes bytes as base64url without padding, and back: what anyone can do to a cursor.
fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

/// A value as the cursor format writes it: type, u32 BE length, bytes.
fn value(tag: u8, text: &str) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// A cursor written by hand from the documented format (version 4, plain), with a valid
/// FNV-1a checksum: the fingerprint is copied from a genuine cursor of the same query.
fn forged_cursor(genuine: &Cursor, merge: &[u8], shards: &[Vec<u8>]) -> Cursor {
    let raw = unb64(genuine.as_str());
    let mut body = raw[..22].to_vec(); // version, seal, 16-byte fingerprint, shard count
    assert_eq!(&body[..2], &[4, 0], "a plain version 4 cursor");
    body.extend_from_slice(merge);
    for shard in shards {
        body.extend_from_slice(shard);
    }
    let checksum = sharded::hash::fnv1a64(&body);
    body.extend_from_slice(&checksum.to_be_bytes());
    Cursor::from(b64(&body))
}

/// Forged cursors with numbers no DynamoDB number has (exponents at `i64::MAX`, which used
/// to overflow the decimal comparison: a debug panic, a wrong order in release), and with
/// well-typed but made-up keys: never a panic; a clear error, or a page of the query's own
/// items in order.
#[tokio::test]
async fn forged_cursors_give_an_error_or_a_correct_page_never_a_panic() {
    let repo = repo::<Score>("page-forged").await;
    let scores: Vec<Score> = (0..60)
        .map(|i| score("g1", &format!("p{i:02}"), i))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let genuine = Score::query(&repo, "g1")
        .page(5, None)
        .await
        .unwrap()
        .cursor
        .unwrap();
    let max = i64::MAX;

    // The merge position and the shard positions as numbers with extreme exponents.
    let mut merge = vec![1];
    merge.extend_from_slice(&5u32.to_be_bytes());
    merge.push(1);
    merge.extend(value(1, &format!("1e{max}")));
    let mut shards = Vec::new();
    for shard in 0..10 {
        let mut entry = vec![2, 1];
        let sign = if shard % 2 == 0 { "" } else { "-" };
        entry.extend(value(1, &format!("{sign}12345e{max}")));
        shards.push(entry);
    }
    let forged = forged_cursor(&genuine, &merge, &shards);
    let result = Score::query(&repo, "g1").page(5, Some(&forged)).await;
    match result {
        // DynamoDB refuses a number where the key is a string: the query's error.
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(page) => assert!(page.items.windows(2).all(|w| w[0].score <= w[1].score)),
    }

    // Strings past every item, a merge position of another type: a page (empty or not) of
    // this query's items, in order, or an error; never an item of another query.
    let mut merge = vec![1];
    merge.extend_from_slice(&0u32.to_be_bytes());
    merge.push(1);
    merge.extend(value(2, "\u{0}"));
    let shards: Vec<Vec<u8>> = (0..10)
        .map(|shard| {
            if shard < 5 {
                vec![0]
            } else {
                let mut entry = vec![2, 1];
                entry.extend(value(0, "SCORE#00000000000000000030#zz"));
                entry
            }
        })
        .collect();
    let forged = forged_cursor(&genuine, &merge, &shards);
    match Score::query(&repo, "g1").page(100, Some(&forged)).await {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(page) => {
            assert!(page.items.windows(2).all(|w| w[0].score <= w[1].score));
            assert!(page.items.iter().all(|s| scores.contains(s)));
        }
    }

    // The merge position on a shard that does not exist: refused as malformed.
    let mut merge = vec![1];
    merge.extend_from_slice(&10u32.to_be_bytes());
    merge.push(0);
    let forged = forged_cursor(&genuine, &merge, &vec![vec![0]; 10]);
    let result = Score::query(&repo, "g1").page(5, Some(&forged)).await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Malformed(_)))),
        "{result:?}"
    );
}

/// Inserts items made by `item(n, rng)` into `repo` until `stop`, deleting one of its own at
/// random after every second insert: the writes a paging client sees from others. Returns how
/// many items it inserted.
fn spawn_churn<E>(
    repo: Repo<E>,
    stop: Arc<AtomicBool>,
    seed: u64,
    item: impl Fn(u64, &mut fastrand::Rng) -> E + Send + 'static,
) -> tokio::task::JoinHandle<u64>
where
    E: ShardedEntity + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut written: Vec<E> = Vec::new();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let new = item(n, &mut rng);
            repo.put(&new).await.unwrap();
            written.push(new);
            n += 1;
            if n % 2 == 0 {
                let victim = written.swap_remove(rng.usize(..written.len()));
                repo.batch_delete([&victim]).await.unwrap();
            }
        }
        n
    })
}

/// The emitted order never goes back: `keys` (in emitted order) never decrease (never
/// increase when `descending`).
fn assert_never_back<K: Ord + std::fmt::Debug>(keys: &[K], descending: bool) {
    let backwards: Vec<(&K, &K)> = keys
        .windows(2)
        .filter(|w| if descending { w[0] < w[1] } else { w[0] > w[1] })
        .map(|w| (&w[0], &w[1]))
        .collect();
    assert!(
        backwards.is_empty(),
        "order went back {} times, e.g. {:?}",
        backwards.len(),
        backwards.first()
    );
}

/// No item emitted twice, and every stable item (present throughout) emitted.
fn assert_each_stable_once(mut emitted: Vec<String>, stable: impl IntoIterator<Item = String>) {
    emitted.sort_unstable();
    let before = emitted.len();
    emitted.dedup();
    assert_eq!(emitted.len(), before, "an item emitted twice");
    let missing: Vec<String> = stable
        .into_iter()
        .filter(|k| emitted.binary_search(k).is_err())
        .collect();
    assert!(missing.is_empty(), "stable items lost: {missing:?}");
}

/// Pages through `g1` in pages of 5 while a writer inserts and deletes other items, and checks
/// what one DynamoDB Query read page by page would give: every stable item exactly once, no
/// item twice, and an order that never goes back.
async fn page_while_writing(descending: bool) {
    let name = if descending {
        "page-conc-desc"
    } else {
        "page-conc-asc"
    };
    let repo = repo::<Score>(name).await;
    let stable: Vec<Score> = (0..800)
        .map(|i| score("g1", &format!("s{i:03}"), i * 10))
        .collect();
    repo.batch_put(&stable).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Anywhere in the range: behind the position, ahead of it, next to it.
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            spawn_churn(repo.clone(), stop.clone(), w + 1, move |n, rng| {
                score("g1", &format!("w{w}-{n}"), rng.u64(..8000))
            })
        })
        .collect();
    let emitted: Vec<Score> = page_to_end(
        || {
            let q = Score::query(&repo, "g1");
            if descending {
                q.descending()
            } else {
                q
            }
        },
        5,
    )
    .await
    .into_iter()
    .flatten()
    .collect();
    stop.store(true, Ordering::Relaxed);
    let mut writes = 0;
    for writer in writers {
        writes += writer.await.unwrap();
    }
    assert!(writes > 100, "the writers ran: {writes} inserts");

    let sk = |s: &Score| Score::sk(s.score, &s.player_id).unwrap();
    assert_never_back(&emitted.iter().map(sk).collect::<Vec<_>>(), descending);
    assert_each_stable_once(emitted.iter().map(sk).collect(), stable.iter().map(sk));
    assert!(
        emitted.len() > stable.len(),
        "some written items were emitted too ({} of {})",
        emitted.len() - stable.len(),
        writes
    );
}

#[tokio::test]
async fn paging_while_others_write_stays_in_order_ascending() {
    page_while_writing(false).await;
}

#[tokio::test]
async fn paging_while_others_write_stays_in_order_descending() {
    page_while_writing(true).await;
}

/// The same on a GSI whose sort key ties across and within shards (`MIN#{minute}`): ties at
/// the merge position from higher shards are still emitted, from lower ones never late.
async fn page_ties_while_writing(descending: bool) {
    let name = if descending {
        "page-ties-desc"
    } else {
        "page-ties-asc"
    };
    let repo = repo::<Event>(name).await;
    let event = |id: String, minute: u32| Event {
        stream: "s".into(),
        id,
        minute,
    };
    let stable: Vec<Event> = (0..400).map(|i| event(format!("s{i}"), i % 20)).collect();
    repo.batch_put(&stable).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_churn(repo.clone(), stop.clone(), 3, move |n, rng| {
        event(format!("w{n}"), rng.u32(..20))
    });
    let emitted: Vec<Event> = page_to_end(
        || {
            let q = Event::query_gsi1(&repo, "s");
            if descending {
                q.descending()
            } else {
                q
            }
        },
        3,
    )
    .await
    .into_iter()
    .flatten()
    .collect();
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await.unwrap();
    assert!(writes > 50, "the writer ran: {writes} inserts");
    assert_never_back(
        &emitted.iter().map(|e| e.minute).collect::<Vec<_>>(),
        descending,
    );
    assert_each_stable_once(
        emitted.iter().map(|e| e.id.clone()).collect(),
        stable.iter().map(|e| e.id.clone()),
    );
}

#[tokio::test]
async fn paging_ties_while_others_write_ascending() {
    page_ties_while_writing(false).await;
}

#[tokio::test]
async fn paging_ties_while_others_write_descending() {
    page_ties_while_writing(true).await;
}

/// Sealed cursors on DynamoDB Local: a sealed listing yields every item once, in order; a
/// tampered cursor, one sealed with another key, a plain one, and a sealed one given to a
/// query without the key are refused before anything is read.
#[tokio::test]
async fn sealed_cursors_page_and_refuse_tampering() {
    use sharded::cursor::CursorKey;
    let repo = repo::<Score>("page-sealed").await;
    let scores: Vec<Score> = (0..50)
        .map(|i| score("g1", &format!("p{i:02}"), i))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let key = CursorKey::new(b"0123456789abcdef0123456789abcdef").unwrap();
    let mut paged = Vec::new();
    let mut cursor: Option<Cursor> = None;
    let mut first_cursor = None;
    loop {
        let page = Score::query(&repo, "g1")
            .seal_cursors(&key)
            .page(7, cursor.as_ref())
            .await
            .unwrap();
        paged.extend(page.items);
        match page.cursor {
            Some(next) => {
                first_cursor.get_or_insert_with(|| next.clone());
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(paged, scores, "a sealed listing: every item once, in order");
    let sealed = first_cursor.unwrap();

    // One character changed anywhere.
    for i in [0, 3, sealed.as_str().len() / 2, sealed.as_str().len() - 1] {
        let mut chars: Vec<char> = sealed.as_str().chars().collect();
        chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
        let tampered = Cursor::from(chars.into_iter().collect::<String>());
        let result = Score::query(&repo, "g1")
            .seal_cursors(&key)
            .page(7, Some(&tampered))
            .await;
        assert!(
            matches!(result, Err(Error::Cursor(_))),
            "at {i}: {result:?}"
        );
    }
    // Past the version, seal and fingerprint bytes (here: the shard count), any edit is an
    // unverified seal.
    let mut raw = unb64(sealed.as_str());
    raw[20] ^= 1;
    let edited = Cursor::from(b64(&raw));
    let result = Score::query(&repo, "g1")
        .seal_cursors(&key)
        .page(7, Some(&edited))
        .await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Unverified))),
        "{result:?}"
    );
    let other = CursorKey::new(b"another key, another service....").unwrap();
    let result = Score::query(&repo, "g1")
        .seal_cursors(&other)
        .page(7, Some(&sealed))
        .await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Unverified))),
        "{result:?}"
    );
    let result = Score::query(&repo, "g1").page(7, Some(&sealed)).await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::Sealed))),
        "{result:?}"
    );
    let plain = Score::query(&repo, "g1")
        .page(7, None)
        .await
        .unwrap()
        .cursor
        .unwrap();
    let result = Score::query(&repo, "g1")
        .seal_cursors(&key)
        .page(7, Some(&plain))
        .await;
    assert!(
        matches!(result, Err(Error::Cursor(CursorError::NotSealed))),
        "{result:?}"
    );
    // The genuine sealed cursor still resumes where it should.
    let next = Score::query(&repo, "g1")
        .seal_cursors(&key)
        .page(7, Some(&sealed))
        .await
        .unwrap();
    assert_eq!(next.items, scores[7..14]);
}

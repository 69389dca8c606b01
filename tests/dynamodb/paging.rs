//! Cursor paging: every item exactly once, in order, at any page size; bad cursors refused.

use sharded::{Cursor, CursorError};
use sharded::{Error, Repo};

use crate::entities::{score, Comment, Score, ScoreN20};
use crate::support::repo;

async fn page_all(repo: &Repo<Score>, size: usize, descending: bool) -> (Vec<Score>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<Cursor> = None;
    let mut pages = 0;
    loop {
        let mut q = Score::query(repo, "g1");
        if descending {
            q = q.descending();
        }
        let page = q.page(size, cursor.as_ref()).await.unwrap();
        assert!(page.items.len() <= size);
        pages += 1;
        items.extend(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return (items, pages),
        }
    }
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

#[tokio::test]
async fn resumed_pages_fetch_only_the_shards_the_merge_reaches() {
    use sharded_testkit::faults::Faults;
    let repo = repo::<Score>("page-lazy").await;
    let scores: Vec<Score> = (0..200)
        .map(|i| score("g1", &format!("p{i:03}"), i))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    let counted = crate::support::faulty(&repo, &faults).await;
    let first = Score::query(&counted, "g1").page(5, None).await.unwrap();
    assert_eq!(
        faults.requests("Query"),
        10,
        "a first page asks every shard"
    );
    let mut cursor = first.cursor;
    let mut seen = first.items;
    faults.reset_counts();
    for _ in 0..20 {
        let page = Score::query(&counted, "g1")
            .page(5, cursor.as_ref())
            .await
            .unwrap();
        seen.extend(page.items);
        cursor = page.cursor;
    }
    assert_eq!(seen, scores[..105]);
    // A resumed page fetches the shards its 5 items come from, plus shards whose next item the
    // previous page did not see; re-asking all 10 shards would be 200 requests.
    let requests = faults.requests("Query");
    assert!(
        requests < 150,
        "{requests} requests for 20 pages of 5 (naive: 200)"
    );
}

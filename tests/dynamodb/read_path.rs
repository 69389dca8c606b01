//! The read path's defaults: adaptive shard limits (request counts, exactness on skewed data),
//! filtered pages that never stall, and errors that name the real cause.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use sharded::query::QueryRefusal;
use sharded::{Error, KeyError, Repo};
use sharded_testkit::backend::Behaviour;
use sharded_testkit::faults::Faults;

use crate::entities::{score, Badge, Comment, Score};
use crate::support::{faulty, page_to_end, repo, skip_if_lacking};

/// `per_shard` players on each of `Score`'s 10 shards (found by hashing candidate ids).
fn players_by_shard(per_shard: usize) -> BTreeMap<u32, Vec<String>> {
    let mut by_shard: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut i = 0;
    while by_shard.len() < 10 || by_shard.values().any(|v| v.len() < per_shard) {
        let player = format!("p{i:05}");
        let shard = Score::shard_for(&player).unwrap();
        let list = by_shard.entry(shard).or_default();
        if list.len() < per_shard {
            list.push(player);
        }
        i += 1;
    }
    by_shard
}

fn sorted_desc(scores: &[Score]) -> Vec<Score> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(|a, b| {
        Score::sk(b.score, &b.player_id)
            .unwrap()
            .cmp(&Score::sk(a.score, &a.player_id).unwrap())
    });
    sorted
}

/// 60 players per shard; the winners (highest scores) are either one per shard (`even`) or
/// all `winners` of them on shard 3 (`skewed`).
async fn board(prefix: &str, winners: usize, skewed: bool) -> (Repo<Score>, Vec<Score>) {
    let repo = repo::<Score>(prefix).await;
    let players = players_by_shard(60);
    let mut scores = Vec::new();
    for (shard, list) in &players {
        for (j, player) in list.iter().enumerate() {
            let winner = if skewed {
                *shard == 3 && j < winners
            } else {
                j == 0
            };
            let points = if winner {
                1_000 + j as u64 * 10 + *shard as u64
            } else {
                j as u64
            };
            scores.push(score("g1", player, points));
        }
    }
    repo.batch_put(&scores).await.unwrap();
    (repo, scores)
}

#[tokio::test]
async fn a_top_10_over_10_shards_sends_one_request_per_shard() {
    let (repo, scores) = board("rp-even", 10, false).await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let top = Score::query(&counted, "g1")
        .descending()
        .limit(10)
        .collect()
        .await
        .unwrap();
    assert_eq!(top, sorted_desc(&scores)[..10]);
    // Each shard asked for its share (ceil(1.5 * 10 / 10) + 2 = 4), holding one winner: no
    // refill.
    assert_eq!(faults.requests("Query"), 10);
}

#[tokio::test]
async fn skewed_winners_cost_a_few_refills_and_stay_exact() {
    let (repo, scores) = board("rp-skew", 100, true).await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let expected = sorted_desc(&scores);

    // Every winner on shard 3: it is asked for 4, then for the 6 the merge can still use (it
    // supplied every item so far).
    let top10 = Score::query(&counted, "g1")
        .descending()
        .limit(10)
        .collect()
        .await
        .unwrap();
    assert_eq!(top10, expected[..10]);
    assert_eq!(faults.requests("Query"), 11);

    // Top 100: shard 3 is asked for 17, then the 83 still needed: one refill, not a walk.
    faults.reset_counts();
    let top100 = Score::query(&counted, "g1")
        .descending()
        .limit(100)
        .collect()
        .await
        .unwrap();
    assert_eq!(top100, expected[..100]);
    assert_eq!(faults.requests("Query"), 11);

    // The old default, `Limit = k` on every shard, is `.page_size(k)`: one round.
    faults.reset_counts();
    let old = Score::query(&counted, "g1")
        .descending()
        .limit(100)
        .page_size(100)
        .collect()
        .await
        .unwrap();
    assert_eq!(old, top100);
    assert_eq!(faults.requests("Query"), 10);

    // Exact against brute force at every size, both directions, paged too.
    let mut ascending = expected.clone();
    ascending.reverse();
    for k in [1usize, 3, 17, 50, 99, 101, 250, 600, 700] {
        let desc = Score::query(&repo, "g1")
            .descending()
            .limit(k)
            .collect()
            .await
            .unwrap();
        assert_eq!(desc, expected[..k.min(600)], "k={k} desc");
        let asc = Score::query(&repo, "g1").limit(k).collect().await.unwrap();
        assert_eq!(asc, ascending[..k.min(600)], "k={k} asc");
    }
    for size in [7usize, 64] {
        let pages = page_to_end(|| Score::query(&repo, "g1").descending(), size).await;
        assert!(
            pages.iter().all(|p| !p.is_empty()),
            "an empty page at size {size}"
        );
        let paged: Vec<Score> = pages.into_iter().flatten().collect();
        assert_eq!(paged, expected, "paging by {size}");
    }
}

/// 3,000 comments and one badge per shard in the same partitions: `Badge`'s sort key has no
/// literal prefix, so only the entity filter (applied after `Limit`) skips the comments.
async fn badges_behind_comments(prefix: &str) -> (Repo<Badge>, Vec<Badge>) {
    let scores = repo::<Score>(prefix).await;
    let comments = scores.for_entity::<Comment>();
    let badges = scores.for_entity::<Badge>();
    let players = players_by_shard(300);
    let mut all_comments = Vec::new();
    let mut all_badges = Vec::new();
    for list in players.values() {
        for (j, player) in list.iter().enumerate() {
            all_comments.push(Comment {
                game_id: "g1".into(),
                player_id: player.clone(),
                id: format!("{player}-{j}"),
                text: "gg".into(),
            });
        }
        all_badges.push(Badge {
            game_id: "g1".into(),
            player_id: list[0].clone(),
            badge: "first".into(),
        });
    }
    comments.batch_put(&all_comments).await.unwrap();
    badges.batch_put(&all_badges).await.unwrap();
    all_badges.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    (badges, all_badges)
}

#[tokio::test]
async fn filtered_pages_grow_instead_of_walking_one_item_per_request() {
    let (badges, expected) = badges_behind_comments("rp-filter").await;
    let faults = Faults::new();
    let counted = faulty(&badges, &faults).await;

    // `COMMENT#..` sorts before `p..#BADGE`: each shard has 300 comments before its badge.
    // Limits 1, 4, 16, 64, 256 evaluate 341 items: 5 requests per shard, not 301.
    let first = Badge::query(&counted, "g1")
        .limit(1)
        .collect()
        .await
        .unwrap();
    assert_eq!(first, expected[..1]);
    let requests = faults.requests("Query");
    assert_eq!(requests, 50, "{requests} Query requests for limit(1)");

    faults.reset_counts();
    let page = Badge::query(&counted, "g1").page(1, None).await.unwrap();
    assert_eq!(page.items, expected[..1]);
    assert!(page.cursor.is_some());
    let requests = faults.requests("Query");
    assert_eq!(requests, 50, "{requests} Query requests for page(1)");

    // Paging by 1 to the end: every badge once, in order, the last page without a cursor.
    let mut paged = page.items;
    let mut cursor = page.cursor;
    while let Some(c) = cursor {
        let next = Badge::query(&counted, "g1")
            .page(1, Some(&c))
            .await
            .unwrap();
        assert_eq!(next.items.len(), 1);
        paged.extend(next.items);
        cursor = next.cursor;
    }
    assert_eq!(paged, expected);

    // Without a limit, one 1 MB page per shard holds everything.
    faults.reset_counts();
    let all = Badge::query(&counted, "g1").collect().await.unwrap();
    assert_eq!(all, expected);
    assert_eq!(faults.requests("Query"), 10);
}

#[tokio::test]
async fn a_page_of_zero_items_is_an_invalid_query() {
    let repo = repo::<Score>("rp-page0").await;
    repo.put(&score("g1", "p1", 1)).await.unwrap();
    let result = Score::query(&repo, "g1").page(0, None).await;
    assert!(
        matches!(&result, Err(Error::InvalidQuery(QueryRefusal::EmptyPage))),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_inverted_between_is_refused_before_sending() {
    let repo = repo::<Score>("rp-between").await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    // The one check of an inverted range is where the typed condition is built: every
    // sort-key condition of a query is built there, and the query returns its error.
    let result = Score::query(&counted, "g1")
        .sk(Score::sk_sort().between(200, 100))
        .collect()
        .await;
    match &result {
        Err(Error::Key(e @ KeyError::InvertedRange { field, .. })) => {
            assert_eq!(*field, "score");
            assert!(e.to_string().contains("score"), "{e}");
        }
        other => panic!("expected KeyError::InvertedRange, got {other:?}"),
    }
    let counted_result = Score::query(&counted, "g1")
        .sk(Score::sk_sort().between(200, 100))
        .count()
        .await;
    assert!(matches!(
        counted_result,
        Err(Error::Key(KeyError::InvertedRange { .. }))
    ));
    assert_eq!(faults.requests("Query"), 0, "nothing was sent");
}

#[tokio::test]
async fn a_validation_exception_is_the_querys_error_not_a_shards() {
    // The refusal below is DynamoDB's; the embedded backend lacks it (see `backends.rs`).
    if skip_if_lacking(Behaviour::BetweenBoundsCheckedInFilters).await {
        return;
    }
    let repo = repo::<Score>("rp-validation").await;
    repo.put(&score("g1", "p1", 1)).await.unwrap();
    // DynamoDB refuses the request itself; no shard is to blame.
    let check = |result: Result<(), Error>| match result {
        Err(e @ Error::Dynamo { .. }) => {
            assert!(e.is_validation(), "{e}");
            let Error::Dynamo { source, .. } = &e else {
                unreachable!()
            };
            assert_eq!(source.code(), Some("ValidationException"));
            let message = source.message().expect("DynamoDB's message");
            assert!(e.to_string().contains(message), "{e} lacks {message:?}");
            assert!(!e.to_string().contains("shard"), "{e}");
        }
        other => panic!("expected the ValidationException itself, got {other:?}"),
    };
    // DynamoDB refuses a filter's BETWEEN whose bounds are inverted; typed sort-key
    // conditions refuse theirs before sending, so the filter is what reaches DynamoDB.
    let f = Score::fields();
    let refused = || Score::query(&repo, "g1").filter(f.score.between(20, 10));
    check(refused().collect().await.map(drop));
    // Partial results do not turn it into 10 shard failures.
    check(refused().collect_partial().await.map(drop));
    check(refused().count().await.map(drop));
}

#[tokio::test]
async fn the_last_page_carries_no_cursor() {
    let repo = repo::<Score>("rp-last").await;
    let players = players_by_shard(2);
    // One item: the shard holding it answers `Limit = 1` with a LastEvaluatedKey.
    let only = score("g1", &players[&4][0], 5);
    repo.put(&only).await.unwrap();
    let page = Score::query(&repo, "g1").page(1, None).await.unwrap();
    assert_eq!(page.items, vec![only.clone()]);
    assert!(page.cursor.is_none(), "a cursor to an empty page");

    // More items, every page size: no page is empty, the last carries no cursor.
    let mut scores = vec![only];
    for (shard, list) in &players {
        for (j, player) in list.iter().enumerate() {
            if *shard != 4 || j != 0 {
                scores.push(score("g1", player, (*shard as u64 * 3 + j as u64) % 7));
            }
        }
    }
    repo.batch_put(&scores).await.unwrap();
    let everything = Score::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(everything.len(), 20);
    for size in 1..=21 {
        let pages = page_to_end(|| Score::query(&repo, "g1"), size).await;
        assert!(
            pages.iter().all(|p| !p.is_empty()),
            "size {size}: an empty page"
        );
        let paged: Vec<Score> = pages.into_iter().flatten().collect();
        assert_eq!(paged, everything, "size {size}");
    }
}

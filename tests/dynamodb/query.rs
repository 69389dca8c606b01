//! Scatter-gather queries: order against brute force, ties, GSIs, counts, single-table
//! isolation, failed shards and the concurrency bound.

use std::time::Duration;

use futures::TryStreamExt;
use sharded::{Error, Repo};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Badge, Comment, Event, Score};
use crate::support::{faulty, page_to_end, repo};

/// 600 scores with many equal points (ties broken by player id in the sort key).
async fn leaderboard(prefix: &str) -> (Repo<Score>, Vec<Score>) {
    let repo = repo::<Score>(prefix).await;
    let scores: Vec<Score> = (0..600)
        .map(|i| score("g1", &format!("p{i:03}"), (i * 7919) % 37))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    (repo, scores)
}

fn brute_force(scores: &[Score], descending: bool) -> Vec<Score> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(|a, b| {
        let (ka, kb) = (
            Score::sk(a.score, &a.player_id).unwrap(),
            Score::sk(b.score, &b.player_id).unwrap(),
        );
        if descending {
            kb.cmp(&ka)
        } else {
            ka.cmp(&kb)
        }
    });
    sorted
}

#[tokio::test]
async fn top_k_equals_brute_force_both_directions() {
    let (repo, scores) = leaderboard("q-topk").await;
    for descending in [false, true] {
        let expected = brute_force(&scores, descending);
        for k in [1usize, 10, 100, 599, 600, 1000] {
            let mut q = Score::query(&repo, "g1").limit(k);
            if descending {
                q = q.descending();
            }
            let got = q.collect().await.unwrap();
            assert_eq!(got.len(), k.min(600), "k={k} desc={descending}");
            assert_eq!(got, expected[..k.min(600)], "k={k} desc={descending}");
        }
        let mut all = Score::query(&repo, "g1");
        if descending {
            all = all.descending();
        }
        assert_eq!(
            all.collect().await.unwrap(),
            expected,
            "unlimited, desc={descending}"
        );
    }
}

#[tokio::test]
async fn stream_yields_the_same_order_with_small_pages() {
    let (repo, scores) = leaderboard("q-stream").await;
    let streamed: Vec<Score> = Score::query(&repo, "g1")
        .descending()
        .page_size(7)
        .stream()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed, brute_force(&scores, true));
}

#[tokio::test]
async fn sort_key_conditions_are_typed_from_the_template() {
    let (repo, scores) = leaderboard("q-cond").await;
    let between: Vec<Score> = Score::query(&repo, "g1")
        .sk(Score::sk_sort().between(10, 19))
        .collect()
        .await
        .unwrap();
    let expected: Vec<Score> = brute_force(&scores, false)
        .into_iter()
        .filter(|s| (10..20).contains(&s.score))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(between, expected);
    let exactly_7 = Score::query(&repo, "g1")
        .sk(Score::sk_sort().eq(7))
        .collect()
        .await
        .unwrap();
    assert!(!exactly_7.is_empty() && exactly_7.iter().all(|s| s.score == 7));
    assert_eq!(
        exactly_7.len(),
        scores.iter().filter(|s| s.score == 7).count()
    );
    let above = Score::query(&repo, "g1")
        .sk(Score::sk_sort().ge(35))
        .count()
        .await
        .unwrap();
    assert_eq!(
        above as usize,
        scores.iter().filter(|s| s.score >= 35).count()
    );
}

#[tokio::test]
async fn count_sums_every_shard() {
    let (repo, scores) = leaderboard("q-count").await;
    assert_eq!(
        Score::query(&repo, "g1").count().await.unwrap(),
        scores.len() as u64
    );
    assert_eq!(Score::query(&repo, "g2").count().await.unwrap(), 0);
}

#[tokio::test]
async fn gsi_scatter_gather_over_identity_shards() {
    let repo = repo::<Score>("q-gsi").await;
    let mut mine = Vec::new();
    for g in 0..40 {
        let s = score(&format!("game-{g:02}"), "p1", g);
        repo.put(&s).await.unwrap();
        mine.push(s);
        repo.put(&score(&format!("game-{g:02}"), "p2", g))
            .await
            .unwrap();
    }
    let got = Score::query_gsi1(&repo, "p1").collect().await.unwrap();
    assert_eq!(
        got, mine,
        "all of p1's games, sorted by the GSI sort key across 4 shards"
    );
    let last3 = Score::query_gsi1(&repo, "p1")
        .descending()
        .limit(3)
        .collect()
        .await
        .unwrap();
    assert_eq!(
        last3,
        mine.iter().rev().take(3).cloned().collect::<Vec<_>>()
    );
    assert_eq!(Score::query_gsi1(&repo, "p1").count().await.unwrap(), 40);
    assert!(matches!(
        Score::query_gsi1(&repo, "p1")
            .consistent_read(true)
            .collect()
            .await,
        Err(Error::InvalidQuery(
            sharded::query::QueryRefusal::ConsistentGsi { .. }
        ))
    ));
}

#[tokio::test]
async fn ties_across_shards_come_in_order_exactly_once() {
    let repo = repo::<Event>("q-ties").await;
    let events: Vec<Event> = (0..300)
        .map(|i| Event {
            stream: "s".into(),
            id: format!("e{i}"),
            minute: i % 5,
        })
        .collect();
    repo.batch_put(&events).await.unwrap();
    // GSI sort key `MIN#{minute}` ties across and within the GSI's shards.
    let got = Event::query_gsi1(&repo, "s").collect().await.unwrap();
    assert_eq!(got.len(), 300);
    assert!(
        got.windows(2).all(|w| w[0].minute <= w[1].minute),
        "not in sort-key order"
    );
    let mut ids: Vec<&str> = got.iter().map(|e| e.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 300, "duplicates or gaps");
    for size in [1, 7, 100] {
        let paged: Vec<Event> = page_to_end(|| Event::query_gsi1(&repo, "s"), size)
            .await
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(paged, got, "paging by {size} differs from one collect");
    }
}

#[tokio::test]
async fn single_table_queries_return_only_their_entity() {
    let repo = repo::<Score>("q-single").await;
    let comments = repo.for_entity::<Comment>();
    let badges = repo.for_entity::<Badge>();
    for i in 0..50 {
        let player = format!("p{i}");
        repo.put(&score("g1", &player, i)).await.unwrap();
        comments
            .put(&Comment {
                game_id: "g1".into(),
                player_id: player.clone(),
                id: format!("c{i:02}"),
                text: "gg".into(),
            })
            .await
            .unwrap();
        badges
            .put(&Badge {
                game_id: "g1".into(),
                player_id: player,
                badge: "first".into(),
            })
            .await
            .unwrap();
    }
    assert_eq!(Score::query(&repo, "g1").collect().await.unwrap().len(), 50);
    assert_eq!(
        Comment::query(&comments, "g1")
            .collect()
            .await
            .unwrap()
            .len(),
        50
    );
    // Badge's sort key has no literal prefix: the entity attribute alone separates it.
    assert_eq!(
        Badge::query(&badges, "g1").collect().await.unwrap().len(),
        50
    );
    assert_eq!(Badge::query(&badges, "g1").count().await.unwrap(), 50);
    assert_eq!(
        Comment::query_gsi1(&comments, "p3")
            .collect()
            .await
            .unwrap()
            .len(),
        1
    );
    // A point lookup that hits another entity's item is refused, not misread. Typed keys
    // cannot name a badge's sort key, so this goes through the raw-key lookup that the
    // generated `Score::get` calls.
    let badge_as_score = sharded::__private::get_by_key(
        &repo,
        Score::pk("g1", "p3").unwrap(),
        Some("p3#BADGE".into()),
    )
    .await;
    assert!(
        matches!(badge_as_score, Err(Error::WrongEntity { .. })),
        "{badge_as_score:?}"
    );
}

#[tokio::test]
async fn a_failed_shard_fails_the_query_and_names_the_shard() {
    let (repo, scores) = leaderboard("q-fail").await;
    let faults = Faults::new();
    faults.fail_partition(Score::pk_on_shard("g1", 3).unwrap());
    let broken = faulty(&repo, &faults).await;
    match Score::query(&broken, "g1").limit(10).collect().await {
        Err(Error::ShardFailed {
            shard,
            shards,
            partition_key,
            ..
        }) => {
            assert_eq!((shard, shards), (3, 10));
            assert_eq!(partition_key, "GAME#g1#3");
        }
        other => panic!("expected ShardFailed, got {other:?}"),
    }
    assert!(matches!(
        Score::query(&broken, "g1").count().await,
        Err(Error::ShardFailed { shard: 3, .. })
    ));

    let partial = Score::query(&broken, "g1").collect_partial().await.unwrap();
    assert_eq!(partial.failures.len(), 1);
    assert_eq!(partial.failures[0].shard, 3);
    let expected: Vec<Score> = brute_force(&scores, false)
        .into_iter()
        .filter(|s| Score::shard_for(&s.player_id).unwrap() != 3)
        .collect();
    assert_eq!(
        partial.items, expected,
        "every other shard, merged, nothing silently missing"
    );
}

#[tokio::test]
async fn fan_out_is_concurrent_and_bounded() {
    let (repo, _) = leaderboard("q-fanout").await;
    let faults = Faults::new();
    faults.set_latency(Duration::from_millis(30));
    let slow = faulty(&repo, &faults).await;
    let top = Score::query(&slow, "g1")
        .descending()
        .limit(100)
        .collect()
        .await
        .unwrap();
    assert_eq!(top.len(), 100);
    assert_eq!(
        faults.max_in_flight(),
        10,
        "all 10 shards in flight at once"
    );
    assert!(faults.requests("Query") >= 10);

    faults.reset_counts();
    let bounded = slow.clone().with_concurrency(3);
    Score::query(&bounded, "g1")
        .limit(5)
        .collect()
        .await
        .unwrap();
    assert!(
        faults.max_in_flight() <= 3,
        "bound exceeded: {}",
        faults.max_in_flight()
    );
    assert!(faults.max_in_flight() >= 2, "not concurrent");
}

#[tokio::test]
async fn top_k_asks_each_shard_for_what_the_merge_can_use() {
    let (repo, _) = leaderboard("q-lazy").await;
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    Score::query(&counted, "g1")
        .descending()
        .limit(10)
        .collect()
        .await
        .unwrap();
    // One Query(Limit=4) per shard (its share, ceil(1.5 * 10 / 10) + 2); no refill, since no
    // shard of this data runs out of its 4 before the top 10 is out (read_path.rs counts the
    // skewed case).
    assert_eq!(faults.requests("Query"), 10);
}

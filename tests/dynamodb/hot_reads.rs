//! Hot reads: identical concurrent queries share one scatter-gather (single flight), and
//! answers of bounded age come from the repository's cache. Request counts, never timings.

use std::sync::Arc;
use std::time::Duration;

use sharded::capacity::ManualClock;
use sharded::Repo;
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty_client, repo};

/// A table of 200 scores in game `g1`, and a repository on it through `faults` (20 ms per
/// request, so that concurrent queries overlap).
async fn leaderboard(prefix: &str, faults: &Faults) -> (Repo<Score>, Repo<Score>) {
    let plain = repo::<Score>(prefix).await;
    let scores: Vec<Score> = (0..200).map(|i| score("g1", &format!("p{i}"), i)).collect();
    plain.batch_put(&scores).await.unwrap();
    faults.set_latency(Duration::from_millis(20));
    let through = Repo::new(faulty_client(faults, 2).await, plain.table());
    (plain, through)
}

fn top(repo: &Repo<Score>) -> sharded::Query<Score> {
    Score::query(repo, "g1").descending().limit(100)
}

/// The Query requests one top 100 sends alone.
async fn one_read(repo: &Repo<Score>, faults: &Faults) -> u64 {
    faults.reset_counts();
    top(repo).collect().await.unwrap();
    let requests = faults.requests("Query");
    faults.reset_counts();
    requests
}

#[tokio::test]
async fn identical_concurrent_queries_send_one_scatter_gather() {
    let faults = Faults::new();
    let (_, repo) = leaderboard("hot-single-flight", &faults).await;
    let alone = one_read(&repo, &faults).await;
    assert!(alone >= 10, "a top 100 asks every shard: {alone}");

    let answers = futures::future::join_all((0..16).map(|_| top(&repo).collect_answer())).await;
    let answers: Vec<_> = answers.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        faults.requests("Query"),
        alone,
        "16 callers, one scatter-gather"
    );
    assert_eq!(answers.iter().filter(|a| a.shared).count(), 15);
    let best: Vec<u64> = answers[0].items.iter().map(|s| s.score).collect();
    assert_eq!(best, (100..200).rev().collect::<Vec<u64>>());
    assert!(answers.iter().all(|a| a.items == answers[0].items));

    // Another query (another limit) is not the same query.
    faults.reset_counts();
    let (a, b) = futures::join!(top(&repo).collect(), top(&repo).limit(10).collect());
    assert_eq!((a.unwrap().len(), b.unwrap().len()), (100, 10));
    assert!(faults.requests("Query") > alone);

    // Turned off: each caller reads.
    let solo = repo.clone().with_single_flight(false);
    faults.reset_counts();
    futures::future::join_all((0..4).map(|_| top(&solo).collect())).await;
    assert_eq!(faults.requests("Query"), 4 * alone);
}

#[tokio::test]
async fn consistent_queries_never_join_unless_they_ask() {
    let faults = Faults::new();
    let (_, repo) = leaderboard("hot-consistent", &faults).await;
    let alone = one_read(&repo, &faults).await;
    futures::future::join_all((0..4).map(|_| top(&repo).consistent_read(true).collect())).await;
    assert_eq!(faults.requests("Query"), 4 * alone, "read-your-writes kept");
}

#[tokio::test]
async fn a_cached_answer_is_never_older_than_its_bound() {
    let faults = Faults::new();
    let (_, repo) = leaderboard("hot-staleness", &faults).await;
    let clock = Arc::new(ManualClock::new());
    let repo = repo
        .with_read_cache(1_000, clock.clone())
        .with_max_staleness(Duration::from_millis(250));
    let alone = one_read(&repo, &faults).await;
    assert_eq!(
        alone,
        one_read(&repo, &faults).await + alone,
        "the second read was cached"
    );

    // The cached answer is 0 ms old now; at 250 ms it is still served, at 251 ms it is not.
    clock.advance(Duration::from_millis(250));
    let cached = top(&repo).collect_answer().await.unwrap();
    assert_eq!(
        (cached.age, cached.shared),
        (Duration::from_millis(250), true)
    );
    assert_eq!(faults.requests("Query"), 0);
    clock.advance(Duration::from_millis(1));
    let fresh = top(&repo).collect_answer().await.unwrap();
    assert_eq!((fresh.age, fresh.shared), (Duration::ZERO, false));
    assert_eq!(faults.requests("Query"), alone);

    // A query may ask for less than the repository allows.
    faults.reset_counts();
    clock.advance(Duration::from_millis(100));
    let tight = top(&repo)
        .max_staleness(Duration::from_millis(50))
        .collect_answer()
        .await
        .unwrap();
    assert_eq!(tight.age, Duration::ZERO);
    assert_eq!(faults.requests("Query"), alone);
}

#[tokio::test]
async fn a_write_through_the_repository_is_seen_by_the_next_query() {
    let faults = Faults::new();
    let (plain, repo) = leaderboard("hot-invalidate", &faults).await;
    let clock = Arc::new(ManualClock::new());
    let repo = repo
        .with_read_cache(1_000, clock.clone())
        .with_max_staleness(Duration::from_secs(3600));
    top(&repo).collect().await.unwrap();

    // Through the repository (or a sibling typed for another entity): seen at once.
    repo.put(&score("g1", "new", 1_000)).await.unwrap();
    faults.reset_counts();
    let after = top(&repo).collect().await.unwrap();
    assert_eq!(after[0].player_id, "new");
    assert!(faults.requests("Query") > 0);
    Score::update(&repo, "g1", "new", 1_000)
        .set(Score::fields().at, "later".to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].at, "later");
    Score::delete(&repo, "g1", "new", 1_000).await.unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].score, 199);
    repo.batch_put(&[score("g1", "batched", 1_500)])
        .await
        .unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].player_id, "batched");
    repo.put_new(&score("g1", "newer", 1_600)).await.unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].player_id, "newer");
    repo.batch_delete(&[score("g1", "batched", 1_500), score("g1", "newer", 1_600)])
        .await
        .unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].score, 199);
    // A sibling typed for another entity of the table shares the cache.
    let sibling: Repo<crate::entities::Comment> = repo.for_entity();
    top(&repo).collect().await.unwrap();
    faults.reset_counts();
    top(&repo).collect().await.unwrap();
    assert_eq!(faults.requests("Query"), 0, "cached");
    sibling
        .put(&crate::entities::Comment {
            game_id: "g1".into(),
            player_id: "p1".into(),
            id: "c1".into(),
            text: "gg".into(),
        })
        .await
        .unwrap();
    top(&repo).collect().await.unwrap();
    assert!(
        faults.requests("Query") > 0,
        "the sibling's write dropped the answer"
    );

    // A transaction of the repository, committed at once or prepared first, is one of its
    // writes too (it once left the cached answer, and a query in flight, to be joined).
    top(&repo).collect().await.unwrap();
    repo.transaction()
        .put(&score("g1", "transacted", 3_000))
        .commit()
        .await
        .unwrap();
    assert_eq!(
        top(&repo).collect().await.unwrap()[0].player_id,
        "transacted"
    );
    let prepared = repo
        .transaction()
        .delete(&score("g1", "transacted", 3_000))
        .prepare()
        .await
        .unwrap();
    top(&repo).collect().await.unwrap();
    prepared.commit().await.unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].score, 199);

    // Through another Repo value: not seen while the cached answer is within its bound, as
    // documented; seen once it is past it.
    plain.put(&score("g1", "elsewhere", 2_000)).await.unwrap();
    assert_eq!(top(&repo).collect().await.unwrap()[0].score, 199);
    clock.advance(Duration::from_secs(3601));
    assert_eq!(
        top(&repo).collect().await.unwrap()[0].player_id,
        "elsewhere"
    );
}

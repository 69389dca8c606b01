//! How wide a scatter-gather fans out, and what a top-k learns of skewed data. Request
//! counts, never timings.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty_client, repo};

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "WIDE#{game_id}", shard = "hash(player_id)", n = 64)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct WideScore {
    game_id: String,
    player_id: String,
    score: u64,
}

#[tokio::test]
async fn by_default_every_shard_is_asked_at_once() {
    let plain = repo::<WideScore>("fan-out").await;
    let scores: Vec<WideScore> = (0..640)
        .map(|i| WideScore {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i,
        })
        .collect();
    plain.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    faults.set_latency(Duration::from_millis(20));
    let repo = Repo::<WideScore>::new(faulty_client(&faults, 2).await, plain.table());
    assert_eq!(repo.fan_out(64), 64);
    let top = WideScore::query(&repo, "g1")
        .descending()
        .limit(100)
        .collect()
        .await
        .unwrap();
    assert_eq!(
        top.iter().map(|s| s.score).collect::<Vec<_>>(),
        (540..640).rev().collect::<Vec<u64>>()
    );
    assert_eq!(faults.max_in_flight(), 64, "one round, not 64 / 32 = 2");

    // A bound set on the repository holds.
    let bounded = repo.clone().with_concurrency(16);
    faults.reset_counts();
    let again = WideScore::query(&bounded, "g1")
        .descending()
        .limit(100)
        .collect()
        .await
        .unwrap();
    assert_eq!(again, top);
    assert!(faults.max_in_flight() <= 16, "{}", faults.max_in_flight());
}

#[tokio::test]
async fn a_skewed_top_k_costs_one_round_after_its_first_run() {
    let plain = repo::<Score>("fan-out-skew").await;
    // The 100 best scores all on shard 3, 300 others anywhere below them.
    let mut scores = Vec::new();
    let mut i = 0;
    while scores.len() < 100 {
        let player = format!("hot{i}");
        if Score::shard_for(&player).unwrap() == 3 {
            scores.push(score("g1", &player, 10_000 + i));
        }
        i += 1;
    }
    scores.extend((0..300).map(|i| score("g1", &format!("p{i}"), i)));
    plain.batch_put(&scores).await.unwrap();
    let mut expected: Vec<u64> = scores.iter().map(|s| s.score).collect();
    expected.sort_unstable_by(|a, b| b.cmp(a));
    expected.truncate(100);

    let faults = Faults::new();
    let repo = Repo::<Score>::new(faulty_client(&faults, 2).await, plain.table());
    let top = || Score::query(&repo, "g1").descending().limit(100).collect();
    let first = top().await.unwrap();
    assert_eq!(first.iter().map(|s| s.score).collect::<Vec<_>>(), expected);
    let first_requests = faults.requests("Query");
    assert!(
        first_requests > 10,
        "the first run refills shard 3: {first_requests}"
    );

    faults.reset_counts();
    let second = top().await.unwrap();
    assert_eq!(second, first);
    assert_eq!(
        faults.requests("Query"),
        10,
        "learned: one request per shard"
    );

    // Another query (another limit) has not learned anything.
    faults.reset_counts();
    Score::query(&repo, "g1")
        .descending()
        .limit(99)
        .collect()
        .await
        .unwrap();
    assert!(faults.requests("Query") > 10);
}

/// A query dropped while its shards' requests are on their way (a caller's timeout, a
/// cancelled task) takes them with it: none is left running after its query.
#[tokio::test]
async fn a_dropped_query_leaves_no_request_running() {
    let plain = repo::<Score>("fan-out-dropped").await;
    let scores: Vec<Score> = (0..50).map(|i| score("g1", &format!("p{i}"), i)).collect();
    plain.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    let repo = Repo::<Score>::new(faulty_client(&faults, 1).await, plain.table());
    faults.set_latency(Duration::from_secs(3));
    let wait = Duration::from_millis(200);
    let top = Score::query(&repo, "g1").descending().limit(20).collect();
    let top_dropped = tokio::time::timeout(wait, top).await.is_err();
    assert_nothing_left_of(top_dropped, &faults).await;
    faults.reset_counts();
    let page = Score::query(&repo, "g1").page(10, None);
    let page_dropped = tokio::time::timeout(wait, page).await.is_err();
    assert_nothing_left_of(page_dropped, &faults).await;
}

/// The query was dropped waiting for its shards, which had been asked, and none of their
/// requests is still in flight, well within the faults' latency.
async fn assert_nothing_left_of(dropped: bool, faults: &Faults) {
    assert!(dropped, "the query was still waiting for its shards");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(faults.requests("Query") > 0, "the shards were asked");
    assert_eq!(faults.in_flight(), 0, "requests outlived their query");
}

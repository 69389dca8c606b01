//! Streams read ahead: a shard down to half of its last page is asked for the next one while
//! the caller still works through what is buffered. Request counts, never timings.

use std::time::Duration;

use futures::StreamExt;
use sharded::Repo;
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty_client, repo};

/// Waits (up to a minute) until `faults` has seen more than `count` Query requests; false if
/// it never does.
async fn more_queries_than(faults: &Faults, count: u64) -> bool {
    for _ in 0..600 {
        if faults.requests("Query") > count {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_stream_asks_for_a_shards_next_page_before_its_buffer_runs_dry() {
    let plain = repo::<Score>("read-ahead").await;
    let scores: Vec<Score> = (0..100).map(|i| score("g1", &format!("p{i}"), i)).collect();
    plain.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    let repo = Repo::<Score>::new(faulty_client(&faults, 2).await, plain.table());

    // Pages of 2: after the first round every shard holds 2 items; once the merge took one
    // from a shard, that shard is at half its page and its next page is requested, although
    // the caller has not asked for anything more.
    let mut stream = Box::pin(Score::query(&repo, "g1").page_size(2).stream());
    let first = stream.next().await.unwrap().unwrap();
    let second = stream.next().await.unwrap().unwrap();
    let first_round = 10;
    assert!(
        more_queries_than(&faults, first_round).await,
        "no page was read ahead: {} Query requests after 2 items",
        faults.requests("Query")
    );
    assert!(faults.max_in_flight() <= repo.concurrency());

    // The whole listing comes out in order, every item once.
    let mut seen = vec![first.score, second.score];
    while let Some(item) = stream.next().await {
        seen.push(item.unwrap().score);
    }
    assert_eq!(seen, (0..100).collect::<Vec<u64>>());
}

#[tokio::test]
async fn a_top_k_does_not_read_ahead() {
    let plain = repo::<Score>("read-ahead-top").await;
    let scores: Vec<Score> = (0..100).map(|i| score("g1", &format!("p{i}"), i)).collect();
    plain.batch_put(&scores).await.unwrap();
    let faults = Faults::new();
    let repo = Repo::<Score>::new(faulty_client(&faults, 2).await, plain.table());
    let top = Score::query(&repo, "g1")
        .descending()
        .limit(10)
        .collect()
        .await
        .unwrap();
    assert_eq!(top.len(), 10);
    let after = faults.requests("Query");
    // Nothing was left running to read pages nobody will take.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(faults.requests("Query"), after);
}

//! What a top-k's first requests ask of each partition during a layout transition: sized by
//! where the items sit (the previous layout's partitions before the migration, what the same
//! query learned after it), probes for the partitions that hold nothing, and exact answers
//! when that guess is wrong. Requests are recorded as the SDK sends them (partition, `Limit`,
//! and how many answers had come back by then: requests sent on the same count are one
//! round); no timings.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::query::{QueryInput, QueryOutput};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::migrate::Migrate;
use sharded::{Repo, ShardedEntity};

use crate::support::{client, repo};

/// A leaderboard on 10 shards, before the transition.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "FirstScore")]
#[pk(template = "FIRST#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct At10 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The same leaderboard growing to 20 shards: shards 0 to 9 are in both layouts.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "FirstScore")]
#[pk(
    template = "FIRST#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct To20 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// One Query as sent: its partition key, its `Limit`, and the Query answers received before.
#[derive(Debug, Clone)]
struct Sent {
    partition: String,
    limit: Option<i32>,
    answered_before: usize,
}

#[derive(Debug, Default)]
struct Log {
    sent: Vec<Sent>,
    answered: usize,
}

/// Records every Query of a client.
#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Log>>);

impl Recorder {
    fn on(&self, client: &Client) -> Client {
        Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(self.clone())
                .build(),
        )
    }

    /// The Queries sent since the last call, and forgets them.
    fn take(&self) -> Vec<Sent> {
        let mut log = self.0.lock().unwrap();
        log.answered = 0;
        std::mem::take(&mut log.sent)
    }
}

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "TransitionFirstRequests"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Some(query) = context.input().downcast_ref::<QueryInput>() {
            let partition = query
                .expression_attribute_values()
                .and_then(|values| values.get(":pk"))
                .and_then(|pk| pk.as_s().ok())
                .cloned()
                .unwrap_or_default();
            let mut log = self.0.lock().unwrap();
            let answered_before = log.answered;
            log.sent.push(Sent {
                partition,
                limit: query.limit(),
                answered_before,
            });
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Some(Ok(output)) = context.output_or_error() {
            if output.downcast_ref::<QueryOutput>().is_some() {
                self.0.lock().unwrap().answered += 1;
            }
        }
        Ok(())
    }
}

/// Queries per partition key.
fn per_partition(sent: &[Sent]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for s in sent {
        *counts.entry(s.partition.clone()).or_default() += 1;
    }
    counts
}

/// Queries per round (requests sent on the same count of answers), in order.
fn rounds(sent: &[Sent]) -> Vec<usize> {
    let mut rounds: BTreeMap<usize, usize> = BTreeMap::new();
    for s in sent {
        *rounds.entry(s.answered_before).or_default() += 1;
    }
    rounds.into_values().collect()
}

/// `per_shard` players on each of the 20-shard layout's shards (so `2 x per_shard` on each of
/// the 10-shard layout's: a player's 10-shard is its 20-shard mod 10).
fn players(per_shard: usize, tag: &str) -> BTreeMap<u32, Vec<String>> {
    let mut by_shard: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut i = 0;
    while by_shard.len() < 20 || by_shard.values().any(|v| v.len() < per_shard) {
        let player = format!("{tag}{i:05}");
        let shard = To20::shard_for(&player).unwrap();
        assert_eq!(At10::shard_for(&player).unwrap(), shard % 10);
        let list = by_shard.entry(shard).or_default();
        if list.len() < per_shard {
            list.push(player);
        }
        i += 1;
    }
    by_shard
}

fn to20(s: &At10) -> To20 {
    To20 {
        game_id: s.game_id.clone(),
        player_id: s.player_id.clone(),
        score: s.score,
    }
}

/// A board of 300 scores: the 100 best spread 5 per 20-shard (10 per 10-shard), 200 others
/// below them, written at their 10-shard places (before any migration).
async fn board(prefix: &str) -> (Repo<At10>, Vec<At10>) {
    let repo = repo::<At10>(prefix).await;
    let mut scores = Vec::new();
    for (shard, list) in players(15, "p") {
        for (j, player) in list.into_iter().enumerate() {
            let score = if j < 5 {
                10_000 + u64::from(shard) * 10 + j as u64
            } else {
                u64::from(shard) * 10 + j as u64
            };
            scores.push(At10 {
                game_id: "g1".into(),
                player_id: player,
                score,
            });
        }
    }
    repo.batch_put(&scores).await.unwrap();
    (repo, scores)
}

/// The brute-force top `k` of `scores`, best first, as (score, player).
fn top(scores: &[(u64, String)], k: usize) -> Vec<(u64, String)> {
    let mut all = scores.to_vec();
    all.sort_by(|a, b| b.cmp(a));
    all.truncate(k);
    all
}

/// A repository of `To20` on `table` whose Queries `recorder` records (its own read cache:
/// nothing learned yet).
async fn recorded(table: &str, recorder: &Recorder) -> Repo<To20> {
    Repo::new(recorder.on(&client().await), table)
}

async fn top_100(repo: &Repo<To20>) -> Vec<(u64, String)> {
    To20::query(repo, "g1")
        .descending()
        .limit(100)
        .collect()
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.score, s.player_id))
        .collect()
}

fn keyed(scores: &[At10]) -> Vec<(u64, String)> {
    scores
        .iter()
        .map(|s| (s.score, s.player_id.clone()))
        .collect()
}

#[tokio::test]
async fn before_the_migration_a_top_100_reads_like_10_shards_plus_empty_probes() {
    let (plain, scores) = board("first-before").await;
    let recorder = Recorder::default();
    let repo = recorded(plain.table(), &recorder).await;
    let expected = top(&keyed(&scores), 100);

    assert_eq!(top_100(&repo).await, expected);
    let sent = recorder.take();
    // One Query per partition, all in the first round: no refill.
    assert_eq!(rounds(&sent), [20], "{sent:#?}");
    assert!(per_partition(&sent).values().all(|&n| n == 1), "{sent:#?}");
    for s in &sent {
        let shard: u32 = s.partition.rsplit('#').next().unwrap().parse().unwrap();
        // The previous layout's partitions: a steady 10-shard top-100 (ceil(1.5 x 100 / 10)
        // + 2 = 17 each); the 10 the migration has not filled yet: a probe of one item.
        let expected = if shard < 10 { 17 } else { 1 };
        assert_eq!(s.limit, Some(expected), "partition {}", s.partition);
    }

    // The second run asks the same, from what the first learned.
    assert_eq!(top_100(&repo).await, expected);
    let sent = recorder.take();
    assert_eq!(rounds(&sent), [20], "{sent:#?}");
    assert!(per_partition(&sent).values().all(|&n| n == 1), "{sent:#?}");
}

#[tokio::test]
async fn after_the_migration_a_wrong_prior_costs_one_round_never_an_item() {
    let (plain, scores) = board("first-after").await;
    let migrating = plain.for_entity::<To20>();
    let report = migrating
        .migrate()
        .delete_delay(Duration::ZERO)
        .run()
        .await
        .unwrap();
    assert_eq!(
        report.progress.moved, 150,
        "the items whose 20-shard is 10 to 19"
    );
    let expected = top(&keyed(&scores), 100);

    // Nothing learned: the prior says "not migrated", so the 10 new partitions are probed, and
    // found full. The first probe the merge runs through refills them all in one round.
    let recorder = Recorder::default();
    let repo = recorded(plain.table(), &recorder).await;
    assert_eq!(top_100(&repo).await, expected);
    let sent = recorder.take();
    assert_eq!(rounds(&sent), [20, 10], "{sent:#?}");
    for (partition, n) in per_partition(&sent) {
        let shard: u32 = partition.rsplit('#').next().unwrap().parse().unwrap();
        assert_eq!(n, if shard < 10 { 1 } else { 2 }, "partition {partition}");
    }

    // Learned: every partition supplied its part, so each is asked for its share at once.
    assert_eq!(top_100(&repo).await, expected);
    let sent = recorder.take();
    assert_eq!(rounds(&sent), [20], "{sent:#?}");
    assert!(
        sent.iter().all(|s| s.limit == Some(10)),
        "ceil(1.5 x 100 / 20) + 2 = 10 each: {sent:#?}"
    );
}

#[tokio::test]
async fn items_written_to_new_partitions_during_the_transition_are_never_lost() {
    let (plain, scores) = board("first-written").await;
    let writing = plain.for_entity::<To20>();
    // Three new best scores on each partition only the new layout has, written since the
    // transition was declared (so at their 20-shard places), and three on partitions of both.
    let mut fresh = Vec::new();
    for (shard, list) in players(3, "new") {
        for (j, player) in list.into_iter().enumerate() {
            fresh.push(To20 {
                game_id: "g1".into(),
                player_id: player,
                score: 50_000 + u64::from(shard) * 10 + j as u64,
            });
        }
    }
    for score in &fresh {
        writing.put(score).await.unwrap();
    }
    let mut all = keyed(&scores);
    all.extend(fresh.iter().map(|s| (s.score, s.player_id.clone())));
    let expected = top(&all, 100);
    assert!(expected.iter().take(60).all(|(score, _)| *score >= 50_000));

    let recorder = Recorder::default();
    let repo = recorded(plain.table(), &recorder).await;
    assert_eq!(top_100(&repo).await, expected);
    let sent = recorder.take();
    assert_eq!(rounds(&sent), [20, 10], "{sent:#?}");

    // And a page read across the same partitions returns the same items, page by page.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = To20::query(&repo, "g1")
            .descending()
            .page(30, cursor.as_ref())
            .await
            .unwrap();
        paged.extend(page.items.into_iter().map(|s| (s.score, s.player_id)));
        match page.cursor {
            Some(next) if paged.len() < 100 => cursor = Some(next),
            _ => break,
        }
    }
    paged.truncate(100);
    assert_eq!(paged, expected);
}

#[tokio::test]
async fn everything_migrated_and_a_copy_left_behind_still_reads_exactly() {
    let (plain, scores) = board("first-copies").await;
    // Copied to its 20-shard place without deleting the old copy (a migration between its
    // copy and its delayed delete), for every item: both layouts hold everything.
    for score in &scores {
        plain
            .client()
            .put_item()
            .table_name(plain.table())
            .set_item(Some(To20::to_item(&to20(score)).unwrap()))
            .send()
            .await
            .unwrap();
    }
    let expected = top(&keyed(&scores), 100);
    let recorder = Recorder::default();
    let repo = recorded(plain.table(), &recorder).await;
    assert_eq!(top_100(&repo).await, expected, "each item once");
    // Two copies of each item that moves are stored.
    let count = plain
        .client()
        .scan()
        .table_name(plain.table())
        .select(aws_sdk_dynamodb::types::Select::Count)
        .send()
        .await
        .unwrap()
        .count();
    assert_eq!(count, 450, "300 items, 150 of them twice");
}

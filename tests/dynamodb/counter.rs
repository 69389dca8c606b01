//! The sharded counter: writes spread over shards, the total reads them all.

use sharded::{Error, ShardedCounter, ShardedEntity};
use sharded_testkit::faults::Faults;

use crate::entities::Score;
use crate::support::{client, faulty_client, repo};

#[tokio::test]
async fn increments_spread_and_sum() {
    let repo = repo::<Score>("counter").await;
    let votes = ShardedCounter::new(
        client().await,
        repo.table(),
        &Score::table_definition(),
        "VOTES#candidate-a",
        10,
    )
    .unwrap();
    assert_eq!(
        votes.total().await.unwrap(),
        0,
        "no shard written yet: every shard counts 0"
    );
    let mut shards = std::collections::HashSet::new();
    let increments = futures::future::join_all((0..200).map(|_| votes.increment(1))).await;
    for shard in increments {
        shards.insert(shard.unwrap());
    }
    votes.increment(-5).await.unwrap();
    assert_eq!(votes.total().await.unwrap(), 195);
    assert!(
        shards.len() >= 8,
        "200 increments should touch most of 10 shards: {shards:?}"
    );
    let values = votes.shard_values().await.unwrap();
    assert_eq!(values.len(), 10);
    assert_eq!(values.iter().sum::<i64>(), 195);
    // Counter items never show up in an entity's query of the same table.
    assert_eq!(Score::query(&repo, "g1").count().await.unwrap(), 0);
}

#[tokio::test]
async fn a_shard_that_cannot_be_read_is_an_error_not_zero() {
    let repo = repo::<Score>("counter-fail").await;
    let faults = Faults::new();
    let votes = ShardedCounter::new(
        faulty_client(&faults, 1).await,
        repo.table(),
        &Score::table_definition(),
        "VOTES#b",
        4,
    )
    .unwrap();
    for _ in 0..20 {
        votes.increment(1).await.unwrap();
    }
    faults.fail_partition("VOTES#b#2");
    let result = votes.total().await;
    assert!(
        matches!(result, Err(Error::BatchIncomplete { .. })),
        "{result:?}"
    );
}

/// Every increment's response is lost once, after DynamoDB applied it: the SDK retries.
/// The exactly-once total equals the `Ok`s; the at-least-once total over-counts.
#[tokio::test]
async fn lost_responses_count_once_exactly_and_twice_at_least_once() {
    let repo = repo::<Score>("counter-lost").await;
    let faults = Faults::new();
    let counter = |key: &str, client| {
        ShardedCounter::new(client, repo.table(), &Score::table_definition(), key, 4).unwrap()
    };
    // Three attempts: the first is applied and its answer lost, the second is answered.
    let exact = counter("VOTES#exact", faulty_client(&faults, 3).await);
    let loose = counter("VOTES#loose", faulty_client(&faults, 3).await);
    let mut ok = 0;
    for _ in 0..20 {
        faults.drop_responses("TransactWriteItems", 1);
        if exact.increment(1).await.is_ok() {
            ok += 1;
        }
    }
    assert_eq!(
        faults.injected("TransactWriteItems"),
        20,
        "every answer was lost once"
    );
    assert_eq!(ok, 20);
    assert_eq!(exact.total().await.unwrap(), ok, "exactly once: one per Ok");
    let mut loose_ok = 0;
    for _ in 0..20 {
        faults.drop_responses("UpdateItem", 1);
        if loose.increment_at_least_once(1).await.is_ok() {
            loose_ok += 1;
        }
    }
    assert_eq!(loose_ok, 20);
    assert_eq!(
        loose.total().await.unwrap(),
        2 * loose_ok,
        "at least once: each lost answer was applied again"
    );
}

/// What a counter's `BatchGetItem` asked for: `ConsistentRead` of each request, seen by an SDK
/// interceptor on the client (no emulator here serves a stale read, so the request is what
/// can be checked).
#[derive(Debug, Default, Clone)]
struct ConsistentReads(std::sync::Arc<std::sync::Mutex<Vec<Option<bool>>>>);

impl sharded::aws_sdk_dynamodb::config::Intercept for ConsistentReads {
    fn name(&self) -> &'static str {
        "consistent reads"
    }

    fn read_before_execution(
        &self,
        context: &sharded::aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut sharded::aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        use sharded::aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemInput;
        if let Some(input) = context.input().downcast_ref::<BatchGetItemInput>() {
            let mut seen = self.0.lock().unwrap();
            for keys in input.request_items().into_iter().flat_map(|m| m.values()) {
                seen.push(keys.consistent_read());
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_total_reads_consistently_when_asked() {
    let repo = repo::<Score>("counter-consistent").await;
    let spy = ConsistentReads::default();
    let plain = client().await;
    let spied = sharded::aws_sdk_dynamodb::Client::from_conf(
        plain.config().to_builder().interceptor(spy.clone()).build(),
    );
    let counter = |consistent: Option<bool>| {
        let counter = ShardedCounter::new(
            spied.clone(),
            repo.table(),
            &Score::table_definition(),
            "VOTES#candidate-c",
            150,
        )
        .unwrap();
        match consistent {
            Some(consistent) => counter.consistent_read(consistent),
            None => counter,
        }
    };
    counter(None).increment(3).await.unwrap();
    let asked = |spy: &ConsistentReads| std::mem::take(&mut *spy.0.lock().unwrap());

    assert_eq!(counter(None).total().await.unwrap(), 3);
    let default = asked(&spy);
    assert_eq!(default.len(), 2, "150 shards: two BatchGetItem requests");
    assert!(default.iter().all(|c| *c != Some(true)), "{default:?}");

    assert_eq!(counter(Some(true)).total().await.unwrap(), 3);
    let consistent = asked(&spy);
    assert_eq!(consistent, vec![Some(true); 2]);
    assert_eq!(
        counter(Some(true))
            .shard_values()
            .await
            .unwrap()
            .iter()
            .sum::<i64>(),
        3
    );
    assert_eq!(asked(&spy), vec![Some(true); 2]);

    assert_eq!(counter(Some(false)).total().await.unwrap(), 3);
    assert!(asked(&spy).iter().all(|c| *c != Some(true)));
}

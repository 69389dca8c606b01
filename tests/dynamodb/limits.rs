//! The per-key limit emulator in front of DynamoDB Local: hot keys throttle as on DynamoDB,
//! sharded keys do not, and nothing is lost under overload. A manual clock makes every count
//! exact: no test here depends on timing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::capacity::{ManualClock, PerKeyLimits};
use sharded::{Error, Repo, RetryPolicy, ShardedEntity};
use sharded_testkit::emulator::KeyLimitEmulator;
use sharded_testkit::local::unique_table_name;

use crate::entities::{score, Score};
use crate::support::local;

/// The same leaderboard, unsharded: `n = 1` in all but name.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "FLAT#{game_id}")]
#[sk(template = "SCORE#{score}#{player_id}")]
struct FlatScore {
    game_id: String,
    player_id: String,
    score: u64,
}

/// A sharded base key whose GSI was left on one key (opted in, so it compiles).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "CANDIDATE#{candidate}", shard = "hash(voter)", n = 10)]
#[sk(template = "VOTE#{voter}")]
#[gsi1(
    pk = "ELECTION#2024",
    single_partition = "made hot on purpose for this test"
)]
struct Vote {
    candidate: String,
    voter: String,
}

/// 10 write units/s and 30 read units/s per key, 1 s of burst, on a frozen clock.
async fn emulated(clock: &ManualClock, sdk_attempts: u32) -> (KeyLimitEmulator, Client) {
    let emulator = KeyLimitEmulator::new(PerKeyLimits {
        write_units_per_second: 10.0,
        read_units_per_second: 30.0,
    })
    .with_burst_seconds(1.0)
    .with_clock(Arc::new(clock.clone()));
    let sdk = local().await.sdk_config().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(emulator.http_client(&sdk))
        .retry_config(RetryConfig::standard().with_max_attempts(sdk_attempts))
        .build();
    (emulator, Client::from_conf(config))
}

async fn table<E: ShardedEntity>(client: &Client, prefix: &str) -> Repo<E> {
    let repo = Repo::new(client.clone(), unique_table_name(prefix));
    repo.create_table().await.unwrap(); // through the emulated client: it learns the keys
    repo
}

fn throttle_reason(err: &Error) -> Option<String> {
    let Error::Dynamo { source, .. } = err else {
        return None;
    };
    match source.as_ref() {
        aws_sdk_dynamodb::Error::ProvisionedThroughputExceededException(e) => e
            .throttling_reasons()
            .first()
            .and_then(|r| r.reason())
            .map(str::to_owned),
        _ => None,
    }
}

#[tokio::test]
async fn a_hot_key_throttles_like_dynamodb() {
    let clock = ManualClock::new();
    let (emulator, client) = emulated(&clock, 1).await;
    let repo = table::<FlatScore>(&client, "limits-hot").await;
    let mut accepted = 0;
    let mut reasons = HashSet::new();
    for i in 0..30 {
        match repo
            .put(&FlatScore {
                game_id: "g1".into(),
                player_id: format!("p{i}"),
                score: i,
            })
            .await
        {
            Ok(()) => accepted += 1,
            Err(e) => {
                reasons
                    .insert(throttle_reason(&e).unwrap_or_else(|| panic!("not a throttle: {e}")));
            }
        }
    }
    assert_eq!(accepted, 10, "one second's worth of a 10 WCU key");
    assert_eq!(
        reasons,
        HashSet::from(["TableWriteKeyRangeThroughputExceeded".to_owned()])
    );
    assert_eq!(emulator.counts().throttled, 20);
    clock.advance(Duration::from_millis(500));
    let late = repo
        .put(&FlatScore {
            game_id: "g1".into(),
            player_id: "p99".into(),
            score: 99,
        })
        .await;
    assert!(
        late.is_err(),
        "the 10 units count against the key for a whole second"
    );
    clock.advance(Duration::from_millis(500));
    let repo = &repo;
    let after: usize = futures::future::join_all((100..120).map(|i| async move {
        repo.put(&FlatScore {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i,
        })
        .await
    }))
    .await
    .into_iter()
    .filter(Result::is_ok)
    .count();
    assert_eq!(after, 10, "a second later, the limit again and no more");
}

#[tokio::test]
async fn sharding_spreads_what_one_key_cannot_take() {
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 1).await;
    let flat = table::<FlatScore>(&client, "limits-flat").await;
    let sharded = table::<Score>(&client, "limits-sharded").await;
    let (mut flat_ok, mut sharded_ok) = (0, 0);
    for i in 0..50 {
        let player = format!("player-{i}");
        if flat
            .put(&FlatScore {
                game_id: "g1".into(),
                player_id: player.clone(),
                score: i,
            })
            .await
            .is_ok()
        {
            flat_ok += 1;
        }
        if sharded.put(&score("g1", &player, i)).await.is_ok() {
            sharded_ok += 1;
        }
    }
    assert_eq!(flat_ok, 10);
    // 50 writes over 10 shards of 10 units each: only a shard hashed more than 10 players
    // could refuse one. The GSI (4 identity shards, one player each) stays far below.
    let mut per_shard = [0u32; 10];
    for i in 0..50 {
        per_shard[Score::shard_for(&format!("player-{i}")).unwrap() as usize] += 1;
    }
    let expected: u32 = per_shard.iter().map(|&c| c.min(10)).sum();
    assert_eq!(sharded_ok, expected);
    assert!(sharded_ok >= 45, "{per_shard:?}");
}

#[tokio::test]
async fn an_unsharded_gsi_key_throttles_the_sharded_base_writes() {
    let clock = ManualClock::new();
    let (emulator, client) = emulated(&clock, 1).await;
    let votes = table::<Vote>(&client, "limits-gsi").await;
    let mut reasons = HashSet::new();
    let mut accepted = 0;
    for i in 0..25 {
        match votes
            .put(&Vote {
                candidate: "a".into(),
                voter: format!("v{i}"),
            })
            .await
        {
            Ok(()) => accepted += 1,
            Err(e) => {
                reasons.insert(throttle_reason(&e).expect("a throttle"));
            }
        }
    }
    assert_eq!(accepted, 10, "the base key is spread, the GSI key is not");
    assert_eq!(
        reasons,
        HashSet::from(["IndexWriteKeyRangeThroughputExceeded".to_owned()])
    );
    assert_eq!(
        emulator.counts().by_reason["IndexWriteKeyRangeThroughputExceeded"],
        15
    );
}

#[tokio::test]
async fn batch_writes_at_overload_lose_nothing() {
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 1).await;
    let repo = table::<FlatScore>(&client, "limits-batch")
        .await
        .with_batch_retry(RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        });
    let items: Vec<FlatScore> = (0..100)
        .map(|i| FlatScore {
            game_id: "g1".into(),
            player_id: format!("p{i:03}"),
            score: i,
        })
        .collect();
    let err = repo.batch_put(&items).await.unwrap_err();
    let Error::BatchIncomplete { unprocessed, .. } = err else {
        panic!("expected BatchIncomplete, got {err:?}")
    };
    assert_eq!(
        unprocessed.len(),
        90,
        "10 units/s and a frozen clock: 10 written, 90 returned"
    );
    let returned: Vec<FlatScore> = unprocessed
        .into_iter()
        .map(|i| FlatScore::from_item(i).unwrap())
        .collect();

    clock.advance(Duration::from_secs(30));
    let mut written = FlatScore::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(written.len(), 10);
    // Retrying what came back, with capacity refilled step by step, writes everything.
    let mut pending = returned;
    while !pending.is_empty() {
        clock.advance(Duration::from_secs(1));
        match repo.batch_put(&pending).await {
            Ok(()) => pending.clear(),
            Err(Error::BatchIncomplete { unprocessed, .. }) => {
                assert!(unprocessed.len() < pending.len(), "no progress");
                pending = unprocessed
                    .into_iter()
                    .map(|i| FlatScore::from_item(i).unwrap())
                    .collect();
            }
            Err(e) => panic!("{e}"),
        }
    }
    written = FlatScore::query(&repo, "g1")
        .consistent_read(true)
        .collect()
        .await
        .unwrap();
    assert_eq!(written, items, "every item written exactly once");
}

#[tokio::test]
async fn a_throttled_shard_is_retried_then_named() {
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 2).await;
    let repo = table::<Score>(&client, "limits-read").await;
    clock.advance(Duration::from_secs(10)); // let write capacity refill between batches
    for i in 0..40 {
        repo.put(&score("g1", &format!("player-{i}"), i))
            .await
            .unwrap();
        clock.advance(Duration::from_millis(200));
    }
    // Spend shard 3's read capacity (30 units/s, 1 s burst) with reads of that shard alone.
    let hot = Score::pk_on_shard("g1", 3).unwrap();
    let mut spent = 0;
    while client
        .query()
        .table_name(repo.table())
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(hot.clone()),
        )
        .send()
        .await
        .is_ok()
    {
        spent += 1;
        assert!(spent < 1000, "the shard never throttled");
    }
    match Score::query(&repo, "g1").collect().await {
        Err(Error::ShardFailed { shard, source, .. }) => {
            assert_eq!(shard, 3);
            assert_eq!(
                throttle_reason(&source).as_deref(),
                Some("TableReadKeyRangeThroughputExceeded")
            );
        }
        other => panic!("expected shard 3 to fail, got {other:?}"),
    }
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        Score::query(&repo, "g1").collect().await.unwrap().len(),
        40,
        "after refill it succeeds"
    );
}

#[tokio::test]
async fn the_hot_key_report_names_the_hot_key() {
    use sharded::capacity::{HotKeyFlag, HotKeyStats, ReportHotKeys};
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 1).await;
    let stats = Arc::new(
        HotKeyStats::new(Duration::from_secs(60))
            .with_clock(Arc::new(clock.clone()))
            .with_limits(PerKeyLimits::new(10.0, 30.0)),
    );
    let flat = table::<FlatScore>(&client, "report-flat")
        .await
        .with_stats(stats.clone());
    let votes = table::<Vote>(&client, "report-gsi")
        .await
        .with_stats(stats.clone());
    // The unsharded game key: 30 writes on a 10-unit key within one second.
    for i in 0..30 {
        let _ = flat
            .put(&FlatScore {
                game_id: "hot".into(),
                player_id: format!("p{i}"),
                score: i,
            })
            .await;
    }
    // A few cold keys, and votes whose sharded base keys are fine but whose GSI key is not.
    for i in 0..3 {
        flat.put(&FlatScore {
            game_id: format!("cold-{i}"),
            player_id: "p".into(),
            score: 1,
        })
        .await
        .unwrap();
    }
    for i in 0..12 {
        let _ = votes
            .put(&Vote {
                candidate: "a".into(),
                voter: format!("v{i}"),
            })
            .await;
    }
    // Batch writes are recorded per key too.
    let batch: Vec<FlatScore> = (0..5)
        .map(|i| FlatScore {
            game_id: "batched".into(),
            player_id: format!("p{i}"),
            score: i,
        })
        .collect();
    flat.batch_put(&batch).await.unwrap();
    clock.advance(Duration::from_secs(1));
    let report = stats.report();
    let text = report.to_string();
    assert_eq!(
        report.key(None, "FLAT#batched").map(|k| k.write_units),
        Some(5.0),
        "{text}"
    );
    assert!(text.contains("FLAT#hot"), "{text}");

    let hot = report
        .key(None, "FLAT#hot")
        .expect("the hot key is reported");
    assert_eq!(hot.write_units, 10.0, "10 writes were admitted");
    assert_eq!(
        hot.throttles.get("TableWriteKeyRangeThroughputExceeded"),
        Some(&20)
    );
    assert!(
        report
            .flags
            .iter()
            .any(|f| matches!(f, HotKeyFlag::NearLimit { key, .. } if key == "FLAT#hot")),
        "{text}"
    );
    assert!(
        report
            .flags
            .iter()
            .any(|f| matches!(f, HotKeyFlag::Throttled { key, .. } if key == "FLAT#hot")),
        "{text}"
    );
    assert!(!report
        .flags
        .iter()
        .any(|f| matches!(f, HotKeyFlag::NearLimit { key, .. } if key.starts_with("FLAT#cold"))));
    // The votes' unsharded GSI key is named with its index and its throttles.
    assert!(
        report.flags.iter().any(|f| matches!(f, HotKeyFlag::Throttled { index: Some(i), key, .. } if i == "gsi1" && key == "ELECTION#2024")),
        "{text}"
    );
}

// The sizes DynamoDB charges that the request does not show: the item an overwrite or a
// delete replaces, and the items a batch read returns. The old items are written through an
// unmetered client, as another service would have written them.

/// A table with a string `pk` and `sk`, created through the emulated client.
async fn raw_table(client: &Client, prefix: &str) -> String {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let name = unique_table_name(prefix);
    let mut create = client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest);
    for (attr, kind) in [("pk", KeyType::Hash), ("sk", KeyType::Range)] {
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(attr)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(attr)
                    .key_type(kind)
                    .build()
                    .unwrap(),
            );
    }
    create.send().await.unwrap();
    name
}

/// The item (`pk`, `sk`) of about `kb` KB: `kb` write units.
fn raw_item(sk: &str, kb: usize) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S("k".into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
        (
            "d".to_owned(),
            AttributeValue::S("x".repeat((kb * 1024).saturating_sub(20))),
        ),
    ])
}

fn raw_key(sk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S("k".into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
    ])
}

/// How many of `n` small puts on key `k` (each 1 write unit) the emulator admits.
async fn small_puts(client: &Client, table: &str, n: usize) -> usize {
    let mut ok = 0;
    for i in 0..n {
        let put = client
            .put_item()
            .table_name(table)
            .set_item(Some(raw_item(&format!("small-{i}"), 0)))
            .send()
            .await;
        if put.is_ok() {
            ok += 1;
        }
    }
    ok
}

#[tokio::test]
async fn an_overwriting_put_pays_for_the_item_it_replaces() {
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 1).await;
    let plain = local().await.client().await;
    let table = raw_table(&client, "limits-overwrite").await;
    plain
        .put_item()
        .table_name(&table)
        .set_item(Some(raw_item("old", 5)))
        .send()
        .await
        .unwrap();
    let put = client
        .put_item()
        .table_name(&table)
        .set_item(Some(raw_item("old", 1)))
        .send()
        .await
        .unwrap();
    assert!(
        put.attributes().is_none(),
        "the old item is not shown unasked"
    );
    assert_eq!(
        small_puts(&client, &table, 10).await,
        5,
        "the overwrite cost 5 of the key's 10 units: the old item's size"
    );

    // Asked for, the old item comes back as DynamoDB returns it.
    clock.advance(Duration::from_secs(1));
    let put = client
        .put_item()
        .table_name(&table)
        .set_item(Some(raw_item("old", 0)))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
        .send()
        .await
        .unwrap();
    assert_eq!(put.attributes(), Some(&raw_item("old", 1)));
}

#[tokio::test]
async fn deletes_pay_for_the_items_they_delete() {
    use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
    let clock = ManualClock::new();
    let (_, client) = emulated(&clock, 1).await;
    let plain = local().await.client().await;
    let table = raw_table(&client, "limits-delete").await;
    for sk in ["a", "b", "c", "single"] {
        plain
            .put_item()
            .table_name(&table)
            .set_item(Some(raw_item(sk, 3)))
            .send()
            .await
            .unwrap();
    }
    let deletes: Vec<WriteRequest> = ["a", "b", "c"]
        .iter()
        .map(|sk| {
            WriteRequest::builder()
                .delete_request(
                    DeleteRequest::builder()
                        .set_key(Some(raw_key(sk)))
                        .build()
                        .unwrap(),
                )
                .build()
        })
        .collect();
    let out = client
        .batch_write_item()
        .request_items(&table, deletes)
        .send()
        .await
        .unwrap();
    assert!(out.unprocessed_items().is_none_or(|u| u.is_empty()));
    assert_eq!(
        small_puts(&client, &table, 5).await,
        1,
        "three 3 KB deletes cost 9 of the key's 10 units"
    );

    clock.advance(Duration::from_secs(1));
    let delete = client
        .delete_item()
        .table_name(&table)
        .set_key(Some(raw_key("single")))
        .send()
        .await
        .unwrap();
    assert!(delete.attributes().is_none(), "not asked for, not shown");
    assert_eq!(
        small_puts(&client, &table, 10).await,
        7,
        "a 3 KB delete costs 3 units"
    );
    let left = plain
        .scan()
        .table_name(&table)
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    assert!(left
        .items()
        .iter()
        .all(|i| i["sk"].as_s().unwrap().starts_with("small")));
}

#[tokio::test]
async fn a_batch_get_pays_for_the_items_it_reads() {
    use aws_sdk_dynamodb::types::KeysAndAttributes;
    let clock = ManualClock::new();
    let (emulator, client) = emulated(&clock, 1).await;
    let plain = local().await.client().await;
    let table = raw_table(&client, "limits-batch-get").await;
    let sks: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    for sk in &sks {
        plain
            .put_item()
            .table_name(&table)
            .set_item(Some(raw_item(sk, 9))) // 9 KB: 3 strongly consistent read units
            .send()
            .await
            .unwrap();
    }
    let batch_get = || {
        client
            .batch_get_item()
            .request_items(
                &table,
                KeysAndAttributes::builder()
                    .set_keys(Some(sks.iter().map(|sk| raw_key(sk)).collect()))
                    .consistent_read(true)
                    .build()
                    .unwrap(),
            )
            .send()
    };
    let first = batch_get().await.unwrap();
    assert_eq!(first.responses().unwrap()[&table].len(), 10);
    // Admitted at 1 unit per key, settled at 3: the key's 30 units are spent.
    let second = batch_get().await;
    assert!(
        second.is_err(),
        "10 x 9 KB strongly consistent reads spent the key's 30 read units"
    );
    assert_eq!(emulator.counts().throttled, 10);
    clock.advance(Duration::from_secs(1));
    assert!(
        batch_get().await.is_ok(),
        "the window is free a second later"
    );
}

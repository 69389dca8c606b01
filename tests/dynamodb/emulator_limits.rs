//! What the per-key limit emulator meters beyond single items and batches, on DynamoDB Local:
//! transactions (twice the units of each item, admitted whole, canceled with
//! `ThrottlingError` when a key is over), scans (each page charged to the keys it returns),
//! and a table's on-demand maximum. A manual clock makes every count exact.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::scan::ScanError;
use aws_sdk_dynamodb::operation::transact_get_items::TransactGetItemsError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, Delete, Get, KeySchemaElement, KeyType, Put,
    ScalarAttributeType, TransactGetItem, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use sharded::capacity::{ManualClock, PerKeyLimits};
use sharded_testkit::emulator::KeyLimitEmulator;
use sharded_testkit::local::unique_table_name;

use crate::support::local;

/// 10 write units/s and 30 read units/s per key, 1 s of burst, on a frozen clock; the SDK
/// tries once, so every throttle is seen.
fn emulator(clock: &ManualClock) -> KeyLimitEmulator {
    KeyLimitEmulator::new(PerKeyLimits::new(10.0, 30.0))
        .with_burst_seconds(1.0)
        .with_clock(Arc::new(clock.clone()))
}

async fn client_of(emulator: &KeyLimitEmulator) -> Client {
    let sdk = local().await.sdk_config().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(emulator.http_client(&sdk))
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        .build();
    Client::from_conf(config)
}

/// Creates `name` (string `pk` and `sk`) through `client`, so the emulator learns its keys.
async fn create(client: &Client, name: &str) {
    let mut create = client
        .create_table()
        .table_name(name)
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
}

type Item = HashMap<String, AttributeValue>;

/// The item (`pk`, `sk`) of exactly `bytes` bytes (attribute names count, as DynamoDB counts).
fn item(pk: &str, sk: &str, bytes: usize) -> Item {
    let filler = bytes - ("pk".len() + pk.len() + "sk".len() + sk.len() + "d".len());
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
        ("d".to_owned(), AttributeValue::S("x".repeat(filler))),
    ])
}

fn key(pk: &str, sk: &str) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
    ])
}

/// How many of `n` one-unit puts on key `pk` the emulator admits.
async fn small_puts(client: &Client, table: &str, pk: &str, n: usize) -> usize {
    let mut ok = 0;
    for i in 0..n {
        let put = client
            .put_item()
            .table_name(table)
            .set_item(Some(item(pk, &format!("small-{i}"), 100)))
            .send()
            .await;
        ok += usize::from(put.is_ok());
    }
    ok
}

fn put(table: &str, item: Item) -> TransactWriteItem {
    TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name(table)
                .set_item(Some(item))
                .build()
                .unwrap(),
        )
        .build()
}

#[tokio::test]
async fn transactions_pay_twice_per_item_and_are_throttled_whole() {
    let clock = ManualClock::new();
    let emulator = emulator(&clock);
    let client = client_of(&emulator).await;
    let plain = local().await.client().await;
    let table = unique_table_name("emulator-tx");
    create(&client, &table).await;
    plain
        .put_item()
        .table_name(&table)
        .set_item(Some(item("k", "old", 3 * 1024)))
        .send()
        .await
        .unwrap();

    // A 500-byte put (2 units) and the delete of a 3 KB item (6 units): 8 of key k's 10.
    let delete = TransactWriteItem::builder()
        .delete(
            Delete::builder()
                .table_name(&table)
                .set_key(Some(key("k", "old")))
                .build()
                .unwrap(),
        )
        .build();
    client
        .transact_write_items()
        .transact_items(put(&table, item("k", "new", 500)))
        .transact_items(delete)
        .send()
        .await
        .unwrap();
    assert_eq!(small_puts(&client, &table, "k", 10).await, 2);

    // An update that grows an item to 3 KB: admitted on 2 units, settled on 6.
    clock.advance(Duration::from_secs(1));
    let update = TransactWriteItem::builder()
        .update(
            Update::builder()
                .table_name(&table)
                .set_key(Some(key("k", "grown")))
                .update_expression("SET d = :d")
                .expression_attribute_values(":d", AttributeValue::S("x".repeat(3 * 1024 - 20)))
                .build()
                .unwrap(),
        )
        .build();
    client
        .transact_write_items()
        .transact_items(update)
        .send()
        .await
        .unwrap();
    assert_eq!(small_puts(&client, &table, "k", 10).await, 4);

    // Key k has 1 unit left: a transaction putting on a cold key and on k is canceled whole.
    clock.advance(Duration::from_secs(1));
    assert_eq!(small_puts(&client, &table, "k", 9).await, 9);
    let before = emulator.counts();
    let key_range = |c: &sharded_testkit::emulator::EmulatorCounts| {
        c.by_reason
            .get("TableWriteKeyRangeThroughputExceeded")
            .copied()
            .unwrap_or(0)
    };
    let err = client
        .transact_write_items()
        .transact_items(put(&table, item("cold", "a", 100)))
        .transact_items(put(&table, item("k", "b", 100)))
        .send()
        .await
        .unwrap_err();
    let Some(TransactWriteItemsError::TransactionCanceledException(canceled)) =
        err.as_service_error()
    else {
        panic!("expected a canceled transaction, got {err:?}");
    };
    let codes: Vec<_> = canceled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or_default())
        .collect();
    assert_eq!(codes, ["None", "ThrottlingError"]);
    let after = emulator.counts();
    assert_eq!(
        after.throttled,
        before.throttled + 1,
        "one throttled request"
    );
    assert_eq!(
        key_range(&after),
        key_range(&before) + 1,
        "named by its reason"
    );
    let cold = plain
        .get_item()
        .table_name(&table)
        .set_key(Some(key("cold", "a")))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    assert!(
        cold.item().is_none(),
        "nothing of the transaction was applied"
    );
    assert_eq!(
        small_puts(&client, &table, "cold", 10).await,
        10,
        "nor charged"
    );

    // TransactGetItems: a 9 KB item costs twice its 3 strong read units; 5 fill the key's 30.
    plain
        .put_item()
        .table_name(&table)
        .set_item(Some(item("r", "big", 9 * 1024)))
        .send()
        .await
        .unwrap();
    let get = || {
        client
            .transact_get_items()
            .transact_items(
                TransactGetItem::builder()
                    .get(
                        Get::builder()
                            .table_name(&table)
                            .set_key(Some(key("r", "big")))
                            .build()
                            .unwrap(),
                    )
                    .build(),
            )
            .send()
    };
    for _ in 0..5 {
        let read = get().await.unwrap();
        assert!(read.responses()[0].item().is_some());
    }
    let err = get().await.unwrap_err();
    let Some(TransactGetItemsError::TransactionCanceledException(canceled)) =
        err.as_service_error()
    else {
        panic!("expected a canceled read, got {err:?}");
    };
    assert_eq!(
        canceled.cancellation_reasons()[0].code(),
        Some("ThrottlingError")
    );
}

#[tokio::test]
async fn scans_are_charged_to_the_keys_they_return() {
    let clock = ManualClock::new();
    let emulator = emulator(&clock);
    let client = client_of(&emulator).await;
    let plain = local().await.client().await;
    let table = unique_table_name("emulator-scan");
    create(&client, &table).await;
    for i in 0..10 {
        plain
            .put_item()
            .table_name(&table)
            .set_item(Some(item("k", &format!("s{i}"), 4096)))
            .send()
            .await
            .unwrap();
    }
    let scan = || {
        client
            .scan()
            .table_name(&table)
            .consistent_read(true)
            .send()
    };
    // Each page returns 10 x 4 KB on key k: 10 strongly consistent read units, of its 30.
    for _ in 0..3 {
        let page = scan().await.unwrap();
        assert_eq!(page.items().len(), 10);
        assert!(
            page.consumed_capacity().is_none(),
            "not asked for, not shown"
        );
    }
    let err = scan().await.unwrap_err();
    let reason = match err.as_service_error() {
        Some(ScanError::ProvisionedThroughputExceededException(e)) => e
            .throttling_reasons()
            .first()
            .and_then(|r| r.reason())
            .map(str::to_owned),
        _ => None,
    };
    assert_eq!(
        reason.as_deref(),
        Some("TableReadKeyRangeThroughputExceeded")
    );
    // The scans spent key k's reads: a strongly consistent get on k is throttled too.
    let get = client
        .get_item()
        .table_name(&table)
        .set_key(Some(key("k", "s0")))
        .consistent_read(true)
        .send()
        .await;
    assert!(get.is_err(), "key k's 30 read units went to the scans");
    clock.advance(Duration::from_secs(1));
    assert!(scan().await.is_ok(), "a second later");
}

#[tokio::test]
async fn a_table_maximum_throttles_keys_each_under_their_limit() {
    let clock = ManualClock::new();
    let table = unique_table_name("emulator-max");
    let emulator = emulator(&clock).with_table_max(&table, -1.0, 15.0);
    let client = client_of(&emulator).await;
    create(&client, &table).await;
    // Three keys at 5 units each: every key at half its limit, the table at its 15.
    for k in ["a", "b", "c"] {
        assert_eq!(small_puts(&client, &table, k, 5).await, 5);
    }
    let err = client
        .put_item()
        .table_name(&table)
        .set_item(Some(item("d", "first", 100)))
        .send()
        .await
        .unwrap_err();
    let Some(PutItemError::ProvisionedThroughputExceededException(e)) = err.as_service_error()
    else {
        panic!("expected a throttle, got {err:?}");
    };
    let reason = &e.throttling_reasons()[0];
    assert_eq!(
        reason.reason(),
        Some("TableWriteMaxOnDemandThroughputExceeded")
    );
    assert!(reason
        .resource()
        .is_some_and(|arn| arn.ends_with(&format!(":table/{table}"))));
    assert_eq!(
        emulator.counts().by_reason["TableWriteMaxOnDemandThroughputExceeded"],
        1
    );
    // A transaction on the fresh key is canceled by the table's maximum as well.
    let err = client
        .transact_write_items()
        .transact_items(put(&table, item("d", "second", 100)))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        err.as_service_error(),
        Some(TransactWriteItemsError::TransactionCanceledException(_))
    ));
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        small_puts(&client, &table, "d", 20).await,
        10,
        "a second later: the key's own 10"
    );
}

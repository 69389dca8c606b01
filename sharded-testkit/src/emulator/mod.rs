//! A per-partition-key limit emulator for DynamoDB Local, which has no partitions and never
//! throttles.
//!
//! [`KeyLimitEmulator`] wraps the SDK's HTTP client (like [`faults`](crate::faults)), so the
//! SDK's retries, its error parsing and our error classification run exactly as against
//! DynamoDB. Every request is metered before it reaches DynamoDB Local:
//!
//! - **Limits per partition key value**: 1,000 write units/s and 3,000 read units/s by
//!   default (the runtime's [`PerKeyLimits`]), on the base table and on each GSI separately
//!   ([`PerKeyLimits::scaled`] shrinks them, so a 5x overload shows in seconds on a laptop).
//! - **Units as DynamoDB computes them** (by the runtime's `size` rules): a write costs `ceil(item bytes / 1 KB)` units on
//!   the base key and the same again on every GSI key the item carries (the seeds' GSI
//!   hotspot); a read `ceil(bytes / 4 KB)`, halved when eventually consistent. Reads, updates
//!   and deletes are admitted on an estimate and settled with the `ConsumedCapacity` DynamoDB
//!   Local reports, so a key that overspent is throttled until it has paid back.
//! - **Burst capacity**: unused capacity accrues for up to
//!   [`with_burst_seconds`](KeyLimitEmulator::with_burst_seconds) (300 s by default) and can
//!   be spent at once. A key starts with one second's worth.
//! - **Throttling like DynamoDB**: HTTP 400 `ProvisionedThroughputExceededException` with
//!   `ThrottlingReasons` (`TableWriteKeyRangeThroughputExceeded`,
//!   `IndexWriteKeyRangeThroughputExceeded`, `TableReadKeyRangeThroughputExceeded`,
//!   `IndexReadKeyRangeThroughputExceeded`). In a `BatchWriteItem`/`BatchGetItem`, throttled
//!   entries come back as `UnprocessedItems`/`UnprocessedKeys` and only a batch throttled
//!   entirely fails.
//!
//! **What it does not model**: adaptive capacity and partition splits, table- and
//! account-level limits, on-demand scaling, the GSI back-pressure delay, the GSI keys of the
//! *old* item an update or delete replaces (updates and deletes are charged on the base key
//! only), and transactions (`TransactWriteItems`/`TransactGetItems` pass unmetered; their
//! units would be [`write_units`]`(bytes, true)`, double). Real DynamoDB can only do as well
//! or worse per key than this: if a design throttles here, it throttles there.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sharded::capacity::PerKeyLimits;
//! use sharded_testkit::emulator::KeyLimitEmulator;
//! use sharded_testkit::local::DynamoDbLocal;
//!
//! let local = DynamoDbLocal::shared().await?;
//! // 100 WCU / 300 RCU per key, 1 s of burst: a 5x overload shows within a second.
//! let emulator = KeyLimitEmulator::new(PerKeyLimits::scaled(0.1)).with_burst_seconds(1.0);
//! let client = emulator.client(&local.sdk_config().await);
//! // Create tables through `client` (the emulator learns their keys) or `register_table`.
//! println!("{:?}", emulator.counts());
//! # Ok(()) }
//! ```
//!
//! [`write_units`]: sharded_runtime::capacity::write_units

// The emulator by concern: `buckets` meters units per key (token buckets), `requests` turns
// each operation into charges and answers it, `wire` reads and rewrites DynamoDB JSON.
mod buckets;
mod requests;
mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use sharded_runtime::capacity::PerKeyLimits;
use sharded_runtime::capacity::{Clock, SystemClock};
use sharded_runtime::schema::TableDefinition;

use crate::intercept::{self, Intercept, Next};
use buckets::{Bucket, BucketKey};
use requests::TableKeys;

/// What the emulator has seen.
///
/// ```
/// let c = sharded_testkit::emulator::EmulatorCounts::default();
/// assert_eq!(c.throttled, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmulatorCounts {
    /// Metered writes and reads admitted (batch entries count one each).
    pub admitted: u64,
    /// Metered writes and reads throttled (batch entries count one each).
    pub throttled: u64,
    /// Throttles by reason (`TableWriteKeyRangeThroughputExceeded`, ...).
    pub by_reason: BTreeMap<String, u64>,
    /// Requests on tables whose keys the emulator does not know (passed unmetered).
    pub unmetered: u64,
}

/// What every clone of one emulator shares: the tables it knows, the keys' buckets, counts.
#[derive(Debug, Default)]
struct State {
    tables: Mutex<HashMap<String, TableKeys>>,
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
    counts: Mutex<EmulatorCounts>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Enforces DynamoDB's per-partition-key limits in front of DynamoDB Local. See the
/// [module docs](self) for what it models.
///
/// Clones share tables, buckets and counts. Configure it (`with_*`) before making clients:
/// a client meters with the settings of the emulator it was made from.
///
/// ```
/// use std::sync::Arc;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::PerKeyLimits;
/// use sharded_testkit::emulator::KeyLimitEmulator;
///
/// let emulator = KeyLimitEmulator::new(PerKeyLimits::scaled(0.1))
///     .with_burst_seconds(1.0)
///     .with_clock(Arc::new(ManualClock::new()));
/// assert_eq!(emulator.limits(), PerKeyLimits::scaled(0.1));
/// assert_eq!(emulator.burst_seconds(), 1.0);
/// ```
#[derive(Debug, Clone)]
pub struct KeyLimitEmulator {
    limits: PerKeyLimits,
    burst_seconds: f64,
    clock: Arc<dyn Clock>,
    state: Arc<State>,
}

impl KeyLimitEmulator {
    /// How many seconds of unused capacity DynamoDB lets a key save up: 300.
    pub const DYNAMODB_BURST_SECONDS: f64 = 300.0;

    /// An emulator enforcing `limits` per key, with DynamoDB's 300 s of burst, on the system
    /// clock.
    pub fn new(limits: PerKeyLimits) -> Self {
        KeyLimitEmulator {
            limits,
            burst_seconds: Self::DYNAMODB_BURST_SECONDS,
            clock: Arc::new(SystemClock::new()),
            state: Arc::default(),
        }
    }

    /// Reads time from `clock` (a `ManualClock` makes tests deterministic).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Lets a key save up `seconds` of unused capacity (negative counts as 0; a key can
    /// always spend one second's worth).
    pub fn with_burst_seconds(mut self, seconds: f64) -> Self {
        self.burst_seconds = seconds.max(0.0);
        self
    }

    /// The per-key limits in force, e.g. to plan or report against what is emulated.
    pub fn limits(&self) -> PerKeyLimits {
        self.limits
    }

    /// The burst window in force, in seconds.
    pub fn burst_seconds(&self) -> f64 {
        self.burst_seconds
    }

    /// Tells the emulator a table's keys (tables created through an emulated client are
    /// learned from their `CreateTable` request).
    pub fn register_table(&self, table: &str, definition: &TableDefinition) {
        lock(&self.state.tables).insert(
            table.to_owned(),
            TableKeys {
                partition_key: definition.partition_key.to_owned(),
                indexes: definition
                    .indexes
                    .iter()
                    .map(|i| (i.name.to_owned(), i.partition_key.to_owned()))
                    .collect(),
            },
        );
    }

    /// What the emulator has admitted and throttled so far.
    pub fn counts(&self) -> EmulatorCounts {
        lock(&self.state.counts).clone()
    }

    /// Forgets counts and every key's bucket (tables stay known).
    pub fn reset(&self) {
        *lock(&self.state.counts) = EmulatorCounts::default();
        lock(&self.state.buckets).clear();
    }

    /// Wraps an HTTP client so its requests are metered.
    pub fn wrap(&self, inner: SharedHttpClient) -> SharedHttpClient {
        intercept::wrap(inner, self.clone())
    }

    /// The HTTP client of `sdk_config` (or the SDK's default) with metering, for a client
    /// configured by hand (retry settings, interceptors).
    pub fn http_client(&self, sdk_config: &SdkConfig) -> SharedHttpClient {
        self.wrap(intercept::base_http_client(sdk_config))
    }

    /// A DynamoDB client from `sdk_config` whose requests are metered.
    pub fn client(&self, sdk_config: &SdkConfig) -> aws_sdk_dynamodb::Client {
        intercept::client(sdk_config, self.clone())
    }
}

impl Intercept for KeyLimitEmulator {
    async fn call(self, request: HttpRequest, next: Next) -> Result<HttpResponse, ConnectorError> {
        self.handle(next, request).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};
    use sharded_runtime::capacity::item_size;
    use sharded_runtime::capacity::ManualClock;

    use super::buckets::Charge;
    use super::*;
    use crate::item::item_from_json;

    fn emulator(clock: &ManualClock) -> KeyLimitEmulator {
        let e = KeyLimitEmulator::new(PerKeyLimits {
            write_units_per_second: 10.0,
            read_units_per_second: 30.0,
        })
        .with_burst_seconds(5.0)
        .with_clock(Arc::new(clock.clone()));
        e.learn(&json!({
            "TableName": "t",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}]}],
        }));
        e
    }

    fn put(e: &KeyLimitEmulator, item: Value) -> Result<(), Charge> {
        let keys = e.table("t").unwrap();
        e.admit(&e.put_charges("t", &keys, &item, false))
    }

    #[test]
    fn a_key_gets_one_second_then_its_rate() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        let item = json!({"pk": {"S": "hot"}});
        assert_eq!(
            (0..20).filter(|_| put(&e, item.clone()).is_ok()).count(),
            10,
            "one second's worth"
        );
        clock.advance(Duration::from_millis(500));
        assert_eq!(
            (0..20).filter(|_| put(&e, item.clone()).is_ok()).count(),
            5,
            "10 units/s refill"
        );
        assert!(
            put(&e, json!({"pk": {"S": "cold"}})).is_ok(),
            "limits are per key"
        );
    }

    #[test]
    fn unused_capacity_bursts_up_to_the_window() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        let item = json!({"pk": {"S": "k"}});
        assert!(
            put(&e, item.clone()).is_ok(),
            "the key exists from its first write"
        );
        clock.advance(Duration::from_secs(60));
        assert_eq!(
            (0..100).filter(|_| put(&e, item.clone()).is_ok()).count(),
            50,
            "5 s of burst at 10/s"
        );
    }

    #[test]
    fn units_follow_item_size_and_gsi_writes_are_charged_and_named() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        // 3 KB item: 3 units on the base key and 3 on the GSI key.
        let big =
            |pk: &str| json!({"pk": {"S": pk}, "g": {"S": "same"}, "d": {"S": "x".repeat(3000)}});
        assert!(put(&e, big("a")).is_ok());
        assert!(put(&e, big("b")).is_ok());
        assert!(put(&e, big("c")).is_ok());
        // Base keys a, b, c are fine; the shared GSI key has spent 9 of 10.
        let over = put(&e, big("d")).unwrap_err();
        assert_eq!(over.reason(), "IndexWriteKeyRangeThroughputExceeded");
        assert_eq!(over.bucket.key, "same");
        // Without the GSI attribute (sparse index) the write passes.
        assert!(put(&e, json!({"pk": {"S": "e"}})).is_ok());
    }

    #[test]
    fn json_sizes_match_the_sdk_item_size() {
        let item = json!({"s": {"S": "héllo"}, "n": {"N": "12345"}, "b": {"BOOL": true}, "l": {"L": [{"S": "ab"}]}});
        assert_eq!(item_size(&item_from_json(&item)), 7 + 5 + 2 + 7);
    }
}

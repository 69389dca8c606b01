//! A per-partition-key limit emulator for a local DynamoDB (either [backend](crate::backend):
//! neither has partitions or ever throttles), with optional table- and index-level maxima.
//!
//! [`KeyLimitEmulator`] wraps the SDK's HTTP client (like [`faults`](crate::faults)), so the
//! SDK's retries, its error parsing and our error classification run exactly as against
//! DynamoDB. Every request is metered before it reaches the backend (reads that change
//! nothing, scans and `TransactGetItems`, just after it, before their answer is returned):
//!
//! - **Limits per partition key value**: 1,000 write units/s and 3,000 read units/s by
//!   default (the runtime's [`PerKeyLimits`]), on the base table and on each GSI separately
//!   ([`PerKeyLimits::scaled`] shrinks them, so a 5x overload shows in seconds on a laptop).
//! - **Table and index maxima, opt-in**: an on-demand table's (or GSI's) maximum throughput,
//!   from [`with_table_max`](KeyLimitEmulator::with_table_max),
//!   [`with_index_max`](KeyLimitEmulator::with_index_max), or the `OnDemandThroughput` of a
//!   `CreateTable` sent through the emulator. Every unit charged to a key of the table (or
//!   index) also counts against its maximum, in the same sliding window, so a table can
//!   throttle while each of its keys is under its own limit.
//! - **Units as DynamoDB computes them**, with the runtime's [`item_size`], [`write_units`],
//!   [`transactional_write_units`] and [`read_units`] (one home for the rules):
//!   - `PutItem` and `BatchWriteItem` puts: the larger of the new item and the item it
//!     replaces, on the base key; `DeleteItem` and batch deletes: the deleted item (one unit
//!     when there was none). On each GSI, the entries that change: one write of the larger
//!     item when old and new carry the same index key, else a delete on the old key and a put
//!     on the new (sparse indexes: only where an item carries the key). GSI entries are sized
//!     as the whole item.
//!   - `GetItem` and `Query` (on the base key or the GSI key it names): admitted on the
//!     smallest read (half a unit eventually consistent, one strongly) and settled with the
//!     `ConsumedCapacity` the backend reports.
//!   - `BatchGetItem`: each key admitted on the smallest read and settled on the size of the
//!     item returned for it (`ceil(bytes / 4 KB)`, halved when eventually consistent).
//!   - `UpdateItem`: admitted on one unit and settled with DynamoDB Local's
//!     `ConsumedCapacity`, on the base key only.
//!   - `TransactWriteItems`: DynamoDB writes every item twice (prepare and commit), so each
//!     `Put`, `Update`, `Delete` and `ConditionCheck` costs its base key 2 units per KB of
//!     the larger of the item stored and the item written (a check: of the item checked; an
//!     action on no item: 2). The GSI entries a write changes are charged as above, at
//!     ordinary units: DynamoDB writes them after the commit.
//!   - `TransactGetItems`: each item costs its key twice a strongly consistent read of it (a
//!     missing item, 2 units).
//!   - `Scan` (of the table or a GSI): each page costs every partition key it returns items
//!     of their share, `bytes / 4 KB` (halved when eventually consistent, unrounded since
//!     DynamoDB rounds the page once), and the table's (or index's) maximum the page's whole
//!     `ConsumedCapacity`.
//! - **How old items are learned**: a `PutItem`/`DeleteItem` is sent with
//!   `ReturnValues = ALL_OLD` (removed from the answer when the caller did not ask for it), so
//!   the replaced item comes back atomically with the write; it is admitted on what the
//!   request shows and settled on both items. `BatchWriteItem` and `TransactWriteItems` have
//!   no `ReturnValues`: just before them, the emulator reads their keys with one strongly
//!   consistent `BatchGetItem` sent past itself, and admits each entry (each action) on its
//!   exact charge. A transaction's `Update` is admitted as if it left its item's size and GSI
//!   keys unchanged; after the commit its items are read again and it is settled on what it
//!   wrote.
//! - **All or nothing for transactions**: a transaction is admitted only if every meter it
//!   touches (each key, each GSI key, each maximum) can take its share; otherwise nothing of
//!   it is sent or charged.
//! - **A hard cap per second**: the units charged to one key (or a capped table) in any
//!   1-second window (sliding, not aligned to clock seconds) never exceed its limit, however
//!   long it was idle: DynamoDB's per-partition cap holds regardless of burst capacity. A
//!   charge larger than the whole cap (a large item on a scaled-down key) passes only on an
//!   empty window and is charged in full.
//! - **Burst capacity, up to the cap only**: unused capacity accrues for up to
//!   [`with_burst_seconds`](KeyLimitEmulator::with_burst_seconds) (300 s by default). Burst
//!   can fill a key up to its per-second cap, never beyond: banked credit only pays for units
//!   settled after a request was served, and a key without credit for them is throttled
//!   until it has paid back at its limit. A key starts with one second's worth.
//! - **Throttling like DynamoDB**, and every throttle says why: HTTP 400
//!   `ProvisionedThroughputExceededException` with `ThrottlingReasons` (`reason` and the
//!   table's or index's ARN-like `resource`): `TableWriteKeyRangeThroughputExceeded`,
//!   `IndexWriteKeyRangeThroughputExceeded`, `TableReadKeyRangeThroughputExceeded`,
//!   `IndexReadKeyRangeThroughputExceeded` for a key, `TableWriteMaxOnDemandThroughputExceeded`,
//!   `IndexWriteMaxOnDemandThroughputExceeded`, `TableReadMaxOnDemandThroughputExceeded`,
//!   `IndexReadMaxOnDemandThroughputExceeded` for a maximum. In a
//!   `BatchWriteItem`/`BatchGetItem`, throttled entries come back as
//!   `UnprocessedItems`/`UnprocessedKeys` and only a batch throttled entirely fails. A
//!   throttled transaction fails as DynamoDB fails it: `TransactionCanceledException` with
//!   `CancellationReasons` in action order, `ThrottlingError` for each action on a meter
//!   over its limit and `None` for the others (the API reference's cancellation codes); the
//!   emulator adds the `ThrottlingReasons` there too, which SDKs ignore.
//!
//! **Where it is still kinder than DynamoDB** (it may admit what DynamoDB would refuse):
//!
//! - No account-level limits (the per-table quotas of an on-demand table), no provisioned
//!   capacity mode, no on-demand throughput ramp or warm throughput (a new or idle on-demand
//!   table serves less than its peak until it has scaled); table and index maxima only where
//!   they are set.
//! - No transaction conflicts: it never cancels a transaction with `TransactionConflict`, nor
//!   answers `TransactionInProgressException` or `IdempotentParameterMismatchException`
//!   ([`faults`](crate::faults) injects those).
//! - A request admitted on an estimate (reads, `UpdateItem`, a single put or delete before
//!   its old item is known, a transaction's update) can take its key past the cap by its own
//!   underestimated cost; the rest is settled afterwards (counted in the window from then
//!   on, and paid back).
//! - `UpdateItem` is charged on the base key only, at what DynamoDB Local reports; its GSI
//!   writes are not charged.
//! - PartiQL (`ExecuteStatement`, `BatchExecuteStatement`, `ExecuteTransaction`) passes
//!   unmetered.
//! - The old items of a batch write or a transaction are read just before it (and a
//!   transaction's updated items just after it): a write by another client in between is
//!   not seen, and a read that fails charges the entries as new items (and is logged).
//! - A `BatchGetItem` or `TransactGetItems` with a projection is charged on the projected
//!   items, smaller than what DynamoDB charges (and a batch get not at all for items that
//!   leave out the partition key).
//! - A scan charges its keys only for the items it returns: items a filter dropped, and
//!   attributes a projection left out, cost no key anything (the table's maximum still pays
//!   them, through `ConsumedCapacity`), and items returned without their partition key are
//!   charged to no key.
//!
//! **Where it is harsher**: no adaptive capacity and no split for heat (DynamoDB may give a
//! hot key a partition of its own, or split a hot item collection by sort key, and then serve
//! it above these figures); the cap is a strict sliding window, where DynamoDB's accounting
//! may allow short excursions; GSI entries are sized as the whole item, where an index
//! projecting fewer attributes costs less; a transaction replayed with the same
//! `ClientRequestToken` is charged as writes again, where DynamoDB charges a read of the
//! stored result.
//!
//! **Where it only differs**: a maximum is reported with
//! `ProvisionedThroughputExceededException`, as key throttles are; DynamoDB documents
//! `ThrottlingReasons` on `ProvisionedThroughputExceededException`, `ThrottlingException` and
//! `RequestLimitExceeded` without tying each cause to one of them, so code that must handle a
//! real maximum should accept all three.
//!
//! Per key and per capped table or index, for the operations it meters and outside the
//! kinder cases above, real DynamoDB can only do as well or worse than this: if a design
//! throttles here, it throttles there.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sharded::capacity::PerKeyLimits;
//! use sharded_testkit::emulator::KeyLimitEmulator;
//! use sharded_testkit::backend::Backend;
//!
//! let local = Backend::shared().await?;
//! // 100 WCU / 300 RCU per key, 1 s of burst: a 5x overload shows within a second.
//! let emulator = KeyLimitEmulator::new(PerKeyLimits::scaled(0.1)).with_burst_seconds(1.0);
//! let client = emulator.client(&local.sdk_config().await);
//! // Create tables through `client` (the emulator learns their keys) or `register_table`.
//! println!("{:?}", emulator.counts());
//! # Ok(()) }
//! ```
//!
//! [`item_size`]: sharded_runtime::capacity::item_size
//! [`write_units`]: sharded_runtime::capacity::write_units
//! [`read_units`]: sharded_runtime::capacity::read_units
//! [`transactional_write_units`]: sharded_runtime::capacity::transactional_write_units

// The emulator by concern: `buckets` meters units per key (token buckets), `caps` adds the
// table and index maxima, `requests` turns each operation into charges and answers it
// (`transactions` and `scans` for those operations), `wire` reads and rewrites DynamoDB JSON.
mod buckets;
mod caps;
mod requests;
mod scans;
mod transactions;
mod wire;

pub use caps::MaxThroughput;

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
    /// Metered writes and reads admitted (batch entries count one each; a transaction or a
    /// scan page counts one).
    pub admitted: u64,
    /// Metered writes and reads throttled (batch entries count one each; a transaction or a
    /// scan page counts one).
    pub throttled: u64,
    /// Throttles by reason (`TableWriteKeyRangeThroughputExceeded`,
    /// `TableWriteMaxOnDemandThroughputExceeded`, ...): each throttle counts once, under the
    /// reason of the first meter it was over.
    pub by_reason: BTreeMap<String, u64>,
    /// Requests on tables whose keys the emulator does not know (passed unmetered).
    pub unmetered: u64,
}

/// What every clone of one emulator shares: the tables it knows, the keys' buckets, counts.
#[derive(Debug, Default)]
struct State {
    tables: Mutex<HashMap<String, TableKeys>>,
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
    /// Table and index maxima (on-demand maximum throughput).
    caps: Mutex<HashMap<caps::CapTarget, MaxThroughput>>,
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
                sort_key: definition.sort_key.map(str::to_owned),
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

    /// Forgets counts and every key's bucket (tables and their maxima stay known).
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

    use super::buckets::{self, charge, Charge};
    use super::requests::{batch_read_extras, write_charges};
    use super::*;
    use crate::item::item_from_json;
    use sharded_runtime::capacity::Consistency;

    /// 10 write and 30 read units/s per key, 5 s of burst, on `clock`; table `t` (`pk`) with
    /// GSI `gsi1` (`g`).
    pub(super) fn emulator(clock: &ManualClock) -> KeyLimitEmulator {
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

    pub(super) fn put(e: &KeyLimitEmulator, item: Value) -> Result<(), Charge> {
        let keys = e.table("t").unwrap();
        e.admit(&e.put_charges("t", &keys, &item, false))
    }

    #[test]
    fn a_key_gets_its_limit_per_second_window() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        let item = json!({"pk": {"S": "hot"}});
        assert_eq!(
            (0..20).filter(|_| put(&e, item.clone()).is_ok()).count(),
            10,
            "one second's worth"
        );
        clock.advance(Duration::from_millis(999));
        assert!(
            put(&e, item.clone()).is_err(),
            "the 10 units still count 999 ms later"
        );
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            (0..20).filter(|_| put(&e, item.clone()).is_ok()).count(),
            10,
            "a second later the window is free again"
        );
        assert!(
            put(&e, json!({"pk": {"S": "cold"}})).is_ok(),
            "limits are per key"
        );
    }

    #[test]
    fn idle_credit_never_lifts_a_key_over_its_per_second_cap() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 10 units/s, 5 s of burst
        let item = json!({"pk": {"S": "k"}});
        assert!(put(&e, item.clone()).is_ok(), "the key exists");
        clock.advance(Duration::from_secs(300)); // idle: the whole bank is saved
                                                 // Offer one write every 10 ms for 10 s: 10x the limit.
        let mut admitted = Vec::new();
        for step in 0..1_000u64 {
            if put(&e, item.clone()).is_ok() {
                admitted.push(step * 10);
            }
            clock.advance(Duration::from_millis(10));
        }
        // No 1-second window (sliding, at every admitted write) holds more than 10.
        for (i, &start) in admitted.iter().enumerate() {
            let in_window = admitted[i..]
                .iter()
                .take_while(|&&t| t < start + 1_000)
                .count();
            assert!(in_window <= 10, "{in_window} writes in [{start} ms, +1 s)");
        }
        assert_eq!(admitted.len(), 100, "10 s at 10/s, no burst on top");
    }

    #[test]
    fn settled_overspend_is_paid_back_beyond_the_window() {
        let clock = ManualClock::new();
        let e = KeyLimitEmulator::new(PerKeyLimits::new(10.0, 30.0))
            .with_burst_seconds(1.0)
            .with_clock(Arc::new(clock.clone()));
        e.learn(
            &json!({"TableName": "t", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}),
        );
        let item = json!({"pk": {"S": "k"}});
        assert!(put(&e, item.clone()).is_ok());
        // The write turned out to cost 31 units (e.g. it replaced a large item).
        let bucket = e.put_charges("t", &e.table("t").unwrap(), &item, false)[0]
            .bucket
            .clone();
        e.settle(&bucket, 30.0);
        clock.advance(Duration::from_secs(1));
        assert!(
            put(&e, item.clone()).is_err(),
            "the window is free, the balance is not"
        );
        clock.advance(Duration::from_secs(2));
        assert!(put(&e, item.clone()).is_ok(), "paid back at 10 units/s");
    }

    #[test]
    fn a_charge_larger_than_the_cap_passes_alone_and_is_paid_for() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        let huge = json!({"pk": {"S": "k"}, "d": {"S": "x".repeat(20 * 1024)}});
        assert!(
            put(&e, huge.clone()).is_err(),
            "a new key has 10 units banked"
        );
        clock.advance(Duration::from_secs(5));
        assert!(
            put(&e, huge.clone()).is_ok(),
            "21 units on a 10-unit key, alone"
        );
        assert!(put(&e, json!({"pk": {"S": "k"}})).is_err());
        clock.advance(Duration::from_secs(1));
        assert!(put(&e, json!({"pk": {"S": "k"}})).is_ok());
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

    /// An item on key `pk` of about `kb` KB (`kb` write units), carrying GSI key `g`.
    pub(super) fn sized(pk: &str, kb: usize, g: Option<&str>) -> Value {
        let mut item = json!({"pk": {"S": pk}, "d": {"S": "x".repeat(kb * 1024 - 20)}});
        if let Some(g) = g {
            item["g"] = json!({"S": g});
        }
        item
    }

    pub(super) fn units_on(charges: &[Charge]) -> Vec<(Option<&str>, &str, f64)> {
        charges
            .iter()
            .map(|c| (c.bucket.index.as_deref(), c.bucket.key.as_str(), c.units))
            .collect()
    }

    #[test]
    fn an_overwrite_is_charged_on_the_larger_of_old_and_new() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 10 WCU/s per key
        let keys = e.table("t").unwrap();
        let (old, new) = (sized("k", 5, Some("a")), sized("k", 1, Some("a")));
        let exact = write_charges("t", &keys, &new, Some(&old), Some(&new), false);
        assert_eq!(
            units_on(&exact),
            vec![(None, "k", 5.0), (Some("gsi1"), "a", 5.0)],
            "a 1 KB put over a 5 KB item costs 5, on the base key and in place on the GSI"
        );
        let moved = sized("k", 1, Some("b"));
        assert_eq!(
            units_on(&write_charges(
                "t",
                &keys,
                &moved,
                Some(&old),
                Some(&moved),
                false
            )),
            vec![
                (None, "k", 5.0),
                (Some("gsi1"), "a", 5.0),
                (Some("gsi1"), "b", 1.0)
            ],
            "a changed GSI key deletes the old entry and puts the new one"
        );
        // Admitted on the new item (what the request shows), settled on the old one.
        let estimate = e.put_charges("t", &keys, &new, false);
        assert!(e.admit(&estimate).is_ok());
        e.settle_all(&estimate, &exact);
        let small = json!({"pk": {"S": "k"}});
        assert_eq!(
            (0..10).filter(|_| put(&e, small.clone()).is_ok()).count(),
            5,
            "5 of the key's 10 units were spent by the overwrite"
        );
    }

    #[test]
    fn a_delete_is_charged_on_the_deleted_item() {
        let clock = ManualClock::new();
        let e = emulator(&clock);
        let keys = e.table("t").unwrap();
        let key = json!({"pk": {"S": "k"}});
        let old = sized("k", 3, Some("a"));
        let delete = write_charges("t", &keys, &key, Some(&old), None, false);
        assert_eq!(
            units_on(&delete),
            vec![(None, "k", 3.0), (Some("gsi1"), "a", 3.0)],
            "the deleted item's size, on its base key and its GSI entry"
        );
        assert_eq!(
            units_on(&write_charges("t", &keys, &key, None, None, false)),
            vec![(None, "k", 1.0)],
            "deleting nothing costs one unit"
        );
        assert_eq!(
            (0..5).filter(|_| e.admit(&delete).is_ok()).count(),
            3,
            "three 3-unit deletes fit in 10 units, a fourth does not"
        );
    }

    #[test]
    fn a_batch_get_is_settled_on_the_items_returned() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 30 RCU/s per key
        let item = sized("k", 9, None); // 9 KB: 3 strong read units, 1.5 eventual
        let response = json!({"Responses": {"t": [item], "other": [sized("x", 9, None)]}});
        let strong = batch_read_extras(&response, "t", "pk", Consistency::Strong);
        assert_eq!(
            units_on(&strong),
            vec![(None, "k", 2.0)],
            "3 units less the 1 admitted"
        );
        let eventual = batch_read_extras(&response, "t", "pk", Consistency::Eventual);
        assert_eq!(units_on(&eventual), vec![(None, "k", 1.0)]);
        let small = json!({"Responses": {"t": [{"pk": {"S": "k"}}]}});
        assert!(batch_read_extras(&small, "t", "pk", Consistency::Strong).is_empty());
        // Ten such reads on one key: admitted at 1 unit each, settled to 3 each.
        let read = |units| [charge("t", None, "k".into(), buckets::Kind::Read, units)];
        for _ in 0..10 {
            assert!(e.admit(&read(1.0)).is_ok());
            e.settle(&strong[0].bucket, strong[0].units);
        }
        assert!(e.admit(&read(0.5)).is_err(), "30 of 30 units spent");
    }

    #[test]
    fn json_sizes_match_the_sdk_item_size() {
        let item = json!({"s": {"S": "héllo"}, "n": {"N": "12345"}, "b": {"BOOL": true}, "l": {"L": [{"S": "ab"}]}});
        assert_eq!(item_size(&item_from_json(&item)), 7 + 5 + 2 + 7);
    }
}

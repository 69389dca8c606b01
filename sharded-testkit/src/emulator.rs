//! A per-partition-key limit emulator for DynamoDB Local, which has no partitions and never
//! throttles.
//!
//! [`KeyLimitEmulator`] wraps the SDK's HTTP client (like [`faults`](crate::faults)), so the
//! SDK's retries, its error parsing and our error classification run exactly as against
//! DynamoDB. Every request is metered before it reaches DynamoDB Local:
//!
//! - **Limits per partition key value**: 1,000 write units/s and 3,000 read units/s by
//!   default, on the base table and on each GSI separately ([`KeyLimits::scaled`] shrinks
//!   them, so a 5x overload shows in seconds on a laptop).
//! - **Units as DynamoDB computes them**: a write costs `ceil(item bytes / 1 KB)` units on
//!   the base key and the same again on every GSI key the item carries (the seeds' GSI
//!   hotspot); a read `ceil(bytes / 4 KB)`, halved when eventually consistent. Reads, updates
//!   and deletes are admitted on an estimate and settled with the `ConsumedCapacity` DynamoDB
//!   Local reports, so a key that overspent is throttled until it has paid back.
//! - **Burst capacity**: unused capacity accrues for up to `burst_seconds` (300 by default)
//!   and can be spent at once. A key starts with one second's worth.
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
//! use sharded_testkit::emulator::{KeyLimitEmulator, KeyLimits};
//! use sharded_testkit::local::DynamoDbLocal;
//!
//! let local = DynamoDbLocal::shared().await?;
//! // 100 WCU / 300 RCU per key, 1 s of burst: a 5x overload shows within a second.
//! let emulator = KeyLimitEmulator::new(KeyLimits::scaled(0.1).with_burst_seconds(1.0));
//! let client = emulator.client(&local.sdk_config().await);
//! // Create tables through `client` (the emulator learns their keys) or `register_table`.
//! println!("{:?}", emulator.counts());
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use serde_json::{json, Map, Value};

use sharded_runtime::clock::{Clock, SystemClock};
use sharded_runtime::schema::TableDefinition;
use sharded_runtime::size::item_size;

use crate::intercept::{self, Intercept, Next};
use crate::item::item_from_json;
use crate::response::{bytes_response, error_body, json_response, THROUGHPUT_EXCEEDED};

/// Per-key throughput limits.
///
/// ```
/// use sharded_testkit::emulator::KeyLimits;
/// let tenth = KeyLimits::scaled(0.1);
/// assert_eq!(tenth.write_units_per_second, 100.0);
/// assert_eq!(tenth.read_units_per_second, 300.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyLimits {
    /// Write units per second per partition key value (DynamoDB: 1,000).
    pub write_units_per_second: f64,
    /// Read units per second per partition key value (DynamoDB: 3,000).
    pub read_units_per_second: f64,
    /// How many seconds of unused capacity a key can save up (DynamoDB: 300).
    pub burst_seconds: f64,
}

impl KeyLimits {
    /// DynamoDB's per-key limits: 1,000 WCU/s, 3,000 RCU/s, 300 s of burst.
    pub const fn dynamodb() -> Self {
        KeyLimits {
            write_units_per_second: 1000.0,
            read_units_per_second: 3000.0,
            burst_seconds: 300.0,
        }
    }

    /// DynamoDB's limits times `factor` (burst unchanged).
    pub fn scaled(factor: f64) -> Self {
        let d = KeyLimits::dynamodb();
        KeyLimits {
            write_units_per_second: d.write_units_per_second * factor,
            read_units_per_second: d.read_units_per_second * factor,
            burst_seconds: d.burst_seconds,
        }
    }

    /// The same limits with another burst window.
    pub fn with_burst_seconds(mut self, seconds: f64) -> Self {
        self.burst_seconds = seconds.max(0.0);
        self
    }
}

impl Default for KeyLimits {
    fn default() -> Self {
        KeyLimits::dynamodb()
    }
}

pub use sharded_runtime::size::{read_units, write_units};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BucketKey {
    table: String,
    index: Option<String>,
    key: String,
    kind: Kind,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    updated: Duration,
}

#[derive(Debug, Clone)]
struct TableKeys {
    partition_key: String,
    /// Index name -> its partition key attribute.
    indexes: Vec<(String, String)>,
}

/// One unit charge a request would make.
#[derive(Debug, Clone)]
struct Charge {
    bucket: BucketKey,
    units: f64,
}

impl Charge {
    fn reason(&self) -> &'static str {
        match (&self.bucket.index, self.bucket.kind) {
            (None, Kind::Write) => "TableWriteKeyRangeThroughputExceeded",
            (Some(_), Kind::Write) => "IndexWriteKeyRangeThroughputExceeded",
            (None, Kind::Read) => "TableReadKeyRangeThroughputExceeded",
            (Some(_), Kind::Read) => "IndexReadKeyRangeThroughputExceeded",
        }
    }

    fn resource(&self) -> String {
        match &self.bucket.index {
            None => format!(
                "arn:aws:dynamodb:local:000000000000:table/{}",
                self.bucket.table
            ),
            Some(index) => format!(
                "arn:aws:dynamodb:local:000000000000:table/{}/index/{index}",
                self.bucket.table
            ),
        }
    }
}

#[derive(Debug)]
struct State {
    limits: KeyLimits,
    clock: Arc<dyn Clock>,
    tables: Mutex<HashMap<String, TableKeys>>,
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
    counts: Mutex<EmulatorCounts>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Enforces DynamoDB's per-partition-key limits in front of DynamoDB Local. See the
/// [module docs](self) for what it models.
#[derive(Debug, Clone)]
pub struct KeyLimitEmulator {
    state: Arc<State>,
}

impl KeyLimitEmulator {
    /// An emulator with these limits on the system clock.
    pub fn new(limits: KeyLimits) -> Self {
        KeyLimitEmulator::with_clock(limits, Arc::new(SystemClock::new()))
    }

    /// An emulator on a given clock (a `ManualClock` makes tests deterministic).
    pub fn with_clock(limits: KeyLimits, clock: Arc<dyn Clock>) -> Self {
        KeyLimitEmulator {
            state: Arc::new(State {
                limits,
                clock,
                tables: Mutex::new(HashMap::new()),
                buckets: Mutex::new(HashMap::new()),
                counts: Mutex::new(EmulatorCounts::default()),
            }),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> KeyLimits {
        self.state.limits
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

    fn capacity_and_rate(&self, kind: Kind) -> (f64, f64) {
        let l = &self.state.limits;
        let rate = match kind {
            Kind::Write => l.write_units_per_second,
            Kind::Read => l.read_units_per_second,
        };
        (rate * l.burst_seconds.max(1.0), rate)
    }

    /// Admits all `charges` (taking their units) or none (returning the first over its limit).
    fn admit(&self, charges: &[Charge]) -> Result<(), Charge> {
        let now = self.state.clock.now();
        let mut buckets = lock(&self.state.buckets);
        let mut over = None;
        for charge in charges {
            let (capacity, rate) = self.capacity_and_rate(charge.bucket.kind);
            let bucket = buckets.entry(charge.bucket.clone()).or_insert(Bucket {
                tokens: rate.min(capacity),
                updated: now,
            });
            let elapsed = now.saturating_sub(bucket.updated).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
            bucket.updated = now;
            // A request never needs more than a full bucket, or a large item could never pass.
            if over.is_none() && bucket.tokens < charge.units.min(capacity) {
                over = Some(charge.clone());
            }
        }
        if let Some(charge) = over {
            return Err(charge);
        }
        for charge in charges {
            if let Some(bucket) = buckets.get_mut(&charge.bucket) {
                bucket.tokens -= charge.units;
            }
        }
        Ok(())
    }

    /// Charges `units` more (or refunds, when negative) after the fact.
    fn settle(&self, bucket: &BucketKey, units: f64) {
        if units == 0.0 {
            return;
        }
        if let Some(b) = lock(&self.state.buckets).get_mut(bucket) {
            b.tokens -= units;
        }
    }

    fn count(&self, admitted: u64, throttled: &[Charge]) {
        let mut counts = lock(&self.state.counts);
        counts.admitted += admitted;
        counts.throttled += throttled.len() as u64;
        for charge in throttled {
            *counts
                .by_reason
                .entry(charge.reason().to_owned())
                .or_default() += 1;
        }
    }

    fn table(&self, name: &str) -> Option<TableKeys> {
        lock(&self.state.tables).get(name).cloned()
    }

    fn learn(&self, body: &Value) {
        let Some(table) = body["TableName"].as_str() else {
            return;
        };
        let hash = |schema: &Value| {
            schema
                .as_array()?
                .iter()
                .find(|k| k["KeyType"] == "HASH")?
                .get("AttributeName")?
                .as_str()
                .map(str::to_owned)
        };
        let Some(partition_key) = hash(&body["KeySchema"]) else {
            return;
        };
        let indexes = body["GlobalSecondaryIndexes"]
            .as_array()
            .map(|gsis| {
                gsis.iter()
                    .filter_map(|g| {
                        Some((g["IndexName"].as_str()?.to_owned(), hash(&g["KeySchema"])?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        lock(&self.state.tables).insert(
            table.to_owned(),
            TableKeys {
                partition_key,
                indexes,
            },
        );
    }

    /// The write charges of putting `item` into `table`.
    fn put_charges(
        &self,
        table: &str,
        keys: &TableKeys,
        item: &Value,
        transactional: bool,
    ) -> Vec<Charge> {
        let units = write_units(item_size(&item_from_json(item)), transactional);
        let mut charges = Vec::new();
        if let Some(pk) = key_text(&item[&keys.partition_key]) {
            charges.push(charge(table, None, pk, Kind::Write, units));
        }
        for (index, attr) in &keys.indexes {
            // A GSI is written only when the item carries its key (sparse indexes).
            if let Some(gsi_pk) = key_text(&item[attr]) {
                charges.push(charge(table, Some(index), gsi_pk, Kind::Write, units));
            }
        }
        charges
    }

    async fn handle(
        &self,
        next: Next,
        mut request: HttpRequest,
    ) -> Result<HttpResponse, ConnectorError> {
        let operation = intercept::operation(&request).unwrap_or("").to_owned();
        let Some(mut body) = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            return next.send(request).await;
        };
        if operation == "CreateTable" {
            self.learn(&body);
            return next.send(request).await;
        }
        let table_name = body["TableName"].as_str().map(str::to_owned);
        match operation.as_str() {
            "PutItem" | "GetItem" | "Query" | "UpdateItem" | "DeleteItem" => {
                let Some(table) = table_name else {
                    return next.send(request).await;
                };
                let Some(keys) = self.table(&table) else {
                    lock(&self.state.counts).unmetered += 1;
                    return next.send(request).await;
                };
                let consistent = body["ConsistentRead"].as_bool().unwrap_or(false);
                let read_estimate = read_units(0, consistent, false);
                let (charges, settle_kind) = match operation.as_str() {
                    "PutItem" => (self.put_charges(&table, &keys, &body["Item"], false), None),
                    "UpdateItem" | "DeleteItem" => {
                        let pk = key_text(&body["Key"][&keys.partition_key]).unwrap_or_default();
                        (vec![charge(&table, None, pk, Kind::Write, 1.0)], Some(1.0))
                    }
                    "GetItem" => {
                        let pk = key_text(&body["Key"][&keys.partition_key]).unwrap_or_default();
                        (
                            vec![charge(&table, None, pk, Kind::Read, read_estimate)],
                            Some(read_estimate),
                        )
                    }
                    _ => {
                        let index = body["IndexName"].as_str().map(str::to_owned);
                        let attr = match &index {
                            None => Some(keys.partition_key.clone()),
                            Some(i) => keys
                                .indexes
                                .iter()
                                .find(|(n, _)| n == i)
                                .map(|(_, a)| a.clone()),
                        };
                        let pk = attr
                            .and_then(|a| query_partition_value(&body, &a))
                            .unwrap_or_default();
                        (
                            vec![charge(
                                &table,
                                index.as_deref(),
                                pk,
                                Kind::Read,
                                read_estimate,
                            )],
                            Some(read_estimate),
                        )
                    }
                };
                if let Err(over) = self.admit(&charges) {
                    self.count(0, std::slice::from_ref(&over));
                    return Ok(throttled_response(&over));
                }
                self.count(1, &[]);
                let Some(estimate) = settle_kind else {
                    return next.send(request).await;
                };
                // Ask for the real consumption, settle the estimate, and hide the extra field
                // from a caller that did not ask for it.
                let asked = body
                    .get("ReturnConsumedCapacity")
                    .is_some_and(|v| v != "NONE");
                if !asked {
                    body["ReturnConsumedCapacity"] = json!("TOTAL");
                    replace_body(&mut request, &body);
                }
                let response = next.send(request).await?;
                let (response, consumed) = read_consumed(response, !asked).await?;
                if let (Some(actual), Some(first)) = (consumed, charges.first()) {
                    self.settle(&first.bucket, actual - estimate);
                }
                Ok(response)
            }
            "BatchWriteItem" => self.batch_write(next, request, body).await,
            "BatchGetItem" => self.batch_get(next, request, body).await,
            _ => next.send(request).await,
        }
    }

    async fn batch_write(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let mut split = BatchSplit::default();
        if let Some(tables) = body["RequestItems"].as_object_mut() {
            for (table, requests) in tables.iter_mut() {
                let Some(keys) = self.table(table) else {
                    lock(&self.state.counts).unmetered += 1;
                    split.kept += requests.as_array().map_or(0, Vec::len);
                    continue;
                };
                let Some(list) = requests.as_array_mut() else {
                    continue;
                };
                let mut keep = Vec::new();
                for entry in list.drain(..) {
                    let charges = if entry.get("PutRequest").is_some() {
                        self.put_charges(table, &keys, &entry["PutRequest"]["Item"], false)
                    } else {
                        let pk = key_text(&entry["DeleteRequest"]["Key"][&keys.partition_key])
                            .unwrap_or_default();
                        vec![charge(table, None, pk, Kind::Write, 1.0)]
                    };
                    match self.admit(&charges) {
                        Ok(()) => {
                            split.admitted += 1;
                            keep.push(entry);
                        }
                        Err(over) => {
                            split.throttled.push(over);
                            if let Some(list) = split
                                .unprocessed
                                .entry(table.clone())
                                .or_insert_with(|| Value::Array(Vec::new()))
                                .as_array_mut()
                            {
                                list.push(entry);
                            }
                        }
                    }
                }
                split.kept += keep.len();
                *list = keep;
            }
            tables.retain(|_, v| v.as_array().is_some_and(|a| !a.is_empty()));
        }
        self.forward_split(next, request, &body, split, "UnprocessedItems", false)
            .await
    }

    async fn batch_get(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let mut split = BatchSplit::default();
        if let Some(tables) = body["RequestItems"].as_object_mut() {
            for (table, spec) in tables.iter_mut() {
                let Some(keys) = self.table(table) else {
                    lock(&self.state.counts).unmetered += 1;
                    split.kept += spec["Keys"].as_array().map_or(0, Vec::len);
                    continue;
                };
                let consistent = spec["ConsistentRead"].as_bool().unwrap_or(false);
                let Some(list) = spec["Keys"].as_array_mut() else {
                    continue;
                };
                let mut keep = Vec::new();
                let mut rejected = Vec::new();
                for key in list.drain(..) {
                    let pk = key_text(&key[&keys.partition_key]).unwrap_or_default();
                    let c = charge(
                        table,
                        None,
                        pk,
                        Kind::Read,
                        read_units(0, consistent, false),
                    );
                    match self.admit(std::slice::from_ref(&c)) {
                        Ok(()) => {
                            split.admitted += 1;
                            keep.push(key);
                        }
                        Err(over) => {
                            split.throttled.push(over);
                            rejected.push(key);
                        }
                    }
                }
                split.kept += keep.len();
                *list = keep;
                if !rejected.is_empty() {
                    let mut entry = spec.clone();
                    entry["Keys"] = Value::Array(rejected);
                    split.unprocessed.insert(table.clone(), entry);
                }
            }
            tables.retain(|_, v| v["Keys"].as_array().is_some_and(|a| !a.is_empty()));
        }
        self.forward_split(next, request, &body, split, "UnprocessedKeys", true)
            .await
    }

    /// The shared end of a metered batch: count, refuse the request when every entry was
    /// throttled, else forward what was admitted and add the throttled entries to the
    /// response's unprocessed map.
    async fn forward_split(
        &self,
        next: Next,
        mut request: HttpRequest,
        body: &Value,
        split: BatchSplit,
        field: &str,
        keys_spec: bool,
    ) -> Result<HttpResponse, ConnectorError> {
        self.count(split.admitted, &split.throttled);
        if split.kept == 0 {
            if let Some(first) = split.throttled.first() {
                return Ok(throttled_response(first));
            }
        }
        if split.unprocessed.is_empty() {
            return next.send(request).await;
        }
        replace_body(&mut request, body);
        let response = next.send(request).await?;
        merge_unprocessed(response, field, split.unprocessed, keys_spec).await
    }
}

/// How a metered batch was split: what went on, what came back throttled.
#[derive(Default)]
struct BatchSplit {
    /// Throttled entries per table, in the request's shape.
    unprocessed: Map<String, Value>,
    throttled: Vec<Charge>,
    admitted: u64,
    /// Entries left in the request (admitted or unmetered).
    kept: usize,
}

fn charge(table: &str, index: Option<&str>, key: String, kind: Kind, units: f64) -> Charge {
    Charge {
        bucket: BucketKey {
            table: table.to_owned(),
            index: index.map(str::to_owned),
            key,
            kind,
        },
        units,
    }
}

/// The text of a key attribute value (`{"S": ..}`, `{"N": ..}` or `{"B": ..}`).
fn key_text(value: &Value) -> Option<String> {
    ["S", "N", "B"]
        .iter()
        .find_map(|t| value.get(*t).and_then(Value::as_str))
        .map(str::to_owned)
}

/// The value a Query's key condition compares the partition key attribute `attr` with.
fn query_partition_value(body: &Value, attr: &str) -> Option<String> {
    let condition = body["KeyConditionExpression"].as_str()?;
    let names = &body["ExpressionAttributeNames"];
    for part in condition.split(" AND ").chain(condition.split(" and ")) {
        let Some((left, right)) = part.split_once('=') else {
            continue;
        };
        let (left, right) = (
            left.trim().trim_start_matches('('),
            right.trim().trim_end_matches(')'),
        );
        let resolved = if left.starts_with('#') {
            names[left].as_str().unwrap_or(left)
        } else {
            left
        };
        if resolved == attr && right.starts_with(':') {
            return key_text(&body["ExpressionAttributeValues"][right]);
        }
    }
    None
}

fn replace_body(request: &mut HttpRequest, body: &Value) {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    request
        .headers_mut()
        .insert("content-length", bytes.len().to_string());
    *request.body_mut() = SdkBody::from(bytes);
}

/// DynamoDB's answer to a hot key: 400, `ProvisionedThroughputExceededException`, and why.
fn throttled_response(over: &Charge) -> HttpResponse {
    let message = format!(
        "The level of configured provisioned throughput for the {} was exceeded for partition key value `{}` (emulated per-key limit)",
        if over.bucket.index.is_some() { "index" } else { "table" },
        over.bucket.key
    );
    let mut body = error_body(THROUGHPUT_EXCEEDED, &message);
    body["ThrottlingReasons"] = json!([{ "reason": over.reason(), "resource": over.resource() }]);
    json_response(400, &body)
}

async fn read_body(response: HttpResponse) -> Result<(StatusCode, Vec<u8>), ConnectorError> {
    let status = response.status();
    let bytes = ByteStream::new(response.into_body())
        .collect()
        .await
        .map_err(|e| ConnectorError::io(Box::new(e)))?
        .into_bytes();
    Ok((status, bytes.to_vec()))
}

/// Reads `ConsumedCapacity.CapacityUnits` from a successful response, removing the field
/// when `strip` (the caller did not ask for it).
async fn read_consumed(
    response: HttpResponse,
    strip: bool,
) -> Result<(HttpResponse, Option<f64>), ConnectorError> {
    if !response.status().is_success() {
        return Ok((response, None));
    }
    let (status, bytes) = read_body(response).await?;
    let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok((bytes_response(status, bytes), None));
    };
    let consumed = body["ConsumedCapacity"]["CapacityUnits"].as_f64();
    if strip {
        if let Some(map) = body.as_object_mut() {
            map.remove("ConsumedCapacity");
        }
        return Ok((json_response(status.as_u16(), &body), consumed));
    }
    Ok((bytes_response(status, bytes), consumed))
}

/// Adds the entries the emulator throttled to the response's unprocessed map.
async fn merge_unprocessed(
    response: HttpResponse,
    field: &str,
    ours: Map<String, Value>,
    keys_spec: bool,
) -> Result<HttpResponse, ConnectorError> {
    if !response.status().is_success() {
        return Ok(response);
    }
    let (status, bytes) = read_body(response).await?;
    let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(bytes_response(status, bytes));
    };
    if !body[field].is_object() {
        body[field] = Value::Object(Map::new());
    }
    for (table, entries) in ours {
        let target = &mut body[field][&table];
        if keys_spec {
            // BatchGetItem: { table: { Keys: [...], ...} }
            if target.is_null() {
                *target = entries;
            } else if let (Some(existing), Some(more)) =
                (target["Keys"].as_array_mut(), entries["Keys"].as_array())
            {
                existing.extend(more.iter().cloned());
            }
        } else if let (Some(existing), Some(more)) = (target.as_array_mut(), entries.as_array()) {
            existing.extend(more.iter().cloned());
        } else {
            *target = entries;
        }
    }
    Ok(json_response(status.as_u16(), &body))
}

impl Intercept for KeyLimitEmulator {
    async fn call(self, request: HttpRequest, next: Next) -> Result<HttpResponse, ConnectorError> {
        self.handle(next, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sharded_runtime::clock::ManualClock;

    fn emulator(clock: &ManualClock) -> KeyLimitEmulator {
        let e = KeyLimitEmulator::with_clock(
            KeyLimits {
                write_units_per_second: 10.0,
                read_units_per_second: 30.0,
                burst_seconds: 5.0,
            },
            Arc::new(clock.clone()),
        );
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
    fn query_partition_values_are_found_through_names() {
        let body = json!({
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :sk0)",
            "ExpressionAttributeNames": {"#pk": "gsi1pk", "#sk": "gsi1sk"},
            "ExpressionAttributeValues": {":pk": {"S": "PLAYER#p1#2"}, ":sk0": {"S": "G"}},
        });
        assert_eq!(
            query_partition_value(&body, "gsi1pk").as_deref(),
            Some("PLAYER#p1#2")
        );
        let plain = json!({"KeyConditionExpression": "pk = :v", "ExpressionAttributeValues": {":v": {"S": "x"}}});
        assert_eq!(query_partition_value(&plain, "pk").as_deref(), Some("x"));
    }

    #[test]
    fn json_sizes_match_the_sdk_item_size() {
        let item = json!({"s": {"S": "héllo"}, "n": {"N": "12345"}, "b": {"BOOL": true}, "l": {"L": [{"S": "ab"}]}});
        assert_eq!(item_size(&item_from_json(&item)), 7 + 5 + 2 + 7);
    }
}

//! SDK-level fault injection for what DynamoDB Local cannot show: latency, a throttled (with
//! its `ThrottlingReasons`) or failing shard, a request applied whose response is lost (a
//! count or a rate), transactions canceled for `TransactionConflict` (a count or a rate),
//! `IdempotentParameterMismatch` and `TransactionInProgress` answers, and how many requests
//! (and how many at once) a call really made. Rates draw from a seeded random source
//! ([`Faults::with_seed`]), so a failing run can be replayed.
//!
//! [`Faults`] wraps the SDK's HTTP client, so everything above it runs as in production:
//! the SDK's retries and error parsing, and our error classification. Responses it injects
//! have DynamoDB's status and body shape.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sharded_testkit::faults::Faults;
//! use sharded_testkit::backend::Backend;
//!
//! let local = Backend::shared().await?;
//! let faults = Faults::new();
//! faults.set_latency(std::time::Duration::from_millis(10));
//! faults.fail_partition("GAME#g1#3");
//! let client = faults.client(&local.sdk_config().await);
//! // ... queries through `client` now see 10 ms per request and shard 3 failing.
//! println!("{} Query requests, at most {} at once", faults.requests("Query"), faults.max_in_flight());
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use crate::intercept::{self, Intercept, Next};
use crate::response::{
    error_body, error_response, json_response, INTERNAL_SERVER_ERROR, THROUGHPUT_EXCEEDED,
};

#[derive(Debug, Default)]
struct State {
    latency: Mutex<Duration>,
    /// Partition keys (quoted, as they appear in a request body) to throttle, each with the
    /// `ThrottlingReasons` entry to give, if any.
    throttled: Mutex<Vec<(String, Option<Throttle>)>>,
    failing: Mutex<Vec<String>>,
    /// Per operation, how many more responses to drop after the request was applied.
    drop_responses: Mutex<HashMap<String, u32>>,
    /// Per operation, the share of responses dropped after the request was applied.
    drop_rates: Mutex<HashMap<String, f64>>,
    /// Transactions still to cancel with `TransactionConflict`, then the share of the rest.
    conflicts: Mutex<(u32, f64)>,
    /// Per operation, errors still to answer with (in order) before the request is sent.
    errors: Mutex<HashMap<String, Vec<InjectedError>>>,
    /// The random source of every rate, seeded so that a run can be replayed.
    rng: Mutex<Option<fastrand::Rng>>,
    requests: Mutex<HashMap<String, u64>>,
    injected: Mutex<HashMap<String, u64>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// The seed of the random source behind every rate ([`Faults::with_seed`] replaces it).
pub const DEFAULT_SEED: u64 = 0x5eed_fa17;

/// Why an injected throttle says it happened: one `ThrottlingReasons` entry, as DynamoDB
/// writes it on a `ProvisionedThroughputExceededException` (or `ThrottlingException`).
///
/// ```
/// use sharded_testkit::faults::Throttle;
/// let hot_index = Throttle::index("IndexWriteKeyRangeThroughputExceeded", "byPlayer");
/// assert_eq!(hot_index.reason(), "IndexWriteKeyRangeThroughputExceeded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    reason: String,
    index: Option<String>,
}

impl Throttle {
    /// A throttle of the table itself: `TableWriteKeyRangeThroughputExceeded`,
    /// `TableReadProvisionedThroughputExceeded`, `TableWriteMaxOnDemandThroughputExceeded`,
    /// `TableReadAccountLimitExceeded`, ...: the resource named is the table's ARN.
    pub fn table(reason: impl Into<String>) -> Self {
        Throttle {
            reason: reason.into(),
            index: None,
        }
    }

    /// A throttle of one GSI (`IndexWriteKeyRangeThroughputExceeded`, ...): the resource named
    /// is the index's ARN.
    pub fn index(reason: impl Into<String>, index: impl Into<String>) -> Self {
        Throttle {
            reason: reason.into(),
            index: Some(index.into()),
        }
    }

    /// The reason code.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The `ThrottlingReasons` entry for a request on `table`.
    fn entry(&self, table: &str) -> serde_json::Value {
        let mut resource = format!("arn:aws:dynamodb:us-east-1:000000000000:table/{table}");
        if let Some(index) = &self.index {
            resource.push_str("/index/");
            resource.push_str(index);
        }
        serde_json::json!({ "reason": self.reason, "resource": resource })
    }
}

/// An error DynamoDB answers a transaction with, which DynamoDB Local never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InjectedError {
    /// `TransactionCanceledException` with the reason `TransactionConflict` on the first
    /// action (`None` on the others): another transaction held the item. Nothing is applied.
    TransactionConflict,
    /// `IdempotentParameterMismatchException`: the token was used for another request.
    /// Nothing is applied.
    IdempotentParameterMismatch,
    /// `TransactionInProgressException`: an earlier send with the token is still running.
    /// Nothing is applied.
    TransactionInProgress,
    /// `InternalServerError` (HTTP 500): nothing is applied.
    InternalServerError,
}

/// A handle on injected faults and request counts, shared by every client it wrapped.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    state: Arc<State>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic in another test thread must not hide this one's counts.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Faults {
    /// No faults, counting requests.
    pub fn new() -> Self {
        Faults::default()
    }

    /// Delays every request by `latency` before it is sent (an asynchronous sleep, so
    /// concurrent requests overlap as they would over a network).
    pub fn set_latency(&self, latency: Duration) {
        *lock(&self.state.latency) = latency;
    }

    /// The random source of every rate seeded with `seed` (else [`DEFAULT_SEED`]): the same
    /// seed and the same requests in the same order give the same faults.
    pub fn with_seed(self, seed: u64) -> Self {
        *lock(&self.state.rng) = Some(fastrand::Rng::with_seed(seed));
        self
    }

    /// Answers every request naming this partition key with HTTP 400
    /// `ProvisionedThroughputExceededException`, as DynamoDB does for a hot key (without
    /// `ThrottlingReasons`, as before August 2025; see
    /// [`throttle_partition_because`](Self::throttle_partition_because)).
    pub fn throttle_partition(&self, partition_key: impl Into<String>) {
        lock(&self.state.throttled).push((format!("\"{}\"", partition_key.into()), None));
    }

    /// Answers every request naming this partition key with HTTP 400
    /// `ProvisionedThroughputExceededException` carrying `ThrottlingReasons` with `why`:
    /// a hot key, a hot GSI key, a table at its provisioned or on-demand maximum, an account
    /// limit.
    ///
    /// ```no_run
    /// use sharded_testkit::faults::{Faults, Throttle};
    /// let faults = Faults::new();
    /// faults.throttle_partition_because(
    ///     "PLAYER#p1#2",
    ///     Throttle::index("IndexWriteKeyRangeThroughputExceeded", "gsi1"),
    /// );
    /// ```
    pub fn throttle_partition_because(&self, partition_key: impl Into<String>, why: Throttle) {
        lock(&self.state.throttled).push((format!("\"{}\"", partition_key.into()), Some(why)));
    }

    /// Cancels each `TransactWriteItems` and `TransactGetItems`, with probability `rate`
    /// (from 0 to 1), with `TransactionConflict` before it reaches DynamoDB (nothing applied),
    /// as the real service does when another transaction holds one of its items: what a hot
    /// counter's exactly-once increments meet. Replaces an earlier rate.
    pub fn conflict_transactions(&self, rate: f64) {
        lock(&self.state.conflicts).1 = rate.clamp(0.0, 1.0);
    }

    /// Cancels the next `count` transactions (`TransactWriteItems` or `TransactGetItems`) with
    /// `TransactionConflict` (before the rate of
    /// [`conflict_transactions`](Self::conflict_transactions) applies).
    pub fn conflict_next_transactions(&self, count: u32) {
        lock(&self.state.conflicts).0 += count;
    }

    /// Answers the next `count` requests of `operation` with `error` without sending them
    /// (nothing applied). Calls queue up, in order.
    ///
    /// ```no_run
    /// use sharded_testkit::faults::{Faults, InjectedError};
    /// let faults = Faults::new();
    /// faults.fail_next("TransactWriteItems", InjectedError::TransactionInProgress, 2);
    /// ```
    pub fn fail_next(&self, operation: impl Into<String>, error: InjectedError, count: u32) {
        lock(&self.state.errors)
            .entry(operation.into())
            .or_default()
            .extend(std::iter::repeat_n(error, count as usize));
    }

    /// Lets each request of `operation` reach DynamoDB and be applied, then loses its
    /// response with probability `rate` (0 to 1), as [`drop_responses`](Self::drop_responses)
    /// does for a count. Replaces an earlier rate.
    pub fn drop_response_rate(&self, operation: impl Into<String>, rate: f64) {
        lock(&self.state.drop_rates).insert(operation.into(), rate.clamp(0.0, 1.0));
    }

    /// Answers every request naming this partition key with HTTP 500
    /// `InternalServerError`.
    pub fn fail_partition(&self, partition_key: impl Into<String>) {
        lock(&self.state.failing).push(format!("\"{}\"", partition_key.into()));
    }

    /// Lets the next `count` requests of `operation` (`PutItem`, `UpdateItem`, ...) reach
    /// DynamoDB and be applied, then loses each response: the SDK sees the connection fail
    /// (an I/O error, which it treats as transient) instead of DynamoDB's answer, and retries
    /// if its retry budget allows. How a write applied twice, or a condition that fails on
    /// the retry of its own write, is shown. Calls add up; each dropped response counts in
    /// [`injected`](Self::injected).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use sharded_testkit::faults::Faults;
    /// # let local = sharded_testkit::backend::Backend::shared().await?;
    /// let faults = Faults::new();
    /// faults.drop_responses("PutItem", 1);
    /// let client = faults.client(&local.sdk_config().await);
    /// // The first PutItem through `client` is written, its answer lost, and sent again.
    /// # Ok(()) }
    /// ```
    pub fn drop_responses(&self, operation: impl Into<String>, count: u32) {
        *lock(&self.state.drop_responses)
            .entry(operation.into())
            .or_default() += count;
    }

    /// Removes every injected fault and latency (counts are kept).
    pub fn clear(&self) {
        *lock(&self.state.latency) = Duration::ZERO;
        lock(&self.state.throttled).clear();
        lock(&self.state.failing).clear();
        lock(&self.state.drop_responses).clear();
        lock(&self.state.drop_rates).clear();
        *lock(&self.state.conflicts) = (0, 0.0);
        lock(&self.state.errors).clear();
    }

    /// A draw from the seeded random source: true with probability `rate`.
    fn chance(&self, rate: f64) -> bool {
        if rate <= 0.0 {
            return false;
        }
        let mut rng = lock(&self.state.rng);
        rng.get_or_insert_with(|| fastrand::Rng::with_seed(DEFAULT_SEED))
            .f64()
            < rate
    }

    /// Whether to drop the response of this request of `operation`, counting it down.
    fn take_drop(&self, operation: &str) -> bool {
        let mut drops = lock(&self.state.drop_responses);
        match drops.get_mut(operation) {
            Some(left) if *left > 0 => {
                *left -= 1;
                return true;
            }
            _ => {}
        }
        drop(drops);
        let rate = lock(&self.state.drop_rates)
            .get(operation)
            .copied()
            .unwrap_or(0.0);
        self.chance(rate)
    }

    /// The error to answer this request of `operation` with instead of sending it, if any.
    fn take_error(&self, operation: &str) -> Option<InjectedError> {
        let mut errors = lock(&self.state.errors);
        if let Some(queue) = errors.get_mut(operation).filter(|q| !q.is_empty()) {
            return Some(queue.remove(0));
        }
        drop(errors);
        if !matches!(operation, "TransactWriteItems" | "TransactGetItems") {
            return None;
        }
        let mut conflicts = lock(&self.state.conflicts);
        if conflicts.0 > 0 {
            conflicts.0 -= 1;
            return Some(InjectedError::TransactionConflict);
        }
        let rate = conflicts.1;
        drop(conflicts);
        self.chance(rate)
            .then_some(InjectedError::TransactionConflict)
    }

    /// Requests sent for `operation` (`Query`, `GetItem`, `BatchWriteItem`, ...), including
    /// those answered with an injected fault.
    pub fn requests(&self, operation: &str) -> u64 {
        lock(&self.state.requests)
            .get(operation)
            .copied()
            .unwrap_or(0)
    }

    /// Requests of `operation` answered with an injected fault, dropped responses included.
    pub fn injected(&self, operation: &str) -> u64 {
        lock(&self.state.injected)
            .get(operation)
            .copied()
            .unwrap_or(0)
    }

    /// The requests in flight now: sent through these faults and neither answered nor
    /// dropped by their caller (a request whose future is dropped leaves at once).
    ///
    /// ```
    /// let faults = sharded_testkit::faults::Faults::new();
    /// assert_eq!(faults.in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests that were in flight at the same moment.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Zeroes the request counts and the in-flight maximum.
    pub fn reset_counts(&self) {
        lock(&self.state.requests).clear();
        lock(&self.state.injected).clear();
        self.state.max_in_flight.store(0, Ordering::SeqCst);
    }

    /// Wraps an HTTP client so its requests go through these faults.
    pub fn wrap(&self, inner: SharedHttpClient) -> SharedHttpClient {
        intercept::wrap(inner, self.clone())
    }

    /// The HTTP client of `sdk_config` wrapped in these faults; when the config names none
    /// (aws-config leaves the default to each service client), the SDK's own default HTTPS
    /// client (rustls with aws-lc), wrapped.
    pub fn http_client(&self, sdk_config: &SdkConfig) -> SharedHttpClient {
        self.wrap(intercept::base_http_client(sdk_config))
    }

    /// A DynamoDB client from `sdk_config` whose requests go through these faults.
    pub fn client(&self, sdk_config: &SdkConfig) -> aws_sdk_dynamodb::Client {
        intercept::client(sdk_config, self.clone())
    }

    /// The response injected for a request of `operation` with this body, if any.
    fn fault_for(&self, operation: &str, body: &[u8]) -> Option<HttpResponse> {
        let throttle = lock(&self.state.throttled)
            .iter()
            .find(|(k, _)| contains(body, k.as_bytes()))
            .map(|(_, why)| why.clone());
        if let Some(why) = throttle {
            let mut response = error_body(
                THROUGHPUT_EXCEEDED,
                "The level of configured provisioned throughput for the table was exceeded. (injected by sharded_testkit::faults)",
            );
            if let Some(why) = why {
                response["ThrottlingReasons"] = serde_json::json!([why.entry(&table_of(body))]);
            }
            return Some(json_response(400, &response));
        }
        if lock(&self.state.failing)
            .iter()
            .any(|k| contains(body, k.as_bytes()))
        {
            return Some(error_response(
                500,
                INTERNAL_SERVER_ERROR,
                "Internal server error (injected by sharded_testkit::faults)",
            ));
        }
        self.take_error(operation)
            .map(|error| injected_response(error, body))
    }
}

/// DynamoDB's answer for `error` to a request with this body.
fn injected_response(error: InjectedError, body: &[u8]) -> HttpResponse {
    const BY: &str = "(injected by sharded_testkit::faults)";
    match error {
        InjectedError::TransactionConflict => {
            let actions = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|b| b["TransactItems"].as_array().map(Vec::len))
                .unwrap_or(1)
                .max(1);
            let reasons: Vec<serde_json::Value> = (0..actions)
                .map(|i| {
                    if i == 0 {
                        serde_json::json!({
                            "Code": "TransactionConflict",
                            "Message": format!("Transaction is ongoing for the item {BY}"),
                        })
                    } else {
                        serde_json::json!({ "Code": "None" })
                    }
                })
                .collect();
            let codes: Vec<&str> = (0..actions)
                .map(|i| if i == 0 { "TransactionConflict" } else { "None" })
                .collect();
            let mut response = error_body(
                "TransactionCanceledException",
                &format!(
                    "Transaction cancelled, please refer cancellation reasons for specific reasons [{}] {BY}",
                    codes.join(", ")
                ),
            );
            response["CancellationReasons"] = serde_json::Value::Array(reasons);
            json_response(400, &response)
        }
        InjectedError::IdempotentParameterMismatch => error_response(
            400,
            "IdempotentParameterMismatchException",
            &format!("The request uses the same client token as a previous, but non-identical request. {BY}"),
        ),
        InjectedError::TransactionInProgress => error_response(
            400,
            "TransactionInProgressException",
            &format!("The transaction with the given request token is already in progress. {BY}"),
        ),
        InjectedError::InternalServerError => error_response(
            500,
            INTERNAL_SERVER_ERROR,
            &format!("Internal server error {BY}"),
        ),
    }
}

/// The table a request names (`TableName`, or the first table of a transaction or batch).
fn table_of(body: &[u8]) -> String {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(body) else {
        return "unknown".to_owned();
    };
    if let Some(name) = body["TableName"].as_str() {
        return name.to_owned();
    }
    let from_transaction = body["TransactItems"].as_array().and_then(|items| {
        items.iter().find_map(|item| {
            item.as_object()?
                .values()
                .find_map(|action| action["TableName"].as_str())
        })
    });
    let from_batch = || {
        body["RequestItems"]
            .as_object()
            .and_then(|tables| tables.keys().next().cloned())
    };
    from_transaction
        .map(str::to_owned)
        .or_else(from_batch)
        .unwrap_or_else(|| "unknown".to_owned())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Decrements the in-flight count when a request ends, however it ends.
struct InFlight(Arc<State>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Intercept for Faults {
    async fn call(self, request: HttpRequest, next: Next) -> Result<HttpResponse, ConnectorError> {
        let state = self.state.clone();
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let _in_flight = InFlight(state.clone());
        let operation = intercept::operation(&request)
            .unwrap_or("unknown")
            .to_owned();
        *lock(&state.requests).entry(operation.clone()).or_default() += 1;
        let latency = *lock(&state.latency);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if let Some(response) = request
            .body()
            .bytes()
            .and_then(|b| self.fault_for(&operation, b))
        {
            *lock(&state.injected).entry(operation).or_default() += 1;
            return Ok(response);
        }
        let response = next.send(request).await;
        if self.take_drop(&operation) {
            *lock(&state.injected).entry(operation).or_default() += 1;
            // The request was applied; only its answer is lost, as when a connection drops
            // after DynamoDB wrote and before the response arrived.
            drop(response);
            return Err(ConnectorError::io(
                "response dropped after the request was applied (injected by sharded_testkit::faults)"
                    .into(),
            ));
        }
        response
    }
}

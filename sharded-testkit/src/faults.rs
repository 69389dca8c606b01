//! SDK-level fault injection for what DynamoDB Local cannot show: latency, a throttled or
//! failing shard, a request applied whose response is lost, and how many requests (and how
//! many at once) a call really made.
//!
//! [`Faults`] wraps the SDK's HTTP client, so everything above it runs as in production:
//! the SDK's retries and error parsing, and our error classification. Responses it injects
//! have DynamoDB's status and body shape.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sharded_testkit::faults::Faults;
//! use sharded_testkit::local::DynamoDbLocal;
//!
//! let local = DynamoDbLocal::shared().await?;
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
use crate::response::{error_response, INTERNAL_SERVER_ERROR, THROUGHPUT_EXCEEDED};

#[derive(Debug, Default)]
struct State {
    latency: Mutex<Duration>,
    throttled: Mutex<Vec<String>>,
    failing: Mutex<Vec<String>>,
    /// Per operation, how many more responses to drop after the request was applied.
    drop_responses: Mutex<HashMap<String, u32>>,
    requests: Mutex<HashMap<String, u64>>,
    injected: Mutex<HashMap<String, u64>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
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

    /// Answers every request naming this partition key with HTTP 400
    /// `ProvisionedThroughputExceededException`, as DynamoDB does for a hot key.
    pub fn throttle_partition(&self, partition_key: impl Into<String>) {
        lock(&self.state.throttled).push(format!("\"{}\"", partition_key.into()));
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
    /// # let local = sharded_testkit::local::DynamoDbLocal::shared().await?;
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
    }

    /// Whether to drop the response of this request of `operation`, counting it down.
    fn take_drop(&self, operation: &str) -> bool {
        let mut drops = lock(&self.state.drop_responses);
        match drops.get_mut(operation) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
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

    /// The status, code and message of the fault injected for a request with this body.
    fn fault_for(&self, body: &[u8]) -> Option<(u16, &'static str, &'static str)> {
        let names =
            |list: &Mutex<Vec<String>>| lock(list).iter().any(|k| contains(body, k.as_bytes()));
        if names(&self.state.throttled) {
            Some((
                400,
                THROUGHPUT_EXCEEDED,
                "The level of configured provisioned throughput for the table was exceeded. (injected by sharded_testkit::faults)",
            ))
        } else if names(&self.state.failing) {
            Some((
                500,
                INTERNAL_SERVER_ERROR,
                "Internal server error (injected by sharded_testkit::faults)",
            ))
        } else {
            None
        }
    }
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
        if let Some((status, code, message)) =
            request.body().bytes().and_then(|b| self.fault_for(b))
        {
            *lock(&state.injected).entry(operation).or_default() += 1;
            return Ok(error_response(status, code, message));
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

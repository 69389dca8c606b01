//! How a request is tried again: the budget of batch retries and of a transaction sent again
//! ([`RetryPolicy`]), and which SDK errors are worth another attempt ([`retryable`]). A leaf
//! the batches, transactions, counters and the item move all read.

use std::time::Duration;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use crate::error::is_throttling_code;

/// How long batch operations keep retrying unprocessed items.
///
/// Attempt `k` (from 0) waits a random time in `[0, min(max_delay, base_delay * 2^k)]`
/// ("full jitter"), so clients throttled together do not retry together.
///
/// ```
/// use std::time::Duration;
/// use sharded::RetryPolicy;
/// let patient = RetryPolicy { max_attempts: 20, ..RetryPolicy::default() };
/// assert!(patient.max_delay >= Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests per batch, the first included, before giving up.
    pub max_attempts: u32,
    /// The backoff cap of the first retry.
    pub base_delay: Duration,
    /// The largest backoff cap.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(25),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The full-jitter delay before retry number `attempt` (0-based).
    ///
    /// ```
    /// use sharded::RetryPolicy;
    /// let p = RetryPolicy::default();
    /// assert!(p.backoff(30) <= p.max_delay);
    /// ```
    pub fn backoff(&self, attempt: u32) -> Duration {
        let cap = self
            .base_delay
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.max_delay);
        let nanos = cap.as_nanos().min(u128::from(u64::MAX)) as u64;
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// Errors worth retrying: throttling, limits, server errors, timeouts and dropped
/// connections. A validation error will fail the same way every time.
pub(crate) fn retryable<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(service) => service.err().code().is_some_and(|code| {
            is_throttling_code(code) || matches!(code, "InternalServerError" | "ServiceUnavailable")
        }),
        _ => false,
    }
}

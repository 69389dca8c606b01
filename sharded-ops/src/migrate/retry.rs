//! How the migration tries one item again: which failures are worth another attempt, and how
//! long it waits before it.

use std::time::Duration;

use sharded_runtime::Error;

/// The longest wait between two attempts at one item.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Whether a failed request may succeed when sent again (the network, a timeout, DynamoDB's
/// own trouble), as opposed to a request DynamoDB refuses as invalid.
pub(super) fn retriable(error: &Error) -> bool {
    matches!(error, Error::Dynamo { .. }) && !error.is_validation()
}

/// Waits before attempt `attempt + 1`: exponential from 25 ms, at most a second, with full
/// jitter so concurrent moves do not retry in step.
pub(super) async fn backoff(attempt: u32) {
    let ceiling = Duration::from_millis(25)
        .saturating_mul(1 << attempt.min(16))
        .min(MAX_BACKOFF);
    tokio::time::sleep(ceiling.mul_f64(fastrand::f64())).await;
}

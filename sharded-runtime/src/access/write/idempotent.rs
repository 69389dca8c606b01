//! The one way a `TransactWriteItems` is sent: with a `ClientRequestToken`, and sent again, the
//! identical request with the same token, while its outcome is unknown or DynamoDB refused it
//! for a reason that passes.
//!
//! Why one mechanism: DynamoDB applies a token-carrying transaction at most once within its
//! 10-minute idempotency window, but only if every resend is byte-for-byte the same request.
//! A retry that rebuilds the request (new timestamps, another shard) or draws a new token can
//! apply the change twice. `Transaction::commit`, `PreparedTransaction`, the writes of a
//! repository during a layout transition, the migration's moves and the exactly-once counter
//! all send through [`send`], so none of them can get this wrong on its own.
//!
//! What is sent again (same request, same token), within the caller's [`RetryPolicy`]:
//! - an answer that never came (a timeout, a dropped connection, a 5xx): the request may have
//!   been applied, and the token makes the resend harmless;
//! - `TransactionCanceledException` whose reasons are only `TransactionConflict` (another
//!   transaction held one of the items) or throttles: canceled means not applied;
//! - `TransactionInProgressException`: an earlier send with this token is still running;
//! - a throttled request.
//!
//! What is not: a condition that failed, a validation error, and
//! `IdempotentParameterMismatchException` (the token was used for another request), which the
//! caller maps to [`Error::IdempotentParameterMismatch`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::{CancellationReason, ReturnConsumedCapacity, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::box_error::BoxError;
use tokio::time::Instant;

use crate::access::retry::{self, RetryPolicy};
use crate::error::{is_throttling_code, Error, ItemKeyDisplay};

/// How long DynamoDB remembers a `ClientRequestToken` after the request that first used it:
/// within it, the identical request sent again is not applied again.
///
/// ```
/// assert_eq!(sharded::transaction::IDEMPOTENCY_WINDOW.as_secs(), 600);
/// ```
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(10 * 60);

/// How long after its first send a request may still be sent again: the window, less a
/// margin for the request's own latency and for clocks (DynamoDB counts from when it completed
/// the first request; we count from when we sent it, which is earlier, so the margin only
/// needs to cover a slow first request).
pub(crate) const RESEND_HORIZON: Duration = Duration::from_secs(9 * 60);

/// The longest `ClientRequestToken` DynamoDB accepts, in characters.
///
/// ```
/// assert_eq!(sharded::transaction::MAX_TOKEN_CHARS, 36);
/// ```
pub const MAX_TOKEN_CHARS: usize = 36;

/// The error raised by the SDK for one `TransactWriteItems`.
pub(crate) type SendError = SdkError<TransactWriteItemsError>;

/// One token-carrying transaction, kept whole so that every send is the identical request.
#[derive(Debug, Clone)]
pub(crate) struct TokenRequest {
    pub(crate) items: Vec<TransactWriteItem>,
    pub(crate) token: String,
    /// Whether to ask for `ReturnConsumedCapacity = TOTAL`.
    pub(crate) consumed_capacity: bool,
}

impl TokenRequest {
    /// `items` under a fresh random token.
    pub(crate) fn new(items: Vec<TransactWriteItem>) -> Self {
        TokenRequest {
            items,
            token: random_token(),
            consumed_capacity: false,
        }
    }

    /// `items` under `token`, checked first ([`check_token`]).
    pub(crate) fn with_token(items: Vec<TransactWriteItem>, token: String) -> Result<Self, Error> {
        check_token(&token)?;
        Ok(TokenRequest {
            items,
            token,
            consumed_capacity: false,
        })
    }

    /// Asks DynamoDB for the capacity the transaction consumed.
    pub(crate) fn reporting_capacity(mut self) -> Self {
        self.consumed_capacity = true;
        self
    }
}

/// What the sends of one request so far tell, kept across calls of [`send`] for a request the
/// caller may commit again: when it was first sent (the start of its token's window, set once,
/// by the first send), and whether any attempt, the SDK's own retries included, left its
/// outcome unknown: one got no answer, or a send was given up while waiting for its answer
/// (its caller dropped the future, by a timeout or a cancelled task), which the next send
/// finds still in flight.
#[derive(Debug, Default)]
pub(crate) struct FirstSent {
    at: OnceLock<Instant>,
    unknown: LostAttempts,
    /// Set before each send, cleared when its answer comes: still set at the next send means
    /// the last one was dropped on its way, and may have been applied.
    in_flight: AtomicBool,
}

impl FirstSent {
    /// Whether the request was sent so long ago that DynamoDB may have forgotten its token.
    pub(crate) fn past_horizon(&self) -> bool {
        self.at
            .get()
            .is_some_and(|at| at.elapsed() >= RESEND_HORIZON)
    }

    /// Whether any attempt so far got no answer, DynamoDB's own failure (a 5xx), or found an
    /// earlier send still in progress: the request may have been applied.
    pub(crate) fn outcome_unknown(&self) -> bool {
        self.unknown.any()
    }

    /// Marks the request sent now, without sending it.
    #[cfg(test)]
    pub(crate) fn sent_now(&self) {
        self.at.get_or_init(Instant::now);
    }
}

/// Whether any attempt of a request, the SDK's own retries included, left its outcome unknown
/// (it got no answer, or DynamoDB failed on its side): a refusal after such an attempt may be
/// the earlier attempt's own doing. A transaction's sends keep one in their [`FirstSent`]; a
/// single-item conditional write keeps its own ([`Error::WriteOutcomeUnknown`](crate::Error::WriteOutcomeUnknown)).
#[derive(Debug, Default, Clone)]
pub(crate) struct LostAttempts(Arc<AtomicBool>);

impl LostAttempts {
    /// The interceptor to put on the request (`.customize().interceptor(..)`).
    pub(crate) fn watch(&self) -> AttemptWatch {
        AttemptWatch(self.clone())
    }

    /// Whether an attempt so far left its outcome unknown.
    pub(crate) fn any(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn mark(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// `refused`, a refusal of the write these attempts are of, as it is, or as
    /// [`Error::WriteOutcomeUnknown`] when an attempt was lost ([`after_lost_attempt`]).
    pub(crate) fn refusal(
        &self,
        operation: &'static str,
        entity: &'static str,
        key: &ItemKeyDisplay,
        refused: Error,
    ) -> Error {
        if self.any() {
            after_lost_attempt(operation, entity, key.clone(), refused)
        } else {
            refused
        }
    }
}

/// `refused`, the refusal of a write's attempt sent after one that got no answer, as
/// [`Error::WriteOutcomeUnknown`]: the lost attempt may have been applied, and the refusal
/// be its own doing.
pub(crate) fn after_lost_attempt(
    operation: &'static str,
    entity: &'static str,
    key: ItemKeyDisplay,
    refused: Error,
) -> Error {
    Error::WriteOutcomeUnknown {
        operation,
        entity,
        key,
        last: Box::new(refused),
    }
}

/// Watches every attempt of a send, the SDK's own retries included (our loop sees only the
/// last of them): an attempt whose outcome is unknown is marked in its [`LostAttempts`].
#[derive(Debug)]
pub(crate) struct AttemptWatch(LostAttempts);

impl Intercept for AttemptWatch {
    fn name(&self) -> &'static str {
        "sharded::idempotent::attempts"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(Err(error)) = context.output_or_error() else {
            return Ok(());
        };
        let server_failed = context
            .response()
            .is_some_and(|response| response.status().is_server_error());
        let in_progress = error
            .as_operation_error()
            .and_then(|e| e.downcast_ref::<TransactWriteItemsError>())
            .is_some_and(|e| {
                matches!(
                    e,
                    TransactWriteItemsError::TransactionInProgressException(_)
                )
            });
        // A connector error may come after the request left (a reset connection): unknown,
        // which only ever makes the caller send the identical request again, harmlessly.
        if error.is_timeout_error()
            || error.is_connector_error()
            || error.is_response_error()
            || server_failed
            || in_progress
        {
            self.0.mark();
        }
        Ok(())
    }
}

/// Sends `request`, and sends it again (identical, same token) while the answer is unknown or
/// a refusal that passes, up to `policy.max_attempts` sends with its full-jitter backoff, and
/// never past [`RESEND_HORIZON`] after the first send (`first_sent`, which the caller keeps
/// when it may send the same request again later). Returns the last answer.
pub(crate) async fn send(
    client: &Client,
    request: &TokenRequest,
    policy: &RetryPolicy,
    first_sent: &FirstSent,
) -> Result<TransactWriteItemsOutput, SendError> {
    let mut attempt = 0;
    loop {
        let started = *first_sent.at.get_or_init(Instant::now);
        if first_sent.in_flight.swap(true, Ordering::SeqCst) {
            first_sent.unknown.mark();
        }
        let mut builder = client
            .transact_write_items()
            .set_transact_items(Some(request.items.clone()))
            .client_request_token(&request.token);
        if request.consumed_capacity {
            builder = builder.return_consumed_capacity(ReturnConsumedCapacity::Total);
        }
        let result = builder
            .customize()
            .interceptor(first_sent.unknown.watch())
            .send()
            .await;
        first_sent.in_flight.store(false, Ordering::SeqCst);
        attempt += 1;
        let Err(error) = &result else {
            return result;
        };
        let delay = policy.backoff(attempt - 1);
        let horizon_left = RESEND_HORIZON.saturating_sub(started.elapsed());
        if !resendable(error) || attempt >= policy.max_attempts.max(1) || delay >= horizon_left {
            tracing::debug!(
                attempts = attempt,
                token = %request.token,
                "transaction not sent again"
            );
            return result;
        }
        tracing::debug!(
            attempt,
            token = %request.token,
            code = error.code().unwrap_or("(no answer)"),
            "sending the same transaction again"
        );
        tokio::time::sleep(delay).await;
    }
}

/// Whether `error` leaves the request safe and worth sending again with its token: the answer
/// was lost, the transaction was canceled only for conflicts or throttles, an earlier send
/// with the token is still in progress, or the request was throttled or failed on
/// DynamoDB's side.
pub(crate) fn resendable(error: &SendError) -> bool {
    match error.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(canceled)) => {
            cancellation_passes(canceled.cancellation_reasons())
        }
        Some(TransactWriteItemsError::TransactionInProgressException(_)) => true,
        Some(TransactWriteItemsError::IdempotentParameterMismatchException(_)) => false,
        // A lost answer, a throttle, a failure on DynamoDB's side: what every request retries.
        _ => retry::retryable(error),
    }
}

/// Whether a transaction (a write or a read) was canceled only for reasons that say nothing
/// about its items' conditions, so that sending it again can succeed: at least one reason, and
/// every one a conflict with another transaction or a throttle.
pub(crate) fn cancellation_passes(reasons: &[CancellationReason]) -> bool {
    let mut codes = reasons
        .iter()
        .map(|r| r.code().unwrap_or("None"))
        .filter(|code| *code != "None")
        .peekable();
    codes.peek().is_some() && codes.all(passes)
}

/// A cancellation reason that says nothing about the items' conditions: sending again can
/// succeed.
fn passes(code: &str) -> bool {
    matches!(
        code,
        "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
    )
}

/// Whether a refusal says nothing about whether an earlier send with the token was applied:
/// a throttle, or a cancellation only for conflicts or throttles (refused before the
/// request's idempotency was looked at, as far as the caller can tell).
pub(crate) fn says_nothing_of_earlier_sends(error: &TransactWriteItemsError) -> bool {
    match error {
        TransactWriteItemsError::TransactionCanceledException(canceled) => {
            cancellation_passes(canceled.cancellation_reasons())
        }
        other => other.code().is_some_and(is_throttling_code),
    }
}

/// The caller's error `last` for the last send's refusal, unless an earlier attempt's
/// outcome is unknown and the refusal `says_nothing` about it
/// ([`says_nothing_of_earlier_sends`]): then [`Error::OutcomeUnknown`] around it, so that
/// `outcome_unknown()` holds across every send of the request.
pub(crate) fn after_sends(
    first_sent: &FirstSent,
    token: &str,
    says_nothing: bool,
    last: Error,
) -> Error {
    if first_sent.outcome_unknown() && !last.outcome_unknown() && says_nothing {
        Error::OutcomeUnknown {
            token: token.to_owned(),
            last: Box::new(last),
        }
    } else {
        last
    }
}

/// The error of a transaction that was not canceled, or canceled for reasons its caller does
/// not map: the token errors as their typed variants, the rest as [`Error::Dynamo`], each as
/// [`after_sends`] says. Condition failures are mapped by each caller, which knows its actions.
pub(crate) fn sent_error(
    table: &str,
    token: &str,
    first_sent: &FirstSent,
    error: TransactWriteItemsError,
) -> Error {
    let says_nothing = says_nothing_of_earlier_sends(&error);
    let last = match error {
        TransactWriteItemsError::IdempotentParameterMismatchException(_) => {
            Error::IdempotentParameterMismatch {
                token: token.to_owned(),
            }
        }
        TransactWriteItemsError::TransactionInProgressException(_) => {
            Error::TransactionInProgress {
                token: token.to_owned(),
            }
        }
        other => Error::dynamo("TransactWriteItems", table, other),
    };
    after_sends(first_sent, token, says_nothing, last)
}

/// A fresh `ClientRequestToken`: 32 hex digits from 128 random bits.
pub(crate) fn random_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// Refuses a token DynamoDB would refuse: empty, or longer than [`MAX_TOKEN_CHARS`].
pub(crate) fn check_token(token: &str) -> Result<(), Error> {
    let chars = token.chars().count();
    if chars == 0 || chars > MAX_TOKEN_CHARS {
        return Err(Error::InvalidToken {
            token: token.to_owned(),
            reason: format!(
                "a ClientRequestToken has 1 to {MAX_TOKEN_CHARS} characters, not {chars}: use a \
                 UUID, or a hash of what identifies the request"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::types::error::{
        IdempotentParameterMismatchException, TransactionCanceledException,
        TransactionInProgressException,
    };
    use aws_smithy_runtime_api::http::{Response, StatusCode};
    use aws_smithy_types::body::SdkBody;

    use super::*;

    fn service(err: TransactWriteItemsError) -> SendError {
        SdkError::service_error(
            err,
            Response::new(StatusCode::try_from(400).unwrap(), SdkBody::empty()),
        )
    }

    fn canceled(codes: &[&str]) -> SendError {
        let reasons = codes
            .iter()
            .map(|c| CancellationReason::builder().code(*c).build())
            .collect();
        service(TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(reasons))
                .build(),
        ))
    }

    #[test]
    fn conflicts_and_throttles_are_sent_again_failed_conditions_are_not() {
        assert!(resendable(&canceled(&["None", "TransactionConflict"])));
        assert!(resendable(&canceled(&["ThrottlingError", "None"])));
        assert!(!resendable(&canceled(&[
            "TransactionConflict",
            "ConditionalCheckFailed"
        ])));
        assert!(!resendable(&canceled(&["ValidationError"])));
        // No reason at all says nothing about what passes.
        assert!(!resendable(&canceled(&["None"])));
    }

    #[test]
    fn in_progress_is_sent_again_a_mismatch_is_not() {
        let in_progress = service(TransactWriteItemsError::TransactionInProgressException(
            TransactionInProgressException::builder().build(),
        ));
        assert!(resendable(&in_progress));
        let mismatch = service(
            TransactWriteItemsError::IdempotentParameterMismatchException(
                IdempotentParameterMismatchException::builder().build(),
            ),
        );
        assert!(!resendable(&mismatch));
        assert!(matches!(
            sent_error("t", "tok", &FirstSent::default(), mismatch.into_service_error()),
            Error::IdempotentParameterMismatch { token } if token == "tok"
        ));
        let throttled = service(TransactWriteItemsError::generic(
            ErrorMetadata::builder()
                .code("ProvisionedThroughputExceededException")
                .build(),
        ));
        assert!(resendable(&throttled));
    }

    #[tokio::test(start_paused = true)]
    async fn the_horizon_is_counted_from_the_first_send() {
        let first = FirstSent::default();
        assert!(!first.past_horizon(), "never sent");
        first.sent_now();
        tokio::time::advance(RESEND_HORIZON - Duration::from_secs(1)).await;
        assert!(!first.past_horizon());
        // A later send does not move the start.
        first.sent_now();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(first.past_horizon());
        assert!(RESEND_HORIZON < IDEMPOTENCY_WINDOW);
    }

    #[test]
    fn tokens_dynamodb_refuses_are_refused_before_sending() {
        assert!(check_token("").is_err());
        assert!(check_token(&"x".repeat(37)).is_err());
        check_token(&"x".repeat(36)).unwrap();
        check_token(&random_token()).unwrap();
    }
}

//! The logical operation a physical request belongs to, carried to the SDK interceptor.
//!
//! The interceptor runs inside the SDK's own (debug-level) spans, so `Span::current()` there
//! is the SDK's span when those are enabled, not ours. A logical operation therefore runs its
//! futures [`within`] its span: a future-local value (a tokio task-local scoped to the
//! future, set on each poll, so concurrent shard requests in one task each see their own)
//! names the parent span and the shard. A request sent outside any such scope still gets its
//! span, as a child of whatever span is current.

use std::future::Future;

use tracing::Instrument;

/// The logical operation around a request: its span, and the shard it reads, if one.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) span: tracing::Span,
    pub(crate) shard: Option<u32>,
}

tokio::task_local! {
    static OPERATION: Operation;
}

/// Runs `future` in `span` (entered on each poll) with the requests it sends parented to
/// `span` and, if given, attributed to `shard`.
pub(crate) fn within<F: Future>(
    span: tracing::Span,
    shard: Option<u32>,
    future: F,
) -> impl Future<Output = F::Output> {
    let operation = Operation {
        span: span.clone(),
        shard,
    };
    OPERATION.scope(operation, future.instrument(span))
}

/// The operation the current future runs within, if any.
pub(crate) fn current() -> Option<Operation> {
    OPERATION.try_with(Operation::clone).ok()
}

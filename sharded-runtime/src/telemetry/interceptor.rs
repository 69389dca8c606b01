//! The one place that sees every physical request: an SDK interceptor added to the
//! repository's client, so every operation the runtime sends (a query's shard request, a
//! batch retry, a transaction, a migration's move, a counter's increment, an operation added
//! later) gets its span and its duration sample without a line at the call site.

use std::time::Instant;

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use tracing::field::Empty;

use super::context;
use super::names::*;
use super::request::{error_body, input_facts, is_throttle, output_facts};

/// The interceptor's name, by which [`instrument`](super::instrument) finds it on a client.
pub(crate) const NAME: &str = "sharded::telemetry";

/// Records a span, a duration sample and, on failure, the error type of each request.
#[derive(Debug, Default)]
pub(crate) struct RequestTelemetry;

/// What the interceptor keeps between the start and the end of one execution.
#[derive(Debug, Clone)]
struct InFlight {
    span: tracing::Span,
    start: Instant,
    attempts: u32,
}

impl Storable for InFlight {
    type Storer = StoreReplace<Self>;
}

impl Intercept for RequestTelemetry {
    fn name(&self) -> &'static str {
        NAME
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = context::current();
        // The logical operation's span; outside one (or when it is disabled), the current.
        let parent = operation
            .as_ref()
            .and_then(|o| o.span.id())
            .or_else(|| tracing::Span::current().id());
        let span = tracing::info_span!(
            parent: parent,
            "sharded.request",
            { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
            { DB_OPERATION_NAME } = Empty,
            { TABLE_NAMES } = Empty,
            { INDEX_NAME } = Empty,
            { LIMIT } = Empty,
            { SCAN_FORWARD } = Empty,
            { CONSISTENT_READ } = Empty,
            { SEGMENT } = Empty,
            { TOTAL_SEGMENTS } = Empty,
            { COUNT } = Empty,
            { SCANNED_COUNT } = Empty,
            { CONSUMED_CAPACITY } = Empty,
            { ERROR_TYPE } = Empty,
            { THROTTLING_REASON } = Empty,
            { SHARD } = operation.as_ref().and_then(|o| o.shard),
            { ATTEMPTS } = Empty,
            "otel.kind" = "client",
            "otel.name" = Empty,
        );
        // The input's attributes only when someone listens (no subscriber: no work).
        let facts = (!span.is_disabled())
            .then(|| input_facts(context.input()))
            .flatten();
        if let Some(facts) = facts {
            if !facts.table_names.is_empty() {
                span.record(TABLE_NAMES, facts.table_names.join(",").as_str());
            }
            span.record(INDEX_NAME, facts.index_name.as_deref());
            span.record(LIMIT, facts.limit.map(i64::from));
            span.record(SCAN_FORWARD, facts.scan_forward);
            span.record(CONSISTENT_READ, facts.consistent_read);
            span.record(SEGMENT, facts.segment.map(i64::from));
            span.record(TOTAL_SEGMENTS, facts.total_segments.map(i64::from));
        }
        cfg.interceptor_state().store_put(InFlight {
            span,
            start: Instant::now(),
            attempts: 0,
        });
        Ok(())
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(mut in_flight) = cfg.load::<InFlight>().cloned() {
            in_flight.attempts += 1;
            cfg.interceptor_state().store_put(in_flight);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(in_flight) = cfg.load::<InFlight>() else {
            return Ok(());
        };
        let seconds = in_flight.start.elapsed().as_secs_f64();
        let span = &in_flight.span;
        let operation = cfg
            .load::<Metadata>()
            .map_or("unknown", |m| m.name())
            .to_owned();
        span.record(DB_OPERATION_NAME, operation.as_str());
        span.record("otel.name", operation.as_str());
        span.record(ATTEMPTS, in_flight.attempts);
        let mut error_type = None;
        match context.output_or_error() {
            Some(Ok(output)) => {
                let facts = output_facts(output);
                span.record(COUNT, facts.count.map(i64::from));
                span.record(SCANNED_COUNT, facts.scanned_count.map(i64::from));
                span.record(CONSUMED_CAPACITY, facts.consumed_capacity);
                if let Some(units) = facts.consumed_capacity {
                    metrics::histogram!(REQUEST_UNITS, DB_OPERATION_NAME => operation.clone())
                        .record(units);
                }
            }
            Some(Err(error)) => {
                let body = context
                    .response()
                    .and_then(|r| r.body().bytes())
                    .and_then(error_body);
                let kind = match body {
                    Some((code, reasons)) => {
                        if is_throttle(&code) {
                            let reasons = if reasons.is_empty() {
                                vec![code.clone()]
                            } else {
                                reasons
                            };
                            span.record(THROTTLING_REASON, reasons.join(",").as_str());
                            for reason in reasons {
                                metrics::counter!(THROTTLES,
                                    DB_OPERATION_NAME => operation.clone(),
                                    THROTTLING_REASON => reason)
                                .increment(1);
                            }
                        }
                        code
                    }
                    None if error.is_timeout_error() => "timeout".to_owned(),
                    None if error.is_connector_error() => "io".to_owned(),
                    None if error.is_response_error() => "response".to_owned(),
                    None => "_OTHER".to_owned(),
                };
                span.record(ERROR_TYPE, kind.as_str());
                error_type = Some(kind);
            }
            None => {}
        }
        let histogram = match error_type {
            Some(kind) => metrics::histogram!(OPERATION_DURATION,
                DB_SYSTEM_NAME => DB_SYSTEM_NAME_VALUE,
                DB_OPERATION_NAME => operation,
                ERROR_TYPE => kind),
            None => metrics::histogram!(OPERATION_DURATION,
                DB_SYSTEM_NAME => DB_SYSTEM_NAME_VALUE,
                DB_OPERATION_NAME => operation),
        };
        histogram.record(seconds);
        Ok(())
    }
}

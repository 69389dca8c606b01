//! Counts the `Query` responses a client receives and sums the read units they report: an SDK
//! interceptor, so a bench measures what DynamoDB charged, the same way for every side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::query::QueryOutput;

/// Counts `Query` responses and sums the read units they report.
#[derive(Debug, Default)]
pub struct Meter {
    pub requests: AtomicU64,
    /// Read units x 1,000, so an atomic integer holds them.
    pub milli_units: AtomicU64,
}

#[derive(Debug, Clone)]
pub struct Metering(pub Arc<Meter>);

impl Intercept for Metering {
    fn name(&self) -> &'static str {
        "bench-query-meter"
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        if let Ok(output) = context.output_or_error() {
            if let Some(query) = output.downcast_ref::<QueryOutput>() {
                self.0.requests.fetch_add(1, Ordering::Relaxed);
                let units = query
                    .consumed_capacity()
                    .and_then(|c| c.capacity_units())
                    .unwrap_or(0.0);
                self.0
                    .milli_units
                    .fetch_add((units * 1000.0).round() as u64, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

impl Meter {
    /// The requests and read units so far.
    pub fn read(&self) -> (u64, f64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
        )
    }
}

//! Telemetry in the ecosystem's terms: `tracing` spans with OpenTelemetry's DynamoDB
//! attributes, and metrics through the [`metrics`](https://docs.rs/metrics) facade.
//!
//! `sharded` records; your application chooses where it goes. Install a `tracing`
//! subscriber (with `tracing-opentelemetry` to export spans) and a `metrics` recorder
//! (`metrics-exporter-prometheus`, an OpenTelemetry bridge, ...): without them, every span
//! and metric costs next to nothing, and a library never installs either.
//!
//! **Spans.** Each logical operation opens one span ([`QUERY_SPAN`], [`ITEM_SPAN`],
//! [`SCAN_SPAN`], [`BATCH_WRITE_SPAN`], [`TRANSACTION_SPAN`], [`MIGRATION_SPAN`], ...) with `sharded.*` fields
//! (entity, logical key and shard, shard count, fan-out, layout transition, items read and
//! emitted); each physical request it sends is a child
//! [`REQUEST_SPAN`] with `db.system.name = "aws.dynamodb"`, `db.operation.name`,
//! `aws.dynamodb.table_names`, `aws.dynamodb.index_name`, `aws.dynamodb.limit`,
//! `aws.dynamodb.scan_forward`, `aws.dynamodb.segment`/`total_segments`,
//! `aws.dynamodb.count`/`scanned_count`, `aws.dynamodb.consumed_capacity`, `error.type`,
//! `sharded.throttling_reason`, `sharded.shard` and `sharded.attempts`, plus `otel.name` and
//! `otel.kind` for `tracing-opentelemetry`. Request spans come from one SDK interceptor that
//! [`Repo::new`](crate::Repo::new) adds to the client, so every request the runtime sends is
//! covered, whatever operation sends it.
//!
//! **Events.** The layout policy (`sharded::capacity::LayoutPolicy`) records each decision
//! as a [`LAYOUT_POLICY_EVENT`] event.
//!
//! **Metrics.** [`OPERATION_DURATION`] (seconds, per request), [`REQUEST_UNITS`],
//! [`THROTTLES`] (by reason), [`FAN_OUT_WIDTH`], [`MERGE_WASTE`],
//! [`CURSOR_RESUME_REQUESTS`], [`MIGRATION_ITEMS`], [`FOREIGN_ITEMS`] (by reason),
//! [`LAYOUT_DECISIONS`] (the layout policy's, by decision), and, per
//! logical key, [`KEY_UNITS`] and
//! [`KEY_THROTTLES`].
//!
//! **Cardinality.** Every label is from a small fixed set (operation names, error codes,
//! throttling reasons, entity and index names, outcomes) except [`LOGICAL_KEY`], which is
//! recorded only by a repository with hot-key stats on
//! ([`Repo::with_stats`](crate::Repo::with_stats)): you turn it on for the tables whose keys
//! you want to see, and a logical key is one series however many shards it has (the shard
//! suffix is stripped). Physical keys and items never become labels.
//!
//! ```
//! use sharded::telemetry;
//!
//! // A dashboard query, an alert or a test names what it reads from here.
//! assert_eq!(telemetry::OPERATION_DURATION, "db.client.operation.duration");
//! assert_eq!(telemetry::DB_SYSTEM_NAME_VALUE, "aws.dynamodb");
//! ```
//!
//! The guide's *Telemetry* chapter lists every span, field and metric with its unit and
//! labels, and shows a subscriber and a Prometheus recorder wired up.

mod context;
mod interceptor;
mod names;
mod request;

pub use names::*;

pub(crate) use context::within;

use aws_sdk_dynamodb::config::Intercept;
use aws_sdk_dynamodb::Client;

/// `client` with the request telemetry interceptor added (its HTTP client, retries and other
/// interceptors kept: the test kit's fault injection, which wraps the HTTP client, composes).
/// A client that already has it is returned as is, so a repository built from another's
/// client does not record every request twice.
pub(crate) fn instrument(client: Client) -> Client {
    let config = client.config();
    if config.interceptors().any(|i| i.name() == interceptor::NAME) {
        return client;
    }
    let config = config
        .to_builder()
        .interceptor(interceptor::RequestTelemetry)
        .build();
    Client::from_conf(config)
}

/// Records a scatter-gather's width: the partitions it reads.
pub(crate) fn fan_out(entity: &'static str, partitions: usize) {
    metrics::histogram!(FAN_OUT_WIDTH, ENTITY => entity).record(partitions as f64);
}

/// Records the items a scatter-gather read and did not return.
pub(crate) fn merge_waste(entity: &'static str, read: u64, emitted: u64) {
    let wasted = read.saturating_sub(emitted);
    if wasted > 0 {
        metrics::counter!(MERGE_WASTE, ENTITY => entity).increment(wasted);
    }
}

/// Records the shard requests a page resumed from a cursor sent.
pub(crate) fn cursor_resume(entity: &'static str, requests: u64) {
    metrics::histogram!(CURSOR_RESUME_REQUESTS, ENTITY => entity).record(requests as f64);
}

/// Records one item read in `entity`'s partitions that is not the entity's, by `reason`.
pub(crate) fn foreign_item(entity: &'static str, reason: &'static str) {
    metrics::counter!(FOREIGN_ITEMS, ENTITY => entity, FOREIGN_REASON => reason).increment(1);
}

/// Records `units` on a logical key (hot-key stats on).
pub(crate) fn key_units(index: Option<&str>, logical_key: &str, access: &'static str, units: f64) {
    metrics::histogram!(KEY_UNITS,
        LOGICAL_KEY => logical_key.to_owned(),
        INDEX => index.unwrap_or("").to_owned(),
        ACCESS => access)
    .record(units);
}

/// Records a throttle on a logical key (hot-key stats on).
pub(crate) fn key_throttle(index: Option<&str>, logical_key: &str, reason: &str) {
    metrics::counter!(KEY_THROTTLES,
        LOGICAL_KEY => logical_key.to_owned(),
        INDEX => index.unwrap_or("").to_owned(),
        THROTTLING_REASON => reason.to_owned())
    .increment(1);
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Config, Intercept};
    use aws_sdk_dynamodb::Client;

    fn ours(client: &Client) -> usize {
        client
            .config()
            .interceptors()
            .filter(|i| i.name() == super::interceptor::NAME)
            .count()
    }

    #[test]
    fn a_client_gets_the_interceptor_once() {
        let config = Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .build();
        let client = super::instrument(Client::from_conf(config));
        assert_eq!(ours(&client), 1);
        // A repository built from another repository's client records each request once.
        assert_eq!(ours(&super::instrument(client.clone())), 1);
    }
}

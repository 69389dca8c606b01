//! The operator crate's door: what `sharded-ops` (the migration runner, the hot-key report)
//! needs of the runtime's
//! internals, in one place. Not an API: no stability promise, hidden from the docs, and the
//! two crates are released together (`sharded-ops` pins this crate with `=x.y.z`).
//!
//! Kept small on purpose: the rules a migration shares with every read and write (which
//! items are the entity's, how one item moves, the guards its writes carry) stay here,
//! written once; the runner above them (scan, pacing, retries, checkpoints, counts, what an
//! item read is to it, its copy and its tag in place) is `sharded-ops`'. So are the steps of
//! a per-key layout change (`sharded-ops`' `layouts`): they read and write the directory's
//! item, whose format every process reads and is therefore here, and reach a
//! [`Layouts`](crate::layouts::Layouts)' handle through [`LayoutsParts`].

use std::time::Duration;

use aws_sdk_dynamodb::Client;

use crate::access::handle::Handle;
use crate::error::foreign::{ForeignItem, ForeignReason};
use crate::error::Error;
use crate::item::ItemKeyDisplay;

/// The setters `Scan` and `Migration` share (`segments`, `concurrency`, `page_size`,
/// `read_units_per_second`), for a builder with a field `options: ScanOptions`.
pub use crate::__scan_setters as scan_setters;
pub use crate::access::entity::{decode, recognize, spelled_otherwise};
pub use crate::access::layouts::{
    check_key, declared_n, max_n, stored as stored_directory, to_item, Stored as StoredDirectory,
};
pub use crate::access::options::ScanOptions;
pub use crate::access::placement::Placement;
pub use crate::access::read::scan::MAX_SEGMENTS;
pub use crate::access::recognize::{Depth, NotOurs};
pub use crate::access::write::moves::{
    delete_stale, is_marked, is_throttling_code, marked, move_item, rebuilt, refused, reported,
    throttled_or, DeleteOutcome, Holder, MoveOutcome, Prepared, Sent, Step, Store, Unchanged,
};
pub use crate::access::write::write_rules::key_of;
pub use crate::capacity::budget::UnitBudget;
pub use crate::capacity::stats::split_shard;
pub use crate::capacity::stats::window::{
    Bucket, ItemsWritten, KeyEntry, PerKeyOrigin, State, Window, BASE,
};
pub use crate::item::describe_key;
pub use crate::token::{
    decode as decode_token, encode as encode_token, verify_checksum, Malformed, Reader, Writer,
};

/// An item that is not the entity's, left where it is.
pub fn foreign_item(key: ItemKeyDisplay, reason: ForeignReason) -> ForeignItem {
    ForeignItem { key, reason }
}

/// The reason of an item that does not read as the entity, or whose fields give another key.
pub fn unreadable(reason: String) -> ForeignReason {
    ForeignReason::Unreadable { reason }
}

/// The reason of an item of the entity whose keys are not in canonical form.
pub fn not_canonical(reason: String) -> ForeignReason {
    ForeignReason::NotCanonical { reason }
}

/// Counts in the `sharded.foreign_items` metric one item that is not `entity`'s.
pub fn count_foreign_item(entity: &'static str, reason: &ForeignReason) {
    crate::telemetry::foreign_item(entity, reason.label());
}

/// Runs `future` in `span`, with the requests it sends parented to the span (the request
/// telemetry's interceptor reads it).
pub fn within<F: std::future::Future>(
    span: tracing::Span,
    future: F,
) -> impl std::future::Future<Output = F::Output> {
    crate::telemetry::within(span, None, future)
}

/// The runtime's error for an SDK error of `operation` on `table`.
pub fn dynamo_error<E>(operation: &'static str, table: &str, error: E) -> Error
where
    aws_sdk_dynamodb::Error: From<E>,
{
    Error::dynamo(operation, table, error)
}

/// Whether `error` says the table does not exist (nothing the runner retries).
pub fn is_missing_table(error: &Error) -> bool {
    error.is_missing_table()
}

/// What the steps of a layout change (`sharded-ops`) use of a [`Layouts`](crate::layouts::Layouts):
/// its table, the directory's clock, timing and cache, and the write budget of a key's
/// migration.
#[derive(Clone, Copy)]
pub struct LayoutsParts<'a> {
    handle: &'a Handle,
    /// The write units per second a key's migration keeps under (`None`: unlimited).
    pub write_units_per_second: Option<f64>,
}

/// The parts of `layouts` its steps use.
pub fn layouts_parts<E>(layouts: &crate::layouts::Layouts<E>) -> LayoutsParts<'_> {
    LayoutsParts {
        handle: layouts.handle(),
        write_units_per_second: layouts.write_budget(),
    }
}

/// `layouts`, its key migrations kept under `units` write units per second (`None`:
/// unlimited).
pub fn with_write_budget<E>(
    layouts: crate::layouts::Layouts<E>,
    units: Option<f64>,
) -> crate::layouts::Layouts<E> {
    layouts.with_write_budget(units)
}

impl LayoutsParts<'_> {
    /// The client the repository sends with.
    pub fn client(&self) -> &Client {
        self.handle.client()
    }

    /// The repository's table.
    pub fn table(&self) -> &str {
        self.handle.table()
    }

    /// The wall-clock time steps are stamped and checked with.
    pub fn step_now(&self) -> Duration {
        self.handle.layouts.step_now()
    }

    /// The lease and margin this repository reads the directory under.
    pub fn timing(&self) -> crate::layouts::LayoutTiming {
        self.handle.layouts.timing()
    }

    /// Forgets what this repository read of `entity`'s directory: its next request reads it
    /// again, so a step this process wrote is seen at once.
    pub fn forget(&self, entity: &'static str) {
        self.handle.layouts.forget(entity);
    }
}

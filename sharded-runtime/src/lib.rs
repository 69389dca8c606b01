//! Runtime of [`sharded`](https://docs.rs/sharded): the key model, the repository and its
//! scatter-gather engine, and the capacity tools, called by the code `#[derive(ShardedEntity)]`
//! generates.
//!
//! Use it through the `sharded` facade crate, which re-exports this crate's public items; this
//! crate is split out so generated code stays thin and the logic is written (and tested) once.
//!
//! The public surface is the list of re-exports below; the modules behind it are private, so
//! files can move without breaking anyone. Three concerns, three folders:
//!
//! | folder | what it holds | public as |
//! |---|---|---|
//! | `keys/` | the key model: encoding, templates, time buckets, the shard hash, schemas. No AWS types, no network | [`KeyPart`], [`Bucket`], [`Granularity`], [`ShardKeys`], [`KeyError`], [`hash`], [`schema`] |
//! | `access/` | data access: repository, query, range query over time buckets, scatter-gather engine, merge, cursor, parallel scan, batches, counter | [`Repo`], [`Query`], [`RangeQuery`], [`Page`], [`Cursor`], [`Scan`], [`ShardedCounter`], ... |
//! | `capacity/` | item size and units, per-key limits, the hot-key report, the planner | [`capacity`] |
//!
//! Test tooling (DynamoDB Local, fault injection, the per-key limit emulator) lives in the
//! `sharded-testkit` crate, so the code users deploy holds no process management and no
//! `unsafe`.
//!
//! ```
//! // The shard of player "player-1" among 10 shards, as any language computes it.
//! assert_eq!(sharded::hash::shard_of_bytes(b"player-1", 10), 0);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod access;
pub mod capacity;
mod error;
mod item;
mod keys;

pub use keys::hash;
pub use keys::schema;

pub use access::batch::RetryPolicy;
pub use access::condition::{Condition, Data, Elements, Field, Operand, PrimaryKey, Size};
pub use access::counter::ShardedCounter;
pub use access::cursor::{Cursor, CursorError, CursorKey, CursorKeyError};
pub use access::entity::{Item, ItemKeys, ShardedEntity};
pub use access::idempotent::{IDEMPOTENCY_WINDOW, MAX_TOKEN_CHARS};
pub use access::migrate::{
    Migration, MigrationCheckpoint, MigrationFailure, MigrationProgress, MigrationReport,
};
pub use access::query::{Answer, Page, Partial, Query, STREAM_PAGE_ITEMS};
pub use access::range::RangeQuery;
pub use access::read_cache::DEFAULT_CACHE_ITEMS;
pub use access::repo::{Repo, MAX_FAN_OUT};
pub use access::scan::Scan;
pub use access::scatter::ShardFailure;
pub use access::sort_condition::SortKeyCondition;
pub use access::source::{CollectionMember, Projection, QuerySource, ShardedCollection};
pub use access::transaction::{
    CanceledAction, ItemKey, PreparedTransaction, TransactGet, TransactGetAnswer, Transaction,
    MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES,
};
pub use access::update::{Addable, Removable, Updatable, Update};
pub use error::Error;
pub use item::ItemKeyDisplay;
pub use keys::bucket::{
    buckets_in_range, Bucket, BucketError, BucketRange, BucketTime, Granularity,
};
pub use keys::encoding::{KeyPart, KeyPartDecode, KeyPartError};
pub use keys::error::KeyError;
pub use keys::shards::{Partitions, ShardKeys};

#[doc(hidden)]
#[path = "__private.rs"]
pub mod __private;

/// Engine internals exposed for the project's own benchmarks (feature `bench-internals`).
/// Not a public API: no stability promise, hidden from the docs.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod __bench {
    pub use crate::access::merge::{top_k, SortValue};
}

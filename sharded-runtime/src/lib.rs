//! Runtime of [`sharded`](https://docs.rs/sharded): the key model, the repository and its
//! scatter-gather engine, and the capacity tools, called by the code `#[derive(ShardedEntity)]`
//! generates.
//!
//! Use it through the `sharded` facade crate, which re-exports this crate's public items; this
//! crate is split out so generated code stays thin and the logic is written (and tested) once.
//!
//! The public surface is what this file declares: the everyday names at the root, and the
//! modules named for what a user is doing (the `sharded` facade re-exports exactly these, so
//! each public name has one path). The folders behind them are private, so files can move
//! without breaking anyone. Three concerns, three folders:
//!
//! | folder | what it holds | public as |
//! |---|---|---|
//! | `keys/` | the key model: encoding, templates, time buckets, the shard hash, schemas. No AWS types, no network | [`KeyError`], [`keys`], [`bucket`], [`hash`], [`schema`] |
//! | `access/` | data access: repository, query, range query over time buckets, scatter-gather engine, merge, cursor, parallel scan, batches, transactions, an item's move between layouts, counter | [`Repo`], [`Query`], [`Page`], [`Cursor`], [`Condition`], [`Update`], [`ShardedCounter`], [`RetryPolicy`], [`query`], [`cursor`], [`condition`], [`update`], [`transaction`] |
//! | `capacity/` | item size and units, per-key limits, the hot-key collector, clocks | [`capacity`] |
//! | `error/` | the crate's error enum and the values its variants carry: cursors, transactions, items that are not the entity's | [`Error`], [`Result`], [`cursor::CursorError`] |
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
pub mod keys;
pub mod telemetry;
mod token;

#[doc(inline)]
pub use sharded_keys::hash;

/// The static description of an entity's keys, emitted by the derive, and the table it needs.
///
/// `#[derive(ShardedEntity)]` describes each entity as an [`EntitySchema`](schema::EntitySchema),
/// reachable as `<Entity as ShardedEntity>::SCHEMA`. The types are `#[non_exhaustive]`: their
/// fields can be read, and new kinds of layout can be added to them without breaking code
/// that reads them; generated code builds them with their `const fn` constructors. They are
/// the `sharded-keys` crate's; [`CreateTable`](schema::CreateTable) is the request that
/// creates a [`TableDefinition`](schema::TableDefinition) (an AWS type, so the runtime's).
pub mod schema {
    #[doc(inline)]
    pub use sharded_keys::schema::*;

    pub use crate::access::table::CreateTable;
}

pub use access::condition::Condition;
pub use access::engine::cursor::Cursor;
pub use access::entity::ShardedEntity;
pub use access::read::query::{Page, Query};
pub use access::repo::Repo;
pub use access::retry::RetryPolicy;
pub use access::source::{ShardedCollection, ShardedProjection};
pub use access::write::counter::ShardedCounter;
pub use access::write::update::Update;
pub use error::{Error, Result};
pub use sharded_keys::{KeyError, ShardedTable};

/// Reading: range queries over time buckets, scans, partial and shared answers, sort-key
/// conditions, and the bounds of a scatter-gather.
///
/// A [`Query`] comes from an entity's generated `query*` functions; the rest of
/// reading is here. [`RangeQuery`](crate::query::RangeQuery) reads a time range of a bucketed key
/// (`Entity::range(..)`), [`Scan`](crate::query::Scan) the whole table (`repo.scan()`), and a
/// [`SortKeyCondition`](crate::query::SortKeyCondition) (`Entity::sk_sort().eq(..).ge(..)`, from a [`TemplateSort`](crate::query::TemplateSort)) narrows a query to a range of its
/// sort key.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// use sharded::query::Partial;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
/// // The top 10 of scores 100 to 200, with what the shards that answered hold if one fails.
/// let top: Partial<Score> = Score::query(repo, "g1")
///     .sk(Score::sk_sort().between(100, 200))
///     .descending()
///     .limit(10)
///     .collect_partial()
///     .await?;
/// for failure in &top.failures {
///     eprintln!("shard {} is missing: {}", failure.shard, failure.error);
/// }
/// # Ok(()) }
/// ```
pub mod query {
    pub use crate::access::engine::scatter::ShardFailure;
    pub use crate::access::handle::MAX_FAN_OUT;
    pub use crate::access::read::bounds::{SortBound, WholeSortKey};
    pub use crate::access::read::query::{Answer, Around, Partial, Rank, STREAM_PAGE_ITEMS};
    pub use crate::access::read::range::RangeQuery;
    pub use crate::access::read::read_cache::DEFAULT_CACHE_ITEMS;
    pub use crate::access::read::scan::Scan;
    pub use crate::access::recognize::{Foreign, ForeignItem, ForeignReason, MAX_FOREIGN_EXAMPLES};
    pub use crate::access::sort_condition::{
        AttributeSort, EndsInLiteral, Held, NextSortAttribute, RangeSet, SortKeyCondition,
        StrictUpperBound, StringSortAttribute, TemplateSort, Unheld, WholeKeyEnd,
    };
    pub use crate::access::source::{CollectionMember, QuerySource};
    pub use crate::error::QueryRefusal;
}

/// Cursors handed to clients: sealing them with a key, and why one was refused.
///
/// A [`Cursor`] is the page token of [`Query::page`](crate::Query::page);
/// [`CursorKey`](crate::cursor::CursorKey) seals the cursors handed to untrusted clients
/// ([`Query::seal_cursors`](crate::Query::seal_cursors)), and [`CursorError`](crate::cursor::CursorError) says why a
/// cursor was refused.
///
/// ```
/// use sharded::cursor::CursorKey;
/// let key = CursorKey::new(b"32 random bytes from your secrets manager")?;
/// // During a rotation, the new key seals and the old one is still accepted.
/// let rotating = CursorKey::new(b"32 new random bytes from your secrets")?.accepting(&key);
/// # let _ = rotating;
/// # Ok::<(), sharded::cursor::CursorKeyError>(())
/// ```
pub mod cursor {
    pub use crate::access::engine::cursor::{CursorError, CursorKey, CursorKeyError};
}

/// The parts of typed conditions: fields, their operands, sizes and elements.
///
/// A [`Condition`] is built from an entity's fields (`Score::fields()`)
/// and used as a query filter, an update's or a transaction's condition, or a conditional
/// put or delete. The types here are what the fields and their comparisons are made of.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::{Condition, ShardedEntity};
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "USER#{user_id}")]
/// struct Wallet { user_id: String, coins: i64, tags: Vec<String> }
///
/// let f = Wallet::fields();
/// let rich: Condition<Wallet> = f.coins.ge(100).and(f.tags.size().lt(3));
/// # let _ = rich;
/// ```
pub mod condition {
    pub use crate::access::condition::{Data, Elements, Field, Operand, PrimaryKey, Size};
}

/// What typed updates are made of: which fields can be set, added to, or removed.
///
/// An [`Update`] comes from an entity's generated `update` function; these
/// traits say what each of its operations accepts.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let f = Wallet::fields();
/// Wallet::update(repo, "alice").add(f.coins, 5).send().await?;
/// # Ok(()) }
/// ```
pub mod update {
    pub use crate::access::write::update::{Addable, Removable, Updatable};
    pub use crate::error::UpdateRefusal;
}

/// All-or-nothing writes and snapshot reads across entities and shards, started from the
/// repository: [`repo.transaction()`](crate::Repo::transaction) and
/// [`repo.transact_get()`](crate::Repo::transact_get).
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let f = Wallet::fields();
/// repo.transaction()
///     .update(Wallet::update(repo, "alice").add(f.coins, -5).condition(f.coins.ge(5)))
///     .update(Wallet::update(repo, "bob").add(f.coins, 5))
///     .commit()
///     .await?;
/// # Ok(()) }
/// ```
pub mod transaction {
    pub use crate::access::write::idempotent::{IDEMPOTENCY_WINDOW, MAX_TOKEN_CHARS};
    pub use crate::access::write::transaction::{
        CanceledAction, ItemKey, PreparedTransaction, TransactGet, TransactGetAnswer, Transaction,
        MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES,
    };
    pub use crate::error::TransactionRefusal;
}

/// Per-key layouts: shard only what is hot.
///
/// An entity whose `#[pk]` declares `max_n` keeps every logical key at the declared `n`
/// (`n = 1`: one Query, one `GetItem`) except the keys the table's layout directory lists,
/// each at its own count up to `max_n`. [`Layouts`](crate::layouts::Layouts) (from `repo.layouts()`) reads what the
/// directory lists; [`LayoutTiming`](crate::layouts::LayoutTiming) sets the lease every process reads the directory under
/// (`Repo::with_layout_timing`). Widening or narrowing one key online is the operator's:
/// `sharded-ops`' `layouts::ChangeLayout` (`sharded::layouts::ChangeLayout` under the facade's
/// feature `ops`). The protocol and its timing assumptions are in the guide's "Shard only what
/// is hot".
///
/// ```
/// use sharded::layouts::{KeyEntry, Phase};
/// use sharded::schema::KeyLayout;
/// let widened = KeyEntry { from: 1, to: 20, phase: Phase::Steady, since: Default::default() };
/// assert_eq!(widened.layout(), KeyLayout::steady(20));
/// ```
pub mod layouts {
    pub use crate::access::layouts::{
        KeyEntry, LayoutTiming, Layouts, Phase, DIRECTORY_MARK, DIRECTORY_PREFIX,
    };
    pub use crate::error::layout::LayoutError;
}

/// Time buckets (hour, day, ISO week, month) of time-bucketed partition keys (`{at:day}`):
/// labels, arithmetic, ranges, and the times that can be bucketed.
///
/// ```
/// use sharded::bucket::{Bucket, Granularity};
/// let day = Bucket::containing(Granularity::Day, 1_763_856_000)?; // 2025-11-23T00:00:00Z
/// assert_eq!(day.label(), "2025-11-23");
/// # Ok::<(), sharded::bucket::BucketError>(())
/// ```
pub mod bucket {
    pub use crate::keys::bucket::{
        buckets_in_range, Bucket, BucketError, BucketRange, BucketTime, Granularity,
    };
}

#[doc(hidden)]
#[path = "__private.rs"]
pub mod __private;

#[doc(hidden)]
#[path = "__ops.rs"]
pub mod __ops;

/// Engine internals exposed for the project's own benchmarks (feature `bench-internals`).
/// Not a public API: no stability promise, hidden from the docs.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod __bench {
    pub use crate::access::engine::merge::{top_k, SortValue};

    /// Turns the read-ahead of streams and collects off (`false`) or back on, for this
    /// process: the "before" side of the stream benchmark (`benches/scale.rs`).
    pub fn set_read_ahead(on: bool) {
        crate::access::engine::scatter::READ_AHEAD.store(on, std::sync::atomic::Ordering::Relaxed);
    }
}

//! Compile-time checked write sharding and scatter-gather queries for DynamoDB single-table
//! designs.
//!
//! One partition key value is capped at about 1,000 write units/s and 3,000 read units/s.
//! `#[derive(ShardedEntity)]` spreads a hot logical key over `n` physical keys and generates
//! typed key builders, parsers and queries that read every shard concurrently and merge the
//! results in sort-key order.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sharded::ShardedEntity;
//!
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
//! #[sk(template = "SCORE#{score}#{player_id}")]
//! #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
//! struct Score { game_id: String, player_id: String, score: u64 }
//!
//! # fn main() -> Result<(), sharded::KeyError> {
//! let shard = Score::shard_for("player-1")?;               // stable: FNV-1a, see `hash`
//! assert_eq!(Score::pk("g1", "player-1")?, format!("GAME#g1#{shard}"));
//! assert_eq!(Score::sk(42, "player-1")?, "SCORE#00000000000000000042#player-1");
//! assert_eq!(Score::parse_pk("GAME#g1#7")?, ("g1".to_string(), 7));
//! assert_eq!(Score::pk_all_shards("g1")?.count(), 10);     // what a query reads
//! assert!(Score::pk("", "player-1").is_err());             // empty key values are refused
//! # Ok(()) }
//! ```
//!
//! With a [`Repo`] (built from any [`aws_sdk_dynamodb::Client`]), the same entity gets
//! `Score::get(&repo, ..)` (one `GetItem` on the right shard), `Score::query(&repo, "g1")` and
//! `Score::query_gsi1(&repo, "p1")` (scatter-gather [`Query`] builders), and `repo.put`,
//! `repo.batch_put`, ... . The README is the guide to the attributes, the key encoding and the
//! engine; [`hash`] is the complete shard hash specification, with test vectors, for services
//! written in other languages. Tests, examples and benchmarks run against DynamoDB Local
//! through the `sharded-testkit` crate, a dev-dependency: nothing of it ships with your service.
//!
//! The derive's attributes are documented on [`ShardedEntity`](derive@ShardedEntity).
//!
//! # Map
//!
//! The root holds what nearly every user names; the rest is in modules named for what you are
//! doing. Each public name has exactly one path.
//!
//! | at the root | what it is for |
//! |---|---|
//! | [`ShardedEntity`](derive@ShardedEntity), [`ShardedCollection`](derive@ShardedCollection), [`ShardedProjection`](derive@ShardedProjection) (derives and their traits) | declaring an entity's keys; several entities read together; some of an entity's fields |
//! | [`Repo`] | puts, point lookups, deletes, batches, scans, transactions and migrations of one entity in one table |
//! | [`Query`], [`Page`], [`Cursor`] | scatter-gather queries, cursor pages, the page token |
//! | [`Condition`], [`Update`] | typed conditions (`Score::fields()`) and updates (`Score::update(&repo, ..)`) |
//! | [`Error`], [`KeyError`], [`Result`] | what went wrong, with what the caller needs to recover; `Result<T>` is `Result<T, Error>` |
//! | [`ShardedCounter`], [`RetryPolicy`] | the vote-counter pattern; the retry budget of batches |
//! | [`aws_sdk_dynamodb`] | the SDK crate `Repo` is built on, at the matching version |
//!
//! | module | what you are doing |
//! |---|---|
//! | [`query`] | reading beyond one query: time ranges ([`RangeQuery`](query::RangeQuery)), scans, partial and shared answers, sort-key conditions, collections |
//! | [`cursor`] | handing page tokens to untrusted clients: sealing keys, why a cursor was refused |
//! | [`condition`] | the parts of typed conditions: fields, operands, sizes |
//! | [`update`] | what typed updates accept |
//! | [`transaction`] | all-or-nothing writes and snapshot reads (`repo.transaction()`, `repo.transact_get()`) |
//! | [`layouts`] | per-key layouts (`max_n` on `#[pk]`): the layout directory (`repo.layouts()`), and widening or narrowing one key online (`use sharded::layouts::ChangeLayout`) |
//! | [`migrate`] | changing a key's layout (`previous_n`, `legacy`): the runner (`use sharded::migrate::Migrate` for `repo.migrate()`), its progress, report and checkpoints |
//! | [`bucket`] | time buckets of time-bucketed keys (`{at:day}`) |
//! | [`keys`] | how values become keys (`KeyPart` for your own types), the physical keys of a logical key, items |
//! | [`hash`] | the shard hash specification, with test vectors and a reference implementation |
//! | [`schema`] | the static description of an entity's keys; table definitions |
//! | [`capacity`] | item size and units, per-key limits, the hot-key report, the shard planner, the layout policy that widens hot keys on its own |
//! | `streams` (feature `streams`) | stream records read back as typed changes of an entity, layout moves told apart, totals kept from the stream exactly once |
//! | [`telemetry`] | the names of the spans (OpenTelemetry's DynamoDB attributes) and metrics (`metrics` facade) the library emits |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod guide;

pub use sharded_derive::{ShardedCollection, ShardedEntity, ShardedProjection, ShardedTable};

pub use sharded_runtime::{
    Condition, Cursor, Error, KeyError, Page, Query, Repo, Result, RetryPolicy, ShardedCollection,
    ShardedCounter, ShardedEntity, ShardedProjection, ShardedTable, Update,
};

pub use sharded_runtime::{
    bucket, condition, cursor, hash, keys, query, schema, telemetry, transaction, update,
};

// The migration runner (`sharded-ops`) with what it hands back; without the `ops` feature
// there is no `migrate` (the runner is not compiled, and nothing of the runtime's carries a
// migration's report).
#[cfg(feature = "ops")]
pub use sharded_ops::migrate;

// Stream records read back as typed changes, and totals kept from the stream (feature
// `streams`; `streams-sdk` and `streams-lambda` add the two inputs).
#[cfg(feature = "streams")]
#[doc(inline)]
pub use sharded_streams as streams;

pub mod capacity {
    //! Capacity: what a request costs, what one key can take, where the load goes and what to do
    //! about it.
    //!
    //! - **Units**: [`item_size`], [`write_units`], [`read_units`]: DynamoDB's arithmetic,
    //!   defined once and used by the repository, the report, the planner and the test kit.
    //! - **Limits**: [`PerKeyLimits`], the per-partition-key cap that sharding works around.
    //! - **The hot-key report**: [`HotKeyStats`] collects consumed capacity per physical key
    //!   (attach it with `Repo::with_stats`); [`HotKeyReport`] names the hot keys and what to do
    //!   (`stats.report()`, with [`ReportHotKeys`] in scope): per logical key
    //!   ([`LogicalKeyReport`]: shards rolled up, per-second peak and p99 against the per-key
    //!   limits, throttles by `ThrottlingReasons` reason, shard spread, a [`HotKeyPattern`] and
    //!   [`Advice`]), as a table (`Display`) or JSON ([`HotKeyReport::to_json`]), keys hashed on
    //!   request ([`HotKeyReport::redact`]).
    //! - **Recordings**: [`Recording`] is a collector's window as data (JSON), to report on
    //!   later or elsewhere, or read from a CloudWatch Contributor Insights rule report
    //!   ([`Recording::from_contributor_insights`]).
    //! - **Table caps**: [`TableCaps`] reads a table's warm throughput, on-demand maximum and
    //!   provisioned capacity (`DescribeTable`) and names the `UpdateTable` a load needs.
    //! - **The planner**: [`plan`] turns a peak load into a shard count, showing its arithmetic.
    //! - **The layout policy**: [`LayoutPolicy`] widens a per-key entity's hot keys (`max_n`)
    //!   to the planner's count and narrows them back once cold, on its own once started
    //!   ([`LayoutPolicy::run`]). It lives here, not in [`layouts`](crate::layouts), because it
    //!   is the operator's (`ops`): it reads the collector's load and the planner's arithmetic,
    //!   while `layouts` is what every service runs on each request.
    //! - **Time**: [`Clock`], so rates can be tested with a [`ManualClock`].
    //!
    //! The units, limits, the collector and clocks are what a service runs (`sharded-runtime`);
    //! the report, recordings, table caps, the planner and the layout policy are the
    //! operator's (`sharded-ops`, the default feature `ops`): a service built with
    //! `default-features = false` still records with [`HotKeyStats`] and leaves the rest out
    //! of its build.
    //!
    //! ```
    //! use sharded::capacity::{plan, PlanInput};
    //! // A viral game: 7,000 writes/s of 1 KB scores onto one logical key.
    //! let plan = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
    //! assert_eq!(plan.base.derive_n(), Some(10));
    //! ```

    #[doc(inline)]
    pub use sharded_runtime::capacity::*;

    #[cfg(feature = "ops")]
    #[doc(inline)]
    pub use sharded_ops::capacity::*;
}

pub mod layouts {
    //! Per-key layouts: shard only what is hot.
    //!
    //! An entity whose `#[pk]` declares `max_n` keeps every logical key at the declared `n`
    //! (`n = 1`: one Query, one `GetItem`) except the keys the table's layout directory lists,
    //! each at its own count up to `max_n`. The protocol and its timing assumptions are in the
    //! guide's [Shard only what is hot](crate::guide::per_key).
    //!
    //! - **What every service runs**: the directory, read under a lease ([`LayoutTiming`],
    //!   `Repo::with_layout_timing`), and what it lists: [`Layouts`] from `repo.layouts()`,
    //!   with [`entries`](Layouts::entries) and [`layout`](Layouts::layout); a directory entry
    //!   is a [`KeyEntry`] in a [`Phase`].
    //! - **What an operator runs**: the steps that widen or narrow one key online,
    //!   [`ChangeLayout`] (`begin`, `advance`, `migrate`, `finish`, and `change`, which runs them
    //!   all), and what a key's migration did, [`KeyMigration`]. They are `sharded-ops`' (the
    //!   default feature `ops`): `repo.layouts()` gains them where `ChangeLayout` is imported,
    //!   and a service built with `default-features = false` does not compile them.
    //!
    //! ```
    //! use sharded::layouts::{KeyEntry, Phase};
    //! use sharded::schema::KeyLayout;
    //! let widened = KeyEntry { from: 1, to: 20, phase: Phase::Steady, since: Default::default() };
    //! assert_eq!(widened.layout(), KeyLayout::steady(20));
    //! ```

    #[doc(inline)]
    pub use sharded_runtime::layouts::*;

    #[cfg(feature = "ops")]
    #[doc(inline)]
    pub use sharded_ops::layouts::*;
}

/// The AWS SDK for DynamoDB, at the version [`Repo`] is built on: build the `Client` you give
/// `Repo::new` from this path, and no version mismatch can arise.
///
/// ```no_run
/// # async fn demo(config: &aws_config::SdkConfig) {
/// let client = sharded::aws_sdk_dynamodb::Client::new(config);
/// # }
/// ```
pub use aws_sdk_dynamodb;

#[doc(hidden)]
pub use sharded_runtime::__private;

/// The README's code blocks, compiled by `cargo test` so the front page cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

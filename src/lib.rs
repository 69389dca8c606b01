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
//! # What this crate exports
//!
//! | item | what it is for |
//! |---|---|
//! | [`ShardedEntity`](derive@ShardedEntity) (derive) and [`ShardedEntity`] (trait) | declaring an entity's keys; the generated key builders and queries |
//! | [`Repo`], [`MAX_FAN_OUT`] | puts, point lookups, deletes and batches of one entity in one table; how wide a query fans out by default |
//! | [`Query`], [`Answer`], [`DEFAULT_CACHE_ITEMS`], [`Page`], [`Partial`], [`Cursor`], [`SortKeyCondition`], [`ShardFailure`], [`STREAM_PAGE_ITEMS`] | scatter-gather queries: results, pages, partial answers, hot reads shared and cached |
//! | [`RangeQuery`] | a time range over a time-bucketed partition key (`{at:day}`): every bucket of `[from, to)`, read concurrently and merged in time order, one cursor across buckets and shards |
//! | [`Bucket`], [`Granularity`], [`BucketTime`], [`BucketError`], [`buckets_in_range`], [`BucketRange`] | time buckets: labels (`2026-11-22`), arithmetic, the times that can be bucketed |
//! | [`ShardedCollection`](derive@ShardedCollection) (derive) and [`ShardedCollection`], [`CollectionMember`], [`QuerySource`] | several entities of one partition in one answer (`Query::collection`) |
//! | [`ShardedProjection`](derive@ShardedProjection) (derive) and [`Projection`] | reading some of an entity's attributes (`Query::project`) |
//! | [`Condition`], [`Field`], [`Data`], [`PrimaryKey`], [`Operand`], [`Size`], [`Elements`] | typed conditions over an entity's fields (`Score::fields()`): query filters, update and transaction conditions |
//! | [`Update`], [`Updatable`], [`Addable`], [`Removable`] | typed updates (`Score::update(&repo, ..)`) |
//! | [`Transaction`], [`PreparedTransaction`], [`CanceledAction`], [`MAX_TRANSACTION_ACTIONS`], [`MAX_TRANSACTION_BYTES`] | all-or-nothing writes across entities and shards, retried as the identical request |
//! | [`IDEMPOTENCY_WINDOW`], [`MAX_TOKEN_CHARS`] | how long DynamoDB remembers a `ClientRequestToken`, and its longest form |
//! | [`TransactGet`], [`TransactGetAnswer`], [`ItemKey`] | a transactional read of items by key (`Score::key(..)`) |
//! | [`Scan`] | the parallel scan of one entity (`repo.scan()`): exports, backfills, analytics; bounded concurrency, a read-unit rate limit |
//! | [`Migration`], [`MigrationProgress`], [`MigrationReport`], [`MigrationFailure`], [`MigrationCheckpoint`] | changing the layout (`previous_n`, `legacy`): moving every item to its current place (`repo.migrate()`), paced, resumable, observable |
//! | [`CursorKey`], [`CursorKeyError`] | the key that seals cursors handed to untrusted clients (`Query::seal_cursors`), with the older keys it accepts during a rotation; why a secret was refused as a key |
//! | [`ShardedCounter`] | the vote-counter pattern: a counter spread over shards |
//! | [`RetryPolicy`] | the retry budget of batch writes and reads |
//! | [`Error`], [`KeyError`], [`CursorError`], [`ItemKeyDisplay`] | what went wrong, with what the caller needs to recover |
//! | [`KeyPart`], [`KeyPartDecode`], [`KeyPartError`] | how a value is written into a key; implement them for your own key types |
//! | [`ShardKeys`], [`Partitions`], [`Item`], [`ItemKeys`] | the physical keys of a logical key (with a previous layout's, during a transition); an item and its key attributes |
//! | [`hash`] | the shard hash specification, with test vectors and a reference implementation |
//! | [`schema`] | the static description of an entity's keys; table definitions |
//! | [`capacity`] | item size and units, per-key limits, the hot-key report, the shard planner |
//! | [`aws_sdk_dynamodb`] | the SDK crate `Repo` is built on, at the matching version |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use sharded_derive::{ShardedCollection, ShardedEntity, ShardedProjection};

pub use sharded_runtime::{
    buckets_in_range, capacity, hash, schema, Addable, Answer, Bucket, BucketError, BucketRange,
    BucketTime, CanceledAction, CollectionMember, Condition, Cursor, CursorError, CursorKey,
    CursorKeyError, Data, Elements, Error, Field, Granularity, Item, ItemKey, ItemKeyDisplay,
    ItemKeys, KeyError, KeyPart, KeyPartDecode, KeyPartError, Migration, MigrationCheckpoint,
    MigrationFailure, MigrationProgress, MigrationReport, Operand, Page, Partial, Partitions,
    PreparedTransaction, PrimaryKey, Projection, Query, QuerySource, RangeQuery, Removable, Repo,
    RetryPolicy, Scan, ShardFailure, ShardKeys, ShardedCollection, ShardedCounter, ShardedEntity,
    Size, SortKeyCondition, TransactGet, TransactGetAnswer, Transaction, Updatable, Update,
    DEFAULT_CACHE_ITEMS, IDEMPOTENCY_WINDOW, MAX_FAN_OUT, MAX_TOKEN_CHARS, MAX_TRANSACTION_ACTIONS,
    MAX_TRANSACTION_BYTES, STREAM_PAGE_ITEMS,
};

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

//! Data access: the repository, the scatter-gather engine and what it needs.
//!
//! | file | what it holds |
//! |---|---|
//! | [`entity`] | the `ShardedEntity` trait and item conversion |
//! | [`repo`] | `Repo`: puts, point lookups, deletes and batches of one entity |
//! | [`query`] | `Query`: the typed scatter-gather query builder |
//! | [`range`] | `RangeQuery`: a time range over bucketed partition keys, bucket after bucket |
//! | [`sort_condition`] | typed sort-key conditions: a field range turned into key bounds |
//! | [`read_cache`] | hot reads: identical concurrent queries share one scatter-gather; answers of bounded age from a bounded cache |
//! | [`scatter`] | the engine: bounded concurrent fan-out, lazy per-shard paging |
//! | [`scan`] | `Scan`: the parallel scan of one entity, with a read-unit rate limit |
//! | [`merge`] | the k-way heap merge in DynamoDB's sort order |
//! | [`cursor`] | the versioned, integrity-checked cross-shard cursor |
//! | `description` | the canonical description of a query, which its cursors are bound to |
//! | [`placement`] | where an item lives during a layout transition, and how each operation treats its previous place |
//! | [`write_rules`] | the rules every write obeys: entity guard, version, timestamps, item and key sizes, tokens |
//! | [`idempotent`] | the one way a transaction is sent: with a token, and sent again identical while its outcome is unknown |
//! | [`batch`] | batch writes and reads with retries that lose nothing |
//! | [`counter`] | `ShardedCounter`: the vote-counter pattern |
//! | [`table`] | creating a table from a table definition |

pub mod batch;
pub mod clock_values;
pub mod condition;
pub mod counter;
pub mod cursor;
pub(crate) mod description;
pub mod entity;
pub(crate) mod idempotent;
pub mod merge;
pub mod migrate;
pub(crate) mod options;
pub(crate) mod placement;
pub mod query;
pub mod range;
pub(crate) mod read_cache;
pub mod repo;
pub mod scan;
pub mod scatter;
pub mod sort_condition;
pub mod source;
pub mod table;
pub mod transaction;
pub mod update;
pub(crate) mod write_rules;

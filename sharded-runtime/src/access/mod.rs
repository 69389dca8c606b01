//! Data access: the repository, the scatter-gather engine and what it needs.
//!
//! The builders (`Query`, `RangeQuery`, `Scan`, `Update`, `Transaction`) hold the repository's
//! [`handle`], not the repository: they import it, and `repo` imports them, so no builder and
//! the repository import each other.
//!
//! Every module here is `pub(crate)`: users reach what they need through the crate root and
//! its public modules (`query`, `cursor`, `condition`, `update`, `transaction`), which
//! re-export the items; the operator crate (`sharded-ops`) through the hidden `__ops`.
//!
//! | file | what it holds |
//! |---|---|
//! | [`entity`] | the `ShardedEntity` trait, item conversion, and the entity's side of recognition (whose items are its own) |
//! | [`handle`] | what `Repo` and every builder share behind one `Arc`: client, table, settings, read cache, stats |
//! | [`repo`] | `Repo`: its configuration (`mod.rs`), and its operations by kind: `admin`, `read`, `write`, `batches` |
//! | [`query`] | `Query`: the typed scatter-gather query builder |
//! | [`range`] | `RangeQuery`: a time range over bucketed partition keys, bucket after bucket |
//! | [`bounds`] | whole-key bounds (`after`, `before`, `from`, `to`): the closest key condition, and the range every item read is checked against |
//! | [`sort_condition`] | the typed sort-key conditions, re-exported from `sharded-keys` (key arithmetic: a field range turned into key bounds; the one check of an inverted range) |
//! | [`options`] | the settings two builders share (`Query`/`RangeQuery`, `Scan` and the migration of `sharded-ops`), and the macros that write their setters once |
//! | [`source`] | what a query reads and returns: an entity, a collection, a projection |
//! | [`condition`] | typed conditions over an entity's fields |
//! | [`update`] | typed updates |
//! | [`transaction`] | write transactions and transactional reads, started from the repository |
//! | [`migrate`] | the runtime's part of a migration: one item's move (which a write during a transition makes too) and what an item read is to a migration; the runner is `sharded-ops`' |
//! | [`clock_values`] | the values written into `created_at` / `updated_at` attributes |
//! | [`read_cache`] | hot reads: identical concurrent queries share one scatter-gather; answers of bounded age from a bounded cache |
//! | [`scatter`] | the engine: bounded concurrent fan-out, lazy per-shard paging |
//! | [`scan`] | `Scan`: the parallel scan of one entity, with a read-unit rate limit |
//! | [`merge`] | the k-way heap merge in DynamoDB's sort order |
//! | [`cursor`] | the versioned, integrity-checked cross-shard cursor |
//! | `description` | the canonical description of a query, which its cursors are bound to |
//! | [`recognize`] | which items are the entity's (by tag, or by keys): the rule's vocabulary, and what every read does with the foreign ones |
//! | [`placement`] | where an item lives during a layout transition, and how each operation treats its previous place |
//! | [`settle`] | what a write does about the previous place: its guarded delete, its vacancy check, the settle that moves an item first |
//! | [`write_rules`] | the rules every write obeys: entity guard, version, timestamps, item and key sizes, tokens |
//! | [`idempotent`] | the one way a transaction is sent: with a token, and sent again identical while its outcome is unknown |
//! | [`batch`] | batch writes and reads with retries that lose nothing |
//! | [`retry`] | the retry budget (`RetryPolicy`) and which errors are worth another attempt |
//! | [`counter`] | `ShardedCounter`: the vote-counter pattern |
//! | [`table`] | creating a table from a table definition |

pub(crate) mod batch;
pub(crate) mod bounds;
pub(crate) mod clock_values;
pub(crate) mod condition;
pub(crate) mod counter;
pub(crate) mod cursor;
pub(crate) mod description;
pub(crate) mod entity;
pub(crate) mod handle;
pub(crate) mod idempotent;
pub(crate) mod item_key;
pub(crate) mod layouts;
pub(crate) mod merge;
pub(crate) mod migrate;
pub(crate) mod options;
pub(crate) mod placement;
pub(crate) mod query;
pub(crate) mod range;
pub(crate) mod read_cache;
pub(crate) mod recognize;
pub(crate) mod repo;
pub(crate) mod retry;
pub(crate) mod scan;
pub(crate) mod scatter;
pub(crate) mod settle;
pub(crate) use crate::keys::sort_condition;
pub(crate) mod source;
pub(crate) mod table;
pub(crate) mod transaction;
pub(crate) mod update;
pub(crate) mod write_rules;

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
//! | [`repo`] | `Repo`: its configuration (`mod.rs`), and its operations by kind: `admin`, `read`, `write`, `batches`, `replace` |
//! | [`read`] | the reads, one per file: `query` (the builder, and `plan`), `range`, `scan`, `bounds` (rank and neighbours), `batch`, `read_cache` (single flight and the cache of hot answers) |
//! | [`write`](mod@write) | the writes, one per file: `update`, `transaction` and `idempotent` (how it is sent again), `counter` (the vote-counter pattern), `write_rules` (the guards every write carries), `settle` (what a write does about the previous place), `moves` (one item's move, shared with the operator's migration) |
//! | [`engine`] | the scatter-gather engine: `scatter` (fan-out, per-shard paging, what a transition adds), `merge` (the k-way merge in DynamoDB's sort order), `cursor`, `description` (what a cursor is bound to) |
//! | [`sort_condition`] | the typed sort-key conditions, re-exported from `sharded-keys` (key arithmetic: a field range turned into key bounds; the one check of an inverted range) |
//! | [`options`] | the settings two builders share (`Query`/`RangeQuery`, `Scan` and the migration of `sharded-ops`), and the macros that write their setters once |
//! | [`source`] | what a query reads and returns: an entity, a collection, a projection |
//! | [`condition`] | typed conditions over an entity's fields |
//! | [`layouts`] | per-key layouts: the directory, what a process read of it and when |
//! | [`clock_values`] | the values written into `created_at` / `updated_at` attributes |
//! | [`recognize`] | which items are the entity's (by tag, or by keys): the rule's vocabulary, and what every read does with the foreign ones |
//! | [`placement`] | where an item lives during a layout transition, and how each operation treats its previous place |
//! | [`item_key`] | one item's key in a transaction or a point read, with its previous place |
//! | [`retry`] | the retry budget (`RetryPolicy`) and which errors are worth another attempt |
//! | [`table`] | creating a table from a table definition |

pub(crate) mod clock_values;
pub(crate) mod condition;
pub(crate) mod engine;
pub(crate) mod entity;
pub(crate) mod handle;
pub(crate) mod item_key;
pub(crate) mod layouts;
pub(crate) mod options;
pub(crate) mod placement;
pub(crate) mod read;
pub(crate) mod recognize;
pub(crate) mod repo;
pub(crate) mod retry;
pub(crate) use crate::keys::sort_condition;
pub(crate) mod source;
pub(crate) mod table;
pub(crate) mod write;

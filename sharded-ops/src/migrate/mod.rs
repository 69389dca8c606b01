//! Changing a key's layout (`previous_n`, `legacy`): the migration runner
//! ([`repo.migrate()`](Migrate::migrate)), its progress, report and checkpoints.
//!
//! While an entity declares a previous layout, reads cover both layouts and writes go to the
//! current one; a [`Migration`] moves every item still at its previous place to its current
//! place, so the declaration can be removed. It is an operator's tool, so `Repo` gains
//! `migrate()` through the [`Migrate`] trait: import it where a migration runs.
//!
//! ```no_run
//! # use serde::{Deserialize, Serialize};
//! # use sharded::{Error, Repo, ShardedEntity};
//! use sharded::migrate::{Migrate, Report};
//! # #[derive(ShardedEntity, Serialize, Deserialize)]
//! # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
//! # #[sk(template = "SCORE#{score}#{player_id}")]
//! # struct Score { game_id: String, player_id: String, score: u64 }
//! # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
//! let report: Report = repo.migrate().write_units_per_second(300.0).run().await?;
//! println!("{} moved", report.progress.moved);
//! # Ok(()) }
//! ```
//!
//! What a run hands back ([`Report`], [`Progress`], [`Failure`], [`Rekeyed`], [`Checkpoint`])
//! is also what `Error::MigrationIncomplete` carries, so a service built without the `ops`
//! feature can still name it.

// The files (not a promise, as the list of `pub use` below is):
//
// | file | what it holds |
// |---|---|
// | `migration` | [`Migration`], the builder: scope, budget, hooks; [`Migrate`], which adds it to `Repo` |
// | `runner` | the run (`Migration::run`, `remaining`): parts read concurrently, each page's items moved, retried, counted |
// | `pages` | where items come from: scan segments, or one logical key's partitions |
// | `retry` | which failures are tried again, and the wait before |
// | `resume` | a checkpoint taken back only by the migration that wrote it |
// | `metrics` | the run's counts in the `sharded.migration.items` metric |
// | `remaining` | [`Remaining`], what is left to move, counted without moving |
//
// What a run hands back is the runtime's (`error/migration/`, beside the error that carries
// it), re-exported here; so are one item's move (also what a write during a transition does
// first) and what an item read is to a migration, which every read and write must agree with
// (reached through the runtime's hidden `__ops`).

mod metrics;
mod migration;
mod pages;
mod remaining;
mod resume;
mod retry;
mod runner;

pub use migration::{Migrate, Migration};
pub use remaining::Remaining;
pub use sharded_runtime::migrate::{Checkpoint, Failure, Progress, Rekeyed, Report};

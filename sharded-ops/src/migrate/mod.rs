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
//! # use sharded::{Repo, ShardedEntity};
//! use sharded::migrate::{Migrate, MigrateError, Report};
//! # #[derive(ShardedEntity, Serialize, Deserialize)]
//! # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
//! # #[sk(template = "SCORE#{score}#{player_id}")]
//! # struct Score { game_id: String, player_id: String, score: u64 }
//! # async fn demo(repo: &Repo<Score>) -> Result<(), MigrateError> {
//! let report: Report = repo.migrate().write_units_per_second(300.0).run().await?;
//! println!("{} moved", report.progress.moved);
//! # Ok(()) }
//! ```
//!
//! What a run hands back is a [`Report`] (its [`Progress`], [`Failure`]s, [`Rekeyed`] items and
//! [`Checkpoint`]), or a [`MigrateError`]: [`MigrateError::Incomplete`] carries the report of
//! a run that could not move everything.

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
// | `report` | what a run did: [`Progress`], [`Report`], [`Failure`], [`Rekeyed`] |
// | `checkpoint` | [`Checkpoint`], where a run is, and its token's format |
// | `error` | [`MigrateError`], what the entry points return when a run does not finish |
// | `classify` | what an item read is to a migration: the entity's to move, tag or leave, another record, or an item that is not the entity's, left alone |
// | `steps` | the runner's own writes: the copy that starts a move in two steps, the tag of an item in place |
// | `remaining` | [`Remaining`], what is left to move, counted without moving |
// | `units` | [`Unit`] and [`Plan`]: a migration cut into units any process runs, the fleet's budget, the estimate |
// | `records` | each unit's checkpoint and counts, recorded in the table; [`PlanStatus`] read from them |
//
// One item's move (also what a write during a transition does first) and what an item read
// is to a migration, which every read and write must agree with, are the runtime's (reached
// through its hidden `__ops`).

mod checkpoint;
mod classify;
mod error;
mod metrics;
mod migration;
mod pages;
mod records;
mod remaining;
mod report;
mod resume;
mod retry;
mod runner;
mod steps;
mod units;

pub use checkpoint::{Checkpoint, CheckpointError};
pub use error::{MigrateError, MigrationRefusal};
pub use migration::{Migrate, Migration};
pub use records::{PlanStatus, UnitProgress, UnitState, UnitStatus};
pub use remaining::Remaining;
pub use report::{Failure, Progress, Rekeyed, Report};
pub use units::{Estimate, Plan, Unit};

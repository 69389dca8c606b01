//! Changing one key's per-key layout online (`max_n` on `#[pk]`): the steps `begin`,
//! `advance`, `migrate` and `finish`, and `change`, which runs them all
//! ([`ChangeLayout`]); what a key's migration did ([`KeyMigration`]).
//!
//! Every service reads the layout directory to place its reads and writes, so the directory,
//! its cache and the protocol of a change are the runtime's (`sharded::layouts`, with
//! `repo.layouts()` and its read-only `entries` and `layout`). Only an operator (a person, a
//! job, the [`LayoutPolicy`](crate::capacity::LayoutPolicy)) changes a key, so the steps are
//! here: `repo.layouts()` gains them where [`ChangeLayout`] is imported.
//!
//! ```no_run
//! # use serde::{Deserialize, Serialize};
//! # use sharded::{Error, Repo, ShardedEntity};
//! use sharded::layouts::ChangeLayout;
//! # #[derive(ShardedEntity, Serialize, Deserialize)]
//! # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
//! # #[sk(template = "SCORE#{score}#{player_id}")]
//! # struct Score { game_id: String, player_id: String, score: u64 }
//! # async fn demo(repo: Repo<Score>) -> Result<(), Error> {
//! let moved = repo.layouts().with_write_budget(300.0).change("GAME#g1", 20).await?;
//! println!("{} items moved", moved.moved);
//! # Ok(()) }
//! ```

// | file | what it holds |
// |---|---|
// | `steps` | each step: its checks (the key, the phase, the wait), its write of the directory; `change`, the steps run in turn |
// | `moves` | [`KeyMigration`], and the migration of one key: its items at the previous count moved to their places at the new one |

mod moves;
mod steps;

use std::future::Future;

use sharded_runtime::__ops;
use sharded_runtime::layouts::{KeyEntry, Layouts};
use sharded_runtime::schema::KeyLayout;
use sharded_runtime::{Error, ShardedEntity};

pub use moves::KeyMigration;

/// Adds the steps that widen or narrow one key online to
/// [`Layouts`] (`repo.layouts()`): changing a layout is an
/// operator's action (this crate, `sharded-ops`), so the runtime's `Layouts` gains it where
/// this trait is imported.
///
/// A change is [`begin`](Self::begin), [`advance`](Self::advance), [`migrate`](Self::migrate)
/// and [`finish`](Self::finish), each at least a lease and a margin after the one before
/// ([`LayoutTiming`](sharded_runtime::layouts::LayoutTiming)); [`change`](Self::change) runs
/// them all, waiting as needed, and resumes a change that stopped half way. Every step can be
/// run again, by any process: a step that does not follow the key's phase is refused, saying
/// which step does.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// use sharded::layouts::ChangeLayout;
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// # async fn demo(repo: Repo<Score>) -> Result<(), Error> {
/// // The viral game: 20 shards, while writers and readers keep running.
/// let moved = repo.layouts().change("GAME#g1", 20).await?;
/// println!("{} items moved", moved.moved);
/// # Ok(()) }
/// ```
pub trait ChangeLayout<E>: sealed::Sealed {
    /// Keeps a key's migration under `units` write units per second (what its moves use,
    /// copies and deletes): a hot key's partitions are busy already. Unlimited by default.
    fn with_write_budget(self, units: f64) -> Self;

    /// Starts changing `key` to `to` shards: the `reading` phase (both counts read, the
    /// current one written). The key must be steady and `to` differ from its count.
    fn begin(&self, key: &str, to: u32) -> impl Future<Output = Result<KeyEntry, Error>> + Send;

    /// `reading` -> `writing`: writes go to the new count. Refused until `reading` is a lease
    /// and a margin old (every process reads both counts by then).
    fn advance(&self, key: &str) -> impl Future<Output = Result<KeyEntry, Error>> + Send;

    /// Moves every item of `key` still at the previous count to its place at the new count.
    /// Refused until `writing` is a lease and a margin old (no process writes at the previous
    /// count by then). Resumable: a run that stopped is run again, and finds what is left.
    fn migrate(&self, key: &str) -> impl Future<Output = Result<KeyMigration, Error>> + Send;

    /// Ends the change: the key is steady at its new count (its entry removed when that is
    /// the declared `n`). Refused while an item of the key is left at the previous count.
    fn finish(&self, key: &str) -> impl Future<Output = Result<KeyLayout, Error>> + Send;

    /// Changes `key` to `to` shards online: every step, each when it may run (sleeping in
    /// between), the migration run until nothing is left. Resumes a change to `to` that
    /// stopped half way, and does nothing for a key already at `to`. Returns what the
    /// migration did.
    fn change(
        &self,
        key: &str,
        to: u32,
    ) -> impl Future<Output = Result<KeyMigration, Error>> + Send;
}

impl<E: ShardedEntity> ChangeLayout<E> for Layouts<E> {
    fn with_write_budget(self, units: f64) -> Self {
        __ops::with_write_budget(self, Some(units))
    }

    fn begin(&self, key: &str, to: u32) -> impl Future<Output = Result<KeyEntry, Error>> + Send {
        steps::begin(self, key, to)
    }

    fn advance(&self, key: &str) -> impl Future<Output = Result<KeyEntry, Error>> + Send {
        steps::advance(self, key)
    }

    fn migrate(&self, key: &str) -> impl Future<Output = Result<KeyMigration, Error>> + Send {
        steps::migrate(self, key)
    }

    fn finish(&self, key: &str) -> impl Future<Output = Result<KeyLayout, Error>> + Send {
        steps::finish(self, key)
    }

    fn change(
        &self,
        key: &str,
        to: u32,
    ) -> impl Future<Output = Result<KeyMigration, Error>> + Send {
        steps::change(self, key, to)
    }
}

/// Only the runtime's `Layouts` changes layouts: methods can be added to [`ChangeLayout`]
/// without breaking anyone.
mod sealed {
    pub trait Sealed {}
    impl<E> Sealed for sharded_runtime::layouts::Layouts<E> {}
}

//! What a migration's entry points return when they do not finish with everything moved: the
//! runner's own error, so the runtime's [`Error`] needs nothing of a migration.

use sharded_runtime::Error;

use super::checkpoint::CheckpointError;
use super::report::Report;

/// Why a migration ([`Migration::run`](super::Migration::run),
/// [`Migration::remaining`](super::Migration::remaining)) did not give its answer.
///
/// A run that read everything but could not move some items, or that stopped because a read
/// failed, is [`Incomplete`](Self::Incomplete), with its report; a checkpoint that cannot be
/// used is [`InvalidCheckpoint`](Self::InvalidCheckpoint); anything else the runtime refused or
/// failed at is [`Failed`](Self::Failed), with the runtime's [`Error`] (which converts into
/// this one with `?`).
///
/// ```no_run
/// use sharded::migrate::{Migrate, MigrateError};
/// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), MigrateError> {
/// match repo.migrate().run().await {
///     Ok(report) => println!("{}", report.progress),
///     Err(MigrateError::Incomplete { report, .. }) => {
///         eprintln!("resume from {}", report.checkpoint);
///     }
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// The migration finished with items it could not move, or stopped because a read failed.
    /// Nothing was lost: what it moved stays moved, what it could not move is still at its
    /// previous place (and read there), and `report` has the counts, every item not moved with
    /// the reason (`report.failed`), and where to resume (`report.checkpoint`).
    ///
    /// ```
    /// use sharded::migrate::MigrateError;
    /// fn explain(e: &MigrateError) {
    ///     if let MigrateError::Incomplete { report, source } = e {
    ///         for failure in &report.failed {
    ///             eprintln!("{}: {}", failure.key, failure.reason);
    ///         }
    ///         if source.is_some() {
    ///             eprintln!("resume from {}", report.checkpoint);
    ///         }
    ///     }
    /// }
    /// ```
    #[error("{}", incomplete(report, source.as_deref()))]
    Incomplete {
        /// What the migration did, what it could not move, and where it stopped.
        report: Box<Report>,
        /// The error that stopped it, if one did (a read that failed after the SDK's
        /// retries); `None` when it read everything and only some items could not be moved.
        #[source]
        source: Option<Box<Error>>,
    },
    /// A migration checkpoint that cannot be used: one of another migration (table, entity,
    /// layout, scope, segment count), or not a token `Checkpoint` made (a
    /// [`CheckpointError`], converted with `?`).
    ///
    /// ```
    /// use sharded::migrate::{Checkpoint, MigrateError};
    /// fn resume(token: &str) -> Result<Checkpoint, MigrateError> {
    ///     Ok(token.parse::<Checkpoint>()?)
    /// }
    /// assert!(matches!(resume("not a token"), Err(MigrateError::InvalidCheckpoint(_))));
    /// ```
    #[error("invalid migration checkpoint: {0}")]
    InvalidCheckpoint(String),
    /// The runtime refused the migration before any request (settings that cannot run, an
    /// entity with no transition declared: [`Error::InvalidQuery`]), or a request failed
    /// outside the run's parts: the runtime's error, as it is.
    ///
    /// ```
    /// use sharded::migrate::MigrateError;
    /// let e = MigrateError::from(sharded::Error::InvalidQuery("concurrency(0)".into()));
    /// assert!(matches!(e, MigrateError::Failed(sharded::Error::InvalidQuery(_))));
    /// ```
    #[error(transparent)]
    Failed(#[from] Error),
}

/// A token that is not a checkpoint is [`MigrateError::InvalidCheckpoint`], so `?` works on
/// [`Checkpoint::from_token`](super::Checkpoint::from_token) and `parse` in a function that
/// returns a `MigrateError`.
impl From<CheckpointError> for MigrateError {
    fn from(error: CheckpointError) -> Self {
        MigrateError::InvalidCheckpoint(error.0)
    }
}

/// A key that cannot be built (as for [`Migration::only`](super::Migration::only)'s
/// partitions) is the runtime's [`Error::Key`], so `?` works on it in a function that returns
/// a `MigrateError`.
///
/// ```
/// use sharded::migrate::MigrateError;
/// let empty = sharded::KeyError::EmptyValue { entity: "Score", attribute: "pk", field: "game_id" };
/// let e = MigrateError::from(empty);
/// assert!(matches!(e, MigrateError::Failed(sharded::Error::Key(_))));
/// ```
impl From<sharded_runtime::KeyError> for MigrateError {
    fn from(error: sharded_runtime::KeyError) -> Self {
        MigrateError::Failed(error.into())
    }
}

/// The message of [`MigrateError::Incomplete`]: what stopped the run or what was not moved,
/// and what to do.
fn incomplete(report: &Report, source: Option<&Error>) -> String {
    let failed = report.progress.failed;
    let not_moved = if failed == 0 {
        String::new()
    } else {
        let first = report
            .failed
            .first()
            .map(|f| format!(" (the first: {}: {})", f.key, f.reason))
            .unwrap_or_default();
        format!(
            "; {failed} item(s) could not be moved{first}: they are still at their previous \
             place, listed in `report.failed`"
        )
    };
    match source {
        Some(error) => format!(
            "the migration stopped: {error}{not_moved}; everything moved so far stays moved: \
             run it again with `resume_from(report.checkpoint)` ({} of {} parts done){}",
            report.checkpoint.parts_done(),
            report.checkpoint.parts(),
            if error.is_throttling() {
                ", with a lower write_units_per_second or concurrency"
            } else {
                ""
            }
        ),
        None => format!(
            "the migration read everything{not_moved}; fix the cause and run it again (moved \
             items are skipped)"
        ),
    }
}

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
/// used is [`InvalidCheckpoint`](Self::InvalidCheckpoint); settings, units or a plan that
/// cannot be used are [`Refused`](Self::Refused); anything else the runtime refused or failed
/// at is [`Failed`](Self::Failed), with the runtime's [`Error`] (which converts into this one
/// with `?`).
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
    /// A unit's run stopped because another run of the same unit holds its record: one
    /// started since (run number `newer_run`, above this run's `this_run`), or one started
    /// from the same record that claimed the number first (`newer_run == this_run`; then
    /// this run stopped before its first move). This run leaves the record alone rather than
    /// replace it with an older checkpoint. Nothing was lost: what this run moved stays moved
    /// (moving is idempotent, the newer run finds those items in place), and `report` has this
    /// run's counts. If the newer run is going, there is nothing to do; if it is not (a run
    /// killed after its first record), run the unit again: it resumes from the newer run's
    /// record.
    ///
    /// ```
    /// use sharded::migrate::MigrateError;
    /// fn explain(e: &MigrateError) {
    ///     if let MigrateError::Superseded { unit, newer_run, .. } = e {
    ///         eprintln!("unit {unit} is run {newer_run}'s now: this worker moves on");
    ///     }
    /// }
    /// ```
    #[error(
        "unit {unit}: this run ({this_run}) stopped, because another run of the unit (run \
         {newer_run}) holds its record in the table; what this run moved stays moved. Nothing \
         to do while that run is going; if it is not, run the unit again: it resumes from that \
         run's record"
    )]
    Superseded {
        /// The unit (as [`Unit`](super::Unit) displays it).
        unit: String,
        /// This run's number (one more than the record it started from).
        this_run: u32,
        /// The number of the run whose record the table holds.
        newer_run: u32,
        /// What this run did before it stopped.
        report: Box<Report>,
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
    /// The migration was refused before any request: settings that cannot run, an entity
    /// with no transition declared, a unit or plan that does not fit ([`MigrationRefusal`]
    /// says which).
    ///
    /// ```
    /// use sharded::migrate::{MigrateError, MigrationRefusal};
    /// let e = MigrateError::from(MigrationRefusal::Concurrency);
    /// assert!(matches!(e, MigrateError::Refused(MigrationRefusal::Concurrency)));
    /// ```
    #[error("invalid migration: {0}")]
    Refused(#[from] MigrationRefusal),
    /// A request failed outside the run's parts, or the runtime refused it: the runtime's
    /// error, as it is.
    ///
    /// ```
    /// use sharded::migrate::MigrateError;
    /// use sharded::query::QueryRefusal;
    /// let e = MigrateError::from(sharded::Error::InvalidQuery(QueryRefusal::EmptyPage));
    /// assert!(matches!(e, MigrateError::Failed(sharded::Error::InvalidQuery(_))));
    /// ```
    #[error(transparent)]
    Failed(#[from] Error),
}

/// Why a migration, a unit or a plan was refused before any request: the payload of
/// [`MigrateError::Refused`]. Its text names the setting and what to do; its fields say
/// what was refused.
///
/// ```
/// use sharded::migrate::{MigrateError, MigrationRefusal, Unit};
/// match "8..4/16".parse::<Unit>() {
///     Err(MigrateError::Refused(MigrationRefusal::UnitRange { first, end, total })) => {
///         assert_eq!((first, end, total), (8, 4, 16));
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MigrationRefusal {
    /// An entity whose layout is decided per key: each key migrates on its own.
    #[error(
        "{entity} has a layout per key (`max_n` on #[pk]): each key changes, and migrates, on \
         its own: `repo.layouts().change(key, n)`, or the ops command line's `layouts change`"
    )]
    PerKey {
        /// The entity.
        entity: &'static str,
    },
    /// An entity that declares no layout transition.
    #[error(
        "{entity} declares no layout transition (`previous_n = N` or `legacy = \"...\"` on \
         #[pk]), so there is no previous layout to migrate from: declare the layout the items \
         have now as the previous one"
    )]
    NoTransition {
        /// The entity.
        entity: &'static str,
    },
    /// `concurrency(0)`.
    #[error("concurrency(0): no item could ever be moved; use at least 1")]
    Concurrency,
    /// A `page_size(p)` outside DynamoDB's `Limit` range.
    #[error("page_size({page_size}): DynamoDB's Limit is 1 to {max}; use a size in that range")]
    PageSize {
        /// The size given.
        page_size: u32,
        /// DynamoDB's most.
        max: i32,
    },
    /// A `write_units_per_second(w)` that is not a positive number.
    #[error(
        "write_units_per_second({rate}): a budget must be a positive number of write units per \
         second (f64::INFINITY for none)"
    )]
    WriteRate {
        /// The budget given.
        rate: f64,
    },
    /// A `read_units_per_second(r)` that is not a positive, finite number.
    #[error(
        "read_units_per_second({rate}): a rate must be a positive, finite number of read units \
         per second; leave it unset for no limit"
    )]
    ReadRate {
        /// The rate given.
        rate: f64,
    },
    /// `max_attempts(0)`.
    #[error("max_attempts(0): every item needs at least one attempt; use at least 1")]
    MaxAttempts,
    /// A table's `segments(n)` outside DynamoDB's range.
    #[error(
        "segments({segments}): DynamoDB splits a scan into 1 to {max} segments; choose a count \
         in that range"
    )]
    Segments {
        /// The count given.
        segments: u32,
        /// DynamoDB's most.
        max: u32,
    },
    /// A unit's run given `segments(n)` other than its plan's total.
    #[error(
        "segments({asked}) for the unit {unit}: a unit's scan has its plan's {total} segments; \
         drop .segments(..) or set it to {total}"
    )]
    UnitSegments {
        /// The count given.
        asked: u32,
        /// The unit's id, as [`Unit`](super::Unit) writes it (`4..8/16`, `key:GAME#g1`).
        unit: String,
        /// Its plan's segment total.
        total: u32,
    },
    /// A unit and `only(..)` together.
    #[error(
        "unit({unit}) with only(..): a unit is its own scope; run the key's unit (Unit::key) or \
         `only`, not both"
    )]
    UnitWithOnly {
        /// The unit's id, as [`Unit`](super::Unit) writes it (`4..8/16`, `key:GAME#g1`).
        unit: String,
    },
    /// A key's unit whose key is not one of the entity's logical keys.
    #[error(
        "unit({unit}): not a logical key of {entity} (template `{template}`); make it with \
         Unit::key({entity}::pk_partitions(..))"
    )]
    UnitNotAKey {
        /// The unit's id, as [`Unit`](super::Unit) writes it (`4..8/16`, `key:GAME#g1`).
        unit: String,
        /// The entity migrated.
        entity: &'static str,
        /// Its partition key template.
        template: &'static str,
    },
    /// `only(..)` of a key that is not one of the entity's logical keys.
    #[error(
        "only({logical}): not a logical key of {entity} (template `{template}`); pass \
         {entity}::pk_partitions(..)"
    )]
    OnlyNotAKey {
        /// The logical key given.
        logical: String,
        /// The entity migrated.
        entity: &'static str,
        /// Its partition key template.
        template: &'static str,
    },
    /// `only(..)` of partitions that declare no previous layout.
    #[error(
        "only({logical}): these partitions declare no previous layout; pass \
         {entity}::pk_partitions(..) of the entity that declares the transition"
    )]
    OnlyNoPreviousLayout {
        /// The logical key given.
        logical: String,
        /// The entity migrated.
        entity: &'static str,
    },
    /// A unit of a segment total outside DynamoDB's range.
    #[error(
        "unit of {total} segments: DynamoDB splits a scan into 1 to {max} segments; choose a \
         total in that range"
    )]
    UnitTotal {
        /// The total given.
        total: u32,
        /// DynamoDB's most.
        max: u32,
    },
    /// A unit whose segments are empty or outside its total.
    #[error(
        "unit {first}..{end}/{total}: a unit is a non-empty range of segments within 0..{total}"
    )]
    UnitRange {
        /// Its first segment.
        first: u32,
        /// The segment after its last.
        end: u32,
        /// The segment total.
        total: u32,
    },
    /// A key's unit made from partitions that declare no previous layout.
    #[error(
        "unit key:{logical}: these partitions declare no previous layout; pass \
         pk_partitions(..) of the entity that declares the transition"
    )]
    NoPreviousLayout {
        /// The logical key.
        logical: String,
    },
    /// A key's unit id given as text: it is made from its partitions.
    #[error(
        "unit `{id}`: a key's unit is made from its partitions: \
         Unit::key(Entity::pk_partitions(..))"
    )]
    KeyUnitId {
        /// The id given.
        id: String,
    },
    /// Text that is not a unit id.
    #[error(
        "unit `{id}`: not a unit id; a unit of segments is `first..end/total`, as \
         `migrate --plan` prints it (`4..8/16`)"
    )]
    NotUnitId {
        /// The text given.
        id: String,
    },
    /// A plan of more units than segments, or of none.
    #[error(
        "{units} units of {segments} segments: a unit holds at least one segment; use 1 to \
         {segments} units, or more segments"
    )]
    Units {
        /// The units asked for.
        units: u32,
        /// The segment total.
        segments: u32,
    },
    /// A plan of more workers than units, or of none.
    #[error(
        "{workers} workers for {units} units: use 1 to {units} workers (more workers than units \
         would wait, and the budget is shared by `workers`)"
    )]
    Workers {
        /// The workers asked for.
        workers: u32,
        /// The plan's units.
        units: u32,
    },
    /// A plan's status asked with another entity or layout than it was made for.
    #[error(
        "this plan is of entity `{plan_entity}` with layout `{plan_layout}`, not `{entity}` with \
         `{layout}`: ask the status with the entity (and declaration) the plan was made for, or \
         make a new plan"
    )]
    PlanOfOtherEntity {
        /// The plan's entity.
        plan_entity: String,
        /// The plan's layout.
        plan_layout: String,
        /// The entity asked with.
        entity: &'static str,
        /// Its layout.
        layout: String,
    },
    /// A plan's status asked of another table than it was made for.
    #[error(
        "this plan is of table `{plan_table}`, not `{table}`: ask the status of the table the \
         plan was made for"
    )]
    PlanOfOtherTable {
        /// The plan's table.
        plan_table: String,
        /// The table asked.
        table: String,
    },
    /// DynamoDB kept a status's unit records unprocessed (throttled).
    #[error(
        "table `{table}`: DynamoDB left {unread} unit records unread after 10 attempts \
         (throttled): ask again later"
    )]
    StatusUnread {
        /// The table.
        table: String,
        /// The records left unread.
        unread: usize,
    },
    /// [`Migration::forget`](super::Migration::forget) of a plan with a unit that is not
    /// done: its record is where its next run resumes (or which items it could not move).
    #[error(
        "unit {unit} of the plan is {state}: its record is where its next run resumes, so the \
         plan's records stay until every unit is done; run the unit to its end, then forget"
    )]
    UnitNotDone {
        /// The unit (as [`Unit`](super::Unit) displays it).
        unit: String,
        /// Its state: "started", or "failed" (items it could not move).
        state: &'static str,
    },
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

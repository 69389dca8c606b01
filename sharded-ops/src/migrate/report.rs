//! What a migration has done: the counts its progress hook sees, and its final report.

use std::fmt;
use std::time::Duration;

use sharded_runtime::keys::ItemKeyDisplay;
use sharded_runtime::query::ForeignItem;

use super::checkpoint::Checkpoint;

/// What a migration has done so far: handed to the progress hook
/// (`Migration::on_progress`) after every item and page, and
/// part of the final [`Report`].
///
/// Every item read is counted once per time it is read, under one outcome: `moved`,
/// `superseded`, `in_place`, `gone` or `failed`. `conflicts` counts the retries on the way.
///
/// ```
/// # fn demo(p: &sharded::migrate::Progress) {
/// println!(
///     "{} moved, {} superseded, {} in place, {} conflicts retried, {:.0} WCU/s",
///     p.moved, p.superseded, p.in_place, p.conflicts, p.current_write_units_per_second
/// );
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Items of the entity read (also untagged legacy items read as it).
    pub scanned: u64,
    /// Moved to their current place by this run; their old copy is gone.
    pub moved: u64,
    /// Their current place already held the item (written there since the transition was
    /// declared, so newer): only the stale old copy was deleted.
    pub superseded: u64,
    /// Found at their current place: nothing to do. This includes items this run moved and
    /// later read again at their new place.
    pub in_place: u64,
    /// Untagged items of the entity at their current place (another service's, in a table
    /// that tags): tagged where they are, the one write adopting them needs. Not moved.
    pub tagged: u64,
    /// Their old copy went before this run could move it: a writer deleted the item, or moved
    /// it itself (an update copies the item it updates to its current place: its old copy
    /// is then counted as `superseded`).
    pub gone: u64,
    /// Moves refused because the old copy changed after it was read, or throttled, and retried
    /// (after reading the item again).
    pub conflicts: u64,
    /// Items that could not be moved: listed with the reason in [`Report::failed`].
    pub failed: u64,
    /// Items in the entity's partitions that are not the entity's (another service's record,
    /// keys not in canonical form, unreadable): left exactly where they are, listed with the
    /// reason in [`Report::left_alone`]. Not counted in `scanned`.
    pub left_alone: u64,
    /// Items whose keys were not in canonical form, moved to the key their attributes give
    /// (only with `Migration::rekey_non_canonical`):
    /// listed in [`Report::rekeyed`], and counted in `moved` (or `superseded`) too.
    pub rekeyed: u64,
    /// Scan (or query) pages read.
    pub pages: u64,
    /// Items DynamoDB examined to find them, every entity's (the pages' `ScannedCount`): a
    /// whole-table migration examines about the table's item count (`DescribeTable`'s
    /// `ItemCount`, refreshed every six hours or so), which makes it the measure of how far a
    /// run has come. Counted from where this run started: a resumed run starts at 0.
    pub examined: u64,
    /// Write units used: DynamoDB's consumed capacity where it reports it (transactions at
    /// twice the plain rate), estimated from item sizes otherwise.
    pub write_units: f64,
    /// Read units used by the scan and by reading items again.
    pub read_units: f64,
    /// Time since this run started.
    pub elapsed: Duration,
    /// Write units per second over the last few seconds (5): what the budget holds the rate
    /// to. Over the whole run, see [`write_units_per_second`](Self::write_units_per_second).
    pub current_write_units_per_second: f64,
}

impl Progress {
    /// Write units per second over the whole run so far.
    ///
    /// ```
    /// # fn demo(p: &sharded::migrate::Progress) {
    /// println!("{:.0} WCU/s on average", p.write_units_per_second());
    /// # }
    /// ```
    pub fn write_units_per_second(&self) -> f64 {
        per_second(self.write_units, self.elapsed)
    }

    /// Items read per second over the whole run so far.
    ///
    /// ```
    /// # fn demo(p: &sharded::migrate::Progress) {
    /// println!("{:.0} items/s", p.items_per_second());
    /// # }
    /// ```
    pub fn items_per_second(&self) -> f64 {
        per_second(self.scanned as f64, self.elapsed)
    }

    /// Items of the previous layout dealt with: moved, superseded, tagged in place, gone or failed (the
    /// items a count of `Migration::remaining` taken before
    /// the run would include).
    ///
    /// ```
    /// # fn demo(p: &sharded::migrate::Progress, remaining_before: u64) {
    /// println!("{} of about {remaining_before}", p.handled());
    /// # }
    /// ```
    pub fn handled(&self) -> u64 {
        self.moved + self.superseded + self.tagged + self.gone + self.failed
    }
}

fn per_second(amount: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

impl fmt::Display for Progress {
    /// One line: the counts, the units and the rate.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} read: {} moved, {} superseded, {} in place, {} tagged in place, {} gone, {} \
             failed ({} conflicts retried), {} not the entity's left alone, {} re-keyed; {:.0} \
             write units ({:.0}/s), {:.0} read units, {:.1?}",
            self.scanned,
            self.moved,
            self.superseded,
            self.in_place,
            self.tagged,
            self.gone,
            self.failed,
            self.conflicts,
            self.left_alone,
            self.rekeyed,
            self.write_units,
            self.write_units_per_second(),
            self.read_units,
            self.elapsed
        )
    }
}

/// An item a migration could not move: its key where it is (the old copy) and why. It is
/// still there, unmoved, and still read by queries; run the migration again once the cause
/// is fixed.
///
/// ```
/// # fn demo(report: &sharded::migrate::Report) {
/// for failure in &report.failed {
///     eprintln!("{}: {}", failure.key, failure.reason);
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Failure {
    /// The key of the copy that could not be moved.
    pub key: ItemKeyDisplay,
    /// What stopped it: the error, or the conflict that kept recurring.
    pub reason: String,
}

/// An item whose keys were not in canonical form, moved by a migration asked to re-key
/// (`Migration::rekey_non_canonical`): from
/// where it was to the key its attributes give.
///
/// ```
/// # fn show(r: &sharded::migrate::Rekeyed) -> String {
/// format!("{} -> {}", r.from, r.to)
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rekeyed {
    /// The key it had.
    pub from: ItemKeyDisplay,
    /// The canonical key it has now.
    pub to: ItemKeyDisplay,
}

/// What a migration did, once it has read everything it was asked to.
///
/// ```no_run
/// # use sharded::{Repo, ShardedEntity};
/// use sharded::migrate::{Migrate, MigrateError};
/// # async fn demo<E: ShardedEntity>(repo: Repo<E>) -> Result<(), MigrateError> {
/// let report = repo.migrate().run().await?;
/// println!("{}", report.progress);
/// assert!(report.failed.is_empty()); // otherwise `run` returns MigrateError::Incomplete
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// The counts, units and time of the run.
    pub progress: Progress,
    /// Every item that could not be moved, with the reason: the first 1,000
    /// (`progress.failed` counts them all; a run where that many fail has one cause to fix).
    pub failed: Vec<Failure>,
    /// The items in the entity's partitions that are not the entity's, left exactly where
    /// they are, with the reason (not canonical, another record's keys, unreadable, untagged):
    /// the first 1,000 (`progress.left_alone` counts them all).
    pub left_alone: Vec<ForeignItem>,
    /// The items re-keyed (with
    /// `rekey_non_canonical`): the first
    /// 1,000.
    pub rekeyed: Vec<Rekeyed>,
    /// Where the run stopped: complete when it read everything and no item failed, otherwise
    /// the position to resume from
    /// (`Migration::resume_from`), which is never
    /// past an item listed in [`failed`](Self::failed).
    pub checkpoint: Checkpoint,
}

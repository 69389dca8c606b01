//! [`Migration`], the builder `repo.migrate()` returns (scope, budget, hooks), and
//! [`Migrate`], the trait that adds `migrate()` to `Repo`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sharded_runtime::__ops::{scan_setters, ScanOptions};
use sharded_runtime::capacity::PerKeyLimits;
use sharded_runtime::keys::Partitions;
use sharded_runtime::{Repo, ShardedEntity};

use super::checkpoint::Checkpoint;
use super::error::MigrateError;
use super::remaining::Remaining;
use super::report::Progress;
use super::units::Unit;

/// Write units per second a migration uses unless told otherwise: half of what one partition
/// key takes (DynamoDB's 1,000), so even a migration whose every write lands on one key (the
/// deletes from an unsharded legacy key) leaves that key more than half its capacity.
const DEFAULT_WRITE_UNITS_PER_SECOND: f64 = PerKeyLimits::DYNAMODB.write_units_per_second / 2.0;

/// Segments of the table scan unless `.segments(n)` says otherwise.
pub(super) const DEFAULT_SEGMENTS: u32 = 4;

/// Requests in flight at once unless `.concurrency(n)` says otherwise.
pub(super) const DEFAULT_CONCURRENCY: usize = 8;

/// Items per page unless `.page_size(n)` says otherwise: small enough that a checkpoint
/// comes often and a resumed run repeats little.
pub(super) const DEFAULT_PAGE_SIZE: u32 = 100;

/// How long an old copy stays after its item was copied, unless `.delete_delay(d)` says
/// otherwise: longer than a query's fan-out takes.
const DEFAULT_DELETE_DELAY: Duration = Duration::from_secs(1);

/// Attempts at one item unless `.max_attempts(n)` says otherwise.
const DEFAULT_MAX_ATTEMPTS: u32 = 5;

pub(super) type ProgressHook = Arc<dyn Fn(&Progress) + Send + Sync>;
pub(super) type CheckpointHook = Arc<dyn Fn(&Checkpoint) + Send + Sync>;

/// A migration of entity `E` from its previous layout to its current one: built by
/// [`repo.migrate()`](Migrate::migrate), refined, then [`run`](Self::run).
///
/// While `#[pk(.., previous_n = N)]` or `#[pk(.., legacy = "...")]` is declared, reads cover
/// both layouts and writes go to the current one; a migration moves every item still at its
/// previous place to its current place, so the declaration can be removed
/// ([`remaining`](Self::remaining) says when).
///
/// - **What it reads**: the whole table with a parallel scan (items of `E`, and untagged
///   legacy items whose keys parse as the legacy template and `E`'s sort key), or one logical
///   key's previous partitions ([`only`](Self::only)).
/// - **Safe under writers**: an item is copied to its current place only if nothing is there
///   (a write since the transition is newer, and wins) and only if its old copy is unchanged;
///   the old copy is deleted a moment later ([`delete_delay`](Self::delete_delay)), again only
///   if unchanged. Nothing is overwritten, nothing deleted by a writer comes back.
/// - **Paced**: a budget of write units per second ([`write_units_per_second`](Self::write_units_per_second),
///   500 by default), charged with the units DynamoDB reports for each move, so the
///   migration never makes a key hot.
/// - **Resumable**: after every page it offers a [`Checkpoint`]
///   ([`on_checkpoint`](Self::on_checkpoint)); [`resume_from`](Self::resume_from) goes on from
///   there. Items between the checkpoint and a crash are read again, and moving is idempotent:
///   an item already moved is at its current place and is skipped. A checkpoint never passes
///   an item that could not be moved, so resuming retries every failed item.
/// - **Observable**: [`on_progress`](Self::on_progress) sees the counts, units and rate after
///   every item.
/// - **Honest**: an item that changed while it was moved is read again and retried (at most
///   [`max_attempts`](Self::max_attempts) times); one that still cannot be moved is listed,
///   with the reason, in the [`Report`](super::Report) that
///   [`MigrateError::Incomplete`](super::MigrateError::Incomplete) carries.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{migrate::MigrateError, Repo, ShardedEntity};
/// use sharded::migrate::Migrate; // adds `migrate()` to `Repo`
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// # async fn demo(repo: &Repo<Score>) -> Result<(), MigrateError> {
/// let report = repo
///     .migrate()
///     .write_units_per_second(200.0)
///     .on_progress(|p| eprintln!("{p}"))
///     .on_checkpoint(|c| std::fs::write("migration.checkpoint", c.to_token()).unwrap_or(()))
///     .run()
///     .await?;
/// println!("{} moved", report.progress.moved);
/// assert_eq!(repo.migration_remaining().await?, 0); // now `previous_n` can go
/// # Ok(()) }
/// ```
#[must_use = "a migration does nothing until it is run"]
pub struct Migration<E> {
    pub(super) repo: Repo<E>,
    pub(super) only: Option<Partitions>,
    /// Segments, concurrency, page size, read-unit rate: the settings `Scan` shares (`None`
    /// is this builder's default).
    pub(super) options: ScanOptions,
    pub(super) write_units_per_second: f64,
    pub(super) delete_delay: Duration,
    pub(super) max_attempts: u32,
    /// Items whose keys are not in canonical form are re-keyed (`rekey_non_canonical`).
    pub(super) rekey: bool,
    pub(super) on_progress: Option<ProgressHook>,
    pub(super) on_checkpoint: Option<CheckpointHook>,
    pub(super) resume: Option<Checkpoint>,
    /// The unit run, recorded in the table (`unit`).
    pub(super) unit: Option<Unit>,
    /// A unit read from its start whatever its record says (`from_start`).
    pub(super) from_start: bool,
}

impl<E> std::fmt::Debug for Migration<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Migration")
            .field("repo", &self.repo)
            .field("only", &self.only)
            .field("options", &self.options)
            .field("write_units_per_second", &self.write_units_per_second)
            .field("delete_delay", &self.delete_delay)
            .field("max_attempts", &self.max_attempts)
            .field("rekey", &self.rekey)
            .field("resume", &self.resume.as_ref().map(|c| c.to_token()))
            .field("unit", &self.unit.as_ref().map(|u| u.to_string()))
            .field("from_start", &self.from_start)
            .finish_non_exhaustive()
    }
}

impl<E: ShardedEntity> Migration<E> {
    fn new(repo: Repo<E>) -> Self {
        Migration {
            repo,
            only: None,
            options: ScanOptions::default(),
            write_units_per_second: DEFAULT_WRITE_UNITS_PER_SECOND,
            delete_delay: DEFAULT_DELETE_DELAY,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            rekey: false,
            on_progress: None,
            on_checkpoint: None,
            resume: None,
            unit: None,
            from_start: false,
        }
    }

    /// Migrates one logical key instead of the whole table: reads every partition of its
    /// previous layout (from the generated `Entity::pk_partitions(..)`) with Queries, instead
    /// of scanning the table. For a hot key that should not wait for a table scan, or a table
    /// too large to scan for one key.
    ///
    /// Partitions of another entity's template are refused when the migration runs.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{migrate::MigrateError, Repo, ShardedEntity};
    /// # use sharded::migrate::Migrate;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, legacy = "GAME#{game_id}")]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), MigrateError> {
    /// // The viral game first: its legacy partition GAME#g1, moved over its 10 shards.
    /// repo.migrate().only(Score::pk_partitions("g1")?).run().await?;
    /// # Ok(()) }
    /// ```
    pub fn only(mut self, partitions: Partitions) -> Self {
        self.only = Some(partitions);
        self
    }

    scan_setters! {
        demo = "# use sharded::migrate::Migrate;\n# async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {",
        start = "let report = repo.migrate()",
        run = ".run().await?",
        segments = [
            ///
            /// 4 by default. Checkpoints hold one position per segment, so a migration resumes
            /// with the segment count it started with (a different one is refused). Ignored
            /// with [`only`](Self::only) (one part per partition).
        ],
        concurrency = [
            ///
            /// 8 by default; moves count as requests too. The write budget, not this, is what
            /// bounds the load on the table; this bounds the connections and the items held in
            /// memory (one page per segment in flight).
        ],
        page_size = [
            ///
            /// 100 by default. A checkpoint comes after every page, so smaller pages mean less
            /// to read again after a crash.
        ],
        read_units_per_second = [
            ///
            /// Covers the scan, or the Queries of [`only`](Self::only). Unlimited by default,
            /// since the write budget paces the pages too (a page is read once its items are
            /// moved).
        ],
    }

    /// Spends at most about `w` write units per second on moving items, over all segments;
    /// 500 by default (half a key's limit). `f64::INFINITY` sets no limit; zero, a negative
    /// number or NaN is [`MigrateError::Refused`](super::MigrateError::Refused) when the migration runs.
    ///
    /// Every move is charged what DynamoDB reports it cost: a move is a transaction, charged
    /// twice the plain rate, of the new item and the old one (1 KB items: 4 units), plus the
    /// delete of the old copy (1 more). A move waits while the budget is spent, so over a run
    /// the units stay within `w × elapsed + concurrency × one move`. Whatever the table's
    /// capacity, this is what keeps the migration from making a key hot: with `w` below a
    /// key's 1,000 units, no key can be.
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// // A table provisioned with 400 WCU that serves 200 of them: leave the service its share.
    /// repo.migrate().write_units_per_second(150.0).run().await?;
    /// # Ok(()) }
    /// ```
    pub fn write_units_per_second(mut self, w: f64) -> Self {
        self.write_units_per_second = w;
        self
    }

    /// How long an item's old copy stays after the item was copied to its current place;
    /// 1 second by default.
    ///
    /// A query reads a logical key's partitions with one request each, at slightly different
    /// instants. An item moved in one step between its read of the new place and its read of
    /// the old one would be in neither answer; while both copies exist, it is in at least one
    /// (and shown once). So the migration copies a page's items, waits this long, then deletes
    /// their old copies (copying the next pages meanwhile, so the delay costs latency, not
    /// throughput): set it longer than your slowest query takes. `Duration::ZERO` moves
    /// each item in one transaction instead (1 write unit less per 1 KB item, no wait), for a
    /// table nobody reads during the migration.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// // An offline migration: nobody reads, so move each item in one step.
    /// repo.migrate().delete_delay(Duration::ZERO).run().await?;
    /// # Ok(()) }
    /// ```
    pub fn delete_delay(mut self, delay: Duration) -> Self {
        self.delete_delay = delay;
        self
    }

    /// Attempts at one item before it is given up and listed as failed; 5 by default, at
    /// least 1 (0 is [`MigrateError::Refused`](super::MigrateError::Refused) when the migration runs).
    ///
    /// An attempt ends early when the item changed since it was read (a writer got there
    /// first: it is read again, consistently) or DynamoDB throttled it (the next attempt waits
    /// longer, up to a second).
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// repo.migrate().max_attempts(10).run().await?;
    /// # Ok(()) }
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Also moves the items whose keys are the entity's shape but not in canonical form (a score
    /// padded to 10 digits instead of 20, a raw space in a name; another service spelled them its
    /// own way) to the key their attributes give, and lists each in
    /// [`Report::rekeyed`](super::Report::rekeyed). Off by default: such items are left where they
    /// are and listed in [`Report::left_alone`](super::Report::left_alone), since a key the entity
    /// cannot build is never rewritten unasked. An item that does not read as the entity from its
    /// attributes stays where it is either way.
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// let report = repo.migrate().rekey_non_canonical().run().await?;
    /// for r in &report.rekeyed {
    ///     println!("re-keyed {} -> {}", r.from, r.to);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn rekey_non_canonical(mut self) -> Self {
        self.rekey = true;
        self
    }

    /// Calls `hook` with the counts so far after every item and every page: for a progress
    /// bar, logs or metrics. It runs on the migration's task, between requests: keep it quick
    /// (send the numbers on to a channel for anything slow).
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// let (tx, mut rx) = tokio::sync::watch::channel(sharded::migrate::Progress::default());
    /// tokio::spawn(async move {
    ///     while rx.changed().await.is_ok() {
    ///         let p = rx.borrow().clone();
    ///         println!("{} moved at {:.0} WCU/s", p.moved, p.current_write_units_per_second);
    ///     }
    /// });
    /// repo.migrate().on_progress(move |p| { let _ = tx.send(p.clone()); }).run().await?;
    /// # Ok(()) }
    /// ```
    pub fn on_progress(mut self, hook: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(hook));
        self
    }

    /// Calls `hook` with the migration's position after every page whose items have all been
    /// dealt with: save it (its [`to_token`](Checkpoint::to_token)) and give it to
    /// [`resume_from`](Self::resume_from) after a crash.
    ///
    /// A checkpoint never passes an item that could not be moved (one listed in
    /// [`Report::failed`](super::Report::failed)): from the page that holds it, its segment's (or
    /// partition's) position stays where that page starts for the rest of the run, while the
    /// segment reads on and its later items are moved. So a run with a failed item never offers a
    /// [complete](Checkpoint::is_complete) checkpoint, and a run resumed from any checkpoint it
    /// offered reads that page again and retries the item (the items around it, already moved, are
    /// skipped). The hook is called after every page all the same, so a run whose first page failed
    /// still leaves a checkpoint to resume from.
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// repo.migrate()
    ///     .on_checkpoint(|c| {
    ///         // Write to a temporary file and rename, so a crash never leaves half a token.
    ///         let _ = std::fs::write("checkpoint.tmp", c.to_token())
    ///             .and_then(|()| std::fs::rename("checkpoint.tmp", "checkpoint"));
    ///     })
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_checkpoint(mut self, hook: impl Fn(&Checkpoint) + Send + Sync + 'static) -> Self {
        self.on_checkpoint = Some(Arc::new(hook));
        self
    }

    /// Goes on from `checkpoint` instead of from the beginning: the segments (or partitions)
    /// done are skipped, the others resume after the key they had reached.
    ///
    /// Nothing a checkpoint skips holds an item the migration failed to move: a page with one
    /// is read again (see [`on_checkpoint`](Self::on_checkpoint)), so resuming after
    /// [`MigrateError::Incomplete`](super::MigrateError::Incomplete) retries its failed items, from the report's
    /// [`checkpoint`](super::Report::checkpoint) or the last one offered.
    ///
    /// The checkpoint must come from a migration of this entity in this table, under the
    /// layout declared now, with the same scope ([`only`](Self::only) and its key, or the
    /// table) and segment count; otherwise the run returns
    /// [`MigrateError::InvalidCheckpoint`](super::MigrateError::InvalidCheckpoint) naming
    /// what differs. The counts of the resumed run start from zero.
    ///
    /// ```no_run
    /// # use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// let mut migration = repo.migrate();
    /// if let Ok(token) = std::fs::read_to_string("checkpoint") {
    ///     migration = migration.resume_from(token.parse()?);
    /// }
    /// migration.run().await?;
    /// # Ok(()) }
    /// ```
    pub fn resume_from(mut self, checkpoint: Checkpoint) -> Self {
        self.resume = Some(checkpoint);
        self
    }

    /// Runs one unit of a migration cut into units ([`plan`](Self::plan)): its segments of
    /// the plan's scan, or its key's partitions. Any process can run any unit, in any order,
    /// at once with others (the same move rules as a migration's segments in one process).
    ///
    /// The unit's progress is recorded in the table (one item of the migration's own,
    /// replaced at most every second and when the run stops), so:
    /// - a run **resumes** from the unit's record when it has one of this layout (a worker
    ///   killed mid-unit, run again, goes on where its last record was; what it read since is
    ///   read again, and moving is idempotent); [`resume_from`](Self::resume_from) overrides
    ///   it, [`from_start`](Self::from_start) ignores it;
    /// - a unit run again **after it completed reads nothing** and changes nothing;
    /// - [`status`](Self::status) says which units are done or failed, wherever they ran.
    ///
    /// Give it the plan's share of the budget
    /// ([`Plan::unit_write_units_per_second`](super::Plan::unit_write_units_per_second)): that, not this, keeps the fleet within the
    /// migration's budget. A unit's segment count is the plan's (a different
    /// [`segments`](Self::segments) is refused), and a key unit is [`only`](Self::only) its
    /// key (both at once are refused).
    ///
    /// ```no_run
    /// use sharded::migrate::{Migrate, Unit};
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>, plan: &sharded::migrate::Plan) -> Result<(), sharded::migrate::MigrateError> {
    /// // The unit this worker was handed, e.g. from the orchestrator's input.
    /// let unit: Unit = "4..8/16".parse()?;
    /// let report = repo
    ///     .migrate()
    ///     .unit(unit)
    ///     .write_units_per_second(plan.unit_write_units_per_second())
    ///     .run()
    ///     .await?;
    /// println!("{}", report.progress);
    /// # Ok(()) }
    /// ```
    pub fn unit(mut self, unit: Unit) -> Self {
        self.unit = Some(unit);
        self
    }

    /// Reads the [`unit`](Self::unit) from its start even if its record says it is done or
    /// where it stopped: to read it again (what is in place is skipped; the record's counts
    /// go on adding up).
    ///
    /// ```no_run
    /// # use sharded::migrate::{Migrate, Unit};
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// repo.migrate().unit("0..4/16".parse()?).from_start().run().await?;
    /// # Ok(()) }
    /// ```
    pub fn from_start(mut self) -> Self {
        self.from_start = true;
        self
    }
}

/// Adds [`migrate`](Migrate::migrate) and [`migration_remaining`](Migrate::migration_remaining)
/// to [`Repo`]: the migration runner is an operator's tool (this crate, `sharded-ops`), so a
/// repository gains it where it is imported.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{migrate::MigrateError, Repo, ShardedEntity};
/// use sharded::migrate::Migrate;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # async fn demo(repo: &Repo<Score>) -> Result<(), MigrateError> {
/// repo.migrate().run().await?;
/// assert_eq!(repo.migration_remaining().await?, 0);
/// # Ok(()) }
/// ```
pub trait Migrate<E>: sealed::Sealed {
    /// A migration of every item of the previous layout (`previous_n` or `legacy` on
    /// `#[pk]`) to its current place: a parallel scan of the table (or one logical key's
    /// partitions, with [`Migration::only`]), paced by a write-unit budget, resumable from a
    /// checkpoint, safe under concurrent writers. See [`Migration`].
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{migrate::MigrateError, Repo, ShardedEntity};
    /// use sharded::migrate::Migrate;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), MigrateError> {
    /// let report = repo.migrate().write_units_per_second(300.0).run().await?;
    /// println!("{}", report.progress);
    /// # Ok(()) }
    /// ```
    fn migrate(&self) -> Migration<E>;

    /// How many items of the previous layout are left in the table (not at their current
    /// place): a scan that moves nothing ([`Migration::remaining`] over the whole table). At
    /// 0, after a migration, the transition's declaration (`previous_n`, `legacy`) can be
    /// removed; an entity that declares none is [`MigrateError::Refused`](super::MigrateError::Refused) (in
    /// [`MigrateError::Failed`](super::MigrateError::Failed)).
    ///
    /// ```no_run
    /// # use sharded::{migrate::MigrateError, Repo, ShardedEntity};
    /// use sharded::migrate::Migrate;
    /// # async fn demo<E: ShardedEntity>(repo: &Repo<E>) -> Result<(), MigrateError> {
    /// if repo.migration_remaining().await? == 0 {
    ///     println!("every item is at its current place: remove `previous_n`");
    /// }
    /// # Ok(()) }
    /// ```
    fn migration_remaining(&self) -> impl Future<Output = Result<Remaining, MigrateError>>;
}

impl<E: ShardedEntity> Migrate<E> for Repo<E> {
    fn migrate(&self) -> Migration<E> {
        Migration::new(self.clone())
    }

    fn migration_remaining(&self) -> impl Future<Output = Result<Remaining, MigrateError>> {
        let migration = self.migrate();
        async move { migration.remaining().await }
    }
}

/// Only `Repo` migrates: methods can be added to [`Migrate`] without breaking anyone.
mod sealed {
    pub trait Sealed {}
    impl<E> Sealed for sharded_runtime::Repo<E> {}
}

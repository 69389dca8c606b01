//! The run of a migration: parts (scan segments, or partitions) read concurrently, page by
//! page; each page's items classified, moved (copied, then their old copies deleted after the
//! delay), retried and counted; a checkpoint after every page.
//!
//! Nothing is spawned: the whole run is one future, so dropping it stops every request.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use futures::stream::{self, FuturesOrdered, StreamExt, TryStreamExt};
use tokio::sync::Semaphore;

use sharded_keys::template::{parse_key, KeyContext};
use sharded_runtime::__ops::{
    self, delete_stale, describe_key, dynamo_error, is_missing_table, key_of, marked, move_item,
    rebuilt, DeleteOutcome, MoveOutcome, Store, UnitBudget, MAX_SEGMENTS,
};
use sharded_runtime::capacity::{
    item_size, read_units, write_units, Clock, Consistency, SystemClock,
};
use sharded_runtime::keys::Item;
use sharded_runtime::query::{Foreign, ForeignItem, ForeignReason, MAX_FOREIGN_EXAMPLES};
use sharded_runtime::{Error, Repo, ShardedEntity};

use super::checkpoint::{Checkpoint, Position, Scope};
use super::classify::{classify, Found};
use super::error::{MigrateError, MigrationRefusal};
use super::metrics::record_progress;
use super::migration::{
    CheckpointHook, Migration, ProgressHook, DEFAULT_CONCURRENCY, DEFAULT_PAGE_SIZE,
    DEFAULT_SEGMENTS,
};
use super::pages::{PageSource, Parts};
use super::records::{
    counting_its_own_write, now_ms, read_record, write_record, RecordWrite, UnitProgress,
    UnitRecord, RECORD_EVERY,
};
use super::remaining::Remaining;
use super::report::{Failure, Progress, Rekeyed, Report};
use super::resume::check_resume;
use super::retry::{backoff, retriable};
use super::steps::{copy_item, estimated_units, tag_in_place, CopyOutcome, TagOutcome};
use super::units::{moving_share, Estimate, Plan, Unit, UnitScope};

/// How many failures (and items left alone, and items re-keyed) a report lists; more are
/// counted, not kept.
const MAX_LISTED_FAILURES: usize = 1_000;

/// How far back the current rate looks.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Pages of one part copied and waiting for their old copies' deletion, at most: enough to
/// keep copying through the delete delay, few enough to bound memory (pages of 100 items by
/// default).
const MAX_WAITING_PAGES: usize = 8;

/// An old copy whose item is at its current place, due for deletion.
struct Pending {
    old: Item,
    /// Copied by this run (`moved`), or found superseded (`superseded`).
    copied: bool,
}

/// Whether an item of one page could not be moved. Every failure is recorded against its
/// page ([`Runner::fail`] takes it), and a page with one holds its part's checkpoint position
/// where the page starts ([`Runner::reached`]): the one rule that keeps a checkpoint from
/// passing an item still at its previous place.
#[derive(Default)]
struct PageFailures(AtomicBool);

impl PageFailures {
    fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn any(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A page of a part, finished: where the part goes on after it, and whether an item on it
/// could not be moved.
struct PageEnd {
    next: Option<Item>,
    failed: bool,
}

/// The run's entry points, here beside the run so the builder's file needs nothing of it.
impl<E: ShardedEntity> Migration<E> {
    /// Runs the migration: reads every part, moves what is not at its current place, and
    /// returns what it did.
    ///
    /// Returns [`MigrateError::Incomplete`] when an item could not be moved (the report
    /// lists each, with the reason; the rest were moved) or when a read failed and the run
    /// stopped (with the error, and the checkpoint to resume from);
    /// [`MigrateError::Refused`] for settings that cannot run or an
    /// entity with no transition declared, and [`MigrateError::InvalidCheckpoint`] for a
    /// checkpoint of another migration, before any request.
    ///
    /// Dropping the future stops the migration between requests: what was moved stays moved,
    /// and an item copied but not yet deleted from its old place is finished by the next run.
    ///
    /// ```no_run
    /// # use sharded::migrate::{Migrate, MigrateError};
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), MigrateError> {
    /// match repo.migrate().run().await {
    ///     Ok(report) => println!("{}", report.progress),
    ///     Err(MigrateError::Incomplete { report, .. }) => {
    ///         for failure in &report.failed {
    ///             eprintln!("not moved: {} ({})", failure.key, failure.reason);
    ///         }
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn run(self) -> Result<Report, MigrateError> {
        // Settings are checked before any request, the unit's record read after.
        let resumes_from_record = self.resume.is_none() && !self.from_start;
        let mut runner = Runner::new(self, false)?;
        if let Some(unit) = &runner.unit {
            let stored =
                read_record(runner.repo.client(), runner.repo.table(), E::SCHEMA, unit).await?;
            runner
                .recorded
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .bytes = stored.bytes;
            if let Some(record) = stored.record {
                if resumes_from_record {
                    runner.resume(record.checkpoint)?;
                }
                runner.earlier = Some(record.progress);
            }
        }
        runner.run().await
    }

    /// Counts the items of the previous layout left: those not at their current place (what
    /// a run would move), and the items in the entity's partitions that are not the entity's
    /// (what a run leaves alone, with the reasons), in this migration's scope, moving nothing.
    /// It reads what [`run`](Self::run) reads (a scan of the table, or the partitions of
    /// [`only`](Self::only)), at the same read cost.
    ///
    /// At 0, every reader and writer can drop the declaration (`previous_n`, `legacy`): first
    /// deploy the entity without it everywhere, since a service still declaring it only reads
    /// more partitions, while one without it must never meet an item at its old place. With
    /// writers of the old layout still running (a deploy not finished), items can appear
    /// behind a migration: this count finds them.
    ///
    /// ```no_run
    /// # use sharded::migrate::{Migrate, MigrateError};
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), MigrateError> {
    /// let left = repo.migrate().remaining().await?;
    /// println!("{left}"); // "12 items to move (3 not the entity's, left alone)"
    /// assert!(left.items == 0 || left != 0);
    /// # Ok(()) }
    /// ```
    pub async fn remaining(self) -> Result<Remaining, MigrateError> {
        Runner::new(self, true)?.count_remaining().await
    }

    /// Cuts this migration into `units` units over its [`segments`](Self::segments) (the
    /// scan's `TotalSegments`; 4 by default, so set it: a large table wants hundreds), to
    /// run at most `workers` at once within this migration's
    /// [`write_units_per_second`](Self::write_units_per_second) together. One
    /// `DescribeTable` gives the [`Estimate`] (items, average size, units per move, the
    /// duration at the budget). Settings that cannot run are refused here, before any
    /// unit runs.
    ///
    /// ```no_run
    /// use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
    /// let plan = repo
    ///     .migrate()
    ///     .segments(256)
    ///     .write_units_per_second(4_000.0)
    ///     .plan(64, 16)
    ///     .await?;
    /// println!("{} units at {} WCU/s each", plan.units.len(), plan.unit_write_units_per_second());
    /// if let Some(estimate) = plan.estimate {
    ///     println!("about {:.0} hours", estimate.seconds / 3600.0);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn plan(self, units: u32, workers: u32) -> Result<Plan, MigrateError> {
        let schema = E::SCHEMA;
        // The settings a run would refuse are refused now: a plan that cannot run is no plan.
        let total = self.options.segments.unwrap_or(DEFAULT_SEGMENTS);
        let checked = Migration {
            options: self.options,
            on_progress: None,
            on_checkpoint: None,
            resume: None,
            unit: None,
            only: None,
            ..self
        };
        let write_units_per_second = checked.write_units_per_second;
        let repo = checked.repo.clone();
        Runner::new(checked, true)?;
        let plan = Plan::new(
            repo.table(),
            schema.entity,
            schema.pk.layout_description(),
            total,
            units,
            workers,
            write_units_per_second,
        )?;
        let described = repo
            .client()
            .describe_table()
            .table_name(repo.table())
            .send()
            .await
            .map_err(|e| sharded_runtime::__ops::dynamo_error("DescribeTable", repo.table(), e))?;
        let Some(table) = described.table else {
            return Ok(plan);
        };
        let items = table.item_count.unwrap_or(0).max(0) as u64;
        let bytes = table.table_size_bytes.unwrap_or(0).max(0) as u64;
        let average = bytes.checked_div(items).unwrap_or(0);
        let estimate = Estimate::new(items, average, write_units_per_second)
            .indexes(schema.gsis.len())
            .moving(moving_share(&schema.pk));
        Ok(plan.with_estimate(estimate))
    }
}

/// The settings of a run, checked, and its shared state.
pub(super) struct Runner<E> {
    repo: Repo<E>,
    source: PageSource,
    concurrency: usize,
    delete_delay: Duration,
    max_attempts: u32,
    /// Whether items whose keys are not in canonical form are moved to their canonical key.
    rekey: bool,
    writes: Option<UnitBudget>,
    permits: Semaphore,
    clock: Arc<dyn Clock>,
    started: Duration,
    on_progress: Option<ProgressHook>,
    on_checkpoint: Option<CheckpointHook>,
    /// The checkpoint's fixed part; its positions live in `state`.
    base: Checkpoint,
    state: Mutex<State>,
    /// The unit run, whose progress is recorded in the table.
    unit: Option<Unit>,
    /// What the unit's earlier runs recorded, which this run's counts add to.
    earlier: Option<UnitProgress>,
    /// When this run started, on the machine's wall clock (a unit's first run records it).
    started_at_ms: u64,
    /// The unit's record as this run last wrote or found it.
    recorded: Mutex<Recorded>,
    /// The number of a later run of the unit whose record the table holds (0: none): every
    /// part stops at its next page, and this run writes no record again.
    superseded_by: AtomicU32,
}

/// The unit's record as a run last wrote or found it.
#[derive(Default)]
struct Recorded {
    /// When this run last wrote it (`None`: not yet).
    at: Option<tokio::time::Instant>,
    /// Its size in the table, which the next write's cost depends on (0: none).
    bytes: usize,
}

struct State {
    progress: Progress,
    failures: Vec<Failure>,
    /// The foreign items met, as listed in the report.
    left_alone: Vec<ForeignItem>,
    /// The items re-keyed, as listed in the report.
    rekeyed: Vec<Rekeyed>,
    positions: Vec<Position>,
    /// Parts whose position is held at the start of a page that holds an item not moved:
    /// the part reads on, but its checkpoint goes no further, so a resumed run reads that
    /// page again.
    held: Vec<bool>,
    /// (elapsed, write units so far), sampled at most every 100 ms, over [`RATE_WINDOW`].
    samples: VecDeque<(Duration, f64)>,
    /// Items counted by `remaining`.
    remaining: u64,
    /// The counts last handed to the metrics (each emit records what changed since).
    reported: Progress,
}

impl<E: ShardedEntity> Runner<E> {
    /// Where the moves write.
    fn store(&self) -> Store<'_> {
        Store::new(self.repo.client(), self.repo.table())
    }

    /// Checks the settings (before any request) and plans the parts.
    pub(super) fn new(mut migration: Migration<E>, counting: bool) -> Result<Self, MigrateError> {
        let schema = E::SCHEMA;
        let invalid = |refusal: MigrationRefusal| Err(refusal.into());
        let entity = schema.entity;
        if schema.pk.per_key.is_some() {
            return invalid(MigrationRefusal::PerKey { entity });
        }
        if schema.pk.previous.is_none() {
            return invalid(MigrationRefusal::NoTransition { entity });
        }
        let concurrency = migration.options.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        if concurrency == 0 {
            return invalid(MigrationRefusal::Concurrency);
        }
        let asked_page_size = migration.options.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        let page_size = match i32::try_from(asked_page_size) {
            Ok(limit) if limit > 0 => limit,
            _ => {
                let (page_size, max) = (asked_page_size, i32::MAX);
                return invalid(MigrationRefusal::PageSize { page_size, max });
            }
        };
        let w = migration.write_units_per_second;
        if w.is_nan() || w <= 0.0 {
            return invalid(MigrationRefusal::WriteRate { rate: w });
        }
        if let Some(r) = migration.options.read_units_per_second {
            if !(r.is_finite() && r > 0.0) {
                return invalid(MigrationRefusal::ReadRate { rate: r });
            }
        }
        if migration.max_attempts == 0 {
            return invalid(MigrationRefusal::MaxAttempts);
        }
        let layout = schema.pk.layout_description();
        let resume = migration.resume.take();
        if let Some(unit) = &migration.unit {
            if migration.only.is_some() {
                return invalid(MigrationRefusal::UnitWithOnly {
                    unit: unit.to_string(),
                });
            }
            if let UnitScope::Key { logical, .. } = &unit.scope {
                let ctx = KeyContext {
                    entity: schema.entity,
                    attribute: schema.pk.attribute,
                };
                if parse_key(ctx, schema.pk.template, logical, None).is_err() {
                    let (unit, template) = (unit.to_string(), schema.pk.template.source);
                    return invalid(MigrationRefusal::UnitNotAKey {
                        unit,
                        entity,
                        template,
                    });
                }
            }
        }
        let unit_segments = migration.unit.as_ref().and_then(|unit| match unit.scope {
            UnitScope::Segments { first, end, total } => Some((first, end, total, unit)),
            UnitScope::Key { .. } => None,
        });
        let unit_partitions = migration.unit.as_ref().and_then(|unit| match &unit.scope {
            UnitScope::Key {
                logical,
                partitions,
            } => Some((logical.clone(), partitions.clone())),
            UnitScope::Segments { .. } => None,
        });
        let (scope, parts) = match (&migration.only, unit_segments, unit_partitions) {
            (_, Some((first, end, total, unit)), _) => {
                if let Some(asked) = migration.options.segments.filter(|n| *n != total) {
                    let unit = unit.to_string();
                    return invalid(MigrationRefusal::UnitSegments { asked, unit, total });
                }
                (
                    Scope::Segments { first, total },
                    Parts::Segments {
                        first,
                        count: end - first,
                        total,
                    },
                )
            }
            (_, None, Some((logical, keys))) => (
                Scope::Key {
                    logical,
                    partitions: keys.clone(),
                },
                Parts::Partitions(keys),
            ),
            (None, None, None) => {
                let segments = match (migration.options.segments, &resume) {
                    (Some(n), _) => n,
                    // Resuming: the checkpoint's segment count, unless one was asked for.
                    (None, Some(resume)) if resume.scope == Scope::Table => {
                        resume.positions.len() as u32
                    }
                    (None, _) => DEFAULT_SEGMENTS,
                };
                if !(1..=MAX_SEGMENTS).contains(&segments) {
                    let max = MAX_SEGMENTS;
                    return invalid(MigrationRefusal::Segments { segments, max });
                }
                (
                    Scope::Table,
                    Parts::Segments {
                        first: 0,
                        count: segments,
                        total: segments,
                    },
                )
            }
            (Some(partitions), None, None) => {
                let logical = partitions.logical_key().to_owned();
                let ctx = KeyContext {
                    entity: schema.entity,
                    attribute: schema.pk.attribute,
                };
                if parse_key(ctx, schema.pk.template, &logical, None).is_err() {
                    let template = schema.pk.template.source;
                    return invalid(MigrationRefusal::OnlyNotAKey {
                        logical,
                        entity,
                        template,
                    });
                }
                let keys: Vec<String> = match partitions.previous() {
                    Some(previous) => previous.clone().collect(),
                    None => {
                        return invalid(MigrationRefusal::OnlyNoPreviousLayout { logical, entity })
                    }
                };
                (
                    Scope::Key {
                        logical,
                        partitions: keys.clone(),
                    },
                    Parts::Partitions(keys),
                )
            }
        };
        let base = Checkpoint {
            table: migration.repo.table().to_owned(),
            entity: schema.entity.to_owned(),
            layout,
            scope,
            positions: Vec::new(),
        };
        let positions = match resume.filter(|_| !counting) {
            None => vec![Position::Start; parts.len()],
            Some(resume) => {
                check_resume(&base, &resume, parts.len())?;
                resume.positions
            }
        };
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let started = clock.now();
        let source = PageSource {
            client: migration.repo.client().clone(),
            table: migration.repo.table().to_owned(),
            entity: schema.entity,
            pk_attribute: schema.pk.attribute,
            tag: schema.tag_attribute(),
            page_size: Some(page_size),
            parts,
            budget: migration
                .options
                .read_units_per_second
                .map(|r| UnitBudget::new(r, Arc::clone(&clock))),
        };
        Ok(Runner {
            repo: migration.repo,
            source,
            concurrency,
            delete_delay: migration.delete_delay,
            max_attempts: migration.max_attempts,
            rekey: migration.rekey,
            writes: w
                .is_finite()
                .then(|| UnitBudget::new(w, Arc::clone(&clock))),
            permits: Semaphore::new(concurrency),
            clock,
            started,
            on_progress: migration.on_progress,
            on_checkpoint: migration.on_checkpoint,
            unit: migration.unit,
            earlier: None,
            started_at_ms: now_ms(),
            superseded_by: AtomicU32::new(0),
            recorded: Mutex::default(),
            base,
            state: Mutex::new(State {
                progress: Progress::default(),
                failures: Vec::new(),
                left_alone: Vec::new(),
                rekeyed: Vec::new(),
                held: vec![false; positions.len()],
                positions,
                samples: VecDeque::new(),
                remaining: 0,
                reported: Progress::default(),
            }),
        })
    }

    /// Goes on from `checkpoint` (a unit's record) instead of from the start.
    fn resume(&mut self, checkpoint: Checkpoint) -> Result<(), MigrateError> {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        check_resume(&self.base, &checkpoint, state.positions.len())?;
        state.positions = checkpoint.positions;
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Counters updated in single steps: a panic in a hook cannot leave them half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every part, `concurrency` at a time; the first error stops them all.
    async fn parts(&self, counting: bool) -> Result<(), Error> {
        let parts = self.state().positions.len();
        let at_once = self.concurrency.min(parts).max(1);
        stream::iter(0..parts)
            .map(|part| self.part(part, counting))
            .buffer_unordered(at_once)
            .try_collect::<()>()
            .await
    }

    /// Runs the migration: see [`Migration::run`].
    pub(super) async fn run(self) -> Result<Report, MigrateError> {
        let span = {
            use sharded_runtime::telemetry::*;
            tracing::info_span!(
                "sharded.migration",
                { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
                { TABLE_NAMES } = self.repo.table(),
                { ENTITY } = E::SCHEMA.entity,
                { TRANSITION } = true,
                { ITEMS_READ } = tracing::field::Empty,
            )
        };
        // A unit whose record says it is done reads nothing, and leaves its record as it is:
        // run twice, it changes nothing.
        let already_done = self
            .state()
            .positions
            .iter()
            .all(|p| matches!(p, Position::Done));
        // A unit's run claims its number before it reads: of two runs started from the same
        // record, one goes on and the other stops here, before any move.
        let claimed = if already_done {
            Ok(())
        } else {
            self.record(true).await
        };
        let mut result = match (claimed, self.superseded_by()) {
            (Ok(()), None) => __ops::within(span.clone(), self.parts(false)).await,
            (claimed, _) => claimed,
        };
        if !already_done && self.superseded_by().is_none() {
            if let Err(error) = self.record(true).await {
                result = result.and(Err(error));
            }
        }
        self.emit_progress();
        let report = {
            let state = self.state();
            span.record(
                sharded_runtime::telemetry::ITEMS_READ,
                state.progress.scanned,
            );
            Report {
                progress: state.progress.clone(),
                failed: state.failures.clone(),
                left_alone: state.left_alone.clone(),
                rekeyed: state.rekeyed.clone(),
                checkpoint: self.checkpoint(&state),
            }
        };
        match (result, self.superseded_by(), &self.unit) {
            (Ok(()), Some(newer_run), Some(unit)) => Err(MigrateError::Superseded {
                unit: unit.to_string(),
                this_run: self.run_number(),
                newer_run,
                report: Box::new(report),
            }),
            (result, ..) => Self::outcome(result, report),
        }
    }

    /// A run's result from its parts' and its report.
    fn outcome(result: Result<(), Error>, report: Report) -> Result<Report, MigrateError> {
        match result {
            Err(source) => Err(MigrateError::Incomplete {
                report: Box::new(report),
                source: Some(Box::new(source)),
            }),
            Ok(()) if report.progress.failed > 0 => Err(MigrateError::Incomplete {
                report: Box::new(report),
                source: None,
            }),
            Ok(()) => Ok(report),
        }
    }

    /// Counts what is left: see [`Migration::remaining`].
    pub(super) async fn count_remaining(self) -> Result<Remaining, MigrateError> {
        self.parts(true).await?;
        let state = self.state();
        let mut left_alone = Foreign::default();
        left_alone.examples = state
            .left_alone
            .iter()
            .take(MAX_FOREIGN_EXAMPLES)
            .cloned()
            .collect();
        left_alone.count = state.progress.left_alone;
        Ok(Remaining {
            items: state.remaining,
            left_alone,
        })
    }

    /// One part, page by page from its position; a checkpoint after each page.
    ///
    /// A pipeline: while a page's old copies wait out the delete delay, the next pages are
    /// read and copied (at most [`MAX_WAITING_PAGES`] waiting), so the delay costs a part
    /// latency, not throughput. Pages finish in order, so a checkpoint never passes a page
    /// whose old copies are not all deleted, nor (see [`reached`](Self::reached)) a page with
    /// an item that could not be moved.
    async fn part(&self, part: usize, counting: bool) -> Result<(), Error> {
        let start = match &self.state().positions[part] {
            Position::Done => return Ok(()),
            Position::Start => None,
            Position::After(key) => Some(key.clone()),
        };
        let mut reading = Some(Box::pin(self.read_page(part, start, counting)));
        let mut finishing = FuturesOrdered::new();
        loop {
            tokio::select! {
                // Finished pages first: their checkpoints, and room for more pages.
                biased;
                Some(finished) = finishing.next(), if !finishing.is_empty() => {
                    let end: PageEnd = finished?;
                    self.reached(part, end, counting);
                    if !counting {
                        self.record(false).await?;
                        if self.superseded_by().is_some() {
                            return Ok(());
                        }
                    }
                }
                read = async {
                    match reading.as_mut() {
                        Some(page) => page.await,
                        None => std::future::pending().await,
                    }
                }, if reading.is_some() && finishing.len() < MAX_WAITING_PAGES => {
                    let (pending, end) = read?;
                    reading = end
                        .next
                        .clone()
                        .map(|key| Box::pin(self.read_page(part, Some(key), counting)));
                    let due = tokio::time::Instant::now() + self.delete_delay;
                    finishing.push_back(self.finish_page(pending, end, due));
                }
                else => return Ok(()),
            }
        }
    }

    /// Reads the page of `part` after `start`, and makes the first step of every item on it
    /// (or, counting, counts what is left); returns the old copies to delete, where the part
    /// resumes after the page, and whether an item on it could not be moved.
    async fn read_page(
        &self,
        part: usize,
        start: Option<Item>,
        counting: bool,
    ) -> Result<(Vec<Pending>, PageEnd), Error> {
        let page = self.source.page(part, start).await?;
        let found: Vec<(Item, Found)> = page
            .items
            .into_iter()
            .map(|item| {
                let found = classify::<E>(&item, self.rekey);
                (item, found)
            })
            .filter(|(_, found)| !matches!(found, Found::NotOurs))
            .collect();
        let (foreign, found): (Vec<_>, Vec<_>) = found
            .into_iter()
            .partition(|(_, f)| matches!(f, Found::Foreign(_)));
        for (item, found) in foreign {
            if let Found::Foreign(reason) = found {
                self.leave_alone(&item, reason);
            }
        }
        {
            let mut state = self.state();
            state.progress.pages += 1;
            state.progress.read_units += page.read_units;
            state.progress.scanned += found.len() as u64;
            state.progress.examined += page.examined;
            if counting {
                state.remaining += found
                    .iter()
                    .filter(|(_, f)| matches!(f, Found::Move | Found::Rekey | Found::Tag))
                    .count() as u64;
            }
        }
        let failures = PageFailures::default();
        let pending = if counting {
            Vec::new()
        } else {
            stream::iter(found)
                .map(|(item, found)| self.first_step(item, found, &failures))
                .buffer_unordered(self.concurrency)
                .try_filter_map(|pending| std::future::ready(Ok(pending)))
                .try_collect()
                .await?
        };
        let end = PageEnd {
            next: page.next,
            failed: failures.any(),
        };
        Ok((pending, end))
    }

    /// Deletes a page's old copies once `due` (the delete delay after its copies) has come;
    /// returns how the page ended: `end`, failed too if an old copy could not be deleted.
    async fn finish_page(
        &self,
        pending: Vec<Pending>,
        end: PageEnd,
        due: tokio::time::Instant,
    ) -> Result<PageEnd, Error> {
        let failures = PageFailures::default();
        if !pending.is_empty() {
            tokio::time::sleep_until(due).await;
            stream::iter(pending)
                .map(|pending| self.second_step(pending, &failures))
                .buffer_unordered(self.concurrency)
                .try_collect::<()>()
                .await?;
        }
        Ok(PageEnd {
            next: end.next,
            failed: end.failed || failures.any(),
        })
    }

    /// A page of `part` is done: its position moves on, and the checkpoint is offered.
    ///
    /// Unless an item of this page, or of an earlier page of the part, could not be moved:
    /// then the part's position stays where that page starts for the rest of the run (a
    /// position is one key per part, so it cannot skip a page and pass the next), and a run
    /// resumed from any checkpoint of this one reads that page again. The checkpoint is still
    /// offered, so a run whose first page failed leaves one to resume from.
    fn reached(&self, part: usize, end: PageEnd, counting: bool) {
        let checkpoint = {
            let mut state = self.state();
            state.held[part] |= end.failed;
            if !state.held[part] {
                state.positions[part] = match end.next {
                    Some(key) => Position::After(key),
                    None => Position::Done,
                };
            }
            self.checkpoint(&state)
        };
        if !counting {
            if let Some(hook) = &self.on_checkpoint {
                hook(&checkpoint);
            }
        }
        self.emit_progress();
    }

    /// Copies (or, with no delay, moves) one item, reading it again after every conflict;
    /// returns the old copy to delete, if any.
    async fn first_step(
        &self,
        item: Item,
        found: Found,
        page: &PageFailures,
    ) -> Result<Option<Pending>, Error> {
        let two_steps = !self.delete_delay.is_zero();
        let (mut item, mut found) = (item, found);
        let mut attempt = 0;
        // The error of the last attempt, if DynamoDB answered it with one: what a failure
        // after the last attempt reports, rather than a conflict it never had.
        let mut last_error: Option<Error> = None;
        loop {
            match found {
                Found::InPlace => {
                    self.tally(|p| p.in_place += 1);
                    return Ok(None);
                }
                // Read again, it is no longer this entity's: another entity took the key.
                Found::NotOurs => {
                    self.tally(|p| p.gone += 1);
                    return Ok(None);
                }
                Found::Foreign(reason) => {
                    self.leave_alone(&item, reason);
                    return Ok(None);
                }
                Found::Move | Found::Rekey | Found::Tag => {}
            }
            if attempt == self.max_attempts {
                let reason = match &last_error {
                    Some(error) => format!(
                        "DynamoDB failed the last of {} attempts: {error}; nothing of it was \
                         lost: run the migration again",
                        self.max_attempts
                    ),
                    None => format!(
                        "it changed (or DynamoDB throttled the move) at each of {} attempts; \
                         nothing of it was lost: run the migration again",
                        self.max_attempts
                    ),
                };
                self.fail(page, &item, reason);
                return Ok(None);
            }
            attempt += 1;
            let estimate = estimated_units(item_size(&item) as u64);
            let outcome = {
                let _permit = self.permit().await;
                let reserved = self.reserve(estimate).await;
                let result = if matches!(found, Found::Tag) {
                    tag_in_place::<E>(self.store(), &item).await.map(|step| {
                        (
                            match step.outcome {
                                TagOutcome::Tagged => Outcome::Done(|p| p.tagged += 1),
                                TagOutcome::Changed => Outcome::Again,
                                TagOutcome::Throttled => Outcome::Throttled,
                            },
                            step.write_units,
                        )
                    })
                } else if two_steps {
                    copy_item::<E>(self.store(), &item).await.map(|step| {
                        (
                            match step.outcome {
                                CopyOutcome::Copied => Outcome::Pending { copied: true },
                                CopyOutcome::Taken => Outcome::Pending { copied: false },
                                CopyOutcome::InPlace => Outcome::Done(|p| p.in_place += 1),
                                CopyOutcome::Changed => Outcome::Again,
                                CopyOutcome::Throttled => Outcome::Throttled,
                                CopyOutcome::Occupied => Outcome::Occupied,
                            },
                            step.write_units,
                        )
                    })
                } else {
                    move_item::<E>(self.store(), &item).await.map(|step| {
                        (
                            match step.outcome {
                                MoveOutcome::Moved => Outcome::Done(|p| p.moved += 1),
                                MoveOutcome::Superseded => Outcome::Done(|p| p.superseded += 1),
                                MoveOutcome::InPlace => Outcome::Done(|p| p.in_place += 1),
                                MoveOutcome::Changed => Outcome::Again,
                                MoveOutcome::Throttled => Outcome::Throttled,
                                MoveOutcome::Occupied => Outcome::Occupied,
                            },
                            step.write_units,
                        )
                    })
                };
                let units = result.as_ref().map_or(0.0, |(_, units)| *units);
                self.settle(reserved, units);
                result
            };
            let rekeyed = matches!(found, Found::Rekey);
            match outcome {
                Ok((Outcome::Done(count), _)) => {
                    self.tally(count);
                    if rekeyed {
                        self.rekeyed(&item);
                    }
                    return Ok(None);
                }
                Ok((Outcome::Pending { copied }, _)) => {
                    if rekeyed && copied {
                        self.rekeyed(&item);
                    }
                    // The copy marked the old copy: its delete expects it so.
                    let old = if copied {
                        marked(E::SCHEMA, &item)
                    } else {
                        item
                    };
                    return Ok(Some(Pending { old, copied }));
                }
                Ok((Outcome::Occupied, _)) => {
                    self.fail(
                        page,
                        &item,
                        "its current place holds an item that is not the entity's (another \
                         service wrote it there, and the repository cannot read it as the \
                         entity): the original is kept, nothing was written; remove or fix the \
                         item at the current place, then run the migration again"
                            .to_owned(),
                    );
                    return Ok(None);
                }
                Ok((Outcome::Again, _)) => {
                    last_error = None;
                    self.tally(|p| p.conflicts += 1);
                }
                Ok((Outcome::Throttled, _)) => {
                    last_error = None;
                    self.tally(|p| p.conflicts += 1);
                    backoff(attempt).await;
                }
                Err(error) if is_missing_table(&error) => return Err(error),
                Err(error) if retriable(&error) => {
                    backoff(attempt).await;
                    last_error = Some(error);
                }
                Err(error) => {
                    self.fail(page, &item, error.to_string());
                    return Ok(None);
                }
            }
            // Read it again, consistently: it may have changed, moved or gone.
            match self.read_again(&item).await {
                Ok(None) => {
                    self.tally(|p| p.gone += 1);
                    return Ok(None);
                }
                Ok(Some(again)) => {
                    found = classify::<E>(&again, self.rekey);
                    item = again;
                }
                Err(error) if is_missing_table(&error) => return Err(error),
                Err(error) => {
                    self.fail(page, &item, error.to_string());
                    return Ok(None);
                }
            }
        }
    }

    /// Deletes the old copy of an item now at its current place.
    async fn second_step(&self, pending: Pending, page: &PageFailures) -> Result<(), Error> {
        let done = |p: &mut Progress| {
            if pending.copied {
                p.moved += 1;
            } else {
                p.superseded += 1;
            }
        };
        for attempt in 1..=self.max_attempts {
            let estimate = write_units(item_size(&pending.old) as u64) as f64;
            let result = {
                let _permit = self.permit().await;
                let reserved = self.reserve(estimate).await;
                let result = delete_stale::<E>(self.store(), &pending.old).await;
                self.settle(reserved, result.as_ref().map_or(0.0, |s| s.write_units));
                result
            };
            match result {
                Ok(step) if step.outcome == DeleteOutcome::Deleted => {
                    self.tally(done);
                    return Ok(());
                }
                Ok(step) if step.outcome == DeleteOutcome::Throttled => {
                    self.tally(|p| p.conflicts += 1);
                    backoff(attempt).await;
                }
                Ok(_) => {
                    // Refused: the old copy went (a writer deleted the item, or moved it
                    // itself) or changed after it was copied.
                    return match self.read_again(&pending.old).await {
                        Ok(None) => {
                            self.tally(done);
                            Ok(())
                        }
                        Ok(Some(_)) => {
                            self.fail(
                                page,
                                &pending.old,
                                "its old copy changed after it was copied to its current place \
                                 (only a writer of the previous layout changes an old copy): \
                                 both copies are kept; compare them, delete the one to drop, \
                                 and make every writer declare the transition"
                                    .to_owned(),
                            );
                            Ok(())
                        }
                        Err(error) if is_missing_table(&error) => Err(error),
                        Err(error) => {
                            self.fail(page, &pending.old, error.to_string());
                            Ok(())
                        }
                    };
                }
                Err(error) if is_missing_table(&error) => return Err(error),
                Err(error) if retriable(&error) => backoff(attempt).await,
                Err(error) => {
                    self.fail(page, &pending.old, error.to_string());
                    return Ok(());
                }
            }
        }
        self.fail(
            page,
            &pending.old,
            format!(
                "its old copy could not be deleted in {} attempts (DynamoDB throttled); it is \
                 stale and hidden from queries: run the migration again",
                self.max_attempts
            ),
        );
        Ok(())
    }

    /// A consistent `GetItem` of the item at `old`'s key.
    async fn read_again(&self, old: &Item) -> Result<Option<Item>, Error> {
        let output = self
            .repo
            .client()
            .get_item()
            .table_name(self.repo.table())
            .set_key(Some(key_of(E::SCHEMA, old)))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| dynamo_error("GetItem", self.repo.table(), e))?;
        let units = output
            .consumed_capacity
            .as_ref()
            .and_then(|c| c.capacity_units)
            .unwrap_or_else(|| {
                let bytes = output.item.as_ref().map_or(0, item_size);
                read_units(bytes as u64, Consistency::Strong)
            });
        self.tally(|p| p.read_units += units);
        Ok(output.item)
    }

    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // The semaphore is never closed; were it, the request would simply not wait.
        self.permits.acquire().await.ok()
    }

    async fn reserve(&self, estimate: f64) -> f64 {
        match &self.writes {
            Some(budget) => budget.acquire_units(Some(estimate)).await,
            None => 0.0,
        }
    }

    fn settle(&self, reserved: f64, used: f64) {
        if let Some(budget) = &self.writes {
            budget.settle(reserved, used);
        }
        self.tally(|p| p.write_units += used);
    }

    fn tally(&self, change: impl FnOnce(&mut Progress)) {
        change(&mut self.state().progress);
        self.emit_progress();
    }

    /// An item in the entity's partitions that is not the entity's: left exactly where it
    /// is, counted and listed with the reason.
    fn leave_alone(&self, item: &Item, reason: ForeignReason) {
        __ops::count_foreign_item(E::SCHEMA.entity, &reason);
        let mut state = self.state();
        state.progress.left_alone += 1;
        if state.left_alone.len() < MAX_LISTED_FAILURES {
            state
                .left_alone
                .push(__ops::foreign_item(describe_key(E::SCHEMA, item), reason));
        }
        drop(state);
        self.emit_progress();
    }

    /// An item whose keys were not in canonical form, moved to the key its attributes give
    /// (the run was asked to re-key).
    fn rekeyed(&self, old: &Item) {
        let to = rebuilt::<E>(old)
            .map(|new| describe_key(E::SCHEMA, &new))
            .unwrap_or_default();
        let mut state = self.state();
        state.progress.rekeyed += 1;
        if state.rekeyed.len() < MAX_LISTED_FAILURES {
            state.rekeyed.push(Rekeyed {
                from: describe_key(E::SCHEMA, old),
                to,
            });
        }
    }

    /// An item that could not be moved: counted, listed with the reason, and marked on its
    /// `page`, whose part's checkpoint then stops short of it.
    fn fail(&self, page: &PageFailures, item: &Item, reason: String) {
        page.mark();
        let mut state = self.state();
        state.progress.failed += 1;
        if state.failures.len() < MAX_LISTED_FAILURES {
            state.failures.push(Failure {
                key: describe_key(E::SCHEMA, item),
                reason,
            });
        }
        drop(state);
        self.emit_progress();
    }

    /// Replaces the unit's record in the table, if this run is a unit's: when one is due
    /// (at most every [`RECORD_EVERY`]), or `now`. Its write is charged to the budget, and
    /// counted in the record it writes, so a finished run's record holds all it spent.
    ///
    /// A later run of the unit holding the record stops this one
    /// ([`superseded_by`](Self::superseded_by)), its record left as that run wrote it.
    async fn record(&self, now: bool) -> Result<(), Error> {
        let Some(unit) = &self.unit else {
            return Ok(());
        };
        if self.superseded_by().is_some() {
            return Ok(());
        }
        let (stored_bytes, claim) = {
            let mut last = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
            let due = now || last.at.is_none_or(|at| at.elapsed() >= RECORD_EVERY);
            if !due {
                return Ok(());
            }
            // The run's first write claims its number: only over a record of an earlier run.
            let claim = last.at.is_none();
            last.at = Some(tokio::time::Instant::now());
            (last.bytes, claim)
        };
        let (item, bytes, own) = {
            let mut state = self.state();
            let earlier = self.earlier.unwrap_or_default();
            let p = &state.progress;
            let record = UnitRecord {
                checkpoint: self.checkpoint(&state),
                progress: UnitProgress {
                    scanned: earlier.scanned + p.scanned,
                    moved: earlier.moved + p.moved,
                    failed: p.failed,
                    write_units: earlier.write_units + p.write_units,
                    elapsed: earlier.elapsed + self.clock.now().saturating_sub(self.started),
                    runs: self.run_number(),
                    started_at_ms: match earlier.runs {
                        0 => self.started_at_ms,
                        _ => earlier.started_at_ms,
                    },
                    updated_at_ms: now_ms(),
                },
            };
            let written = counting_its_own_write(E::SCHEMA, unit, record, stored_bytes);
            // Counted with the snapshot it is written into: the report and the record agree.
            state.progress.write_units += written.2;
            written
        };
        let reserved = self.reserve(own).await;
        let (client, table) = (self.repo.client(), self.repo.table());
        let run = self.run_number();
        let written = write_record(client, table, E::SCHEMA, item, run, claim).await;
        let used = match &written {
            Ok(RecordWrite::Written(reported)) => {
                let mut last = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
                last.bytes = bytes;
                reported.unwrap_or(own)
            }
            // A write whose condition fails is charged all the same (DynamoDB does not say
            // how much on a failure): the estimate.
            Ok(RecordWrite::Superseded { newer_run }) => {
                self.superseded_by.store(*newer_run, Ordering::Relaxed);
                own
            }
            Err(_) => 0.0,
        };
        if let Some(budget) = &self.writes {
            budget.settle(reserved, used);
        }
        // Where DynamoDB charged other than the estimate (or nothing), the next record
        // carries the difference.
        if used != own {
            self.tally(|p| p.write_units += used - own);
        }
        written.map(|_| ())
    }

    /// This run's number among the unit's runs: one more than the record it started from.
    fn run_number(&self) -> u32 {
        self.earlier.map_or(0, |e| e.runs).saturating_add(1)
    }

    /// The number of the later run of the unit that holds its record, if one does.
    fn superseded_by(&self) -> Option<u32> {
        match self.superseded_by.load(Ordering::Relaxed) {
            0 => None,
            run => Some(run),
        }
    }

    fn checkpoint(&self, state: &State) -> Checkpoint {
        Checkpoint {
            positions: state.positions.clone(),
            ..self.base.clone()
        }
    }

    /// Brings the time and rate up to date and hands the counts to the hook.
    fn emit_progress(&self) {
        let progress = {
            let mut state = self.state();
            let elapsed = self.clock.now().saturating_sub(self.started);
            let units = state.progress.write_units;
            state.progress.elapsed = elapsed;
            let sample_due = state
                .samples
                .back()
                .is_none_or(|(at, _)| elapsed.saturating_sub(*at) >= Duration::from_millis(100));
            if sample_due {
                state.samples.push_back((elapsed, units));
            }
            while state
                .samples
                .front()
                .is_some_and(|(at, _)| elapsed.saturating_sub(*at) > RATE_WINDOW)
            {
                state.samples.pop_front();
            }
            state.progress.current_write_units_per_second = match state.samples.front() {
                Some((at, before)) if elapsed > *at => {
                    (units - before) / (elapsed - *at).as_secs_f64()
                }
                _ => state.progress.write_units_per_second(),
            };
            record_progress(E::SCHEMA.entity, &state.reported, &state.progress);
            state.reported = state.progress.clone();
            self.on_progress.as_ref().map(|_| state.progress.clone())
        };
        if let (Some(hook), Some(progress)) = (&self.on_progress, progress) {
            hook(&progress);
        }
    }
}

/// What a first step came to.
enum Outcome {
    /// Counted as this.
    Done(fn(&mut Progress)),
    /// At its current place; the old copy is to be deleted after the delay.
    Pending { copied: bool },
    /// Changed since read: read it again.
    Again,
    /// Throttled: wait, read it again.
    Throttled,
    /// Its current place holds an item that is not the entity's: kept, reported.
    Occupied,
}

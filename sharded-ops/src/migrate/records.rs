//! Where each unit of a migration is, recorded in the table itself, so completion is a fact
//! the table answers whichever machine ran the unit: [`PlanStatus`], [`UnitStatus`],
//! [`UnitState`].
//!
//! A unit's record is one item of the migration's own, in the entity's table: partition
//! `_sharded#migration#<Entity>#<unit id>` (sort key `_sharded#migration` when the table has
//! one), tagged `_sharded#migration` where the table tags items, so no query, scan or
//! migration of any entity takes it for one of its items. It holds the unit's checkpoint
//! token, its counts and its layout, and is replaced at most every second while the unit runs
//! and when it stops: by the run that wrote it or by a later run of the unit, never by an
//! earlier one (a run whose unit was started again since stops with
//! [`MigrateError::Superseded`](super::MigrateError::Superseded), so a killed worker's last
//! write landing late cannot hide the newer run's record). [`Migration::forget`] deletes a
//! plan's records once its units are done.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use aws_sdk_dynamodb::Client;

use sharded_runtime::__ops::dynamo_error;
use sharded_runtime::capacity::{item_size, write_units};
use sharded_runtime::keys::Item;
use sharded_runtime::schema::EntitySchema;
use sharded_runtime::{Error, ShardedEntity};

use super::checkpoint::Checkpoint;
use super::error::{MigrateError, MigrationRefusal};
use super::migration::Migration;
use super::units::{Plan, Unit};

/// The partition key prefix of a unit's record (the entity's name and the unit's id follow);
/// one of `OWN_ITEMS_PREFIX`'s, never an entity's key.
pub(crate) const RECORD_PREFIX: &str = "_sharded#migration#";

/// The sort key of a unit's record, in a table with a sort key; also its tag.
pub(crate) const RECORD_MARK: &str = "_sharded#migration";

/// How often a running unit replaces its record at most (and always when it stops): a unit
/// killed in between resumes from a checkpoint at most this old, reading again what it read
/// since (moving is idempotent).
pub(crate) const RECORD_EVERY: Duration = Duration::from_secs(1);

/// The record's attribute naming the layout it is of: the fence between runs of a unit only
/// holds within one layout (a new layout's first run must replace an old layout's record).
const LAYOUT: &str = "layout";

/// What a unit's runs did, added up over every run of it (but `failed` and `complete`, which
/// are its last run's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct UnitProgress {
    /// Items of the entity read.
    pub scanned: u64,
    /// Items moved to their current place.
    pub moved: u64,
    /// Items its last run could not move (they stay at their previous place; run the unit
    /// again).
    pub failed: u64,
    /// Write units spent.
    pub write_units: f64,
    /// Time spent running, over every run.
    pub elapsed: Duration,
    /// How many runs recorded it.
    pub runs: u32,
    /// When its first run started, in milliseconds since the Unix epoch (the machine's clock).
    pub started_at_ms: u64,
    /// When it was last recorded, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
}

/// A unit's record as stored: its checkpoint and its counts.
#[derive(Debug, Clone)]
pub(crate) struct UnitRecord {
    pub checkpoint: Checkpoint,
    pub progress: UnitProgress,
}

/// Where a unit of a plan is, from its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnitState {
    /// No record of this migration's layout: not run yet (or run under another layout).
    NotStarted,
    /// Started, not read to the end: running, or stopped (run it again: it resumes).
    Started,
    /// Read to the end, every item dealt with.
    Done,
    /// Read to the end, with items its last run could not move: run it again.
    Failed {
        /// Items not moved.
        items: u64,
    },
}

/// One unit of a plan, and where it is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnitStatus {
    /// The unit.
    pub unit: Unit,
    /// Where it is.
    pub state: UnitState,
    /// What its runs did, if it has a record.
    pub progress: Option<UnitProgress>,
}

/// Where every unit of a [`Plan`] is, from their records in the table
/// ([`Migration::status`](super::Migration::status)).
///
/// ```no_run
/// use sharded::migrate::{Migrate, UnitState};
/// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>, plan: &sharded::migrate::Plan) -> Result<(), sharded::migrate::MigrateError> {
/// let status = repo.migrate().status(plan).await?;
/// for unit in &status.units {
///     if let UnitState::Failed { items } = unit.state {
///         eprintln!("{}: {items} items not moved, run it again", unit.unit);
///     }
/// }
/// if status.is_complete() {
///     println!("every unit done: check `remaining`, then remove the declaration");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlanStatus {
    /// Each unit of the plan, in the plan's order.
    pub units: Vec<UnitStatus>,
}

impl PlanStatus {
    /// How many units are in `state`.
    ///
    /// ```
    /// # fn demo(status: &sharded::migrate::PlanStatus) {
    /// use sharded::migrate::UnitState;
    /// println!("{} of {} done", status.count(|s| s == UnitState::Done), status.units.len());
    /// # }
    /// ```
    pub fn count(&self, state: impl Fn(UnitState) -> bool) -> usize {
        self.units.iter().filter(|u| state(u.state)).count()
    }

    /// Whether every unit read its segments to the end and moved every item it read. Items
    /// an old-layout writer put behind a unit after it passed (a service not yet redeployed)
    /// are not in any record: [`remaining`](super::Migration::remaining) counts them, and at
    /// `remaining == 0` too the layout declaration can be removed.
    ///
    /// ```
    /// # fn demo(status: &sharded::migrate::PlanStatus) {
    /// if !status.is_complete() {
    ///     println!("units left to run");
    /// }
    /// # }
    /// ```
    pub fn is_complete(&self) -> bool {
        self.units.iter().all(|u| u.state == UnitState::Done)
    }

    /// The fleet's counts: every unit's record added up.
    ///
    /// ```
    /// # fn demo(status: &sharded::migrate::PlanStatus) {
    /// println!("{} moved", status.total().moved);
    /// # }
    /// ```
    pub fn total(&self) -> UnitProgress {
        let mut total = UnitProgress::default();
        for p in self.units.iter().filter_map(|u| u.progress) {
            total.scanned += p.scanned;
            total.moved += p.moved;
            total.failed += p.failed;
            total.write_units += p.write_units;
            total.elapsed += p.elapsed;
            total.runs += p.runs;
            if total.started_at_ms == 0 || p.started_at_ms < total.started_at_ms {
                total.started_at_ms = p.started_at_ms;
            }
            total.updated_at_ms = total.updated_at_ms.max(p.updated_at_ms);
        }
        total
    }
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

/// The primary key of `unit`'s record.
fn record_key(schema: &EntitySchema, unit: &Unit) -> Item {
    let mut key = Item::from([(
        schema.pk.attribute.to_owned(),
        AttributeValue::S(format!("{RECORD_PREFIX}{}#{unit}", schema.entity)),
    )]);
    if let Some(sk) = schema.sk {
        key.insert(
            sk.attribute.to_owned(),
            AttributeValue::S(RECORD_MARK.to_owned()),
        );
    }
    key
}

fn record_item(schema: &EntitySchema, unit: &Unit, record: &UnitRecord) -> Item {
    let mut item = record_key(schema, unit);
    if let Some(tag) = schema.tag_attribute() {
        item.insert(tag.to_owned(), AttributeValue::S(RECORD_MARK.to_owned()));
    }
    let number = |n: String| AttributeValue::N(n);
    let p = &record.progress;
    item.extend([
        (
            "checkpoint".to_owned(),
            AttributeValue::S(record.checkpoint.to_token()),
        ),
        ("unit".to_owned(), AttributeValue::S(unit.to_string())),
        (
            LAYOUT.to_owned(),
            AttributeValue::S(record.checkpoint.layout.clone()),
        ),
        (
            "complete".to_owned(),
            AttributeValue::Bool(record.checkpoint.is_complete()),
        ),
        ("scanned".to_owned(), number(p.scanned.to_string())),
        ("moved".to_owned(), number(p.moved.to_string())),
        ("failed".to_owned(), number(p.failed.to_string())),
        ("write_units".to_owned(), number(p.write_units.to_string())),
        (
            "elapsed_ms".to_owned(),
            number(p.elapsed.as_millis().to_string()),
        ),
        ("runs".to_owned(), number(p.runs.to_string())),
        ("started_ms".to_owned(), number(p.started_at_ms.to_string())),
        ("updated_ms".to_owned(), number(p.updated_at_ms.to_string())),
    ]);
    item
}

/// Reads a record back; `None` for one that is not a record this release can read (it is
/// then run again from the start, which is safe: moving is idempotent).
fn from_item(item: &Item) -> Option<UnitRecord> {
    let checkpoint = item
        .get("checkpoint")?
        .as_s()
        .ok()?
        .parse::<Checkpoint>()
        .ok()?;
    let number = |name: &str| -> Option<f64> { item.get(name)?.as_n().ok()?.parse().ok() };
    let whole = |name: &str| number(name).map_or(0, |n| n.max(0.0) as u64);
    Some(UnitRecord {
        checkpoint,
        progress: UnitProgress {
            scanned: whole("scanned"),
            moved: whole("moved"),
            failed: whole("failed"),
            write_units: number("write_units").unwrap_or(0.0),
            elapsed: Duration::from_millis(whole("elapsed_ms")),
            runs: whole("runs").try_into().unwrap_or(u32::MAX),
            started_at_ms: whole("started_ms"),
            updated_at_ms: whole("updated_ms"),
        },
    })
}

/// The record of `unit`, if there is one of this layout (strongly consistent: a worker
/// resuming a unit another just stopped sees its last record).
pub(crate) async fn read_record(
    client: &Client,
    table: &str,
    schema: &EntitySchema,
    unit: &Unit,
) -> Result<StoredRecord, Error> {
    let output = client
        .get_item()
        .table_name(table)
        .set_key(Some(record_key(schema, unit)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| dynamo_error("GetItem", table, e))?;
    let layout = schema.pk.layout_description();
    Ok(StoredRecord {
        record: output
            .item
            .as_ref()
            .and_then(from_item)
            .filter(|record| record.checkpoint.layout == layout),
        bytes: output.item.as_ref().map_or(0, item_size),
    })
}

/// What a unit's run finds of its record when it starts.
pub(crate) struct StoredRecord {
    /// The record, if it is one this release reads, of the entity's layout.
    pub record: Option<UnitRecord>,
    /// The stored item's size, whatever it holds (0: none): replacing it is charged by the
    /// larger of it and the new record.
    pub bytes: usize,
}

/// `record` as the item to write, its size and the write units writing it costs, with those
/// units counted in its own `write_units`: the record of a finished run then holds every write
/// unit the run reported, its last write included. DynamoDB charges a `PutItem` that replaces
/// an item by the larger of the two, so `stored_bytes` is the record's size in the table.
pub(crate) fn counting_its_own_write(
    schema: &EntitySchema,
    unit: &Unit,
    mut record: UnitRecord,
    stored_bytes: usize,
) -> (Item, usize, f64) {
    let spent = record.progress.write_units;
    let mut own = 1.0;
    loop {
        record.progress.write_units = spent + own;
        let item = record_item(schema, unit, &record);
        let bytes = item_size(&item);
        // The count only grows with `own`, and the item with the count: this ends at the
        // first `own` that covers the item it is written into.
        let units = write_units(bytes.max(stored_bytes) as u64) as f64;
        if units <= own {
            return (item, bytes, own);
        }
        own = units;
    }
}

/// What became of a record's write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RecordWrite {
    /// Written; the write units DynamoDB says it used, if it says.
    Written(Option<f64>),
    /// Not written: the stored record is a later run's of the unit (`newer_run`), which this
    /// run must leave alone.
    Superseded { newer_run: u32 },
}

/// Replaces a unit's record with `item` (see [`counting_its_own_write`]), the record of the
/// unit's run number `run`, unless the stored record is a later run's of the same layout, or,
/// when the write is the run's `claim` (its first), the run's own number.
///
/// Runs of a unit are numbered by their records (a run's number is one more than the record
/// it found), and a run claims its number with its first write, before it reads: of two runs
/// started from the same record, the second claim is refused. So a record is only ever
/// replaced by the run that claimed it or a later one: a killed worker's write, sent before
/// the kill and landing late, cannot replace its unit's run again's newer record, and the
/// earlier of two runs of one unit stops at its next record.
pub(crate) async fn write_record(
    client: &Client,
    table: &str,
    schema: &EntitySchema,
    item: Item,
    run: u32,
    claim: bool,
) -> Result<RecordWrite, Error> {
    let layout = item.get(LAYOUT).cloned();
    let output = client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(format!(
            "attribute_not_exists(#pk) OR attribute_not_exists(#layout) OR #layout <> :layout \
             OR attribute_not_exists(#runs) OR #runs {} :run",
            if claim { "<" } else { "<=" }
        ))
        .expression_attribute_names("#pk", schema.pk.attribute)
        .expression_attribute_names("#layout", LAYOUT)
        .expression_attribute_names("#runs", "runs")
        .set_expression_attribute_values(Some(HashMap::from([
            (
                ":layout".to_owned(),
                layout.unwrap_or(AttributeValue::Null(true)),
            ),
            (":run".to_owned(), AttributeValue::N(run.to_string())),
        ])))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
        .send()
        .await;
    match output {
        Ok(output) => Ok(RecordWrite::Written(
            output.consumed_capacity.and_then(|c| c.capacity_units),
        )),
        Err(e) => match e.as_service_error() {
            Some(PutItemError::ConditionalCheckFailedException(stored)) => {
                let newer_run = stored
                    .item()
                    .and_then(|item| item.get("runs")?.as_n().ok()?.parse::<u32>().ok())
                    // Only a later run's record (or, for a claim, another of the same number)
                    // fails the condition.
                    .unwrap_or(run.saturating_add(u32::from(!claim)));
                Ok(RecordWrite::Superseded { newer_run })
            }
            _ => Err(dynamo_error("PutItem", table, e)),
        },
    }
}

/// Where each unit of `plan` is, from the records in the table (`BatchGetItem`, strongly
/// consistent, 100 keys a request, unprocessed keys asked again).
pub(crate) async fn plan_status(
    client: &Client,
    schema: &EntitySchema,
    plan: &Plan,
) -> Result<PlanStatus, MigrateError> {
    let table = plan.table.as_str();
    let layout = schema.pk.layout_description();
    if plan.entity != schema.entity || plan.layout != layout {
        return Err(MigrationRefusal::PlanOfOtherEntity {
            plan_entity: plan.entity.clone(),
            plan_layout: plan.layout.clone(),
            entity: schema.entity,
            layout,
        }
        .into());
    }
    let mut found: HashMap<String, UnitRecord> = HashMap::new();
    let pk = schema.pk.attribute;
    for chunk in plan.units.chunks(100) {
        let mut keys: Vec<Item> = chunk.iter().map(|u| record_key(schema, u)).collect();
        // Unprocessed keys are asked again, a little later each time, a bounded number of
        // times: a status that cannot be read says so rather than guessing.
        for attempt in 0..10u32 {
            if keys.is_empty() {
                break;
            }
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50 << attempt.min(5))).await;
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(keys.clone()))
                .consistent_read(true)
                .build()
                .map_err(|source| Error::Build {
                    what: "a status request",
                    source,
                })?;
            let output = client
                .batch_get_item()
                .request_items(table, request)
                .send()
                .await
                .map_err(|e| dynamo_error("BatchGetItem", table, e))?;
            for item in output
                .responses
                .unwrap_or_default()
                .remove(table)
                .unwrap_or_default()
            {
                if let (Some(AttributeValue::S(key)), Some(record)) =
                    (item.get(pk), from_item(&item))
                {
                    found.insert(key.clone(), record);
                }
            }
            keys = output
                .unprocessed_keys
                .unwrap_or_default()
                .remove(table)
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        if !keys.is_empty() {
            let (table, unread) = (table.to_owned(), keys.len());
            return Err(MigrationRefusal::StatusUnread { table, unread }.into());
        }
    }
    let units = plan
        .units
        .iter()
        .map(|unit| {
            let key = format!("{RECORD_PREFIX}{}#{unit}", schema.entity);
            let record = found.get(&key).filter(|r| r.checkpoint.layout == layout);
            UnitStatus {
                unit: unit.clone(),
                state: state_of(record),
                progress: record.map(|r| r.progress),
            }
        })
        .collect();
    Ok(PlanStatus { units })
}

/// Where a unit is, from its record of the plan's layout (`None`: none).
fn state_of(record: Option<&UnitRecord>) -> UnitState {
    match record {
        None => UnitState::NotStarted,
        Some(r) if r.checkpoint.is_complete() => UnitState::Done,
        Some(r) if r.progress.failed > 0 => UnitState::Failed {
            items: r.progress.failed,
        },
        Some(_) => UnitState::Started,
    }
}

/// The status entry point, here beside the records so the builder's file needs nothing of them.
impl<E: ShardedEntity> Migration<E> {
    /// Where each unit of `plan` is, from the units' records in the table (one
    /// `BatchGetItem` per 100 units), wherever they ran: done, failed (with how many items),
    /// started, or not started. See [`PlanStatus`].
    ///
    /// ```no_run
    /// use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>, plan: &sharded::migrate::Plan) -> Result<(), sharded::migrate::MigrateError> {
    /// let status = repo.migrate().status(plan).await?;
    /// if status.is_complete() && repo.migration_remaining().await? == 0 {
    ///     println!("the layout declaration can be removed");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status(self, plan: &Plan) -> Result<PlanStatus, MigrateError> {
        if plan.table != self.repo.table() {
            return Err(MigrationRefusal::PlanOfOtherTable {
                plan_table: plan.table.clone(),
                table: self.repo.table().to_owned(),
            }
            .into());
        }
        plan_status(self.repo.client(), E::SCHEMA, plan).await
    }

    /// Deletes the records of `plan`'s done units, once the migration is over: they are
    /// items of the migration's own in the entity's table, which other services' scans see
    /// too. Returns how many it deleted. Nothing else is touched.
    ///
    /// Refused ([`MigrationRefusal::UnitNotDone`]), deleting nothing, while a unit is started
    /// or failed: its record is where its next run resumes. A unit with no record has
    /// nothing to delete, so forgetting twice, or after a forget that stopped half-way, is
    /// fine. A record is deleted only while it still says done (a run started again in the
    /// meantime keeps it, and is refused as above). Forget once every unit is done and
    /// [`migration_remaining`](super::Migrate::migration_remaining) is 0 (the ops command
    /// line's `remaining --plan-file F --forget` does exactly that): a status read afterwards
    /// says "not started" for every unit.
    ///
    /// ```no_run
    /// use sharded::migrate::Migrate;
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>, plan: &sharded::migrate::Plan) -> Result<(), sharded::migrate::MigrateError> {
    /// let status = repo.migrate().status(plan).await?;
    /// if status.is_complete() && repo.migration_remaining().await? == 0 {
    ///     let deleted = repo.migrate().forget(plan).await?;
    ///     println!("{deleted} unit records deleted; the layout declaration can go");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn forget(self, plan: &Plan) -> Result<usize, MigrateError> {
        let (client, table) = (self.repo.client().clone(), self.repo.table().to_owned());
        let status = self.status(plan).await?;
        let not_done = status.units.iter().find_map(|u| match u.state {
            UnitState::Started => Some((u, "started")),
            UnitState::Failed { .. } => Some((u, "failed")),
            UnitState::Done | UnitState::NotStarted => None,
        });
        if let Some((u, state)) = not_done {
            let unit = u.unit.to_string();
            return Err(MigrationRefusal::UnitNotDone { unit, state }.into());
        }
        let mut deleted = 0;
        for u in status.units.iter().filter(|u| u.state == UnitState::Done) {
            let result = client
                .delete_item()
                .table_name(&table)
                .set_key(Some(record_key(E::SCHEMA, &u.unit)))
                // Gone already (another forget) is fine; a run started again is not.
                .condition_expression("attribute_not_exists(#pk) OR #complete = :done")
                .expression_attribute_names("#pk", E::SCHEMA.pk.attribute)
                .expression_attribute_names("#complete", "complete")
                .expression_attribute_values(":done", AttributeValue::Bool(true))
                .return_values(ReturnValue::AllOld)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match result {
                Ok(output) => deleted += usize::from(output.attributes.is_some()),
                Err(e) => match e.as_service_error() {
                    Some(DeleteItemError::ConditionalCheckFailedException(stored)) => {
                        // A run started again since: what its record says now.
                        let record = stored.item().and_then(from_item);
                        let unit = u.unit.to_string();
                        let state = match state_of(record.as_ref()) {
                            UnitState::Failed { .. } => "failed",
                            _ => "started",
                        };
                        return Err(MigrationRefusal::UnitNotDone { unit, state }.into());
                    }
                    _ => return Err(dynamo_error("DeleteItem", &table, e).into()),
                },
            }
        }
        Ok(deleted)
    }
}

//! The migration of one key whose layout changes: every item still at the previous count's
//! shards moved to its place at the new count, with the move every transition uses (copied
//! and marked, then the old copy deleted; the runtime's, through `__ops`), so a writer racing it loses
//! nothing. As the migration runner does, the old copies of a page are deleted a moment
//! ([`DELETE_DELAY`]) after the page's copies: a query reads the key's partitions at slightly
//! different instants, and an item copied and deleted between its reads of the new place and
//! of the old one would be in neither; copied first and deleted later, it is in one.

use aws_sdk_dynamodb::types::AttributeValue;
use futures::{stream, StreamExt};
use sharded_runtime::__ops::{
    decode, delete_stale, dynamo_error, is_marked, marked, move_item, recognize, DeleteOutcome,
    Depth, LayoutsParts, MoveOutcome, Prepared, Sent, Store,
};
use sharded_runtime::keys::Item;
use sharded_runtime::layouts::KeyEntry;
use sharded_runtime::schema::KeyLayout;
use sharded_runtime::{Error, ShardedEntity};

/// What one run of a key's migration did ([`ChangeLayout::migrate`](super::ChangeLayout::migrate),
/// and [`ChangeLayout::change`](super::ChangeLayout::change), the runs of a change added up).
///
/// ```no_run
/// # use sharded::{Error, Repo, ShardedEntity};
/// use sharded::layouts::{ChangeLayout, KeyMigration};
/// # async fn demo<E: ShardedEntity>(repo: Repo<E>) -> Result<(), Error> {
/// let run: KeyMigration = repo.layouts().migrate("GAME#g1").await?;
/// if run.left > 0 {
///     println!("{} items changed while they moved: run it again", run.left);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct KeyMigration {
    /// Items read at the previous count's shards.
    pub read: u64,
    /// Items moved to their new place (or whose old copy was removed because the new place
    /// held a newer write).
    pub moved: u64,
    /// Items whose place is the same at both counts: nothing to do.
    pub in_place: u64,
    /// Items there that are not the entity's: left alone.
    pub not_ours: u64,
    /// Items changed by a writer while they moved, or throttled: run the migration again.
    pub left: u64,
    /// Items whose new place holds something that is not the entity's: left where they are.
    pub blocked: u64,
    /// The write units the moves used (DynamoDB's consumed capacity, or an estimate).
    pub write_units: f64,
}

impl KeyMigration {
    pub(crate) fn add(&mut self, other: &KeyMigration) {
        self.read += other.read;
        self.moved += other.moved;
        self.in_place += other.in_place;
        self.not_ours += other.not_ours;
        self.left += other.left;
        self.blocked += other.blocked;
        self.write_units += other.write_units;
    }
}

/// How many moves run at once.
const MOVES_IN_FLIGHT: usize = 16;

/// How long an old copy stays after its item was copied (see the module docs): the runner's
/// default too.
const DELETE_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// Moves the items of logical key `key` at `entry.from` shards to their places at
/// `entry.to`.
///
/// `parts.write_units_per_second`: the budget of the moves' writes, if any; the migration
/// waits between pages to keep under it.
pub(super) async fn migrate_key<E: ShardedEntity>(
    parts: LayoutsParts<'_>,
    key: &str,
    entry: KeyEntry,
) -> Result<KeyMigration, Error> {
    let layout = entry.layout();
    let store = Store::new(parts.client(), parts.table()).in_layout(Some(layout));
    let mut report = KeyMigration::default();
    let started = std::time::Instant::now();
    for partition in previous_partitions::<E>(key, entry) {
        let items = read_partition::<E>(parts, &partition).await?;
        report.read += items.len() as u64;
        let outcomes: Vec<Result<Outcome, Error>> = stream::iter(items)
            .map(|item| {
                let partition = &partition;
                async move {
                    match target::<E>(&item, partition, entry)? {
                        None => Ok(Outcome::NotOurs),
                        Some(target) if target == *partition => Ok(Outcome::InPlace),
                        Some(_) => copy::<E>(store, layout, item).await,
                    }
                }
            })
            .buffer_unordered(MOVES_IN_FLIGHT)
            .collect()
            .await;
        let mut copied = Vec::new();
        for outcome in outcomes {
            match outcome? {
                Outcome::Copied(old, units) => {
                    report.write_units += units;
                    copied.push(old);
                }
                Outcome::NotOurs => report.not_ours += 1,
                Outcome::InPlace => report.in_place += 1,
                Outcome::Moved(outcome, units) => {
                    report.write_units += units;
                    match outcome {
                        MoveOutcome::InPlace => report.in_place += 1,
                        MoveOutcome::Moved | MoveOutcome::Superseded => report.moved += 1,
                        MoveOutcome::Changed | MoveOutcome::Throttled => report.left += 1,
                        MoveOutcome::Occupied => report.blocked += 1,
                    }
                }
            }
        }
        if !copied.is_empty() {
            tokio::time::sleep(DELETE_DELAY).await;
        }
        for old in copied {
            // Copied: the item is at its new place whatever the delete meets. An old copy that
            // stays (a writer changed it since, or the delete was throttled) is marked, so reads
            // take the new place's, but it is left: the migration is run again, and `finish`
            // finds it.
            let deleted = delete_stale::<E>(store, &marked(E::SCHEMA, &old)).await?;
            report.write_units += deleted.write_units;
            match deleted.outcome {
                DeleteOutcome::Deleted => report.moved += 1,
                DeleteOutcome::Changed | DeleteOutcome::Throttled => report.left += 1,
            }
        }
        if let Some(budget) = parts.write_units_per_second.filter(|b| *b > 0.0) {
            let due = std::time::Duration::from_secs_f64(report.write_units / budget);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
    }
    Ok(report)
}

/// Copies `old` to its place under `layout` and marks it, leaving its delete for later; a
/// copy refused (its new place taken, the old copy changed, a throttle) is the whole move
/// instead, whose outcome says what happened.
async fn copy<E: ShardedEntity>(
    store: Store<'_>,
    layout: KeyLayout,
    old: Item,
) -> Result<Outcome, Error> {
    if !is_marked(E::SCHEMA, &old) {
        if let Some(prepared) = Prepared::of_in::<E>(&old, Some(layout))? {
            if let Sent::Done(units) = prepared.send::<E>(store).await? {
                return Ok(Outcome::Copied(old, units));
            }
        }
    }
    let step = move_item::<E>(store, &old).await?;
    Ok(Outcome::Moved(step.outcome, step.write_units))
}

/// How many items of `key` are still at a previous shard that is not their place.
pub(super) async fn remaining<E: ShardedEntity>(
    parts: LayoutsParts<'_>,
    key: &str,
    entry: KeyEntry,
) -> Result<u64, Error> {
    let mut left = 0;
    for partition in previous_partitions::<E>(key, entry) {
        for item in read_partition::<E>(parts, &partition).await? {
            if target::<E>(&item, &partition, entry)?.is_some_and(|target| target != partition) {
                left += 1;
            }
        }
    }
    Ok(left)
}

enum Outcome {
    NotOurs,
    InPlace,
    /// Copied and marked, the old copy (as read) still to delete; the write units used.
    Copied(Item, f64),
    /// What the move did, and the write units it used.
    Moved(MoveOutcome, f64),
}

/// The previous count's partitions of `key`.
fn previous_partitions<E: ShardedEntity>(key: &str, entry: KeyEntry) -> Vec<String> {
    (0..entry.from)
        .map(|shard| {
            let mut partition = key.to_owned();
            E::SCHEMA.pk.suffix.write(&mut partition, shard);
            partition
        })
        .collect()
}

/// The place of `item`, stored in `partition`, at the new count, or `None` when it is not the
/// entity's: not recognised, or its fields give neither its place at the previous count nor at
/// the new one (a tagged item is held to its keys, as the migration runner holds it).
fn target<E: ShardedEntity>(
    item: &Item,
    partition: &str,
    entry: KeyEntry,
) -> Result<Option<String>, Error> {
    let mut completed = item.clone();
    if recognize::<E>(&mut completed, Depth::Whole).is_err() {
        return Ok(None);
    }
    let entity = decode::<E>(completed)?;
    let Some(input) = entity.__shard_input()? else {
        return Ok(None);
    };
    let (from, to) = (
        input.key_under(&E::SCHEMA.pk, entry.from),
        input.key_under(&E::SCHEMA.pk, entry.to),
    );
    Ok((partition == from || partition == to).then_some(to))
}

/// Every item of one partition, read consistently.
async fn read_partition<E: ShardedEntity>(
    parts: LayoutsParts<'_>,
    partition: &str,
) -> Result<Vec<Item>, Error> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let output = parts
            .client()
            .query()
            .table_name(parts.table())
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", E::SCHEMA.pk.attribute)
            .expression_attribute_values(":pk", AttributeValue::S(partition.to_owned()))
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| dynamo_error("Query", parts.table(), e))?;
        items.extend(output.items.unwrap_or_default());
        match output.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return Ok(items),
        }
    }
}

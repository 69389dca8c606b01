//! Moving one item from its previous layout to its current place, safely under concurrent
//! writers: the step the migration runner repeats, and what a write that meets an item at its
//! previous place does first.
//!
//! A move is two requests:
//!
//! - **copy and mark**, one `TransactWriteItems`: put the item at its current place, only if
//!   nothing is there (`attribute_not_exists`; a user's write to the current place since the
//!   transition was declared is newer than the old copy, and wins), marked as a move's copy;
//!   and mark the old copy as moved, only if it is unchanged since it was read (its version
//!   for a versioned entity, otherwise its attributes compared). Both or neither happen;
//! - **delete** ([`delete_stale`]): remove the marked old copy, only if it is still as marked.
//!
//! The marks (the table's [`move_attribute`](crate::keys::schema::TableSchema::move_attribute):
//! `copy` on the new copy, `moved` on the old one before its delete) let a DynamoDB stream
//! consumer tell a move's `INSERT` and `REMOVE` from a new item and a real delete, from one
//! record alone. A transaction cannot write one item twice, so the old copy is marked in the
//! copy's transaction and deleted by a request of its own.
//!
//! When the copy is refused because the current place holds an item of the entity, the old
//! copy is stale: it is marked and deleted on its own ([`delete_stale`]), still only if
//! unchanged. An old copy already marked (a move stopped between its two requests) is never
//! copied again: its item lived at its current place when it was marked, and if that place is
//! empty now the item was deleted since. When the mark is refused, the old copy changed (or
//! went) after it was read: nothing was written, and the caller reads it again. Nothing is
//! overwritten and nothing is lost; every refusal is an outcome the caller counts.
//!
//! The runner (`sharded-ops`) sends the same two requests a moment apart ([`Prepared::send`],
//! then [`delete_stale`] after the pages it copied): a query reads the partitions of a logical
//! key one request each, at slightly different instants, and an item whose two copies changed
//! places between the query's read of its new place and its read of its old place would be in
//! neither answer. Copied first and deleted later, it is in at least one (in both, the query
//! shows it once: the old copy is hidden while its current place holds it). The copy marks
//! the old copy in the same transaction, only if it is unchanged, so an item deleted by a
//! writer is never brought back.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;

use crate::access::condition::{values_of, Names, Values};
use crate::access::entity::{decode, describe_key, is_ours, recognize, Item, ShardedEntity};
use crate::access::placement::marked_moved;
use crate::access::recognize::{point_read_error, Depth, ForeignReason, NotOurs};
use crate::access::retry::RetryPolicy;
use crate::access::write::idempotent::{self, FirstSent, TokenRequest};
use crate::access::write::write_rules::{entity_guard, key_of};
use crate::capacity::units::{check_item_size, item_size, transactional_write_units, write_units};
use crate::error::{Error, UpdateRefusal};
use crate::keys::schema::{EntitySchema, KeyLayout, MOVE_COPY, MOVE_MOVED};

/// The table a move writes in, the client it sends with, and, for an entity whose layout is
/// decided per key, the layout of the key whose items it moves.
#[derive(Clone, Copy)]
pub struct Store<'a> {
    client: &'a Client,
    table: &'a str,
    layout: Option<KeyLayout>,
    /// The copy moved is newer than one of the entity at its destination, which it replaces
    /// (a per-key layout in `reading` moving an item back from the change's target).
    overwrite: bool,
}

impl<'a> Store<'a> {
    /// Moves that send with `client` to `table`.
    pub fn new(client: &'a Client, table: &'a str) -> Self {
        Store {
            client,
            table,
            layout: None,
            overwrite: false,
        }
    }

    /// Moves whose copy replaces an older copy of the entity at its destination (see the
    /// field).
    pub(crate) fn overwriting(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Moves of one key of a per-key layout: each item goes to its place under `layout`.
    pub fn in_layout(mut self, layout: Option<KeyLayout>) -> Self {
        self.layout = layout;
        self
    }

    /// The client moves send with.
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// The table moves write in.
    pub fn table(&self) -> &'a str {
        self.table
    }
}

/// What one move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveOutcome {
    /// Copied to its current place (and the old copy marked, atomically), then the old copy
    /// removed.
    Moved,
    /// Its current place already held an item (a newer write): the stale old copy was removed.
    Superseded,
    /// Already at its current place (the layouts share this partition): nothing to do.
    InPlace,
    /// The old copy changed or went after it was read: nothing written; read it again.
    Changed,
    /// DynamoDB refused for capacity: nothing written; wait, then read it again.
    Throttled,
    /// Its current place holds an item that is not the entity's (another service wrote
    /// something there the repository cannot read): nothing written, nothing deleted; the
    /// old copy stays, and the runner reports it.
    Occupied,
}

/// What [`delete_stale`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The old copy is gone.
    Deleted,
    /// The old copy changed or went since it was read: nothing deleted; read it again.
    Changed,
    /// DynamoDB refused for capacity: nothing deleted; wait, then try again.
    Throttled,
}

/// An outcome and the write units it used (DynamoDB's consumed capacity when returned,
/// otherwise an estimate from the item sizes).
#[derive(Debug, Clone, Copy)]
pub struct Step<T> {
    /// What the step did.
    pub outcome: T,
    /// The write units it used.
    pub write_units: f64,
}

impl<T> Step<T> {
    /// `outcome`, having used `write_units`.
    pub fn new(outcome: T, write_units: f64) -> Self {
        Step {
            outcome,
            write_units,
        }
    }
}

/// A move's outcome: what [`move_item`] returns.
pub(crate) type MoveReport = Step<MoveOutcome>;

/// The item `old` as it is stored at its current place: its own attributes (kept, so nothing
/// the struct does not know is lost), overlaid with what the entity writes (the current key,
/// index keys, the tag). An untagged item is completed from its keys first (see
/// `recognize`); one whose keys are not in canonical form (a
/// re-key the caller asked for) is read from its attributes alone.
pub fn rebuilt<E: ShardedEntity>(old: &Item) -> Result<Item, Error> {
    rebuilt_in::<E>(old, None)
}

/// [`rebuilt`], placed under `layout` when the entity's layout is decided per key (its key
/// is then the item's place under that layout, not under the declared `n`).
fn rebuilt_in<E: ShardedEntity>(old: &Item, layout: Option<KeyLayout>) -> Result<Item, Error> {
    let entity = entity_of_old::<E>(old)?;
    let mut item = old.clone();
    item.extend(entity.to_item()?);
    if let (Some(layout), Some(input)) = (layout, entity.__shard_input()?) {
        item.insert(
            E::SCHEMA.pk.attribute.to_owned(),
            AttributeValue::S(input.key_under(&E::SCHEMA.pk, layout.n)),
        );
    }
    Ok(item)
}

/// The entity an old copy holds: recognised (and completed from its keys where untagged),
/// or, where its keys are not in canonical form, read from its attributes alone.
fn entity_of_old<E: ShardedEntity>(old: &Item) -> Result<E, Error> {
    let mut completed = old.clone();
    match recognize::<E>(&mut completed, Depth::Whole) {
        Ok(()) => decode::<E>(completed),
        Err(NotOurs::Foreign(ForeignReason::NotCanonical { .. })) => decode::<E>(old.clone()),
        Err(not_ours) => Err(point_read_error(E::SCHEMA, old, not_ours)),
    }
}

/// The most attributes the condition "unchanged since read" compares one by one.
///
/// DynamoDB allows 300 operators and functions in one expression; each attribute compared
/// costs two (`=` and `AND`), and the condition has two functions more
/// (`attribute_exists`, `attribute_not_exists`): 140 attributes use 283. An item with more is
/// compared on 140 of them, the entity's own fields first (a versioned entity compares only
/// its version, whatever its size).
pub(crate) const MAX_COMPARED_ATTRIBUTES: usize = 140;

/// The condition that `old`, an item of `E` as read, is unchanged since: what every write of a
/// move (and the runner's tag of an item in place) is conditioned on, so a record rewritten
/// since is read again rather than overwritten unseen.
#[derive(Debug, Clone)]
pub struct Unchanged {
    /// The condition expression.
    pub condition: String,
    /// Its `ExpressionAttributeNames`.
    pub names: Names,
    /// Its `ExpressionAttributeValues`: the values compared (a request takes them through
    /// [`values`](Self::values)).
    pub values: Values,
}

impl Unchanged {
    /// The condition that `old` is unchanged (see `unchanged`).
    pub fn of<E: ShardedEntity>(old: &Item) -> Result<Unchanged, Error> {
        let own = entity_of_old::<E>(old)?.to_item()?;
        let (mut names, mut values) = (Names::new(), Values::new());
        let condition = unchanged(E::SCHEMA, old, &own, &mut names, &mut values);
        Ok(Unchanged {
            condition,
            names,
            values,
        })
    }

    /// Its values as a request takes them: none when there are none (DynamoDB refuses an
    /// empty map).
    pub fn values(&self) -> Option<Values> {
        values_of(self.values.clone())
    }
}

/// The condition that `old` is unchanged: its version, for a versioned entity; otherwise its
/// attributes equal (at most [`MAX_COMPARED_ATTRIBUTES`], those in `own` first), and the item
/// present. Registers its names and values.
fn unchanged(
    schema: &EntitySchema,
    old: &Item,
    own: &Item,
    names: &mut Names,
    values: &mut Values,
) -> String {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    let mut parts = vec!["attribute_exists(#pk)".to_owned()];
    let compared: Vec<(&String, &AttributeValue)> = match schema.version {
        Some(version) if old.contains_key(version) => old
            .iter()
            .filter(|(name, _)| name.as_str() == version)
            .collect(),
        _ => {
            let keys = [Some(schema.pk.attribute), schema.sk.map(|s| s.attribute)];
            let mut all: Vec<_> = old
                .iter()
                .filter(|(name, _)| !keys.contains(&Some(name.as_str())))
                .collect();
            // The entity's own attributes first, then by name: a deterministic choice when
            // the item has more than can be compared.
            all.sort_by(|a, b| (!own.contains_key(a.0), a.0).cmp(&(!own.contains_key(b.0), b.0)));
            all.truncate(MAX_COMPARED_ATTRIBUTES);
            all
        }
    };
    for (i, (name, value)) in compared.into_iter().enumerate() {
        names.insert(format!("#u{i}"), name.clone());
        values.insert(format!(":u{i}"), value.clone());
        parts.push(format!("#u{i} = :u{i}"));
    }
    // An attribute added since the read is a change too, and only an absent tag (an untagged
    // item) can be checked for cheaply.
    if let Some(tag) = schema.tag_attribute().filter(|tag| !old.contains_key(*tag)) {
        names.insert("#et".to_owned(), tag.to_owned());
        parts.push("attribute_not_exists(#et)".to_owned());
    }
    parts.join(" AND ")
}

/// The mark of an old copy (at `key`) as moved, in a transaction with the write at its
/// current place: an `Update` that sets the move attribute to `moved`, only if the old copy is
/// `unchanged` since it was read (it costs what a condition check would: a write of the item).
pub(crate) fn mark_action(
    schema: &EntitySchema,
    table: &str,
    key: &Item,
    unchanged: &Unchanged,
) -> Result<TransactWriteItem, Error> {
    let (names, values) = mark_names(schema, unchanged);
    Update::builder()
        .table_name(table)
        .set_key(Some(key.clone()))
        .update_expression(MARK)
        .condition_expression(unchanged.condition.clone())
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map(|update| TransactWriteItem::builder().update(update).build())
        .map_err(Error::build("the mark of an old copy"))
}

/// The update expression of a mark (see [`mark_names`]).
const MARK: &str = "SET #mv = :moved";

/// The names and values of a mark: the condition's, with the move attribute and `moved`.
fn mark_names(schema: &EntitySchema, unchanged: &Unchanged) -> (Names, Values) {
    let (mut names, mut values) = (unchanged.names.clone(), unchanged.values.clone());
    names.insert("#mv".to_owned(), schema.move_attribute().to_owned());
    values.insert(
        ":moved".to_owned(),
        AttributeValue::S(MOVE_MOVED.to_owned()),
    );
    (names, values)
}

/// Everything the requests of one move need, built once from the old copy: the put at its
/// current place, and the condition that the old copy is unchanged. Its transaction
/// ([`send`](Self::send)) is the move in one step ([`move_item`]) or the runner's copy.
pub struct Prepared {
    /// The item as it will be stored at its current place.
    new: Item,
    old_key: Item,
    /// "The old copy is unchanged since it was read".
    unchanged: Unchanged,
    /// Sizes of the old copy and of the new item, for estimating costs.
    old_bytes: u64,
    new_bytes: u64,
}

impl Prepared {
    /// Prepares the move of `old`, or `None` when it is already at its current place.
    pub fn of<E: ShardedEntity>(old: &Item) -> Result<Option<Prepared>, Error> {
        Prepared::of_in::<E>(old, None)
    }

    /// [`of`](Self::of), the item placed under `layout` (see [`Store::in_layout`]).
    pub fn of_in<E: ShardedEntity>(
        old: &Item,
        layout: Option<KeyLayout>,
    ) -> Result<Option<Prepared>, Error> {
        let schema = E::SCHEMA;
        let new = rebuilt_in::<E>(old, layout)?;
        let (old_key, new_key) = (key_of(schema, old), key_of(schema, &new));
        if old_key == new_key {
            return Ok(None);
        }
        // Index keys and the entity attribute make the item a little larger: refused here,
        // with the entity and key, rather than by DynamoDB as an anonymous validation error.
        let mut new = new;
        new.insert(
            schema.move_attribute().to_owned(),
            AttributeValue::S(MOVE_COPY.to_owned()),
        );
        check_item_size(E::SCHEMA, &new)?;
        Ok(Some(Prepared {
            old_bytes: item_size(old) as u64,
            new_bytes: item_size(&new) as u64,
            unchanged: Unchanged::of::<E>(old)?,
            new,
            old_key,
        }))
    }

    fn put(&self, table: &str, schema: &EntitySchema, overwrite: bool) -> Result<Put, Error> {
        let (mut names, mut values) = (Names::new(), Values::new());
        let condition = if overwrite {
            // The destination may hold an older copy of the entity: replaced, as a put would.
            entity_guard(schema, &pk_of(schema, &self.new), &mut names, &mut values)
        } else {
            // An empty place, or one holding a copy marked `moved`, which stands for nothing
            // (its item lives elsewhere: a key whose layout changes per key has writers a
            // phase apart, one of which may have moved the item away from here).
            names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
            names.insert("#mv".to_owned(), schema.move_attribute().to_owned());
            values.insert(
                ":moved".to_owned(),
                AttributeValue::S(MOVE_MOVED.to_owned()),
            );
            "attribute_not_exists(#pk) OR #mv = :moved".to_owned()
        };
        Put::builder()
            .table_name(table)
            .set_item(Some(self.new.clone()))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            // What holds the current place, when it is taken: a newer write of the entity,
            // or something else.
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(Error::build("the move's put"))
    }

    /// The estimated cost of the transaction of a move: a write of the new item and one of the
    /// old copy (its mark), each at the transactional rate.
    pub fn transaction_units(&self) -> f64 {
        (transactional_write_units(self.old_bytes) + transactional_write_units(self.new_bytes))
            as f64
    }
}

/// The reasons DynamoDB gave for canceling a transaction, one per action (`"None"` for an
/// action that did not fail).
fn cancellation_codes(
    canceled: &aws_sdk_dynamodb::types::error::TransactionCanceledException,
) -> Vec<String> {
    canceled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or("None").to_owned())
        .collect()
}

/// Whether a cancellation reason says DynamoDB refused for capacity.
pub fn is_throttling_code(code: &str) -> bool {
    code.contains("Throughput") || code.contains("Throttl") || code.contains("RequestLimit")
}

/// The units DynamoDB reported for a request, or `estimate` when it reported none.
pub fn reported(capacity: &[aws_sdk_dynamodb::types::ConsumedCapacity], estimate: f64) -> f64 {
    let units: f64 = capacity.iter().filter_map(|c| c.capacity_units()).sum();
    if units > 0.0 {
        units
    } else {
        estimate
    }
}

/// The error for a cancellation whose reasons no outcome explains.
pub fn refused(
    schema: &EntitySchema,
    old: &Item,
    codes: &[String],
    message: Option<&str>,
) -> Error {
    UpdateRefusal::MoveRefused {
        entity: schema.entity,
        key: describe_key(schema, old),
        codes: codes.to_vec(),
        message: message.map(str::to_owned),
    }
    .into()
}

/// What a transaction of the put at an item's current place and one action on its old copy
/// came to.
pub enum Sent {
    /// Committed, with the write units used.
    Done(f64),
    /// Canceled: DynamoDB's reason code per action (`"None"` for an action that was fine),
    /// its message, and what held the current place when the put was refused.
    Canceled(Vec<String>, Option<String>, Option<Item>),
    /// Refused as a whole (throttled, or an error).
    Failed(Error),
}

impl Prepared {
    /// Sends the put at the item's current place (marked `copy`) and the mark of the old copy
    /// (`moved`, if it is unchanged) in one `TransactWriteItems`, idempotent under the SDK's
    /// retries (a commit whose answer was lost is not applied again). The old copy stays, for
    /// [`delete_stale`] with [`marked`].
    pub async fn send<E: ShardedEntity>(&self, repo: Store<'_>) -> Result<Sent, Error> {
        let estimate = self.transaction_units();
        let put = self.put(repo.table(), E::SCHEMA, repo.overwrite)?;
        let second = mark_action(E::SCHEMA, repo.table(), &self.old_key, &self.unchanged)?;
        let request =
            TokenRequest::new(vec![TransactWriteItem::builder().put(put).build(), second])
                .reporting_capacity();
        // One send, no resend here: the runner decides what a conflict costs (it counts attempts
        // against `max_attempts` and reads the item again), and the SDK's own retries of a lost
        // answer carry the token.
        let once = RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        };
        let result = idempotent::send(repo.client(), &request, &once, &FirstSent::default()).await;
        Ok(match result {
            Ok(output) => Sent::Done(reported(output.consumed_capacity(), estimate)),
            Err(e) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled) => Sent::Canceled(
                    cancellation_codes(&canceled),
                    canceled.message().map(str::to_owned),
                    canceled
                        .cancellation_reasons()
                        .first()
                        .and_then(|reason| reason.item().cloned()),
                ),
                other => Sent::Failed(Error::dynamo("TransactWriteItems", repo.table(), other)),
            },
        })
    }
}

/// Moves `old` (an item of `E` as read from a previous-layout partition) to its current
/// place: copied and marked in one transaction, then the old copy deleted (see the module
/// documentation). An old copy already marked is deleted without a copy.
pub async fn move_item<E: ShardedEntity>(repo: Store<'_>, old: &Item) -> Result<MoveReport, Error> {
    let schema = E::SCHEMA;
    let Some(prepared) = Prepared::of_in::<E>(old, repo.layout)? else {
        return Ok(Step::new(MoveOutcome::InPlace, 0.0));
    };
    if is_marked(schema, old) {
        return delete_superseded::<E>(repo, old, 0.0).await;
    }
    let both = prepared.transaction_units();
    let (reasons, message, current) = match prepared.send::<E>(repo).await? {
        Sent::Done(copied) => {
            // Boxed (here and below): a move's future is held by every settling write's.
            let deleted = Box::pin(delete_stale::<E>(repo, &marked(schema, old))).await?;
            return Ok(Step {
                // Copied: the item is at its current place whatever the delete met (an old copy
                // a writer of the previous layout changed since stays, for the runner to list).
                outcome: match deleted.outcome {
                    DeleteOutcome::Throttled => MoveOutcome::Throttled,
                    DeleteOutcome::Deleted | DeleteOutcome::Changed => MoveOutcome::Moved,
                },
                write_units: copied + deleted.write_units,
            });
        }
        Sent::Failed(error) => return throttled_or(error, MoveOutcome::Throttled),
        Sent::Canceled(codes, message, current) => (codes, message, current),
    };
    let codes: Vec<&str> = reasons.iter().map(String::as_str).collect();
    match codes.as_slice() {
        // The current place holds an item: a newer write of the entity, whose old copy is
        // stale, or something the repository cannot read, and the old copy stays.
        ["ConditionalCheckFailed", "None"]
        | ["ConditionalCheckFailed", "ConditionalCheckFailed"] => {
            match prepared.holder::<E>(repo, current).await? {
                Holder::Entity => delete_superseded::<E>(repo, old, both).await,
                Holder::Foreign => Ok(Step::new(MoveOutcome::Occupied, both)),
                Holder::Nobody => Ok(Step::new(MoveOutcome::Changed, both)),
            }
        }
        // Throttled: nothing was written; the caller slows down and reads it again.
        _ if codes.iter().any(|c| is_throttling_code(c)) => {
            Ok(Step::new(MoveOutcome::Throttled, 0.0))
        }
        // The old copy changed or went since it was read, or another transaction holds one
        // of the items: nothing was written; read it again.
        [_, "ConditionalCheckFailed"] | [_, "TransactionConflict"] | ["TransactionConflict", _] => {
            Ok(Step::new(MoveOutcome::Changed, both))
        }
        _ => Err(refused(schema, old, &reasons, message.as_deref())),
    }
}

/// Deletes `old`, an old copy whose item holds its current place (marked first, unless it is),
/// as a move's outcome: `Superseded`, or what stopped the delete. `spent`: the units the move
/// used before.
async fn delete_superseded<E: ShardedEntity>(
    repo: Store<'_>,
    old: &Item,
    spent: f64,
) -> Result<MoveReport, Error> {
    let deleted = Box::pin(delete_stale::<E>(repo, old)).await?;
    Ok(Step {
        outcome: match deleted.outcome {
            DeleteOutcome::Deleted => MoveOutcome::Superseded,
            DeleteOutcome::Changed => MoveOutcome::Changed,
            DeleteOutcome::Throttled => MoveOutcome::Throttled,
        },
        write_units: spent + deleted.write_units,
    })
}

/// Whether `item` is an old copy marked as moved (see
/// [`move_attribute`](crate::keys::schema::TableSchema::move_attribute)): its item lived at
/// its current place when it was marked, so it is never copied again, only deleted.
pub fn is_marked(schema: &EntitySchema, item: &Item) -> bool {
    marked_moved(schema.move_attribute(), item)
}

/// `old` as the copy's transaction leaves it: marked as moved. What [`delete_stale`] expects
/// after a copy.
pub fn marked(schema: &EntitySchema, old: &Item) -> Item {
    let mut item = old.clone();
    item.insert(
        schema.move_attribute().to_owned(),
        AttributeValue::S(MOVE_MOVED.to_owned()),
    );
    item
}

/// A request that failed after the SDK's retries: a throttle is an outcome (the caller waits
/// and tries again), anything else an error.
pub fn throttled_or<T>(error: Error, throttled: T) -> Result<Step<T>, Error> {
    if error.is_throttling() {
        Ok(Step::new(throttled, 0.0))
    } else {
        Err(error)
    }
}

impl Prepared {
    /// Whether the item holding the current place of a move (`current`, as DynamoDB returned
    /// it with the refusal; read consistently when it did not) is the entity's: a newer write
    /// that supersedes the old copy. Anything else (an untagged copy another service wrote, in
    /// a table whose items are tagged) never makes the migration delete an original.
    pub async fn holder<E: ShardedEntity>(
        &self,
        repo: Store<'_>,
        current: Option<Item>,
    ) -> Result<Holder, Error> {
        let current = match current {
            Some(item) => Some(item),
            None => {
                repo.client()
                    .get_item()
                    .table_name(repo.table())
                    .set_key(Some(key_of(E::SCHEMA, &self.new)))
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(|e| Error::dynamo("GetItem", repo.table(), e))?
                    .item
            }
        };
        Ok(match current {
            // Gone since the refusal: the runner reads the old copy again and moves it.
            None => Holder::Nobody,
            Some(item) if is_ours::<E>(&item) => Holder::Entity,
            Some(_) => Holder::Foreign,
        })
    }
}

/// What holds a move's current place.
pub enum Holder {
    /// An item of the entity: the old copy is stale.
    Entity,
    /// Something that is not the entity's: the old copy stays.
    Foreign,
    /// Nothing (any more).
    Nobody,
}

/// Deletes the old copy `old` of an item whose current place holds it (copied there, or
/// written there since), only if it is unchanged since it was read: marked as moved first
/// (a conditional `UpdateItem`) when it is not yet, so its stream record says so, then
/// deleted only if it is still as marked.
///
/// The condition compares the attributes `old` had; one added since cannot be named in a
/// condition (any name could be). So the delete returns what it deleted, and when that has an
/// attribute `old` had not, the old copy is put back as it was (unless a writer has written
/// its place since, whose item is newer) and the outcome is `Changed`: both copies are kept,
/// and the runner lists the item as failed, as for any old copy changed after its copy.
pub async fn delete_stale<E: ShardedEntity>(
    repo: Store<'_>,
    old: &Item,
) -> Result<Step<DeleteOutcome>, Error> {
    let schema = E::SCHEMA;
    let (old, marking) = if is_marked(schema, old) {
        (old.clone(), 0.0)
    } else {
        match mark::<E>(repo, old).await? {
            Ok(marked) => marked,
            Err(stopped) => return Ok(stopped),
        }
    };
    let old = &old;
    let unchanged = Unchanged::of::<E>(old)?;
    let estimate = write_units(item_size(old) as u64) as f64;
    let result = repo
        .client()
        .delete_item()
        .table_name(repo.table())
        .set_key(Some(key_of(schema, old)))
        .condition_expression(unchanged.condition.clone())
        .set_expression_attribute_names(Some(unchanged.names.clone()))
        .set_expression_attribute_values(unchanged.values())
        .return_values(ReturnValue::AllOld)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    match result {
        Ok(output) => {
            let write_units = marking + reported(output.consumed_capacity.as_slice(), estimate);
            match output.attributes {
                Some(deleted) if deleted.keys().any(|name| !old.contains_key(name)) => {
                    let restored = put_back(repo, schema, deleted).await?;
                    Ok(Step::new(DeleteOutcome::Changed, write_units + restored))
                }
                _ => Ok(Step {
                    outcome: DeleteOutcome::Deleted,
                    write_units,
                }),
            }
        }
        Err(e) => match e.into_service_error() {
            DeleteItemError::ConditionalCheckFailedException(_) => {
                Ok(Step::new(DeleteOutcome::Changed, marking + estimate))
            }
            other => throttled_or(
                Error::dynamo("DeleteItem", repo.table(), other),
                DeleteOutcome::Throttled,
            ),
        },
    }
}

/// Marks `old` as moved where it is, only if it is unchanged since it was read: the item as
/// marked and the units used, or what stopped it (`Changed` when it changed or went,
/// `Throttled`), nothing written.
async fn mark<E: ShardedEntity>(
    repo: Store<'_>,
    old: &Item,
) -> Result<Result<(Item, f64), Step<DeleteOutcome>>, Error> {
    let schema = E::SCHEMA;
    let unchanged = Unchanged::of::<E>(old)?;
    let (names, values) = mark_names(schema, &unchanged);
    let estimate = write_units(item_size(old) as u64) as f64;
    let result = repo
        .client()
        .update_item()
        .table_name(repo.table())
        .set_key(Some(key_of(schema, old)))
        .update_expression(MARK)
        .condition_expression(unchanged.condition)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values(ReturnValue::AllNew)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    match result {
        Ok(output) => Ok(Ok((
            output.attributes.unwrap_or_else(|| marked(schema, old)),
            reported(output.consumed_capacity.as_slice(), estimate),
        ))),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => {
                Ok(Err(Step::new(DeleteOutcome::Changed, estimate)))
            }
            other => throttled_or(
                Error::dynamo("UpdateItem", repo.table(), other),
                DeleteOutcome::Throttled,
            )
            .map(Err),
        },
    }
}

/// Puts back an old copy deleted by [`delete_stale`] that had gained an attribute after it was
/// read, only if its place is still empty (a writer's item written there since is newer).
/// Returns the write units it cost. Sent again while DynamoDB throttles or an answer is lost
/// (a put whose answer was lost and that is refused on its resend was applied): the deleted
/// item exists nowhere else.
async fn put_back(repo: Store<'_>, schema: &EntitySchema, deleted: Item) -> Result<f64, Error> {
    let estimate = write_units(item_size(&deleted) as u64) as f64;
    let retry = RetryPolicy::default();
    let mut attempt = 0;
    loop {
        let result = repo
            .client()
            .put_item()
            .table_name(repo.table())
            .set_item(Some(deleted.clone()))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", schema.pk.attribute)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        attempt += 1;
        match result {
            Ok(output) => return Ok(reported(output.consumed_capacity.as_slice(), estimate)),
            Err(e) if crate::access::retry::retryable(&e) && attempt < retry.max_attempts => {
                tokio::time::sleep(retry.backoff(attempt - 1)).await;
            }
            Err(e) => {
                return match e.into_service_error() {
                    PutItemError::ConditionalCheckFailedException(_) => Ok(estimate),
                    other => Err(UpdateRefusal::PutBackFailed {
                        item: deleted.clone(),
                        source: Box::new(Error::dynamo("PutItem", repo.table(), other)),
                    }
                    .into()),
                };
            }
        }
    }
}

/// The partition key of `item` as stored (empty when it has none).
fn pk_of(schema: &EntitySchema, item: &Item) -> String {
    item.get(schema.pk.attribute)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding, SortKeySchema};

    static PK: KeyTemplate = KeyTemplate::new(
        "DOC#{id}",
        &[Segment::literal("DOC#"), Segment::field("id")],
    );
    static SK: KeyTemplate = KeyTemplate::new("V", &[Segment::literal("V")]);

    fn schema() -> EntitySchema {
        EntitySchema::new(
            "Doc",
            None,
            PartitionKeySchema::new("pk", &PK, Sharding::hash(&["id"], 4)),
            Some(SortKeySchema::new("sk", &SK)),
            &[],
        )
    }

    fn item(attributes: usize) -> Item {
        let mut item = Item::from([
            ("pk".to_owned(), AttributeValue::S("DOC#a".into())),
            ("sk".to_owned(), AttributeValue::S("V".into())),
            ("id".to_owned(), AttributeValue::S("a".into())),
        ]);
        for i in 0..attributes {
            item.insert(format!("extra{i:03}"), AttributeValue::N(i.to_string()));
        }
        item
    }

    /// Operators and functions as DynamoDB counts them: comparators, `AND`, functions.
    fn operators(condition: &str) -> usize {
        condition.matches(" = ").count()
            + condition.matches(" AND ").count()
            + condition.matches("attribute_").count()
    }

    #[test]
    fn every_attribute_but_the_key_is_compared_through_placeholders() {
        let schema = schema();
        let (mut names, mut values) = (Names::new(), Values::new());
        let old = item(2);
        let condition = unchanged(&schema, &old, &Item::new(), &mut names, &mut values);
        assert_eq!(
            condition,
            "attribute_exists(#pk) AND #u0 = :u0 AND #u1 = :u1 AND #u2 = :u2 AND \
             attribute_not_exists(#et)"
        );
        let compared: Vec<&str> = (0..3).map(|i| names[&format!("#u{i}")].as_str()).collect();
        assert_eq!(compared, ["extra000", "extra001", "id"]);
        assert_eq!(names["#et"], crate::keys::schema::ENTITY_ATTRIBUTE);
    }

    #[test]
    fn a_wide_item_stays_within_dynamodbs_300_operators_its_own_fields_first() {
        let schema = schema();
        let (mut names, mut values) = (Names::new(), Values::new());
        let old = item(400);
        let own = Item::from([("id".to_owned(), AttributeValue::S("a".into()))]);
        let condition = unchanged(&schema, &old, &own, &mut names, &mut values);
        assert!(operators(&condition) <= 300, "{}", operators(&condition));
        assert_eq!(values.len(), MAX_COMPARED_ATTRIBUTES);
        assert_eq!(names["#u0"], "id", "the entity's own field first");
        // DynamoDB's 4 KB bound on an expression.
        assert!(condition.len() < 4096, "{}", condition.len());
    }
}

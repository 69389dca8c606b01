//! A put during a layout transition: the item is written at its current place and its
//! previous place left empty, in a way a DynamoDB stream consumer reads from each record alone.
//!
//! The put goes with a check that the previous place is empty, in one `TransactWriteItems`
//! (what it costs is what the put and a delete of the previous place cost before): after the
//! migration, the common case, that is all. When the previous place holds the item (not yet
//! migrated), the put *supersedes* it: one transaction writes the item at its current place
//! marked `replace` (an `INSERT` there changes an item that existed) and marks the old copy
//! `moved`, only if it is unchanged since the refusal returned it; then the marked old copy
//! is deleted (its `REMOVE` says it was a move's departure, not a delete). A delete the
//! migration or a writer makes first, or one refused because the old copy changed since,
//! leaves the marked copy for the migration, which deletes marked copies without copying them;
//! reads prefer the current place meanwhile.

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};

use crate::access::condition::values_of;
use crate::access::entity::{is_ours, ShardedEntity};
use crate::access::placement::Placement;
use crate::access::write::moves::Store;
use crate::access::write::moves::{delete_stale, mark_action, marked, Unchanged};
use crate::error::{Error, UpdateRefusal};
use crate::item::Item;
use crate::keys::schema::MOVE_REPLACE;

use super::write::{Guard, Pair, Sent};
use super::Repo;

/// How many times the old copy is read again when it changes while it is superseded.
const ATTEMPTS: usize = 5;

impl<E: ShardedEntity> Repo<E> {
    /// Puts `item` at its current place under `guard`, during a transition: see the module
    /// documentation. A refusal of the put comes back with the item DynamoDB returned; an item
    /// at the previous place that is not the entity's is [`Error::KeyTakenByOtherEntity`].
    pub(super) async fn put_in_transition(
        &self,
        placement: &Placement,
        item: Item,
        guard: &Guard,
    ) -> Result<Sent, Error> {
        let table = self.handle.table();
        for _ in 0..ATTEMPTS {
            let Some((previous_key, vacant)) = placement.previous_vacancy(table)? else {
                let why = "a put with the previous place's check needs a transition";
                return Err(Error::Bug(why.to_owned()));
            };
            let put = guarded_put(table, item.clone(), guard)?;
            let vacant = TransactWriteItem::builder().condition_check(vacant).build();
            let found = match self.transact_pair(put, vacant).await? {
                Pair::Done => return Ok(Sent::Done(None)),
                Pair::Refused(found) => return Ok(Sent::Refused(found)),
                Pair::SecondRefused(Some(found)) => found,
                // An endpoint that does not return the item: read it.
                Pair::SecondRefused(None) => {
                    match placement.old_copy::<E>(self.handle.client(), table).await? {
                        Some(found) => found,
                        None => continue,
                    }
                }
            };
            if !is_ours::<E>(&found) {
                return Err(self.previous_taken(&previous_key, Some(&found)));
            }
            if let Some(sent) = self.supersede(&item, guard, &previous_key, &found).await? {
                return Ok(sent);
            }
        }
        Err(UpdateRefusal::KeptChangingWhileSuperseded {
            entity: E::SCHEMA.entity,
            at: placement.previous().unwrap_or_default().to_owned(),
            attempts: ATTEMPTS,
        }
        .into())
    }

    /// Writes `item` marked `replace` and marks `old` (the item at its previous place, as
    /// read) `moved`, in one transaction, then deletes the marked old copy. `None` when `old`
    /// changed since it was read (nothing written: read it again).
    async fn supersede(
        &self,
        item: &Item,
        guard: &Guard,
        previous_key: &Item,
        old: &Item,
    ) -> Result<Option<Sent>, Error> {
        let (schema, table) = (E::SCHEMA, self.handle.table());
        let mut replacing = item.clone();
        replacing.insert(
            schema.move_attribute().to_owned(),
            AttributeValue::S(MOVE_REPLACE.to_owned()),
        );
        let put = guarded_put(table, replacing, guard)?;
        let mark = mark_action(schema, table, previous_key, &Unchanged::of::<E>(old)?)?;
        match self.transact_pair(put, mark).await? {
            Pair::Done => {}
            Pair::Refused(found) => return Ok(Some(Sent::Refused(found))),
            Pair::SecondRefused(_) => return Ok(None),
        }
        // The put is written: the old copy's delete is tidying, and one that fails (it changed,
        // DynamoDB throttled) leaves a marked copy the migration deletes.
        let store = Store::new(self.handle.client(), table);
        let _ = delete_stale::<E>(store, &marked(schema, old)).await;
        Ok(Some(Sent::Done(None)))
    }
}

/// The put of `item` at its current place under `guard`, as a transaction's action.
fn guarded_put(table: &str, item: Item, guard: &Guard) -> Result<TransactWriteItem, Error> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(guard.expression.clone())
        .set_expression_attribute_names(Some(guard.names.clone()))
        .set_expression_attribute_values(values_of(guard.values.clone()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(Error::build("a write"))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

//! Writes of one item: `put`, `put_new`, `put_if`, `delete_if` and the deletes behind the
//! generated `delete`, each guarded (another entity's item is never touched) and, during a
//! layout transition, settled first so no copy is left at the previous place.

use std::sync::Arc;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    ConsumedCapacity, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};

use crate::access::condition::{values_of, Condition, Names, Values};
use crate::access::entity::{is_ours, same_item, ShardedEntity};
use crate::access::placement::Placement;
use crate::access::recognize::tagged_as;
use crate::access::write::idempotent::{self, after_lost_attempt, LostAttempts};
use crate::access::write::transaction::{ItemKey, Transaction};
use crate::access::write::update::{GsiRewrite, Update, UpdateKey};
use crate::access::write::write_rules::{
    entity_guard, no_item, own_entity, physical_item, put_guard, stamp_write, stored_version,
    with_condition,
};
use crate::capacity::stats::record;
use crate::error::{Error, ItemKeyDisplay};
use crate::item::{describe_key, Item};

use super::Repo;

impl<E> Repo<E> {
    /// An empty write transaction on this repository's table: puts, updates, deletes and
    /// condition checks of any entities, on any shards, applied all or nothing. See
    /// [`Transaction`].
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
    /// let f = Wallet::fields();
    /// repo.transaction()
    ///     .update(Wallet::update(repo, "alice").add(f.coins, -5).condition(f.coins.ge(5)))
    ///     .update(Wallet::update(repo, "bob").add(f.coins, 5))
    ///     .commit()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction(&self) -> Transaction {
        Transaction::new(Arc::clone(&self.handle))
    }
}

impl<E: ShardedEntity> Repo<E> {
    /// Writes `entity` only if `condition` holds for the stored item (a typed condition on
    /// the entity's fields), with the guards of [`put`](Self::put) (another entity's item is
    /// never replaced; a versioned entity replaces only the version read). A condition
    /// that fails is [`Error::ConditionFailed`] with the stored item, and nothing is written.
    ///
    /// During a layout transition (`previous_n`, `legacy`) the item is settled first (an item
    /// still at its previous place is moved to its current one, so the condition sees it:
    /// one consistent `GetItem`, plus the move when it was there), then the put and a check
    /// that the previous place is empty go as one `TransactWriteItems` (twice the write units
    /// of a `PutItem`): no copy is left at the previous place.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>, wallet: Wallet) -> Result<(), Error> {
    /// let f = Wallet::fields();
    /// // Only while the stored balance is still the one this write was computed from.
    /// repo.put_if(&wallet, f.coins.eq(10)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_if(&self, entity: &E, condition: Condition<E>) -> Result<(), Error> {
        let placement = self.handle.place(entity).await?;
        self.handle
            .item_operation::<E, _>(
                "put_if",
                &placement,
                self.send_put_if(entity, condition, &placement),
            )
            .await
    }

    async fn send_put_if(
        &self,
        entity: &E,
        condition: Condition<E>,
        placement: &Placement,
    ) -> Result<(), Error> {
        let _written = self.handle.writing(placement);
        self.settle(placement).await?;
        let mut item = physical_item(entity, placement)?;
        let read_version = stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        let (mut names, mut values) = (Names::new(), Values::new());
        let guard = put_guard(
            E::SCHEMA,
            placement.pk(),
            read_version,
            &mut names,
            &mut values,
        );
        let expression = with_condition(&guard, Some(condition), &mut names, &mut values)?;
        let transition = placement.has_previous();
        let kept = (self.handle.stats.is_some() && !transition).then(|| item.clone());
        let guard = Guard {
            expression,
            names,
            values,
        };
        let result = match self
            .send_guarded(placement, Write::Put(item), guard, transition)
            .await?
        {
            Sent::Done(consumed) => Ok(consumed.map(|c| *c)),
            Sent::Refused(found) => Err(self.refused("PutItem", key, found, read_version)),
            Sent::RefusedAfterLostAttempt(found) => Err(after_lost_attempt(
                "PutItem",
                E::SCHEMA.entity,
                key.clone(),
                self.refused("PutItem", key, found, read_version),
            )),
        };
        // A transaction's writes are recorded by `transact`.
        if let Some(item) = &kept {
            record::write(
                self.stats(),
                E::SCHEMA,
                placement.layout().map(|l| l.n),
                item,
                result.as_ref().map(Option::as_ref),
            );
        }
        result.map(drop)
    }

    /// Deletes the item `entity` identifies only if it exists, is of this entity, and
    /// `condition` holds for it; otherwise [`Error::ConditionFailed`] with the stored item
    /// (or [`Error::KeyTakenByOtherEntity`]), and nothing is deleted.
    ///
    /// During a layout transition the item is settled first (moved to its current place if
    /// it is still at its previous one, so the condition sees it), then the conditional delete
    /// and the guarded delete of the previous place go as one `TransactWriteItems`.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>, wallet: Wallet) -> Result<(), Error> {
    /// let f = Wallet::fields();
    /// repo.delete_if(&wallet, f.coins.eq(0)).await?; // only an empty wallet
    /// # Ok(()) }
    /// ```
    pub async fn delete_if(&self, entity: &E, condition: Condition<E>) -> Result<(), Error> {
        let placement = self.handle.place(entity).await?;
        self.handle
            .item_operation::<E, _>("delete_if", &placement, async {
                self.settle(&placement).await?;
                self.send_delete(&placement, DeleteGuard::Condition(condition))
                    .await
            })
            .await
    }

    /// Settles the item during a transition (see `Placement::settle`).
    async fn settle(&self, placement: &Placement) -> Result<(), Error> {
        placement
            .settle::<E>(self.handle.client(), self.handle.table())
            .await
    }

    /// Settles every item of a batch whose old copy may sit at a previous shard of unknown
    /// placement, at most the repository's concurrency at once; the first error stops them.
    pub(super) async fn settle_all(&self, placements: &[Placement]) -> Result<(), Error> {
        // Windows of futures joined, not a stream of them: a stream holding the closure that
        // borrows each placement across its awaits would make the caller's future less
        // general than `tokio::spawn` needs.
        for window in placements.chunks(self.concurrency().max(1)) {
            futures::future::try_join_all(window.iter().map(|p| self.settle(p))).await?;
        }
        Ok(())
    }

    /// A guarded delete of the item at `placement`: of no item or one of this entity
    /// (`delete`), or, with a condition, of an existing item of this entity for which it holds
    /// (`delete_if`). During a transition, one `TransactWriteItems` with the guarded delete of
    /// the previous place; otherwise one `DeleteItem`.
    pub(super) async fn send_delete(
        &self,
        placement: &Placement,
        guard: DeleteGuard<E>,
    ) -> Result<(), Error> {
        let _written = self.handle.writing(placement);
        // An old copy at a previous shard of unknown placement is moved here first, so the
        // delete removes it too.
        if placement.previous_unknown() && matches!(guard, DeleteGuard::Entity) {
            self.settle(placement).await?;
        }
        let key = placement.current_key()?;
        let shown = describe_key(E::SCHEMA, &key);
        let (mut names, mut values) = (Names::new(), Values::new());
        let conditional = matches!(guard, DeleteGuard::Condition(_));
        let expression = match guard {
            DeleteGuard::Entity => entity_guard(E::SCHEMA, placement.pk(), &mut names, &mut values),
            DeleteGuard::Condition(condition) => {
                let own = own_entity(E::SCHEMA, placement.pk(), &mut names, &mut values);
                with_condition(&own, Some(condition), &mut names, &mut values)?
            }
        };
        let refused = |found: Option<Item>| -> Error {
            if conditional {
                self.refused("DeleteItem", shown.clone(), found, None)
            } else {
                // Without a condition only another entity's item can refuse the delete (also
                // when the endpoint does not return it).
                Error::KeyTakenByOtherEntity {
                    operation: "DeleteItem",
                    entity: E::SCHEMA.entity,
                    other: found.as_ref().and_then(|f| tagged_as(E::SCHEMA, f)),
                    key: shown.clone(),
                }
            }
        };
        let transition = placement.has_previous();
        let kept = (self.handle.stats.is_some() && !transition).then(|| key.clone());
        let guard = Guard {
            expression,
            names,
            values,
        };
        let result = match self
            .send_guarded(placement, Write::Delete(key), guard, transition)
            .await?
        {
            Sent::Done(consumed) => Ok(consumed.map(|c| *c)),
            Sent::Refused(found) => Err(refused(found)),
            Sent::RefusedAfterLostAttempt(found) => Err(after_lost_attempt(
                "DeleteItem",
                E::SCHEMA.entity,
                shown.clone(),
                refused(found),
            )),
        };
        // Recorded with its key: the units come from DynamoDB's answer (a transaction's
        // writes are recorded by `transact`).
        if let Some(key) = &kept {
            record::write(
                self.stats(),
                E::SCHEMA,
                placement.layout().map(|l| l.n),
                key,
                result.as_ref().map(Option::as_ref),
            );
        }
        result.map(drop)
    }

    /// The one conditional write of an item: a put of the item, or a delete of its key, at
    /// the current place under `guard`. One `PutItem` or `DeleteItem`, or, with `transition`,
    /// the put with a check that the previous place is empty (`put_in_transition`), or the
    /// delete and the guarded delete of the previous place in one `TransactWriteItems`
    /// ([`with_previous_delete`](Self::with_previous_delete)). A failed
    /// condition comes back as [`Sent::Refused`] with the item DynamoDB returned.
    async fn send_guarded(
        &self,
        placement: &Placement,
        write: Write,
        guard: Guard,
        transition: bool,
    ) -> Result<Sent, Error> {
        let Guard {
            expression,
            names,
            values,
        } = guard;
        let (table, values) = (self.handle.table(), values_of(values));
        let refusal = ReturnValuesOnConditionCheckFailure::AllOld;
        if transition {
            return match write {
                // A put supersedes the item at the previous place, marking it (see `replace`).
                Write::Put(item) => {
                    let guard = Guard {
                        expression,
                        names,
                        values: values.unwrap_or_default(),
                    };
                    // Boxed: its future holds a move's, and would make every put's as large.
                    Box::pin(self.put_in_transition(placement, item, &guard)).await
                }
                Write::Delete(key) => {
                    let delete = Delete::builder()
                        .table_name(table)
                        .set_key(Some(key))
                        .condition_expression(expression)
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(values)
                        .return_values_on_condition_check_failure(refusal)
                        .build()
                        .map_err(Error::build("a write"))?;
                    let delete = TransactWriteItem::builder().delete(delete).build();
                    self.with_previous_delete(placement, delete).await
                }
            };
        }
        let capacity = self.handle.capacity_request();
        let lost = LostAttempts::default();
        let refused = |found: Option<Item>| {
            if lost.any() {
                Sent::RefusedAfterLostAttempt(found)
            } else {
                Sent::Refused(found)
            }
        };
        match write {
            Write::Put(item) => {
                let sent = (self.handle.client().put_item())
                    .table_name(table)
                    .set_item(Some(item))
                    .condition_expression(expression)
                    .set_expression_attribute_names(Some(names))
                    .set_expression_attribute_values(values)
                    .set_return_consumed_capacity(capacity)
                    .return_values_on_condition_check_failure(refusal)
                    .customize()
                    .interceptor(lost.watch())
                    .send()
                    .await;
                match sent.map_err(|e| e.into_service_error()) {
                    Ok(output) => Ok(Sent::Done(output.consumed_capacity.map(Box::new))),
                    Err(PutItemError::ConditionalCheckFailedException(stored)) => {
                        Ok(refused(stored.item))
                    }
                    Err(other) => Err(Error::dynamo("PutItem", table, other)),
                }
            }
            Write::Delete(key) => {
                let sent = (self.handle.client().delete_item())
                    .table_name(table)
                    .set_key(Some(key))
                    .condition_expression(expression)
                    .set_expression_attribute_names(Some(names))
                    .set_expression_attribute_values(values)
                    .set_return_consumed_capacity(capacity)
                    .return_values_on_condition_check_failure(refusal)
                    .customize()
                    .interceptor(lost.watch())
                    .send()
                    .await;
                match sent.map_err(|e| e.into_service_error()) {
                    Ok(output) => Ok(Sent::Done(output.consumed_capacity.map(Box::new))),
                    Err(DeleteItemError::ConditionalCheckFailedException(stored)) => {
                        Ok(refused(stored.item))
                    }
                    Err(other) => Err(Error::dynamo("DeleteItem", table, other)),
                }
            }
        }
    }

    /// Sends `write` (at the item's current place) and the guarded delete of its previous
    /// place as one `TransactWriteItems` (with a fresh idempotency token): how a delete leaves
    /// no copy behind during a transition. A refusal of `write` comes back with the item
    /// DynamoDB returned; a refusal of the delete (another entity's item at the previous
    /// place) is [`Error::KeyTakenByOtherEntity`].
    async fn with_previous_delete(
        &self,
        placement: &Placement,
        write: TransactWriteItem,
    ) -> Result<Sent, Error> {
        let Some((previous_key, delete)) = placement.previous_delete(self.handle.table())? else {
            let why = "a write with the previous place's delete needs a transition";
            return Err(Error::Bug(why.to_owned()));
        };
        let delete = TransactWriteItem::builder().delete(delete).build();
        match self.transact_pair(write, delete).await? {
            Pair::Done => Ok(Sent::Done(None)),
            Pair::Refused(found) => Ok(Sent::Refused(found)),
            Pair::SecondRefused(found) => Err(self.previous_taken(&previous_key, found.as_ref())),
        }
    }

    /// The error for an item at the previous place that is not the entity's.
    pub(super) fn previous_taken(&self, previous_key: &Item, found: Option<&Item>) -> Error {
        Error::KeyTakenByOtherEntity {
            operation: "TransactWriteItems",
            entity: E::SCHEMA.entity,
            other: found.and_then(|f| tagged_as(E::SCHEMA, f)),
            key: describe_key(E::SCHEMA, previous_key),
        }
    }

    /// Sends `write` (at the item's current place) and `second` (at its previous place) as one
    /// `TransactWriteItems` (with a fresh idempotency token), and says which condition, if
    /// any, refused it, with the item DynamoDB returned.
    pub(super) async fn transact_pair(
        &self,
        write: TransactWriteItem,
        second: TransactWriteItem,
    ) -> Result<Pair, Error> {
        let result = self.transact(vec![write, second]).await;
        match result {
            // A transaction's answer carries no consumed capacity (`transact` records it).
            Ok(_) => Ok(Pair::Done),
            Err((token, sends, e)) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled) => {
                    let reasons = canceled.cancellation_reasons();
                    let failed = |i: usize| {
                        reasons
                            .get(i)
                            .filter(|r| r.code() == Some("ConditionalCheckFailed"))
                    };
                    if let Some(reason) = failed(0) {
                        return Ok(Pair::Refused(reason.item().cloned()));
                    }
                    if let Some(reason) = failed(1) {
                        return Ok(Pair::SecondRefused(reason.item().cloned()));
                    }
                    Err(idempotent::sent_error(
                        self.handle.table(),
                        &token,
                        &sends,
                        TransactWriteItemsError::TransactionCanceledException(canceled),
                    ))
                }
                other => Err(idempotent::sent_error(
                    self.handle.table(),
                    &token,
                    &sends,
                    other,
                )),
            },
        }
    }

    /// Sends the actions of one write and its previous place as one `TransactWriteItems`
    /// through the one token-carrying sender ([`idempotent::send`]): a commit whose answer was
    /// lost, or that was canceled only for a conflict with another transaction on the same
    /// items (the migration moving this item, say), is sent again, identical and under the
    /// same token, within the repository's retry policy: a plain `PutItem` would have waited
    /// its turn the same way, and the token keeps it applied at most once.
    async fn transact(
        &self,
        actions: Vec<TransactWriteItem>,
    ) -> Result<
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput,
        (String, idempotent::FirstSent, idempotent::SendError),
    > {
        let request = idempotent::TokenRequest::new(actions);
        let sends = idempotent::FirstSent::default();
        let result = idempotent::send(self.handle.client(), &request, self.handle.retry(), &sends)
            .await
            .map_err(|e| (request.token.clone(), sends, e));
        if result.is_ok() {
            for write in &request.items {
                record::transaction_write(self.stats(), E::SCHEMA, write);
            }
        }
        result
    }

    /// The error for a write whose condition failed, from the item DynamoDB returned.
    fn refused(
        &self,
        operation: &'static str,
        key: ItemKeyDisplay,
        current: Option<Item>,
        read_version: Option<u64>,
    ) -> Error {
        let own = E::SCHEMA.entity;
        match &current {
            Some(found) if !is_ours::<E>(found) => Error::KeyTakenByOtherEntity {
                operation,
                entity: own,
                other: tagged_as(E::SCHEMA, found),
                key,
            },
            _ => {
                let found = E::SCHEMA
                    .version
                    .and_then(|v| stored_version(current.as_ref(), v));
                match read_version {
                    Some(expected)
                        if found != Some(expected) && !(expected == 0 && current.is_none()) =>
                    {
                        Error::VersionConflict {
                            entity: own,
                            key,
                            expected,
                            found,
                        }
                    }
                    _ => Error::ConditionFailed {
                        entity: own,
                        key,
                        current,
                    },
                }
            }
        }
    }

    /// Writes `entity`, replacing any item of the same entity with the same key.
    ///
    /// Guarded by entity: the write is conditioned on the key holding no item or an item of
    /// this entity (its entity attribute), so an entity whose templates happen to produce
    /// another entity's key cannot overwrite that item: it gets
    /// [`Error::KeyTakenByOtherEntity`], and nothing changes. A write that passes the
    /// condition costs what an unconditional one does. Refused before sending: items over
    /// 400 KB ([`Error::ItemTooLarge`]), keys over DynamoDB's size limits
    /// ([`KeyError::KeyTooLong`](crate::KeyError::KeyTooLong)).
    ///
    /// During a layout transition (`previous_n`, `legacy`), the put and a check that the
    /// item's previous place is empty go as one `TransactWriteItems` (twice the write units of
    /// a `PutItem`), so no stale copy stays behind. When the previous place holds the item
    /// (not yet migrated), the put supersedes it: a second transaction writes the item marked
    /// as a replacement and marks the old copy as moved, then the old copy is deleted (see
    /// [`TableSchema::move_attribute`](crate::keys::schema::TableSchema::move_attribute)). A
    /// versioned entity is settled first (moved to its current place if it is still at its
    /// previous one: one consistent `GetItem`, plus the move when it was there), so its version
    /// is checked against the stored one.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, score: Score) -> Result<(), Error> {
    /// repo.put(&score).await?; // a second put of the same key replaces it
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, entity: &E) -> Result<(), Error> {
        let placement = self.handle.place(entity).await?;
        self.handle
            .item_operation::<E, _>(
                "put",
                &placement,
                self.send_put(entity, &placement, PutMode::Replace),
            )
            .await
    }

    /// Writes `entity` only if no item has its key; otherwise [`Error::AlreadyExists`] (or,
    /// when the item there is another entity's, [`Error::KeyTakenByOtherEntity`]).
    ///
    /// Safe to retry: when a `put_new` is applied but its response is lost, the SDK's retry
    /// finds the item the first attempt wrote. So when the key is taken, the item there is
    /// compared with the one being written (DynamoDB returns it with the refusal): the same
    /// attributes and values (numbers by value, sets in any order) count as this call's own
    /// write and return `Ok`; any difference is [`Error::AlreadyExists`]. The edge of this
    /// rule: an identical item written earlier by someone else cannot be told apart, and is
    /// reported as success too (the item stored is the one asked for either way).
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, score: Score) -> Result<(), Error> {
    /// match repo.put_new(&score).await {
    ///     Ok(()) => println!("created"),
    ///     Err(Error::AlreadyExists { key, .. }) => println!("{key} is taken"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// During a layout transition (`previous_n`, `legacy`), the item's previous place is
    /// checked too, in the same `TransactWriteItems` (twice the write units): an item not yet
    /// migrated is not created a second time. With `shard = "random"` the item's shard is its
    /// own key's hash, so the check covers every shard it can be on: uniqueness is per logical
    /// item, not per shard.
    pub async fn put_new(&self, entity: &E) -> Result<(), Error> {
        let placement = self.handle.place(entity).await?;
        self.handle
            .item_operation::<E, _>("put_new", &placement, async {
                if placement.has_previous() {
                    return self.put_new_in_transition(entity, &placement).await;
                }
                self.send_put(entity, &placement, PutMode::New).await
            })
            .await
    }

    /// `put_new` during a transition: one transaction that checks the previous place is empty
    /// and writes the item at its current place only if that is empty too.
    async fn put_new_in_transition(&self, entity: &E, placement: &Placement) -> Result<(), Error> {
        let _written = self.handle.writing(placement);
        let mut item = physical_item(entity, placement)?;
        stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        let Some((_, check)) = placement.previous_vacancy(self.handle.table())? else {
            return self.send_put(entity, placement, PutMode::New).await;
        };
        let mut names = Names::new();
        let condition = no_item(E::SCHEMA, &mut names);
        // Kept to compare with an item a refusal returns, at either place.
        let ours = item.clone();
        let put = Put::builder()
            .table_name(self.handle.table())
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(Error::build("a write"))?;
        let check = TransactWriteItem::builder().condition_check(check).build();
        let result = self
            .transact(vec![check, TransactWriteItem::builder().put(put).build()])
            .await;
        match result {
            Ok(_) => Ok(()),
            Err((token, sends, e)) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled)
                    if canceled
                        .cancellation_reasons()
                        .iter()
                        .any(|r| r.code() == Some("ConditionalCheckFailed")) =>
                {
                    // As outside a transition: an identical item (at either place; the two
                    // differ only in the partition key) is this call's own earlier write, or
                    // one that stores what was asked for anyway.
                    let pk = E::SCHEMA.pk.attribute;
                    let identical = canceled
                        .cancellation_reasons()
                        .iter()
                        .filter(|r| r.code() == Some("ConditionalCheckFailed"))
                        .all(|r| {
                            r.item()
                                .is_some_and(|found| same_item_but(found, &ours, pk))
                        });
                    if identical {
                        return Ok(());
                    }
                    Err(Error::AlreadyExists {
                        entity: E::SCHEMA.entity,
                        key,
                    })
                }
                other => Err(idempotent::sent_error(
                    self.handle.table(),
                    &token,
                    &sends,
                    other,
                )),
            },
        }
    }

    /// One conditional put (see [`PutMode`]): a `PutItem`, or during a transition a `put`
    /// with the previous place's check in one transaction (see `replace`); records the write
    /// (or its throttle) when stats are on.
    async fn send_put(
        &self,
        entity: &E,
        placement: &Placement,
        mode: PutMode,
    ) -> Result<(), Error> {
        let _written = self.handle.writing(placement);
        // A condition on the stored item (the version) needs it at its current place; so does
        // any write while an old copy may sit at a previous shard of unknown placement.
        if (mode == PutMode::Replace && E::SCHEMA.version.is_some()) || placement.previous_unknown()
        {
            self.settle(placement).await?;
        }
        let mut item = physical_item(entity, placement)?;
        // The version read (the struct's), before this write bumps it.
        let read_version = stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        // Kept to compare with the item a refusal returns (`put_new`, a versioned put) or to
        // record.
        let compared = mode == PutMode::New || read_version.is_some();
        let kept = (compared || self.handle.stats.is_some()).then(|| item.clone());
        let (mut names, mut values) = (Names::new(), Values::new());
        let condition = match mode {
            // Optimistic locking too: replace only the version read (a new item only from 0).
            PutMode::Replace => put_guard(
                E::SCHEMA,
                placement.pk(),
                read_version,
                &mut names,
                &mut values,
            ),
            PutMode::New => no_item(E::SCHEMA, &mut names).to_owned(),
        };
        let refusal = |found: Option<&Item>| -> Result<Option<ConsumedCapacity>, Error> {
            let own = E::SCHEMA.entity;
            match (mode, found) {
                // Our own earlier attempt, applied but unanswered (see `put_new`).
                (PutMode::New, Some(found))
                    if kept.as_ref().is_some_and(|item| same_item(found, item)) =>
                {
                    Ok(None)
                }
                (PutMode::New, Some(found)) if is_ours::<E>(found) => Err(Error::AlreadyExists {
                    entity: own,
                    key: key.clone(),
                }),
                // No item came back (an endpoint that ignores
                // `ReturnValuesOnConditionCheckFailure`): the key is taken and nothing
                // can be compared, so even our own earlier attempt is AlreadyExists.
                (PutMode::New, None) => Err(Error::AlreadyExists {
                    entity: own,
                    key: key.clone(),
                }),
                // Versioned, and the item stored is exactly this write, its version bumped:
                // our own earlier attempt, applied but unanswered and sent again by the SDK.
                (PutMode::Replace, Some(found))
                    if read_version.is_some()
                        && kept.as_ref().is_some_and(|item| same_item(found, item)) =>
                {
                    Ok(None)
                }
                // Versioned: the item is ours but at another version, or gone.
                (PutMode::Replace, found)
                    if read_version.is_some() && found.is_none_or(is_ours::<E>) =>
                {
                    Err(Error::VersionConflict {
                        entity: own,
                        key: key.clone(),
                        expected: read_version.unwrap_or(0),
                        found: E::SCHEMA.version.and_then(|v| stored_version(found, v)),
                    })
                }
                (_, found) => Err(Error::KeyTakenByOtherEntity {
                    operation: "PutItem",
                    entity: own,
                    other: found.and_then(|f| tagged_as(E::SCHEMA, f)),
                    key: key.clone(),
                }),
            }
        };
        let guard = Guard {
            expression: condition,
            names,
            values,
        };
        // A per-key layout in `writing` puts at the target alone: a copy left at the previous
        // count is older, and the target's wins (see `layouts::KeyState`).
        let transition =
            placement.has_previous() && placement.put_checks_previous() && mode == PutMode::Replace;
        let result = match self
            .send_guarded(placement, Write::Put(item), guard, transition)
            .await
        {
            Ok(Sent::Done(consumed)) => Ok(consumed.map(|c| *c)),
            Ok(Sent::Refused(found)) => refusal(found.as_ref()),
            // Our own write recognised (exactly the item sent) succeeds; any other refusal
            // may be the lost attempt's doing.
            Ok(Sent::RefusedAfterLostAttempt(found)) => refusal(found.as_ref())
                .map_err(|e| after_lost_attempt("PutItem", E::SCHEMA.entity, key.clone(), e)),
            Err(e) => Err(e),
        };
        // During a transition the transaction recorded the put and the delete (`transact`),
        // as for `put_if`; recording the put again would count it twice.
        if let (Some(item), Some(_), false) = (&kept, &self.handle.stats, transition) {
            let answer = result.as_ref().map(Option::as_ref);
            let count = placement.layout().map(|l| l.n);
            record::write(self.stats(), E::SCHEMA, count, item, answer);
        }
        result.map(drop)
    }

    /// A delete through the layout: during a transition, the delete at the current place and
    /// the guarded delete of the previous place in one `TransactWriteItems` (twice the write
    /// units), so the item cannot come back from its previous place (nor be copied back by a
    /// concurrent migration, whose copy checks the old copy in its own transaction).
    pub(crate) async fn delete_in_layout(&self, key: &ItemKey<E>) -> Result<(), Error> {
        let placement = self.handle.place_key(key).await?;
        self.handle
            .item_operation::<E, _>(
                "delete",
                &placement,
                self.send_delete(&placement, DeleteGuard::Entity),
            )
            .await
    }

    /// Deletes the item with this physical key (no error if there is none). Guarded like
    /// `put`: an item of another entity at the key is left alone and reported as
    /// [`Error::KeyTakenByOtherEntity`].
    pub(crate) async fn delete_by_key(&self, pk: String, sk: Option<String>) -> Result<(), Error> {
        let placement = Placement::fixed(E::SCHEMA, pk, sk);
        self.handle
            .item_operation::<E, _>(
                "delete",
                &placement,
                self.send_delete(&placement, DeleteGuard::Entity),
            )
            .await
    }
}

/// What a guarded delete (`send_delete`) may remove.
pub(super) enum DeleteGuard<E> {
    /// No item, or one of this entity (`delete`).
    Entity,
    /// An existing item of this entity for which the condition holds (`delete_if`).
    Condition(Condition<E>),
}

/// Which put `send_put` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PutMode {
    /// `put`: over nothing, or over an item of the same entity.
    Replace,
    /// `put_new`: over nothing.
    New,
}

/// The write of one item a guarded request sends (see `send_guarded`).
enum Write {
    /// A put of the whole item.
    Put(Item),
    /// A delete of the item with this key.
    Delete(Item),
}

/// The condition of a guarded write, with the names and values it refers to.
pub(super) struct Guard {
    pub(super) expression: String,
    pub(super) names: Names,
    pub(super) values: Values,
}

/// What a transaction of a write at an item's current place and one action at its previous
/// place came to (see `transact_pair`).
pub(super) enum Pair {
    /// Committed.
    Done,
    /// The write's own condition failed; the item DynamoDB returned, if any.
    Refused(Option<Item>),
    /// The condition at the previous place failed; the item DynamoDB returned, if any.
    SecondRefused(Option<Item>),
}

/// What a guarded write came to.
pub(super) enum Sent {
    /// Written, with the capacity the request consumed (a transaction's is recorded apart);
    /// boxed, as it is far larger than a refusal.
    Done(Option<Box<ConsumedCapacity>>),
    /// The write's own condition failed; the item DynamoDB returned, if any.
    Refused(Option<Item>),
    /// As `Refused`, in an attempt the SDK sent after one that got no answer, which may have
    /// been applied: the refusal may be its doing ([`Error::WriteOutcomeUnknown`]).
    RefusedAfterLostAttempt(Option<Item>),
}

/// Whether two items hold the same data apart from the attribute `except` (an item's two
/// places differ only in their partition key).
fn same_item_but(a: &Item, b: &Item, except: &str) -> bool {
    let without = |item: &Item| {
        let mut item = item.clone();
        item.remove(except);
        item
    };
    same_item(&without(a), &without(b))
}

impl<E: ShardedEntity + GsiRewrite> Update<E> {
    /// An update of the item `key` names, in `repo`'s table: what the generated
    /// `Entity::update(&repo, ..)` returns.
    #[doc(hidden)]
    pub fn new(repo: &Repo<E>, key: Result<UpdateKey, Error>) -> Self {
        Update::with_handle(Arc::clone(repo.handle()), key)
    }
}

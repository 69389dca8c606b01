//! What a write does about its item's previous place while a layout transition is declared
//! (the rule is [`placement`](crate::access::placement)'s): the guarded `Delete` of the
//! previous place, the check that it is empty, and the *settle* that first moves an item still
//! there to its current place, so that a condition sees the item where the write goes.

use std::future::Future;
use std::pin::Pin;

use aws_sdk_dynamodb::types::{ConditionCheck, Delete, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;

use crate::access::condition::{values_of, Names, Values};
use crate::access::entity::{is_ours, ShardedEntity};
use crate::access::placement::Placement;
use crate::access::read::batch;
use crate::access::retry::RetryPolicy;
use crate::access::write::moves::{move_item, MoveOutcome, Store};
use crate::access::write::write_rules::{entity_guard, no_item};
use crate::error::{Error, UpdateRefusal};
use crate::item::Item;

/// The future of a settle, type-erased so that a transaction can hold actions of any entity.
pub(crate) type SettleFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// A settle a transaction runs before it commits: its item's placement and the entity's move.
pub(crate) struct PendingSettle {
    placement: Placement,
    run: for<'a> fn(&'a Placement, &'a Client, &'a str) -> SettleFuture<'a>,
}

impl PendingSettle {
    /// Settles the item (see [`Placement::settle`]).
    pub(crate) async fn run(&self, client: &Client, table: &str) -> Result<(), Error> {
        (self.run)(&self.placement, client, table).await
    }
}

fn settle_erased<'a, E: ShardedEntity + 'static>(
    placement: &'a Placement,
    client: &'a Client,
    table: &'a str,
) -> SettleFuture<'a> {
    Box::pin(placement.settle::<E>(client, table))
}

impl Placement {
    /// The item's old copy, read consistently: at the previous place, or, when the previous
    /// placement is unknown, at the first previous shard that holds an item of the entity
    /// (one `BatchGetItem`; another service may have written the item twice, and a write
    /// settles one copy a time).
    pub(crate) async fn old_copy<E: ShardedEntity>(
        &self,
        client: &Client,
        table: &str,
    ) -> Result<Option<Item>, Error> {
        if let Some(key) = self.previous_key()? {
            return client
                .get_item()
                .table_name(table)
                .set_key(Some(key))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| Error::dynamo("GetItem", table, e))
                .map(|output| output.item);
        }
        if self.candidates().is_empty() {
            return Ok(None);
        }
        let found = batch::get_consistent(
            client,
            table,
            self.candidate_keys()?,
            &RetryPolicy::default(),
        )
        .await?;
        let position = |item: &Item| {
            let pk = item
                .get(self.schema().pk.attribute)
                .and_then(|v| v.as_s().ok());
            self.candidates().iter().position(|c| Some(c) == pk)
        };
        Ok(found
            .into_iter()
            .filter(is_ours::<E>)
            .min_by_key(|item| position(item)))
    }

    /// The guarded `Delete` of the previous place (with its key), during a transition: the
    /// extra action of a write that leaves no copy behind.
    pub(crate) fn previous_delete(&self, table: &str) -> Result<Option<(Item, Delete)>, Error> {
        let Some(key) = self.previous_key()? else {
            return Ok(None);
        };
        let (mut names, mut values) = (Names::new(), Values::new());
        // A previous place: the guard accepts an untagged item there too (written before the
        // table adopted `sharded`, and the entity's by its keys, which are this item's).
        let previous = self.previous().unwrap_or_default();
        let guard = entity_guard(self.schema(), previous, &mut names, &mut values);
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(guard)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(Error::build("the previous place's delete"))?;
        Ok(Some((key, delete)))
    }

    /// The `ConditionCheck` that the previous place holds nothing (with its key), during a
    /// transition: what a write that creates its item (`put_new`, a move's target) adds, so
    /// an item not yet migrated is not created a second time.
    pub(crate) fn previous_vacancy(
        &self,
        table: &str,
    ) -> Result<Option<(Item, ConditionCheck)>, Error> {
        let Some(key) = self.previous_key()? else {
            return Ok(None);
        };
        let mut names = Names::new();
        let condition = no_item(self.schema(), &mut names);
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(Error::build("the previous place's check"))?;
        Ok(Some((key, check)))
    }

    /// Before a write whose condition reads the stored item: an item still at its previous
    /// place is moved to its current place in one transaction (put at the current place if
    /// it is empty, delete the old copy if unchanged; when the current place already holds
    /// the item, the stale old copy is deleted), so the condition sees the item where the
    /// write goes, and nothing is left behind. Costs one consistent `GetItem` of the previous
    /// place, plus the move's transaction when the item was there (and, where the placement
    /// is unknown, one more look for another copy). An item changed by someone else while it
    /// is moved is read again (a few times).
    pub(crate) async fn settle<E: ShardedEntity>(
        &self,
        client: &Client,
        table: &str,
    ) -> Result<(), Error> {
        const ATTEMPTS: usize = 5;
        if !self.has_previous() && !self.previous_unknown() {
            return Ok(());
        }
        // Where the placement is unknown, another service may have written the item at
        // several previous shards: each copy is settled in turn (the first moved, the others
        // then stale), so that a delete leaves none behind to come back.
        let copies = if self.previous_unknown() {
            self.candidates().len()
        } else {
            0
        };
        for _ in 0..ATTEMPTS + copies {
            let Some(old) = self.old_copy::<E>(client, table).await? else {
                return Ok(());
            };
            let store = Store::new(client, table)
                .in_layout(self.layout())
                .overwriting(self.prefers_previous());
            match move_item::<E>(store, &old).await?.outcome {
                MoveOutcome::Moved | MoveOutcome::Superseded if self.previous_unknown() => {}
                // Occupied: the current place holds another service's item; the write that
                // follows is refused by its guard, naming it.
                MoveOutcome::Moved
                | MoveOutcome::Superseded
                | MoveOutcome::InPlace
                | MoveOutcome::Occupied => return Ok(()),
                MoveOutcome::Changed => {}
                // Nothing written: wait a little before reading it again.
                MoveOutcome::Throttled => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await
                }
            }
        }
        Err(UpdateRefusal::KeptChangingWhileMoved {
            entity: self.schema().entity,
            at: self.previous().unwrap_or_default().to_owned(),
            attempts: ATTEMPTS,
        }
        .into())
    }

    /// The settle a transaction runs before its commit, during a transition.
    pub(crate) fn pending_settle<E: ShardedEntity + 'static>(&self) -> Option<PendingSettle> {
        (self.has_previous() || self.previous_unknown()).then(|| PendingSettle {
            placement: self.clone(),
            run: settle_erased::<E>,
        })
    }
}

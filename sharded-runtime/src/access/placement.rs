//! Where an item lives: its current place and, while a layout transition is declared
//! (`previous_n` or `legacy` on `#[pk]`), its previous place; and how each operation treats
//! that previous place. Every point operation asks this module, none computes it itself.
//!
//! The rule of writes: **no write leaves a copy of its item at the previous place**, so a
//! stale copy can never outlive the current one (and come back through a read that falls back
//! to it, or through the migration copying it back).
//!
//! | operation | the previous place |
//! |---|---|
//! | `get`, `TransactGet` | read after the current place; the current copy wins |
//! | `put` (unversioned), `delete`, a transaction's `put`/`delete` | a guarded `Delete` in the same `TransactWriteItems` |
//! | `put_new`, `move_item`'s target | a `ConditionCheck` that it is empty, in the same transaction |
//! | `put_if`, versioned `put`, `update`, `delete_if`, a transaction's `check` and `move_item`'s source | *settled* first: an item still there is moved to its current place (one transaction), so the condition sees it; then the write, with a guarded `Delete` of the previous place where it is a transaction |
//! | `batch_put` | deleted after the put was written |
//! | `batch_delete` | deleted first, in a phase of its own |
//! | counters | none: a counter's shards are named by the item's identity, which no layout change moves |
//!
//! The guard of the previous place: no item, one of this entity, or (during a `legacy`
//! transition) an untagged item written before the table adopted `sharded`.

use std::future::Future;
use std::pin::Pin;

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, ReturnValuesOnConditionCheckFailure,
};
use aws_sdk_dynamodb::Client;

use crate::access::condition::{values_of, Names, Values};
use crate::access::entity::ShardedEntity;
use crate::access::migrate::{move_item, MoveOutcome, Store};
use crate::access::write_rules::{entity_guard, key_item, no_item};
use crate::error::Error;
use crate::item::Item;
use crate::keys::schema::EntitySchema;

/// Where one item of an entity lives: its partition key and sort key now, and its partition
/// key under the previous layout while a transition is declared and that place differs.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    schema: &'static EntitySchema,
    pk: String,
    sk: Option<String>,
    previous: Option<String>,
    /// While a previous layout of unknown placement is declared (`previous_shard =
    /// "unknown"`): every previous shard but the current place, any of which may hold the
    /// item. A point read asks them all; a write first [settles](Self::settle) the item (finds
    /// its old copy there and moves it), so nothing is left behind.
    candidates: Vec<String>,
}

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
    /// The placement of `entity`.
    pub(crate) fn of<E: ShardedEntity>(entity: &E) -> Result<Self, Error> {
        let keys = entity.item_keys()?;
        let previous = entity.previous_pk()?;
        Ok(Placement::of_key(E::SCHEMA, keys.pk, previous, keys.sk))
    }

    /// The placement of the item with current partition key `pk` (and `previous`, as the
    /// generated code computes it from the key fields during a transition).
    pub(crate) fn of_key(
        schema: &'static EntitySchema,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Self {
        let previous = previous.filter(|p| *p != pk);
        let candidates = crate::keys::layout::previous_shards(&schema.pk, &pk)
            .map(|shards| shards.filter(|key| *key != pk).collect())
            .unwrap_or_default();
        Placement {
            schema,
            pk,
            sk,
            previous,
            candidates,
        }
    }

    /// The placement of an item whose key does not depend on the layout (found by the
    /// explicit all-shard path of a randomly sharded entity, by its physical key): no
    /// previous place.
    pub(crate) fn fixed(schema: &'static EntitySchema, pk: String, sk: Option<String>) -> Self {
        Placement {
            schema,
            pk,
            sk,
            previous: None,
            candidates: Vec::new(),
        }
    }

    /// The previous shards that may hold the item (a previous layout of unknown placement),
    /// in shard order.
    pub(crate) fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// Whether the item may be at one of several previous places, none known (a previous
    /// layout of unknown placement): a write settles it first.
    pub(crate) fn previous_unknown(&self) -> bool {
        !self.candidates.is_empty()
    }

    /// The current partition key.
    pub(crate) fn pk(&self) -> &str {
        &self.pk
    }

    /// The sort key, if the entity has one.
    pub(crate) fn sk(&self) -> Option<&str> {
        self.sk.as_deref()
    }

    /// The previous partition key, while a transition is declared and it differs.
    pub(crate) fn previous(&self) -> Option<&str> {
        self.previous.as_deref()
    }

    /// Whether an item stored under partition key `stored` (which parses under `place` of
    /// the layouts) may be this one: at its current place, at its previous place (any of the
    /// previous shards when their placement is unknown), or on another shard of its logical
    /// key (written there by a service that places items its own way: queries read every
    /// shard, so it is the item).
    pub(crate) fn may_be_at(&self, stored: &str, place: crate::keys::layout::Place) -> bool {
        let key = &self.schema.pk;
        stored == self.pk
            || self.previous.as_deref() == Some(stored)
            || (place.previous
                && crate::keys::layout::previous_shards(key, &self.pk)
                    .is_some_and(|mut shards| shards.any(|s| s == stored)))
            || (place.current && crate::keys::layout::same_logical_key(key, stored, &self.pk))
    }

    /// Whether the item may also be at a previous place.
    pub(crate) fn has_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// The key attributes of the current place (sizes checked).
    pub(crate) fn current_key(&self) -> Result<Item, Error> {
        key_item(self.schema, self.pk.clone(), self.sk.clone())
    }

    /// The key attributes of the previous place, during a transition.
    pub(crate) fn previous_key(&self) -> Result<Option<Item>, Error> {
        self.previous
            .clone()
            .map(|previous| key_item(self.schema, previous, self.sk.clone()))
            .transpose()
    }

    /// The keys a point read asks, in order: the current place first (whose copy wins), then
    /// the previous one, or every previous shard when the previous placement is unknown.
    pub(crate) fn read_keys(&self) -> Result<Vec<Item>, Error> {
        let mut keys = vec![self.current_key()?];
        keys.extend(self.previous_key()?);
        keys.extend(self.candidate_keys()?);
        Ok(keys)
    }

    /// The key attributes of every previous shard that may hold the item (unknown placement).
    pub(crate) fn candidate_keys(&self) -> Result<Vec<Item>, Error> {
        self.candidates
            .iter()
            .map(|pk| key_item(self.schema, pk.clone(), self.sk.clone()))
            .collect()
    }

    /// The item's old copy, read consistently: at the previous place, or, when the previous
    /// placement is unknown, at the first previous shard that holds an item of the entity
    /// (one `BatchGetItem`; another service may have written the item twice, and a write
    /// settles one copy a time).
    async fn old_copy<E: ShardedEntity>(
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
        if self.candidates.is_empty() {
            return Ok(None);
        }
        let found = crate::access::batch::get_consistent(
            client,
            table,
            self.candidate_keys()?,
            &crate::access::retry::RetryPolicy::default(),
        )
        .await?;
        let position = |item: &Item| {
            let pk = item
                .get(self.schema.pk.attribute)
                .and_then(|v| v.as_s().ok());
            self.candidates.iter().position(|c| Some(c) == pk)
        };
        Ok(found
            .into_iter()
            .filter(crate::access::recognize::is_ours::<E>)
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
        let previous = self.previous.as_deref().unwrap_or_default();
        let guard = entity_guard(self.schema, previous, &mut names, &mut values);
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(guard)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| build_error("the previous place's delete", e))?;
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
        let condition = no_item(self.schema, &mut names);
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| build_error("the previous place's check", e))?;
        Ok(Some((key, check)))
    }

    /// Before a write whose condition reads the stored item: an item still at its previous
    /// place is moved to its current place in one transaction (put at the current place if
    /// it is empty, delete the old copy if unchanged; when the current place already holds
    /// the item, the stale old copy is deleted), so the condition sees the item where the
    /// write goes, and nothing is left behind. Costs one consistent `GetItem` of the previous
    /// place, plus the move's transaction when the item was there. An item changed by someone
    /// else while it is moved is read again (a few times).
    pub(crate) async fn settle<E: ShardedEntity>(
        &self,
        client: &Client,
        table: &str,
    ) -> Result<(), Error> {
        const ATTEMPTS: usize = 5;
        if !self.has_previous() && !self.previous_unknown() {
            return Ok(());
        }
        for _ in 0..ATTEMPTS {
            let Some(old) = self.old_copy::<E>(client, table).await? else {
                return Ok(());
            };
            match move_item::<E>(Store::new(client, table), &old)
                .await?
                .outcome
            {
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
        Err(Error::InvalidUpdate(format!(
            "the {} item at {} kept changing while it was moved to its current place \
             ({ATTEMPTS} attempts); retry the write",
            self.schema.entity,
            self.previous.as_deref().unwrap_or_default()
        )))
    }

    /// The settle a transaction runs before its commit, during a transition.
    pub(crate) fn pending_settle<E: ShardedEntity + 'static>(&self) -> Option<PendingSettle> {
        (self.has_previous() || self.previous_unknown()).then(|| PendingSettle {
            placement: self.clone(),
            run: settle_erased::<E>,
        })
    }
}

/// The key of shard `pk` of a sharded counter: a counter has no previous place, because its
/// shards (`<identity>#0` .. `#(n-1)`) are named by the item's identity and its own `n`, which
/// no layout transition of the entity changes.
pub(crate) fn counter_shard_key(
    pk_attribute: &str,
    sk_attribute: Option<&str>,
    sort_key: &str,
    pk: String,
) -> Item {
    let mut key = Item::from([(pk_attribute.to_owned(), AttributeValue::S(pk))]);
    if let Some(sk) = sk_attribute {
        key.insert(sk.to_owned(), AttributeValue::S(sort_key.to_owned()));
    }
    key
}

fn build_error(what: &str, e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::InvalidTransaction(format!("{what} could not be built: {e}"))
}

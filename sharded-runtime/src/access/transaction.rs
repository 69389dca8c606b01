//! Typed transactions: `TransactWriteItems` across entities and shards, checked before
//! sending, idempotent under retries, with cancellations mapped back to the action and key.

use std::collections::HashSet;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update as UpdateAction,
};
use aws_sdk_dynamodb::Client;

use crate::access::condition::{Condition, Names, Values};
use crate::access::entity::{describe_key, Item, ShardedEntity};
use crate::access::repo::{entity_guard, previous_place_guard, put_guard, stamp_write};
use crate::access::update::{GsiRewrite, Update};
use crate::capacity::units::item_size;
use crate::error::{Error, ItemKeyDisplay};
use crate::keys::schema::{EntitySchema, ENTITY_ATTRIBUTE};

/// The most actions one `TransactWriteItems` takes.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
/// The largest total size of one transaction's items, in bytes (4 MB).
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// One action of a failed transaction, as DynamoDB reported it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CanceledAction {
    /// The action's position in the transaction (0-based, in the order it was added).
    pub index: usize,
    /// What the action did: `put`, `update`, `delete` or `check`.
    pub kind: &'static str,
    /// The entity it wrote.
    pub entity: &'static str,
    /// Its item's key.
    pub key: ItemKeyDisplay,
    /// DynamoDB's reason: `ConditionalCheckFailed`, `TransactionConflict`,
    /// `ProvisionedThroughputExceeded`, `ValidationError`, ...
    pub code: String,
    /// DynamoDB's message, if any.
    pub message: Option<String>,
    /// The item as stored when a condition failed, if DynamoDB returned it.
    pub current: Option<Item>,
}

struct Action {
    kind: &'static str,
    entity: &'static str,
    schema: &'static EntitySchema,
    key: Item,
    size: usize,
    item: TransactWriteItem,
}

/// A typed write transaction over one table: puts, updates, deletes and condition checks of
/// any entities, on any shards, applied all or nothing.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity, Transaction};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let f = Wallet::fields();
/// Transaction::new(repo.client(), repo.table())
///     .update(Wallet::update(repo, "alice").add(f.coins, -5).condition(f.coins.ge(5)))
///     .update(Wallet::update(repo, "bob").add(f.coins, 5))
///     .commit()
///     .await?;
/// # Ok(()) }
/// ```
///
/// Checked before anything is sent ([`Error::InvalidTransaction`]): at most
/// [`MAX_TRANSACTION_ACTIONS`] actions and [`MAX_TRANSACTION_BYTES`] of items, and no two
/// actions on one key (DynamoDB refuses both). Puts are guarded like `Repo::put`: an item of
/// another entity under the same key is not overwritten; a versioned entity replaces only the
/// version read, and writes it + 1, as `Repo::put` does.
///
/// **Idempotent.** Each transaction carries a `ClientRequestToken` (random, or yours with
/// [`with_token`](Self::with_token)); the SDK's retries resend the same request with the same
/// token, so a commit whose response was lost is not applied twice (DynamoDB remembers a token
/// for 10 minutes). A failed transaction is [`Error::TransactionCanceled`], listing each
/// action DynamoDB gave a reason for, with its entity and key.
#[must_use = "a transaction does nothing until it is committed"]
pub struct Transaction {
    client: Client,
    table: String,
    token: Option<String>,
    actions: Vec<Action>,
    error: Option<Error>,
}

impl Transaction {
    /// An empty transaction on `table`.
    pub fn new(client: &Client, table: impl Into<String>) -> Self {
        Transaction {
            client: client.clone(),
            table: table.into(),
            token: None,
            actions: Vec::new(),
            error: None,
        }
    }

    /// Uses `token` as the `ClientRequestToken` (1 to 36 characters): give the same token
    /// when your own code retries a commit, so it applies at most once.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    fn push(mut self, action: Result<Action, Error>) -> Self {
        match action {
            Ok(action) => self.actions.push(action),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Puts `entity` (guarded: an existing item under its key must be of the same entity).
    pub fn put<E: ShardedEntity>(self, entity: &E) -> Self {
        let action = put_action(&self.table, entity, PutRule::Guarded, None);
        self.push(action)
    }

    /// Puts `entity` only if `condition` holds for the stored item (and the guard).
    pub fn put_if<E: ShardedEntity>(self, entity: &E, condition: Condition<E>) -> Self {
        let action = put_action(&self.table, entity, PutRule::Guarded, Some(condition));
        self.push(action)
    }

    /// Applies a typed update (built with the entity's generated `update`).
    ///
    /// It acts on the item's current place, which must hold the item (an update never creates
    /// one). During a layout transition an item still at its previous place is not moved first
    /// (as `Update::send` does), so the transaction is canceled with `ConditionalCheckFailed`
    /// for that action: update it with `Update::send` once (which moves it), or run the
    /// migration, then commit again.
    pub fn update<E: ShardedEntity + GsiRewrite>(self, update: Update<E>) -> Self {
        let table = self.table.clone();
        let action = update.build().and_then(|built| {
            let size = item_size(&built.key) + built.expression.len();
            let item = TransactWriteItem::builder()
                .update(
                    UpdateAction::builder()
                        .table_name(table)
                        .set_key(Some(built.key.clone()))
                        .update_expression(built.expression)
                        .condition_expression(built.condition)
                        .set_expression_attribute_names(Some(built.names))
                        .set_expression_attribute_values(Some(built.values))
                        .return_values_on_condition_check_failure(
                            ReturnValuesOnConditionCheckFailure::AllOld,
                        )
                        .build()
                        .map_err(build_error)?,
                )
                .build();
            Ok(Action {
                kind: "update",
                entity: E::SCHEMA.entity,
                schema: E::SCHEMA,
                key: built.key,
                size,
                item,
            })
        });
        self.push(action)
    }

    /// Deletes the item `entity` identifies (its key), if it is of this entity. During a
    /// layout transition (`previous_n`, `legacy`) the copy at the item's previous place is
    /// deleted too, as a second action, so the item cannot come back from there.
    pub fn delete<E: ShardedEntity>(self, entity: &E) -> Self {
        let previous = previous_delete_action(&self.table, entity);
        let action = keyed_action(&self.table, entity, Kind::Delete, None);
        let this = match previous {
            Some(previous) => self.push(previous),
            None => self,
        };
        this.push(action)
    }

    /// Deletes the item `entity` identifies only if `condition` holds for it.
    pub fn delete_if<E: ShardedEntity>(self, entity: &E, condition: Condition<E>) -> Self {
        let action = keyed_action(&self.table, entity, Kind::Delete, Some(condition));
        self.push(action)
    }

    /// Requires `condition` to hold for the item `entity` identifies, without writing it.
    pub fn check<E: ShardedEntity>(self, entity: &E, condition: Condition<E>) -> Self {
        let action = keyed_action(&self.table, entity, Kind::Check, Some(condition));
        self.push(action)
    }

    /// Moves an item to a new key: deletes `from` (which must exist, as this entity) and puts
    /// `to` (whose key must be free), atomically. The way to change a key field.
    pub fn move_item<E: ShardedEntity>(self, from: &E, to: &E) -> Self {
        let table = self.table.clone();
        let delete = keyed_action(&table, from, Kind::DeleteExisting, None);
        let put = put_action(&table, to, PutRule::New, None);
        self.push(delete).push(put)
    }

    /// The number of actions so far.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the transaction has no action yet.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Checks the transaction and sends it as one `TransactWriteItems`.
    pub async fn commit(self) -> Result<(), Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        check(&self.actions)?;
        let token = self.token.unwrap_or_else(random_token);
        let items: Vec<TransactWriteItem> = self.actions.iter().map(|a| a.item.clone()).collect();
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .client_request_token(token)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(canceled)) => {
                    let reasons = canceled.cancellation_reasons();
                    let actions = self
                        .actions
                        .iter()
                        .enumerate()
                        .zip(reasons)
                        .filter_map(|((index, action), reason)| {
                            let code = reason.code()?;
                            (code != "None").then(|| CanceledAction {
                                index,
                                kind: action.kind,
                                entity: action.entity,
                                key: describe_key(action.schema, &action.key),
                                code: code.to_owned(),
                                message: reason.message().map(str::to_owned),
                                current: reason.item().cloned(),
                            })
                        })
                        .collect();
                    Err(Error::TransactionCanceled { actions })
                }
                _ => Err(Error::dynamo("TransactWriteItems", &self.table, e)),
            },
        }
    }
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::InvalidTransaction(format!("an action could not be built: {e}"))
}

fn with_user<E>(
    base: &str,
    condition: Option<Condition<E>>,
    names: &mut Names,
    values: &mut Values,
) -> Result<String, Error> {
    Ok(match condition {
        // The base may be an OR: parenthesised, so the AND applies to all of it.
        Some(c) => format!("({base}) AND ({})", c.erase().render(names, values)?),
        None => base.to_owned(),
    })
}

/// What a put requires of the item already under its key.
enum PutRule {
    /// Nothing, or an item of this entity (replaced).
    Guarded,
    /// Nothing: the key must be free (the new half of a move).
    New,
}

fn put_action<E: ShardedEntity>(
    table: &str,
    entity: &E,
    rule: PutRule,
    condition: Option<Condition<E>>,
) -> Result<Action, Error> {
    let schema = E::SCHEMA;
    let mut item = entity.to_item()?;
    // As `Repo::put`: the version read is checked and bumped, the times stamped.
    let read_version = stamp_write(schema, &mut item)?;
    let key = key_of(schema, &item);
    let (mut names, mut values) = (Names::new(), Values::new());
    let base = match rule {
        PutRule::Guarded => put_guard(schema, read_version, &mut names, &mut values),
        PutRule::New => {
            names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
            "attribute_not_exists(#pk)"
        }
    };
    let expression = with_user(base, condition, &mut names, &mut values)?;
    let size = item_size(&item);
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(expression)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values((!values.is_empty()).then_some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(build_error)?;
    Ok(Action {
        kind: "put",
        entity: schema.entity,
        schema,
        key,
        size,
        item: TransactWriteItem::builder().put(put).build(),
    })
}

/// A keyed action: what it does, and what it requires of the stored item.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Delete: no item, or one of this entity.
    Delete,
    /// Delete an item that must exist, as this entity (the old half of a move).
    DeleteExisting,
    /// Condition check: the item must be of this entity.
    Check,
}

/// During a transition: the delete of the copy at `entity`'s previous place (no item, one of
/// this entity, or an untagged legacy item), or `None` when no transition is declared.
fn previous_delete_action<E: ShardedEntity>(
    table: &str,
    entity: &E,
) -> Option<Result<Action, Error>> {
    let schema = E::SCHEMA;
    let build = || -> Result<Option<Action>, Error> {
        let keys = entity.item_keys()?;
        let Some(previous) = entity.previous_pk()?.filter(|p| *p != keys.pk) else {
            return Ok(None);
        };
        let mut key = Item::from([(schema.pk.attribute.to_owned(), AttributeValue::S(previous))]);
        if let (Some(sk), Some(value)) = (schema.sk, keys.sk) {
            key.insert(sk.attribute.to_owned(), AttributeValue::S(value));
        }
        let (mut names, mut values) = (Names::new(), Values::new());
        let guard = previous_place_guard(schema, &mut names, &mut values);
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(guard)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(Some(Action {
            kind: "delete",
            entity: schema.entity,
            schema,
            size: item_size(&key),
            key,
            item: TransactWriteItem::builder().delete(delete).build(),
        }))
    };
    build().transpose()
}

fn keyed_action<E: ShardedEntity>(
    table: &str,
    entity: &E,
    kind: Kind,
    condition: Option<Condition<E>>,
) -> Result<Action, Error> {
    let schema = E::SCHEMA;
    let item = entity.to_item()?;
    let key = key_of(schema, &item);
    let (mut names, mut values) = (Names::new(), Values::new());
    // Never touch another entity's item under the same key.
    let base = match kind {
        Kind::Delete => entity_guard(schema, &mut names, &mut values),
        Kind::DeleteExisting | Kind::Check => {
            names.insert("#et".to_owned(), ENTITY_ATTRIBUTE.to_owned());
            values.insert(
                ":et".to_owned(),
                AttributeValue::S(schema.entity.to_owned()),
            );
            "#et = :et"
        }
    };
    let expression = with_user(base, condition, &mut names, &mut values)?;
    let size = item_size(&key);
    let on_failure = ReturnValuesOnConditionCheckFailure::AllOld;
    let item = if kind == Kind::Check {
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(on_failure)
            .build()
            .map_err(build_error)?;
        TransactWriteItem::builder().condition_check(check).build()
    } else {
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(on_failure)
            .build()
            .map_err(build_error)?;
        TransactWriteItem::builder().delete(delete).build()
    };
    Ok(Action {
        kind: match kind {
            Kind::Check => "check",
            _ => "delete",
        },
        entity: schema.entity,
        schema,
        key,
        size,
        item,
    })
}

/// The primary key attributes of `item`.
fn key_of(schema: &EntitySchema, item: &Item) -> Item {
    let mut key = Item::new();
    for attribute in [Some(schema.pk.attribute), schema.sk.map(|s| s.attribute)]
        .into_iter()
        .flatten()
    {
        if let Some(value) = item.get(attribute) {
            key.insert(attribute.to_owned(), value.clone());
        }
    }
    key
}

fn check(actions: &[Action]) -> Result<(), Error> {
    if actions.is_empty() {
        return Err(Error::InvalidTransaction(
            "a transaction needs at least one action".to_owned(),
        ));
    }
    if actions.len() > MAX_TRANSACTION_ACTIONS {
        return Err(Error::InvalidTransaction(format!(
            "{} actions, and DynamoDB takes at most {MAX_TRANSACTION_ACTIONS} in one transaction: \
             split it (each part is then atomic on its own)",
            actions.len()
        )));
    }
    let bytes: usize = actions.iter().map(|a| a.size).sum();
    if bytes > MAX_TRANSACTION_BYTES {
        return Err(Error::InvalidTransaction(format!(
            "{bytes} bytes of items, and DynamoDB takes at most {MAX_TRANSACTION_BYTES} in one \
             transaction: split it, or store large values elsewhere"
        )));
    }
    let mut seen = HashSet::new();
    for (index, action) in actions.iter().enumerate() {
        let mut key: Vec<(String, String)> = action
            .key
            .iter()
            .map(|(k, v)| (k.clone(), format!("{v:?}")))
            .collect();
        key.sort();
        if !seen.insert(key) {
            return Err(Error::InvalidTransaction(format!(
                "action {index} ({} of {} {}) is on a key an earlier action already uses; \
                 DynamoDB allows one action per item in a transaction: combine them",
                action.kind,
                action.entity,
                describe_key(action.schema, &action.key)
            )));
        }
    }
    Ok(())
}

/// A fresh `ClientRequestToken`: 32 hex digits from 128 random bits.
pub(crate) fn random_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// The primary key of one item of entity `E`, built by the generated `Entity::key(..)` (on
/// the shard the key's hash fields give).
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// let key = Wallet::key("alice")?;
/// assert_eq!(key.partition_key(), "USER#alice");
/// # Ok::<(), sharded::KeyError>(())
/// ```
pub struct ItemKey<E> {
    pk: String,
    sk: Option<String>,
    _entity: std::marker::PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for ItemKey<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemKey")
            .field("pk", &self.pk)
            .field("sk", &self.sk)
            .finish()
    }
}

impl<E> Clone for ItemKey<E> {
    fn clone(&self) -> Self {
        ItemKey {
            pk: self.pk.clone(),
            sk: self.sk.clone(),
            _entity: std::marker::PhantomData,
        }
    }
}

impl<E: ShardedEntity> ItemKey<E> {
    /// The key of `E`'s item with these physical keys. Called by generated code.
    #[doc(hidden)]
    pub fn new(pk: String, sk: Option<String>) -> Self {
        ItemKey {
            pk,
            sk,
            _entity: std::marker::PhantomData,
        }
    }

    /// The physical partition key (with its shard).
    pub fn partition_key(&self) -> &str {
        &self.pk
    }

    /// The sort key, if the entity has one.
    pub fn sort_key(&self) -> Option<&str> {
        self.sk.as_deref()
    }

    fn item(&self) -> Item {
        let schema = E::SCHEMA;
        let mut key = Item::from([(
            schema.pk.attribute.to_owned(),
            AttributeValue::S(self.pk.clone()),
        )]);
        if let (Some(sk), Some(value)) = (schema.sk, &self.sk) {
            key.insert(sk.attribute.to_owned(), AttributeValue::S(value.clone()));
        }
        key
    }
}

/// Where one item of a [`TransactGet`] lands in its answer; typed by the entity read.
#[derive(Debug)]
pub struct Slot<E> {
    index: usize,
    _entity: std::marker::PhantomData<fn() -> E>,
}

/// A transactional read of up to 100 items of any entities and shards: one
/// `TransactGetItems`, a snapshot no concurrent transaction is half-applied in.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity, TransactGet};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let mut read = TransactGet::new(repo.client(), repo.table());
/// let alice = read.get(Wallet::key("alice")?);
/// let bob = read.get(Wallet::key("bob")?);
/// let mut answer = read.send().await?;
/// let total = answer.take(alice)?.map_or(0, |w| w.coins) + answer.take(bob)?.map_or(0, |w| w.coins);
/// # Ok(()) }
/// ```
pub struct TransactGet {
    client: Client,
    table: String,
    keys: Vec<(Item, &'static str)>,
}

impl TransactGet {
    /// An empty read on `table`.
    pub fn new(client: &Client, table: impl Into<String>) -> Self {
        TransactGet {
            client: client.clone(),
            table: table.into(),
            keys: Vec::new(),
        }
    }

    /// Adds the item `key` names; its result is taken from the answer with the returned slot.
    pub fn get<E: ShardedEntity>(&mut self, key: ItemKey<E>) -> Slot<E> {
        self.keys.push((key.item(), E::SCHEMA.entity));
        Slot {
            index: self.keys.len() - 1,
            _entity: std::marker::PhantomData,
        }
    }

    /// Sends the read. At most [`MAX_TRANSACTION_ACTIONS`] items ([`Error::InvalidTransaction`]
    /// otherwise, before sending).
    pub async fn send(self) -> Result<TransactGetAnswer, Error> {
        if self.keys.is_empty() || self.keys.len() > MAX_TRANSACTION_ACTIONS {
            return Err(Error::InvalidTransaction(format!(
                "a transactional read takes 1 to {MAX_TRANSACTION_ACTIONS} items, not {}",
                self.keys.len()
            )));
        }
        let gets: Vec<aws_sdk_dynamodb::types::TransactGetItem> = self
            .keys
            .iter()
            .map(|(key, _)| {
                aws_sdk_dynamodb::types::Get::builder()
                    .table_name(&self.table)
                    .set_key(Some(key.clone()))
                    .build()
                    .map(|get| {
                        aws_sdk_dynamodb::types::TransactGetItem::builder()
                            .get(get)
                            .build()
                    })
                    .map_err(build_error)
            })
            .collect::<Result<_, _>>()?;
        let output = self
            .client
            .transact_get_items()
            .set_transact_items(Some(gets))
            .send()
            .await
            .map_err(|e| Error::dynamo("TransactGetItems", &self.table, e))?;
        let items = output
            .responses
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.item.filter(|item| !item.is_empty()))
            .collect();
        Ok(TransactGetAnswer { items })
    }
}

/// The answer of a [`TransactGet`]: take each item with its slot.
#[derive(Debug)]
pub struct TransactGetAnswer {
    items: Vec<Option<Item>>,
}

impl TransactGetAnswer {
    /// The item of `slot`, `None` when there is none; an item of another entity under that
    /// key is [`Error::WrongEntity`]. Each slot is taken once (a second take is `None`).
    pub fn take<E: ShardedEntity>(&mut self, slot: Slot<E>) -> Result<Option<E>, Error> {
        match self.items.get_mut(slot.index).and_then(Option::take) {
            Some(item) => E::from_item(item).map(Some),
            None => Ok(None),
        }
    }
}

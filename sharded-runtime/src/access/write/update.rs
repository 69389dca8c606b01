//! Typed updates: one `UpdateItem` on the item's shard, built from the entity's typed fields.
//!
//! The generated `Entity::update(&repo, key..)` computes the physical key (on the shard the
//! hash fields give) and hands this builder the values of the key fields; each operation takes
//! a [`Field`] of the entity, so a value of the wrong type, a field of another entity, or a
//! field of the primary key (its value decides where the item lives) does not compile.
//! Names go through `ExpressionAttributeNames` and values through serde_dynamo.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
};

use crate::access::condition::{values_of, Condition, Data, Field, Names, Operand, Values};
use crate::access::entity::ShardedEntity;
use crate::access::handle::{Handle, LayoutCheck};
use crate::access::layouts::KeyState;
use crate::access::layouts::Snapshot;
use crate::access::placement::Placement;
use crate::access::write::idempotent::LostAttempts;
use crate::access::write::write_rules::{
    existing_entity, expect_version, stamp_update, stored_version,
};
use crate::capacity::stats::record;
use crate::error::{Error, UpdateRefusal};
use crate::item::{describe_key, Item};

/// A field an update may change: a [`Field`] outside the primary key.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a field an update of `{E}` can change",
    label = "a primary-key field of `{E}`, or a field of another entity",
    note = "a primary-key field decides which item (and which shard) this is: to change it, move the item (delete the old one and put the new one, in one transaction to make it atomic); the other fields of `{E}` are in `{E}::fields()`"
)]
pub trait Updatable<E> {
    /// The field's Rust type.
    type Value;
    /// The stored attribute.
    fn attribute(&self) -> &'static str;
}

impl<E, T> Updatable<E> for Field<E, T, Data> {
    type Value = T;
    fn attribute(&self) -> &'static str {
        Field::attribute(self)
    }
}

/// Types `ADD` works on: numbers. (DynamoDB's `ADD` also unites sets, but serde_dynamo stores
/// Rust's `HashSet` and `BTreeSet` as lists, which `ADD` refuses: use `append`, or `set`.)
#[diagnostic::on_unimplemented(
    message = "`add` works on numbers, and `{Self}` is not one",
    label = "not a number",
    note = "to extend a list use `append`; to replace a value use `set`"
)]
pub trait Addable {}

macro_rules! addable {
    ($($t:ty),*) => { $(impl Addable for $t {})* };
}
addable!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, usize, isize, f32, f64);

/// Fields `remove` can clear: optional ones (an entity's required field must stay readable).
#[diagnostic::on_unimplemented(
    message = "`remove` clears an `Option` field, and `{Self}` is a required one",
    label = "a required field",
    note = "a required field must stay readable: `set` it to a new value instead, or make it an `Option`"
)]
pub trait Removable {}
impl<T> Removable for Option<T> {}

/// What the generated code knows when it builds an update: the physical key, the key fields'
/// stored values, and how to rebuild a GSI key from stored values.
#[doc(hidden)]
pub struct UpdateKey {
    /// Partition key and sort key.
    pub pk: String,
    /// The sort key, if the entity has one.
    pub sk: Option<String>,
    /// The attribute values of the primary key's fields, by attribute.
    pub key_values: HashMap<&'static str, AttributeValue>,
    /// The item's partition key under the previous layout, while a transition is declared.
    pub previous: Option<String>,
    /// What places the item under its key's layout, for an entity whose layout is decided
    /// per key (`pk` is then its place under the declared `n`).
    pub shard_input: Option<crate::keys::layout::ShardInput>,
}

/// Rebuilds the GSI key attributes an update changes, from the stored values of the key
/// fields and the fields it sets: generated per entity (`GsiRewrite::gsi_keys`).
#[doc(hidden)]
pub trait GsiRewrite {
    /// For each GSI whose key uses a field in `values` that the update sets (`changed`),
    /// its key attributes and their new values; an error naming the missing field when the
    /// update does not set every field that key is built from.
    fn gsi_keys(
        values: &HashMap<&'static str, AttributeValue>,
        changed: &[&'static str],
    ) -> Result<Vec<(&'static str, String)>, Error>;
}

#[derive(Debug, Clone)]
enum Action {
    Set(Result<AttributeValue, String>),
    SetIfAbsent(Result<AttributeValue, String>),
    Add(Result<AttributeValue, String>),
    Append(Result<AttributeValue, String>),
    Remove,
}

/// A typed `UpdateItem` of one item, built by the entity's generated `update` function.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "PLAYER#{player_id}")]
/// struct Player { game_id: String, player_id: String, points: u64, nickname: Option<String>, badges: Vec<String> }
///
/// # async fn demo(repo: &Repo<Player>) -> Result<(), Error> {
/// let f = Player::fields();
/// let updated: Player = Player::update(repo, "g1", "p1")
///     .add(f.points, 10)                        // ADD points :v
///     .append(f.badges, vec!["first-win".into()]) // SET badges = list_append(..)
///     .remove(f.nickname)                       // REMOVE nickname
///     .condition(f.points.lt(1_000))
///     .send_returning()
///     .await?;
/// # Ok(()) }
/// ```
///
/// The item must exist and be of this entity (an update never creates a partial item): the
/// request carries `attribute_exists(pk) AND _entity = :entity`, and-ed with your condition;
/// when it fails the result is [`Error::ConditionFailed`] with the stored item, if any. A
/// field used in a GSI key rewrites that GSI's key attributes (and its shard) in the same
/// request; the update must then set every field that key is built from (an
/// [`Error::InvalidUpdate`] otherwise, before sending).
#[must_use = "an update does nothing until it is sent"]
pub struct Update<E> {
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> E>,
    key: Result<UpdateKey, Error>,
    actions: Vec<(&'static str, Action)>,
    condition: Option<Condition<()>>,
    /// `if_version(v)`: the stored version the update expects.
    expected_version: Option<u64>,
}

/// How many times an update settles its item again when a writer a phase apart moved it.
const SETTLE_ATTEMPTS: usize = 5;

impl<E: ShardedEntity + GsiRewrite> Update<E> {
    /// An update of the item `key` names, sent through `handle` (see `Update::new`).
    pub(crate) fn with_handle(handle: Arc<Handle>, key: Result<UpdateKey, Error>) -> Self {
        Update {
            handle,
            _entity: PhantomData,
            key,
            actions: Vec::new(),
            condition: None,
            expected_version: None,
        }
    }

    fn action<F: Updatable<E>>(mut self, field: F, action: Action) -> Self {
        self.actions.push((field.attribute(), action));
        self
    }

    /// `SET field = value`
    pub fn set<F: Updatable<E>>(self, field: F, value: impl Operand<F::Value>) -> Self {
        let value = value.to_attribute();
        self.action(field, Action::Set(value))
    }

    /// `SET field = if_not_exists(field, value)`: sets the field only if the item has no such
    /// attribute. serde stores an `Option` field's `None` as a NULL attribute, which exists:
    /// give the field `#[serde(skip_serializing_if = "Option::is_none")]` to store nothing.
    pub fn set_if_absent<F: Updatable<E>>(self, field: F, value: impl Operand<F::Value>) -> Self {
        let value = value.to_attribute();
        self.action(field, Action::SetIfAbsent(value))
    }

    /// `ADD field value`: adds to a number (from 0 when absent); negative values subtract.
    pub fn add<F>(self, field: F, value: impl Operand<F::Value>) -> Self
    where
        F: Updatable<E>,
        F::Value: Addable,
    {
        let value = value.to_attribute();
        self.action(field, Action::Add(value))
    }

    /// `SET field = list_append(if_not_exists(field, []), items)`: appends to a list.
    pub fn append<F, T>(self, field: F, items: Vec<T>) -> Self
    where
        F: Updatable<E, Value = Vec<T>>,
        Vec<T>: Operand<Vec<T>>,
    {
        let value = items.to_attribute();
        self.action(field, Action::Append(value))
    }

    /// `REMOVE field`: clears an optional field.
    pub fn remove<F>(self, field: F) -> Self
    where
        F: Updatable<E>,
        F::Value: Removable,
    {
        self.action(field, Action::Remove)
    }

    /// Only if `condition` holds for the stored item (and-ed with the update's own
    /// condition that the item exists and is of this entity). Several calls combine with AND.
    pub fn condition(mut self, condition: Condition<E>) -> Self {
        let condition = condition.erase();
        self.condition = Some(match self.condition.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// Only if the stored `#[sharded(version)]` is `version` (the one read): optimistic
    /// locking. A different stored version is [`Error::VersionConflict`] with both versions.
    /// Every update of a versioned entity adds 1 to its version, with or without this.
    pub fn if_version(mut self, version: u64) -> Self {
        self.expected_version = Some(version);
        self
    }

    /// Sends the update.
    ///
    /// During a layout transition (`previous_n`, `legacy`) the item is settled first: one
    /// consistent `GetItem` of its previous place and, when it is still there, a move to its
    /// current place in one two-action transaction (put if the current place is empty,
    /// delete the old copy if unchanged). The update then changes the item at its current
    /// place, and no copy stays at the previous one.
    pub async fn send(self) -> Result<(), Error> {
        self.run(false).await.map(|_| ())
    }

    /// Sends the update and returns the item as stored after it (`ReturnValues=ALL_NEW`).
    pub async fn send_returning(self) -> Result<E, Error> {
        match self.run(true).await? {
            Some(item) => E::from_item(item),
            None => Err(UpdateRefusal::NoItemReturned.into()),
        }
    }

    async fn run(self, returning: bool) -> Result<Option<Item>, Error> {
        let handle = Arc::clone(&self.handle);
        let layouts = handle.layouts_of(E::SCHEMA).await?;
        let (built, _) = self.build_in(layouts.as_deref())?;
        let placement = built.placement.clone();
        handle
            .item_operation::<E, _>("update", &placement, Self::apply(&handle, built, returning))
            .await
    }

    /// Sends the built update (within its span: see `run`).
    async fn apply(
        handle: &Handle,
        built: BuiltUpdate,
        returning: bool,
    ) -> Result<Option<Item>, Error> {
        let schema = E::SCHEMA;
        let _written = handle.writing(&built.placement);
        let mut attempts = 0;
        let lost = LostAttempts::default();
        let result = loop {
            // During a transition, an item still at its previous place is moved to its current
            // place first, so the update changes it there (instead of finding no item) and no
            // copy stays behind.
            built
                .placement
                .settle::<E>(handle.client(), handle.table())
                .await?;
            let result = handle
                .client()
                .update_item()
                .table_name(handle.table())
                .set_key(Some(built.key.clone()))
                .update_expression(built.expression.clone())
                .condition_expression(built.condition.clone())
                .set_expression_attribute_names(Some(built.names.clone()))
                .set_expression_attribute_values(values_of(built.values.clone()))
                .return_values(if returning {
                    ReturnValue::AllNew
                } else {
                    ReturnValue::None
                })
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .set_return_consumed_capacity(
                    handle.stats().map(|_| ReturnConsumedCapacity::Indexes),
                )
                .customize()
                .interceptor(lost.watch())
                .send()
                .await;
            // Refused because a writer a phase apart (a per-key layout changing) moved the
            // item away between the settle and the update (it left a marked copy, or none:
            // it moved the item to this place's other count and deleted it here): settle
            // again, update there. No item at all is looked for once more only (an item that
            // does not exist costs one settle and update more, not five).
            let moved_away = matches!(
                result.as_ref().map_err(|e| e.as_service_error()),
                Err(Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c)))
                    if c.item.as_ref().map_or(
                        built.placement.has_previous() && attempts == 0,
                        |item| crate::access::write::moves::is_marked(schema, item),
                    )
            );
            attempts += 1;
            if !moved_away || attempts >= SETTLE_ATTEMPTS {
                break result;
            }
        };
        let consumed = result
            .as_ref()
            .ok()
            .and_then(|output| output.consumed_capacity.clone());
        let outcome = match result {
            Ok(output) => Ok(output.attributes),
            Err(e) => {
                use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
                let current = match e.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                        Some(c.item.clone())
                    }
                    _ => None,
                };
                let key = describe_key(schema, &built.key);
                let refusal = |error| lost.refusal("UpdateItem", schema.entity, &key, error);
                match current {
                    Some(current) => Err(refusal(match (schema.version, built.expected_version) {
                        (Some(attribute), Some(expected))
                            if stored_version(current.as_ref(), attribute) != Some(expected)
                                && current.is_some() =>
                        {
                            Error::VersionConflict {
                                entity: schema.entity,
                                key: key.clone(),
                                expected,
                                found: stored_version(current.as_ref(), attribute),
                            }
                        }
                        _ => Error::ConditionFailed {
                            entity: schema.entity,
                            key: key.clone(),
                            current,
                        },
                    })),
                    None => Err(Error::dynamo("UpdateItem", handle.table(), e)),
                }
            }
        };
        // Recorded with its key (the item it changes is not sent): the units come from
        // DynamoDB's answer, a throttle from its reasons.
        let answer = outcome.as_ref().map(|_| consumed.as_ref());
        let count = built.placement.layout().map(|l| l.n);
        record::write(handle.stats(), schema, count, &built.key, answer);
        outcome
    }

    /// The request's parts, checked: what `send` sends, and what a transaction's update
    /// action carries.
    ///
    /// `layouts`: the directory a per-key layout places the item by; the layout it was
    /// placed under comes back, for a transaction to check again before its commit.
    pub(crate) fn build_in(
        self,
        layouts: Option<&Snapshot>,
    ) -> Result<(BuiltUpdate, Option<LayoutCheck>), Error> {
        let schema = E::SCHEMA;
        let mut key = self.key?;
        let per_key = key
            .shard_input
            .take()
            .filter(|_| schema.pk.per_key.is_some())
            .map(|input| {
                let default = KeyState::steady(schema.pk.sharding.shard_count().unwrap_or(1));
                let state = layouts.map_or(default, |l| l.state(&input.logical));
                (input, state)
            });
        if let Some((input, state)) = &per_key {
            key.pk = input.key_under(&schema.pk, state.layout.n);
        }
        if self.actions.is_empty() {
            let entity = schema.entity;
            return Err(UpdateRefusal::NoOperation { entity }.into());
        }
        let mut names = Names::new();
        let mut values = Values::new();
        let mut sets: Vec<String> = Vec::new();
        let mut adds: Vec<String> = Vec::new();
        let mut removes: Vec<String> = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        // What the GSI keys are rebuilt from: the key fields, and what this update sets.
        let mut known = key.key_values;
        for (i, (attribute, action)) in self.actions.iter().enumerate() {
            if seen.contains(attribute) {
                let (entity, attribute) = (schema.entity, *attribute);
                return Err(UpdateRefusal::ChangedTwice { entity, attribute }.into());
            }
            seen.push(attribute);
            let name = format!("#u{i}");
            names.insert(name.clone(), (*attribute).to_owned());
            let mut value = |v: &Result<AttributeValue, String>| -> Result<String, Error> {
                let v = v
                    .clone()
                    .map_err(|reason| UpdateRefusal::ValueUnstorable { attribute, reason })?;
                let placeholder = format!(":u{i}");
                values.insert(placeholder.clone(), v);
                Ok(placeholder)
            };
            match action {
                Action::Set(v) => {
                    let p = value(v)?;
                    if let Some(v) = values.get(&p) {
                        known.insert(attribute, v.clone());
                    }
                    sets.push(format!("{name} = {p}"));
                }
                Action::SetIfAbsent(v) => {
                    let p = value(v)?;
                    sets.push(format!("{name} = if_not_exists({name}, {p})"));
                }
                Action::Append(v) => {
                    let p = value(v)?;
                    values.insert(":empty".to_owned(), AttributeValue::L(Vec::new()));
                    sets.push(format!(
                        "{name} = list_append(if_not_exists({name}, :empty), {p})"
                    ));
                }
                Action::Add(v) => {
                    let p = value(v)?;
                    adds.push(format!("{name} {p}"));
                }
                Action::Remove => removes.push(name),
            }
        }
        stamp_update(schema, &seen, &mut names, &mut values, &mut sets, &mut adds)?;
        // Rebuilt from plain SETs only: a value changed by ADD or REMOVE is not known before
        // DynamoDB applies it, and the generated code says so.
        let changed: Vec<&'static str> = self.actions.iter().map(|(a, _)| *a).collect();
        let gsi_keys = E::gsi_keys(&known, &changed)?;
        for (i, (attribute, value)) in gsi_keys.into_iter().enumerate() {
            let name = format!("#g{i}");
            let placeholder = format!(":g{i}");
            names.insert(name.clone(), attribute.to_owned());
            values.insert(placeholder.clone(), AttributeValue::S(value));
            sets.push(format!("{name} = {placeholder}"));
        }
        let mut expression = String::new();
        for (clause, parts) in [("SET", &sets), ("ADD", &adds), ("REMOVE", &removes)] {
            if !parts.is_empty() {
                expression.push_str(&format!("{clause} {} ", parts.join(", ")));
            }
        }
        let mut condition = existing_entity(schema, &key.pk, &mut names, &mut values);
        if let Some(expected) = expect_version(schema, self.expected_version, &mut values) {
            condition.push_str(" AND ");
            condition.push_str(expected);
        }
        if let Some(user) = &self.condition {
            let user = user.render(&mut names, &mut values)?;
            condition = format!("({condition}) AND ({user})");
        }
        // While a per-key layout changes, a copy marked `moved` at this place stands for an
        // item that lives at the other one: the update must not change it (see `apply`).
        if per_key
            .as_ref()
            .is_some_and(|(_, state)| state.layout.previous.is_some())
        {
            names.insert("#mv".to_owned(), schema.move_attribute().to_owned());
            values.insert(
                ":moved".to_owned(),
                AttributeValue::S(crate::keys::schema::MOVE_MOVED.to_owned()),
            );
            condition = format!("({condition}) AND (attribute_not_exists(#mv) OR #mv <> :moved)");
        }
        let (placement, layout_check) = match per_key {
            Some((input, state)) => (
                Placement::per_key(schema, &input, state, key.sk),
                Some(LayoutCheck::new(schema, input.logical, state)),
            ),
            None => (
                Placement::of_key(schema, key.pk, key.previous, key.sk),
                None,
            ),
        };
        let item_key = placement.current_key()?;
        let built = BuiltUpdate {
            placement,
            expected_version: self.expected_version,
            key: item_key,
            expression: expression.trim_end().to_owned(),
            condition,
            names,
            values,
        };
        Ok((built, layout_check))
    }
}

/// An update ready to send: the key, the update and condition expressions, and their
/// placeholders.
pub(crate) struct BuiltUpdate {
    /// Where the item lives (its previous place settled before the update is sent).
    pub placement: Placement,
    pub expected_version: Option<u64>,
    pub key: Item,
    pub expression: String,
    pub condition: String,
    pub names: Names,
    pub values: Values,
}

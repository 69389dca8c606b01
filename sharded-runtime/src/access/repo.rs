//! The typed repository: puts, point lookups, deletes, batches and queries of one entity.

use std::marker::PhantomData;
use std::sync::Arc;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnConsumedCapacity,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use aws_sdk_dynamodb::Client;

use crate::access::batch::{self, RetryPolicy};
use crate::access::clock_values::now_value;
use crate::access::condition::{Condition, Names, Values};
use crate::access::entity::{describe_key, entity_of, same_item, Item, ShardedEntity};
use crate::access::migrate::{CopyOutcome, Migration};
use crate::access::query::Query;
use crate::access::scan::Scan;
use crate::access::update::stored_version;
use crate::capacity::stats::{record, HotKeyStats};
use crate::capacity::units::{check_item_size, Consistency};
use crate::error::{Error, ItemKeyDisplay, KeyError};
use crate::keys::schema::ENTITY_ATTRIBUTE;
use crate::keys::schema::{EntitySchema, PreviousLayout};
use crate::keys::shards::{Partitions, ShardKeys};

/// Default bound on concurrent shard requests of one query: all shards at once up to 32,
/// which covers the usual 10 to 20 shards in one round trip and keeps 200 shards to
/// 7 rounds without opening 200 connections.
pub(crate) const DEFAULT_CONCURRENCY: usize = 32;

/// A typed repository of entity `E` in one table.
///
/// Build it from a `sharded::aws_sdk_dynamodb::Client` (the SDK version `Repo` is built on)
/// made by the standard AWS config chain (`aws_config::load_defaults`), so the same code runs
/// on DynamoDB, DynamoDB Local (`AWS_ENDPOINT_URL`) or any compatible endpoint.
///
/// ```no_run
/// # use sharded::{Repo, ShardedEntity};
/// # async fn demo<Score: ShardedEntity>(score: Score, config: sharded::aws_sdk_dynamodb::config::Config) -> Result<(), sharded::Error> {
/// // `config` from the standard chain: aws_config::load_defaults(BehaviorVersion::latest()).await
/// let repo: Repo<Score> = Repo::new(sharded::aws_sdk_dynamodb::Client::from_conf(config), "leaderboard");
/// repo.put(&score).await?;
/// # Ok(()) }
/// ```
pub struct Repo<E> {
    // One allocation shared by every clone, so a `Query` can own its repository handle (no
    // borrowed lifetime in users' signatures) for the price of a reference count.
    shared: Arc<Shared>,
    _entity: PhantomData<fn() -> E>,
}

#[derive(Clone)]
struct Shared {
    client: Client,
    table: String,
    concurrency: usize,
    retry: RetryPolicy,
    stats: Option<Arc<HotKeyStats>>,
}

impl<E> Clone for Repo<E> {
    fn clone(&self) -> Self {
        Repo {
            shared: Arc::clone(&self.shared),
            _entity: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for Repo<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("table", &self.shared.table)
            .field("concurrency", &self.shared.concurrency)
            .finish_non_exhaustive()
    }
}

/// What a repository handle is, whatever it reads: also the handle of a collection query.
impl<E> Repo<E> {
    /// The DynamoDB client.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.shared.table
    }

    /// The concurrency bound of queries.
    pub fn concurrency(&self) -> usize {
        self.shared.concurrency
    }

    /// The hot-key statistics this repository records into, if any.
    pub fn stats(&self) -> Option<&Arc<HotKeyStats>> {
        self.shared.stats.as_ref()
    }

    /// The same handle, typed for what a query reads (a collection of entities).
    pub(crate) fn retype<F>(self) -> Repo<F> {
        Repo {
            shared: self.shared,
            _entity: PhantomData,
        }
    }
}

impl<E: ShardedEntity> Repo<E> {
    /// A repository of `E` in `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Repo {
            shared: Arc::new(Shared {
                client,
                table: table.into(),
                concurrency: DEFAULT_CONCURRENCY,
                retry: RetryPolicy::default(),
                stats: None,
            }),
            _entity: PhantomData,
        }
    }

    /// A repository in the entity's `#[sharded(table = "...")]` table; an error naming the
    /// fix when the entity declares none.
    pub fn in_default_table(client: Client) -> Result<Self, Error> {
        let table = E::SCHEMA.table.ok_or(Error::NoDefaultTable {
            entity: E::SCHEMA.entity,
        })?;
        Ok(Repo::new(client, table))
    }

    /// Bounds the number of concurrent shard requests of one query (at least 1).
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        Arc::make_mut(&mut self.shared).concurrency = concurrency.max(1);
        self
    }

    /// The retry budget for unprocessed batch items.
    pub fn with_batch_retry(mut self, retry: RetryPolicy) -> Self {
        Arc::make_mut(&mut self.shared).retry = retry;
        self
    }

    /// Records consumed capacity and throttles per physical key into `stats` (the hot-key
    /// report). Requests then ask DynamoDB for `ReturnConsumedCapacity`; without stats
    /// nothing is recorded and nothing extra is asked.
    pub fn with_stats(mut self, stats: Arc<HotKeyStats>) -> Self {
        Arc::make_mut(&mut self.shared).stats = Some(stats);
        self
    }

    /// The same table and client, typed for another entity of the single-table design.
    pub fn for_entity<F: ShardedEntity>(&self) -> Repo<F> {
        Repo {
            shared: Arc::clone(&self.shared),
            _entity: PhantomData,
        }
    }

    /// Creates the table this entity needs (keys and GSIs, on-demand billing).
    ///
    /// An entity with a `#[sharded(ttl)]` field also gets DynamoDB's time to live enabled on
    /// that attribute ([`enable_ttl`](Self::enable_ttl)).
    pub async fn create_table(&self) -> Result<(), Error> {
        E::table_definition()
            .create_table(&self.shared.client, &self.shared.table)
            .send()
            .await
            .map_err(|e| Error::dynamo("CreateTable", &self.shared.table, e))?;
        self.enable_ttl().await
    }

    /// Enables DynamoDB's time to live on the entity's `#[sharded(ttl)]` attribute (nothing
    /// to do without one): DynamoDB then deletes items whose expiry has passed, lazily,
    /// typically within days. Until then they are still stored: queries hide them unless
    /// asked not to ([`Query::include_expired`]).
    pub async fn enable_ttl(&self) -> Result<(), Error> {
        let Some(attribute) = E::SCHEMA.ttl else {
            return Ok(());
        };
        let specification = aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(attribute)
            .build()
            .map_err(|e| Error::InvalidQuery(format!("time to live on `{attribute}`: {e}")))?;
        self.shared
            .client
            .update_time_to_live()
            .table_name(&self.shared.table)
            .time_to_live_specification(specification)
            .send()
            .await
            .map_err(|e| Error::dynamo("UpdateTimeToLive", &self.shared.table, e))?;
        Ok(())
    }

    fn checked_item(&self, entity: &E) -> Result<Item, Error> {
        let item = entity.to_item()?;
        check_item_size::<E>(&item)?;
        Ok(item)
    }

    /// Writes `entity` only if `condition` holds for the stored item (a typed condition on
    /// the entity's fields), with the guards of [`put`](Self::put) (another entity's item is
    /// never replaced; a versioned entity replaces only the version read). A condition
    /// that fails is [`Error::ConditionFailed`] with the stored item, and nothing is written.
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
        self.move_before_conditional_write(entity).await?;
        let mut item = self.checked_item(entity)?;
        let read_version = stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        let (mut names, mut values) = (Names::new(), Values::new());
        let guard = put_guard(E::SCHEMA, read_version, &mut names, &mut values);
        let user = condition.erase().render(&mut names, &mut values)?;
        let expression = format!("({guard}) AND ({user})");
        let result = self
            .shared
            .client
            .put_item()
            .table_name(&self.shared.table)
            .set_item(Some(item))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(refusal) => {
                    Err(self.refused("PutItem", key, refusal.item, read_version))
                }
                other => Err(Error::dynamo("PutItem", &self.shared.table, other)),
            },
        }
    }

    /// Deletes the item `entity` identifies only if it exists, is of this entity, and
    /// `condition` holds for it; otherwise [`Error::ConditionFailed`] with the stored item
    /// (or [`Error::KeyTakenByOtherEntity`]), and nothing is deleted.
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
        self.move_before_conditional_write(entity).await?;
        let keys = entity.item_keys()?;
        // The item is at its current place now (copied there if it was not): the copy at its
        // previous place is a stale duplicate, removed first, so that the item cannot come
        // back from there once the current one is deleted.
        if let Some(previous) = entity.previous_pk()?.filter(|p| *p != keys.pk) {
            self.delete_previous(previous, keys.sk.clone()).await?;
        }
        let key = self.key(keys.pk, keys.sk)?;
        self.send_delete(key, DeleteGuard::Condition(condition))
            .await
    }

    /// One guarded `DeleteItem`: of no item or one of this entity (`delete`), also of an
    /// untagged legacy item (the previous place during a legacy transition), or, with a
    /// condition, of an existing item of this entity for which it holds (`delete_if`).
    async fn send_delete(&self, key: Item, guard: DeleteGuard<E>) -> Result<(), Error> {
        let shown = describe_key(E::SCHEMA, &key);
        let (mut names, mut values) = (Names::new(), Values::new());
        let conditional = matches!(guard, DeleteGuard::Condition(_));
        let expression = match guard {
            DeleteGuard::Entity => entity_guard(E::SCHEMA, &mut names, &mut values).to_owned(),
            DeleteGuard::EntityOrUntagged => {
                previous_place_guard(E::SCHEMA, &mut names, &mut values)
            }
            DeleteGuard::Condition(condition) => {
                names.insert("#et".to_owned(), ENTITY_ATTRIBUTE.to_owned());
                values.insert(
                    ":et".to_owned(),
                    AttributeValue::S(E::SCHEMA.entity.to_owned()),
                );
                let user = condition.erase().render(&mut names, &mut values)?;
                format!("#et = :et AND ({user})")
            }
        };
        let result = self
            .shared
            .client
            .delete_item()
            .table_name(&self.shared.table)
            .set_key(Some(key))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.into_service_error() {
                // Without a condition only another entity's item can refuse the delete (also
                // when the endpoint does not return it).
                DeleteItemError::ConditionalCheckFailedException(refusal) if !conditional => {
                    Err(Error::KeyTakenByOtherEntity {
                        operation: "DeleteItem",
                        entity: E::SCHEMA.entity,
                        other: refusal.item.as_ref().and_then(entity_of).map(str::to_owned),
                        key: shown,
                    })
                }
                DeleteItemError::ConditionalCheckFailedException(refusal) => {
                    Err(self.refused("DeleteItem", shown, refusal.item, None))
                }
                other => Err(Error::dynamo("DeleteItem", &self.shared.table, other)),
            },
        }
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
        match current.as_ref().map(entity_of) {
            Some(other) if other != Some(own) => Error::KeyTakenByOtherEntity {
                operation,
                entity: own,
                other: other.map(str::to_owned),
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
    /// condition costs what an unconditional one does. Refused before sending: items over 400 KB ([`Error::ItemTooLarge`]), keys over
    /// DynamoDB's size limits ([`KeyError::KeyTooLong`]).
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, score: Score) -> Result<(), Error> {
    /// repo.put(&score).await?; // a second put of the same key replaces it
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, entity: &E) -> Result<(), Error> {
        self.send_put(entity, PutMode::Replace).await
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
    /// checked too, in the same `TransactWriteItems`: an item not yet migrated is not created
    /// a second time. With `shard = "random"` the item's shard is its own key's hash, so the
    /// check covers every shard it can be on: uniqueness is per logical item, not per shard.
    pub async fn put_new(&self, entity: &E) -> Result<(), Error> {
        let keys = entity.item_keys()?;
        if let Some(previous) = entity.previous_pk()?.filter(|p| *p != keys.pk) {
            return self.put_new_in_transition(entity, previous, keys.sk).await;
        }
        self.send_put(entity, PutMode::New).await
    }

    /// `put_new` during a transition: one transaction that checks the previous place is empty
    /// and writes the item at its current place only if that is empty too.
    async fn put_new_in_transition(
        &self,
        entity: &E,
        previous: String,
        sk: Option<String>,
    ) -> Result<(), Error> {
        let mut item = self.checked_item(entity)?;
        stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        let previous_key = self.key(previous, sk)?;
        let build = |e: aws_sdk_dynamodb::error::BuildError| {
            Error::InvalidUpdate(format!("could not build the put_new transaction: {e}"))
        };
        let check = ConditionCheck::builder()
            .table_name(&self.shared.table)
            .set_key(Some(previous_key))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", E::SCHEMA.pk.attribute)
            .build()
            .map_err(build)?;
        let put = Put::builder()
            .table_name(&self.shared.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", E::SCHEMA.pk.attribute)
            .build()
            .map_err(build)?;
        let result = self
            .shared
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().condition_check(check).build())
            .transact_items(TransactWriteItem::builder().put(put).build())
            // A retried commit whose first answer was lost is not applied twice.
            .client_request_token(crate::access::transaction::random_token())
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled)
                    if canceled
                        .cancellation_reasons()
                        .iter()
                        .any(|r| r.code() == Some("ConditionalCheckFailed")) =>
                {
                    Err(Error::AlreadyExists {
                        entity: E::SCHEMA.entity,
                        key,
                    })
                }
                other => Err(Error::dynamo(
                    "TransactWriteItems",
                    &self.shared.table,
                    other,
                )),
            },
        }
    }

    /// During a layout transition, moves an item still at its previous place to its current
    /// one before a write whose condition reads the stored item (`put_if`, `delete_if`, a
    /// versioned `put`): the condition then sees the item, not an empty place.
    async fn move_before_conditional_write(&self, entity: &E) -> Result<(), Error> {
        let keys = entity.item_keys()?;
        match entity.previous_pk()?.filter(|p| *p != keys.pk) {
            Some(previous) => self.migrate_key(previous, keys.sk).await,
            None => Ok(()),
        }
    }

    /// One conditional `PutItem` (see [`PutMode`]); records the write (or its throttle) when
    /// stats are on.
    async fn send_put(&self, entity: &E, mode: PutMode) -> Result<(), Error> {
        if mode == PutMode::Replace && E::SCHEMA.version.is_some() {
            self.move_before_conditional_write(entity).await?;
        }
        let mut item = self.checked_item(entity)?;
        // The version read (the struct's), before this write bumps it.
        let read_version = stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        // Kept to compare with the item a refusal returns (`put_new`) or to record.
        let kept = (mode == PutMode::New || self.shared.stats.is_some()).then(|| item.clone());
        let request = self
            .shared
            .client
            .put_item()
            .table_name(&self.shared.table)
            .set_item(Some(item))
            .set_return_consumed_capacity(self.capacity_request())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let request = match mode {
            // Optimistic locking too: replace only the version read (a new item only from 0).
            PutMode::Replace => {
                let (mut names, mut values) = (Names::new(), Values::new());
                let guard = put_guard(E::SCHEMA, read_version, &mut names, &mut values);
                request
                    .condition_expression(guard)
                    .set_expression_attribute_names(Some(names))
                    .set_expression_attribute_values(Some(values))
            }
            PutMode::New => request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", E::SCHEMA.pk.attribute),
        };
        let result = match request.send().await {
            Ok(output) => Ok(output.consumed_capacity),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(refusal) => {
                    let found = refusal.item.as_ref();
                    let own = E::SCHEMA.entity;
                    match (mode, found) {
                        // Our own earlier attempt, applied but unanswered (see `put_new`).
                        (PutMode::New, Some(found))
                            if kept.as_ref().is_some_and(|item| same_item(found, item)) =>
                        {
                            Ok(None)
                        }
                        (PutMode::New, Some(found)) if entity_of(found) == Some(own) => {
                            Err(Error::AlreadyExists { entity: own, key })
                        }
                        // No item came back (an endpoint that ignores
                        // `ReturnValuesOnConditionCheckFailure`): the key is taken and nothing
                        // can be compared, so even our own earlier attempt is AlreadyExists.
                        (PutMode::New, None) => Err(Error::AlreadyExists { entity: own, key }),
                        // Versioned: the item is ours but at another version, or gone.
                        (PutMode::Replace, found)
                            if read_version.is_some()
                                && found.is_none_or(|f| entity_of(f) == Some(own)) =>
                        {
                            Err(Error::VersionConflict {
                                entity: own,
                                key,
                                expected: read_version.unwrap_or(0),
                                found: E::SCHEMA.version.and_then(|v| stored_version(found, v)),
                            })
                        }
                        (_, found) => Err(Error::KeyTakenByOtherEntity {
                            operation: "PutItem",
                            entity: own,
                            other: found.and_then(entity_of).map(str::to_owned),
                            key,
                        }),
                    }
                }
                other => Err(Error::dynamo("PutItem", &self.shared.table, other)),
            },
        };
        if let (Some(item), Some(_)) = (&kept, &self.shared.stats) {
            let answer = result.as_ref().map(Option::as_ref);
            record::write(self.stats(), E::SCHEMA, item, answer);
        }
        result.map(drop)
    }

    fn capacity_request(&self) -> Option<ReturnConsumedCapacity> {
        self.shared
            .stats
            .as_ref()
            .map(|_| ReturnConsumedCapacity::Indexes)
    }

    /// The key attributes of a point operation: refuses empty keys and keys over DynamoDB's
    /// size limits before anything is sent.
    fn key(&self, pk: String, sk: Option<String>) -> Result<Item, Error> {
        let schema = E::SCHEMA;
        if pk.is_empty() {
            return Err(Error::EmptyKeyAttribute {
                attribute: schema.pk.attribute.to_owned(),
            });
        }
        schema.pk.check_size(schema.entity, &pk)?;
        let mut key = Item::from([(schema.pk.attribute.to_owned(), AttributeValue::S(pk))]);
        match (schema.sk, sk) {
            (Some(attr), Some(sk)) if !sk.is_empty() => {
                attr.check_size(schema.entity, &sk)?;
                key.insert(attr.attribute.to_owned(), AttributeValue::S(sk));
            }
            (Some(attr), _) => {
                return Err(Error::EmptyKeyAttribute {
                    attribute: attr.attribute.to_owned(),
                })
            }
            (None, _) => {}
        }
        Ok(key)
    }

    /// One `GetItem` by physical key. The generated `Entity::get(&repo, ...)` builds the key
    /// (for a hash-sharded key, on the right shard) and calls this.
    pub(crate) async fn get_by_key(
        &self,
        pk: String,
        sk: Option<String>,
    ) -> Result<Option<E>, Error> {
        let key = self.key(pk.clone(), sk)?;
        let result = self
            .shared
            .client
            .get_item()
            .table_name(&self.shared.table)
            .set_key(Some(key))
            .set_return_consumed_capacity(
                self.shared
                    .stats
                    .as_ref()
                    .map(|_| ReturnConsumedCapacity::Total),
            )
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.shared.table, e));
        let answer = result.as_ref().map(|o| o.consumed_capacity.as_ref());
        let shards = E::SCHEMA.pk.sharding.shard_count();
        record::read(
            self.stats(),
            None,
            &pk,
            shards,
            Consistency::Eventual,
            answer,
        );
        result?.item.map(E::from_item).transpose()
    }

    /// Reads the item with sort key `sk` on every shard of a logical key, in one
    /// `BatchGetItem` per 100 shards: how a randomly sharded item is found, since its shard
    /// is not known. Returns every shard's copy, in shard order.
    pub(crate) async fn get_from_all_shards(
        &self,
        shards: ShardKeys,
        sk: Option<String>,
    ) -> Result<Vec<E>, Error> {
        let keys: Vec<Item> = shards
            .map(|pk| self.key(pk, sk.clone()))
            .collect::<Result<_, _>>()?;
        let order: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                k.get(E::SCHEMA.pk.attribute)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
            })
            .collect();
        let mut items = batch::get(
            &self.shared.client,
            &self.shared.table,
            keys,
            &self.shared.retry,
            self.shared.concurrency,
        )
        .await?;
        let position = |item: &Item| {
            item.get(E::SCHEMA.pk.attribute)
                .and_then(|v| v.as_s().ok())
                .and_then(|pk| order.iter().position(|o| o == pk))
        };
        items.sort_by_key(|item| position(item));
        items.into_iter().map(E::from_item).collect()
    }

    /// A point read through the layout: the item at `pk`, or, when there is none and a
    /// transition is declared, at `previous`: a not-yet-migrated item is found where it is.
    pub(crate) async fn get_in_layout(
        &self,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Result<Option<E>, Error> {
        if let Some(found) = self.get_by_key(pk.clone(), sk.clone()).await? {
            return Ok(Some(found));
        }
        match previous.filter(|p| *p != pk) {
            Some(previous) => self.get_previous(previous, sk).await,
            None => Ok(None),
        }
    }

    /// One `GetItem` at an item's previous place, adopting an untagged legacy item.
    async fn get_previous(&self, pk: String, sk: Option<String>) -> Result<Option<E>, Error> {
        let key = self.key(pk, sk)?;
        let found = self
            .shared
            .client
            .get_item()
            .table_name(&self.shared.table)
            .set_key(Some(key))
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.shared.table, e))?
            .item;
        found
            .map(|mut item| {
                crate::access::migrate::adopt_untagged(E::SCHEMA, &mut item);
                E::from_item(item)
            })
            .transpose()
    }

    /// Copies the item at `previous` (an item's place under the previous layout) to its
    /// current place, if there is one there and its current place holds none: what an update
    /// does first during a transition, so that it changes the item where it now belongs. The
    /// old copy stays, stale and hidden from queries (its current place holds the item), until
    /// the migration deletes it: deleted at once, a query that read the current place just
    /// before the copy and the old place just after would miss the item. An item changed by
    /// someone else while it is copied is read again (a few times).
    pub(crate) async fn migrate_key(
        &self,
        previous: String,
        sk: Option<String>,
    ) -> Result<(), Error> {
        const ATTEMPTS: usize = 5;
        for _ in 0..ATTEMPTS {
            let key = self.key(previous.clone(), sk.clone())?;
            let found = self
                .shared
                .client
                .get_item()
                .table_name(&self.shared.table)
                .set_key(Some(key))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| Error::dynamo("GetItem", &self.shared.table, e))?
                .item;
            let Some(item) = found else {
                return Ok(());
            };
            let step = crate::access::migrate::copy_item(self, &item).await?;
            match step.outcome {
                CopyOutcome::Changed => {}
                // Nothing written: wait a little before reading it again.
                CopyOutcome::Throttled => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await
                }
                CopyOutcome::Copied | CopyOutcome::Taken | CopyOutcome::InPlace => return Ok(()),
            }
        }
        Err(Error::InvalidUpdate(format!(
            "the {} item at {previous} kept changing while it was copied to its current place \
             ({ATTEMPTS} attempts); retry the update",
            E::SCHEMA.entity
        )))
    }

    /// A delete through the layout: at `previous` first (during a transition), then at `pk`.
    /// In that order, a migration that copies the old item concurrently either ran before the
    /// first delete (and its copy is removed by the second) or finds the old copy gone and
    /// copies nothing: the item never comes back.
    pub(crate) async fn delete_in_layout(
        &self,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Result<(), Error> {
        if let Some(previous) = previous.filter(|p| *p != pk) {
            self.delete_previous(previous, sk.clone()).await?;
        }
        self.delete_by_key(pk, sk).await
    }

    /// Deletes the copy at an item's previous place: one of this entity, or an untagged
    /// legacy item.
    async fn delete_previous(&self, pk: String, sk: Option<String>) -> Result<(), Error> {
        let key = self.key(pk, sk)?;
        let legacy = matches!(E::SCHEMA.pk.previous, Some(PreviousLayout::Legacy { .. }));
        let guard = if legacy {
            DeleteGuard::EntityOrUntagged
        } else {
            DeleteGuard::Entity
        };
        self.send_delete(key, guard).await
    }

    /// Deletes the item with this physical key (no error if there is none). Guarded like
    /// `put`: an item of another entity at the key is left alone and reported as
    /// [`Error::KeyTakenByOtherEntity`].
    pub(crate) async fn delete_by_key(&self, pk: String, sk: Option<String>) -> Result<(), Error> {
        let key = self.key(pk, sk)?;
        self.send_delete(key, DeleteGuard::Entity).await
    }

    /// A scatter-gather query over every shard of a logical key, on the base table
    /// (`index = None`) or GSI `gsiN` (`Some(N)`). The generated `query*` functions call this.
    pub(crate) fn query_shards(
        &self,
        index: Option<u8>,
        shards: Result<ShardKeys, KeyError>,
    ) -> Query<E> {
        Query::new(
            self.clone(),
            index,
            shards.map(|keys| Partitions::new(keys, None)),
        )
    }

    /// A scatter-gather query of the base table over every partition of a logical key's
    /// layout: with a transition declared, the previous layout's too.
    pub(crate) fn query_partitions(&self, partitions: Result<Partitions, KeyError>) -> Query<E> {
        Query::new(self.clone(), None, partitions)
    }

    /// A parallel scan of every item of `E` in the table (other entities are filtered out):
    /// for exports, backfills and analytics jobs, not for serving requests.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let scores: Vec<Score> = repo.scan().segments(8).read_units_per_second(100.0).collect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// See [`Scan`] for the settings (segments, concurrency, consistency, rate limit, page
    /// size) and how items come out.
    pub fn scan(&self) -> Scan<E> {
        Scan::new(self.clone())
    }

    /// A migration of every item of the previous layout (`previous_n` or `legacy` on
    /// `#[pk]`) to its current place: a parallel scan of the table (or one logical key's
    /// partitions, with [`Migration::only`]), paced by a write-unit budget, resumable from a
    /// checkpoint, safe under concurrent writers. See [`Migration`].
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let report = repo.migrate().write_units_per_second(300.0).run().await?;
    /// println!("{}", report.progress);
    /// # Ok(()) }
    /// ```
    pub fn migrate(&self) -> Migration<E> {
        Migration::new(self.clone())
    }

    /// How many items of the previous layout are left in the table (not at their current
    /// place): a scan that moves nothing ([`Migration::remaining`] over the whole table). At
    /// 0, after a migration, the transition's declaration (`previous_n`, `legacy`) can be
    /// removed; an entity that declares none is [`Error::InvalidQuery`].
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<E: ShardedEntity>(repo: &Repo<E>) -> Result<(), Error> {
    /// if repo.migration_remaining().await? == 0 {
    ///     println!("every item is at its current place: remove `previous_n`");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn migration_remaining(&self) -> Result<u64, Error> {
        self.migrate().remaining().await
    }

    /// Writes many entities with `BatchWriteItem` (25 per request, concurrently), retrying
    /// unprocessed items with exponential backoff and full jitter. If the retry budget runs
    /// out, [`Error::BatchIncomplete`] carries every item not written.
    ///
    /// When a key is given more than once, only its last item is written: the last write per
    /// key (partition and sort key) wins, every time, and no request is spent on writes
    /// that would be overwritten.
    ///
    /// The unguarded fast path: `BatchWriteItem` takes no conditions, so unlike
    /// [`put`](Self::put) a batch put overwrites whatever item has the key, another entity's
    /// included. Keep templates of different entities apart
    /// ([`TableDefinition::merge`](crate::schema::TableDefinition::merge) checks them), or use
    /// `put` where the table holds entities whose keys can meet. Items over 400 KB and keys
    /// over DynamoDB's size limits are refused before anything is sent.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, scores: Vec<Score>) -> Result<(), Error> {
    /// repo.batch_put(&scores).await?;
    /// # Ok(()) }
    /// ```
    pub async fn batch_put<'a>(
        &self,
        entities: impl IntoIterator<Item = &'a E>,
    ) -> Result<(), Error>
    where
        E: 'a,
    {
        let writes = entities
            .into_iter()
            .map(|e| self.checked_item(e).map(batch::Write::Put))
            .collect::<Result<_, _>>()?;
        self.run_batch(writes).await
    }

    /// Deletes many entities with `BatchWriteItem`, as [`batch_put`](Self::batch_put): one
    /// delete per key, unguarded (an item of another entity at one of the keys is deleted
    /// too).
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, scores: Vec<Score>) -> Result<(), Error> {
    /// repo.batch_delete(&scores).await?;
    /// # Ok(()) }
    /// ```
    pub async fn batch_delete<'a>(
        &self,
        entities: impl IntoIterator<Item = &'a E>,
    ) -> Result<(), Error>
    where
        E: 'a,
    {
        let mut writes = Vec::new();
        for e in entities {
            let keys = e.item_keys()?;
            // During a transition the previous place's copy goes too.
            if let Some(previous) = e.previous_pk()?.filter(|p| *p != keys.pk) {
                writes.push(batch::Write::Delete(self.key(previous, keys.sk.clone())?));
            }
            writes.push(batch::Write::Delete(self.key(keys.pk, keys.sk)?));
        }
        self.run_batch(writes).await
    }

    /// Runs batch writes, the last per key, then records what they wrote (units from item
    /// size: `BatchWriteItem` reports capacity per table, not per key) and, as throttled, what
    /// they returned unprocessed.
    async fn run_batch(&self, writes: Vec<batch::Write>) -> Result<(), Error> {
        let writes = batch::last_write_per_key(writes, key_of::<E>);
        let recorded: Option<Vec<Item>> = self.shared.stats.as_ref().map(|_| {
            writes
                .iter()
                .filter_map(batch::Write::put_item)
                .cloned()
                .collect()
        });
        let result = batch::write(
            &self.shared.client,
            &self.shared.table,
            writes,
            &self.shared.retry,
            self.shared.concurrency,
        )
        .await;
        let items = recorded.as_deref().unwrap_or_default();
        record::batch_writes(self.stats(), E::SCHEMA, items, &result);
        result
    }

    /// Reads many items by physical key with `BatchGetItem` (100 per request), retrying
    /// unprocessed keys; keys with no item are simply absent from the result.
    ///
    /// When some keys cannot be read within the retry budget (or a request fails for good),
    /// [`Error::BatchIncomplete`] carries the keys not read (`unprocessed`) and the items that
    /// were (`retrieved`, read with `E::from_item`): a read that fails part-way loses nothing
    /// it got. Empty keys and keys over DynamoDB's size limits are refused before sending.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, keys: Vec<(String, Option<String>)>) -> Result<(), Error> {
    /// let found: Vec<Score> = match repo.batch_get(keys).await {
    ///     Ok(found) => found,
    ///     Err(Error::BatchIncomplete { retrieved, .. }) => {
    ///         retrieved.into_iter().map(Score::from_item).collect::<Result<_, _>>()?
    ///     }
    ///     Err(e) => return Err(e),
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn batch_get(
        &self,
        keys: impl IntoIterator<Item = (String, Option<String>)>,
    ) -> Result<Vec<E>, Error> {
        let keys: Vec<Item> = keys
            .into_iter()
            .map(|(pk, sk)| self.key(pk, sk))
            .collect::<Result<_, _>>()?;
        let items = batch::get(
            &self.shared.client,
            &self.shared.table,
            keys,
            &self.shared.retry,
            self.shared.concurrency,
        )
        .await?;
        items.into_iter().map(E::from_item).collect()
    }
}

/// What a guarded delete (`send_delete`) may remove.
enum DeleteGuard<E> {
    /// No item, or one of this entity (`delete`).
    Entity,
    /// Also an item without an entity attribute: an item's previous place during a legacy
    /// transition, written before the table adopted `sharded`.
    EntityOrUntagged,
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

/// The entity guard of `put` and `delete`: the key holds no item, or an item of this entity.
/// `#pk` is the partition key attribute, `#et` the entity attribute, `:et` the entity name.
const SAME_ENTITY_OR_NONE: &str = "attribute_not_exists(#pk) OR #et = :et";

/// The condition of a guarded put (`Repo::put`, `put_if`, a transaction's `put`): the key
/// holds no item or one of this entity and, for a versioned entity, the version read (a new
/// item only from version 0). Registers `#pk`, `#et`, `:et` and, versioned, `#ver`, `:ver`.
pub(crate) fn put_guard(
    schema: &EntitySchema,
    read_version: Option<u64>,
    names: &mut Names,
    values: &mut Values,
) -> &'static str {
    entity_guard(schema, names, values);
    match schema.version.zip(read_version) {
        None => SAME_ENTITY_OR_NONE,
        Some((attribute, read)) => {
            names.insert("#ver".to_owned(), attribute.to_owned());
            values.insert(":ver".to_owned(), AttributeValue::N(read.to_string()));
            if read == 0 {
                "attribute_not_exists(#pk) OR (#et = :et AND #ver = :ver)"
            } else {
                "attribute_exists(#pk) AND #et = :et AND #ver = :ver"
            }
        }
    }
}

/// The guard of a delete at an item's previous place during a transition: no item, one of this
/// entity, or an untagged legacy item. Registers the placeholders of [`entity_guard`].
pub(crate) fn previous_place_guard(
    schema: &EntitySchema,
    names: &mut Names,
    values: &mut Values,
) -> String {
    let guard = entity_guard(schema, names, values);
    format!("({guard}) OR attribute_not_exists(#et)")
}

/// `#pk`, `#et` and `:et`: the placeholders of [`SAME_ENTITY_OR_NONE`], which is also the
/// guard of a delete (no item, or one of this entity).
pub(crate) fn entity_guard(
    schema: &EntitySchema,
    names: &mut Names,
    values: &mut Values,
) -> &'static str {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    names.insert("#et".to_owned(), ENTITY_ATTRIBUTE.to_owned());
    values.insert(
        ":et".to_owned(),
        AttributeValue::S(schema.entity.to_owned()),
    );
    SAME_ENTITY_OR_NONE
}

/// What a put maintains in the item: the version (bumped from the struct's, which is
/// returned as the version read), `updated_at` (now) and `created_at` (now, unless the struct
/// carries one).
pub(crate) fn stamp_write(schema: &EntitySchema, item: &mut Item) -> Result<Option<u64>, Error> {
    let mut read = None;
    if let Some(attribute) = schema.version {
        let version = stored_version(Some(item), attribute).ok_or_else(|| {
            Error::InvalidUpdate(format!(
                "{}.{attribute} is the version and must be a whole number from 0",
                schema.entity
            ))
        })?;
        let next = version.checked_add(1).ok_or_else(|| {
            Error::InvalidUpdate(format!(
                "{}.{attribute} cannot grow past u64",
                schema.entity
            ))
        })?;
        item.insert(attribute.to_owned(), AttributeValue::N(next.to_string()));
        read = Some(version);
    }
    if let Some(updated) = schema.updated_at {
        item.insert(updated.attribute.to_owned(), now_value(updated.format));
    }
    if let Some(created) = schema.created_at {
        let unset = matches!(
            item.get(created.attribute),
            None | Some(AttributeValue::Null(_))
        );
        if unset {
            item.insert(created.attribute.to_owned(), now_value(created.format));
        }
    }
    Ok(read)
}

/// The primary key attributes of an item of `E`, for de-duplicating batch requests.
fn key_of<E: ShardedEntity>(item: &Item) -> (Option<String>, Option<String>) {
    let text = |attr: &str| item.get(attr).and_then(|v| v.as_s().ok()).cloned();
    (
        text(E::SCHEMA.pk.attribute),
        E::SCHEMA.sk.and_then(|sk| text(sk.attribute)),
    )
}

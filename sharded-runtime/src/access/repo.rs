//! The typed repository: puts, point lookups, deletes, batches and queries of one entity.

use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    ConsumedCapacity, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};
use aws_sdk_dynamodb::Client;

use crate::access::batch::{self, RetryPolicy};
use crate::access::condition::{values_of, Condition, Names, Values};
use crate::access::entity::{describe_key, same_item, Item, ShardedEntity};
use crate::access::idempotent;
use crate::access::migrate::Migration;
use crate::access::placement::Placement;
use crate::access::query::Query;
use crate::access::read_cache::{ReadCache, Written};
use crate::access::recognize::{is_ours, tagged_as};
use crate::access::scan::Scan;
use crate::access::table::CreateTable;
use crate::access::transaction::{TransactGet, Transaction};
use crate::access::write_rules::{
    entity_guard, no_item, own_entity, physical_item, put_guard, stamp_write, stored_version,
    with_condition,
};
use crate::capacity::stats::{record, split_shard, HotKeyStats};
use crate::capacity::units::Consistency;
use crate::capacity::Clock;
use crate::error::{Error, ItemKeyDisplay, KeyError};
use crate::keys::attribute::KeyValue;
use crate::keys::shards::{Partitions, ShardKeys};

/// The concurrency of what a repository runs besides a query's fan-out (a range query's
/// bucket window, batches, scans), unless `with_concurrency` sets it.
pub(crate) const DEFAULT_CONCURRENCY: usize = 32;

/// The most shard requests a scatter-gather keeps in flight by default: every partition of
/// the query at once (a layout transition reads up to twice `MAX_SHARDS`). Each request is on
/// its own partition, so DynamoDB serves them side by side, and the SDK's HTTP client opens
/// connections as they are needed (its pool has no fixed size): a bound below the partition
/// count only adds round trips (1,000 shards at 32 at a time took 32 of them).
pub const MAX_FAN_OUT: usize = 2 * crate::keys::schema::MAX_SHARDS as usize;

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
    /// Set by `with_concurrency`; `None`: the defaults (see `fan_out` and `concurrency`).
    concurrency: Option<usize>,
    retry: RetryPolicy,
    stats: Option<Arc<HotKeyStats>>,
    /// Hot reads: the single-flight map and answer cache every clone shares.
    read_cache: Arc<ReadCache>,
    /// Join identical eventually consistent queries in flight.
    single_flight: bool,
    /// The age of a cached answer eventually consistent queries accept, if any.
    max_staleness: Option<Duration>,
}

impl<E> Repo<E> {
    pub(crate) fn single_flight(&self) -> bool {
        self.shared.single_flight
    }

    pub(crate) fn max_staleness(&self) -> Option<Duration> {
        self.shared.max_staleness
    }

    pub(crate) fn read_cache(&self) -> &Arc<ReadCache> {
        &self.shared.read_cache
    }
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

    /// The concurrency `with_concurrency` set, or 32 by default:
    /// the bound of a range query's bucket window, of batches and of scans. A scatter-gather's
    /// own fan-out is [`fan_out`](Self::fan_out).
    pub fn concurrency(&self) -> usize {
        self.shared.concurrency.unwrap_or(DEFAULT_CONCURRENCY)
    }

    /// The most shard requests a scatter-gather over `partitions` partitions keeps in flight:
    /// the value `with_concurrency` set, or by default all of them at once (at most
    /// [`MAX_FAN_OUT`]), so that a top-k over 100 or 1,000 shards costs about one round trip
    /// (with a concurrency of 32 it took `n / 32`).
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # struct Score { game_id: String, player_id: String }
    /// # fn demo(client: sharded::aws_sdk_dynamodb::Client) {
    /// let repo: Repo<Score> = Repo::new(client, "leaderboard");
    /// assert_eq!(repo.fan_out(1_000), 1_000);
    /// assert_eq!(repo.clone().with_concurrency(16).fan_out(1_000), 16);
    /// # }
    /// ```
    pub fn fan_out(&self, partitions: usize) -> usize {
        match self.shared.concurrency {
            Some(set) => set,
            None => partitions.clamp(1, MAX_FAN_OUT),
        }
    }

    /// The hot-key statistics this repository records into, if any.
    pub fn stats(&self) -> Option<&Arc<HotKeyStats>> {
        self.shared.stats.as_ref()
    }

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
        Transaction::new(self.client(), self.table())
            .with_read_cache(self.read_cache().clone())
            .with_stats(self.shared.stats.clone())
    }

    /// An empty transactional read on this repository's table: up to 100 items of any
    /// entities and shards in one snapshot. See [`TransactGet`].
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
    /// let (alice, bob) = (Wallet::key("alice")?, Wallet::key("bob")?);
    /// let mut answer = repo.transact_get().get(&alice).get(&bob).send().await?;
    /// let total = answer.take(&alice)?.map_or(0, |w| w.coins) + answer.take(&bob)?.map_or(0, |w| w.coins);
    /// # Ok(()) }
    /// ```
    pub fn transact_get(&self) -> TransactGet {
        TransactGet::new(self.client(), self.table())
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
    ///
    /// The repository sends through a copy of `client` with `sharded`'s request telemetry
    /// added (one SDK interceptor: a span and a duration sample per request, see
    /// [`telemetry`](crate::telemetry)); its HTTP client, retry settings and your own
    /// interceptors are kept.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Repo {
            shared: Arc::new(Shared {
                // Every request the repository sends goes through this client: its spans and
                // duration samples come from one interceptor (see `telemetry`).
                client: crate::telemetry::instrument(client),
                table: table.into(),
                concurrency: None,
                retry: RetryPolicy::default(),
                stats: None,
                read_cache: Arc::new(ReadCache::default()),
                single_flight: true,
                max_staleness: None,
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

    /// Bounds the number of concurrent shard requests of one query (at least 1), and the
    /// concurrency of range-query windows, batches and scans. Without it, a scatter-gather
    /// sends every shard's request at once ([`fan_out`](Self::fan_out)), and the rest runs 32
    /// at a time.
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        Arc::make_mut(&mut self.shared).concurrency = Some(concurrency.max(1));
        self
    }

    /// The retry budget for unprocessed batch items, and for the transactions this repository
    /// sends during a layout transition (a write and its previous place's delete), which are
    /// sent again, identical and under one token, after a conflict or a lost answer.
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

    /// Whether identical eventually consistent queries (`collect`) in flight at the same time
    /// share one scatter-gather (default `true`; see [`Query::collect`]). Strongly consistent
    /// queries never do, unless they ask for a staleness bound.
    pub fn with_single_flight(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.shared).single_flight = on;
        self
    }

    /// Lets eventually consistent queries' `collect` answer from an answer of the same query
    /// at most `bound` old (off by default; strongly consistent queries are never answered
    /// from it unless they ask with [`Query::max_staleness`], which also overrides this per
    /// query). See [`Query::max_staleness`] for what it promises and what it cannot.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # fn demo(client: sharded::aws_sdk_dynamodb::Client) {
    /// let repo: Repo<Score> = Repo::new(client, "leaderboard")
    ///     .with_max_staleness(std::time::Duration::from_millis(250));
    /// # }
    /// ```
    pub fn with_max_staleness(mut self, bound: Duration) -> Self {
        Arc::make_mut(&mut self.shared).max_staleness = Some(bound);
        self
    }

    /// Bounds the answer cache to `items` items in all (default
    /// [`DEFAULT_CACHE_ITEMS`](crate::query::DEFAULT_CACHE_ITEMS); the oldest answers go first; an
    /// answer larger than the whole bound is not cached), and reads its ages on `clock` (a
    /// [`ManualClock`](crate::capacity::ManualClock) in tests). Starts an empty cache, shared
    /// by the clones made from here on.
    pub fn with_read_cache(mut self, items: usize, clock: Arc<dyn Clock>) -> Self {
        Arc::make_mut(&mut self.shared).read_cache = Arc::new(ReadCache::new(clock, items));
        self
    }

    /// The one hook every write of the repository holds while it runs: when it ends, however
    /// it ends (a failed or abandoned write may have been applied), the read cache learns that
    /// the item's partitions (current and previous place) were written.
    pub(crate) fn writing(&self, placement: &Placement) -> Written<'_> {
        self.writing_to(std::iter::once(placement.pk()).chain(placement.previous()))
    }

    /// [`writing`](Self::writing) for writes to these partitions (a batch's).
    fn writing_to<'k>(&self, partition_keys: impl IntoIterator<Item = &'k str>) -> Written<'_> {
        self.shared.read_cache.writing(partition_keys)
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

    /// Writes `entity` only if `condition` holds for the stored item (a typed condition on
    /// the entity's fields), with the guards of [`put`](Self::put) (another entity's item is
    /// never replaced; a versioned entity replaces only the version read). A condition
    /// that fails is [`Error::ConditionFailed`] with the stored item, and nothing is written.
    ///
    /// During a layout transition (`previous_n`, `legacy`) the item is settled first (an item
    /// still at its previous place is moved to its current one, so the condition sees it:
    /// one consistent `GetItem`, plus a two-action transaction when it was there), then the
    /// put and the guarded delete of the previous place go as one `TransactWriteItems`
    /// (twice the write units of a `PutItem`): no copy is left at the previous place.
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
        let placement = Placement::of(entity)?;
        self.item_operation(
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
        let _written = self.writing(placement);
        self.settle(placement).await?;
        let mut item = physical_item(entity)?;
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
        if placement.has_previous() {
            let put = Put::builder()
                .table_name(&self.shared.table)
                .set_item(Some(item))
                .condition_expression(expression)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(values_of(values))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build()
                .map_err(build_error)?;
            let put = TransactWriteItem::builder().put(put).build();
            return match self.with_previous_delete(placement, put).await? {
                Sent::Done => Ok(()),
                Sent::Refused(found) => Err(self.refused("PutItem", key, found, read_version)),
            };
        }
        let kept = self.shared.stats.as_ref().map(|_| item.clone());
        let result = self
            .shared
            .client
            .put_item()
            .table_name(&self.shared.table)
            .set_item(Some(item))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .set_return_consumed_capacity(self.capacity_request())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let result = match result {
            Ok(output) => Ok(output.consumed_capacity),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(refusal) => {
                    Err(self.refused("PutItem", key, refusal.item, read_version))
                }
                other => Err(Error::dynamo("PutItem", &self.shared.table, other)),
            },
        };
        if let Some(item) = &kept {
            record::write(
                self.stats(),
                E::SCHEMA,
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
        let placement = Placement::of(entity)?;
        self.item_operation("delete_if", &placement, async {
            self.settle(&placement).await?;
            self.send_delete(&placement, DeleteGuard::Condition(condition))
                .await
        })
        .await
    }

    /// Runs one item operation (`operation`: `put`, `get`, `delete`, `update`, ...) of the
    /// item at `placement` within its span, [`ITEM_SPAN`](crate::telemetry::ITEM_SPAN): its
    /// requests (a settle, a transaction during a transition) are the span's children.
    pub(crate) fn item_operation<'f, T>(
        &self,
        operation: &'static str,
        placement: &Placement,
        run: impl std::future::Future<Output = Result<T, Error>> + 'f,
    ) -> impl std::future::Future<Output = Result<T, Error>> + 'f {
        use crate::telemetry::*;
        let key = &E::SCHEMA.pk;
        let shards = key.sharding.shard_count();
        let split = shards.and_then(|n| split_shard(placement.pk(), n, &key.suffix));
        let (logical_key, shard) = match split {
            Some((logical, shard)) => (logical, Some(shard)),
            None => (placement.pk(), None),
        };
        let span = tracing::info_span!(
            "sharded.item",
            { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
            { TABLE_NAMES } = self.table(),
            { OPERATION } = operation,
            { ENTITY } = E::SCHEMA.entity,
            { LOGICAL_KEY } = logical_key,
            { SHARD } = shard,
            { SHARD_COUNT } = shards,
            { TRANSITION } = placement.has_previous(),
        );
        within(span, shard, run)
    }

    /// Settles the item during a transition (see `Placement::settle`).
    async fn settle(&self, placement: &Placement) -> Result<(), Error> {
        placement
            .settle::<E>(&self.shared.client, &self.shared.table)
            .await
    }

    /// Settles every item of a batch whose old copy may sit at a previous shard of unknown
    /// placement, at most the repository's concurrency at once; the first error stops them.
    async fn settle_all(&self, placements: &[Placement]) -> Result<(), Error> {
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
    async fn send_delete(&self, placement: &Placement, guard: DeleteGuard<E>) -> Result<(), Error> {
        let _written = self.writing(placement);
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
        if placement.has_previous() {
            let delete = Delete::builder()
                .table_name(&self.shared.table)
                .set_key(Some(key))
                .condition_expression(expression)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(values_of(values))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build()
                .map_err(build_error)?;
            let delete = TransactWriteItem::builder().delete(delete).build();
            return match self.with_previous_delete(placement, delete).await? {
                Sent::Done => Ok(()),
                Sent::Refused(found) => Err(refused(found)),
            };
        }
        let kept = self.shared.stats.as_ref().map(|_| key.clone());
        let result = self
            .shared
            .client
            .delete_item()
            .table_name(&self.shared.table)
            .set_key(Some(key))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .set_return_consumed_capacity(self.capacity_request())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let result = match result {
            Ok(output) => Ok(output.consumed_capacity),
            Err(e) => match e.into_service_error() {
                DeleteItemError::ConditionalCheckFailedException(refusal) => {
                    Err(refused(refusal.item))
                }
                other => Err(Error::dynamo("DeleteItem", &self.shared.table, other)),
            },
        };
        // Recorded with its key: the units come from DynamoDB's answer.
        if let Some(key) = &kept {
            record::write(
                self.stats(),
                E::SCHEMA,
                key,
                result.as_ref().map(Option::as_ref),
            );
        }
        result.map(drop)
    }

    /// Sends `write` (at the item's current place) and the guarded delete of its previous
    /// place as one `TransactWriteItems` (with a fresh idempotency token): how a write leaves
    /// no copy behind during a transition. A refusal of `write` comes back with the item
    /// DynamoDB returned; a refusal of the delete (another entity's item at the previous
    /// place) is [`Error::KeyTakenByOtherEntity`].
    async fn with_previous_delete(
        &self,
        placement: &Placement,
        write: TransactWriteItem,
    ) -> Result<Sent, Error> {
        let Some((previous_key, delete)) = placement.previous_delete(&self.shared.table)? else {
            return Err(Error::InvalidTransaction(
                "a write with the previous place's delete needs a transition".to_owned(),
            ));
        };
        let delete = TransactWriteItem::builder().delete(delete).build();
        let result = self.transact(vec![write, delete]).await;
        match result {
            Ok(_) => Ok(Sent::Done),
            Err((token, sends, e)) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled) => {
                    let reasons = canceled.cancellation_reasons();
                    let failed = |i: usize| {
                        reasons
                            .get(i)
                            .filter(|r| r.code() == Some("ConditionalCheckFailed"))
                    };
                    if let Some(reason) = failed(0) {
                        return Ok(Sent::Refused(reason.item().cloned()));
                    }
                    if let Some(reason) = failed(1) {
                        return Err(Error::KeyTakenByOtherEntity {
                            operation: "TransactWriteItems",
                            entity: E::SCHEMA.entity,
                            other: reason.item().and_then(|f| tagged_as(E::SCHEMA, f)),
                            key: describe_key(E::SCHEMA, &previous_key),
                        });
                    }
                    Err(idempotent::sent_error(
                        &self.shared.table,
                        &token,
                        &sends,
                        TransactWriteItemsError::TransactionCanceledException(canceled),
                    ))
                }
                other => Err(idempotent::sent_error(
                    &self.shared.table,
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
        let result = idempotent::send(&self.shared.client, &request, &self.shared.retry, &sends)
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
    /// ([`KeyError::KeyTooLong`]).
    ///
    /// During a layout transition (`previous_n`, `legacy`), the put and the guarded delete of
    /// the item's previous place go as one `TransactWriteItems` (twice the write units of a
    /// `PutItem`), so no stale copy stays behind. A versioned entity is settled first (moved
    /// to its current place if it is still at its previous one: one consistent `GetItem`,
    /// plus a transaction when it was there), so its version is checked against the stored one.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, score: Score) -> Result<(), Error> {
    /// repo.put(&score).await?; // a second put of the same key replaces it
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, entity: &E) -> Result<(), Error> {
        let placement = Placement::of(entity)?;
        self.item_operation(
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
        let placement = Placement::of(entity)?;
        self.item_operation("put_new", &placement, async {
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
        let _written = self.writing(placement);
        let mut item = physical_item(entity)?;
        stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        let Some((_, check)) = placement.previous_vacancy(&self.shared.table)? else {
            return self.send_put(entity, placement, PutMode::New).await;
        };
        let mut names = Names::new();
        let condition = no_item(E::SCHEMA, &mut names);
        // Kept to compare with an item a refusal returns, at either place.
        let ours = item.clone();
        let put = Put::builder()
            .table_name(&self.shared.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
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
                    &self.shared.table,
                    &token,
                    &sends,
                    other,
                )),
            },
        }
    }

    /// One conditional put (see [`PutMode`]): a `PutItem`, or during a transition a `put`
    /// with the previous place's delete in one transaction; records the write (or its
    /// throttle) when stats are on.
    async fn send_put(
        &self,
        entity: &E,
        placement: &Placement,
        mode: PutMode,
    ) -> Result<(), Error> {
        let _written = self.writing(placement);
        // A condition on the stored item (the version) needs it at its current place; so does
        // any write while an old copy may sit at a previous shard of unknown placement.
        if (mode == PutMode::Replace && E::SCHEMA.version.is_some()) || placement.previous_unknown()
        {
            self.settle(placement).await?;
        }
        let mut item = physical_item(entity)?;
        // The version read (the struct's), before this write bumps it.
        let read_version = stamp_write(E::SCHEMA, &mut item)?;
        let key = describe_key(E::SCHEMA, &item);
        // Kept to compare with the item a refusal returns (`put_new`) or to record.
        let kept = (mode == PutMode::New || self.shared.stats.is_some()).then(|| item.clone());
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
        let values = values_of(values);
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
        let result = if placement.has_previous() && mode == PutMode::Replace {
            let put = Put::builder()
                .table_name(&self.shared.table)
                .set_item(Some(item))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(values)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build()
                .map_err(build_error)?;
            let put = TransactWriteItem::builder().put(put).build();
            match self.with_previous_delete(placement, put).await {
                Ok(Sent::Done) => Ok(None),
                Ok(Sent::Refused(found)) => refusal(found.as_ref()),
                Err(e) => Err(e),
            }
        } else {
            let request = self
                .shared
                .client
                .put_item()
                .table_name(&self.shared.table)
                .set_item(Some(item))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(values)
                .set_return_consumed_capacity(self.capacity_request())
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            match request.send().await {
                Ok(output) => Ok(output.consumed_capacity),
                Err(e) => match e.into_service_error() {
                    PutItemError::ConditionalCheckFailedException(refusal_error) => {
                        refusal(refusal_error.item.as_ref())
                    }
                    other => Err(Error::dynamo("PutItem", &self.shared.table, other)),
                },
            }
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

    /// One `GetItem` by physical key. The generated `Entity::get(&repo, ...)` builds the key
    /// (for a hash-sharded key, on the right shard) and calls this.
    pub(crate) async fn get_by_key(
        &self,
        pk: String,
        sk: Option<String>,
    ) -> Result<Option<E>, Error> {
        let placement = Placement::fixed(E::SCHEMA, pk, sk);
        self.item_operation("get", &placement, self.get_at(&placement))
            .await
    }

    /// One `GetItem` at the current place of `placement`, recorded when stats are on.
    async fn get_at(&self, placement: &Placement) -> Result<Option<E>, Error> {
        let key = placement.current_key()?;
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
        let shards = record::spelled(&E::SCHEMA.pk);
        record::read(
            self.stats(),
            None,
            placement.pk(),
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
            .map(|pk| Placement::fixed(E::SCHEMA, pk, sk.clone()).current_key())
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
            self.concurrency(),
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

    /// A point read through the layout: the item at its current place, or, when there is none
    /// and a transition is declared, at its previous place: a not-yet-migrated item is found
    /// where it is (the current copy wins).
    pub(crate) async fn get_in_layout(
        &self,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Result<Option<E>, Error> {
        let placement = Placement::of_key(E::SCHEMA, pk, previous, sk);
        self.item_operation("get", &placement, self.get_through_layout(&placement))
            .await
    }

    /// [`get_in_layout`](Self::get_in_layout) within its span.
    async fn get_through_layout(&self, placement: &Placement) -> Result<Option<E>, Error> {
        if let Some(found) = self.get_at(placement).await? {
            return Ok(Some(found));
        }
        if placement.previous_unknown() {
            // Any previous shard may hold it: one `BatchGetItem` of them all, the first
            // shard's copy first.
            let found = batch::get(
                &self.shared.client,
                &self.shared.table,
                placement.candidate_keys()?,
                &self.shared.retry,
                self.concurrency(),
            )
            .await?;
            let shard_of = |item: &Item| {
                let pk = item.get(E::SCHEMA.pk.attribute).and_then(|v| v.as_s().ok());
                placement.candidates().iter().position(|c| Some(c) == pk)
            };
            let first = found.into_iter().min_by_key(shard_of);
            return first.map(E::from_item).transpose();
        }
        let Some(key) = placement.previous_key()? else {
            return Ok(None);
        };
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
        found.map(E::from_item).transpose()
    }

    /// A delete through the layout: during a transition, the delete at the current place and
    /// the guarded delete of the previous place in one `TransactWriteItems` (twice the write
    /// units), so the item cannot come back from its previous place (nor be copied back by a
    /// concurrent migration, whose copy checks the old copy in its own transaction).
    pub(crate) async fn delete_in_layout(
        &self,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Result<(), Error> {
        let placement = Placement::of_key(E::SCHEMA, pk, previous, sk);
        self.item_operation(
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
        self.item_operation(
            "delete",
            &placement,
            self.send_delete(&placement, DeleteGuard::Entity),
        )
        .await
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

    /// A scatter-gather query of index `index`, keyed by the item's own attributes, over the
    /// shards of the partition whose attributes have these values.
    pub(crate) fn query_attributes(
        &self,
        index: u8,
        equalities: Vec<(&'static str, KeyValue)>,
    ) -> Query<E> {
        // An index that is not keyed by attributes (generated code never asks) is refused by
        // the query's plan, which names the function to call.
        let gsi = E::SCHEMA.gsi(index);
        let shard_attribute = gsi
            .and_then(|g| g.attributes)
            .map_or("", |k| k.shard_attribute);
        let n = gsi.and_then(|g| g.pk.sharding.shard_count()).unwrap_or(1);
        let empty = equalities.iter().find(|(_, v)| v.text().is_empty());
        let partitions = match empty {
            Some((field, _)) => Err(KeyError::EmptyValue {
                entity: E::SCHEMA.entity,
                attribute: gsi.map_or("", |g| g.index_name),
                field,
            }),
            None => Ok(Partitions::attributes(equalities, shard_attribute, n)),
        };
        Query::new(self.clone(), Some(index), partitions)
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
    /// size) and how items come out. A scan returns what is stored: items past their
    /// `#[sharded(ttl)]` expiry that DynamoDB has not deleted yet (a query hides them), and,
    /// during a layout transition, both copies of an item the migration is moving.
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
    pub async fn migration_remaining(&self) -> Result<crate::migrate::Remaining, Error> {
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
    /// A versioned entity (`#[sharded(version)]`) is refused before anything is sent
    /// ([`Error::VersionedBatch`]): a batch can neither check the version read nor bump it, so
    /// it would undo a racing writer's change. Write those with `put`, or in a
    /// [`Transaction`](crate::transaction::Transaction).
    ///
    /// During a layout transition (`previous_n`, `legacy`), the puts are written first, then
    /// the copies at their items' previous places are deleted (a second round of
    /// `BatchWriteItem`, for the puts that were written): no copy stays behind. Items whose
    /// previous delete stays unprocessed are in the error.
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
        if E::SCHEMA.version.is_some() {
            return Err(Error::VersionedBatch {
                operation: "batch_put",
                entity: E::SCHEMA.entity,
            });
        }
        let mut puts = Vec::new();
        let mut previous = Vec::new();
        let mut unknown = Vec::new();
        for entity in entities {
            let placement = Placement::of(entity)?;
            puts.push(batch::Write::Put(physical_item(entity)?));
            if let Some(key) = placement.previous_key()? {
                previous.push((placement.current_key()?, key));
            }
            if placement.previous_unknown() {
                unknown.push(placement);
            }
        }
        self.settle_all(&unknown).await?;
        let written = self.run_batch(puts).await;
        let unwritten: HashSet<_> = match &written {
            Ok(()) => HashSet::new(),
            Err(Error::BatchIncomplete { unprocessed, .. }) => {
                unprocessed.iter().map(key_of::<E>).collect()
            }
            // Failed outright: what was written is not known; the previous copies stay.
            Err(_) => return written,
        };
        let deletes: Vec<batch::Write> = previous
            .into_iter()
            .filter(|(current, _)| !unwritten.contains(&key_of::<E>(current)))
            .map(|(_, previous)| batch::Write::Delete(previous))
            .collect();
        if deletes.is_empty() {
            return written;
        }
        let deleted = self.run_batch(deletes).await;
        incomplete(written, Vec::new(), deleted)
    }

    /// Deletes many entities with `BatchWriteItem`, as [`batch_put`](Self::batch_put): one
    /// delete per key, unguarded (an item of another entity at one of the keys is deleted
    /// too).
    ///
    /// During a layout transition (`previous_n`, `legacy`), the copies at the items' previous
    /// places are deleted first, in a round of their own, and only then the current ones: an
    /// item whose previous delete stays unprocessed keeps its current copy too (its current
    /// delete is not sent), so a concurrent copy from the previous place (the migration, an
    /// update) cannot bring it back. [`Error::BatchIncomplete`] then lists both of its keys.
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
        let mut items = Vec::new();
        let mut unknown = Vec::new();
        for entity in entities {
            let placement = Placement::of(entity)?;
            items.push((placement.current_key()?, placement.previous_key()?));
            if placement.previous_unknown() {
                unknown.push(placement);
            }
        }
        // Old copies at previous shards of unknown placement are moved to their current
        // place first, so deleting it deletes them.
        self.settle_all(&unknown).await?;
        let previous: Vec<batch::Write> = items
            .iter()
            .filter_map(|(_, previous)| previous.clone().map(batch::Write::Delete))
            .collect();
        let first = if previous.is_empty() {
            Ok(())
        } else {
            self.run_batch(previous).await
        };
        let held: HashSet<_> = match &first {
            Ok(()) => HashSet::new(),
            Err(Error::BatchIncomplete { unprocessed, .. }) => {
                unprocessed.iter().map(key_of::<E>).collect()
            }
            // Failed outright: no current copy is deleted.
            Err(_) => return first,
        };
        let (skipped, current): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, previous)| {
            previous
                .as_ref()
                .is_some_and(|p| held.contains(&key_of::<E>(p)))
        });
        let skipped: Vec<Item> = skipped.into_iter().map(|(current, _)| current).collect();
        let current: Vec<batch::Write> = current
            .into_iter()
            .map(|(current, _)| batch::Write::Delete(current))
            .collect();
        let second = if current.is_empty() {
            Ok(())
        } else {
            self.run_batch(current).await
        };
        incomplete(first, skipped, second)
    }

    /// Runs batch writes, the last per key, then records what they wrote (units from the
    /// size of the item or key sent: `BatchWriteItem` reports capacity per table, not per
    /// key) and, as throttled, what they returned unprocessed.
    async fn run_batch(&self, writes: Vec<batch::Write>) -> Result<(), Error> {
        let writes = batch::last_write_per_key(writes, key_of::<E>);
        let _written = self.writing_to(
            writes
                .iter()
                .filter_map(|w| w.item().get(E::SCHEMA.pk.attribute))
                .filter_map(|v| v.as_s().ok())
                .map(String::as_str),
        );
        // A put is recorded with its item, a delete with its key (its item unknown: at
        // least the one unit every write costs).
        let recorded: Option<Vec<Item>> = self
            .shared
            .stats
            .as_ref()
            .map(|_| writes.iter().map(|w| w.item().clone()).collect());
        let result = batch::write(
            &self.shared.client,
            &self.shared.table,
            writes,
            &self.shared.retry,
            self.concurrency(),
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
    /// It reads exactly the physical keys given: during a layout transition, an item not yet
    /// migrated is at its previous place, which only `get` (or a key of both places) finds. An
    /// untagged item the legacy service wrote at a key given (during a `legacy` transition) is
    /// read as this entity when its keys parse as the legacy template's and the entity's, as
    /// `get` reads it.
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
            .map(|(pk, sk)| Placement::fixed(E::SCHEMA, pk, sk).current_key())
            .collect::<Result<_, _>>()?;
        let items = batch::get(
            &self.shared.client,
            &self.shared.table,
            keys,
            &self.shared.retry,
            self.concurrency(),
        )
        .await?;
        items.into_iter().map(E::from_item).collect()
    }
}

/// What a guarded delete (`send_delete`) may remove.
enum DeleteGuard<E> {
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

/// What a write sent with the previous place's delete came to.
enum Sent {
    Done,
    /// The write's own condition failed; the item DynamoDB returned, if any.
    Refused(Option<Item>),
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::InvalidTransaction(format!("a write could not be built: {e}"))
}

/// The outcome of a batch of two rounds: `first`'s, with `skipped` (writes of the second
/// round not sent because their first-round write stayed unprocessed) and `second`'s
/// unprocessed items added to one [`Error::BatchIncomplete`].
fn incomplete(
    first: Result<(), Error>,
    skipped: Vec<Item>,
    second: Result<(), Error>,
) -> Result<(), Error> {
    match (first, second) {
        (Ok(()), Ok(())) if skipped.is_empty() => Ok(()),
        (
            Err(Error::BatchIncomplete {
                operation,
                mut unprocessed,
                retrieved,
                attempts,
                source,
            }),
            second,
        ) => {
            unprocessed.extend(skipped);
            match second {
                Err(Error::BatchIncomplete {
                    unprocessed: more, ..
                }) => unprocessed.extend(more),
                Err(other) => return Err(other),
                Ok(()) => {}
            }
            Err(Error::BatchIncomplete {
                operation,
                unprocessed,
                retrieved,
                attempts,
                source,
            })
        }
        (
            Ok(()),
            Err(Error::BatchIncomplete {
                operation,
                mut unprocessed,
                retrieved,
                attempts,
                source,
            }),
        ) => {
            unprocessed.extend(skipped);
            Err(Error::BatchIncomplete {
                operation,
                unprocessed,
                retrieved,
                attempts,
                source,
            })
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(()), Ok(())) => Err(Error::BatchIncomplete {
            operation: "BatchWriteItem",
            unprocessed: skipped,
            retrieved: Vec::new(),
            attempts: 0,
            source: None,
        }),
    }
}

/// The primary key attributes of an item of `E`, for de-duplicating batch requests.
fn key_of<E: ShardedEntity>(item: &Item) -> (Option<String>, Option<String>) {
    let text = |attr: &str| item.get(attr).and_then(|v| v.as_s().ok()).cloned();
    (
        text(E::SCHEMA.pk.attribute),
        E::SCHEMA.sk.and_then(|sk| text(sk.attribute)),
    )
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

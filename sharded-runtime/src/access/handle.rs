//! The handle a repository and every builder it starts share: the client, the table, the
//! settings, the read cache and the hot-key statistics, behind one `Arc`.
//!
//! This is the AWS SDK's shape: a fluent builder holds its client's handle plus its own input,
//! so it owns what it needs (no borrowed lifetime in users' signatures) for the price of a
//! reference count. Builders (`Query`, `RangeQuery`, `Scan`, `Update`, `Transaction`) import
//! this module, not the repository; the repository imports them.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use aws_sdk_dynamodb::Client;

use crate::access::entity::ShardedEntity;
use crate::access::item_key::ItemKey;
use crate::access::layouts::{Directory, KeyState, Snapshot};
use crate::access::placement::Placement;
use crate::access::read::read_cache::{ReadCache, Written};
use crate::access::retry::RetryPolicy;
use crate::capacity::stats::{split_shard, HotKeyStats};
use crate::error::Error;
use crate::keys::schema::EntitySchema;

/// The concurrency of what a repository runs besides a query's fan-out (a range query's
/// bucket window, batches, scans), unless `with_concurrency` sets it.
pub(crate) const DEFAULT_CONCURRENCY: usize = 32;

/// The most shard requests a scatter-gather keeps in flight by default: every partition of
/// the query at once (a layout transition reads up to twice `MAX_SHARDS`). Each request is on
/// its own partition, so DynamoDB serves them side by side, and the SDK's HTTP client opens
/// connections as they are needed (its pool has no fixed size): a bound below the partition
/// count only adds round trips (1,000 shards at 32 at a time took 32 of them).
///
/// ```
/// assert!(sharded::query::MAX_FAN_OUT >= 1_000);
/// ```
pub const MAX_FAN_OUT: usize = 2 * crate::keys::schema::MAX_SHARDS as usize;

/// What a repository and its builders share. Set up by `Repo`'s `with_*` methods (copied on
/// write, so a clone made before a change keeps its own settings).
#[derive(Clone)]
pub(crate) struct Handle {
    pub(crate) client: Client,
    pub(crate) table: String,
    /// Set by `with_concurrency`; `None`: the defaults (see `fan_out` and `concurrency`).
    pub(crate) concurrency: Option<usize>,
    pub(crate) retry: RetryPolicy,
    pub(crate) stats: Option<Arc<HotKeyStats>>,
    /// Hot reads: the single-flight map and answer cache every clone shares.
    pub(crate) read_cache: Arc<ReadCache>,
    /// Join identical eventually consistent queries in flight.
    pub(crate) single_flight: bool,
    /// The age of a cached answer eventually consistent queries accept, if any.
    pub(crate) max_staleness: Option<Duration>,
    /// The layout directories of entities whose layout is decided per key, as read (shared
    /// by every clone).
    pub(crate) layouts: Arc<Directory>,
}

/// The layout a builder placed one item under before sending, by the layout directory as last
/// read: checked again when it sends ([`Handle::verify_layouts`]).
#[derive(Debug, Clone)]
pub(crate) struct LayoutCheck {
    schema: &'static EntitySchema,
    logical: String,
    state: KeyState,
}

impl LayoutCheck {
    /// The check that `logical` of `schema` is still under `layout`.
    pub(crate) fn new(schema: &'static EntitySchema, logical: String, state: KeyState) -> Self {
        LayoutCheck {
            schema,
            logical,
            state,
        }
    }

    fn cached(handle: &Handle, schema: &'static EntitySchema, logical: &str) -> LayoutCheck {
        let default = KeyState::steady(schema.pk.sharding.shard_count().unwrap_or(1));
        LayoutCheck {
            schema,
            logical: logical.to_owned(),
            state: handle
                .cached_layouts(schema)
                .map_or(default, |layouts| layouts.state(logical)),
        }
    }
}

impl Handle {
    /// The handle of `table`, sending through `client` as given (the repository adds its
    /// telemetry first), with the default settings and an empty read cache.
    pub(crate) fn new(client: Client, table: String) -> Self {
        Handle {
            client,
            table,
            concurrency: None,
            retry: RetryPolicy::default(),
            stats: None,
            read_cache: Arc::new(ReadCache::default()),
            single_flight: true,
            max_staleness: None,
            layouts: Arc::new(Directory::default()),
        }
    }

    /// `schema`'s layout directory, read at most a lease ago; `None` for an entity whose
    /// layout is the same for every key (nothing is read).
    pub(crate) async fn layouts_of(
        &self,
        schema: &'static EntitySchema,
    ) -> Result<Option<Arc<Snapshot>>, Error> {
        if schema.pk.per_key.is_none() {
            return Ok(None);
        }
        self.layouts
            .snapshot(&self.client, &self.table, schema)
            .await
            .map(Some)
    }

    /// Where `entity` lives: [`Placement::of`], under its key's layout from the directory
    /// when the entity's layout is decided per key. What every write of an entity asks.
    pub(crate) async fn place<E: ShardedEntity>(&self, entity: &E) -> Result<Placement, Error> {
        let input = entity.__shard_input()?;
        match (input, self.layouts_of(E::SCHEMA).await?) {
            (Some(input), Some(layouts)) => Ok(Placement::per_key(
                E::SCHEMA,
                &input,
                layouts.state(&input.logical),
                entity.item_keys()?.sk,
            )),
            _ => Placement::of(entity),
        }
    }

    /// `schema`'s layout directory as last read, whatever its age (`None`: not per key, or
    /// not read yet): what a builder that places items before it sends (a transaction) uses,
    /// with a [`LayoutCheck`] repeated when it sends.
    pub(crate) fn cached_layouts(&self, schema: &'static EntitySchema) -> Option<Arc<Snapshot>> {
        schema
            .pk
            .per_key
            .and_then(|_| self.layouts.cached(schema.entity))
    }

    /// [`place`](Self::place) by the directory as last read, and the check to repeat at send.
    pub(crate) fn place_cached<E: ShardedEntity>(
        &self,
        entity: &E,
    ) -> Result<(Placement, Option<LayoutCheck>), Error> {
        let Some(input) = entity
            .__shard_input()?
            .filter(|_| E::SCHEMA.pk.per_key.is_some())
        else {
            return Ok((Placement::of(entity)?, None));
        };
        let check = LayoutCheck::cached(self, E::SCHEMA, &input.logical);
        let placement = Placement::per_key(E::SCHEMA, &input, check.state, entity.item_keys()?.sk);
        Ok((placement, Some(check)))
    }

    /// [`place_key`](Self::place_key) by the directory as last read, and the check to repeat
    /// at send.
    pub(crate) fn place_key_cached<E: ShardedEntity>(
        &self,
        key: &ItemKey<E>,
    ) -> (Placement, Option<LayoutCheck>) {
        match key.shard_input().filter(|_| E::SCHEMA.pk.per_key.is_some()) {
            Some(input) => {
                let check = LayoutCheck::cached(self, E::SCHEMA, &input.logical);
                let sk = key.sort_key().map(str::to_owned);
                (
                    Placement::per_key(E::SCHEMA, input, check.state, sk),
                    Some(check),
                )
            }
            None => (key.placement(), None),
        }
    }

    /// Refuses a request whose items were placed under a layout that is not the directory's
    /// now ([`LayoutError::Changed`](crate::error::layout::LayoutError::Changed)).
    pub(crate) async fn verify_layouts(&self, checks: &[LayoutCheck]) -> Result<(), Error> {
        for check in checks {
            if let Some(layouts) = self.layouts_of(check.schema).await? {
                if layouts.state(&check.logical) != check.state {
                    return Err(crate::error::layout::LayoutError::Changed {
                        entity: check.schema.entity,
                        key: check.logical.clone(),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Where the item with `key` lives (see [`place`](Self::place)).
    pub(crate) async fn place_key<E: ShardedEntity>(
        &self,
        key: &ItemKey<E>,
    ) -> Result<Placement, Error> {
        match (key.shard_input(), self.layouts_of(E::SCHEMA).await?) {
            (Some(input), Some(layouts)) => Ok(Placement::per_key(
                E::SCHEMA,
                input,
                layouts.state(&input.logical),
                key.sort_key().map(str::to_owned),
            )),
            _ => Ok(key.placement()),
        }
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// The bound of a range query's bucket window, of batches and of scans.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency.unwrap_or(DEFAULT_CONCURRENCY)
    }

    /// The most shard requests a scatter-gather over `partitions` partitions keeps in flight.
    pub(crate) fn fan_out(&self, partitions: usize) -> usize {
        match self.concurrency {
            Some(set) => set,
            None => partitions.clamp(1, MAX_FAN_OUT),
        }
    }

    pub(crate) fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    pub(crate) fn stats(&self) -> Option<&Arc<HotKeyStats>> {
        self.stats.as_ref()
    }

    /// What a request asks DynamoDB for: consumed capacity only when statistics record it.
    pub(crate) fn capacity_request(&self) -> Option<ReturnConsumedCapacity> {
        self.stats.as_ref().map(|_| ReturnConsumedCapacity::Indexes)
    }

    pub(crate) fn single_flight(&self) -> bool {
        self.single_flight
    }

    pub(crate) fn max_staleness(&self) -> Option<Duration> {
        self.max_staleness
    }

    pub(crate) fn read_cache(&self) -> &Arc<ReadCache> {
        &self.read_cache
    }

    /// The one hook every write holds while it runs: when it ends, however it ends (a failed
    /// or abandoned write may have been applied), the read cache learns that the item's
    /// partitions (current and previous place) were written.
    pub(crate) fn writing(&self, placement: &Placement) -> Written<'_> {
        self.writing_to(std::iter::once(placement.pk()).chain(placement.previous()))
    }

    /// [`writing`](Self::writing) for writes to these partitions (a batch's).
    pub(crate) fn writing_to<'k>(
        &self,
        partition_keys: impl IntoIterator<Item = &'k str>,
    ) -> Written<'_> {
        self.read_cache.writing(partition_keys)
    }

    /// Runs one item operation (`operation`: `put`, `get`, `delete`, `update`, ...) of the
    /// item at `placement` within its span, [`ITEM_SPAN`](crate::telemetry::ITEM_SPAN): its
    /// requests (a settle, a transaction during a transition) are the span's children.
    pub(crate) fn item_operation<'f, E: ShardedEntity, T>(
        &self,
        operation: &'static str,
        placement: &Placement,
        run: impl std::future::Future<Output = Result<T, Error>> + 'f,
    ) -> impl std::future::Future<Output = Result<T, Error>> + 'f {
        use crate::telemetry::*;
        let key = &E::SCHEMA.pk;
        let shards = placement
            .layout()
            .map(|layout| layout.n)
            .or(key.sharding.shard_count());
        let split = key
            .shard_bound()
            .and_then(|n| split_shard(placement.pk(), n, &key.suffix));
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
}

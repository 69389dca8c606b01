//! The typed repository: puts, point lookups, deletes, batches and queries of one entity.
//!
//! This file holds the repository and its configuration; its operations are grouped by what
//! they do, each group an `impl` of its own: `admin` (creating the table, time to live),
//! `read` (point reads, the query and scan entry points, the migration), `write` (puts,
//! conditional puts and deletes, with the layout transition's settling) and `batches`.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;

use crate::access::entity::ShardedEntity;
use crate::access::placement::Placement;
use crate::access::read_cache::{ReadCache, Written};
use crate::access::retry::RetryPolicy;
use crate::access::transaction::{TransactGet, Transaction};
use crate::capacity::stats::HotKeyStats;
use crate::capacity::Clock;
use crate::error::Error;

mod admin;
mod batches;
mod read;
mod write;

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
}

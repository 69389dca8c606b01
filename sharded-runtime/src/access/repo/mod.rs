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
use crate::access::handle::Handle;
use crate::access::read::read_cache::ReadCache;
use crate::access::retry::RetryPolicy;
use crate::capacity::stats::HotKeyStats;
use crate::capacity::Clock;
use crate::error::Error;

mod admin;
mod batches;
mod read;
mod replace;
mod write;

pub use read::range_query;

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
    // The handle every clone and every builder shares (see `handle`): a `Query` owns its
    // handle, so no borrowed lifetime reaches users' signatures.
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> E>,
}

impl<E> Repo<E> {
    /// The handle this repository's builders share.
    pub(crate) fn handle(&self) -> &Arc<Handle> {
        &self.handle
    }
}

impl<E> Clone for Repo<E> {
    fn clone(&self) -> Self {
        Repo {
            handle: Arc::clone(&self.handle),
            _entity: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for Repo<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("table", &self.handle.table())
            .field("concurrency", &self.handle.concurrency)
            .finish_non_exhaustive()
    }
}

/// What a repository handle is, whatever it reads: also the handle of a collection query.
impl<E> Repo<E> {
    /// The DynamoDB client.
    pub fn client(&self) -> &Client {
        self.handle.client()
    }

    /// The table name.
    pub fn table(&self) -> &str {
        self.handle.table()
    }

    /// The concurrency `with_concurrency` set, or 32 by default:
    /// the bound of a range query's bucket window, of batches and of scans. A scatter-gather's
    /// own fan-out is [`fan_out`](Self::fan_out).
    pub fn concurrency(&self) -> usize {
        self.handle.concurrency()
    }

    /// The most shard requests a scatter-gather over `partitions` partitions keeps in flight:
    /// the value `with_concurrency` set, or by default all of them at once (at most
    /// [`MAX_FAN_OUT`](crate::query::MAX_FAN_OUT)), so that a top-k over 100 or 1,000 shards costs about one round trip
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
        self.handle.fan_out(partitions)
    }

    /// The hot-key statistics this repository records into, if any.
    pub fn stats(&self) -> Option<&Arc<HotKeyStats>> {
        self.handle.stats()
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
            // Every request the repository sends goes through this client: its spans and
            // duration samples come from one interceptor (see `telemetry`).
            handle: Arc::new(Handle::new(
                crate::telemetry::instrument(client),
                table.into(),
            )),
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
        Arc::make_mut(&mut self.handle).concurrency = Some(concurrency.max(1));
        self
    }

    /// The retry budget for unprocessed batch items, and for the transactions this repository
    /// sends during a layout transition (a write and its previous place's delete), which are
    /// sent again, identical and under one token, after a conflict or a lost answer.
    pub fn with_batch_retry(mut self, retry: RetryPolicy) -> Self {
        Arc::make_mut(&mut self.handle).retry = retry;
        self
    }

    /// Records consumed capacity and throttles per physical key into `stats` (the hot-key
    /// report). Requests then ask DynamoDB for `ReturnConsumedCapacity`; without stats
    /// nothing is recorded and nothing extra is asked.
    pub fn with_stats(mut self, stats: Arc<HotKeyStats>) -> Self {
        Arc::make_mut(&mut self.handle).stats = Some(stats);
        self
    }

    /// Whether identical eventually consistent queries (`collect`) in flight at the same time
    /// share one scatter-gather (default `true`; see [`Query::collect`](crate::Query::collect)). Strongly consistent
    /// queries never do, unless they ask for a staleness bound.
    pub fn with_single_flight(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.handle).single_flight = on;
        self
    }

    /// Lets eventually consistent queries' `collect` answer from an answer of the same query
    /// at most `bound` old (off by default; strongly consistent queries are never answered
    /// from it unless they ask with [`Query::max_staleness`](crate::Query::max_staleness), which also overrides this per
    /// query). See [`Query::max_staleness`](crate::Query::max_staleness) for what it promises and what it cannot.
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
        Arc::make_mut(&mut self.handle).max_staleness = Some(bound);
        self
    }

    /// Bounds the answer cache to `items` items in all (default
    /// [`DEFAULT_CACHE_ITEMS`](crate::query::DEFAULT_CACHE_ITEMS); the oldest answers go first; an
    /// answer larger than the whole bound is not cached), and reads its ages on `clock` (a
    /// [`ManualClock`](crate::capacity::ManualClock) in tests). Starts an empty cache, shared
    /// by the clones made from here on.
    pub fn with_read_cache(mut self, items: usize, clock: Arc<dyn Clock>) -> Self {
        Arc::make_mut(&mut self.handle).read_cache = Arc::new(ReadCache::new(clock, items));
        self
    }

    /// The per-key layouts of `E` (`max_n` on `#[pk]`): the keys the directory lists (see
    /// [`Layouts`](crate::layouts::Layouts)); with the operator's `ChangeLayout` in scope
    /// (`sharded::layouts::ChangeLayout`), the steps that widen or narrow one key online.
    pub fn layouts(&self) -> crate::access::layouts::Layouts<E> {
        crate::access::layouts::Layouts::new(Arc::clone(&self.handle))
    }

    /// How long this repository uses the layout directory it read, and how long a step of a
    /// change waits ([`LayoutTiming`](crate::layouts::LayoutTiming); 10 s and 10 s by
    /// default). Every process of a table must use the same timing, or longer leases than the
    /// steps wait for.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use sharded::{layouts::LayoutTiming, Repo, ShardedEntity};
    /// # fn demo<E: ShardedEntity>(repo: Repo<E>) -> Repo<E> {
    /// repo.with_layout_timing(LayoutTiming::new(Duration::from_secs(5), Duration::from_secs(5)))
    /// # }
    /// ```
    pub fn with_layout_timing(self, timing: crate::access::layouts::LayoutTiming) -> Self {
        self.with_layout_clocks(
            timing,
            Arc::new(crate::capacity::SystemClock::new()),
            Arc::new(crate::access::layouts::WallClock),
        )
    }

    /// [`with_layout_timing`](Self::with_layout_timing) with the clocks leases are measured
    /// and steps are stamped by: a test's [`ManualClock`](crate::capacity::ManualClock) for
    /// both simulates time across processes.
    pub fn with_layout_clocks(
        mut self,
        timing: crate::access::layouts::LayoutTiming,
        lease_clock: Arc<dyn Clock>,
        step_clock: Arc<dyn Clock>,
    ) -> Self {
        Arc::make_mut(&mut self.handle).layouts = Arc::new(crate::access::layouts::Directory::new(
            timing,
            lease_clock,
            step_clock,
        ));
        self
    }

    /// The same table and client, typed for another entity of the single-table design.
    pub fn for_entity<F: ShardedEntity>(&self) -> Repo<F> {
        Repo {
            handle: Arc::clone(&self.handle),
            _entity: PhantomData,
        }
    }
}

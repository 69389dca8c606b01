//! Reading less for hot queries: identical concurrent queries share one scatter-gather
//! (single flight), and, where the caller allows an answer of bounded age, repeated queries are
//! answered from a bounded cache.
//!
//! Why: sharding spreads writes, not top-K reads. Every scatter-gather asks every shard, and
//! the smallest Query costs half a read unit, so a hot top-100 read by many clients at once
//! keeps every shard over its read limit whatever `n` is. Answering identical concurrent
//! queries with one scatter-gather, and repeated ones from an answer a few hundred
//! milliseconds old, is what reduces the reads themselves (the reason DAX exists).
//!
//! The rules, in one place:
//! - **Which queries.** `collect()` of eventually consistent queries join an identical query in
//!   flight (same entity, index, logical key, sort condition, filter, projection, order,
//!   expiry mode, layout, `limit` and `page_size`: the query's description, which its cursors
//!   are bound to too). Strongly consistent queries never join nor read the cache unless the
//!   query itself asks for a staleness bound ([`Query::max_staleness`](crate::Query::max_staleness)).
//! - **Writes through the repository.** Every write a `Repo` (or a clone, a `for_entity`
//!   sibling, or a transaction from `Repo::transaction`) sends bumps the cache's write epoch when it completes: a query
//!   that started before it is not joined, and its answer not cached, by queries that start
//!   after. Cached base-table answers that read the written item's partition (its current or
//!   previous place) are dropped, and cached GSI answers are all dropped (an index key is not
//!   known from every write).
//! - **What is not seen.** Writes by other processes or other `Repo` values are bounded only
//!   by the staleness the caller allowed.
//! - **Ages count from the reads' start.** An answer (cached, or a flight to join) is as old as
//!   the moment its scatter-gather started; one older than the caller's bound is not used.
//! - **Abandoned flights end.** A flight whose every caller was dropped is removed at once:
//!   a later identical query runs its own instead of collecting an answer nobody waited for.
//! - **Bounded.** The cache holds at most its capacity in items (oldest answers evicted first).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};

use crate::capacity::{Clock, SystemClock};
use crate::error::foreign::Foreign;
use crate::error::Error;
use crate::item::Item;

/// The items a query may cache by default, across all its answers.
pub const DEFAULT_CACHE_ITEMS: usize = 10_000;

/// What a shared scatter-gather ends with: every waiter gets a clone.
type SharedResult = Result<Arc<Gathered>, Arc<Error>>;

/// How a query may use the cache and the in-flight map.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadPolicy {
    /// Join an identical query in flight.
    pub(crate) coalesce: bool,
    /// Serve an answer at most this old from the cache (and store this query's answer).
    pub(crate) max_staleness: Option<Duration>,
}

/// One identical query in flight.
struct InFlight {
    id: u64,
    epoch: u64,
    /// When its scatter-gather started, on the cache's clock: its reads began then.
    started: Duration,
    /// The callers waiting for it. When the last is dropped (a timeout, a disconnected
    /// client) the flight is abandoned: it is removed at once, so that no later query joins an
    /// answer nobody is waiting for, which would be as old as the abandoned flight.
    waiters: usize,
    future: Shared<BoxFuture<'static, SharedResult>>,
}

/// What one scatter-gather gathered: the items, and the foreign items it skipped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gathered {
    pub(crate) items: Vec<Item>,
    pub(crate) foreign: Foreign,
}

/// A write of the repository in progress: tells the read cache when it ends (see
/// [`ReadCache::writing`]).
pub(crate) struct Written<'a> {
    cache: &'a ReadCache,
    partition_keys: Vec<String>,
}

impl Drop for Written<'_> {
    fn drop(&mut self) {
        self.cache
            .wrote(self.partition_keys.iter().map(String::as_str));
    }
}

/// A caller waiting for a flight: dropped before the flight ends (the caller was cancelled),
/// it leaves the flight, and the last to leave removes it.
struct Waiting<'a> {
    cache: &'a ReadCache,
    key: &'a [u8],
    id: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.cache.lock();
        if let Some(flight) = state.in_flight.get_mut(self.key) {
            if flight.id == self.id {
                flight.waiters -= 1;
                if flight.waiters == 0 {
                    state.in_flight.remove(self.key);
                }
            }
        }
    }
}

/// One cached answer.
struct Answer {
    /// When its scatter-gather started, on the cache's clock: its reads began then, so it may
    /// miss any write completed after, and its age counts from here (not from when its last
    /// shard answered, which may be seconds later).
    started: Duration,
    items: Arc<Gathered>,
    /// The partitions it read (physical keys), `None` for a GSI query.
    partitions: Option<Vec<String>>,
}

#[derive(Default)]
struct State {
    in_flight: HashMap<Vec<u8>, InFlight>,
    answers: HashMap<Vec<u8>, Answer>,
    cached_items: usize,
    /// Bumped by every completed write through the repository.
    epoch: u64,
    next_id: u64,
}

/// The most queries whose skew a repository remembers (the map is emptied when it is full:
/// learning again costs one query's extra round trips).
const LEARNED_QUERIES: usize = 1024;

/// A repository's single-flight map and answer cache, shared by its clones, and what it
/// learned of its top-k queries' skew.
pub(crate) struct ReadCache {
    clock: Arc<dyn Clock>,
    capacity: usize,
    state: Mutex<State>,
    /// Per query (its description and limit), what each shard supplied of its last answer.
    learned: Mutex<HashMap<Vec<u8>, Arc<[f64]>>>,
}

impl std::fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("ReadCache")
            .field("capacity", &self.capacity)
            .field("in_flight", &state.in_flight.len())
            .field("answers", &state.answers.len())
            .field("cached_items", &state.cached_items)
            .finish()
    }
}

impl Default for ReadCache {
    fn default() -> Self {
        ReadCache::new(Arc::new(SystemClock::new()), DEFAULT_CACHE_ITEMS)
    }
}

/// What a query got: the items, how old they are, and whether another query's scatter-gather
/// produced them.
pub(crate) struct Served {
    pub(crate) items: Vec<Item>,
    /// The foreign items the scatter-gather skipped.
    pub(crate) foreign: Foreign,
    /// How long before this query was called the reads of its answer began: zero for a
    /// query that ran its own scatter-gather.
    pub(crate) age: Duration,
    pub(crate) shared: bool,
}

impl ReadCache {
    pub(crate) fn new(clock: Arc<dyn Clock>, capacity: usize) -> Self {
        ReadCache {
            clock,
            capacity,
            state: Mutex::new(State::default()),
            learned: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere must not take every later query down with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers the query `key` (its description and run parameters) under `policy`: from the
    /// cache when an answer young enough is there, by joining an identical query in flight,
    /// or by running `run` (and letting later identical queries join it).
    ///
    /// Ages count from when an answer's reads began: a cached answer, or a flight to join,
    /// whose scatter-gather started more than `max_staleness` before this call is not used.
    pub(crate) async fn serve(
        &self,
        key: Vec<u8>,
        partitions: Option<Vec<String>>,
        policy: ReadPolicy,
        run: BoxFuture<'static, Result<Gathered, Error>>,
    ) -> Result<Served, Error> {
        let called = self.clock.now();
        let young_enough = |started: Duration| {
            policy
                .max_staleness
                .is_none_or(|bound| called.saturating_sub(started) <= bound)
        };
        let (future, id, epoch, started, leader) = {
            let mut state = self.lock();
            if policy.max_staleness.is_some() {
                if let Some(answer) = state.answers.get(&key) {
                    if young_enough(answer.started) {
                        return Ok(Served {
                            items: answer.items.items.clone(),
                            foreign: answer.items.foreign.clone(),
                            age: called.saturating_sub(answer.started),
                            shared: true,
                        });
                    }
                }
            }
            let epoch = state.epoch;
            match state.in_flight.get_mut(&key) {
                Some(flight)
                    if policy.coalesce && flight.epoch == epoch && young_enough(flight.started) =>
                {
                    flight.waiters += 1;
                    (
                        flight.future.clone(),
                        flight.id,
                        epoch,
                        flight.started,
                        false,
                    )
                }
                _ => {
                    let future = run
                        .map(|result| result.map(Arc::new).map_err(Arc::new))
                        .boxed()
                        .shared();
                    let id = state.next_id;
                    state.next_id += 1;
                    if policy.coalesce {
                        state.in_flight.insert(
                            key.clone(),
                            InFlight {
                                id,
                                epoch,
                                started: called,
                                waiters: 1,
                                future: future.clone(),
                            },
                        );
                    }
                    (future, id, epoch, called, true)
                }
            }
        };
        // Leaves the flight when this caller is dropped before it ends.
        let waiting = Waiting {
            cache: self,
            key: &key,
            id,
        };
        let result = future.await;
        let mut state = self.lock();
        // Ended: later queries run their own.
        if state.in_flight.get(&key).is_some_and(|f| f.id == id) {
            state.in_flight.remove(&key);
        }
        let age = called.saturating_sub(started);
        match result {
            Ok(items) => {
                // Cached only when no write through the repository completed meanwhile.
                if leader && policy.max_staleness.is_some() && state.epoch == epoch {
                    self.store(&mut state, key.clone(), items.clone(), partitions, started);
                }
                drop(state);
                drop(waiting);
                let gathered =
                    Arc::try_unwrap(items).unwrap_or_else(|shared| shared.as_ref().clone());
                Ok(Served {
                    items: gathered.items,
                    foreign: gathered.foreign,
                    age,
                    shared: !leader,
                })
            }
            Err(error) => {
                drop(state);
                drop(waiting);
                Err(match Arc::try_unwrap(error) {
                    Ok(error) => error,
                    Err(shared) => Error::Coalesced { source: shared },
                })
            }
        }
    }

    fn store(
        &self,
        state: &mut State,
        key: Vec<u8>,
        items: Arc<Gathered>,
        partitions: Option<Vec<String>>,
        started: Duration,
    ) {
        if items.items.len() > self.capacity {
            return;
        }
        if let Some(old) = state.answers.remove(&key) {
            state.cached_items -= old.items.items.len();
        }
        while state.cached_items + items.items.len() > self.capacity {
            let Some(oldest) = state
                .answers
                .iter()
                .min_by_key(|(_, a)| a.started)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(evicted) = state.answers.remove(&oldest) {
                state.cached_items -= evicted.items.items.len();
            }
        }
        state.cached_items += items.items.len();
        state.answers.insert(
            key,
            Answer {
                started,
                items,
                partitions,
            },
        );
    }

    /// The one hook every write through the repository holds while it runs (a put, update,
    /// delete, batch, transaction): when it ends, however it ends (a failed or abandoned
    /// write may have been applied), the cache learns that `partition_keys` were written.
    pub(crate) fn writing<'k>(
        &self,
        partition_keys: impl IntoIterator<Item = &'k str>,
    ) -> Written<'_> {
        Written {
            cache: self,
            partition_keys: partition_keys.into_iter().map(str::to_owned).collect(),
        }
    }

    /// A write through the repository to the partitions `partition_keys` completed (or was
    /// attempted): queries in flight are no longer joined, their answers not cached, and
    /// cached answers that read these partitions (and every GSI answer) are dropped.
    pub(crate) fn wrote<'a>(&self, partition_keys: impl IntoIterator<Item = &'a str>) {
        let touched: Vec<&str> = partition_keys.into_iter().collect();
        let mut state = self.lock();
        state.epoch += 1;
        let State {
            answers,
            cached_items,
            ..
        } = &mut *state;
        answers.retain(|_, answer| {
            let keep = answer
                .partitions
                .as_ref()
                .is_some_and(|read| !read.iter().any(|p| touched.contains(&p.as_str())));
            if !keep {
                *cached_items -= answer.items.items.len();
            }
            keep
        });
    }

    /// The queries in flight, for tests.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().in_flight.len()
    }

    /// What each shard supplied of query `key`'s last answer, if known.
    pub(crate) fn learned_shares(&self, key: &[u8]) -> Option<Arc<[f64]>> {
        self.learned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(key)
            .cloned()
    }

    /// Remembers what each shard supplied of query `key`'s answer.
    pub(crate) fn learn_shares(&self, key: Vec<u8>, shares: Vec<f64>) {
        let mut learned = self
            .learned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if learned.len() >= LEARNED_QUERIES && !learned.contains_key(&key) {
            learned.clear();
        }
        learned.insert(key, shares.into());
    }

    /// The items cached, for tests and `Debug`.
    #[cfg(test)]
    pub(crate) fn cached_items(&self) -> usize {
        self.lock().cached_items
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aws_sdk_dynamodb::types::AttributeValue;

    use super::*;
    use crate::capacity::ManualClock;

    fn item(v: &str) -> Item {
        Item::from([("pk".to_owned(), AttributeValue::S(v.to_owned()))])
    }

    fn gathered(items: Vec<Item>) -> Gathered {
        Gathered {
            items,
            foreign: Foreign::default(),
        }
    }

    fn counted(
        runs: &Arc<AtomicUsize>,
        value: &str,
    ) -> BoxFuture<'static, Result<Gathered, Error>> {
        let runs = runs.clone();
        let value = value.to_owned();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            // Long enough for every query started in the same poll round to join.
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(gathered(vec![item(&value)]))
        }
        .boxed()
    }

    /// A scatter-gather that counts its run in `runs` and answers `value` once `release` (the
    /// sender returned) is sent or dropped: a query held in flight.
    fn held(
        runs: &Arc<AtomicUsize>,
        value: &str,
    ) -> (
        tokio::sync::oneshot::Sender<()>,
        BoxFuture<'static, Result<Gathered, Error>>,
    ) {
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let (runs, value) = (runs.clone(), value.to_owned());
        let run = async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let _ = wait.await;
            Ok(gathered(vec![item(&value)]))
        }
        .boxed();
        (release, run)
    }

    /// The callers waiting for the flight of query `key`, if one is in flight.
    fn waiters(cache: &ReadCache, key: &[u8]) -> Option<usize> {
        cache.lock().in_flight.get(key).map(|f| f.waiters)
    }

    /// Waits, yielding to the spawned tasks, until `ready`; a condition that never comes is a
    /// failure, not a hang.
    async fn until(mut ready: impl FnMut() -> bool) {
        for _ in 0..100_000 {
            if ready() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the awaited condition never came");
    }

    const COALESCE: ReadPolicy = ReadPolicy {
        coalesce: true,
        max_staleness: None,
    };

    fn stale(ms: u64) -> ReadPolicy {
        ReadPolicy {
            coalesce: true,
            max_staleness: Some(Duration::from_millis(ms)),
        }
    }

    #[tokio::test]
    async fn identical_concurrent_queries_run_once() {
        let cache = ReadCache::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let served = futures::future::join_all(
            (0..8).map(|_| cache.serve(b"q".to_vec(), None, COALESCE, counted(&runs, "a"))),
        )
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            served.iter().filter(|s| s.as_ref().unwrap().shared).count(),
            7
        );
        // Not concurrent: run again (no staleness allowed).
        cache
            .serve(b"q".to_vec(), None, COALESCE, counted(&runs, "a"))
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(cache.cached_items(), 0);
    }

    #[tokio::test]
    async fn a_cached_answer_is_never_older_than_the_bound() {
        let clock = Arc::new(ManualClock::new());
        let cache = ReadCache::new(clock.clone(), 100);
        let runs = Arc::new(AtomicUsize::new(0));
        let first = cache
            .serve(
                b"q".to_vec(),
                Some(vec!["P#0".into()]),
                stale(250),
                counted(&runs, "a"),
            )
            .await
            .unwrap();
        assert_eq!(first.age, Duration::ZERO);
        for step in [100, 150] {
            clock.advance(Duration::from_millis(step));
            let again = cache
                .serve(
                    b"q".to_vec(),
                    Some(vec!["P#0".into()]),
                    stale(250),
                    counted(&runs, "b"),
                )
                .await
                .unwrap();
            assert!(again.age <= Duration::from_millis(250));
            assert_eq!(again.items, vec![item("a")], "from the cache");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        clock.advance(Duration::from_millis(1));
        let fresh = cache
            .serve(
                b"q".to_vec(),
                Some(vec!["P#0".into()]),
                stale(250),
                counted(&runs, "b"),
            )
            .await
            .unwrap();
        assert_eq!(fresh.items, vec![item("b")], "251 ms is past the bound");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // A tighter bound of another caller is honoured on the same answer.
        clock.advance(Duration::from_millis(20));
        let tight = cache
            .serve(
                b"q".to_vec(),
                Some(vec!["P#0".into()]),
                stale(10),
                counted(&runs, "c"),
            )
            .await
            .unwrap();
        assert_eq!(tight.items, vec![item("c")]);
    }

    #[tokio::test]
    async fn a_write_drops_the_answers_that_read_its_partition() {
        let cache = ReadCache::new(Arc::new(ManualClock::new()), 100);
        let runs = Arc::new(AtomicUsize::new(0));
        let parts = |p: &str| Some(vec![p.to_owned()]);
        cache
            .serve(
                b"g1".to_vec(),
                parts("G#1"),
                stale(1000),
                counted(&runs, "a"),
            )
            .await
            .unwrap();
        cache
            .serve(
                b"g2".to_vec(),
                parts("G#2"),
                stale(1000),
                counted(&runs, "a"),
            )
            .await
            .unwrap();
        cache
            .serve(b"gsi".to_vec(), None, stale(1000), counted(&runs, "a"))
            .await
            .unwrap();
        assert_eq!(cache.cached_items(), 3);
        cache.wrote(["G#1"]);
        assert_eq!(
            cache.cached_items(),
            1,
            "g1 and the GSI answer dropped, g2 kept"
        );
        cache
            .serve(
                b"g2".to_vec(),
                parts("G#2"),
                stale(1000),
                counted(&runs, "b"),
            )
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_query_in_flight_during_a_write_is_neither_joined_nor_cached() {
        let cache = Arc::new(ReadCache::new(Arc::new(ManualClock::new()), 100));
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, slow) = held(&runs, "old");
        let first = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.serve(b"q".to_vec(), None, stale(1000), slow).await })
        };
        tokio::task::yield_now().await;
        until(|| runs.load(Ordering::SeqCst) > 0).await;
        cache.wrote(["P#0"]);
        let after = cache
            .serve(b"q".to_vec(), None, stale(1000), counted(&runs, "new"))
            .await
            .unwrap();
        assert_eq!(
            after.items,
            vec![item("new")],
            "did not join the earlier query"
        );
        let _ = release.send(());
        assert_eq!(first.await.unwrap().unwrap().items, vec![item("old")]);
        let cached = cache
            .serve(b"q".to_vec(), None, stale(1000), counted(&runs, "x"))
            .await
            .unwrap();
        assert_eq!(
            cached.items,
            vec![item("new")],
            "the older answer was not cached"
        );
    }

    #[tokio::test]
    async fn an_abandoned_flight_is_never_joined() {
        let cache = ReadCache::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, slow) = held(&runs, "old");
        // Its only caller gives up (a timeout); the reads it started would still finish.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(5),
            cache.serve(b"q".to_vec(), None, COALESCE, slow),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(cache.in_flight(), 0, "abandoned with its last caller");
        let _ = release.send(());
        let later = cache
            .serve(b"q".to_vec(), None, COALESCE, counted(&runs, "new"))
            .await
            .unwrap();
        assert_eq!(later.items, vec![item("new")]);
        assert!(!later.shared);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_flight_outlives_a_cancelled_caller_while_another_waits() {
        let cache = Arc::new(ReadCache::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, slow) = held(&runs, "a");
        let leader = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.serve(b"q".to_vec(), None, COALESCE, slow).await })
        };
        until(|| runs.load(Ordering::SeqCst) > 0).await;
        let waiter = {
            let cache = cache.clone();
            let runs = runs.clone();
            tokio::spawn(async move {
                cache
                    .serve(b"q".to_vec(), None, COALESCE, counted(&runs, "b"))
                    .await
            })
        };
        until(|| waiters(&cache, b"q") == Some(2)).await;
        leader.abort();
        assert!(leader.await.is_err_and(|e| e.is_cancelled()));
        assert_eq!(cache.in_flight(), 1, "still waited for");
        let _ = release.send(());
        let served = waiter.await.unwrap().unwrap();
        assert!(served.shared);
        assert_eq!(served.items, vec![item("a")]);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(cache.in_flight(), 0);
    }

    #[tokio::test]
    async fn ages_count_from_when_the_reads_began() {
        let clock = Arc::new(ManualClock::new());
        let cache = ReadCache::new(clock.clone(), 100);
        let runs = Arc::new(AtomicUsize::new(0));
        let parts = || Some(vec!["P#0".to_owned()]);
        // A scatter-gather whose last shard answers 3.9 s after its reads began.
        let slow = {
            let clock = clock.clone();
            async move {
                clock.advance(Duration::from_millis(3_900));
                Ok(gathered(vec![item("a")]))
            }
            .boxed()
        };
        let first = cache
            .serve(b"q".to_vec(), parts(), stale(250), slow)
            .await
            .unwrap();
        assert_eq!(first.age, Duration::ZERO, "its own reads");
        clock.advance(Duration::from_millis(1));
        let lenient = cache
            .serve(b"q".to_vec(), parts(), stale(5_000), counted(&runs, "b"))
            .await
            .unwrap();
        assert_eq!(lenient.items, vec![item("a")], "within 5 s");
        assert_eq!(lenient.age, Duration::from_millis(3_901));
        let strict = cache
            .serve(b"q".to_vec(), parts(), stale(250), counted(&runs, "b"))
            .await
            .unwrap();
        assert_eq!(strict.items, vec![item("b")], "3.9 s old is past 250 ms");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_flight_older_than_the_bound_is_not_joined() {
        let clock = Arc::new(ManualClock::new());
        let cache = Arc::new(ReadCache::new(clock.clone(), 100));
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, slow) = held(&runs, "old");
        let first = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.serve(b"q".to_vec(), None, COALESCE, slow).await })
        };
        until(|| runs.load(Ordering::SeqCst) > 0).await;
        clock.advance(Duration::from_millis(300));
        // Without a bound a query joins it, and says how old the answer is.
        let joined = {
            let cache = cache.clone();
            let runs = runs.clone();
            tokio::spawn(async move {
                cache
                    .serve(b"q".to_vec(), None, COALESCE, counted(&runs, "x"))
                    .await
            })
        };
        until(|| waiters(&cache, b"q") == Some(2)).await;
        // With a 250 ms bound it runs its own.
        let bounded = cache
            .serve(b"q".to_vec(), None, stale(250), counted(&runs, "new"))
            .await
            .unwrap();
        assert_eq!(bounded.items, vec![item("new")], "300 ms old: not joined");
        assert!(!bounded.shared);
        let _ = release.send(());
        let joined = joined.await.unwrap().unwrap();
        assert!(joined.shared);
        assert_eq!(joined.items, vec![item("old")]);
        assert_eq!(joined.age, Duration::from_millis(300));
        assert_eq!(first.await.unwrap().unwrap().age, Duration::ZERO);
    }

    #[tokio::test]
    async fn the_cache_stays_within_its_capacity() {
        let clock = Arc::new(ManualClock::new());
        let cache = ReadCache::new(clock.clone(), 2);
        let runs = Arc::new(AtomicUsize::new(0));
        for key in [b"a", b"b", b"c"] {
            clock.advance(Duration::from_millis(1));
            cache
                .serve(key.to_vec(), None, stale(1000), counted(&runs, "v"))
                .await
                .unwrap();
        }
        assert_eq!(cache.cached_items(), 2);
        // The oldest ("a") went.
        cache
            .serve(b"a".to_vec(), None, stale(1000), counted(&runs, "v"))
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn waiters_share_the_leaders_error() {
        let cache = ReadCache::default();
        let failing = || {
            async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Err(Error::Bug("boom".into()))
            }
            .boxed()
        };
        let results = futures::future::join_all(
            (0..3).map(|_| cache.serve(b"q".to_vec(), None, COALESCE, failing())),
        )
        .await;
        assert!(results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.to_string().contains("boom"))));
        assert!(results
            .iter()
            .any(|r| matches!(r, Err(Error::Coalesced { .. }))));
        // Whichever caller ran the query, its error is one match away.
        assert!(results
            .iter()
            .all(|r| matches!(r.as_ref().map_err(Error::unshared), Err(Error::Bug(_)))));
    }
}

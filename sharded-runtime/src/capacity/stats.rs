//! The hot-key report: capacity units per partition key over a sliding window, per index,
//! with flags for keys near their per-key limit, dominant keys, uneven shards, GSI keys hotter
//! than the base table, and throttles.
//!
//! [`HotKeyStats`] is an opt-in collector: the repository holds an
//! `Option<Arc<HotKeyStats>>` and calls [`record_write`](HotKeyStats::record_write),
//! [`record_read`](HotKeyStats::record_read) and
//! [`record_throttle`](HotKeyStats::record_throttle) with the units DynamoDB reports
//! (`ConsumedCapacity`). [`report`](HotKeyStats::report) turns the window into a
//! [`HotKeyReport`] whose `Display` is a table plus what to do about each flag.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use sharded::capacity::ManualClock;
//! use sharded::capacity::{HotKeyFlag, HotKeyStats};
//!
//! let clock = ManualClock::new();
//! let stats = HotKeyStats::new(Duration::from_secs(60)).with_clock(Arc::new(clock.clone()));
//! for _ in 0..60 {
//!     stats.record_write(None, "OPS_LOG", 900.0, None); // 900 WCU/s on one key
//!     stats.record_write(None, "USER#u1", 5.0, None);
//!     clock.advance(Duration::from_secs(1));
//! }
//! let report = stats.report();
//! assert_eq!(report.top(1)[0].key, "OPS_LOG");
//! assert!(report.flags.iter().any(|f| matches!(f, HotKeyFlag::NearLimit { key, .. } if key == "OPS_LOG")));
//! println!("{report}");
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::capacity::clock::{Clock, SystemClock};
use crate::capacity::limits::PerKeyLimits;
use crate::capacity::planner::{fmt_num, percent, shards_for, UnitKind, DEFAULT_HEADROOM};
use crate::keys::schema::MAX_SHARDS;

/// The base table's name inside the collector; DynamoDB index names have at least 3
/// characters, so it never clashes with a GSI.
const BASE: &str = "";

/// When [`HotKeyStats`] raises a flag.
///
/// ```
/// use sharded::capacity::HotKeyThresholds;
/// let strict = HotKeyThresholds { near_limit: 0.5, ..HotKeyThresholds::default() };
/// assert_eq!(strict.uneven_max_over_mean, 1.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotKeyThresholds {
    /// `NearLimit` when a key's rate is at least this fraction of its per-key limit
    /// (default 0.8).
    pub near_limit: f64,
    /// `DominantKey` when one key takes more than this share of its index's units in the
    /// window, among at least two keys (default 0.5).
    pub dominant_share: f64,
    /// `UnevenShards` when the hottest shard of a logical key takes more than this multiple of
    /// the mean over all its shards (default 1.5).
    pub uneven_max_over_mean: f64,
    /// Minimum traffic, in units in the window, before the share-based flags speak: an index
    /// needs this many units for `DominantKey`, a GSI key for `HotGsiKey`, and a logical key
    /// this many units *per shard on average* for `UnevenShards` (default 10; raise it if low
    /// traffic gives noisy flags).
    pub min_units: f64,
}

impl Default for HotKeyThresholds {
    fn default() -> Self {
        Self {
            near_limit: 0.8,
            dominant_share: 0.5,
            uneven_max_over_mean: 1.5,
            min_units: 10.0,
        }
    }
}

#[derive(Debug, Default)]
struct Bucket {
    second: u64,
    read: f64,
    write: f64,
    throttles: Vec<(String, u64)>,
}

#[derive(Debug, Default)]
struct KeyEntry {
    shards: Option<u32>,
    buckets: VecDeque<Bucket>,
}

impl KeyEntry {
    /// Drops buckets older than the window: the bucket of second `s` (traffic in `[s, s+1)`)
    /// counts while `s >= now - window`, so a window read at a whole second holds exactly
    /// the last `window` seconds.
    fn prune(&mut self, now_sec: u64, window_secs: u64) {
        while self
            .buckets
            .front()
            .is_some_and(|b| b.second.saturating_add(window_secs) < now_sec)
        {
            self.buckets.pop_front();
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// index name (`""` = base table) -> physical key -> traffic.
    indexes: HashMap<String, HashMap<String, KeyEntry>>,
    last_sweep: u64,
}

impl State {
    fn sweep(&mut self, now_sec: u64, window_secs: u64) {
        for keys in self.indexes.values_mut() {
            keys.retain(|_, entry| {
                entry.prune(now_sec, window_secs);
                !entry.buckets.is_empty()
            });
        }
        self.indexes.retain(|_, keys| !keys.is_empty());
        self.last_sweep = now_sec;
    }
}

/// Runs `f` on the value under `key`, inserting a default first; allocates the key only when
/// it is new.
fn with_slot<V: Default, R>(
    map: &mut HashMap<String, V>,
    key: &str,
    f: impl FnOnce(&mut V) -> R,
) -> R {
    if let Some(value) = map.get_mut(key) {
        return f(value);
    }
    f(map.entry(key.to_owned()).or_default())
}

/// Collects capacity units per partition key over a sliding window and reports hot keys.
///
/// Each key keeps one bucket per second (the window is rounded up to whole seconds, at least
/// 1), so memory is bounded by keys x window seconds; keys idle for a whole window are
/// dropped. Traffic recorded in second `s` counts until the clock passes `s + window + 1`:
/// read at a whole second, the window holds exactly the last `window` seconds; read between
/// seconds, it also holds the current, partial second. Recording takes one mutex and two hash lookups, and allocates only for
/// a key or index not seen in the window.
///
/// Rates are the units in the window divided by the window, or by the collector's age when it
/// is younger than the window (at least one second), so a fresh collector does not
/// under-report. They are averages: a burst shorter than the window shows diluted.
///
/// Bad input never panics: negative or non-finite units are ignored, `shards: Some(0)` or a
/// key without a numeric `#<shard>` suffix below `n` is reported as an unsharded key.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::{HotKeyFlag, HotKeyStats};
///
/// let clock = ManualClock::new();
/// let stats = Arc::new(HotKeyStats::new(Duration::from_secs(10)).with_clock(Arc::new(clock.clone())));
/// // A sharded logical key (n = 4) whose shard 2 takes most writes.
/// for _ in 0..10 {
///     for shard in 0..4 {
///         let units = if shard == 2 { 300.0 } else { 20.0 };
///         stats.record_write(None, &format!("GAME#g1#{shard}"), units, Some(4));
///     }
///     clock.advance(Duration::from_secs(1));
/// }
/// let report = stats.report();
/// assert!(report.flags.iter().any(|f| matches!(f,
///     HotKeyFlag::UnevenShards { logical_key, hottest_shard: 2, .. } if logical_key == "GAME#g1")));
/// ```
pub struct HotKeyStats {
    window: Duration,
    window_secs: u64,
    clock: Arc<dyn Clock>,
    start: Duration,
    limits: PerKeyLimits,
    thresholds: HotKeyThresholds,
    state: Mutex<State>,
}

impl fmt::Debug for HotKeyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: usize = self.lock().indexes.values().map(HashMap::len).sum();
        f.debug_struct("HotKeyStats")
            .field("window", &self.window)
            .field("clock", &self.clock)
            .field("limits", &self.limits)
            .field("thresholds", &self.thresholds)
            .field("keys_tracked", &keys)
            .finish()
    }
}

impl HotKeyStats {
    /// A collector over the last `window` of traffic, on the system clock.
    pub fn new(window: Duration) -> Self {
        let window_secs = (window.as_secs() + u64::from(window.subsec_nanos() > 0)).max(1);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let start = clock.now();
        Self {
            window: Duration::from_secs(window_secs),
            window_secs,
            clock,
            start,
            limits: PerKeyLimits::DYNAMODB,
            thresholds: HotKeyThresholds::default(),
            state: Mutex::new(State {
                indexes: HashMap::new(),
                last_sweep: start.as_secs(),
            }),
        }
    }

    /// Reads time from `clock` (a [`ManualClock`](crate::capacity::clock::ManualClock) in
    /// tests) instead of the system clock. Set it before recording: it restarts the window.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.start = clock.now();
        self.clock = clock;
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        state.indexes.clear();
        state.last_sweep = self.start.as_secs();
        self
    }

    /// Sets the per-key limits utilisation is measured against (default: DynamoDB's 1,000
    /// write and 3,000 read units/s). Pass the limits the per-key emulator enforces, or the
    /// planner planned with, so the three agree. A limit that is not a finite number above 0
    /// leaves that limit unchanged.
    pub fn with_limits(mut self, limits: PerKeyLimits) -> Self {
        if limits.write_units_per_second.is_finite() && limits.write_units_per_second > 0.0 {
            self.limits.write_units_per_second = limits.write_units_per_second;
        }
        if limits.read_units_per_second.is_finite() && limits.read_units_per_second > 0.0 {
            self.limits.read_units_per_second = limits.read_units_per_second;
        }
        self
    }

    /// Sets when flags are raised (see [`HotKeyThresholds`]).
    pub fn with_thresholds(mut self, thresholds: HotKeyThresholds) -> Self {
        self.thresholds = thresholds;
        self
    }

    /// The window, rounded up to whole seconds.
    pub fn window(&self) -> Duration {
        self.window
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(
        &self,
        index: Option<&str>,
        key: &str,
        shards: Option<u32>,
        apply: impl FnOnce(&mut Bucket),
    ) {
        let now_sec = self.clock.now().as_secs();
        let window_secs = self.window_secs;
        let mut state = self.lock();
        if now_sec >= state.last_sweep.saturating_add(window_secs) {
            state.sweep(now_sec, window_secs);
        }
        with_slot(&mut state.indexes, index.unwrap_or(BASE), |keys| {
            with_slot(keys, key, |entry| {
                if shards.is_some() {
                    entry.shards = shards;
                }
                entry.prune(now_sec, window_secs);
                // A clock that went backwards adds to the newest bucket.
                match entry.buckets.back_mut() {
                    Some(last) if last.second >= now_sec => apply(last),
                    _ => {
                        let mut bucket = Bucket {
                            second: now_sec,
                            ..Bucket::default()
                        };
                        apply(&mut bucket);
                        entry.buckets.push_back(bucket);
                    }
                }
            });
        });
    }

    /// Records `units` write units consumed on partition key `key` of `index` (`None`, or an
    /// empty name, = the base table). `shards: Some(n)` says `key` is `<logical>#<shard>` of a
    /// logical key with `n` shards, so the report can group the shards.
    pub fn record_write(&self, index: Option<&str>, key: &str, units: f64, shards: Option<u32>) {
        if units.is_finite() && units > 0.0 {
            self.record(index, key, shards, |b| b.write += units);
        }
    }

    /// Records `units` read units consumed on partition key `key` of `index`; see
    /// [`record_write`](Self::record_write).
    pub fn record_read(&self, index: Option<&str>, key: &str, units: f64, shards: Option<u32>) {
        if units.is_finite() && units > 0.0 {
            self.record(index, key, shards, |b| b.read += units);
        }
    }

    /// Records one throttled request on `key` of `index`, with the reason DynamoDB gave
    /// (e.g. `ProvisionedThroughputExceeded`, `ThrottlingException`).
    pub fn record_throttle(
        &self,
        index: Option<&str>,
        key: &str,
        reason: &str,
        shards: Option<u32>,
    ) {
        self.record(index, key, shards, |b| {
            match b.throttles.iter_mut().find(|(r, _)| r == reason) {
                Some((_, count)) => *count += 1,
                None => b.throttles.push((reason.to_owned(), 1)),
            }
        });
    }

    /// The keys with traffic in the window, sorted hottest first, and the flags they raise.
    pub fn report(&self) -> HotKeyReport {
        let now = self.clock.now();
        let now_sec = now.as_secs();
        let age = now.saturating_sub(self.start).as_secs_f64();
        let seconds = age.clamp(1.0, self.window_secs as f64);
        let limits = self.limits;

        let mut keys = Vec::new();
        {
            let mut state = self.lock();
            state.sweep(now_sec, self.window_secs);
            for (index, entries) in &state.indexes {
                let index = (index != BASE).then(|| index.clone());
                let start = keys.len();
                for (key, entry) in entries {
                    let mut activity = KeyActivity {
                        index: index.clone(),
                        key: key.clone(),
                        shards: entry.shards,
                        write_units: 0.0,
                        read_units: 0.0,
                        write_units_per_sec: 0.0,
                        read_units_per_sec: 0.0,
                        write_share: 0.0,
                        read_share: 0.0,
                        write_utilization: 0.0,
                        read_utilization: 0.0,
                        throttles: BTreeMap::new(),
                    };
                    for bucket in &entry.buckets {
                        activity.write_units += bucket.write;
                        activity.read_units += bucket.read;
                        for (reason, count) in &bucket.throttles {
                            *activity.throttles.entry(reason.clone()).or_default() += count;
                        }
                    }
                    keys.push(activity);
                }
                let of_index = &mut keys[start..];
                let total_write: f64 = of_index.iter().map(|k| k.write_units).sum();
                let total_read: f64 = of_index.iter().map(|k| k.read_units).sum();
                for k in of_index {
                    k.write_units_per_sec = k.write_units / seconds;
                    k.read_units_per_sec = k.read_units / seconds;
                    k.write_share = share(k.write_units, total_write);
                    k.read_share = share(k.read_units, total_read);
                    k.write_utilization = k.write_units_per_sec / limits.write_units_per_second;
                    k.read_utilization = k.read_units_per_sec / limits.read_units_per_second;
                }
            }
        }
        keys.sort_by(|a, b| {
            b.write_units
                .total_cmp(&a.write_units)
                .then(b.read_units.total_cmp(&a.read_units))
                .then_with(|| a.index.cmp(&b.index))
                .then_with(|| a.key.cmp(&b.key))
        });
        let flags = flags(&keys, limits, &self.thresholds);
        HotKeyReport {
            window: self.window,
            measured_over: Duration::from_secs_f64(seconds),
            limits,
            keys,
            flags,
        }
    }
}

fn share(part: f64, total: f64) -> f64 {
    if total > 0.0 {
        part / total
    } else {
        0.0
    }
}

/// `(logical key, shard)` of a physical key `<logical>#<shard>` of a key with `n` shards.
fn split_shard(key: &str, n: u32) -> Option<(&str, u32)> {
    let (logical, shard) = key.rsplit_once('#')?;
    let shard: u32 = shard.parse().ok()?;
    (!logical.is_empty() && shard < n).then_some((logical, shard))
}

/// The recorded shards of one logical key: its shard count (the largest recorded) and the
/// activity of each shard with traffic.
#[derive(Default)]
struct ShardGroup<'a> {
    n: u32,
    shards: Vec<(u32, &'a KeyActivity)>,
}

fn flags(keys: &[KeyActivity], limits: PerKeyLimits, t: &HotKeyThresholds) -> Vec<HotKeyFlag> {
    let write_budget = limits.write_units_per_second * (1.0 - DEFAULT_HEADROOM);

    // Logical keys of sharded physical keys.
    let mut groups: BTreeMap<(Option<&str>, &str), ShardGroup<'_>> = BTreeMap::new();
    for k in keys {
        if let Some((logical, shard)) = k.shards.and_then(|n| split_shard(&k.key, n)) {
            let group = groups.entry((k.index.as_deref(), logical)).or_default();
            group.n = group.n.max(k.shards.unwrap_or(0));
            group.shards.push((shard, k));
        }
    }
    fn group_of<'m, 'k>(
        groups: &'m BTreeMap<(Option<&'k str>, &'k str), ShardGroup<'k>>,
        k: &'k KeyActivity,
    ) -> Option<&'m ShardGroup<'k>> {
        let (logical, _) = split_shard(&k.key, k.shards?)?;
        groups.get(&(k.index.as_deref(), logical))
    }

    let mut flags = Vec::new();

    // Near the per-key limit; for a sharded key, only its hottest shard speaks.
    for k in keys {
        let group = group_of(&groups, k);
        for (kind, utilization) in [
            (UnitKind::Write, k.write_utilization),
            (UnitKind::Read, k.read_utilization),
        ] {
            if utilization < t.near_limit {
                continue;
            }
            let of_kind = |a: &KeyActivity| match kind {
                UnitKind::Write => a.write_utilization,
                UnitKind::Read => a.read_utilization,
            };
            if let Some(group) = group {
                let hottest = group.shards.iter().map(|(_, a)| *a).max_by(|a, b| {
                    of_kind(a)
                        .total_cmp(&of_kind(b))
                        .then_with(|| b.key.cmp(&a.key))
                });
                if !hottest.is_some_and(|h| std::ptr::eq(h, k)) {
                    continue;
                }
            }
            let suggested_n = (kind == UnitKind::Write).then(|| match group {
                Some(group) => shards_for(
                    group
                        .shards
                        .iter()
                        .map(|(_, a)| a.write_units_per_sec)
                        .sum(),
                    write_budget,
                ),
                None => shards_for(k.write_units_per_sec, write_budget).max(2),
            });
            flags.push(HotKeyFlag::NearLimit {
                index: k.index.clone(),
                key: k.key.clone(),
                kind,
                utilization,
                shards: group.map(|g| g.n),
                suggested_n,
            });
        }
    }

    // Throttles, by reason.
    for k in keys {
        for (reason, &count) in &k.throttles {
            flags.push(HotKeyFlag::Throttled {
                index: k.index.clone(),
                key: k.key.clone(),
                reason: reason.clone(),
                count,
            });
        }
    }

    // GSI keys hotter than the hottest base-table key.
    let hottest_base = keys
        .iter()
        .filter(|k| k.index.is_none())
        .map(|k| k.write_units_per_sec)
        .fold(0.0, f64::max);
    if hottest_base > 0.0 {
        for k in keys {
            if let Some(index) = &k.index {
                if k.write_units_per_sec > hottest_base && k.write_units >= t.min_units {
                    let by_spread = shards_for(k.write_units_per_sec, hottest_base);
                    let by_budget = shards_for(k.write_units_per_sec, write_budget);
                    flags.push(HotKeyFlag::HotGsiKey {
                        index: index.clone(),
                        key: k.key.clone(),
                        units_per_sec: k.write_units_per_sec,
                        hottest_base_units_per_sec: hottest_base,
                        suggested_n: by_spread.max(by_budget).clamp(2, u64::from(MAX_SHARDS)),
                    });
                }
            }
        }
    }

    // Uneven shards of a logical key; a shard without traffic counts 0.
    for ((index, logical), ShardGroup { n, shards }) in &groups {
        for kind in [UnitKind::Write, UnitKind::Read] {
            let units = |a: &KeyActivity| match kind {
                UnitKind::Write => a.write_units,
                UnitKind::Read => a.read_units,
            };
            let total: f64 = shards.iter().map(|(_, a)| units(a)).sum();
            let mean = total / f64::from(*n);
            if total <= 0.0 || mean < t.min_units {
                continue;
            }
            let Some((hottest_shard, max)) = shards
                .iter()
                .map(|(s, a)| (*s, units(a)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            else {
                continue;
            };
            let max_over_mean = max / mean;
            if max_over_mean > t.uneven_max_over_mean {
                flags.push(HotKeyFlag::UnevenShards {
                    index: index.map(str::to_owned),
                    logical_key: (*logical).to_owned(),
                    kind,
                    max_over_mean,
                    shards: *n,
                    hottest_shard,
                });
            }
        }
    }

    // One key dominating its index.
    let mut indexes: Vec<Option<&str>> = keys.iter().map(|k| k.index.as_deref()).collect();
    indexes.sort();
    indexes.dedup();
    for index in indexes {
        let of_index = || keys.iter().filter(move |k| k.index.as_deref() == index);
        for kind in [UnitKind::Write, UnitKind::Read] {
            let units = |k: &KeyActivity| match kind {
                UnitKind::Write => (k.write_units, k.write_share),
                UnitKind::Read => (k.read_units, k.read_share),
            };
            let active = of_index().filter(|k| units(k).0 > 0.0).count();
            let total: f64 = of_index().map(|k| units(k).0).sum();
            if active < 2 || total < t.min_units {
                continue;
            }
            for k in of_index() {
                let (_, key_share) = units(k);
                if key_share > t.dominant_share {
                    flags.push(HotKeyFlag::DominantKey {
                        index: index.map(str::to_owned),
                        key: k.key.clone(),
                        kind,
                        share: key_share,
                    });
                }
            }
        }
    }
    flags
}

/// One partition key's traffic in the window.
///
/// Shares are of the units its own index (base table or GSI) took in the window; utilization
/// is the rate over the per-key limit.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::HotKeyStats;
/// let clock = ManualClock::new();
/// let stats = HotKeyStats::new(Duration::from_secs(10)).with_clock(Arc::new(clock.clone()));
/// stats.record_write(Some("gsi1"), "DAY#2024-06-01", 3_000.0, None);
/// clock.advance(Duration::from_secs(10));
/// let report = stats.report();
/// let key = report.key(Some("gsi1"), "DAY#2024-06-01").expect("recorded");
/// assert_eq!(key.write_units_per_sec, 300.0);
/// assert_eq!(key.write_utilization, 0.3);
/// assert_eq!(key.write_share, 1.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyActivity {
    /// `None` for the base table, `Some(name)` for a GSI.
    pub index: Option<String>,
    /// The physical partition key value.
    pub key: String,
    /// The shard count of its logical key, as last recorded.
    pub shards: Option<u32>,
    /// Write units in the window.
    pub write_units: f64,
    /// Read units in the window.
    pub read_units: f64,
    /// Write units per second.
    pub write_units_per_sec: f64,
    /// Read units per second.
    pub read_units_per_sec: f64,
    /// Share of its index's write units in the window, 0.0 to 1.0.
    pub write_share: f64,
    /// Share of its index's read units in the window, 0.0 to 1.0.
    pub read_share: f64,
    /// Write units per second over the per-key write limit.
    pub write_utilization: f64,
    /// Read units per second over the per-key read limit.
    pub read_utilization: f64,
    /// Throttled requests in the window, by reason.
    pub throttles: BTreeMap<String, u64>,
}

/// Something in a [`HotKeyReport`] to act on; `Display` says what to do.
///
/// ```
/// use sharded::capacity::UnitKind;
/// use sharded::capacity::HotKeyFlag;
/// let flag = HotKeyFlag::HotGsiKey {
///     index: "gsi1".into(),
///     key: "ELECTION#2024".into(),
///     units_per_sec: 5_000.0,
///     hottest_base_units_per_sec: 500.0,
///     suggested_n: 10,
/// };
/// assert!(flag.to_string().contains("#[gsi1(..., shard = 10)]"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HotKeyFlag {
    /// A key's rate is at least the near-limit threshold of its per-key limit. For a sharded
    /// logical key only its hottest shard is flagged (per kind), so a logical key near its
    /// limit raises one flag, not `n`.
    NearLimit {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
        /// The physical partition key.
        key: String,
        /// Reads or writes.
        kind: UnitKind,
        /// Rate over the per-key limit.
        utilization: f64,
        /// `Some(n)` when the key is the hottest shard of a logical key with `n` shards.
        shards: Option<u32>,
        /// For writes: the shard count that would put the logical key at 70% of the limit.
        suggested_n: Option<u64>,
    },
    /// One key takes most of its index's units in the window.
    DominantKey {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
        /// The physical partition key.
        key: String,
        /// Reads or writes.
        kind: UnitKind,
        /// Its share of the index's units, 0.0 to 1.0.
        share: f64,
    },
    /// The shards of a logical key take very different loads.
    UnevenShards {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
        /// The logical key (the physical keys without `#<shard>`).
        logical_key: String,
        /// Reads or writes.
        kind: UnitKind,
        /// The hottest shard's units over the mean of all `shards` (idle ones count 0).
        max_over_mean: f64,
        /// The shard count.
        shards: u32,
        /// The hottest shard.
        hottest_shard: u32,
    },
    /// A GSI key takes more write units per second than the hottest base-table key.
    HotGsiKey {
        /// The GSI.
        index: String,
        /// The GSI partition key.
        key: String,
        /// Its write units per second.
        units_per_sec: f64,
        /// The hottest base-table key's write units per second.
        hottest_base_units_per_sec: f64,
        /// A shard count for the GSI key: enough to bring it to the base keys' level and
        /// under 70% of the limit.
        suggested_n: u64,
    },
    /// Requests on a key were throttled in the window.
    Throttled {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
        /// The physical partition key.
        key: String,
        /// The reason DynamoDB gave.
        reason: String,
        /// How many requests.
        count: u64,
    },
}

fn where_(index: Option<&str>, key: &str) -> String {
    match index {
        None => format!("base table key `{key}`"),
        Some(index) => format!("{index} key `{key}`"),
    }
}

fn shard_advice(index: Option<&str>, n: u64) -> String {
    match index {
        None => format!("shard it: #[pk(..., shard = \"hash(...)\", n = {n})]"),
        Some(index) => format!("shard the GSI key: #[{index}(..., shard = {n})]"),
    }
}

impl fmt::Display for HotKeyFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HotKeyFlag::NearLimit {
                index,
                key,
                kind,
                utilization,
                shards,
                suggested_n,
            } => {
                let unit = match kind {
                    UnitKind::Write => "write",
                    UnitKind::Read => "read",
                };
                write!(
                    f,
                    "near limit: {} {unit}s at {} of its per-key {unit} limit: ",
                    where_(index.as_deref(), key),
                    percent(*utilization)
                )?;
                match (kind, shards, suggested_n) {
                    (UnitKind::Read, _, _) => f.write_str(
                        "cache hot reads (DAX, or an in-process cache), use eventually \
                         consistent reads (half the units), or read single items with point \
                         lookups; raising n does not help scatter-gather reads, which hit every \
                         shard",
                    ),
                    (UnitKind::Write, Some(n), Some(s)) if *s > u64::from(*n) => {
                        write!(f, "raise n from {n} to {s}")?;
                        if *s > u64::from(MAX_SHARDS) {
                            write!(
                                f,
                                " (above the maximum of 1,000: give the key more \
                                 cardinality instead)"
                            )?;
                        }
                        Ok(())
                    }
                    (UnitKind::Write, Some(n), _) => write!(
                        f,
                        "this shard is hotter than 1/{n} of its logical key: the shard hash \
                         field has a hot value; hash on a field with more distinct values, or \
                         use shard = \"random\""
                    ),
                    (UnitKind::Write, None, s) => {
                        f.write_str(&shard_advice(index.as_deref(), s.unwrap_or(2)))
                    }
                }
            }
            HotKeyFlag::DominantKey {
                index,
                key,
                kind,
                share,
            } => write!(
                f,
                "dominant key: {} takes {} of the {} {kind} units in the window: if it is one \
                 hot logical key, shard it (see the near-limit flags for n); if it should not \
                 be hot, look for a constant or low-cardinality key value",
                where_(index.as_deref(), key),
                percent(*share),
                index.as_deref().unwrap_or("base table"),
            ),
            HotKeyFlag::UnevenShards {
                index,
                logical_key,
                kind,
                max_over_mean,
                shards,
                hottest_shard,
            } => write!(
                f,
                "uneven shards: shard {hottest_shard} of {} (n = {shards}) takes {:.1}x the mean \
                 {kind} units: the shard hash field has a hot value (one player, one device); \
                 hash on a field with more distinct values or use shard = \"random\"; raising n \
                 does not move that value's traffic",
                where_(index.as_deref(), logical_key),
                max_over_mean
            ),
            HotKeyFlag::HotGsiKey {
                index,
                key,
                units_per_sec,
                hottest_base_units_per_sec,
                suggested_n,
            } => write!(
                f,
                "hot GSI key: {} takes {} WCU/s, more than the hottest base-table key ({} WCU/s): \
                 the GSI concentrates what the base table spreads; {}",
                where_(Some(index), key),
                fmt_num(*units_per_sec),
                fmt_num(*hottest_base_units_per_sec),
                shard_advice(Some(index), *suggested_n)
            ),
            HotKeyFlag::Throttled {
                index,
                key,
                reason,
                count,
            } => write!(
                f,
                "throttled: {} {count} time{} ({reason}): it is over a per-key limit, so \
                 requests are retried (latency) or fail; see the flags above, raise n or shard \
                 the key",
                where_(index.as_deref(), key),
                if *count == 1 { "" } else { "s" }
            ),
        }
    }
}

/// The hot keys of a window, hottest first, and the flags they raise.
///
/// `Display` prints the ten hottest keys as a table, then every flag with what to do.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::HotKeyStats;
/// let clock = ManualClock::new();
/// let stats = HotKeyStats::new(Duration::from_secs(60)).with_clock(Arc::new(clock.clone()));
/// stats.record_write(None, "GAME#g1#3", 120.0, Some(10));
/// stats.record_read(None, "GAME#g1#3", 40.0, Some(10));
/// stats.record_throttle(None, "GAME#g1#3", "ProvisionedThroughputExceeded", Some(10));
/// let report = stats.report();
/// assert_eq!(report.keys.len(), 1);
/// assert_eq!(report.top(5).len(), 1);
/// let text = report.to_string();
/// assert!(text.contains("GAME#g1#3"));
/// assert!(text.contains("ProvisionedThroughputExceeded=1"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HotKeyReport {
    /// The window, rounded up to whole seconds.
    pub window: Duration,
    /// What rates were divided by: the window, or the collector's age if younger (at least
    /// one second).
    pub measured_over: Duration,
    /// The per-key limits utilization is measured against.
    pub limits: PerKeyLimits,
    /// Every key with traffic or throttles in the window, by write units then read units,
    /// highest first.
    pub keys: Vec<KeyActivity>,
    /// What to act on.
    pub flags: Vec<HotKeyFlag>,
}

/// Rows `Display` prints.
const DISPLAY_TOP: usize = 10;

impl HotKeyReport {
    /// The `k` hottest keys (fewer if fewer had traffic).
    pub fn top(&self, k: usize) -> &[KeyActivity] {
        &self.keys[..k.min(self.keys.len())]
    }

    /// The activity of one key, if it had traffic in the window.
    pub fn key(&self, index: Option<&str>, key: &str) -> Option<&KeyActivity> {
        self.keys
            .iter()
            .find(|k| k.index.as_deref() == index && k.key == key)
    }
}

impl fmt::Display for HotKeyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "hot keys over the last {} s (rates over {} s; per-key limits {} WCU/s, {} RCU/s): \
             {} key{}",
            self.window.as_secs(),
            fmt_num(self.measured_over.as_secs_f64()),
            fmt_num(self.limits.write_units_per_second),
            fmt_num(self.limits.read_units_per_second),
            self.keys.len(),
            if self.keys.len() == 1 { "" } else { "s" }
        )?;
        if !self.keys.is_empty() {
            let header = [
                "index",
                "key",
                "WCU/s",
                "RCU/s",
                "write%",
                "read%",
                "w-util",
                "r-util",
                "throttles",
            ];
            let rows: Vec<[String; 9]> = self
                .top(DISPLAY_TOP)
                .iter()
                .map(|k| {
                    let throttles: Vec<String> = k
                        .throttles
                        .iter()
                        .map(|(reason, count)| format!("{reason}={count}"))
                        .collect();
                    [
                        k.index.clone().unwrap_or_else(|| "base".to_owned()),
                        k.key.clone(),
                        fmt_num(k.write_units_per_sec),
                        fmt_num(k.read_units_per_sec),
                        percent(k.write_share),
                        percent(k.read_share),
                        percent(k.write_utilization),
                        percent(k.read_utilization),
                        if throttles.is_empty() {
                            "-".to_owned()
                        } else {
                            throttles.join(" ")
                        },
                    ]
                })
                .collect();
            let mut widths = header.map(str::len);
            for row in &rows {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 9]| -> fmt::Result {
                let mut out = String::new();
                for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                    if i > 0 {
                        out.push_str("  ");
                    }
                    // Text left, numbers right, the last column unpadded.
                    if i < 2 {
                        out.push_str(&format!("{cell:<w$}"));
                    } else if i < 8 {
                        out.push_str(&format!("{cell:>w$}"));
                    } else {
                        out.push_str(cell);
                    }
                }
                writeln!(f, "  {}", out.trim_end())
            };
            line(f, header)?;
            for row in &rows {
                line(f, row.each_ref().map(String::as_str))?;
            }
            if self.keys.len() > DISPLAY_TOP {
                writeln!(
                    f,
                    "  ... and {} more (HotKeyReport::keys)",
                    self.keys.len() - DISPLAY_TOP
                )?;
            }
        }
        if self.flags.is_empty() {
            writeln!(f, "flags: none")
        } else {
            writeln!(f, "flags:")?;
            for flag in &self.flags {
                writeln!(f, "  - {flag}")?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::clock::ManualClock;

    const SEC: Duration = Duration::from_secs(1);

    fn collector(window_secs: u64) -> (ManualClock, HotKeyStats) {
        let clock = ManualClock::new();
        let stats =
            HotKeyStats::new(Duration::from_secs(window_secs)).with_clock(Arc::new(clock.clone()));
        (clock, stats)
    }

    fn near_limit<'a>(report: &'a HotKeyReport, key: &str) -> Vec<&'a HotKeyFlag> {
        report
            .flags
            .iter()
            .filter(|f| matches!(f, HotKeyFlag::NearLimit { key: k, .. } if k == key))
            .collect()
    }

    #[test]
    fn a_hot_key_is_near_limit_and_dominant() {
        let (clock, stats) = collector(60);
        for _ in 0..60 {
            stats.record_write(None, "OPS_LOG", 900.0, None);
            stats.record_write(None, "USER#u1", 50.0, None);
            stats.record_write(None, "USER#u2", 50.0, None);
            clock.advance(SEC);
        }
        let report = stats.report();
        assert_eq!(report.measured_over, Duration::from_secs(60));
        assert_eq!(report.keys.len(), 3);
        let hot = &report.top(1)[0];
        assert_eq!(hot.key, "OPS_LOG");
        assert_eq!(hot.write_units, 54_000.0);
        assert_eq!(hot.write_units_per_sec, 900.0);
        assert!((hot.write_utilization - 0.9).abs() < 1e-12);
        assert!((hot.write_share - 0.9).abs() < 1e-12);

        let flags = near_limit(&report, "OPS_LOG");
        assert_eq!(flags.len(), 1);
        match flags[0] {
            HotKeyFlag::NearLimit {
                index: None,
                kind: UnitKind::Write,
                utilization,
                shards: None,
                suggested_n: Some(2),
                ..
            } => assert!((utilization - 0.9).abs() < 1e-12),
            other => panic!("unexpected {other:?}"),
        }
        assert!(near_limit(&report, "USER#u1").is_empty(), "5% is not near");
        let dominant: Vec<_> = report
            .flags
            .iter()
            .filter(|f| matches!(f, HotKeyFlag::DominantKey { .. }))
            .collect();
        assert_eq!(dominant.len(), 1);
        assert!(matches!(dominant[0],
            HotKeyFlag::DominantKey { index: None, key, kind: UnitKind::Write, share }
                if key == "OPS_LOG" && (*share - 0.9).abs() < 1e-12));
        let text = report.to_string();
        assert!(
            text.contains("near limit: base table key `OPS_LOG` writes at 90%"),
            "{text}"
        );
        assert!(text.contains("n = 2)]"), "{text}");
        assert!(text.contains("dominant key"), "{text}");
    }

    #[test]
    fn evenly_spread_moderate_keys_raise_no_flags() {
        let (clock, stats) = collector(60);
        for _ in 0..60 {
            for user in 0..4 {
                stats.record_write(None, &format!("USER#{user}"), 100.0, None);
                stats.record_read(None, &format!("USER#{user}"), 200.0, None);
            }
            clock.advance(SEC);
        }
        let report = stats.report();
        assert_eq!(report.keys.len(), 4);
        assert_eq!(report.flags, vec![], "{report}");
        assert!(report.to_string().contains("flags: none"));
    }

    #[test]
    fn a_single_key_is_not_dominant_and_little_traffic_is_not_dominant() {
        let (_clock, stats) = collector(60);
        stats.record_write(None, "ONLY", 500.0, None);
        stats.record_write(Some("gsi1"), "A", 3.0, None);
        stats.record_write(Some("gsi1"), "B", 1.0, None);
        let report = stats.report();
        assert!(
            !report
                .flags
                .iter()
                .any(|f| matches!(f, HotKeyFlag::DominantKey { .. })),
            "{report}"
        );
    }

    #[test]
    fn reads_near_limit_advise_caching_not_n() {
        let (clock, stats) = collector(10);
        for _ in 0..10 {
            stats.record_read(None, "GAME#g1#0", 2_700.0, Some(2));
            stats.record_read(None, "GAME#g1#1", 2_700.0, Some(2));
            clock.advance(SEC);
        }
        let report = stats.report();
        let flags = near_limit(&report, "GAME#g1#0");
        assert_eq!(flags.len(), 1);
        assert!(matches!(
            flags[0],
            HotKeyFlag::NearLimit {
                kind: UnitKind::Read,
                suggested_n: None,
                shards: Some(2),
                ..
            }
        ));
        assert!(
            near_limit(&report, "GAME#g1#1").is_empty(),
            "one flag per logical key: {report}"
        );
        let text = flags[0].to_string();
        assert!(text.contains("DAX"), "{text}");
        assert!(text.contains("raising n does not help"), "{text}");
    }

    #[test]
    fn a_hot_shard_of_a_sharded_key_suggests_a_larger_n() {
        let (clock, stats) = collector(10);
        for _ in 0..10 {
            for shard in 0..4 {
                stats.record_write(None, &format!("GAME#g1#{shard}"), 850.0, Some(4));
            }
            clock.advance(SEC);
        }
        let report = stats.report();
        // 4 x 850 = 3,400 WCU/s over a 700 WCU budget: n = 5.
        let flags = near_limit(&report, "GAME#g1#0");
        assert!(matches!(
            flags[..],
            [HotKeyFlag::NearLimit {
                suggested_n: Some(5),
                shards: Some(4),
                ..
            }]
        ));
        assert!(flags[0].to_string().contains("raise n from 4 to 5"));
        // Even shards: no uneven flag.
        assert!(!report
            .flags
            .iter()
            .any(|f| matches!(f, HotKeyFlag::UnevenShards { .. })));
    }

    #[test]
    fn uneven_shards_are_flagged_even_ones_are_not() {
        let (clock, stats) = collector(10);
        for _ in 0..10 {
            for shard in 0..4u32 {
                let units = if shard == 1 { 100.0 } else { 10.0 };
                stats.record_write(None, &format!("GAME#hot#{shard}"), units, Some(4));
                stats.record_write(None, &format!("GAME#even#{shard}"), 50.0, Some(4));
            }
            clock.advance(SEC);
        }
        let report = stats.report();
        let uneven: Vec<_> = report
            .flags
            .iter()
            .filter_map(|f| match f {
                HotKeyFlag::UnevenShards {
                    index,
                    logical_key,
                    kind,
                    max_over_mean,
                    shards,
                    hottest_shard,
                } => Some((
                    index.clone(),
                    logical_key.clone(),
                    *kind,
                    *max_over_mean,
                    *shards,
                    *hottest_shard,
                )),
                _ => None,
            })
            .collect();
        assert_eq!(uneven.len(), 1, "{report}");
        let (index, logical, kind, ratio, n, hottest) = &uneven[0];
        assert_eq!(index, &None);
        assert_eq!(logical, "GAME#hot");
        assert_eq!(*kind, UnitKind::Write);
        assert_eq!((*n, *hottest), (4, 1));
        // mean = (1,000 + 3 x 100) / 4 = 325 per shard; max 1,000.
        assert!((ratio - 1_000.0 / 325.0).abs() < 1e-9, "{ratio}");
        assert!(report
            .to_string()
            .contains("uneven shards: shard 1 of base table key `GAME#hot`"));
    }

    #[test]
    fn idle_shards_count_as_zero() {
        let (clock, stats) = collector(10);
        for _ in 0..10 {
            // n = 4, but only shards 0 and 1 get traffic: max/mean = 50 / 25 = 2.
            stats.record_write(None, "VOTES#a#0", 50.0, Some(4));
            stats.record_write(None, "VOTES#a#1", 50.0, Some(4));
            clock.advance(SEC);
        }
        let report = stats.report();
        assert!(
            report.flags.iter().any(|f| matches!(f,
            HotKeyFlag::UnevenShards { logical_key, max_over_mean, shards: 4, .. }
                if logical_key == "VOTES#a" && (*max_over_mean - 2.0).abs() < 1e-12)),
            "{report}"
        );
    }

    #[test]
    fn uneven_needs_minimum_traffic() {
        let (_clock, stats) = collector(10);
        // 3 units on one of 4 shards: far too little to judge.
        stats.record_write(None, "VOTES#a#0", 3.0, Some(4));
        let report = stats.report();
        assert!(!report
            .flags
            .iter()
            .any(|f| matches!(f, HotKeyFlag::UnevenShards { .. })));
    }

    #[test]
    fn a_gsi_key_hotter_than_the_base_keys_is_flagged() {
        let (clock, stats) = collector(10);
        for _ in 0..10 {
            for shard in 0..10 {
                stats.record_write(None, &format!("VOTES#c#{shard}"), 50.0, Some(10));
                stats.record_write(Some("gsi2"), &format!("VOTER#{shard}"), 10.0, None);
            }
            stats.record_write(Some("gsi1"), "ELECTION#2024", 500.0, None);
            clock.advance(SEC);
        }
        let report = stats.report();
        let hot: Vec<_> = report
            .flags
            .iter()
            .filter(|f| matches!(f, HotKeyFlag::HotGsiKey { .. }))
            .collect();
        assert_eq!(hot.len(), 1, "{report}");
        match hot[0] {
            HotKeyFlag::HotGsiKey {
                index,
                key,
                units_per_sec,
                hottest_base_units_per_sec,
                suggested_n,
            } => {
                assert_eq!(index, "gsi1");
                assert_eq!(key, "ELECTION#2024");
                assert_eq!(*units_per_sec, 500.0);
                assert_eq!(*hottest_base_units_per_sec, 50.0);
                assert_eq!(*suggested_n, 10);
            }
            other => panic!("unexpected {other:?}"),
        }
        let text = report.to_string();
        assert!(
            text.contains("shard the GSI key: #[gsi1(..., shard = 10)]"),
            "{text}"
        );
        // Shares are per index: the GSI key is all of gsi1's writes.
        assert_eq!(
            report
                .key(Some("gsi1"), "ELECTION#2024")
                .unwrap()
                .write_share,
            1.0
        );
        assert_eq!(report.key(None, "VOTES#c#0").unwrap().write_share, 0.1);
    }

    #[test]
    fn the_window_forgets_old_traffic() {
        let (clock, stats) = collector(60);
        stats.record_write(None, "OLD", 50_000.0, None);
        stats.record_throttle(None, "OLD", "ProvisionedThroughputExceeded", None);
        clock.advance(Duration::from_secs(30));
        stats.record_write(None, "NEW", 600.0, None);
        let before = stats.report();
        assert_eq!(before.keys.len(), 2);
        assert!(!near_limit(&before, "OLD").is_empty());

        clock.advance(Duration::from_secs(31)); // t = 61: OLD (t = 0) is out, NEW (t = 30) in
        let after = stats.report();
        assert_eq!(after.keys.len(), 1, "{after}");
        assert_eq!(after.keys[0].key, "NEW");
        assert_eq!(after.keys[0].write_units_per_sec, 10.0);
        assert!(after.flags.is_empty(), "{after}");

        clock.advance(Duration::from_secs(60));
        let empty = stats.report();
        assert!(empty.keys.is_empty());
        assert!(empty.flags.is_empty());
        assert_eq!(stats.lock().indexes.len(), 0, "idle keys are dropped");
    }

    #[test]
    fn idle_keys_are_swept_while_recording() {
        let (clock, stats) = collector(5);
        for i in 0..100 {
            stats.record_write(None, &format!("K{i}"), 1.0, None);
        }
        clock.advance(Duration::from_secs(6));
        stats.record_write(None, "LATE", 1.0, None);
        let tracked: usize = stats.lock().indexes.values().map(HashMap::len).sum();
        assert_eq!(tracked, 1);
    }

    #[test]
    fn throttles_are_counted_by_reason() {
        let (clock, stats) = collector(60);
        for _ in 0..3 {
            stats.record_throttle(Some("gsi1"), "DAY#1", "ProvisionedThroughputExceeded", None);
            clock.advance(SEC);
        }
        stats.record_throttle(Some("gsi1"), "DAY#1", "ThrottlingException", None);
        stats.record_throttle(None, "USER#1", "ThrottlingException", None);
        let report = stats.report();
        let day = report
            .key(Some("gsi1"), "DAY#1")
            .expect("throttled key is listed");
        assert_eq!(day.throttles.get("ProvisionedThroughputExceeded"), Some(&3));
        assert_eq!(day.throttles.get("ThrottlingException"), Some(&1));
        assert_eq!(day.write_units, 0.0);
        let mut throttled: Vec<_> = report
            .flags
            .iter()
            .filter_map(|f| match f {
                HotKeyFlag::Throttled {
                    index,
                    key,
                    reason,
                    count,
                } => Some((index.clone(), key.clone(), reason.clone(), *count)),
                _ => None,
            })
            .collect();
        throttled.sort();
        assert_eq!(
            throttled,
            vec![
                (None, "USER#1".into(), "ThrottlingException".into(), 1),
                (
                    Some("gsi1".into()),
                    "DAY#1".into(),
                    "ProvisionedThroughputExceeded".into(),
                    3
                ),
                (
                    Some("gsi1".into()),
                    "DAY#1".into(),
                    "ThrottlingException".into(),
                    1
                ),
            ]
        );
        let text = report.to_string();
        assert!(
            text.contains("ProvisionedThroughputExceeded=3 ThrottlingException=1"),
            "{text}"
        );
        assert!(
            text.contains("throttled: gsi1 key `DAY#1` 3 times"),
            "{text}"
        );
    }

    #[test]
    fn a_young_collector_divides_by_its_age() {
        let (clock, stats) = collector(60);
        for _ in 0..10 {
            stats.record_write(None, "K", 100.0, None);
            clock.advance(SEC);
        }
        let report = stats.report();
        assert_eq!(report.measured_over, Duration::from_secs(10));
        assert_eq!(report.keys[0].write_units_per_sec, 100.0);
        // At age 0, rates are over one second, not infinite.
        let (_c, fresh) = collector(60);
        fresh.record_write(None, "K", 100.0, None);
        assert_eq!(fresh.report().keys[0].write_units_per_sec, 100.0);
    }

    #[test]
    fn limits_and_thresholds_are_configurable() {
        let (clock, _) = collector(10);
        let stats = HotKeyStats::new(Duration::from_secs(10))
            .with_clock(Arc::new(clock.clone()))
            .with_limits(PerKeyLimits::new(100.0, 300.0))
            .with_thresholds(HotKeyThresholds {
                near_limit: 0.5,
                ..HotKeyThresholds::default()
            });
        for _ in 0..10 {
            stats.record_write(None, "K", 60.0, None);
            stats.record_read(None, "K", 100.0, None);
            clock.advance(SEC);
        }
        let report = stats.report();
        assert_eq!(
            report.limits,
            PerKeyLimits {
                write_units_per_second: 100.0,
                read_units_per_second: 300.0
            }
        );
        let flags = near_limit(&report, "K");
        assert_eq!(flags.len(), 1, "60% write flagged, 33% read not: {report}");
        assert!(matches!(
            flags[0],
            HotKeyFlag::NearLimit {
                kind: UnitKind::Write,
                ..
            }
        ));
        // Nonsense limits are ignored.
        let kept =
            HotKeyStats::new(Duration::from_secs(1)).with_limits(PerKeyLimits::new(f64::NAN, -1.0));
        assert_eq!(kept.limits, PerKeyLimits::DYNAMODB);
    }

    #[test]
    fn bad_input_does_not_panic_or_count() {
        let (clock, stats) = collector(0);
        assert_eq!(stats.window(), SEC, "a zero window is one second");
        stats.record_write(None, "K", f64::NAN, None);
        stats.record_write(None, "K", -5.0, None);
        stats.record_read(None, "K", f64::INFINITY, None);
        assert!(stats.report().keys.is_empty());
        // Sharded keys that cannot be split are reported as plain keys.
        stats.record_write(None, "NOHASH", 100.0, Some(4));
        stats.record_write(None, "X#notanumber", 100.0, Some(4));
        stats.record_write(None, "X#7", 100.0, Some(4));
        stats.record_write(None, "#0", 100.0, Some(4));
        stats.record_write(None, "Y#0", 100.0, Some(0));
        stats.record_write(None, "Z#3", 100.0, Some(u32::MAX));
        stats.record_write(Some(""), "", 1.0, None);
        let report = stats.report();
        assert_eq!(report.keys.len(), 7);
        assert!(report.to_string().contains("NOHASH"));
        // A clock going backwards adds to the newest bucket.
        clock.set(Duration::from_secs(100));
        stats.record_write(None, "B", 1.0, None);
        clock.set(Duration::from_secs(50));
        stats.record_write(None, "B", 1.0, None);
        clock.set(Duration::from_secs(100));
        assert_eq!(stats.report().key(None, "B").unwrap().write_units, 2.0);
    }

    #[test]
    fn display_lists_the_top_ten_and_counts_the_rest() {
        let (_clock, stats) = collector(60);
        for i in 0..12 {
            stats.record_write(None, &format!("K{i:02}"), f64::from(i + 1), None);
        }
        let report = stats.report();
        assert_eq!(
            report
                .top(3)
                .iter()
                .map(|k| k.key.as_str())
                .collect::<Vec<_>>(),
            ["K11", "K10", "K09"]
        );
        assert_eq!(report.top(100).len(), 12);
        let text = report.to_string();
        assert!(text.contains("index  key"), "{text}");
        assert!(text.contains("K02"));
        assert!(!text.contains("K01 "), "{text}");
        assert!(text.contains("... and 2 more"), "{text}");
    }

    #[test]
    fn recording_from_many_threads_adds_up() {
        let (_clock, stats) = collector(60);
        let stats = Arc::new(stats);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let stats = Arc::clone(&stats);
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        stats.record_write(None, "K", 1.0, None);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(stats.report().keys[0].write_units, 4_000.0);
    }
}

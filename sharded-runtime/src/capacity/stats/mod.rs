//! The hot-key collector: capacity units per partition key over a sliding window, per index,
//! recorded by the repository as requests complete.
//!
//! [`HotKeyStats`] is an opt-in collector: the repository holds an
//! `Option<Arc<HotKeyStats>>` and calls [`record_write`](HotKeyStats::record_write),
//! [`record_read`](HotKeyStats::record_read) and
//! [`record_throttle`](HotKeyStats::record_throttle) with the units DynamoDB reports
//! (`ConsumedCapacity`). What an operator reads of it (the hot-key report, its flags and
//! advice, recordings) is in sharded-ops, through `sharded::capacity::ReportHotKeys`: a
//! service records without compiling the report.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use sharded::capacity::ManualClock;
//! use sharded::capacity::{HotKeyFlag, HotKeyStats, ReportHotKeys};
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
//!
//! Layout: this file is the collector and its public API; `window` keeps the per-second
//! buckets (and is what sharded-ops reads, through [`HotKeyStats::__window`]), `thresholds`
//! when a report raises a flag, `record` what each request cost.

pub(crate) mod record;
mod thresholds;
pub(crate) mod window;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::capacity::clock::{Clock, SystemClock};
use crate::capacity::limits::PerKeyLimits;
use window::{Bucket, KeyEntry, State, Window};

/// How a key spells its shard, when it is a shard of a logical key.
pub(crate) type Shards = Option<window::Spelling>;

/// The shards of a key recorded through the public API: `#{shard}`-suffixed.
fn default_spelling(shards: Option<u32>) -> Shards {
    shards.map(|n| window::Spelling {
        n: Some(n),
        suffix: crate::keys::suffix::ShardSuffix::DEFAULT,
        per_key: None,
    })
}

/// `(logical key, shard)` of a physical key `<logical><suffix>` of a key with `n` shards.
#[doc(hidden)]
pub fn split_shard<'a>(
    key: &'a str,
    n: u32,
    suffix: &crate::keys::suffix::ShardSuffix,
) -> Option<(&'a str, u32)> {
    let (logical, shard) = suffix.split(key, n).ok()?;
    (!logical.is_empty()).then_some((logical, shard))
}

pub use thresholds::HotKeyThresholds;

/// Collects capacity units per partition key over a sliding window, for the hot-key report.
///
/// A service attaches it with `Repo::with_stats`; the report (`stats.report()`) and the
/// recording (`stats.recording()`) are methods of `sharded::capacity::ReportHotKeys`, in
/// sharded-ops (the facade's default feature `ops`).
///
/// Each key keeps one bucket per second (the window is rounded up to whole seconds, at least
/// 1), so memory is bounded by keys x window seconds; keys idle for a whole window are
/// dropped. Traffic recorded in second `s` counts until the clock passes `s + window + 1`:
/// read at a whole second, the window holds exactly the last `window` seconds; read between
/// seconds, it also holds the current, partial second. Recording takes one mutex and two
/// hash lookups, and allocates only for a key or index not seen in the window.
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
/// use sharded::capacity::{HotKeyFlag, HotKeyStats, ReportHotKeys};
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

/// Which units a record adds to: read or write.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Side {
    Read,
    Write,
}

impl HotKeyStats {
    /// A collector over the last `window` of traffic, on the system clock.
    pub fn new(window: Duration) -> Self {
        let window_secs = window
            .as_secs()
            .saturating_add(u64::from(window.subsec_nanos() > 0))
            .max(1);
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
        shards: Shards,
        apply: impl FnOnce(&mut KeyEntry, &mut Bucket),
    ) {
        let now = self.clock.now().as_secs();
        self.lock()
            .add(index, key, shards, (now, self.window_secs), apply);
    }

    /// Records `units` write units consumed on partition key `key` of `index` (`None`, or an
    /// empty name, = the base table). `shards: Some(n)` says `key` is `<logical>#<shard>` of a
    /// logical key with `n` shards, so the report can group the shards.
    pub fn record_write(&self, index: Option<&str>, key: &str, units: f64, shards: Option<u32>) {
        self.record_spelled(
            Side::Write,
            index,
            key,
            units,
            default_spelling(shards),
            None,
        );
    }

    /// [`record_write`](Self::record_write) or [`record_read`](Self::record_read) of a key
    /// whose shard suffix is known; `item`, a hash of the item's primary key, when a write
    /// names its item, so the report can tell one hot item from a hot key.
    pub(crate) fn record_spelled(
        &self,
        side: Side,
        index: Option<&str>,
        key: &str,
        units: f64,
        shards: Shards,
        item: Option<u64>,
    ) {
        if units.is_finite() && units > 0.0 {
            self.record(index, key, shards, |entry, b| {
                if let Some(item) = item {
                    entry.items.add(item);
                }
                match side {
                    Side::Write => {
                        b.write += units;
                        b.writes += 1;
                    }
                    Side::Read => {
                        b.read += units;
                        b.reads += 1;
                    }
                }
            });
        }
    }

    /// Records `units` read units consumed on partition key `key` of `index`; see
    /// [`record_write`](Self::record_write).
    pub fn record_read(&self, index: Option<&str>, key: &str, units: f64, shards: Option<u32>) {
        self.record_spelled(
            Side::Read,
            index,
            key,
            units,
            default_spelling(shards),
            None,
        );
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
        self.record_throttle_spelled(index, key, reason, default_spelling(shards));
    }

    /// [`record_throttle`](Self::record_throttle) of a key whose shard suffix is known.
    pub(crate) fn record_throttle_spelled(
        &self,
        index: Option<&str>,
        key: &str,
        reason: &str,
        shards: Shards,
    ) {
        self.record(index, key, shards, |_, b| b.add_throttles(reason, 1));
    }

    /// The collector's window, locked, for the report and recordings of sharded-ops.
    ///
    /// **Not an API**: hidden, without a stability promise, the one door through which
    /// sharded-ops reads (and, to report on a recording, fills) a collector. Use
    /// `sharded::capacity::ReportHotKeys` instead. `read` runs under the collector's lock:
    /// it must not record into the same collector.
    #[doc(hidden)]
    pub fn __window<R>(&self, read: impl FnOnce(Window<'_>) -> R) -> R {
        let now = self.clock.now();
        let mut state = self.lock();
        read(Window {
            state: &mut state,
            now,
            start: self.start,
            window_secs: self.window_secs,
            limits: self.limits,
            thresholds: self.thresholds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::clock::ManualClock;

    #[test]
    fn idle_keys_are_swept_while_recording() {
        let clock = ManualClock::new();
        let stats = HotKeyStats::new(Duration::from_secs(5)).with_clock(Arc::new(clock.clone()));
        for i in 0..100 {
            stats.record_write(None, &format!("K{i}"), 1.0, None);
        }
        clock.advance(Duration::from_secs(6));
        stats.record_write(None, "LATE", 1.0, None);
        let tracked: usize = stats.lock().indexes.values().map(HashMap::len).sum();
        assert_eq!(tracked, 1);
    }

    #[test]
    fn any_window_is_accepted_without_a_panic() {
        for window in [Duration::ZERO, Duration::from_nanos(1), Duration::MAX] {
            let clock = ManualClock::new();
            let stats = HotKeyStats::new(window).with_clock(Arc::new(clock.clone()));
            stats.record_write(None, "K", 1.0, None);
            clock.advance(Duration::from_secs(3));
            stats.record_write(None, "K", 2.0, None);
            assert!(stats.window() >= Duration::from_secs(1), "{window:?}");
            let tracked: usize = stats.lock().indexes.values().map(HashMap::len).sum();
            assert_eq!(tracked, 1, "{window:?}");
        }
    }
}

//! One partition key's traffic in a window: the row the report prints and the flags judge
//! (a leaf, so the flags and the report both read it without importing each other).

use std::collections::BTreeMap;

use sharded_keys::suffix::ShardSuffix;

/// One partition key's traffic in the window.
///
/// Shares are of the units its own index (base table or GSI) took in the window; utilization
/// is the rate over the per-key limit.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::{HotKeyStats, ReportHotKeys};
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
#[non_exhaustive]
pub struct KeyActivity {
    /// `None` for the base table, `Some(name)` for a GSI.
    pub index: Option<String>,
    /// The physical partition key value.
    pub key: String,
    /// The shard count of its logical key, as last recorded.
    pub shards: Option<u32>,
    /// How the key spells its shard after the logical key (`#{shard}` unless its entity
    /// declares another suffix).
    pub suffix: ShardSuffix,
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

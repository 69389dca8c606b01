//! One partition key's traffic in a window: the row the report prints and the flags judge
//! (a leaf, so the flags and the report both read it without importing each other).

use std::collections::BTreeMap;

use serde::Serialize;
use sharded_keys::suffix::ShardSuffix;
use sharded_runtime::__ops::PerKeyOrigin;

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
    /// The per-key layout the key belongs to, when its entity's layout is decided per key.
    pub per_key: Option<PerKeyEntity>,
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

impl KeyActivity {
    /// The count a shard of this key is split off below: `max_n` for a per-key layout (its
    /// count changes, its shards stay below it), else its shard count.
    pub(super) fn split_bound(&self) -> Option<u32> {
        self.per_key.as_ref().map(|p| p.max_n).or(self.shards)
    }
}

/// The entity whose layout is decided per key (`max_n` on `#[pk]`) a key belongs to: what
/// the report needs to name the change that widens or narrows the key.
///
/// ```
/// use sharded::capacity::PerKeyEntity;
/// let score = PerKeyEntity { entity: "Score".to_owned(), declared_n: 1, max_n: 64 };
/// assert_eq!(score.capped(100), 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PerKeyEntity {
    /// The entity's name (`Score`).
    pub entity: String,
    /// The declared `n`: the count of every key its layout directory does not list.
    pub declared_n: u32,
    /// The most shards one key may have.
    pub max_n: u32,
}

impl PerKeyEntity {
    /// `n` within what one key of this entity may have (`1..=max_n`).
    pub fn capped(&self, n: u32) -> u32 {
        n.clamp(1, self.max_n.max(1))
    }

    pub(super) fn of(origin: PerKeyOrigin) -> Self {
        PerKeyEntity {
            entity: origin.entity.to_owned(),
            declared_n: origin.declared_n,
            max_n: origin.max_n,
        }
    }
}

//! When the hot-key report raises a flag: the collector holds the thresholds it was given
//! (`HotKeyStats::with_thresholds`), so a report of it (in sharded-ops) judges by them.

/// When the hot-key report of a [`HotKeyStats`](crate::capacity::HotKeyStats) raises a flag.
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

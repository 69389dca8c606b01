//! The flag rules: when a key's traffic in the window is worth acting on.
//!
//! Each rule is one function over the report's keys; [`raise`] runs them in the order the
//! report lists their flags. What each flag advises is in the `advice` module.

use std::collections::BTreeMap;

use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::__ops::split_shard;
use sharded_runtime::capacity::{HotKeyThresholds, PerKeyLimits, UnitKind};

use crate::capacity::planner::{per_shard_budget, shards_for, DEFAULT_HEADROOM};
use crate::capacity::report::activity::KeyActivity;

/// Something in a [`HotKeyReport`](crate::capacity::HotKeyReport) to act on; `Display` says what to do.
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
        /// The rate itself: units of `kind` per second over the window.
        units_per_sec: f64,
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

/// The flags `keys` raise, rule by rule.
pub(super) fn raise(
    keys: &[KeyActivity],
    limits: PerKeyLimits,
    thresholds: &HotKeyThresholds,
) -> Vec<HotKeyFlag> {
    let traffic = Traffic::new(keys, limits, thresholds);
    let rules: [fn(&Traffic<'_>) -> Vec<HotKeyFlag>; 5] = [
        near_limit,
        throttled,
        hot_gsi_keys,
        uneven_shards,
        dominant_keys,
    ];
    rules.iter().flat_map(|rule| rule(&traffic)).collect()
}

/// What every rule reads: the keys, their logical-key groups, the limits and thresholds.
struct Traffic<'a> {
    keys: &'a [KeyActivity],
    /// Logical keys of sharded physical keys, by `(index, logical key)`.
    groups: BTreeMap<(Option<&'a str>, &'a str), ShardGroup<'a>>,
    /// What one shard should carry: the per-key write limit less the planner's headroom.
    write_budget: f64,
    thresholds: &'a HotKeyThresholds,
}

/// The recorded shards of one logical key: its shard count (the largest recorded) and the
/// activity of each shard with traffic.
#[derive(Default)]
struct ShardGroup<'a> {
    n: u32,
    shards: Vec<(u32, &'a KeyActivity)>,
}

impl<'a> Traffic<'a> {
    fn new(
        keys: &'a [KeyActivity],
        limits: PerKeyLimits,
        thresholds: &'a HotKeyThresholds,
    ) -> Self {
        let mut groups: BTreeMap<_, ShardGroup<'a>> = BTreeMap::new();
        for k in keys {
            let split = k
                .split_bound()
                .and_then(|n| split_shard(&k.key, n, &k.suffix));
            if let Some((logical, shard)) = split {
                let group = groups.entry((k.index.as_deref(), logical)).or_default();
                // A per-key count the recording did not know: at least the shards seen.
                group.n = group.n.max(k.shards.unwrap_or(shard + 1));
                group.shards.push((shard, k));
            }
        }
        Traffic {
            keys,
            groups,
            write_budget: per_shard_budget(limits.write_units_per_second, DEFAULT_HEADROOM),
            thresholds,
        }
    }

    /// The logical key `k` is a shard of, if it is one.
    fn group_of(&self, k: &'a KeyActivity) -> Option<&ShardGroup<'a>> {
        let (logical, _) = split_shard(&k.key, k.split_bound()?, &k.suffix)?;
        self.groups.get(&(k.index.as_deref(), logical))
    }
}

/// Reads or writes of a key: its units in the window and its share of its index's.
fn of_kind(k: &KeyActivity, kind: UnitKind) -> (f64, f64) {
    match kind {
        UnitKind::Write => (k.write_units, k.write_share),
        UnitKind::Read => (k.read_units, k.read_share),
    }
}

/// A key at or above the near-limit share of its per-key limit; for a sharded key only its
/// hottest shard speaks, so a logical key near its limit raises one flag, not `n`.
fn near_limit(t: &Traffic<'_>) -> Vec<HotKeyFlag> {
    let mut flags = Vec::new();
    for k in t.keys {
        let group = t.group_of(k);
        for (kind, utilization) in [
            (UnitKind::Write, k.write_utilization),
            (UnitKind::Read, k.read_utilization),
        ] {
            if utilization < t.thresholds.near_limit {
                continue;
            }
            let utilization_of = |a: &KeyActivity| match kind {
                UnitKind::Write => a.write_utilization,
                UnitKind::Read => a.read_utilization,
            };
            if let Some(group) = group {
                let hottest = group.shards.iter().map(|(_, a)| *a).max_by(|a, b| {
                    utilization_of(a)
                        .total_cmp(&utilization_of(b))
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
                    t.write_budget,
                ),
                None => shards_for(k.write_units_per_sec, t.write_budget).max(2),
            });
            flags.push(HotKeyFlag::NearLimit {
                index: k.index.clone(),
                key: k.key.clone(),
                kind,
                utilization,
                units_per_sec: match kind {
                    UnitKind::Write => k.write_units_per_sec,
                    UnitKind::Read => k.read_units_per_sec,
                },
                shards: group.map(|g| g.n),
                suggested_n,
            });
        }
    }
    flags
}

/// Every throttled request in the window, one flag per key and reason.
fn throttled(t: &Traffic<'_>) -> Vec<HotKeyFlag> {
    t.keys
        .iter()
        .flat_map(|k| {
            k.throttles
                .iter()
                .map(|(reason, &count)| HotKeyFlag::Throttled {
                    index: k.index.clone(),
                    key: k.key.clone(),
                    reason: reason.clone(),
                    count,
                })
        })
        .collect()
}

/// A GSI key taking more write units per second than the hottest base-table key (with at
/// least the minimum traffic).
fn hot_gsi_keys(t: &Traffic<'_>) -> Vec<HotKeyFlag> {
    let hottest_base = t
        .keys
        .iter()
        .filter(|k| k.index.is_none())
        .map(|k| k.write_units_per_sec)
        .fold(0.0, f64::max);
    if hottest_base <= 0.0 {
        return Vec::new();
    }
    t.keys
        .iter()
        .filter_map(|k| {
            let index = k.index.as_ref()?;
            if k.write_units_per_sec <= hottest_base || k.write_units < t.thresholds.min_units {
                return None;
            }
            let by_spread = shards_for(k.write_units_per_sec, hottest_base);
            let by_budget = shards_for(k.write_units_per_sec, t.write_budget);
            Some(HotKeyFlag::HotGsiKey {
                index: index.clone(),
                key: k.key.clone(),
                units_per_sec: k.write_units_per_sec,
                hottest_base_units_per_sec: hottest_base,
                suggested_n: by_spread.max(by_budget).clamp(2, u64::from(MAX_SHARDS)),
            })
        })
        .collect()
}

/// A logical key whose hottest shard takes more than the uneven multiple of the mean over
/// all its shards (a shard without traffic counts 0), when the mean has the minimum traffic.
fn uneven_shards(t: &Traffic<'_>) -> Vec<HotKeyFlag> {
    let mut flags = Vec::new();
    for ((index, logical), ShardGroup { n, shards }) in &t.groups {
        for kind in [UnitKind::Write, UnitKind::Read] {
            let units = |a: &KeyActivity| of_kind(a, kind).0;
            let total: f64 = shards.iter().map(|(_, a)| units(a)).sum();
            let mean = total / f64::from(*n);
            if total <= 0.0 || mean < t.thresholds.min_units {
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
            if max_over_mean > t.thresholds.uneven_max_over_mean {
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
    flags
}

/// One key taking more than the dominant share of its index's units, among at least two
/// active keys and with the minimum traffic.
fn dominant_keys(t: &Traffic<'_>) -> Vec<HotKeyFlag> {
    let mut indexes: Vec<Option<&str>> = t.keys.iter().map(|k| k.index.as_deref()).collect();
    indexes.sort();
    indexes.dedup();
    let mut flags = Vec::new();
    for index in indexes {
        let of_index = || t.keys.iter().filter(move |k| k.index.as_deref() == index);
        for kind in [UnitKind::Write, UnitKind::Read] {
            let active = of_index().filter(|k| of_kind(k, kind).0 > 0.0).count();
            let total: f64 = of_index().map(|k| of_kind(k, kind).0).sum();
            if active < 2 || total < t.thresholds.min_units {
                continue;
            }
            for k in of_index() {
                let (_, share) = of_kind(k, kind);
                if share > t.thresholds.dominant_share {
                    flags.push(HotKeyFlag::DominantKey {
                        index: index.map(str::to_owned),
                        key: k.key.clone(),
                        kind,
                        share,
                    });
                }
            }
        }
    }
    flags
}

impl HotKeyFlag {
    /// Rewrites every key the flag names with `redact(key, shard count)`.
    pub(super) fn redact_keys(&mut self, redact: impl Fn(&str, Option<u32>) -> String) {
        match self {
            HotKeyFlag::NearLimit { key, shards, .. } => *key = redact(key, *shards),
            HotKeyFlag::DominantKey { key, .. }
            | HotKeyFlag::HotGsiKey { key, .. }
            | HotKeyFlag::Throttled { key, .. } => *key = redact(key, None),
            HotKeyFlag::UnevenShards { logical_key, .. } => {
                *logical_key = redact(logical_key, None)
            }
        }
    }
}

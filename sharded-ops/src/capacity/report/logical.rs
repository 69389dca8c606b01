//! The hot-key report by logical key: every physical key of a logical key (its shards)
//! rolled up into one row with its per-second peak and p99, its throttles by reason, how
//! evenly its shards share the load, what kind of hot key it is, and what to do.
//!
//! This is what CloudWatch Contributor Insights does not give: Contributor Insights ranks
//! physical keys (`GAME#g1#3`, not the game), per minute (a burst shows as a minute's
//! average), and leaves the reading to you.

use std::collections::BTreeMap;

use serde::Serialize;

use super::activity::PerKeyEntity;
use crate::capacity::planner::{per_shard_budget, shards_for, DEFAULT_HEADROOM};
use crate::capacity::table_caps::TableCaps;
use sharded_keys::bucket::{Bucket, Granularity};
use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::__ops::split_shard;
use sharded_runtime::__ops::{ItemsWritten, KeyEntry, PerKeyOrigin, State, BASE};
use sharded_runtime::capacity::HotKeyThresholds;
use sharded_runtime::capacity::PerKeyLimits;

/// One logical key's traffic in the window, rolled up over its shards.
///
/// A sharded key (`GAME#g1#0` .. `GAME#g1#9`, recorded with its shard count) is one row
/// under its logical key `GAME#g1`; an unsharded key is its own logical key.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::{HotKeyPattern, HotKeyStats, ManualClock, ReportHotKeys};
///
/// let clock = ManualClock::new();
/// let stats = HotKeyStats::new(Duration::from_secs(60)).with_clock(Arc::new(clock.clone()));
/// for _ in 0..60 {
///     for shard in 0..4 {
///         stats.record_write(None, &format!("GAME#g1#{shard}"), 450.0, Some(4));
///     }
///     clock.advance(Duration::from_secs(1));
/// }
/// let report = stats.report();
/// let game = &report.logical_keys[0];
/// assert_eq!(game.logical_key, "GAME#g1");
/// assert_eq!(game.write.peak_units_per_sec, 1_800.0);     // the logical key, all shards
/// assert_eq!(game.write.hottest_key_peak_units_per_sec, 450.0); // one physical key
/// assert_eq!(game.spread.as_ref().unwrap().max_over_mean, 1.0);
/// assert_eq!(game.pattern, HotKeyPattern::NotHot);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LogicalKeyReport {
    /// `None` for the base table, the index name for a GSI.
    pub index: Option<String>,
    /// The logical key: the partition key without its shard suffix.
    pub logical_key: String,
    /// Its shard count, if it was recorded as sharded: for a key of a per-key layout, the
    /// key's own count (from the layout directory), as most recently recorded.
    pub shards: Option<u32>,
    /// The per-key layout it belongs to, when its entity's layout is decided per key: the
    /// advice then names the change (`layouts change`) that widens or narrows this key.
    pub per_key: Option<PerKeyEntity>,
    /// How many of its physical keys had traffic in the window.
    pub physical_keys: u32,
    /// Its writes.
    pub write: LoadSummary,
    /// Its reads.
    pub read: LoadSummary,
    /// Its throttled requests, by reason, most first.
    pub throttles: Vec<ThrottleCount>,
    /// How evenly its shards share the load (sharded keys only).
    pub spread: Option<ShardSpread>,
    /// What kind of hot key it is.
    pub pattern: HotKeyPattern,
    /// What to do about it.
    pub advice: Advice,
}

/// Writes or reads of one logical key in the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LoadSummary {
    /// Units consumed in the window, over every shard.
    pub units: f64,
    /// Requests behind them.
    pub requests: u64,
    /// Units per request: the item size's cost (a 3 KB item costs 3 write units per write, so
    /// one key takes 333 such writes/s, not 1,000). 0 without requests.
    pub units_per_request: f64,
    /// Units per second, averaged over the window.
    pub mean_units_per_sec: f64,
    /// The busiest second of the logical key, all shards together.
    pub peak_units_per_sec: f64,
    /// The 99th percentile of its seconds, all shards together (idle seconds count as 0).
    pub p99_units_per_sec: f64,
    /// The busiest second of its busiest physical key: what the per-key limit applies to.
    pub hottest_key_peak_units_per_sec: f64,
    /// The per-key limit (1,000 write or 3,000 read units/s on DynamoDB).
    pub limit_units_per_sec: f64,
    /// `hottest_key_peak_units_per_sec` over the limit.
    pub peak_utilization: f64,
    /// Seconds in which one of its physical keys went over the limit.
    pub seconds_over_limit: u32,
}

/// Throttled requests of one reason on one resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThrottleCount {
    /// DynamoDB's reason (`ThrottlingReasons`, e.g. `IndexWriteKeyRangeThroughputExceeded`),
    /// or the error code when it gave none (`ProvisionedThroughputExceededException`).
    pub reason: String,
    /// `table`, or the index name.
    pub resource: String,
    /// Requests throttled for it in the window.
    pub count: u64,
    /// What the reason means and what fixes it.
    pub meaning: String,
}

/// How evenly a sharded key's shards share its load, over all `n` shards (a shard without
/// traffic counts as 0).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ShardSpread {
    /// Which load: `write` when the key had writes, else `read`.
    pub kind: &'static str,
    /// The busiest shard's units over the mean shard's: 1.0 is perfectly even.
    pub max_over_mean: f64,
    /// Standard deviation over mean: 0.0 is perfectly even.
    pub coefficient_of_variation: f64,
    /// The busiest shard.
    pub hottest_shard: u32,
}

/// What kind of hot key a logical key is: each calls for a different fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HotKeyPattern {
    /// Under the near-limit threshold in every second, and never throttled.
    NotHot,
    /// Every write went to one item (a counter, a "latest" row): sharding the partition key
    /// does not split one item; the vote-counter pattern does.
    OneHotItem,
    /// A GSI key that is not sharded takes what the base key spreads (a status, a day, a
    /// constant): shard the GSI key.
    LowCardinalityGsiKey,
    /// The key holds a time bucket (`OPS#2026-11-22`): today's key takes every write of
    /// today. Shard inside the bucket.
    RollingTimeKey,
    /// A short burst over the limit on a key that is otherwise well under it: DynamoDB's
    /// burst capacity and split for heat absorb this within minutes; shard only if it recurs.
    TransientBurst,
    /// Hot for much of the window: shard it (or raise `n`).
    SustainedHotKey,
}

/// What the report recommends for one logical key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Advice {
    /// The recommendation, in a sentence.
    pub action: String,
    /// The shard count that holds the write peak with the planner's 30% headroom, when
    /// sharding is the fix.
    pub recommended_n: Option<u32>,
    /// What one scatter-gather read of the key costs at `recommended_n` shards: at least
    /// 0.5 read units per shard (eventually consistent), whatever the items.
    pub scatter_read_units: Option<f64>,
    /// Round trips of that read: 1 up to 2,000 shards in flight at once.
    pub scatter_read_round_trips: Option<u32>,
    /// Where the table itself caps the load below the peak (warm throughput, on-demand
    /// maximum), with the `UpdateTable` that lifts it; `None` when no table capacities were
    /// given or they suffice.
    pub table_gap: Option<String>,
}

/// Rolls the window up by logical key, hottest first (by peak utilization, then units).
pub(super) fn roll_up(
    state: &State,
    seconds: (u64, u64, f64),
    limits: PerKeyLimits,
    thresholds: &HotKeyThresholds,
) -> Vec<LogicalKeyReport> {
    let mut groups: BTreeMap<(&str, &str), Group<'_>> = BTreeMap::new();
    for (index, entries) in &state.indexes {
        for (key, entry) in entries {
            let split = entry
                .split_bound()
                .and_then(|n| split_shard(key, n, &entry.suffix));
            let (logical, shard) = match split {
                Some((logical, shard)) => (logical, Some(shard)),
                None => (key.as_str(), None),
            };
            let group = groups.entry((index.as_str(), logical)).or_default();
            if shard.is_some() {
                group.count(entry);
            }
            group.keys.push((shard, entry));
        }
    }
    let mut rows: Vec<LogicalKeyReport> = groups
        .into_iter()
        .map(|((index, logical), group)| {
            let index = (index != BASE).then(|| index.to_owned());
            group.report(index, logical, seconds, limits, thresholds)
        })
        .collect();
    rows.sort_by(|a, b| {
        let heat = |r: &LogicalKeyReport| r.write.peak_utilization.max(r.read.peak_utilization);
        heat(b)
            .total_cmp(&heat(a))
            .then(b.write.units.total_cmp(&a.write.units))
            .then(b.read.units.total_cmp(&a.read.units))
            .then_with(|| a.index.cmp(&b.index))
            .then_with(|| a.logical_key.cmp(&b.logical_key))
    });
    rows
}

/// The physical keys of one logical key.
#[derive(Default)]
struct Group<'a> {
    /// Its shard count as most recently recorded, and the second it was recorded in.
    shards: Option<u32>,
    counted_at: u64,
    per_key: Option<PerKeyOrigin>,
    keys: Vec<(Option<u32>, &'a KeyEntry)>,
}

impl Group<'_> {
    /// Counts `entry`'s shard count: the newest recording wins, as a per-key key's count
    /// changes while the window still holds its shards under the previous count (the
    /// largest count of one second, for a layout declared once).
    fn count(&mut self, entry: &KeyEntry) {
        self.per_key = self.per_key.or(entry.per_key);
        let Some(n) = entry.shards else { return };
        let at = entry.buckets.back().map_or(0, |b| b.second);
        if self.shards.is_none() || at > self.counted_at {
            (self.shards, self.counted_at) = (Some(n), at);
        } else if at == self.counted_at {
            self.shards = self.shards.max(Some(n));
        }
    }

    fn report(
        &self,
        index: Option<String>,
        logical: &str,
        (first_second, last_second, seconds): (u64, u64, f64),
        limits: PerKeyLimits,
        thresholds: &HotKeyThresholds,
    ) -> LogicalKeyReport {
        let slots = (
            first_second,
            (last_second - first_second + 1) as usize,
            seconds,
        );
        let write = self.load(slots, limits.write_units_per_second, |b| {
            (b.write, b.writes)
        });
        let read = self.load(slots, limits.read_units_per_second, |b| (b.read, b.reads));
        let measured = seconds.ceil() as usize;
        let throttles = self.throttles(index.as_deref());
        let spread = self.spread(write.units > 0.0);
        let items = self
            .keys
            .iter()
            .fold(ItemsWritten::Unknown, |acc, (_, entry)| {
                acc.merge(entry.items)
            });
        let mut row = LogicalKeyReport {
            index,
            logical_key: logical.to_owned(),
            shards: self.shards,
            per_key: self.per_key.map(PerKeyEntity::of),
            physical_keys: self.keys.len() as u32,
            write,
            read,
            throttles,
            spread,
            pattern: HotKeyPattern::NotHot,
            advice: Advice {
                action: String::new(),
                recommended_n: None,
                scatter_read_units: None,
                scatter_read_round_trips: None,
                table_gap: None,
            },
        };
        row.pattern = pattern(&row, items, measured, thresholds);
        row.advice = advise(&row, limits, None);
        row
    }

    /// One kind of load, per second from `first_second` (`slots` seconds, idle ones 0),
    /// averaged over `seconds` as the per-key rows are.
    fn load(
        &self,
        (first_second, slots, seconds): (u64, usize, f64),
        limit: f64,
        of: impl Fn(&sharded_runtime::__ops::Bucket) -> (f64, u64),
    ) -> LoadSummary {
        let mut per_second = vec![0.0; slots];
        let mut over_limit = vec![false; slots];
        let (mut units, mut requests, mut hottest) = (0.0, 0u64, 0.0f64);
        for (_, entry) in &self.keys {
            for bucket in &entry.buckets {
                let (u, r) = of(bucket);
                units += u;
                requests += r;
                hottest = hottest.max(u);
                let slot = bucket.second.checked_sub(first_second);
                if let Some(slot) = slot.map(|s| s as usize).filter(|s| *s < slots) {
                    per_second[slot] += u;
                    over_limit[slot] |= u > limit;
                }
            }
        }
        let peak = per_second.iter().copied().fold(0.0, f64::max);
        LoadSummary {
            units,
            requests,
            units_per_request: if requests > 0 {
                units / requests as f64
            } else {
                0.0
            },
            mean_units_per_sec: units / seconds,
            peak_units_per_sec: peak,
            p99_units_per_sec: percentile(&mut per_second, 0.99),
            hottest_key_peak_units_per_sec: hottest,
            limit_units_per_sec: limit,
            peak_utilization: hottest / limit,
            seconds_over_limit: over_limit.iter().filter(|o| **o).count() as u32,
        }
    }

    fn throttles(&self, index: Option<&str>) -> Vec<ThrottleCount> {
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, entry) in &self.keys {
            for bucket in &entry.buckets {
                for (reason, count) in &bucket.throttles {
                    *counts.entry(reason).or_default() += count;
                }
            }
        }
        let mut throttles: Vec<ThrottleCount> = counts
            .into_iter()
            .map(|(reason, count)| ThrottleCount {
                reason: reason.to_owned(),
                resource: index.unwrap_or("table").to_owned(),
                count,
                meaning: meaning(reason).to_owned(),
            })
            .collect();
        throttles.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
        throttles
    }

    fn spread(&self, by_writes: bool) -> Option<ShardSpread> {
        // No layout has more than 1,000 shards: a larger recorded count is bad input, and
        // the spread is over every shard, so it would also be a huge allocation.
        let n = self.shards.filter(|n| *n <= MAX_SHARDS)? as usize;
        let mut per_shard = vec![0.0; n];
        for (shard, entry) in &self.keys {
            // A shard at or past the count is the previous layout's (a per-key key that
            // was narrowed): its load is in the key's totals, not in this spread.
            let Some(shard) = shard.filter(|s| (*s as usize) < n) else {
                continue;
            };
            let units: f64 = entry
                .buckets
                .iter()
                .map(|b| if by_writes { b.write } else { b.read })
                .sum();
            per_shard[shard as usize] += units;
        }
        let mean = per_shard.iter().sum::<f64>() / n as f64;
        if mean <= 0.0 {
            return None;
        }
        let (hottest_shard, max) =
            per_shard
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f64::MIN),
                    |best, (i, u)| if u > best.1 { (i, u) } else { best },
                );
        let variance = per_shard.iter().map(|u| (u - mean).powi(2)).sum::<f64>() / n as f64;
        Some(ShardSpread {
            kind: if by_writes { "write" } else { "read" },
            max_over_mean: max / mean,
            coefficient_of_variation: variance.sqrt() / mean,
            hottest_shard: hottest_shard as u32,
        })
    }
}

/// The `q` quantile of `values` (nearest rank), 0 when empty.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// The labels, in order: the first that fits is the key's pattern.
fn pattern(
    row: &LogicalKeyReport,
    items: ItemsWritten,
    measured: usize,
    thresholds: &HotKeyThresholds,
) -> HotKeyPattern {
    let hot_writes = row.write.peak_utilization >= thresholds.near_limit;
    let hot_reads = row.read.peak_utilization >= thresholds.near_limit;
    if !hot_writes && !hot_reads && row.throttles.is_empty() {
        return HotKeyPattern::NotHot;
    }
    let gsi_key_range = row
        .throttles
        .iter()
        .any(|t| t.reason.starts_with("Index") && t.reason.contains("KeyRange"));
    if row.index.is_none() && matches!(items, ItemsWritten::One(_)) && row.write.units > 0.0 {
        return HotKeyPattern::OneHotItem;
    }
    if row.index.is_some() && (row.shards.is_none() || gsi_key_range) {
        return HotKeyPattern::LowCardinalityGsiKey;
    }
    if holds_time_bucket(&row.logical_key) {
        return HotKeyPattern::RollingTimeKey;
    }
    let load = if hot_writes { &row.write } else { &row.read };
    let brief = (load.seconds_over_limit as usize) <= (measured / 10).max(1);
    let mostly_under = load.mean_units_per_sec < 0.5 * load.limit_units_per_sec;
    if brief && mostly_under && load.peak_units_per_sec >= 3.0 * load.mean_units_per_sec {
        return HotKeyPattern::TransientBurst;
    }
    HotKeyPattern::SustainedHotKey
}

/// Whether a segment of `key` is a time bucket label (`2026-11-22`, `2026-11-22T10`,
/// `2026-W47`, `2026-11`).
fn holds_time_bucket(key: &str) -> bool {
    key.split('#').any(|segment| {
        [
            Granularity::Hour,
            Granularity::Day,
            Granularity::Week,
            Granularity::Month,
        ]
        .into_iter()
        .any(|g| Bucket::parse(g, segment).is_ok())
    })
}

/// The recommendation for `row`, with the table's capacities if known.
pub(super) fn advise(
    row: &LogicalKeyReport,
    limits: PerKeyLimits,
    caps: Option<&TableCaps>,
) -> Advice {
    let write_budget = per_shard_budget(limits.write_units_per_second, DEFAULT_HEADROOM);
    let needed =
        shards_for(row.write.peak_units_per_sec, write_budget).min(u64::from(u32::MAX)) as u32;
    let current = row.shards.unwrap_or(1);
    let shard_to = |n: u32| Advice {
        action: String::new(),
        recommended_n: Some(n),
        scatter_read_units: Some(f64::from(n) * 0.5),
        scatter_read_round_trips: Some(n.div_ceil(2 * MAX_SHARDS).max(1)),
        table_gap: None,
    };
    let where_ = match &row.index {
        None => "#[pk(..)]".to_owned(),
        Some(index) => format!("#[{index}(..)]"),
    };
    // A key of a per-key layout changes online, on its own: the advice names the command.
    let per_key = row.per_key.as_ref().filter(|_| row.index.is_none());
    let mut advice = match row.pattern {
        HotKeyPattern::NotHot
            if per_key.is_some_and(|p| current > p.declared_n && needed <= p.declared_n) =>
        {
            let declared = per_key.map_or(1, |p| p.declared_n);
            Advice {
                action: format!(
                    "widened to {current} shards and cold now: narrow it back to the declared \
                     n = {declared} online: {}",
                    change_command(row, declared)
                ),
                ..shard_to(declared)
            }
        }
        HotKeyPattern::NotHot => Advice {
            action: "nothing to do".to_owned(),
            ..shard_to(current)
        },
        HotKeyPattern::OneHotItem => Advice {
            action: format!(
                "one item takes every write: count it with the vote-counter pattern \
                 (#[counter(name = \"..\", n = {needed})] or ShardedCounter), or batch the \
                 updates; sharding the partition key does not split one item"
            ),
            ..shard_to(needed)
        },
        HotKeyPattern::LowCardinalityGsiKey => Advice {
            action: format!(
                "the GSI key is the hot one, not the base key: shard it, {where_} with \
                 shard = {}",
                needed.max(2)
            ),
            ..shard_to(needed.max(2))
        },
        HotKeyPattern::RollingTimeKey => Advice {
            action: format!(
                "a time bucket takes every write of its period: shard inside the bucket, \
                 {where_} with shard = \"random\", n = {}",
                needed.max(2)
            ),
            ..shard_to(needed.max(2))
        },
        HotKeyPattern::TransientBurst => Advice {
            action: format!(
                "a short burst: burst capacity and split for heat absorb it; shard only if it \
                 recurs (n = {needed} would hold this peak)"
            ),
            ..shard_to(needed)
        },
        HotKeyPattern::SustainedHotKey
            if row.write.peak_utilization >= row.read.peak_utilization =>
        {
            let action = if let Some(per_key) = per_key.filter(|_| needed > current) {
                let n = per_key.capped(needed);
                let mut action = format!(
                    "widen it online to {n} shards (now {current}): {}",
                    change_command(row, n)
                );
                if needed > n {
                    action.push_str(&format!(
                        "; it needs {needed}, above max_n = {}: raise max_n or give the key \
                         more cardinality",
                        per_key.max_n
                    ));
                }
                return finish(
                    Advice {
                        action,
                        ..shard_to(n)
                    },
                    row,
                    caps,
                );
            } else if needed > current {
                format!("shard the key: {where_} with n = {needed} (now {current})")
            } else {
                format!(
                    "n = {current} holds the peak on average, but one shard is hot: the shard \
                     hash has a hot value; hash a field with more distinct values, or use \
                     shard = \"random\""
                )
            };
            Advice {
                action,
                ..shard_to(needed.max(current))
            }
        }
        HotKeyPattern::SustainedHotKey => Advice {
            action: "hot reads: share them (single flight, on by default), allow a bounded \
                     staleness (Repo::with_max_staleness), read eventually consistent (half \
                     the units), or cache; more shards do not help a scatter-gather read"
                .to_owned(),
            ..shard_to(current)
        },
    };
    if advice.recommended_n.is_some_and(|n| n > MAX_SHARDS) {
        advice
            .action
            .push_str(" (above the maximum of 1,000 shards: give the key more cardinality)");
    }
    finish(advice, row, caps)
}

/// `advice` with the table's capacity gap, if the table's caps are known.
fn finish(mut advice: Advice, row: &LogicalKeyReport, caps: Option<&TableCaps>) -> Advice {
    advice.table_gap =
        caps.and_then(|caps| caps.gap(row.write.peak_units_per_sec, row.read.peak_units_per_sec));
    advice
}

/// The command that changes a per-key key's count to `n`, on the ops command line and in
/// code.
fn change_command(row: &LogicalKeyReport, n: u32) -> String {
    let entity = row
        .per_key
        .as_ref()
        .map_or("<Entity>", |p| p.entity.as_str());
    let key = &row.logical_key;
    format!(
        "`<ops> layouts change --entity {entity} --table <table> --key {key} --n {n}` \
         (or `repo.layouts().change(\"{key}\", {n})`)"
    )
}

/// What a throttling reason means, and what fixes it.
fn meaning(reason: &str) -> &'static str {
    match reason {
        "TableWriteKeyRangeThroughputExceeded" => {
            "a base-table partition key went over its per-key write limit: shard the base key"
        }
        "TableReadKeyRangeThroughputExceeded" => {
            "a base-table partition key went over its per-key read limit: share or cache the \
             hot reads"
        }
        "IndexWriteKeyRangeThroughputExceeded" => {
            "a GSI partition key went over its per-key write limit: shard the GSI key, not the \
             base key"
        }
        "IndexReadKeyRangeThroughputExceeded" => {
            "a GSI partition key went over its per-key read limit: share or cache the hot reads"
        }
        "TableWriteMaxOnDemandThroughputExceeded"
        | "TableReadMaxOnDemandThroughputExceeded"
        | "IndexWriteMaxOnDemandThroughputExceeded"
        | "IndexReadMaxOnDemandThroughputExceeded" => {
            "the table's on-demand maximum throughput: raise OnDemandThroughput with UpdateTable"
        }
        "TableWriteProvisionedThroughputExceeded"
        | "TableReadProvisionedThroughputExceeded"
        | "IndexWriteProvisionedThroughputExceeded"
        | "IndexReadProvisionedThroughputExceeded" => {
            "the provisioned capacity ran out: raise it, let auto scaling react, or use on-demand"
        }
        "TableWriteAccountLimitExceeded" | "TableReadAccountLimitExceeded" => {
            "the account's per-table quota: request a quota increase"
        }
        "UnprocessedItems" => {
            "a batch left items unprocessed for capacity: they were retried, not lost"
        }
        _ => "throttled without a specific reason: compare with the per-key and table limits",
    }
}

//! The hot-key report: each key's activity in the window and the flags raised, and how it
//! prints (a table of the hottest keys, then each flag's advice).
//!
//! Layout: this file is the report and how it is made from a collector's window (which the
//! runtime lends through a hidden door, `HotKeyStats::__window`); `activity` is a key's row,
//! `flags` the rules that raise a [`HotKeyFlag`], `advice` what each flag says to do,
//! `logical` the rollup by logical key, `recording` the window as data.

mod activity;
mod advice;
mod flags;
mod logical;
mod recording;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use sharded_keys::suffix::ShardSuffix;
use sharded_runtime::__ops::{split_shard, State, Window, BASE};
use sharded_runtime::capacity::{HotKeyStats, PerKeyLimits};

use crate::capacity::format::{fmt_num, percent};
use crate::capacity::table_caps::TableCaps;

pub use activity::{KeyActivity, PerKeyEntity};
pub use flags::HotKeyFlag;
pub use logical::{
    Advice, HotKeyPattern, LoadSummary, LogicalKeyReport, ShardSpread, ThrottleCount,
};
pub use recording::{InsightRule, RecordedKey, RecordedSecond, Recording, RecordingError};

/// The hot-key report and the recording of a collector, as its methods: `stats.report()`,
/// `stats.recording()`.
///
/// The collector ([`HotKeyStats`]) is what a service runs; what it reports is the
/// operator's (this crate), so these are a trait's methods: bring it into scope with
/// `use sharded::capacity::ReportHotKeys;`. [`HotKeyReport::of`] and [`Recording::of`] say
/// the same without the trait. Sealed: only the collector implements it.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::{HotKeyStats, ManualClock, Recording, ReportHotKeys};
///
/// let clock = ManualClock::new();
/// let stats = HotKeyStats::new(Duration::from_secs(60)).with_clock(Arc::new(clock.clone()));
/// stats.record_write(None, "OPS#2026-11-22", 900.0, None);
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(stats.report().keys[0].write_units_per_sec, 900.0);
/// assert_eq!(stats.recording(), Recording::of(&stats));
/// ```
pub trait ReportHotKeys: sealed::Collector {
    /// The keys with traffic in the window, sorted hottest first, and the flags they raise
    /// ([`HotKeyReport::of`]).
    fn report(&self) -> HotKeyReport;

    /// The traffic in the window, as a [`Recording`] (JSON with [`Recording::to_json`]):
    /// what a report is made from, to save or hand to a tool ([`Recording::of`]).
    fn recording(&self) -> Recording;
}

impl ReportHotKeys for HotKeyStats {
    fn report(&self) -> HotKeyReport {
        HotKeyReport::of(self)
    }

    fn recording(&self) -> Recording {
        Recording::of(self)
    }
}

mod sealed {
    /// Keeps [`ReportHotKeys`](super::ReportHotKeys) the collector's: methods can be added
    /// to it without breaking anyone.
    pub trait Collector {}
    impl Collector for sharded_runtime::capacity::HotKeyStats {}
}

/// The hot keys of a window, hottest first, and the flags they raise.
///
/// Made from a collector ([`HotKeyReport::of`], or `stats.report()` with [`ReportHotKeys`])
/// or a [`Recording`]. `Display` prints the ten hottest keys as a table, then every flag with
/// what to do.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::ManualClock;
/// use sharded::capacity::{HotKeyStats, ReportHotKeys};
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
#[non_exhaustive]
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
    /// Every logical key (a sharded key's shards rolled up into one row) with its peak, p99,
    /// throttles by reason, shard spread, pattern and advice; hottest first.
    pub logical_keys: Vec<LogicalKeyReport>,
    /// What to act on.
    pub flags: Vec<HotKeyFlag>,
    /// Whether the keys were replaced by hashes ([`redact`](Self::redact)).
    pub redacted: bool,
}

/// Rows `Display` prints.
const DISPLAY_TOP: usize = 10;

impl HotKeyReport {
    /// The report of `stats`: the keys with traffic in its window, sorted hottest first, and
    /// the flags they raise by its limits and thresholds (`stats.report()` says the same with
    /// [`ReportHotKeys`] in scope).
    ///
    /// ```
    /// use std::time::Duration;
    /// use sharded::capacity::{HotKeyReport, HotKeyStats};
    ///
    /// let stats = HotKeyStats::new(Duration::from_secs(60));
    /// stats.record_write(None, "GAME#g1", 5.0, None);
    /// assert_eq!(HotKeyReport::of(&stats).keys[0].key, "GAME#g1");
    /// ```
    pub fn of(stats: &HotKeyStats) -> HotKeyReport {
        stats.__window(report)
    }

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

    /// The rollup of one logical key (`GAME#g1` for the shards `GAME#g1#0..`), if it had
    /// traffic in the window.
    pub fn logical_key(&self, index: Option<&str>, logical_key: &str) -> Option<&LogicalKeyReport> {
        self.logical_keys
            .iter()
            .find(|k| k.index.as_deref() == index && k.logical_key == logical_key)
    }

    /// Compares each logical key's peak with what the table takes at once (its warm
    /// throughput, on-demand maximum or provisioned capacity: [`TableCaps::describe`] reads
    /// them) and fills in [`Advice::table_gap`](crate::capacity::Advice::table_gap) with the `UpdateTable` that lifts the cap.
    pub fn with_table_caps(mut self, caps: &TableCaps) -> Self {
        for row in &mut self.logical_keys {
            row.advice.table_gap =
                caps.gap(row.write.peak_units_per_sec, row.read.peak_units_per_sec);
        }
        self
    }

    /// The report with every key replaced by a hash (`h:` and 16 hex digits of the SHA-256
    /// of `salt` and the key), so it can leave the account: a shard suffix stays readable
    /// (`h:1f..#3`), the same key always hashes the same under one salt (reports compare),
    /// and without the salt a key cannot be confirmed by guessing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sharded::capacity::{HotKeyStats, ReportHotKeys};
    /// let stats = HotKeyStats::new(Duration::from_secs(60));
    /// stats.record_write(None, "GAME#g1#3", 10.0, Some(10));
    /// let report = stats.report().redact("our-salt");
    /// assert!(report.keys[0].key.starts_with("h:") && report.keys[0].key.ends_with("#3"));
    /// assert!(!report.to_json().contains("GAME#g1"));
    /// ```
    pub fn redact(mut self, salt: &str) -> Self {
        // A flag may not carry its key's shard count: the key's row does.
        let shards: BTreeMap<String, (Option<u32>, ShardSuffix)> = self
            .keys
            .iter()
            .map(|k| (k.key.clone(), (k.split_bound(), k.suffix)))
            .collect();
        for flag in &mut self.flags {
            flag.redact_keys(|key, n| {
                let known = shards.get(key).copied();
                let suffix = known.map_or(ShardSuffix::DEFAULT, |(_, s)| s);
                let n = known.and_then(|(n, _)| n).or(n);
                redact_key(salt, key, n.map(|n| (n, suffix)))
            });
        }
        for k in &mut self.keys {
            k.key = redact_key(salt, &k.key, k.split_bound().map(|n| (n, k.suffix)));
        }
        for row in &mut self.logical_keys {
            row.logical_key = hashed(salt, &row.logical_key);
        }
        self.redacted = true;
        self
    }

    /// The report as JSON, for tools and dashboards. The schema (version 1):
    ///
    /// ```text
    /// { "schema": 1,
    ///   "window_seconds": 60, "measured_seconds": 60.0, "redacted": false,
    ///   "limits": { "write_units_per_second": 1000.0, "read_units_per_second": 3000.0 },
    ///   "logical_keys": [ {                          // LogicalKeyReport, hottest first
    ///       "index": null | "gsi1", "logical_key": "GAME#g1", "shards": 10 | null,
    ///       "physical_keys": 10,
    ///       "write": { "units", "requests", "units_per_request", "mean_units_per_sec",
    ///                  "peak_units_per_sec", "p99_units_per_sec",
    ///                  "hottest_key_peak_units_per_sec", "limit_units_per_sec",
    ///                  "peak_utilization", "seconds_over_limit" },
    ///       "read": { ...the same },
    ///       "throttles": [ { "reason", "resource", "count", "meaning" } ],
    ///       "spread": null | { "kind": "write" | "read", "max_over_mean",
    ///                          "coefficient_of_variation", "hottest_shard" },
    ///       "pattern": "not_hot" | "one_hot_item" | "low_cardinality_gsi_key"
    ///                | "rolling_time_key" | "transient_burst" | "sustained_hot_key",
    ///       "advice": { "action", "recommended_n", "scatter_read_units",
    ///                   "scatter_read_round_trips", "table_gap" } } ],
    ///   "keys": [ { "index", "key", "shards", "write_units", "read_units",
    ///               "write_units_per_sec", "read_units_per_sec", "write_share",
    ///               "read_share", "write_utilization", "read_utilization",
    ///               "throttles": { "<reason>": count } } ],
    ///   "flags": [ "<each flag's advice, as Display prints it>" ] }
    /// ```
    ///
    /// Fields are only ever added within a schema version.
    pub fn to_json(&self) -> String {
        let keys: Vec<serde_json::Value> = self
            .keys
            .iter()
            .map(|k| {
                serde_json::json!({
                    "index": k.index,
                    "key": k.key,
                    "shards": k.shards,
                    "write_units": k.write_units,
                    "read_units": k.read_units,
                    "write_units_per_sec": k.write_units_per_sec,
                    "read_units_per_sec": k.read_units_per_sec,
                    "write_share": k.write_share,
                    "read_share": k.read_share,
                    "write_utilization": k.write_utilization,
                    "read_utilization": k.read_utilization,
                    "throttles": k.throttles,
                })
            })
            .collect();
        let json = serde_json::json!({
            "schema": 1,
            "window_seconds": self.window.as_secs(),
            "measured_seconds": self.measured_over.as_secs_f64(),
            "redacted": self.redacted,
            "limits": {
                "write_units_per_second": self.limits.write_units_per_second,
                "read_units_per_second": self.limits.read_units_per_second,
            },
            "logical_keys": self.logical_keys,
            "keys": keys,
            "flags": self.flags.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        serde_json::to_string_pretty(&json).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// The report of `stats` and its clock's time when it was made: what the layout policy
/// reads at each look.
pub(crate) fn report_at(stats: &HotKeyStats) -> (HotKeyReport, Duration) {
    stats.__window(|window| {
        let now = window.now;
        (report(window), now)
    })
}

/// A physical key redacted: the logical part hashed, a shard suffix kept.
fn redact_key(salt: &str, key: &str, shards: Option<(u32, ShardSuffix)>) -> String {
    match shards.and_then(|(n, suffix)| Some((split_shard(key, n, &suffix)?, suffix))) {
        Some(((logical, shard), suffix)) => {
            let mut out = hashed(salt, logical);
            suffix.write(&mut out, shard);
            out
        }
        None => hashed(salt, key),
    }
}

fn hashed(salt: &str, key: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(salt.as_bytes())
        .chain_update([0u8])
        .chain_update(key.as_bytes())
        .finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("h:{hex}")
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
        write_logical_keys(f, &self.logical_keys)?;
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

/// The report of a collector's window, as of its clock's now.
pub(super) fn report(window: Window<'_>) -> HotKeyReport {
    let Window {
        state,
        now,
        start,
        window_secs,
        limits,
        thresholds,
        ..
    } = window;
    let now_sec = now.as_secs();
    let age = now.saturating_sub(start).as_secs_f64();
    let seconds = age.clamp(1.0, window_secs as f64);

    // The seconds of the window, since the collector started: at a whole second the
    // current second has not begun to count, between seconds it has.
    let first = now_sec.saturating_sub(window_secs).max(start.as_secs());
    let last = if now.subsec_nanos() == 0 {
        now_sec.saturating_sub(1).max(first)
    } else {
        now_sec
    };
    state.sweep(now_sec, window_secs);
    let keys = activities(state, seconds, limits);
    let logical_keys = logical::roll_up(state, (first, last, seconds), limits, &thresholds);
    let flags = flags::raise(&keys, limits, &thresholds);
    HotKeyReport {
        window: Duration::from_secs(window_secs),
        measured_over: Duration::from_secs_f64(seconds),
        limits,
        keys,
        logical_keys,
        flags,
        redacted: false,
    }
}

/// Every key in `state` as a [`KeyActivity`], rates over `seconds` and shares per index,
/// hottest first.
fn activities(state: &State, seconds: f64, limits: PerKeyLimits) -> Vec<KeyActivity> {
    let mut keys = Vec::new();
    for (index, entries) in &state.indexes {
        let index = (index != BASE).then(|| index.clone());
        let start = keys.len();
        for (key, entry) in entries {
            let mut activity = KeyActivity {
                index: index.clone(),
                key: key.clone(),
                shards: entry.shards,
                per_key: entry.per_key.map(PerKeyEntity::of),
                suffix: entry.suffix,
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
    keys.sort_by(|a, b| {
        b.write_units
            .total_cmp(&a.write_units)
            .then(b.read_units.total_cmp(&a.read_units))
            .then_with(|| a.index.cmp(&b.index))
            .then_with(|| a.key.cmp(&b.key))
    });
    keys
}

/// `part` over `total`, 0 when there is no total.
fn share(part: f64, total: f64) -> f64 {
    if total > 0.0 {
        part / total
    } else {
        0.0
    }
}

/// The logical keys that are hot (or throttled) as a table, then each one's advice.
fn write_logical_keys(f: &mut fmt::Formatter<'_>, rows: &[LogicalKeyReport]) -> fmt::Result {
    let hot: Vec<&LogicalKeyReport> = rows
        .iter()
        .filter(|r| r.pattern != HotKeyPattern::NotHot)
        .take(DISPLAY_TOP)
        .collect();
    if hot.is_empty() {
        return writeln!(f, "hot logical keys: none");
    }
    writeln!(f, "hot logical keys (shards rolled up; peaks per second):")?;
    for r in hot {
        let where_ = r.index.as_deref().unwrap_or("base");
        let shards = r
            .shards
            .map_or("unsharded".to_owned(), |n| format!("n = {n}"));
        writeln!(
            f,
            "  {where_} {} ({shards}, {} keys): {:?}",
            r.logical_key, r.physical_keys, r.pattern
        )?;
        for (kind, load) in [("write", &r.write), ("read", &r.read)] {
            if load.units > 0.0 {
                writeln!(
                    f,
                    "    {kind}: peak {} u/s, p99 {}, mean {}; hottest key peak {} of its {} u/s                      limit ({} s over it); {} u/request",
                    fmt_num(load.peak_units_per_sec),
                    fmt_num(load.p99_units_per_sec),
                    fmt_num(load.mean_units_per_sec),
                    percent(load.peak_utilization),
                    fmt_num(load.limit_units_per_sec),
                    load.seconds_over_limit,
                    fmt_num(load.units_per_request),
                )?;
            }
        }
        if let Some(spread) = &r.spread {
            writeln!(
                f,
                "    spread ({}): max/mean {}, cv {}, hottest shard {}",
                spread.kind,
                fmt_num(spread.max_over_mean),
                fmt_num(spread.coefficient_of_variation),
                spread.hottest_shard
            )?;
        }
        for t in &r.throttles {
            writeln!(
                f,
                "    throttled {} x {} on {}: {}",
                t.count, t.reason, t.resource, t.meaning
            )?;
        }
        writeln!(f, "    advice: {}", r.advice.action)?;
        if let Some(gap) = &r.advice.table_gap {
            writeln!(f, "    table: {gap}")?;
        }
    }
    Ok(())
}

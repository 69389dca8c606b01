//! The hot-key report: each key's activity in the window and the flags raised, and how it
//! prints (a table of the hottest keys, then each flag's advice).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::capacity::format::{fmt_num, percent};
use crate::capacity::limits::PerKeyLimits;
use crate::capacity::stats::flags::HotKeyFlag;
use crate::capacity::stats::window::{State, BASE};

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
#[non_exhaustive]
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

/// Every key in `state` as a [`KeyActivity`], rates over `seconds` and shares per index,
/// hottest first.
pub(super) fn activities(state: &State, seconds: f64, limits: PerKeyLimits) -> Vec<KeyActivity> {
    let mut keys = Vec::new();
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

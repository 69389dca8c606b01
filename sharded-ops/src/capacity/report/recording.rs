//! A recorded workload: the collector's window written out (JSON), so a report can be made
//! later, elsewhere (an ops command line, a test), or from CloudWatch Contributor Insights'
//! rule reports instead of a live collector.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use sharded_runtime::__ops::{Bucket, ItemsWritten, KeyEntry, State, BASE};
use sharded_runtime::capacity::{HotKeyStats, HotKeyThresholds, ManualClock, PerKeyLimits};

use crate::capacity::report::{report, HotKeyReport};

/// The traffic a [`HotKeyStats`] holds, as data: per key, per second, units, requests and
/// throttles. Write it with [`Recording::of`] (or `stats.recording()` with
/// [`ReportHotKeys`](crate::capacity::ReportHotKeys)) and [`to_json`](Self::to_json), read
/// it back with [`from_json`](Self::from_json), and [`report`](Self::report) on it.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use sharded::capacity::{HotKeyStats, ManualClock, PerKeyLimits, Recording, ReportHotKeys};
///
/// let clock = ManualClock::new();
/// let stats = HotKeyStats::new(Duration::from_secs(60)).with_clock(Arc::new(clock.clone()));
/// stats.record_write(None, "OPS#2026-11-22", 900.0, None);
/// clock.advance(Duration::from_secs(1));
/// let saved = stats.recording().to_json();
///
/// let report = Recording::from_json(&saved)?.report(PerKeyLimits::DYNAMODB);
/// assert_eq!(report.logical_keys[0].write.peak_units_per_sec, 900.0);
/// # Ok::<(), sharded::capacity::RecordingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recording {
    /// Format version: 1.
    pub schema: u32,
    /// The collector's window, in seconds.
    pub window_seconds: u64,
    /// When recording started (seconds on the recording clock).
    pub start_second: u64,
    /// When it was written out (seconds on the recording clock, with fractions): the
    /// report is as of this moment, so a second counts once it has begun.
    pub now_seconds: f64,
    /// Every key with traffic.
    pub keys: Vec<RecordedKey>,
}

/// One physical key's recorded traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedKey {
    /// `None` for the base table, the index name for a GSI.
    pub index: Option<String>,
    /// The physical partition key.
    pub key: String,
    /// Its logical key's shard count, if sharded.
    pub shards: Option<u32>,
    /// The one item every write named (a hash of its key), `None` if writes named no item
    /// or several.
    #[serde(default)]
    pub one_item: Option<u64>,
    /// `true` if writes named several items.
    #[serde(default)]
    pub many_items: bool,
    /// Its seconds with traffic, oldest first.
    pub seconds: Vec<RecordedSecond>,
}

/// One second of one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedSecond {
    /// The second (on the recording clock).
    pub second: u64,
    /// Write units.
    #[serde(default)]
    pub write: f64,
    /// Write requests.
    #[serde(default)]
    pub writes: u64,
    /// Read units.
    #[serde(default)]
    pub read: f64,
    /// Read requests.
    #[serde(default)]
    pub reads: u64,
    /// Throttled requests by reason.
    #[serde(default)]
    pub throttles: BTreeMap<String, u64>,
}

/// A recording, or a Contributor Insights report, that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// Not JSON of the expected shape; the message says where.
    #[error("not a recording: {0}")]
    Json(#[from] serde_json::Error),
    /// A version this release does not read.
    #[error("recording schema {0} is not supported: this release reads schema 1")]
    Schema(u32),
    /// Inconsistent content (a second after `now_seconds`, a negative or non-finite unit).
    #[error("invalid recording: {0}")]
    Invalid(String),
}

/// What a Contributor Insights rule counted, for [`Recording::from_contributor_insights`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InsightRule {
    /// A "most accessed" rule (`DynamoDBContributorInsights-PKC-..`), counted as write units.
    AccessedWrites,
    /// A "most accessed" rule, counted as read units.
    AccessedReads,
    /// A "most throttled" rule (`DynamoDBContributorInsights-PKT-..`): throttled requests.
    Throttled,
}

impl Recording {
    /// The traffic in the window of `stats`, as a recording (`stats.recording()` says the
    /// same with [`ReportHotKeys`](crate::capacity::ReportHotKeys) in scope).
    ///
    /// ```
    /// use std::time::Duration;
    /// use sharded::capacity::{HotKeyStats, Recording};
    ///
    /// let stats = HotKeyStats::new(Duration::from_secs(60));
    /// stats.record_write(None, "GAME#g1", 5.0, None);
    /// assert_eq!(Recording::of(&stats).keys[0].key, "GAME#g1");
    /// ```
    pub fn of(stats: &HotKeyStats) -> Recording {
        stats.__window(|window| {
            let now = window.now;
            let state = window.state;
            state.sweep(now.as_secs(), window.window_secs);
            let mut keys: Vec<RecordedKey> = state
                .indexes
                .iter()
                .flat_map(|(index, entries)| {
                    entries
                        .iter()
                        .map(move |(key, entry)| recorded(index, key, entry))
                })
                .collect();
            keys.sort_by(|a, b| a.index.cmp(&b.index).then_with(|| a.key.cmp(&b.key)));
            Recording {
                schema: 1,
                window_seconds: window.window_secs,
                start_second: window.start.as_secs(),
                now_seconds: now.as_secs_f64(),
                keys,
            }
        })
    }

    /// The recording as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads a recording written by [`to_json`](Self::to_json), checking it.
    pub fn from_json(json: &str) -> Result<Recording, RecordingError> {
        let recording: Recording = serde_json::from_str(json)?;
        if recording.schema != 1 {
            return Err(RecordingError::Schema(recording.schema));
        }
        if !(recording.now_seconds.is_finite() && recording.now_seconds >= 0.0) {
            return Err(RecordingError::Invalid(format!(
                "now_seconds {} is not a time",
                recording.now_seconds
            )));
        }
        for key in &recording.keys {
            for s in &key.seconds {
                if s.second as f64 >= recording.now_seconds {
                    return Err(RecordingError::Invalid(format!(
                        "key `{}` has traffic at second {}, after the recording's end ({})",
                        key.key, s.second, recording.now_seconds
                    )));
                }
                if !(s.write.is_finite() && s.write >= 0.0 && s.read.is_finite() && s.read >= 0.0) {
                    return Err(RecordingError::Invalid(format!(
                        "key `{}` has negative or non-finite units at second {}",
                        key.key, s.second
                    )));
                }
            }
        }
        Ok(recording)
    }

    /// The hot-key report of this recording, measured against `limits`, as of its last
    /// second, with the default thresholds.
    pub fn report(&self, limits: PerKeyLimits) -> HotKeyReport {
        self.report_with(limits, HotKeyThresholds::default())
    }

    /// [`report`](Self::report) with other thresholds.
    pub fn report_with(&self, limits: PerKeyLimits, thresholds: HotKeyThresholds) -> HotKeyReport {
        let clock = ManualClock::new();
        clock.set(Duration::from_secs(self.start_second));
        let stats = HotKeyStats::new(Duration::from_secs(self.window_seconds))
            .with_clock(Arc::new(clock.clone()))
            .with_limits(limits)
            .with_thresholds(thresholds);
        stats.__window(|window| load(window.state, self));
        // A time no clock reaches (edited by hand) is the end of time, not a panic.
        let now = Duration::try_from_secs_f64(self.now_seconds.max(self.start_second as f64))
            .unwrap_or(Duration::MAX);
        clock.set(now);
        stats.__window(report)
    }

    /// A recording from a CloudWatch Contributor Insights rule report (the JSON of
    /// `aws cloudwatch get-insight-rule-report --rule-name DynamoDBContributorInsights-PKC-..`),
    /// for `index` (`None` = the table). Contributor Insights counts per period (a minute at
    /// best), so each datapoint is spread evenly over its period: peaks read as that period's
    /// average, which is exactly what a per-second report improves on. Its keys are physical
    /// keys; pass `shards` to roll `<logical>#<shard>` keys up (`None`: as recorded).
    pub fn from_contributor_insights(
        report_json: &str,
        index: Option<&str>,
        rule: InsightRule,
        shards: Option<u32>,
    ) -> Result<Recording, RecordingError> {
        let report: InsightReport = serde_json::from_str(report_json)?;
        let period = report.period.unwrap_or(60).max(1);
        let mut keys: BTreeMap<String, BTreeMap<u64, RecordedSecond>> = BTreeMap::new();
        let (mut first, mut last) = (u64::MAX, 0u64);
        for contributor in &report.contributors {
            let key = contributor.keys.join("#");
            if key.is_empty() {
                return Err(RecordingError::Invalid("a contributor without keys".into()));
            }
            for point in &contributor.datapoints {
                let start = parse_timestamp(&point.timestamp).ok_or_else(|| {
                    RecordingError::Invalid(format!(
                        "timestamp `{}` is not RFC 3339",
                        point.timestamp
                    ))
                })?;
                let value = point.approximate_value;
                if !(value.is_finite() && value >= 0.0) {
                    return Err(RecordingError::Invalid(format!(
                        "key `{key}` has a negative or non-finite value at {}",
                        point.timestamp
                    )));
                }
                first = first.min(start);
                last = last.max(start + period);
                let share = value / period as f64;
                let seconds = keys.entry(key.clone()).or_default();
                for (i, second) in (start..start + period).enumerate() {
                    let slot = seconds.entry(second).or_insert_with(|| RecordedSecond {
                        second,
                        write: 0.0,
                        writes: 0,
                        read: 0.0,
                        reads: 0,
                        throttles: BTreeMap::new(),
                    });
                    match rule {
                        InsightRule::AccessedWrites => slot.write += share,
                        InsightRule::AccessedReads => slot.read += share,
                        InsightRule::Throttled => {
                            // Whole requests: the period's count, spread over its first seconds.
                            let whole = value.round() as u64;
                            let here = whole / period + u64::from((i as u64) < whole % period);
                            if here > 0 {
                                *slot
                                    .throttles
                                    .entry("ContributorInsights".into())
                                    .or_default() += here;
                            }
                        }
                    }
                }
            }
        }
        if keys.is_empty() {
            first = 0;
        }
        Ok(Recording {
            schema: 1,
            window_seconds: last.saturating_sub(first).max(1),
            start_second: first,
            now_seconds: last as f64,
            keys: keys
                .into_iter()
                .map(|(key, seconds)| RecordedKey {
                    index: index.map(str::to_owned),
                    key,
                    shards,
                    one_item: None,
                    many_items: false,
                    seconds: seconds.into_values().collect(),
                })
                .collect(),
        })
    }
}

/// One key of the window as a recorded key.
fn recorded(index: &str, key: &str, entry: &KeyEntry) -> RecordedKey {
    RecordedKey {
        index: (index != BASE).then(|| index.to_owned()),
        key: key.to_owned(),
        shards: entry.shards,
        one_item: match entry.items {
            ItemsWritten::One(item) => Some(item),
            _ => None,
        },
        many_items: entry.items == ItemsWritten::Many,
        seconds: entry
            .buckets
            .iter()
            .map(|b| RecordedSecond {
                second: b.second,
                write: b.write,
                writes: b.writes,
                read: b.read,
                reads: b.reads,
                throttles: b.throttles.iter().cloned().collect(),
            })
            .collect(),
    }
}

/// Fills `state` with the recording's traffic.
fn load(state: &mut State, recording: &Recording) {
    for key in &recording.keys {
        let entries: &mut HashMap<String, KeyEntry> = state
            .indexes
            .entry(key.index.clone().unwrap_or_else(|| BASE.to_owned()))
            .or_default();
        let entry = entries.entry(key.key.clone()).or_default();
        entry.shards = key.shards;
        entry.items = match (key.one_item, key.many_items) {
            (_, true) => ItemsWritten::Many,
            (Some(item), false) => ItemsWritten::One(item),
            (None, false) => ItemsWritten::Unknown,
        };
        let mut seconds = key.seconds.clone();
        seconds.sort_by_key(|s| s.second);
        for s in seconds {
            if entry
                .buckets
                .back()
                .is_none_or(|last| last.second != s.second)
            {
                entry.buckets.push_back(Bucket {
                    second: s.second,
                    ..Bucket::default()
                });
            }
            if let Some(bucket) = entry.buckets.back_mut() {
                bucket.write += s.write;
                bucket.writes += s.writes;
                bucket.read += s.read;
                bucket.reads += s.reads;
                for (reason, count) in &s.throttles {
                    bucket.add_throttles(reason, *count);
                }
            }
        }
    }
}

/// The part of `GetInsightRuleReport`'s answer a recording needs.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InsightReport {
    #[serde(default)]
    contributors: Vec<InsightContributor>,
    /// Not in the API's answer; accepted when a tool adds the `--period` it asked for.
    #[serde(default)]
    period: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InsightContributor {
    keys: Vec<String>,
    #[serde(default)]
    datapoints: Vec<InsightDatapoint>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InsightDatapoint {
    timestamp: String,
    approximate_value: f64,
}

/// Seconds since the Unix epoch of an RFC 3339 UTC timestamp (`2026-11-22T10:00:00Z`,
/// fractions and `+00:00` accepted).
fn parse_timestamp(text: &str) -> Option<u64> {
    let (date, time) = text.split_once('T')?;
    let mut d = date.split('-');
    let (y, m, day): (i64, u32, u32) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let time = time
        .strip_suffix('Z')
        .or_else(|| time.strip_suffix("+00:00"))?;
    let time = time.split('.').next()?;
    let mut t = time.split(':');
    let (h, min, s): (u64, u64, u64) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days)
        .ok()
        .map(|days| days * 86_400 + h * 3_600 + min * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_epoch_seconds() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2026-11-22T10:00:00Z"), Some(1_795_341_600));
        assert_eq!(
            parse_timestamp("2026-11-22T10:00:00.000+00:00"),
            Some(1_795_341_600)
        );
        assert_eq!(parse_timestamp("2024-02-29T23:59:59Z"), Some(1_709_251_199));
        assert_eq!(parse_timestamp("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_timestamp("2026-11-22 10:00:00"), None);
        assert_eq!(parse_timestamp("2026-11-22T10:00:00+02:00"), None);
    }
}

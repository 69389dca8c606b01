//! Meters per partition key value (and index, and reads or writes), and per table or index
//! where an on-demand maximum is set: what a request would charge, whether every meter it
//! touches can take it, and settling estimates afterwards.
//!
//! A request states its per-key charges; [`KeyLimitEmulator::admit_all`] adds the charges
//! they make on their table's and index's maximum (see [`caps`](super::caps)), so every
//! metered operation meets the table caps without naming them.
//!
//! Each meter applies two rules, and a charge must pass both:
//!
//! - **The per-second cap**: the units charged in any 1-second window (sliding, not
//!   aligned to clock seconds) never exceed the key's limit. This is DynamoDB's hard
//!   per-partition cap, which no saved-up capacity lifts.
//! - **The long-run balance**: a key earns its limit per second, banks up to the burst
//!   window's worth, and pays for every unit, including units settled after the request was
//!   served. Since the cap already bounds what is admitted, banked credit only ever pays for
//!   such settled overspend; a key whose balance is below a charge is throttled until it has
//!   paid back. Burst can fill a key up to its per-second cap, never beyond.

use std::collections::VecDeque;
use std::time::Duration;

use super::{lock, KeyLimitEmulator};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Read,
    Write,
}

/// What a meter limits: one partition key value, or a whole table or index (its on-demand
/// maximum throughput).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Level {
    Key,
    Max,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct BucketKey {
    pub(super) table: String,
    pub(super) index: Option<String>,
    /// The partition key value (empty for a table or index meter).
    pub(super) key: String,
    pub(super) kind: Kind,
    pub(super) level: Level,
}

/// How long a charged unit counts against the per-second cap.
const CAP_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(super) struct Bucket {
    /// The long-run balance, in units.
    tokens: f64,
    updated: Duration,
    /// Units charged in the last [`CAP_WINDOW`], oldest first, and their sum.
    window: VecDeque<(Duration, f64)>,
    window_units: f64,
}

impl Bucket {
    fn new(tokens: f64, now: Duration) -> Self {
        Bucket {
            tokens,
            updated: now,
            window: VecDeque::new(),
            window_units: 0.0,
        }
    }

    /// Brings the balance and the window to `now`.
    fn refresh(&mut self, now: Duration, capacity: f64, rate: f64) {
        let elapsed = now.saturating_sub(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(capacity);
        self.updated = self.updated.max(now);
        while let Some(&(at, units)) = self.window.front() {
            if now.saturating_sub(at) < CAP_WINDOW {
                break;
            }
            self.window.pop_front();
            self.window_units -= units;
        }
        if self.window.is_empty() {
            self.window_units = 0.0;
        }
    }

    /// Whether `units` fit under the per-second cap `rate` and the balance. A charge larger
    /// than a whole second's cap (or the whole bank) passes only on an empty window (a full
    /// bank), or a large item could never be written; it is still charged in full.
    fn can_take(&self, units: f64, capacity: f64, rate: f64) -> bool {
        self.window_units + units.min(rate) <= rate && self.tokens >= units.min(capacity)
    }

    /// Takes `units` at `now` (a negative charge refunds the newest charges first).
    fn take(&mut self, units: f64, now: Duration) {
        self.tokens -= units;
        if units >= 0.0 {
            self.window.push_back((now, units));
            self.window_units += units;
            return;
        }
        let mut refund = -units;
        while refund > 0.0 {
            let Some(last) = self.window.back_mut() else {
                break;
            };
            let back = last.1.min(refund);
            last.1 -= back;
            self.window_units -= back;
            refund -= back;
            if last.1 <= 0.0 {
                self.window.pop_back();
            }
        }
    }
}

/// One unit charge a request would make.
#[derive(Debug, Clone)]
pub(super) struct Charge {
    pub(super) bucket: BucketKey,
    pub(super) units: f64,
}

impl Charge {
    /// DynamoDB's `ThrottlingReason` for this meter: resource type (`Table`, `Index`),
    /// operation type (`Read`, `Write`) and limit type (`KeyRangeThroughputExceeded`,
    /// `MaxOnDemandThroughputExceeded`), concatenated (the API reference's `ThrottlingReason`).
    pub(super) fn reason(&self) -> &'static str {
        let b = &self.bucket;
        match (b.level, b.index.is_some(), b.kind) {
            (Level::Key, false, Kind::Write) => "TableWriteKeyRangeThroughputExceeded",
            (Level::Key, true, Kind::Write) => "IndexWriteKeyRangeThroughputExceeded",
            (Level::Key, false, Kind::Read) => "TableReadKeyRangeThroughputExceeded",
            (Level::Key, true, Kind::Read) => "IndexReadKeyRangeThroughputExceeded",
            (Level::Max, false, Kind::Write) => "TableWriteMaxOnDemandThroughputExceeded",
            (Level::Max, true, Kind::Write) => "IndexWriteMaxOnDemandThroughputExceeded",
            (Level::Max, false, Kind::Read) => "TableReadMaxOnDemandThroughputExceeded",
            (Level::Max, true, Kind::Read) => "IndexReadMaxOnDemandThroughputExceeded",
        }
    }

    pub(super) fn resource(&self) -> String {
        match &self.bucket.index {
            None => format!(
                "arn:aws:dynamodb:local:000000000000:table/{}",
                self.bucket.table
            ),
            Some(index) => format!(
                "arn:aws:dynamodb:local:000000000000:table/{}/index/{index}",
                self.bucket.table
            ),
        }
    }
}

pub(super) fn charge(
    table: &str,
    index: Option<&str>,
    key: String,
    kind: Kind,
    units: f64,
) -> Charge {
    Charge {
        bucket: BucketKey {
            table: table.to_owned(),
            index: index.map(str::to_owned),
            key,
            kind,
            level: Level::Key,
        },
        units,
    }
}

/// A charge on the on-demand maximum of `table` (or its `index`).
pub(super) fn max_charge(table: &str, index: Option<&str>, kind: Kind, units: f64) -> Charge {
    let mut c = charge(table, index, String::new(), kind, units);
    c.bucket.level = Level::Max;
    c
}

impl KeyLimitEmulator {
    /// The burst capacity and the per-second cap of a meter; `None` for a table or index
    /// without a maximum of that kind (not metered).
    pub(super) fn capacity_and_rate(&self, bucket: &BucketKey) -> Option<(f64, f64)> {
        let rate = match bucket.level {
            Level::Key => match bucket.kind {
                Kind::Write => self.limits.write_units_per_second,
                Kind::Read => self.limits.read_units_per_second,
            },
            Level::Max => self.max_rate(&bucket.table, bucket.index.as_deref(), bucket.kind)?,
        };
        Some((rate * self.burst_seconds.max(1.0), rate))
    }

    /// Admits all `charges` (taking their units) or none (returning the first over its limit).
    pub(super) fn admit(&self, charges: &[Charge]) -> Result<(), Charge> {
        self.admit_all(charges)
            .map_err(|over| over.into_iter().next().expect("a refusal names a meter"))
    }

    /// Admits all `charges`, and what they charge the table and index maxima, or none:
    /// then every meter over its limit is returned, once each, in the order first charged.
    pub(super) fn admit_all(&self, charges: &[Charge]) -> Result<(), Vec<Charge>> {
        let charges = self.with_caps(charges);
        let now = self.clock.now();
        let mut buckets = lock(&self.state.buckets);
        let mut over: Vec<Charge> = Vec::new();
        for (i, (charge, capacity, rate)) in charges.iter().enumerate() {
            // Several charges of one request can land on one meter (a GSI key equal to
            // another's, two actions of a transaction on one key): they must fit together.
            if charges[..i].iter().any(|(c, ..)| c.bucket == charge.bucket) {
                continue;
            }
            let bucket = buckets
                .entry(charge.bucket.clone())
                .or_insert_with(|| Bucket::new(rate.min(*capacity), now));
            bucket.refresh(now, *capacity, *rate);
            let units: f64 = charges
                .iter()
                .filter(|(c, ..)| c.bucket == charge.bucket)
                .map(|(c, ..)| c.units)
                .sum();
            if !bucket.can_take(units, *capacity, *rate) {
                over.push(charge.clone());
            }
        }
        if !over.is_empty() {
            return Err(over);
        }
        for (charge, ..) in &charges {
            if let Some(bucket) = buckets.get_mut(&charge.bucket) {
                bucket.take(charge.units, now);
            }
        }
        Ok(())
    }

    /// Charges `units` more (or refunds, when negative) after the fact, now: settled units
    /// count against the per-second cap from now and against the balance, on the meter and
    /// on its table's or index's maximum, if one is set.
    pub(super) fn settle(&self, bucket: &BucketKey, units: f64) {
        if units == 0.0 {
            return;
        }
        let mut meters = vec![bucket.clone()];
        if bucket.level == Level::Key {
            meters
                .push(max_charge(&bucket.table, bucket.index.as_deref(), bucket.kind, 0.0).bucket);
        }
        let now = self.clock.now();
        for meter in meters {
            let Some((capacity, rate)) = self.capacity_and_rate(&meter) else {
                continue;
            };
            let mut buckets = lock(&self.state.buckets);
            let b = buckets
                .entry(meter)
                .or_insert_with(|| Bucket::new(rate.min(capacity), now));
            b.refresh(now, capacity, rate);
            b.take(units, now);
        }
    }
}

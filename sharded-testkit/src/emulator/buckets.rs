//! Meters per partition key value (and index, and reads or writes): what a request would
//! charge, whether every meter it touches can take it, and settling estimates afterwards.
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

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct BucketKey {
    pub(super) table: String,
    pub(super) index: Option<String>,
    pub(super) key: String,
    pub(super) kind: Kind,
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
    pub(super) fn reason(&self) -> &'static str {
        match (&self.bucket.index, self.bucket.kind) {
            (None, Kind::Write) => "TableWriteKeyRangeThroughputExceeded",
            (Some(_), Kind::Write) => "IndexWriteKeyRangeThroughputExceeded",
            (None, Kind::Read) => "TableReadKeyRangeThroughputExceeded",
            (Some(_), Kind::Read) => "IndexReadKeyRangeThroughputExceeded",
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
        },
        units,
    }
}

impl KeyLimitEmulator {
    fn capacity_and_rate(&self, kind: Kind) -> (f64, f64) {
        let rate = match kind {
            Kind::Write => self.limits.write_units_per_second,
            Kind::Read => self.limits.read_units_per_second,
        };
        (rate * self.burst_seconds.max(1.0), rate)
    }

    /// Admits all `charges` (taking their units) or none (returning the first over its limit).
    pub(super) fn admit(&self, charges: &[Charge]) -> Result<(), Charge> {
        let now = self.clock.now();
        let mut buckets = lock(&self.state.buckets);
        let mut over = None;
        for charge in charges {
            let (capacity, rate) = self.capacity_and_rate(charge.bucket.kind);
            let bucket = buckets
                .entry(charge.bucket.clone())
                .or_insert_with(|| Bucket::new(rate.min(capacity), now));
            bucket.refresh(now, capacity, rate);
            // Several charges of one request can land on one meter (a GSI key equal to
            // another's): they must fit together.
            let units: f64 = charges
                .iter()
                .filter(|c| c.bucket == charge.bucket)
                .map(|c| c.units)
                .sum();
            if over.is_none() && !bucket.can_take(units, capacity, rate) {
                over = Some(charge.clone());
            }
        }
        if let Some(charge) = over {
            return Err(charge);
        }
        for charge in charges {
            if let Some(bucket) = buckets.get_mut(&charge.bucket) {
                bucket.take(charge.units, now);
            }
        }
        Ok(())
    }

    /// Charges `units` more (or refunds, when negative) after the fact, now: settled units
    /// count against the per-second cap from now and against the balance.
    pub(super) fn settle(&self, bucket: &BucketKey, units: f64) {
        if units == 0.0 {
            return;
        }
        let now = self.clock.now();
        let (capacity, rate) = self.capacity_and_rate(bucket.kind);
        let mut buckets = lock(&self.state.buckets);
        let b = buckets
            .entry(bucket.clone())
            .or_insert_with(|| Bucket::new(rate.min(capacity), now));
        b.refresh(now, capacity, rate);
        b.take(units, now);
    }
}

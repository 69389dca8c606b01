//! Token buckets per partition key value (and index, and reads or writes): what a request
//! would charge, whether every bucket it touches can pay, and settling estimates afterwards.

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

#[derive(Debug)]
pub(super) struct Bucket {
    tokens: f64,
    updated: Duration,
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
            let bucket = buckets.entry(charge.bucket.clone()).or_insert(Bucket {
                tokens: rate.min(capacity),
                updated: now,
            });
            let elapsed = now.saturating_sub(bucket.updated).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
            bucket.updated = now;
            // A request never needs more than a full bucket, or a large item could never pass.
            if over.is_none() && bucket.tokens < charge.units.min(capacity) {
                over = Some(charge.clone());
            }
        }
        if let Some(charge) = over {
            return Err(charge);
        }
        for charge in charges {
            if let Some(bucket) = buckets.get_mut(&charge.bucket) {
                bucket.tokens -= charge.units;
            }
        }
        Ok(())
    }

    /// Charges `units` more (or refunds, when negative) after the fact.
    pub(super) fn settle(&self, bucket: &BucketKey, units: f64) {
        if units == 0.0 {
            return;
        }
        if let Some(b) = lock(&self.state.buckets).get_mut(bucket) {
            b.tokens -= units;
        }
    }
}

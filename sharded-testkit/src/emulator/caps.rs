//! Table- and index-level caps: an on-demand table's (or GSI's) maximum throughput, the
//! `OnDemandThroughput` a table can be created with (`MaxReadRequestUnits`,
//! `MaxWriteRequestUnits`). Every charge on a key also charges its table's (or index's)
//! maximum, in the same sliding window as the keys' (see [`buckets`](super::buckets)).

use serde_json::Value;

use super::buckets::{max_charge, Charge, Kind, Level};
use super::{lock, KeyLimitEmulator};

/// The most read and write units per second a whole table (or one GSI) may consume: an
/// on-demand table's maximum throughput. `None` for a kind means no maximum of that kind.
///
/// ```
/// use sharded_testkit::emulator::MaxThroughput;
/// let max = MaxThroughput::new(100.0, -1.0); // -1: no write maximum, as in DynamoDB
/// assert_eq!(max.read_units_per_second, Some(100.0));
/// assert_eq!(max.write_units_per_second, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct MaxThroughput {
    /// Read units per second for the whole table or index, if capped.
    pub read_units_per_second: Option<f64>,
    /// Write units per second for the whole table or index, if capped.
    pub write_units_per_second: Option<f64>,
}

impl MaxThroughput {
    /// A maximum of `read_units_per_second` and `write_units_per_second`; a value that is not
    /// a positive number (DynamoDB's `-1`, `0`, NaN) leaves that kind uncapped.
    pub fn new(read_units_per_second: f64, write_units_per_second: f64) -> Self {
        let cap = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        MaxThroughput {
            read_units_per_second: cap(read_units_per_second),
            write_units_per_second: cap(write_units_per_second),
        }
    }

    /// An `OnDemandThroughput` object of a `CreateTable` request (`None` when it caps
    /// nothing).
    fn from_request(on_demand: &Value) -> Option<Self> {
        let units = |field: &str| on_demand[field].as_f64().unwrap_or(-1.0);
        let max = MaxThroughput::new(units("MaxReadRequestUnits"), units("MaxWriteRequestUnits"));
        (max != MaxThroughput::default()).then_some(max)
    }

    fn rate(&self, kind: Kind) -> Option<f64> {
        match kind {
            Kind::Read => self.read_units_per_second,
            Kind::Write => self.write_units_per_second,
        }
    }
}

/// A table (`None`) or one of its GSIs: where a maximum is set.
pub(super) type CapTarget = (String, Option<String>);

impl KeyLimitEmulator {
    /// Caps the whole table `table` at `read_units_per_second` and `write_units_per_second`
    /// (an on-demand table's maximum throughput; a value that is not positive leaves that
    /// kind uncapped). Requests that would take the table over it are throttled with
    /// `TableReadMaxOnDemandThroughputExceeded` or `TableWriteMaxOnDemandThroughputExceeded`,
    /// even when no key is over its own limit. Base-table units count; a GSI's do not (see
    /// [`with_index_max`](Self::with_index_max)).
    ///
    /// Tables created through an emulated client with `OnDemandThroughput` get theirs
    /// without this call.
    ///
    /// ```
    /// use sharded::capacity::PerKeyLimits;
    /// use sharded_testkit::emulator::{KeyLimitEmulator, MaxThroughput};
    ///
    /// let emulator = KeyLimitEmulator::new(PerKeyLimits::DYNAMODB).with_table_max("orders", 500.0, 200.0);
    /// assert_eq!(emulator.max_throughput("orders", None), Some(MaxThroughput::new(500.0, 200.0)));
    /// assert_eq!(emulator.max_throughput("other", None), None);
    /// ```
    pub fn with_table_max(
        self,
        table: &str,
        read_units_per_second: f64,
        write_units_per_second: f64,
    ) -> Self {
        let max = MaxThroughput::new(read_units_per_second, write_units_per_second);
        self.set_max((table.to_owned(), None), max);
        self
    }

    /// Caps the GSI `index` of `table` as a whole ([`with_table_max`](Self::with_table_max)
    /// for one index): throttles name `IndexReadMaxOnDemandThroughputExceeded` or
    /// `IndexWriteMaxOnDemandThroughputExceeded` and the index's ARN.
    ///
    /// ```
    /// use sharded::capacity::PerKeyLimits;
    /// use sharded_testkit::emulator::{KeyLimitEmulator, MaxThroughput};
    ///
    /// let emulator = KeyLimitEmulator::new(PerKeyLimits::DYNAMODB).with_index_max("orders", "gsi1", -1.0, 50.0);
    /// assert_eq!(emulator.max_throughput("orders", Some("gsi1")), Some(MaxThroughput::new(-1.0, 50.0)));
    /// ```
    pub fn with_index_max(
        self,
        table: &str,
        index: &str,
        read_units_per_second: f64,
        write_units_per_second: f64,
    ) -> Self {
        let max = MaxThroughput::new(read_units_per_second, write_units_per_second);
        self.set_max((table.to_owned(), Some(index.to_owned())), max);
        self
    }

    /// The maximum throughput enforced on `table` (or its GSI `index`), if any.
    pub fn max_throughput(&self, table: &str, index: Option<&str>) -> Option<MaxThroughput> {
        lock(&self.state.caps)
            .get(&(table.to_owned(), index.map(str::to_owned)))
            .copied()
    }

    fn set_max(&self, target: CapTarget, max: MaxThroughput) {
        let mut caps = lock(&self.state.caps);
        if max == MaxThroughput::default() {
            caps.remove(&target);
        } else {
            caps.insert(target, max);
        }
    }

    /// Learns the maxima a `CreateTable` request sets (`OnDemandThroughput` on the table and
    /// on each GSI).
    pub(super) fn learn_caps(&self, body: &Value) {
        let Some(table) = body["TableName"].as_str() else {
            return;
        };
        if let Some(max) = MaxThroughput::from_request(&body["OnDemandThroughput"]) {
            self.set_max((table.to_owned(), None), max);
        }
        for gsi in body["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (Some(index), Some(max)) = (
                gsi["IndexName"].as_str(),
                MaxThroughput::from_request(&gsi["OnDemandThroughput"]),
            ) else {
                continue;
            };
            self.set_max((table.to_owned(), Some(index.to_owned())), max);
        }
    }

    /// The per-second maximum of `kind` on `table` (or its `index`), if one is set.
    pub(super) fn max_rate(&self, table: &str, index: Option<&str>, kind: Kind) -> Option<f64> {
        self.max_throughput(table, index)?.rate(kind)
    }

    /// `charges` with each one's burst capacity and rate, plus what the per-key charges add
    /// up to on each capped table or index (unless the request charged that maximum itself,
    /// as a scan does with the units DynamoDB reports). Meters without a limit are left out.
    pub(super) fn with_caps(&self, charges: &[Charge]) -> Vec<(Charge, f64, f64)> {
        let mut metered = Vec::new();
        let mut derived: Vec<Charge> = Vec::new();
        for c in charges {
            let Some((capacity, rate)) = self.capacity_and_rate(&c.bucket) else {
                continue;
            };
            metered.push((c.clone(), capacity, rate));
            if c.bucket.level != Level::Key {
                continue;
            }
            let max = max_charge(
                &c.bucket.table,
                c.bucket.index.as_deref(),
                c.bucket.kind,
                c.units,
            );
            if charges.iter().any(|e| e.bucket == max.bucket) {
                continue;
            }
            match derived.iter_mut().find(|d| d.bucket == max.bucket) {
                Some(d) => d.units += c.units,
                None => derived.push(max),
            }
        }
        for d in derived {
            if let Some((capacity, rate)) = self.capacity_and_rate(&d.bucket) {
                metered.push((d, capacity, rate));
            }
        }
        metered
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use sharded_runtime::capacity::ManualClock;

    use super::super::buckets::charge;
    use super::super::tests::{emulator, put, sized};
    use super::*;

    #[test]
    fn the_table_cap_throttles_what_no_key_limit_would() {
        let clock = ManualClock::new();
        let e = emulator(&clock).with_table_max("t", 60.0, 25.0); // keys: 10 WCU/s each
        let item = |pk: String| json!({"pk": {"S": pk}});
        // Five keys at 5 units each: every key at half its limit, the table at its 25.
        for k in 0..5 {
            for _ in 0..5 {
                put(&e, item(format!("k{k}"))).unwrap();
            }
        }
        let over = put(&e, item("fresh".into())).unwrap_err();
        assert_eq!(over.reason(), "TableWriteMaxOnDemandThroughputExceeded");
        assert_eq!(
            over.resource(),
            "arn:aws:dynamodb:local:000000000000:table/t"
        );
        assert_eq!(
            e.max_throughput("t", None),
            Some(MaxThroughput::new(60.0, 25.0))
        );
        clock.advance(Duration::from_secs(1));
        assert!(put(&e, item("fresh".into())).is_ok(), "a second later");

        // Reads: two keys each under their 30, the table over its 60.
        let read = |pk: &str, units| [charge("t", None, pk.into(), Kind::Read, units)];
        e.admit(&read("a", 30.0)).unwrap();
        e.admit(&read("b", 29.0)).unwrap();
        let over = e.admit(&read("c", 2.0)).unwrap_err();
        assert_eq!(over.reason(), "TableReadMaxOnDemandThroughputExceeded");
        // Settled units count against the table too.
        clock.advance(Duration::from_secs(1));
        e.admit(&read("a", 1.0)).unwrap();
        e.settle(&read("a", 0.0)[0].bucket, 59.0);
        assert!(e.admit(&read("d", 1.0)).is_err(), "60 of 60 settled");
    }

    #[test]
    fn an_index_cap_counts_only_that_index() {
        let clock = ManualClock::new();
        let e = emulator(&clock).with_index_max("t", "gsi1", -1.0, 3.0);
        assert!(put(&e, sized("a", 1, Some("g1"))).is_ok());
        assert!(put(&e, sized("b", 1, Some("g2"))).is_ok());
        assert!(put(&e, sized("c", 1, Some("g3"))).is_ok());
        let over = put(&e, sized("d", 1, Some("g4"))).unwrap_err();
        assert_eq!(over.reason(), "IndexWriteMaxOnDemandThroughputExceeded");
        assert_eq!(
            over.resource(),
            "arn:aws:dynamodb:local:000000000000:table/t/index/gsi1"
        );
        assert!(
            put(&e, sized("e", 1, None)).is_ok(),
            "base writes are not capped"
        );
    }

    #[test]
    fn maxima_are_learned_from_create_table() {
        let e = emulator(&ManualClock::new());
        e.learn_caps(&json!({
            "TableName": "capped",
            "OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": -1},
            "GlobalSecondaryIndexes": [
                {"IndexName": "gsi1", "OnDemandThroughput": {"MaxWriteRequestUnits": 7}},
                {"IndexName": "gsi2"},
            ],
        }));
        assert_eq!(
            e.max_throughput("capped", None),
            Some(MaxThroughput::new(100.0, -1.0))
        );
        assert_eq!(
            e.max_throughput("capped", Some("gsi1")),
            Some(MaxThroughput::new(-1.0, 7.0))
        );
        assert_eq!(e.max_throughput("capped", Some("gsi2")), None);
        assert_eq!(
            e.max_throughput("t", None),
            None,
            "opt-in: no maximum unless set"
        );
    }
}

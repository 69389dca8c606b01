//! Scans: each page charged to the partition keys of the items it returns, and in full to
//! the table's (or index's) maximum.

use serde_json::{json, Value};
use sharded_runtime::capacity::{read_units, Consistency, READ_UNIT_BYTES};

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use super::buckets::{charge, max_charge, Charge, Kind};
use super::requests::{size_of, TableKeys};
use super::wire::{key_text, replace_body, response_json, throttled_response};
use super::{lock, KeyLimitEmulator};
use crate::intercept::Next;
use crate::response::json_response;

/// What a scan page costs: on each partition key (of the base table, or of the index
/// scanned), its returned items' share of the page, `bytes / 4 KB` read units (halved when
/// eventually consistent), unrounded, as the page is rounded once as a whole; and on the
/// table's (or index's) maximum, the page's whole cost, `consumed` when DynamoDB Local
/// reported it, else `read_units` of the items' total size.
///
/// Items without the partition key attribute (projected away) are not charged to a key.
pub(super) fn scan_charges(
    table: &str,
    index: Option<&str>,
    attr: &str,
    items: &[Value],
    consistency: Consistency,
    consumed: Option<f64>,
) -> Vec<Charge> {
    let per_byte = read_units(READ_UNIT_BYTES, consistency) / READ_UNIT_BYTES as f64;
    let mut charges: Vec<Charge> = Vec::new();
    let mut total = 0;
    for item in items {
        let bytes = size_of(Some(item));
        total += bytes;
        let Some(pk) = key_text(&item[attr]) else {
            continue;
        };
        let units = bytes as f64 * per_byte;
        match charges.iter_mut().find(|c| c.bucket.key == pk) {
            Some(c) => c.units += units,
            None => charges.push(charge(table, index, pk, Kind::Read, units)),
        }
    }
    let page = consumed.unwrap_or_else(|| read_units(total, consistency));
    charges.push(max_charge(table, index, Kind::Read, page));
    charges
}

impl KeyLimitEmulator {
    /// Serves a `Scan` page, then admits it on what it returned ([`scan_charges`]): reads
    /// change nothing, so a page that would take a key (or the table) over its limit is
    /// answered with DynamoDB's throttle instead of the items. The page is read with
    /// `ReturnConsumedCapacity`, removed from the answer when the caller did not ask for it.
    pub(super) async fn scan(
        &self,
        next: Next,
        mut request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let Some(table) = body["TableName"].as_str().map(str::to_owned) else {
            return next.send(request).await;
        };
        let Some(keys) = self.table(&table) else {
            lock(&self.state.counts).unmetered += 1;
            return next.send(request).await;
        };
        let index = body["IndexName"].as_str().map(str::to_owned);
        let Some(attr) = partition_attr(&keys, index.as_deref()) else {
            lock(&self.state.counts).unmetered += 1;
            return next.send(request).await;
        };
        let consistency =
            Consistency::of_consistent_read(body["ConsistentRead"].as_bool().unwrap_or(false));
        let asked = body
            .get("ReturnConsumedCapacity")
            .is_some_and(|v| v != "NONE");
        if !asked {
            body["ReturnConsumedCapacity"] = json!("TOTAL");
            replace_body(&mut request, &body);
        }
        let response = next.send(request).await?;
        let status = response.status().as_u16();
        let (response, json) = response_json(response).await?;
        let Some(mut json) = json else {
            return Ok(response);
        };
        let items: Vec<Value> = json["Items"].as_array().cloned().unwrap_or_default();
        let consumed = json["ConsumedCapacity"]["CapacityUnits"].as_f64();
        let charges = scan_charges(
            &table,
            index.as_deref(),
            &attr,
            &items,
            consistency,
            consumed,
        );
        if let Err(over) = self.admit(&charges) {
            self.count(0, std::slice::from_ref(&over));
            return Ok(throttled_response(&over));
        }
        self.count(1, &[]);
        if asked {
            return Ok(response);
        }
        if let Some(map) = json.as_object_mut() {
            map.remove("ConsumedCapacity");
        }
        Ok(json_response(status, &json))
    }
}

/// The partition key attribute of `index` (or of the base table).
fn partition_attr(keys: &TableKeys, index: Option<&str>) -> Option<String> {
    match index {
        None => Some(keys.partition_key.clone()),
        Some(i) => keys
            .indexes
            .iter()
            .find(|(n, _)| n == i)
            .map(|(_, a)| a.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sharded_runtime::capacity::ManualClock;

    use super::super::buckets::Level;
    use super::super::tests::{emulator, units_on};
    use super::*;

    #[test]
    fn a_scan_page_is_charged_to_the_keys_it_returns() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 30 read units/s per key
                                  // Three 2 KB items on `a` (6 KB: 1.5 units strong), one 4 KB item on `b`.
        let two_kb =
            |pk: &str| json!({"pk": {"S": pk}, "d": {"S": "x".repeat(2048 - 3 - pk.len())}});
        let items = vec![
            two_kb("a"),
            two_kb("a"),
            two_kb("a"),
            json!({"pk": {"S": "b"}, "d": {"S": "x".repeat(4096 - 4)}}),
            json!({"d": {"S": "projected without its key"}}),
        ];
        let strong = scan_charges("t", None, "pk", &items, Consistency::Strong, Some(3.0));
        let per_key: Vec<_> = strong
            .iter()
            .filter(|c| c.bucket.level == Level::Key)
            .cloned()
            .collect();
        assert_eq!(units_on(&per_key), vec![(None, "a", 1.5), (None, "b", 1.0)]);
        let page = strong.last().unwrap();
        assert_eq!(
            (page.bucket.level, page.units),
            (Level::Max, 3.0),
            "the table pays what DynamoDB reported"
        );
        let eventual = scan_charges("t", None, "pk", &items, Consistency::Eventual, None);
        assert_eq!(
            units_on(&eventual[..2]),
            vec![(None, "a", 0.75), (None, "b", 0.5)]
        );
        assert_eq!(eventual[2].units, 1.5, "10 KB rounded up to 12 KB, halved");

        // A key that has spent 29 of its 30 units cannot take the page's 1.5.
        let read = |units| [charge("t", None, "a".into(), Kind::Read, units)];
        e.admit(&read(29.0)).unwrap();
        let over = e.admit(&strong).unwrap_err();
        assert_eq!(over.reason(), "TableReadKeyRangeThroughputExceeded");
        assert_eq!(over.bucket.key, "a");
        // A scan of the GSI is charged to the GSI's keys: 1 KB eventually consistent.
        let one_kb = json!({"pk": {"S": "x"}, "g": {"S": "g1"}, "d": {"S": "x".repeat(1024 - 7)}});
        let on_index = scan_charges(
            "t",
            Some("gsi1"),
            "g",
            &[one_kb],
            Consistency::Eventual,
            None,
        );
        assert_eq!(units_on(&on_index[..1]), vec![(Some("gsi1"), "g1", 0.125)]);
    }
}

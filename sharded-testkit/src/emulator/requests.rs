//! Each metered operation as charges: single-item writes and reads, queries (on the base
//! table or a GSI), and batches, whose throttled entries come back unprocessed.

use std::collections::HashMap;

use serde_json::{json, Map, Value};
use sharded_runtime::capacity::{
    item_size, read_units, transactional_write_units, write_units, Consistency,
};

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use super::buckets::{charge, BucketKey, Charge, Kind};
use super::wire::{
    key_text, merge_unprocessed, query_partition_value, read_consumed, replace_body, response_json,
    throttled_response,
};
use super::{lock, KeyLimitEmulator};
use crate::intercept::{self, Next};
use crate::item::item_from_json;
use crate::response::json_response;

#[derive(Debug, Clone)]
pub(super) struct TableKeys {
    pub(super) partition_key: String,
    pub(super) sort_key: Option<String>,
    /// Index name -> its partition key attribute.
    pub(super) indexes: Vec<(String, String)>,
}

/// How a metered batch was split: what went on, what came back throttled.
#[derive(Default)]
struct BatchSplit {
    /// Throttled entries per table, in the request's shape.
    unprocessed: Map<String, Value>,
    throttled: Vec<Charge>,
    admitted: u64,
    /// Entries left in the request (admitted or unmetered).
    kept: usize,
}

impl KeyLimitEmulator {
    pub(super) fn count(&self, admitted: u64, throttled: &[Charge]) {
        let mut counts = lock(&self.state.counts);
        counts.admitted += admitted;
        counts.throttled += throttled.len() as u64;
        for charge in throttled {
            *counts
                .by_reason
                .entry(charge.reason().to_owned())
                .or_default() += 1;
        }
    }

    pub(super) fn table(&self, name: &str) -> Option<TableKeys> {
        lock(&self.state.tables).get(name).cloned()
    }

    pub(super) fn learn(&self, body: &Value) {
        let Some(table) = body["TableName"].as_str() else {
            return;
        };
        let key = |schema: &Value, kind: &str| {
            schema
                .as_array()?
                .iter()
                .find(|k| k["KeyType"] == kind)?
                .get("AttributeName")?
                .as_str()
                .map(str::to_owned)
        };
        let hash = |schema: &Value| key(schema, "HASH");
        let Some(partition_key) = hash(&body["KeySchema"]) else {
            return;
        };
        let sort_key = key(&body["KeySchema"], "RANGE");
        let indexes = body["GlobalSecondaryIndexes"]
            .as_array()
            .map(|gsis| {
                gsis.iter()
                    .filter_map(|g| {
                        Some((g["IndexName"].as_str()?.to_owned(), hash(&g["KeySchema"])?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        lock(&self.state.tables).insert(
            table.to_owned(),
            TableKeys {
                partition_key,
                sort_key,
                indexes,
            },
        );
    }

    /// The write charges of putting `item` into `table` when no item had its key.
    #[cfg(test)]
    pub(super) fn put_charges(
        &self,
        table: &str,
        keys: &TableKeys,
        item: &Value,
        transactional: bool,
    ) -> Vec<Charge> {
        write_charges(table, keys, item, None, Some(item), transactional)
    }

    pub(super) async fn handle(
        &self,
        next: Next,
        mut request: HttpRequest,
    ) -> Result<HttpResponse, ConnectorError> {
        let operation = intercept::operation(&request).unwrap_or("").to_owned();
        let Some(mut body) = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            return next.send(request).await;
        };
        if operation == "CreateTable" {
            self.learn(&body);
            self.learn_caps(&body);
            return next.send(request).await;
        }
        let table_name = body["TableName"].as_str().map(str::to_owned);
        match operation.as_str() {
            "PutItem" | "GetItem" | "Query" | "UpdateItem" | "DeleteItem" => {
                let Some(table) = table_name else {
                    return next.send(request).await;
                };
                let Some(keys) = self.table(&table) else {
                    lock(&self.state.counts).unmetered += 1;
                    return next.send(request).await;
                };
                let consistent = body["ConsistentRead"].as_bool().unwrap_or(false);
                let read_estimate = read_units(0, Consistency::of_consistent_read(consistent));
                if matches!(operation.as_str(), "PutItem" | "DeleteItem") {
                    return self.single_write(next, request, body, &table, &keys).await;
                }
                let (charges, settle_kind) = match operation.as_str() {
                    "UpdateItem" => {
                        let pk = key_text(&body["Key"][&keys.partition_key]).unwrap_or_default();
                        (vec![charge(&table, None, pk, Kind::Write, 1.0)], Some(1.0))
                    }
                    "GetItem" => {
                        let pk = key_text(&body["Key"][&keys.partition_key]).unwrap_or_default();
                        (
                            vec![charge(&table, None, pk, Kind::Read, read_estimate)],
                            Some(read_estimate),
                        )
                    }
                    _ => {
                        let index = body["IndexName"].as_str().map(str::to_owned);
                        let attr = match &index {
                            None => Some(keys.partition_key.clone()),
                            Some(i) => keys
                                .indexes
                                .iter()
                                .find(|(n, _)| n == i)
                                .map(|(_, a)| a.clone()),
                        };
                        let pk = attr
                            .and_then(|a| query_partition_value(&body, &a))
                            .unwrap_or_default();
                        (
                            vec![charge(
                                &table,
                                index.as_deref(),
                                pk,
                                Kind::Read,
                                read_estimate,
                            )],
                            Some(read_estimate),
                        )
                    }
                };
                if let Err(over) = self.admit(&charges) {
                    self.count(0, std::slice::from_ref(&over));
                    return Ok(throttled_response(&over));
                }
                self.count(1, &[]);
                let Some(estimate) = settle_kind else {
                    return next.send(request).await;
                };
                // Ask for the real consumption, settle the estimate, and hide the extra field
                // from a caller that did not ask for it.
                let asked = body
                    .get("ReturnConsumedCapacity")
                    .is_some_and(|v| v != "NONE");
                if !asked {
                    body["ReturnConsumedCapacity"] = json!("TOTAL");
                    replace_body(&mut request, &body);
                }
                let response = next.send(request).await?;
                let (response, consumed) = read_consumed(response, !asked).await?;
                if let (Some(actual), Some(first)) = (consumed, charges.first()) {
                    self.settle(&first.bucket, actual - estimate);
                }
                Ok(response)
            }
            "BatchWriteItem" => self.batch_write(next, request, body).await,
            "BatchGetItem" => self.batch_get(next, request, body).await,
            "TransactWriteItems" => self.transact_write(next, request, body).await,
            "TransactGetItems" => self.transact_get(next, request, body).await,
            "Scan" => self.scan(next, request, body).await,
            _ => next.send(request).await,
        }
    }

    /// A `PutItem` or `DeleteItem`: admitted on what the request shows (the new item, or one
    /// unit for a delete), sent with `ReturnValues = ALL_OLD` so the item it replaced comes
    /// back atomically with the write, then settled on both: DynamoDB charges the larger of
    /// the old and the new item on the base key, and on each GSI the entries removed and
    /// written. A caller that did not ask for the old item does not see it.
    async fn single_write(
        &self,
        next: Next,
        mut request: HttpRequest,
        mut body: Value,
        table: &str,
        keys: &TableKeys,
    ) -> Result<HttpResponse, ConnectorError> {
        let new = body.get("Item").cloned();
        let key = new.clone().unwrap_or_else(|| body["Key"].clone());
        let estimate = write_charges(table, keys, &key, None, new.as_ref(), false);
        if let Err(over) = self.admit(&estimate) {
            self.count(0, std::slice::from_ref(&over));
            return Ok(throttled_response(&over));
        }
        self.count(1, &[]);
        let asked = body["ReturnValues"] == "ALL_OLD";
        if !asked {
            body["ReturnValues"] = json!("ALL_OLD");
            replace_body(&mut request, &body);
        }
        let response = next.send(request).await?;
        let status = response.status().as_u16();
        let (response, json) = response_json(response).await?;
        // A failed condition or an error keeps the estimate: DynamoDB charges those too.
        let Some(mut json) = json else {
            return Ok(response);
        };
        let old = json.get("Attributes").cloned();
        let exact = write_charges(table, keys, &key, old.as_ref(), new.as_ref(), false);
        self.settle_all(&estimate, &exact);
        if asked || old.is_none() {
            return Ok(response);
        }
        if let Some(map) = json.as_object_mut() {
            map.remove("Attributes");
        }
        Ok(json_response(status, &json))
    }

    /// Settles each meter by what `exact` charges it beyond (or below) `estimate`.
    pub(super) fn settle_all(&self, estimate: &[Charge], exact: &[Charge]) {
        let mut difference: Vec<(BucketKey, f64)> = Vec::new();
        let charges = exact
            .iter()
            .map(|c| (c, c.units))
            .chain(estimate.iter().map(|c| (c, -c.units)));
        for (c, units) in charges {
            match difference.iter_mut().find(|(b, _)| *b == c.bucket) {
                Some((_, sum)) => *sum += units,
                None => difference.push((c.bucket.clone(), units)),
            }
        }
        for (bucket, units) in difference {
            self.settle(&bucket, units);
        }
    }

    /// The items a batch write replaces, read (strongly consistent) with one `BatchGetItem`
    /// sent past the emulator just before the write, keyed by table and primary key.
    /// `BatchWriteItem` has no `ReturnValues`, so this is the only way to learn them; a write
    /// by another client between the read and the write is not seen. A read that fails
    /// leaves the old items unknown (charged as absent, and logged).
    async fn replaced_items(
        &self,
        next: &Next,
        like: &HttpRequest,
        body: &Value,
    ) -> HashMap<(String, ItemKey), Value> {
        let mut wanted = Vec::new();
        for (table, entries) in body["RequestItems"].as_object().into_iter().flatten() {
            for entry in entries.as_array().into_iter().flatten() {
                let item = match entry.get("PutRequest") {
                    Some(put) => &put["Item"],
                    None => &entry["DeleteRequest"]["Key"],
                };
                wanted.push((table.clone(), item));
            }
        }
        self.current_items(next, like, &wanted).await
    }

    /// The items stored under the keys `wanted` names (each a table and an item or key),
    /// read strongly consistent with `BatchGetItem`s sent past the emulator (built from
    /// `like`, a request of the same client), keyed by table and primary key. Tables the
    /// emulator does not know are skipped; items not found are absent. A read that fails
    /// leaves the rest unknown (and is logged).
    pub(super) async fn current_items(
        &self,
        next: &Next,
        like: &HttpRequest,
        wanted: &[(String, &Value)],
    ) -> HashMap<(String, ItemKey), Value> {
        let mut request_items = Map::new();
        let mut seen: HashMap<String, Vec<ItemKey>> = HashMap::new();
        for (table, item) in wanted {
            let Some(keys) = self.table(table) else {
                continue;
            };
            let Some(id) = item_key(&keys, item) else {
                continue;
            };
            let ids = seen.entry(table.clone()).or_default();
            if ids.contains(&id) {
                continue;
            }
            ids.push(id);
            let mut key = Map::new();
            for attr in std::iter::once(&keys.partition_key).chain(keys.sort_key.as_ref()) {
                key.insert(attr.clone(), item[attr].clone());
            }
            let spec = request_items
                .entry(table.clone())
                .or_insert_with(|| json!({ "Keys": [], "ConsistentRead": true }));
            if let Some(list) = spec["Keys"].as_array_mut() {
                list.push(Value::Object(key));
            }
        }
        let mut found = HashMap::new();
        // A `BatchGetItem` takes 100 keys: one batch write (25 entries) or one transaction
        // (100 actions) fits in one read; retry what is left unprocessed.
        for _ in 0..3 {
            if request_items.is_empty() {
                break;
            }
            let Some(mut read) = like.try_clone() else {
                tracing::warn!("emulator: cannot clone a request to read the items it writes");
                break;
            };
            read.headers_mut()
                .insert("x-amz-target", "DynamoDB_20120810.BatchGetItem");
            replace_body(&mut read, &json!({ "RequestItems": request_items }));
            let answer = match next.send(read).await {
                Ok(response) => response_json(response).await.ok().and_then(|(_, j)| j),
                Err(_) => None,
            };
            let Some(answer) = answer else {
                tracing::warn!("emulator: reading the items a write replaces failed");
                break;
            };
            for (table, items) in answer["Responses"].as_object().into_iter().flatten() {
                let Some(keys) = self.table(table) else {
                    continue;
                };
                for item in items.as_array().into_iter().flatten() {
                    if let Some(id) = item_key(&keys, item) {
                        found.insert((table.clone(), id), item.clone());
                    }
                }
            }
            request_items = answer["UnprocessedKeys"]
                .as_object()
                .cloned()
                .unwrap_or_default();
        }
        found
    }

    async fn batch_write(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let replaced = self.replaced_items(&next, &request, &body).await;
        let mut split = BatchSplit::default();
        if let Some(tables) = body["RequestItems"].as_object_mut() {
            for (table, requests) in tables.iter_mut() {
                let Some(keys) = self.table(table) else {
                    lock(&self.state.counts).unmetered += 1;
                    split.kept += requests.as_array().map_or(0, Vec::len);
                    continue;
                };
                let Some(list) = requests.as_array_mut() else {
                    continue;
                };
                let mut keep = Vec::new();
                for entry in list.drain(..) {
                    let new = entry.get("PutRequest").map(|put| &put["Item"]);
                    let key = new.unwrap_or(&entry["DeleteRequest"]["Key"]);
                    let old =
                        item_key(&keys, key).and_then(|id| replaced.get(&(table.clone(), id)));
                    let charges = write_charges(table, &keys, key, old, new, false);
                    match self.admit(&charges) {
                        Ok(()) => {
                            split.admitted += 1;
                            keep.push(entry);
                        }
                        Err(over) => {
                            split.throttled.push(over);
                            if let Some(list) = split
                                .unprocessed
                                .entry(table.clone())
                                .or_insert_with(|| Value::Array(Vec::new()))
                                .as_array_mut()
                            {
                                list.push(entry);
                            }
                        }
                    }
                }
                split.kept += keep.len();
                *list = keep;
            }
            tables.retain(|_, v| v.as_array().is_some_and(|a| !a.is_empty()));
        }
        self.forward_split(next, request, &body, split, "UnprocessedItems", |_| {})
            .await
    }

    async fn batch_get(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let mut split = BatchSplit::default();
        // Per metered table: its partition key attribute and how it is read, to settle.
        let mut settle = Vec::new();
        if let Some(tables) = body["RequestItems"].as_object_mut() {
            for (table, spec) in tables.iter_mut() {
                let Some(keys) = self.table(table) else {
                    lock(&self.state.counts).unmetered += 1;
                    split.kept += spec["Keys"].as_array().map_or(0, Vec::len);
                    continue;
                };
                let consistent = spec["ConsistentRead"].as_bool().unwrap_or(false);
                let Some(list) = spec["Keys"].as_array_mut() else {
                    continue;
                };
                let mut keep = Vec::new();
                let mut rejected = Vec::new();
                let consistency = Consistency::of_consistent_read(consistent);
                settle.push((table.clone(), keys.partition_key.clone(), consistency));
                for key in list.drain(..) {
                    let pk = key_text(&key[&keys.partition_key]).unwrap_or_default();
                    let c = charge(table, None, pk, Kind::Read, read_units(0, consistency));
                    match self.admit(std::slice::from_ref(&c)) {
                        Ok(()) => {
                            split.admitted += 1;
                            keep.push(key);
                        }
                        Err(over) => {
                            split.throttled.push(over);
                            rejected.push(key);
                        }
                    }
                }
                split.kept += keep.len();
                *list = keep;
                if !rejected.is_empty() {
                    let mut entry = spec.clone();
                    entry["Keys"] = Value::Array(rejected);
                    split.unprocessed.insert(table.clone(), entry);
                }
            }
            tables.retain(|_, v| v["Keys"].as_array().is_some_and(|a| !a.is_empty()));
        }
        // Each key was admitted on the smallest read; each item returned is settled on its
        // size (a key with no item costs that smallest read, as on DynamoDB).
        let settle_items = |response: &Value| {
            for (table, attr, consistency) in &settle {
                for extra in batch_read_extras(response, table, attr, *consistency) {
                    self.settle(&extra.bucket, extra.units);
                }
            }
        };
        self.forward_split(next, request, &body, split, "UnprocessedKeys", settle_items)
            .await
    }

    /// The shared end of a metered batch: count, refuse the request when every entry was
    /// throttled, else forward what was admitted, hand a successful answer to `settle`, and
    /// add the throttled entries to its unprocessed map `field` (`UnprocessedKeys` has the
    /// request's `{table: {Keys: [..]}}` shape, `UnprocessedItems` a list per table).
    async fn forward_split(
        &self,
        next: Next,
        mut request: HttpRequest,
        body: &Value,
        split: BatchSplit,
        field: &str,
        settle: impl FnOnce(&Value),
    ) -> Result<HttpResponse, ConnectorError> {
        self.count(split.admitted, &split.throttled);
        if split.kept == 0 {
            if let Some(first) = split.throttled.first() {
                return Ok(throttled_response(first));
            }
        }
        if !split.unprocessed.is_empty() {
            replace_body(&mut request, body);
        }
        let response = next.send(request).await?;
        let status = response.status().as_u16();
        let (response, json) = response_json(response).await?;
        let Some(mut json) = json else {
            return Ok(response);
        };
        settle(&json);
        if split.unprocessed.is_empty() {
            return Ok(response);
        }
        merge_unprocessed(
            &mut json,
            field,
            split.unprocessed,
            field == "UnprocessedKeys",
        );
        Ok(json_response(status, &json))
    }
}

/// A table's primary key values in an item or key: partition key, then sort key.
pub(super) type ItemKey = (String, Option<String>);

pub(super) fn item_key(keys: &TableKeys, item: &Value) -> Option<ItemKey> {
    let pk = key_text(&item[&keys.partition_key])?;
    let sk = match &keys.sort_key {
        Some(attr) => Some(key_text(&item[attr])?),
        None => None,
    };
    Some((pk, sk))
}

/// What each item a `BatchGetItem` answer returns from `table` costs beyond the smallest
/// read its key was admitted on: `read_units` of its size, less that. Items are found by
/// their partition key attribute `attr`; a projection that leaves it out, or that makes the
/// returned item smaller than the stored one, makes this charge less than DynamoDB does.
pub(super) fn batch_read_extras(
    response: &Value,
    table: &str,
    attr: &str,
    consistency: Consistency,
) -> Vec<Charge> {
    let items = response["Responses"][table]
        .as_array()
        .into_iter()
        .flatten();
    items
        .filter_map(|item| {
            let pk = key_text(&item[attr])?;
            let units = read_units(size_of(Some(item)), consistency) - read_units(0, consistency);
            (units > 0.0).then(|| charge(table, None, pk, Kind::Read, units))
        })
        .collect()
}

pub(super) fn size_of(item: Option<&Value>) -> u64 {
    item.map_or(0, |i| item_size(&item_from_json(i)) as u64)
}

/// The write charges of replacing `old` with `new` (`None`: no item before, or a delete)
/// in `table`, for the item whose key `key` carries. The base key pays for the larger of the
/// two items (at least one unit: a delete of nothing costs one). Each GSI pays for the
/// entries that change: one write of the larger when both items carry the same index key,
/// else a delete of the old entry and a put of the new one, each on its own key. GSI entries
/// are sized as the whole item (tables made by `sharded` project every attribute).
///
/// `transactional`: a write inside `TransactWriteItems` costs the base key twice the units
/// (DynamoDB prepares and commits each item: [`transactional_write_units`]); the GSI entries
/// it changes are written after the commit, as ordinary writes ("changes made with
/// transactions are propagated to global secondary indexes ... after the transaction
/// completes", DynamoDB Developer Guide, "Amazon DynamoDB Transactions: How it works"), so
/// they cost [`write_units`].
pub(super) fn write_charges(
    table: &str,
    keys: &TableKeys,
    key: &Value,
    old: Option<&Value>,
    new: Option<&Value>,
    transactional: bool,
) -> Vec<Charge> {
    let base_units = |bytes: u64| {
        let units = if transactional {
            transactional_write_units(bytes)
        } else {
            write_units(bytes)
        };
        units as f64
    };
    let units = |bytes: u64| write_units(bytes) as f64;
    let (old_bytes, new_bytes) = (size_of(old), size_of(new));
    let mut charges = Vec::new();
    if let Some(pk) = key_text(&key[&keys.partition_key]) {
        charges.push(charge(
            table,
            None,
            pk,
            Kind::Write,
            base_units(old_bytes.max(new_bytes)),
        ));
    }
    for (index, attr) in &keys.indexes {
        // A GSI is written only where an item carries its key (sparse indexes).
        let old_key = old.and_then(|o| key_text(&o[attr]));
        let new_key = new.and_then(|n| key_text(&n[attr]));
        if old_key.is_some() && old_key == new_key {
            let k = new_key.unwrap_or_default();
            let u = units(old_bytes.max(new_bytes));
            charges.push(charge(table, Some(index), k, Kind::Write, u));
            continue;
        }
        if let Some(k) = old_key {
            charges.push(charge(table, Some(index), k, Kind::Write, units(old_bytes)));
        }
        if let Some(k) = new_key {
            charges.push(charge(table, Some(index), k, Kind::Write, units(new_bytes)));
        }
    }
    charges
}

//! Each metered operation as charges: single-item writes and reads, queries (on the base
//! table or a GSI), and batches, whose throttled entries come back unprocessed.

use serde_json::{json, Map, Value};
use sharded_runtime::capacity::{
    item_size, read_units, transactional_write_units, write_units, Consistency,
};

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use super::buckets::{charge, Charge, Kind};
use super::wire::{
    key_text, merge_unprocessed, query_partition_value, read_consumed, replace_body,
    throttled_response,
};
use super::{lock, KeyLimitEmulator};
use crate::intercept::{self, Next};
use crate::item::item_from_json;

#[derive(Debug, Clone)]
pub(super) struct TableKeys {
    pub(super) partition_key: String,
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
        let hash = |schema: &Value| {
            schema
                .as_array()?
                .iter()
                .find(|k| k["KeyType"] == "HASH")?
                .get("AttributeName")?
                .as_str()
                .map(str::to_owned)
        };
        let Some(partition_key) = hash(&body["KeySchema"]) else {
            return;
        };
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
                indexes,
            },
        );
    }

    /// The write charges of putting `item` into `table`.
    pub(super) fn put_charges(
        &self,
        table: &str,
        keys: &TableKeys,
        item: &Value,
        transactional: bool,
    ) -> Vec<Charge> {
        let bytes = item_size(&item_from_json(item)) as u64;
        let units = if transactional {
            transactional_write_units(bytes)
        } else {
            write_units(bytes)
        } as f64;
        let mut charges = Vec::new();
        if let Some(pk) = key_text(&item[&keys.partition_key]) {
            charges.push(charge(table, None, pk, Kind::Write, units));
        }
        for (index, attr) in &keys.indexes {
            // A GSI is written only when the item carries its key (sparse indexes).
            if let Some(gsi_pk) = key_text(&item[attr]) {
                charges.push(charge(table, Some(index), gsi_pk, Kind::Write, units));
            }
        }
        charges
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
                let (charges, settle_kind) = match operation.as_str() {
                    "PutItem" => (self.put_charges(&table, &keys, &body["Item"], false), None),
                    "UpdateItem" | "DeleteItem" => {
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
            _ => next.send(request).await,
        }
    }

    async fn batch_write(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
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
                    let charges = if entry.get("PutRequest").is_some() {
                        self.put_charges(table, &keys, &entry["PutRequest"]["Item"], false)
                    } else {
                        let pk = key_text(&entry["DeleteRequest"]["Key"][&keys.partition_key])
                            .unwrap_or_default();
                        vec![charge(table, None, pk, Kind::Write, 1.0)]
                    };
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
        self.forward_split(next, request, &body, split, "UnprocessedItems", false)
            .await
    }

    async fn batch_get(
        &self,
        next: Next,
        request: HttpRequest,
        mut body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let mut split = BatchSplit::default();
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
                for key in list.drain(..) {
                    let pk = key_text(&key[&keys.partition_key]).unwrap_or_default();
                    let c = charge(
                        table,
                        None,
                        pk,
                        Kind::Read,
                        read_units(0, Consistency::of_consistent_read(consistent)),
                    );
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
        self.forward_split(next, request, &body, split, "UnprocessedKeys", true)
            .await
    }

    /// The shared end of a metered batch: count, refuse the request when every entry was
    /// throttled, else forward what was admitted and add the throttled entries to the
    /// response's unprocessed map.
    async fn forward_split(
        &self,
        next: Next,
        mut request: HttpRequest,
        body: &Value,
        split: BatchSplit,
        field: &str,
        keys_spec: bool,
    ) -> Result<HttpResponse, ConnectorError> {
        self.count(split.admitted, &split.throttled);
        if split.kept == 0 {
            if let Some(first) = split.throttled.first() {
                return Ok(throttled_response(first));
            }
        }
        if split.unprocessed.is_empty() {
            return next.send(request).await;
        }
        replace_body(&mut request, body);
        let response = next.send(request).await?;
        merge_unprocessed(response, field, split.unprocessed, keys_spec).await
    }
}

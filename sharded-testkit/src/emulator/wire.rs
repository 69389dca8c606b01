//! DynamoDB JSON as the emulator reads and rewrites it: key values, a query's partition
//! value, request bodies, `ConsumedCapacity`, unprocessed entries, throttle responses.

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use serde_json::{json, Map, Value};

use super::buckets::{Charge, Level};
use crate::response::{
    bytes_response, error_body, json_response, THROUGHPUT_EXCEEDED, TRANSACTION_CANCELED,
};

/// The text of a key attribute value (`{"S": ..}`, `{"N": ..}` or `{"B": ..}`).
pub(super) fn key_text(value: &Value) -> Option<String> {
    ["S", "N", "B"]
        .iter()
        .find_map(|t| value.get(*t).and_then(Value::as_str))
        .map(str::to_owned)
}

/// The value a Query's key condition compares the partition key attribute `attr` with.
pub(super) fn query_partition_value(body: &Value, attr: &str) -> Option<String> {
    let condition = body["KeyConditionExpression"].as_str()?;
    let names = &body["ExpressionAttributeNames"];
    for part in condition.split(" AND ").chain(condition.split(" and ")) {
        let Some((left, right)) = part.split_once('=') else {
            continue;
        };
        let (left, right) = (
            left.trim().trim_start_matches('('),
            right.trim().trim_end_matches(')'),
        );
        let resolved = if left.starts_with('#') {
            names[left].as_str().unwrap_or(left)
        } else {
            left
        };
        if resolved == attr && right.starts_with(':') {
            return key_text(&body["ExpressionAttributeValues"][right]);
        }
    }
    None
}

pub(super) fn replace_body(request: &mut HttpRequest, body: &Value) {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    request
        .headers_mut()
        .insert("content-length", bytes.len().to_string());
    *request.body_mut() = SdkBody::from(bytes);
}

/// DynamoDB's answer to a hot key or a table over its maximum: 400,
/// `ProvisionedThroughputExceededException`, and why (`ThrottlingReasons`).
pub(super) fn throttled_response(over: &Charge) -> HttpResponse {
    let resource = if over.bucket.index.is_some() {
        "index"
    } else {
        "table"
    };
    let message = match over.bucket.level {
        Level::Key => format!(
            "The level of configured provisioned throughput for the {resource} was exceeded for partition key value `{}` (emulated per-key limit)",
            over.bucket.key
        ),
        Level::Max => format!(
            "Throughput exceeds the maximum on-demand throughput configured for the {resource} (emulated {resource} maximum)"
        ),
    };
    let mut body = error_body(THROUGHPUT_EXCEEDED, &message);
    body["ThrottlingReasons"] = throttling_reasons(std::slice::from_ref(over));
    json_response(400, &body)
}

/// `ThrottlingReasons` as DynamoDB writes them: `[{"reason": .., "resource": <ARN>}]`.
fn throttling_reasons(over: &[Charge]) -> Value {
    over.iter()
        .map(|c| json!({ "reason": c.reason(), "resource": c.resource() }))
        .collect()
}

/// DynamoDB's answer to a transaction it cannot serve for capacity: 400
/// `TransactionCanceledException`, with one `CancellationReasons` entry per action in request
/// order: `ThrottlingError` for an action on a throttled meter (`throttled[i]` names it),
/// `None` for the others. The codes and messages are those the API reference lists for
/// `TransactionCanceledException` (`ThrottlingError`: "Throughput exceeds the current capacity
/// of your table or index...", or "...for one or more global secondary indexes..."). The
/// exception itself has no `ThrottlingReasons` field; the emulator adds one listing every meter
/// over its limit (`over`), so that every throttle it writes says why (SDKs ignore it).
pub(super) fn canceled_response(throttled: &[Option<&Charge>], over: &[Charge]) -> HttpResponse {
    const TABLE: &str = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.";
    const INDEX: &str = "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly.";
    let reasons: Vec<Value> = throttled
        .iter()
        .map(|t| match t {
            None => json!({ "Code": "None" }),
            Some(c) => json!({
                "Code": "ThrottlingError",
                "Message": if c.bucket.index.is_some() { INDEX } else { TABLE },
            }),
        })
        .collect();
    let codes: Vec<&str> = reasons.iter().filter_map(|r| r["Code"].as_str()).collect();
    let message = format!(
        "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
        codes.join(", ")
    );
    let mut body = error_body(TRANSACTION_CANCELED, &message);
    body["CancellationReasons"] = Value::Array(reasons);
    body["ThrottlingReasons"] = throttling_reasons(over);
    json_response(400, &body)
}

async fn read_body(response: HttpResponse) -> Result<(StatusCode, Vec<u8>), ConnectorError> {
    let status = response.status();
    let bytes = ByteStream::new(response.into_body())
        .collect()
        .await
        .map_err(|e| ConnectorError::io(Box::new(e)))?
        .into_bytes();
    Ok((status, bytes.to_vec()))
}

/// Reads `ConsumedCapacity.CapacityUnits` from a successful response, removing the field
/// when `strip` (the caller did not ask for it).
pub(super) async fn read_consumed(
    response: HttpResponse,
    strip: bool,
) -> Result<(HttpResponse, Option<f64>), ConnectorError> {
    if !response.status().is_success() {
        return Ok((response, None));
    }
    let (status, bytes) = read_body(response).await?;
    let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok((bytes_response(status, bytes), None));
    };
    let consumed = body["ConsumedCapacity"]["CapacityUnits"].as_f64();
    if strip {
        if let Some(map) = body.as_object_mut() {
            map.remove("ConsumedCapacity");
        }
        return Ok((json_response(status.as_u16(), &body), consumed));
    }
    Ok((bytes_response(status, bytes), consumed))
}

/// A successful response's JSON body, with the response rebuilt unchanged; `None` for an
/// error or a body that is not JSON (the response is then passed on as it came).
pub(super) async fn response_json(
    response: HttpResponse,
) -> Result<(HttpResponse, Option<Value>), ConnectorError> {
    if !response.status().is_success() {
        return Ok((response, None));
    }
    let (status, bytes) = read_body(response).await?;
    let body = serde_json::from_slice::<Value>(&bytes).ok();
    Ok((bytes_response(status, bytes), body))
}

/// Adds the entries the emulator throttled to a batch response's unprocessed map `field`.
pub(super) fn merge_unprocessed(
    body: &mut Value,
    field: &str,
    ours: Map<String, Value>,
    keys_spec: bool,
) {
    if !body[field].is_object() {
        body[field] = Value::Object(Map::new());
    }
    for (table, entries) in ours {
        let target = &mut body[field][&table];
        if keys_spec {
            // BatchGetItem: { table: { Keys: [...], ...} }
            if target.is_null() {
                *target = entries;
            } else if let (Some(existing), Some(more)) =
                (target["Keys"].as_array_mut(), entries["Keys"].as_array())
            {
                existing.extend(more.iter().cloned());
            }
        } else if let (Some(existing), Some(more)) = (target.as_array_mut(), entries.as_array()) {
            existing.extend(more.iter().cloned());
        } else {
            *target = entries;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_partition_values_are_found_through_names() {
        let body = json!({
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :sk0)",
            "ExpressionAttributeNames": {"#pk": "gsi1pk", "#sk": "gsi1sk"},
            "ExpressionAttributeValues": {":pk": {"S": "PLAYER#p1#2"}, ":sk0": {"S": "G"}},
        });
        assert_eq!(
            query_partition_value(&body, "gsi1pk").as_deref(),
            Some("PLAYER#p1#2")
        );
        let plain = json!({"KeyConditionExpression": "pk = :v", "ExpressionAttributeValues": {":v": {"S": "x"}}});
        assert_eq!(query_partition_value(&plain, "pk").as_deref(), Some("x"));
    }
}

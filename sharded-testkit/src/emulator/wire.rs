//! DynamoDB JSON as the emulator reads and rewrites it: key values, a query's partition
//! value, request bodies, `ConsumedCapacity`, unprocessed entries, throttle responses.

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;
use serde_json::{json, Map, Value};

use super::buckets::Charge;
use crate::response::{bytes_response, error_body, json_response, THROUGHPUT_EXCEEDED};

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

/// DynamoDB's answer to a hot key: 400, `ProvisionedThroughputExceededException`, and why.
pub(super) fn throttled_response(over: &Charge) -> HttpResponse {
    let message = format!(
        "The level of configured provisioned throughput for the {} was exceeded for partition key value `{}` (emulated per-key limit)",
        if over.bucket.index.is_some() { "index" } else { "table" },
        over.bucket.key
    );
    let mut body = error_body(THROUGHPUT_EXCEEDED, &message);
    body["ThrottlingReasons"] = json!([{ "reason": over.reason(), "resource": over.resource() }]);
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

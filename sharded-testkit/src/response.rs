//! Responses in DynamoDB's JSON protocol, for what the kit answers itself (injected faults,
//! emulated throttles) or rewrites, so the SDK parses them as it parses DynamoDB's.

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use serde_json::{json, Value};

/// DynamoDB's error code for a partition key (or table) over its throughput.
pub(crate) const THROUGHPUT_EXCEEDED: &str = "ProvisionedThroughputExceededException";
/// DynamoDB's error code for a transaction it canceled (nothing applied); the reason for each
/// action is in `CancellationReasons`.
pub(crate) const TRANSACTION_CANCELED: &str = "TransactionCanceledException";
/// DynamoDB's error code for a failure on its side.
pub(crate) const INTERNAL_SERVER_ERROR: &str = "InternalServerError";

/// The prefix of `__type` in DynamoDB's error bodies.
const ERROR_TYPE_PREFIX: &str = "com.amazonaws.dynamodb.v20120810#";
const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// The request id of every response the kit writes, so one can tell them from DynamoDB's.
const REQUEST_ID: &str = "sharded-testkit";

/// DynamoDB's error body: `{"__type": "com.amazonaws.dynamodb.v20120810#<code>", "message": ..}`.
/// More fields (e.g. `ThrottlingReasons`) can be added to it before it is sent.
pub(crate) fn error_body(code: &str, message: &str) -> Value {
    json!({ "__type": format!("{ERROR_TYPE_PREFIX}{code}"), "message": message })
}

/// An error response as DynamoDB sends it: `status`, [`error_body`].
pub(crate) fn error_response(status: u16, code: &str, message: &str) -> HttpResponse {
    json_response(status, &error_body(code, message))
}

/// A response with `body` as DynamoDB JSON.
pub(crate) fn json_response(status: u16, body: &Value) -> HttpResponse {
    let status = StatusCode::try_from(status)
        .unwrap_or_else(|_| StatusCode::try_from(500).expect("500 is valid"));
    bytes_response(status, serde_json::to_vec(body).unwrap_or_default())
}

/// A response with `bytes` (already DynamoDB JSON) as its body.
pub(crate) fn bytes_response(status: StatusCode, bytes: Vec<u8>) -> HttpResponse {
    let mut response = HttpResponse::new(status, SdkBody::from(bytes));
    response.headers_mut().insert("content-type", CONTENT_TYPE);
    response
        .headers_mut()
        .insert("x-amzn-requestid", REQUEST_ID);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_dynamodbs_shape() {
        let response = error_response(400, THROUGHPUT_EXCEEDED, "slow \"down\"");
        assert_eq!(response.status().as_u16(), 400);
        assert_eq!(
            response.headers().get("content-type"),
            Some("application/x-amz-json-1.0")
        );
        let body: Value = serde_json::from_slice(response.body().bytes().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({
                "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "message": "slow \"down\"",
            })
        );
    }
}

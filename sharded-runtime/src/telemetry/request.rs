//! What one request says about itself: the OpenTelemetry attributes read from a DynamoDB
//! operation's input (before it is sent) and output (when it answered), by downcasting the
//! SDK's type-erased values. One table of operations; an operation not in it still gets its
//! span, name and duration, only without these details.

use aws_sdk_dynamodb::operation;
use aws_sdk_dynamodb::types::ConsumedCapacity;
use aws_smithy_runtime_api::client::interceptors::context::{Input, Output};

/// The attributes of a request's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InputFacts {
    pub(crate) table_names: Vec<String>,
    pub(crate) index_name: Option<String>,
    pub(crate) limit: Option<i32>,
    pub(crate) scan_forward: Option<bool>,
    pub(crate) consistent_read: Option<bool>,
    pub(crate) segment: Option<i32>,
    pub(crate) total_segments: Option<i32>,
}

/// The attributes of a request's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OutputFacts {
    pub(crate) count: Option<i32>,
    pub(crate) scanned_count: Option<i32>,
    /// The capacity units reported, summed over the tables of a batch or transaction.
    pub(crate) consumed_capacity: Option<f64>,
}

fn table(name: Option<&str>) -> Vec<String> {
    name.map(str::to_owned).into_iter().collect()
}

/// Table names in first-seen order, without repeats.
fn distinct<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

fn units<'a>(consumed: impl IntoIterator<Item = &'a ConsumedCapacity>) -> Option<f64> {
    consumed
        .into_iter()
        .filter_map(ConsumedCapacity::capacity_units)
        .fold(None, |sum, units| Some(sum.unwrap_or(0.0) + units))
}

/// The facts of `input`, when it is the input of an operation `sharded` sends.
pub(crate) fn input_facts(input: &Input) -> Option<InputFacts> {
    if let Some(i) = input.downcast_ref::<operation::query::QueryInput>() {
        return Some(InputFacts {
            table_names: table(i.table_name()),
            index_name: i.index_name().map(str::to_owned),
            limit: i.limit(),
            scan_forward: Some(i.scan_index_forward().unwrap_or(true)),
            consistent_read: i.consistent_read(),
            ..InputFacts::default()
        });
    }
    if let Some(i) = input.downcast_ref::<operation::scan::ScanInput>() {
        return Some(InputFacts {
            table_names: table(i.table_name()),
            index_name: i.index_name().map(str::to_owned),
            limit: i.limit(),
            consistent_read: i.consistent_read(),
            segment: i.segment(),
            total_segments: i.total_segments(),
            ..InputFacts::default()
        });
    }
    if let Some(i) = input.downcast_ref::<operation::get_item::GetItemInput>() {
        return Some(InputFacts {
            table_names: table(i.table_name()),
            consistent_read: i.consistent_read(),
            ..InputFacts::default()
        });
    }
    let tables = if let Some(i) = input.downcast_ref::<operation::put_item::PutItemInput>() {
        table(i.table_name())
    } else if let Some(i) = input.downcast_ref::<operation::update_item::UpdateItemInput>() {
        table(i.table_name())
    } else if let Some(i) = input.downcast_ref::<operation::delete_item::DeleteItemInput>() {
        table(i.table_name())
    } else if let Some(i) = input.downcast_ref::<operation::batch_write_item::BatchWriteItemInput>()
    {
        let mut names = distinct(
            i.request_items()
                .into_iter()
                .flat_map(|m| m.keys().map(String::as_str)),
        );
        names.sort();
        names
    } else if let Some(i) = input.downcast_ref::<operation::batch_get_item::BatchGetItemInput>() {
        let mut names = distinct(
            i.request_items()
                .into_iter()
                .flat_map(|m| m.keys().map(String::as_str)),
        );
        names.sort();
        names
    } else if let Some(i) =
        input.downcast_ref::<operation::transact_write_items::TransactWriteItemsInput>()
    {
        distinct(i.transact_items().iter().filter_map(|item| {
            (item.put().map(|p| p.table_name()))
                .or(item.update().map(|u| u.table_name()))
                .or(item.delete().map(|d| d.table_name()))
                .or(item.condition_check().map(|c| c.table_name()))
        }))
    } else if let Some(i) =
        input.downcast_ref::<operation::transact_get_items::TransactGetItemsInput>()
    {
        distinct(
            i.transact_items()
                .iter()
                .filter_map(|item| item.get().map(|g| g.table_name())),
        )
    } else if let Some(i) = input.downcast_ref::<operation::describe_table::DescribeTableInput>() {
        table(i.table_name())
    } else if let Some(i) = input.downcast_ref::<operation::create_table::CreateTableInput>() {
        table(i.table_name())
    } else if let Some(i) =
        input.downcast_ref::<operation::update_time_to_live::UpdateTimeToLiveInput>()
    {
        table(i.table_name())
    } else {
        return None;
    };
    Some(InputFacts {
        table_names: tables,
        ..InputFacts::default()
    })
}

/// The facts of `output`, when it is the output of an operation `sharded` sends.
pub(crate) fn output_facts(output: &Output) -> OutputFacts {
    if let Some(o) = output.downcast_ref::<operation::query::QueryOutput>() {
        return OutputFacts {
            count: Some(o.count()),
            scanned_count: Some(o.scanned_count()),
            consumed_capacity: units(o.consumed_capacity()),
        };
    }
    if let Some(o) = output.downcast_ref::<operation::scan::ScanOutput>() {
        return OutputFacts {
            count: Some(o.count()),
            scanned_count: Some(o.scanned_count()),
            consumed_capacity: units(o.consumed_capacity()),
        };
    }
    let consumed = if let Some(o) = output.downcast_ref::<operation::get_item::GetItemOutput>() {
        units(o.consumed_capacity())
    } else if let Some(o) = output.downcast_ref::<operation::put_item::PutItemOutput>() {
        units(o.consumed_capacity())
    } else if let Some(o) = output.downcast_ref::<operation::update_item::UpdateItemOutput>() {
        units(o.consumed_capacity())
    } else if let Some(o) = output.downcast_ref::<operation::delete_item::DeleteItemOutput>() {
        units(o.consumed_capacity())
    } else if let Some(o) =
        output.downcast_ref::<operation::batch_write_item::BatchWriteItemOutput>()
    {
        units(o.consumed_capacity())
    } else if let Some(o) = output.downcast_ref::<operation::batch_get_item::BatchGetItemOutput>() {
        units(o.consumed_capacity())
    } else if let Some(o) =
        output.downcast_ref::<operation::transact_write_items::TransactWriteItemsOutput>()
    {
        units(o.consumed_capacity())
    } else if let Some(o) =
        output.downcast_ref::<operation::transact_get_items::TransactGetItemsOutput>()
    {
        units(o.consumed_capacity())
    } else {
        None
    };
    OutputFacts {
        consumed_capacity: consumed,
        ..OutputFacts::default()
    }
}

/// The error code and throttling reasons of a DynamoDB error body (`{"__type":
/// "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", "ThrottlingReasons":
/// [{"reason": "..."}]}`): one reader for every operation's errors. `None` when the body is
/// not DynamoDB's error JSON.
pub(crate) fn error_body(body: &[u8]) -> Option<(String, Vec<String>)> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let kind = value.get("__type")?.as_str()?;
    let code = kind.rsplit('#').next().unwrap_or(kind).to_owned();
    let reasons = value
        .get("ThrottlingReasons")
        .and_then(serde_json::Value::as_array)
        .map(|reasons| {
            reasons
                .iter()
                .filter_map(|r| r.get("reason").and_then(serde_json::Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((code, reasons))
}

/// Whether DynamoDB's error `code` is a throttle.
pub(crate) fn is_throttle(code: &str) -> bool {
    matches!(
        code,
        "ProvisionedThroughputExceededException" | "ThrottlingException" | "RequestLimitExceeded"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::query::QueryInput;
    use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

    #[test]
    fn a_query_input_gives_its_opentelemetry_attributes() {
        let input = QueryInput::builder()
            .table_name("t")
            .index_name("gsi1")
            .limit(7)
            .scan_index_forward(false)
            .build()
            .unwrap();
        let facts = input_facts(&Input::erase(input)).unwrap();
        assert_eq!(facts.table_names, ["t"]);
        assert_eq!(facts.index_name.as_deref(), Some("gsi1"));
        assert_eq!((facts.limit, facts.scan_forward), (Some(7), Some(false)));
    }

    #[test]
    fn a_transaction_names_each_table_once() {
        let put = |table: &str| {
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(table)
                        .set_item(Some(Default::default()))
                        .build()
                        .unwrap(),
                )
                .build()
        };
        let input = operation::transact_write_items::TransactWriteItemsInput::builder()
            .transact_items(put("a"))
            .transact_items(put("b"))
            .transact_items(put("a"))
            .build()
            .unwrap();
        assert_eq!(
            input_facts(&Input::erase(input)).unwrap().table_names,
            ["a", "b"]
        );
        assert_eq!(
            input_facts(&Input::erase(42_u32)),
            None,
            "not an operation's input"
        );
    }

    #[test]
    fn error_bodies_give_the_code_and_the_throttling_reasons() {
        let body = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "message":"slow down","ThrottlingReasons":[{"reason":"TableWriteKeyRangeThroughputExceeded","resource":"arn"}]}"#;
        let (code, reasons) = error_body(body).unwrap();
        assert_eq!(code, "ProvisionedThroughputExceededException");
        assert_eq!(reasons, ["TableWriteKeyRangeThroughputExceeded"]);
        assert!(is_throttle(&code));
        assert_eq!(error_body(b"<html>"), None);
    }
}

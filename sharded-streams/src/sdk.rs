//! Records of the DynamoDB Streams API (`aws-sdk-dynamodbstreams`), feature `sdk`.

use aws_sdk_dynamodb::types::AttributeValue as Value;
use aws_sdk_dynamodbstreams::types::AttributeValue as StreamValue;
use sharded_runtime::keys::Item;
use std::collections::HashMap;

use crate::error::RecordError;
use crate::record::Record;

impl Record {
    /// Reads a record of `GetRecords` (the `aws-sdk-dynamodbstreams` crate), converting its
    /// images to the DynamoDB SDK's items.
    ///
    /// Feature `sdk`. A record without an event name, a sequence number or a `dynamodb`
    /// part, or with a value of a type this version does not know, is a [`RecordError`].
    ///
    /// ```
    /// use aws_sdk_dynamodbstreams::types::{
    ///     AttributeValue, OperationType, Record as StreamsRecord, StreamRecord, StreamViewType,
    /// };
    /// use sharded_streams::{EventName, Record};
    /// let keys = std::collections::HashMap::from([("pk".to_string(), AttributeValue::S("GAME#g1#3".into()))]);
    /// let sdk = StreamsRecord::builder()
    ///     .event_name(OperationType::Insert)
    ///     .dynamodb(
    ///         StreamRecord::builder()
    ///             .sequence_number("100000000000000000001")
    ///             .set_keys(Some(keys.clone()))
    ///             .set_new_image(Some(keys))
    ///             .stream_view_type(StreamViewType::NewAndOldImages)
    ///             .build(),
    ///     )
    ///     .build();
    /// let record = Record::from_sdk(&sdk)?;
    /// assert_eq!(record.event, EventName::Insert);
    /// assert!(record.new_image.is_some() && record.old_image.is_none());
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn from_sdk(record: &aws_sdk_dynamodbstreams::types::Record) -> Result<Self, RecordError> {
        let change = record.dynamodb.as_ref().ok_or(RecordError::NoChange)?;
        let image = |image: &Option<HashMap<String, StreamValue>>| {
            image.as_ref().map(convert_item).transpose()
        };
        Record::from_parts(
            record.event_name.as_ref().map(|e| e.as_str()),
            change.sequence_number.as_deref(),
            image(&change.keys)?.unwrap_or_default(),
            image(&change.old_image)?,
            image(&change.new_image)?,
            change
                .stream_view_type
                .as_ref()
                .map(|v| v.as_str().to_owned()),
        )
    }
}

/// The DynamoDB SDK's item of a Streams SDK's one.
fn convert_item(item: &HashMap<String, StreamValue>) -> Result<Item, RecordError> {
    item.iter()
        .map(|(name, value)| {
            convert(value)
                .map(|v| (name.clone(), v))
                .ok_or_else(|| RecordError::UnknownValue {
                    attribute: name.clone(),
                })
        })
        .collect()
}

/// One value, or `None` for a type this version does not know.
fn convert(value: &StreamValue) -> Option<Value> {
    let blob = |b: &aws_sdk_dynamodbstreams::primitives::Blob| {
        aws_sdk_dynamodb::primitives::Blob::new(b.as_ref())
    };
    Some(match value {
        StreamValue::S(s) => Value::S(s.clone()),
        StreamValue::N(n) => Value::N(n.clone()),
        StreamValue::B(b) => Value::B(blob(b)),
        StreamValue::Bool(b) => Value::Bool(*b),
        StreamValue::Null(n) => Value::Null(*n),
        StreamValue::Ss(v) => Value::Ss(v.clone()),
        StreamValue::Ns(v) => Value::Ns(v.clone()),
        StreamValue::Bs(v) => Value::Bs(v.iter().map(blob).collect()),
        StreamValue::L(v) => Value::L(v.iter().map(convert).collect::<Option<_>>()?),
        StreamValue::M(m) => Value::M(
            m.iter()
                .map(|(k, v)| Some((k.clone(), convert(v)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodbstreams::primitives::Blob;

    #[test]
    fn every_value_type_converts_nested() {
        let nested = StreamValue::M(HashMap::from([(
            "l".to_string(),
            StreamValue::L(vec![
                StreamValue::S("s".into()),
                StreamValue::N("1.5".into()),
                StreamValue::B(Blob::new(*b"b")),
                StreamValue::Bool(true),
                StreamValue::Null(true),
                StreamValue::Ss(vec!["a".into()]),
                StreamValue::Ns(vec!["2".into()]),
                StreamValue::Bs(vec![Blob::new(*b"x")]),
            ]),
        )]));
        let item = convert_item(&HashMap::from([("m".to_string(), nested)])).expect("known types");
        let Some(Value::M(m)) = item.get("m") else {
            panic!("a map: {item:?}")
        };
        let Some(Value::L(l)) = m.get("l") else {
            panic!("a list: {m:?}")
        };
        assert_eq!(l[0], Value::S("s".into()));
        assert_eq!(l[1], Value::N("1.5".into()));
        assert_eq!(
            l[2],
            Value::B(aws_sdk_dynamodb::primitives::Blob::new(*b"b"))
        );
        assert_eq!(l[3], Value::Bool(true));
        assert_eq!(
            l[7],
            Value::Bs(vec![aws_sdk_dynamodb::primitives::Blob::new(*b"x")])
        );
    }

    #[test]
    fn a_record_without_its_parts_is_an_error() {
        let record = aws_sdk_dynamodbstreams::types::Record::builder().build();
        assert_eq!(Record::from_sdk(&record), Err(RecordError::NoChange));
        let record = aws_sdk_dynamodbstreams::types::Record::builder()
            .dynamodb(aws_sdk_dynamodbstreams::types::StreamRecord::builder().build())
            .build();
        assert!(matches!(
            Record::from_sdk(&record),
            Err(RecordError::EventName { .. })
        ));
    }
}

//! Records of a Lambda event (`aws_lambda_events`' DynamoDB event), feature `lambda`.

use aws_lambda_events::event::dynamodb::EventRecord;
use sharded_runtime::keys::Item;

use crate::error::RecordError;
use crate::record::Record;

impl Record {
    /// Reads a record of a Lambda function's DynamoDB event
    /// (`aws_lambda_events::event::dynamodb::EventRecord`).
    ///
    /// Feature `lambda`. Its images arrive as `serde_dynamo` items and are converted to the
    /// DynamoDB SDK's; an image the event leaves out (it deserialises as empty) is `None`. A
    /// record without a known event name or a sequence number is a [`RecordError`].
    ///
    /// ```
    /// use aws_lambda_events::event::dynamodb::Event;
    /// use sharded_streams::{EventName, Record};
    /// let event: Event = serde_json::from_str(r#"{"Records": [{
    ///     "eventID": "1", "eventName": "REMOVE", "awsRegion": "eu-west-1",
    ///     "dynamodb": {
    ///         "Keys": {"pk": {"S": "GAME#g1#3"}},
    ///         "OldImage": {"pk": {"S": "GAME#g1#3"}, "score": {"N": "7"}},
    ///         "SequenceNumber": "100000000000000000042", "SizeBytes": 40,
    ///         "StreamViewType": "NEW_AND_OLD_IMAGES"
    ///     }
    /// }]}"#)?;
    /// let record = Record::from_lambda(&event.records[0])?;
    /// assert_eq!(record.event, EventName::Remove);
    /// assert_eq!(record.view_type.as_deref(), Some("NEW_AND_OLD_IMAGES"));
    /// assert!(record.new_image.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_lambda(record: &EventRecord) -> Result<Self, RecordError> {
        let change = &record.change;
        let item = |image: &serde_dynamo::Item| -> Item { image.clone().into() };
        Record::from_parts(
            Some(record.event_name.as_str()),
            change.sequence_number.as_deref(),
            item(&change.keys),
            Some(item(&change.old_image)),
            Some(item(&change.new_image)),
            change.stream_view_type.as_ref().map(ToString::to_string),
        )
    }
}

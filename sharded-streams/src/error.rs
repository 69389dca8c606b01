//! What can go wrong reading a stream record or folding it into a total.

/// A stream record that cannot be read: a field every DynamoDB stream record carries is
/// missing or malformed. Nothing of it is guessed; the record is reported as it is.
///
/// ```
/// use sharded_streams::{Record, RecordError};
/// # #[cfg(feature = "lambda")] {
/// let record = aws_lambda_events::event::dynamodb::EventRecord::default();
/// // No event name, no sequence number: not a record DynamoDB wrote.
/// assert!(matches!(Record::from_lambda(&record), Err(RecordError::EventName { .. })));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The event name is not `INSERT`, `MODIFY` or `REMOVE`.
    #[error(
        "a stream record's event name is {found:?}, not INSERT, MODIFY or REMOVE: pass only \
         records of a DynamoDB stream"
    )]
    EventName {
        /// What the record holds (empty when it has none).
        found: String,
    },
    /// The record has no sequence number, or one that is not 1 to 40 decimal digits.
    #[error(
        "a stream record's sequence number is {found:?}, not 1 to 40 decimal digits: pass only \
         records of a DynamoDB stream"
    )]
    SequenceNumber {
        /// What the record holds (empty when it has none; the first 60 characters).
        found: String,
    },
    /// The record has no `dynamodb` part (keys, images, sequence number).
    #[error("a stream record has no `dynamodb` part: pass only records of a DynamoDB stream")]
    NoChange,
    /// An attribute value of an image is of a type this version does not know.
    #[error(
        "attribute `{attribute}` of a stream record holds a value of a type this version \
         does not know: upgrade the AWS SDK crates and `sharded` together"
    )]
    UnknownValue {
        /// The attribute (its top-level name).
        attribute: String,
    },
}

/// Why one record was not folded into a total.
///
/// ```
/// use sharded_streams::FoldError;
/// let e = FoldError::NeedsImages { view_type: Some("KEYS_ONLY".into()) };
/// assert!(e.to_string().contains("NEW_AND_OLD_IMAGES"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FoldError {
    /// The record carries no image to compute a delta from: the stream's view type must be
    /// `NEW_AND_OLD_IMAGES`.
    #[error(
        "the record has no image to compute a delta from (stream view type {}): enable the \
         table's stream with NEW_AND_OLD_IMAGES",
        view_type.as_deref().unwrap_or("unknown")
    )]
    NeedsImages {
        /// The view type the record says its stream has.
        view_type: Option<String>,
    },
    /// A counter row's count is not an integer number.
    #[error(
        "the counter row `{key}` holds `{attribute}` = {found:?}, not an integer: the total \
         counts only what `ShardedCounter` writes"
    )]
    NotACount {
        /// The row's partition key.
        key: String,
        /// The count attribute.
        attribute: String,
        /// What it holds.
        found: String,
    },
    /// The record's item is tagged as the entity counted but does not decode as it (a field
    /// missing or of another type: written by another version of the entity): counting it
    /// or leaving it out could both be wrong, so the fold stops there.
    #[error(
        "the item `{key}` is tagged as the entity counted but does not decode as it ({reason}): \
         it cannot be counted or left out without making the total wrong; make the entity read \
         it (a `#[serde(default)]` on a new field, say), then deliver the batch again"
    )]
    Undecodable {
        /// The item's key as [`PhysicalKey`](crate::PhysicalKey) displays it.
        key: String,
        /// The decoding error.
        reason: String,
    },
    /// The total would leave the range of an `i64`.
    #[error("the delta of the record does not fit a 64-bit total")]
    Overflow,
    /// DynamoDB refused or failed the update of the total (retry the delivery).
    #[error(transparent)]
    Dynamo(#[from] sharded_runtime::Error),
}

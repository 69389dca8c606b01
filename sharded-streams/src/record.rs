//! A stream record in one form, whichever way it was delivered (the Streams API's `Record`,
//! a Lambda event's record): its event, sequence number, keys and images.

use sharded_runtime::keys::Item;

use crate::error::RecordError;
use crate::sequence::SequenceNumber;

/// What happened to the item, as the stream names it.
///
/// ```
/// use sharded_streams::EventName;
/// assert_eq!(EventName::parse("REMOVE"), Some(EventName::Remove));
/// assert_eq!(EventName::Insert.as_str(), "INSERT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventName {
    /// A new item was written (`INSERT`).
    Insert,
    /// An existing item was changed (`MODIFY`).
    Modify,
    /// An item was deleted (`REMOVE`).
    Remove,
}

impl EventName {
    /// The event named `text` (`INSERT`, `MODIFY`, `REMOVE`), or `None`.
    ///
    /// ```
    /// # use sharded_streams::EventName;
    /// assert_eq!(EventName::parse("MODIFY"), Some(EventName::Modify));
    /// assert_eq!(EventName::parse("modify"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "INSERT" => Some(EventName::Insert),
            "MODIFY" => Some(EventName::Modify),
            "REMOVE" => Some(EventName::Remove),
            _ => None,
        }
    }

    /// The name as the stream writes it.
    ///
    /// ```
    /// # use sharded_streams::EventName;
    /// assert_eq!(EventName::Modify.as_str(), "MODIFY");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Insert => "INSERT",
            EventName::Modify => "MODIFY",
            EventName::Remove => "REMOVE",
        }
    }
}

/// One stream record, read from the Streams API ([`Record::from_sdk`], feature `sdk`) or a
/// Lambda event ([`Record::from_lambda`], feature `lambda`), or built by hand
/// ([`Record::new`]): what [`decode`](crate::decode) and the folds of a
/// [`Total`](crate::Total) read.
///
/// The images are items as the AWS SDK for DynamoDB holds them
/// ([`Item`](sharded_runtime::keys::Item)); an image the stream does not carry (its view type
/// leaves it out, or the event has none: no old image of an `INSERT`) is `None`.
///
/// ```
/// use sharded::aws_sdk_dynamodb::types::AttributeValue;
/// use sharded_streams::{EventName, Record, SequenceNumber};
/// let keys = [("pk".to_string(), AttributeValue::S("GAME#g1#3".into()))].into_iter().collect();
/// let record = Record::new(EventName::Remove, SequenceNumber::parse("100")?, keys);
/// assert_eq!(record.event, EventName::Remove);
/// assert!(record.old_image.is_none());
/// # Ok::<(), sharded_streams::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Record {
    /// What happened.
    pub event: EventName,
    /// Where the record is in its stream shard.
    pub sequence_number: SequenceNumber,
    /// The item's key attributes (every view type carries them).
    pub keys: Item,
    /// The item before the change, when the stream carries it.
    pub old_image: Option<Item>,
    /// The item after the change, when the stream carries it.
    pub new_image: Option<Item>,
    /// The stream's view type as the record states it (`NEW_AND_OLD_IMAGES`, `KEYS_ONLY`,
    /// ...), when it does.
    pub view_type: Option<String>,
}

impl Record {
    /// A record of `event` at `sequence_number` for the item with `keys`, without images
    /// (add them with [`with_images`](Self::with_images)): for tests, and for records that
    /// arrive some other way (a Kinesis data stream, a replay file).
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::types::AttributeValue;
    /// use sharded_streams::{EventName, Record, SequenceNumber};
    /// let item: sharded::keys::Item =
    ///     [("pk".to_string(), AttributeValue::S("GAME#g1#3".into()))].into_iter().collect();
    /// let record = Record::new(EventName::Insert, SequenceNumber::parse("7")?, item.clone())
    ///     .with_images(None, Some(item));
    /// assert!(record.new_image.is_some());
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn new(event: EventName, sequence_number: SequenceNumber, keys: Item) -> Self {
        Record {
            event,
            sequence_number,
            keys,
            old_image: None,
            new_image: None,
            view_type: None,
        }
    }

    /// The same record with these images (an empty image counts as none).
    ///
    /// ```
    /// # use sharded_streams::{EventName, Record, SequenceNumber};
    /// let record = Record::new(EventName::Remove, SequenceNumber::parse("7")?, Default::default())
    ///     .with_images(Some(Default::default()), None);
    /// assert!(record.old_image.is_none(), "an empty image is no image");
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn with_images(mut self, old: Option<Item>, new: Option<Item>) -> Self {
        self.old_image = old.filter(|i| !i.is_empty());
        self.new_image = new.filter(|i| !i.is_empty());
        self
    }

    /// The same record with the view type its stream states.
    ///
    /// ```
    /// # use sharded_streams::{EventName, Record, SequenceNumber};
    /// let record = Record::new(EventName::Remove, SequenceNumber::parse("7")?, Default::default())
    ///     .with_view_type("KEYS_ONLY");
    /// assert_eq!(record.view_type.as_deref(), Some("KEYS_ONLY"));
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn with_view_type(mut self, view_type: impl Into<String>) -> Self {
        self.view_type = Some(view_type.into());
        self
    }

    /// Builds a record from its parts as an input holds them: the event name and sequence
    /// number checked, empty images taken as none. Only the inputs behind a feature use it.
    #[cfg_attr(not(any(feature = "sdk", feature = "lambda")), allow(dead_code))]
    pub(crate) fn from_parts(
        event: Option<&str>,
        sequence_number: Option<&str>,
        keys: Item,
        old_image: Option<Item>,
        new_image: Option<Item>,
        view_type: Option<String>,
    ) -> Result<Self, RecordError> {
        let event = event
            .and_then(EventName::parse)
            .ok_or_else(|| RecordError::EventName {
                found: event.unwrap_or_default().chars().take(60).collect(),
            })?;
        let sequence_number = SequenceNumber::parse(sequence_number.unwrap_or_default())?;
        let mut record =
            Record::new(event, sequence_number, keys).with_images(old_image, new_image);
        record.view_type = view_type;
        Ok(record)
    }
}

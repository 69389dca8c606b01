//! What a stream record is to an entity (or a collection): a typed change, a layout move,
//! a record that is not its, or one that lacks the image it needs.

use sharded_runtime::query::ForeignReason;

use crate::record::EventName;
use crate::sequence::SequenceNumber;

/// What [`decode`](crate::decode) made of one stream record: a change of the source's items,
/// or why it is not one. Nothing is dropped: every record is one of these.
///
/// ```no_run
/// # use sharded_streams::{decode, ChangeKind, Decoded, Record};
/// # #[derive(serde::Serialize, serde::Deserialize, sharded::ShardedEntity)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// # #[sk(template = "SCORE#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # fn demo(record: &Record) {
/// match decode::<Score>(record) {
///     Decoded::Change(change) => match change.kind {
///         ChangeKind::Move(_) => {} // the same item at another shard: nothing happened
///         ChangeKind::Insert { new } => println!("{} scored {}", new.player_id, new.score),
///         ChangeKind::Modify { new, .. } => println!("{} now {}", new.player_id, new.score),
///         ChangeKind::Remove { old } => println!("{} left", old.player_id),
///         _ => {}
///     },
///     Decoded::NotOurs(other) => println!("not a score: {other}"),
///     Decoded::NeedsImage(missing) => eprintln!("{missing}"),
///     _ => {}
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decoded<S> {
    /// A change of one of the source's items.
    Change(Change<S>),
    /// The record's item is not the source's: another entity's, a record of another service,
    /// or an item that does not read as the entity.
    NotOurs(NotOurs),
    /// The record lacks an image the decoding needs: the stream's view type leaves it out.
    NeedsImage(NeedsImage),
}

/// One change of an item of the source, with where it happened.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// use sharded_streams::{decode, Decoded, EventName, Record, SequenceNumber};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// # #[sk(template = "SCORE#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// let item = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 }.to_item()?;
/// let record = Record::new(EventName::Insert, SequenceNumber::parse("7")?, item.clone())
///     .with_images(None, Some(item));
/// let Decoded::Change(change) = decode::<Score>(&record) else { panic!("a score") };
/// assert_eq!(change.key.pk, "GAME#g1");
/// assert_eq!(change.physical_pk, Score::pk("g1", "p1")?);
/// assert_eq!(change.shard, Some(Score::shard_for("p1")?));
/// assert!(!change.is_move() && !change.previous_layout);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Change<S> {
    /// The record's sequence number (ordered within its stream shard: see the guide's
    /// chapter on order).
    pub sequence_number: SequenceNumber,
    /// The logical item: its partition key with the shard stripped, and its sort key. The
    /// same for every copy of one item, whichever layout or shard holds it.
    pub key: LogicalKey,
    /// The partition key as stored (with its shard).
    pub physical_pk: String,
    /// The shard the item is stored on (`None` unsharded, or at an unsharded legacy key).
    pub shard: Option<u32>,
    /// Whether the item is stored at the previous layout's place of a declared transition.
    pub previous_layout: bool,
    /// What happened.
    pub kind: ChangeKind<S>,
}

impl<S> Change<S> {
    /// Whether the change is a layout move ([`ChangeKind::Move`]): the same logical item,
    /// unchanged, at another place.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{aws_sdk_dynamodb::types::AttributeValue, ShardedEntity};
    /// # use sharded_streams::{decode, Decoded, EventName, Record, SequenceNumber};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
    /// # #[sk(template = "SCORE#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// let mut copy = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 }.to_item()?;
    /// copy.insert("_sharded_move".into(), AttributeValue::S("copy".into()));
    /// let record = Record::new(EventName::Insert, SequenceNumber::parse("7")?, copy.clone())
    ///     .with_images(None, Some(copy));
    /// let Decoded::Change(change) = decode::<Score>(&record) else { panic!("a score") };
    /// assert!(change.is_move());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_move(&self) -> bool {
        matches!(self.kind, ChangeKind::Move(_))
    }
}

/// The logical identity of an item: what stays the same when a layout change moves it.
///
/// ```
/// use sharded_streams::LogicalKey;
/// let key = LogicalKey { pk: "GAME#g1".into(), sk: Some("SCORE#p1".into()) };
/// assert_eq!(key.to_string(), "GAME#g1 / SCORE#p1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalKey {
    /// The partition key under the current layout without its shard (`GAME#g1` of
    /// `GAME#g1#3`).
    pub pk: String,
    /// The sort key, in a table with one.
    pub sk: Option<String>,
}

impl std::fmt::Display for LogicalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.sk {
            Some(sk) => write!(f, "{} / {sk}", self.pk),
            None => f.write_str(&self.pk),
        }
    }
}

/// What happened to the item.
///
/// ```
/// use sharded_streams::ChangeKind;
/// let kind: ChangeKind<u64> = ChangeKind::Modify { old: None, new: 7 };
/// assert!(matches!(kind, ChangeKind::Modify { old: None, .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChangeKind<S> {
    /// A new logical item.
    Insert {
        /// The item written.
        new: S,
    },
    /// A logical item changed. `old` is `None` when the write replaced the item at a new
    /// place during a layout transition (the stream shows an `INSERT` there, and the old
    /// copy's delete as a move's departure), so the item before is not in this record.
    Modify {
        /// The item before, when this record holds it.
        old: Option<S>,
        /// The item after.
        new: S,
    },
    /// A logical item was deleted.
    Remove {
        /// The item deleted.
        old: S,
    },
    /// A layout move: the same logical item, unchanged, copied to its new place, marked or
    /// deleted at its old one. A consumer of the logical content ignores it.
    Move(Move<S>),
}

/// The steps of a layout move, as the stream shows them.
///
/// ```
/// use sharded_streams::Move;
/// let step: Move<u8> = Move::Departure { old: 1 };
/// assert!(matches!(step, Move::Departure { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Move<S> {
    /// The copy written at the item's new place.
    Arrival {
        /// The item, as copied.
        new: S,
    },
    /// The old copy marked as moved, before its delete.
    Mark {
        /// The old copy before the mark.
        old: S,
        /// The old copy with the mark.
        new: S,
    },
    /// The old copy deleted.
    Departure {
        /// The old copy deleted.
        old: S,
    },
}

/// Where a stored item is: its partition and sort key as the record holds them.
///
/// ```
/// use sharded_streams::PhysicalKey;
/// let key = PhysicalKey { pk: Some("GAME#g1#3".into()), sk: None };
/// assert_eq!(key.to_string(), "GAME#g1#3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PhysicalKey {
    /// The partition key, when it is a string.
    pub pk: Option<String>,
    /// The sort key, when the table has one and it is a string.
    pub sk: Option<String>,
}

impl std::fmt::Display for PhysicalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.pk.as_deref().unwrap_or("<no string partition key>"))?;
        if let Some(sk) = &self.sk {
            write!(f, " / {sk}")?;
        }
        Ok(())
    }
}

/// A record whose item is not the source's, with why.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// use sharded_streams::{decode, Decoded, EventName, NotOursReason, Record, SequenceNumber};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// # #[sk(template = "SCORE#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}")]
/// # #[sk(template = "META")]
/// # struct Game { game_id: String }
/// let game = Game { game_id: "g1".into() }.to_item()?;
/// let record = Record::new(EventName::Insert, SequenceNumber::parse("9")?, game.clone())
///     .with_images(None, Some(game));
/// let Decoded::NotOurs(other) = decode::<Score>(&record) else { panic!("not a score") };
/// assert_eq!(other.reason, NotOursReason::OtherEntity { entity: "Game".into() });
/// assert!(other.to_string().contains("`Game`"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotOurs {
    /// The record's sequence number.
    pub sequence_number: SequenceNumber,
    /// The record's event.
    pub event: EventName,
    /// The item's key.
    pub key: PhysicalKey,
    /// Why it is not the source's.
    pub reason: NotOursReason,
}

impl std::fmt::Display for NotOurs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} at {}: {}",
            self.event.as_str(),
            self.key,
            self.sequence_number,
            self.reason
        )
    }
}

/// Why a record's item is not the source's.
///
/// ```
/// use sharded_streams::NotOursReason;
/// let reason = NotOursReason::Undecodable { reason: "missing field `score`".into() };
/// assert!(reason.to_string().contains("score"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotOursReason {
    /// Tagged as another entity: in a single-table design, that entity's item.
    OtherEntity {
        /// The entity its tag names.
        entity: String,
    },
    /// Foreign, as reads report it: untagged and not parsing as the entity's keys, keys of
    /// another shape, keys not in canonical form, or an untagged item that does not read as
    /// the entity.
    Foreign(ForeignReason),
    /// Tagged as the entity, but its image does not decode as it (a field missing or of
    /// another type: an item written by another version of the entity, say).
    Undecodable {
        /// The decoding error.
        reason: String,
    },
}

impl std::fmt::Display for NotOursReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOursReason::OtherEntity { entity } => write!(f, "an item of `{entity}`"),
            NotOursReason::Foreign(reason) => write!(f, "not the entity's: {reason}"),
            NotOursReason::Undecodable { reason } => {
                write!(f, "tagged as the entity but does not decode: {reason}")
            }
        }
    }
}

/// A record without an image its decoding needs.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// use sharded_streams::{decode, Decoded, EventName, Record, SequenceNumber};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// # #[sk(template = "SCORE#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// let keys = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 }.to_item()?;
/// // A stream of view type KEYS_ONLY: the keys, no image.
/// let record = Record::new(EventName::Modify, SequenceNumber::parse("9")?, keys)
///     .with_view_type("KEYS_ONLY");
/// let Decoded::NeedsImage(missing) = decode::<Score>(&record) else { panic!("no image") };
/// assert!(missing.to_string().contains("NEW_AND_OLD_IMAGES"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NeedsImage {
    /// The record's sequence number.
    pub sequence_number: SequenceNumber,
    /// The record's event.
    pub event: EventName,
    /// The item's key.
    pub key: PhysicalKey,
    /// The view type the record says its stream has, when it says.
    pub view_type: Option<String>,
}

/// The view type that carries every image a change needs: a `MODIFY` is told apart from a
/// move's mark by its old image, a `REMOVE` decoded from its old one, an `INSERT` from its new.
pub const NEEDED_VIEW_TYPE: &str = "NEW_AND_OLD_IMAGES";

impl std::fmt::Display for NeedsImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} record of {} at {} lacks an image (stream view type {}): enable the \
             table's stream with {NEEDED_VIEW_TYPE}",
            self.event.as_str(),
            self.key,
            self.sequence_number,
            self.view_type.as_deref().unwrap_or("not stated"),
        )
    }
}

//! DynamoDB Streams read back as typed changes of `sharded` entities, and totals kept from
//! the stream exactly once. Use it through the `sharded` facade as `sharded::streams`
//! (feature `streams`).
//!
//! A stream record carries a physical key (`GAME#g1#7`), and sharding changes what it means:
//! a layout move shows up as an `INSERT` at the new shard and a `REMOVE` at the old one, and
//! the records of one logical key arrive on as many stream shards as the key has shards.
//! [`decode`] reads a [`Record`] as a [`Change`] of an entity (or of a collection's member
//! enum): insert, modify or remove with the images decoded, its [`LogicalKey`] (the shard
//! stripped), its shard, and [`ChangeKind::Move`] for a layout move, so one `match` arm
//! ignores moves. A record that is not the entity's, or that lacks an image, says so
//! ([`Decoded`]): nothing is dropped.
//!
//! A [`Total`] folds a [`ShardedCounter`](sharded_runtime::ShardedCounter)'s increments, or
//! an entity's inserts and removes, into one item, exactly once per record
//! ([`Total::fold_counter`], [`Total::fold_count`]): a vote total becomes one `GetItem`.
//!
//! Records come from the Streams API ([`Record::from_sdk`], feature `sdk`) or a Lambda event
//! ([`Record::from_lambda`], feature `lambda`). The guide's chapter "Streams and Lambda"
//! (`sharded::guide::streams`) shows a Lambda handler and what order a consumer can rely on.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sharded::ShardedEntity;
//! use sharded_streams::{decode, ChangeKind, Decoded, EventName, Record, SequenceNumber};
//!
//! #[derive(ShardedEntity, Serialize, Deserialize, Debug)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
//! #[sk(template = "SCORE#{player_id}")]
//! struct Score { game_id: String, player_id: String, score: u64 }
//!
//! let item = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 }.to_item()?;
//! let record = Record::new(EventName::Remove, SequenceNumber::parse("42")?, item.clone())
//!     .with_images(Some(item), None);
//! match decode::<Score>(&record) {
//!     Decoded::Change(change) => match change.kind {
//!         ChangeKind::Move(_) => {}
//!         ChangeKind::Remove { old } => assert_eq!(old.player_id, "p1"),
//!         other => panic!("{other:?}"),
//!     },
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod change;
mod decode;
mod error;
#[cfg(feature = "lambda")]
mod lambda;
mod record;
#[cfg(feature = "sdk")]
mod sdk;
mod sequence;
mod total;

pub use change::{
    Change, ChangeKind, Decoded, LogicalKey, Move, NeedsImage, NotOurs, NotOursReason, PhysicalKey,
    NEEDED_VIEW_TYPE,
};
pub use decode::decode;
pub use error::{FoldError, RecordError};
pub use record::{EventName, Record};
pub use sequence::{SequenceNumber, MAX_SEQUENCE_DIGITS};
pub use total::{Applied, Folded, Stopped, Total};

//! How values become keys: the [`KeyPart`] encoding (implement it for your own key types),
//! the physical keys of a logical key ([`ShardKeys`], with a previous layout's during a
//! transition: [`Partitions`]), and an item with its key attributes ([`Item`], [`ItemKeys`]).
//!
//! ```
//! use sharded::keys::KeyPart;
//!
//! // Numbers are zero-padded so that keys sort like the values.
//! let mut key = String::new();
//! 42u64.write_key(&mut key)?;
//! assert_eq!(key, "00000000000000000042");
//! # Ok::<(), sharded::keys::KeyPartError>(())
//! ```
//!
//! The key model is the `sharded-keys` crate (no AWS types, no async); this module is its
//! public face, plus [`Item`], the map of DynamoDB values an item is stored as. The runtime
//! reaches the crate's modules under their old paths (`crate::keys::layout`, ...), so moving
//! them into a crate of their own changed no import of the runtime's.

pub use crate::item::Item;
pub(crate) use sharded_keys::{
    attribute, bucket, checks, encoding, error, generated, hash, layout, schema, shards,
    sort_condition, suffix, template,
};
#[doc(inline)]
pub use sharded_keys::{
    ItemKeyDisplay, ItemKeys, KeyArg, KeyAttribute, KeyPart, KeyPartDecode, KeyPartError, KeyValue,
    PartArg, Partitions, ShardKeys, ShardSuffix, MAX_SUFFIX_WIDTH,
};

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
//! This folder is also the runtime's key model: pure data and arithmetic, no AWS types, no
//! network, no clock. The derive's generated code describes an entity's keys with the
//! `const fn` constructors of [`schema`] and the key templates, so these types
//! can grow new kinds of layout without breaking the code users compiled. Its files (private;
//! what they hold is public through the items above and the modules named in brackets):
//!
//! | file | what it holds |
//! |---|---|
//! | `bucket` | time buckets (hour, day, ISO week, month): labels, arithmetic, ranges ([`bucket`](crate::bucket)) |
//! | `attribute` | `KeyAttribute`: the field types a multi-attribute key can hold, and their values |
//! | `encoding` | `KeyPart`: how one value is written into a key so keys sort like values |
//! | `template` | key templates: building physical keys and parsing them back |
//! | `shards` | the physical keys of one logical key, and random shards |
//! | `suffix` | how a shard number is spelled after a logical key (`#{shard}`, `#SHARD_{shard}`, `#{shard:02}`) |
//! | `table` | the table as data: key attribute and index names, the entity tag and how items are recognised ([`schema`]) |
//! | `layout` | one partition key's layout applied to values: an item's key and shard, every shard, the previous place |
//! | `hash.rs` | the shard hash specification and its test vectors ([`hash`], declared at the crate root) |
//! | `schema.rs` | the static description of an entity's keys, DynamoDB's key size limits; table definitions ([`schema`], declared at the crate root) |
//! | `collision` | whether two entities' templates can write the same physical key |
//! | `error` | `KeyError` (at the crate root) |

pub(crate) mod attribute;
pub(crate) mod bucket;
pub(crate) mod collision;
pub(crate) mod encoding;
pub(crate) mod error;
pub(crate) mod layout;
pub(crate) mod shards;
pub(crate) mod suffix;
pub(crate) mod table;
pub(crate) mod template;

// `hash.rs` and `schema.rs` are public modules of the crate root; the key model reaches them
// by their old paths too.
pub(crate) use crate::{hash, schema};

pub use crate::access::entity::{Item, ItemKeys};
pub use crate::item::ItemKeyDisplay;
pub use attribute::{KeyArg, KeyAttribute, KeyValue};
pub use encoding::{KeyPart, KeyPartDecode, KeyPartError};
pub use shards::{Partitions, ShardKeys};
pub use suffix::{ShardSuffix, MAX_SUFFIX_WIDTH};

//! The key model of `sharded`, as a crate of its own: how values become keys (the [`KeyPart`]
//! encoding), the physical keys of a logical key ([`ShardKeys`], with a previous layout's
//! during a transition: [`Partitions`]), an item's key attributes ([`ItemKeys`]), the shard
//! hash ([`hash`]), time buckets ([`bucket`]) and the static description of entities and
//! tables ([`schema`]).
//!
//! **Why a crate.** Keys are pure data and arithmetic: no AWS types, no network, no clock, no
//! tokio. Services that only build keys, the derive (which checks templates at compile time)
//! and the runtime (which reads and writes DynamoDB) all need the same definition of them; as
//! a crate below the runtime, Cargo keeps it that way, where a folder inside the runtime kept
//! it only by review (it once re-exported an AWS type). Users reach it through the `sharded`
//! facade (`sharded::keys`, `sharded::hash`, `sharded::schema`, `sharded::bucket`), whose
//! paths are the stable ones; the modules marked hidden here are the runtime's, not an API.
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
//! The derive's generated code describes an entity's keys with the
//! `const fn` constructors of [`schema`] and the key templates, so these types
//! can grow new kinds of layout without breaking the code users compiled. Its files (the
//! hidden ones are the runtime's; what they hold is public through the items above and the
//! modules named in brackets):
//!
//! | file | what it holds |
//! |---|---|
//! | `bucket` | time buckets (hour, day, ISO week, month): labels, arithmetic, ranges ([`bucket`]) |
//! | `attribute` | `KeyAttribute`: the field types a multi-attribute key can hold, and their values |
//! | `encoding` | `KeyPart`: how one value is written into a key so keys sort like values |
//! | `template` | key templates: building physical keys and parsing them back |
//! | `sort_condition` | typed sort-key conditions: a range on a template's field (or a multi-attribute key's) turned into exact bounds on the encoded keys; `SortKeyCondition`, `TemplateSort`, `AttributeSort` (`sharded::query`) |
//! | `shards` | the physical keys of one logical key, and random shards |
//! | `suffix` | how a shard number is spelled after a logical key (`#{shard}`, `#SHARD_{shard}`, `#{shard:02}`) |
//! | `table` | the table as data: key attribute and index names, the entity tag and how items are recognised ([`schema`]) |
//! | `layout` | one partition key's layout applied to values: an item's key and shard, every shard, the previous place |
//! | `hash` | the shard hash specification and its test vectors ([`hash`]) |
//! | `schema` | the static description of an entity's keys, DynamoDB's key size limits; table definitions ([`schema`]) |
//! | `item_keys` | an item's key attributes ([`ItemKeys`]) and their display in errors ([`ItemKeyDisplay`]) |
//! | `checks` | the compile-time checks generated code calls (`const fn`s over schemas, templates, suffixes) |
//! | `collision` | whether two entities' templates can write the same physical key |
//! | `const_str` | `&str` equality in a `const fn`, for the compile-time checks |
//! | `error` | [`KeyError`] |

#[doc(hidden)]
pub mod attribute;
pub mod bucket;
#[doc(hidden)]
pub mod checks;
#[doc(hidden)]
pub mod collision;
#[doc(hidden)]
pub mod const_str;
#[doc(hidden)]
pub mod encoding;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod generated;
pub mod hash;
#[doc(hidden)]
pub mod item_keys;
#[doc(hidden)]
pub mod layout;
pub mod schema;
#[doc(hidden)]
pub mod shards;
#[doc(hidden)]
pub mod sort_condition;
#[doc(hidden)]
pub mod suffix;
#[doc(hidden)]
pub mod table;
#[doc(hidden)]
pub mod template;

pub use attribute::{KeyArg, KeyAttribute, KeyValue};
pub use encoding::{KeyPart, KeyPartDecode, KeyPartError, PartArg, UnknownField};
pub use error::KeyError;
pub use item_keys::{ItemKeyDisplay, ItemKeys};
pub use shards::{Partitions, ShardKeys};
pub use suffix::{ShardSuffix, MAX_SUFFIX_WIDTH};
pub use table::ShardedTable;

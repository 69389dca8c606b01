//! The key model: how field values become physical partition and sort keys, and back.
//!
//! Pure data and arithmetic: no AWS types, no network, no clock. Everything here can be used
//! and tested alone, and the derive's generated code describes an entity's keys with the
//! `const fn` constructors of [`schema`] and [`template`], so these types can grow new kinds
//! of layout without breaking the code users compiled.
//!
//! | file | what it holds |
//! |---|---|
//! | [`bucket`] | time buckets (hour, day, ISO week, month): labels, arithmetic, ranges |
//! | [`encoding`] | `KeyPart`: how one value is written into a key so keys sort like values |
//! | [`template`] | key templates: building physical keys and parsing them back |
//! | [`shards`] | the physical keys of one logical key, and random shards |
//! | [`layout`] | one partition key's layout applied to values: an item's key and shard, every shard, the previous place |
//! | [`hash`] | the shard hash specification and its test vectors |
//! | [`schema`] | the static description of an entity's keys, DynamoDB's key size limits; table definitions |
//! | `collision` | whether two entities' templates can write the same physical key |
//! | [`error`] | `KeyError` |

pub mod bucket;
pub(crate) mod collision;
pub mod encoding;
pub mod error;
pub mod hash;
pub mod layout;
pub mod schema;
pub mod shards;
pub mod template;

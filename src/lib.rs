//! Compile-time checked write sharding for DynamoDB single-table designs.
//!
//! See the README for the guide; this page lists what the crate exports.
#![warn(missing_docs)]

pub use sharded_derive::ShardedEntity;
pub use sharded_runtime::*;

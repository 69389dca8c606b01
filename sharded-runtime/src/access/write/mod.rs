//! The writes, one operation per file: typed [`update`]s, [`transaction`]s and how they are
//! sent and sent again ([`idempotent`]), sharded [`counter`]s, the guards every write carries
//! ([`write_rules`]), what a write does about an item's previous place ([`settle`]), and one
//! item's [`moves`] to its current place, which every write during a layout change and the
//! operator's migration share.

pub(crate) mod counter;
pub(crate) mod idempotent;
pub(crate) mod moves;
pub(crate) mod settle;
pub(crate) mod transaction;
pub(crate) mod update;
pub(crate) mod write_rules;

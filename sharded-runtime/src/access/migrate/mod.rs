//! The runtime's part of a layout migration: what must agree with every read and write, so
//! it is written once here; the runner that scans, paces and resumes is the operator crate's
//! (`sharded-ops`), which reaches these through `__ops`.
//!
//! | file | what it holds |
//! |---|---|
//! | `moves` | one item's move to its current place in one transaction (what a write that meets an item at its previous place does first), its parts the runner's copy shares, and the condition that an item is unchanged since read |

pub(crate) mod moves;

pub(crate) use moves::{move_item, MoveOutcome, Store};

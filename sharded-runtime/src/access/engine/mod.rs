//! The scatter-gather engine every read runs on: the plan and its requests over the shards
//! ([`scatter`], with what a transition adds), the k-way [`merge`] by sort key, the
//! [`cursor`] that resumes it, and the [`description`] of a query a cursor is bound to.

pub(crate) mod cursor;
pub(crate) mod description;
pub(crate) mod merge;
pub(crate) mod scatter;

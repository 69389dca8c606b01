//! The reads, one operation per file: the scatter-gather [`query`] (its builder, and `plan`,
//! how a query is planned), the [`range`] query over time buckets, the parallel [`scan`],
//! whole-key [`bounds`] with rank and neighbours, [`batch`] gets (and writes: one retry loop
//! for both), and the [`read_cache`] (single flight and the bounded cache of hot answers).
//! They run on the [`engine`](super::engine).

pub(crate) mod batch;
pub(crate) mod bounds;
pub(crate) mod query;
pub(crate) mod range;
pub(crate) mod read_cache;
pub(crate) mod scan;

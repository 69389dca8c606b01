//! The guide, by task: what to read when you want to do something.
//!
//! Each chapter is a page of this module, and every code block in it is compiled by
//! `cargo test` (those that need a table are compiled, not run). The same chapters are the
//! Markdown files under `docs/guide/` in the repository.
//!
//! | you want to | read |
//! |---|---|
//! | add the crate, declare an entity, create the table, write and read, test against DynamoDB Local | [`getting_started`] |
//! | know every attribute, every generated function, and what does not compile | [`declaring`] |
//! | compute a key or a shard from another language | [`keys`] |
//! | read a hot key: top-k, sort-key ranges, filters, several entities at once, some attributes, pages for a web client | [`reading`] |
//! | serve the same hot read to many callers | [`hot_reads`] |
//! | log by time (a daily ops log) and read time ranges | [`time_buckets`] |
//! | export or backfill every item of an entity | [`scanning`] |
//! | write: conditions, versions, timestamps, expiry, typed updates, transactions, exactly-once retries, the vote-counter pattern | [`writing`] |
//! | change `n`, or shard a key that was written unsharded, while the service runs | [`changing_layout`] |
//! | keep cold keys unsharded and widen only the hot ones, online, one key at a time | [`per_key`] |
//! | move a table other services write onto `sharded`: its names, its shard spelling, untagged items, hand-made counters, records that are not the entity's | [`adopting`] |
//! | find hot partitions before production, and choose `n` | [`hot_partitions`] |
//! | run the table: the hot-key report by logical key, table caps, the ops command line | [`operating`] |
//! | consume the table's stream (Lambda, or the Streams API): typed changes, layout moves told apart, the order to rely on, totals kept exactly once | [`streams`] |
//! | see what the library does: spans with OpenTelemetry's DynamoDB attributes, metrics through the `metrics` facade | [`telemetry`] |
//! | move from an earlier version: every moved, renamed or removed name | [`upgrading`] |

#[doc = include_str!("../docs/guide/getting_started.md")]
pub mod getting_started {}

#[doc = include_str!("../docs/guide/declaring.md")]
pub mod declaring {}

#[doc = include_str!("../docs/guide/keys.md")]
pub mod keys {}

#[doc = include_str!("../docs/guide/reading.md")]
pub mod reading {}

#[doc = include_str!("../docs/guide/hot_reads.md")]
pub mod hot_reads {}

#[doc = include_str!("../docs/guide/time_buckets.md")]
pub mod time_buckets {}

#[doc = include_str!("../docs/guide/scanning.md")]
pub mod scanning {}

#[doc = include_str!("../docs/guide/writing.md")]
pub mod writing {}

#[doc = include_str!("../docs/guide/changing_layout.md")]
pub mod changing_layout {}

#[doc = include_str!("../docs/guide/per_key.md")]
pub mod per_key {}

#[doc = include_str!("../docs/guide/adopting.md")]
pub mod adopting {}

#[doc = include_str!("../docs/guide/hot_partitions.md")]
pub mod hot_partitions {}

#[doc = include_str!("../docs/guide/operating.md")]
pub mod operating {}

#[doc = include_str!("../docs/guide/streams.md")]
pub mod streams {}

#[doc = include_str!("../docs/guide/telemetry.md")]
pub mod telemetry {}

#[doc = include_str!("../docs/guide/upgrading.md")]
pub mod upgrading {}

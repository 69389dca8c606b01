//! Test kit for [`sharded`](https://docs.rs/sharded): what tests, examples and benchmarks need
//! around DynamoDB, kept out of the runtime users deploy.
//!
//! | module | what it holds |
//! |---|---|
//! | [`backend`] | [`Backend`](backend::Backend): the DynamoDB of this process, embedded by default (no Java, no npm), DynamoDB Local as the reference |
//! | [`local`] | [`DynamoDbLocal`](local::DynamoDbLocal): fetches, caches and starts DynamoDB Local, one per process |
//! | [`faults`] | [`Faults`](faults::Faults): SDK-level latency and fault injection, request counts |
//! | [`proxy`] | [`FaultProxy`](proxy::FaultProxy): the same faults for another process, as an HTTP proxy in front of the backend |
//! | [`emulator`] | [`KeyLimitEmulator`](emulator::KeyLimitEmulator): DynamoDB's per-partition-key limits in front of either backend |
//! | [`history`] | [`History`](history::History): a log of a test's writes, to check reads made while they ran |
//! | [`streams`] | [`read_all`](streams::read_all): every record of a table's stream, parents before children |
//!
//! `faults` and `emulator` wrap the SDK's HTTP client, so everything above it (the SDK's
//! retries and error parsing, `sharded`'s error classification) runs as against DynamoDB, on
//! either backend.
//!
//! ```no_run
//! use sharded::capacity::PerKeyLimits;
//! use sharded_testkit::emulator::KeyLimitEmulator;
//! use sharded_testkit::backend::{unique_table_name, Backend};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let backend = Backend::shared().await?;
//!     let sdk_config = backend.sdk_config().await;
//!     // A tenth of DynamoDB's per-key limits, 1 s of burst: a hot key throttles within a second.
//!     let emulator = KeyLimitEmulator::new(PerKeyLimits::scaled(0.1)).with_burst_seconds(1.0);
//!     let client = emulator.client(&sdk_config);
//!     let table = unique_table_name("orders");
//!     // ... create `table` through `client` (the emulator learns its keys) and run the test ...
//!     # let _ = (client, table);
//!     println!("{:?}", emulator.counts());
//!     Ok(())
//! }
//! ```
//!
//! The only `unsafe` code is the DynamoDB Local harness's orphan prevention
//! (`prctl(PR_SET_PDEATHSIG)` and an `atexit` hook), so that no JVM outlives a test process,
//! and the `atexit` hook that lists the tests skipped for a behaviour their backend lacks.
#![warn(missing_docs)]
// Denied, not forbidden, so that `local::orphans` and `backend::skips` alone can allow it.
#![deny(unsafe_code)]

pub mod backend;
mod client;
pub mod emulator;
pub mod faults;
pub mod history;
mod intercept;
mod item;
pub mod local;
pub mod proxy;
mod response;
pub mod streams;

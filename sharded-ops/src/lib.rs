//! The operator's side of `sharded`: what a person or a job runs against a table, not what a
//! service runs on each request.
//!
//! **Why a crate.** A service that reads and writes needs keys and the runtime; it does not
//! need the shard planner's arithmetic, the hot-key report and its advice, recordings, table
//! caps, the migration runner and its checkpoints, or the steps that change a per-key layout
//! (it reads the layout directory; an operator changes it). Here, below the command line
//! (`sharded-cli`) and above the runtime, Cargo keeps that code out of a service's build: the
//! `sharded` facade re-exports it under its `ops` feature (on by default, so the paths
//! `sharded::capacity::plan`, `sharded::migrate::Migration`, `sharded::layouts::KeyMigration`,
//! ... stay where they were), and a service that turns the feature off
//! (`default-features = false`) does not compile it.
//!
//! **What such a service leaves out, and keeps.** Of `sharded::capacity` it leaves out the
//! hot-key report (`HotKeyReport`, its flags, advice and rollup by logical key, and
//! `ReportHotKeys`, which gives the collector its `stats.report()`), recordings (`Recording`,
//! Contributor Insights' rule reports), `TableCaps`, the shard planner (`plan`) and the layout
//! policy (`LayoutPolicy`); of `sharded::layouts`, the steps of a change (`ChangeLayout`,
//! `KeyMigration`). It keeps what it runs on each request: units, `PerKeyLimits`, clocks and
//! the collector `HotKeyStats` (`Repo::with_stats` records into it), and the layout directory
//! with what `repo.layouts()` reads of it. A service that prints the report of its collector,
//! or saves a recording of it for the command line, turns the feature on.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capacity;
pub mod layouts;
pub mod migrate;

//! Capacity, the operator's side: the hot-key report of a collector or a recording, its flags
//! and advice, table caps, and the shard planner.
//!
//! - **The hot-key report**: [`HotKeyReport`] names the hot keys of a
//!   [`HotKeyStats`](sharded_runtime::capacity::HotKeyStats) and what to do: per logical key
//!   ([`LogicalKeyReport`]: shards rolled up, per-second peak and p99 against the per-key
//!   limits, throttles by `ThrottlingReasons` reason, shard spread, a [`HotKeyPattern`] and
//!   [`Advice`]), as a table (`Display`) or JSON ([`HotKeyReport::to_json`]), keys hashed on
//!   request ([`HotKeyReport::redact`]). [`ReportHotKeys`] gives the collector its
//!   `stats.report()` and `stats.recording()`.
//! - **Recordings**: [`Recording`] is a collector's window as data (JSON), to report on
//!   later or elsewhere, or read from a CloudWatch Contributor Insights rule report
//!   ([`Recording::from_contributor_insights`]).
//! - **Table caps**: [`TableCaps`] reads a table's warm throughput, on-demand maximum and
//!   provisioned capacity (`DescribeTable`) and names the `UpdateTable` a load needs.
//! - **The planner**: [`plan`] turns a peak load into a shard count, showing its arithmetic.
//! - **The layout policy**: [`LayoutPolicy`] widens a per-key entity's hot keys to the
//!   planner's count and narrows them back once cold, on its own, once started.
//!
//! ```
//! use sharded::capacity::{plan, PlanInput};
//! // A viral game: 7,000 writes/s of 1 KB scores onto one logical key.
//! let plan = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
//! assert_eq!(plan.base.derive_n(), Some(10));
//! ```

mod format;
mod planner;
mod policy;
mod report;
mod table_caps;

pub use planner::{
    plan, GsiLoad, KeyPlan, PlanError, PlanInput, PlanWarning, ShardPlan, DEFAULT_HEADROOM,
};
pub use policy::{LayoutPolicy, PolicyError, PolicyTask};
pub use report::{
    Advice, HotKeyFlag, HotKeyPattern, HotKeyReport, InsightRule, KeyActivity, LoadSummary,
    LogicalKeyReport, PerKeyEntity, RecordedKey, RecordedSecond, Recording, RecordingError,
    ReportHotKeys, ShardSpread, ThrottleCount,
};
pub use table_caps::TableCaps;

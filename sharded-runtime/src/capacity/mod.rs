//! Capacity: what a request costs, what one key can take, and where the load goes.
//!
//! - **Units**: [`item_size`], [`write_units`], [`read_units`]: DynamoDB's arithmetic,
//!   defined once and used by the repository, the report, the planner and the test kit.
//! - **Limits**: [`PerKeyLimits`], the per-partition-key cap that sharding works around.
//! - **The hot-key report**: [`HotKeyStats`] collects consumed capacity per physical key
//!   (attach it with `Repo::with_stats`); [`HotKeyReport`] names the hot keys and what to do:
//!   per logical key ([`LogicalKeyReport`]: shards rolled up, per-second peak and p99 against
//!   the per-key limits, throttles by `ThrottlingReasons` reason, shard spread, a
//!   [`HotKeyPattern`] and [`Advice`]), as a table (`Display`) or JSON
//!   ([`HotKeyReport::to_json`]), keys hashed on request ([`HotKeyReport::redact`]).
//! - **Recordings**: [`Recording`] is a collector's window as data (JSON), to report on
//!   later or elsewhere, or read from a CloudWatch Contributor Insights rule report
//!   ([`Recording::from_contributor_insights`]).
//! - **Table caps**: [`TableCaps`] reads a table's warm throughput, on-demand maximum and
//!   provisioned capacity (`DescribeTable`) and names the `UpdateTable` a load needs.
//! - **The planner**: [`plan`] turns a peak load into a shard count, showing its arithmetic.
//! - **Time**: [`Clock`], so rates can be tested with a [`ManualClock`].
//!
//! ```
//! use sharded::capacity::{plan, PlanInput};
//! // A viral game: 7,000 writes/s of 1 KB scores onto one logical key.
//! let plan = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
//! assert_eq!(plan.base.derive_n(), Some(10));
//! ```

pub(crate) mod budget;
pub(crate) mod clock;
mod format;
pub(crate) mod limits;
pub(crate) mod planner;
pub(crate) mod stats;
pub(crate) mod table_caps;
pub(crate) mod units;

pub use clock::{Clock, ManualClock, SystemClock};
pub use limits::PerKeyLimits;
pub use planner::{
    plan, GsiLoad, KeyPlan, PlanError, PlanInput, PlanWarning, ShardPlan, DEFAULT_HEADROOM,
};
pub use stats::{
    Advice, HotKeyFlag, HotKeyPattern, HotKeyReport, HotKeyStats, HotKeyThresholds, InsightRule,
    KeyActivity, LoadSummary, LogicalKeyReport, RecordedKey, RecordedSecond, Recording,
    RecordingError, ShardSpread, ThrottleCount,
};
pub use table_caps::TableCaps;
pub use units::{
    item_size, read_units, transactional_write_units, write_units, Consistency, UnitKind,
    ITEM_SIZE_LIMIT, READ_UNIT_BYTES, WRITE_UNIT_BYTES,
};

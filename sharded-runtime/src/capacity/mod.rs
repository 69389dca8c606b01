//! Capacity: what a request costs, what one key can take, and the collector of where the
//! load goes.
//!
//! - **Units**: [`item_size`], [`write_units`], [`read_units`]: DynamoDB's arithmetic,
//!   defined once and used by the repository, the report, the planner and the test kit.
//! - **Limits**: [`PerKeyLimits`], the per-partition-key cap that sharding works around.
//! - **The hot-key collector**: [`HotKeyStats`] collects consumed capacity per physical key
//!   (attach it with `Repo::with_stats`), judged by [`HotKeyThresholds`].
//! - **Time**: [`Clock`], so rates can be tested with a [`ManualClock`].
//!
//! What only an operator runs (the hot-key report and its advice, recordings, table caps, the
//! shard planner) is in the sharded-ops crate; the facade's `sharded::capacity` shows both.
//!
//! ```
//! use sharded::capacity::{write_units, PerKeyLimits};
//! // A 1 KB item costs one write unit: one key takes 1,000 of them a second.
//! assert_eq!(write_units(1_024), 1);
//! assert_eq!(PerKeyLimits::DYNAMODB.write_units_per_second, 1_000.0);
//! ```

pub(crate) mod budget;
pub(crate) mod clock;
pub(crate) mod limits;
pub(crate) mod stats;
pub(crate) mod units;

pub use clock::{Clock, ManualClock, SystemClock};
pub use limits::PerKeyLimits;
pub use stats::{HotKeyStats, HotKeyThresholds};
pub use units::{
    item_size, read_units, transactional_write_units, write_units, Consistency, UnitKind,
    ITEM_SIZE_LIMIT, READ_UNIT_BYTES, WRITE_UNIT_BYTES,
};

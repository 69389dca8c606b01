//! The shard planner: how many shards `n` a logical key (and each GSI key) needs, with the
//! arithmetic shown.
//!
//! One partition key value takes at most about 1,000 write units/s and 3,000 read units/s.
//! [`plan`] turns a key's peak traffic into capacity units, divides by what one shard may
//! carry after keeping some headroom free, and rounds up:
//!
//! ```text
//! write units per put = ceil(item bytes / 1,024)                    (at least 1)
//! WCU/s on the key    = peak puts/s x write units per put
//! per shard budget    = per-key write limit x (1 - headroom)        (1,000 x 0.7 = 700)
//! n                   = ceil(WCU/s on the key / per shard budget)   (at least 1)
//! ```
//!
//! Each GSI is planned the same way on its own key (a GSI has its own partitions and the
//! same per-key limits). Scatter-gather reads are checked, not planned: they query every
//! shard, so sharding does not lower what each shard reads; the plan warns when they exceed
//! the per-key read budget.
//!
//! The seeds' worked examples, checked (seed 002: 5,000 WCU/s peaking at 7,000, 1 KB items,
//! "N = 10 lands at 500-700 WCU per shard"):
//!
//! ```
//! use sharded_runtime::planner::{plan, PlanInput};
//! let leaderboard = plan(&PlanInput::new(7_000.0, 1_024))?;
//! assert_eq!(leaderboard.base.n, 10);
//! assert_eq!(leaderboard.base.write_units_per_shard, 700.0); // at the peak; 500 sustained
//!
//! // Seed 004: 10,000 writes/s -> "15-20 shards"; 50,000 with a 1.5x safety factor -> 75.
//! assert_eq!(plan(&PlanInput::new(10_000.0, 1_024))?.base.n, 15);
//! assert_eq!(plan(&PlanInput::new(50_000.0, 1_024).headroom(1.0 / 3.0))?.base.n, 75);
//! // 500 writes/s: one key is enough.
//! assert_eq!(plan(&PlanInput::new(500.0, 1_024))?.base.n, 1);
//! # Ok::<(), sharded_runtime::planner::PlanError>(())
//! ```

use std::collections::HashSet;
use std::fmt;

use crate::schema::MAX_SHARDS;
use crate::size::ITEM_SIZE_LIMIT;

/// Bytes per write unit: one write unit writes up to 1 KB.
pub const WRITE_UNIT_BYTES: u64 = 1024;
/// Bytes per read unit: one strongly consistent read unit reads up to 4 KB.
pub const READ_UNIT_BYTES: u64 = 4096;
/// The default headroom: plan each shard for 70% of the per-key limit.
pub const DEFAULT_HEADROOM: f64 = 0.3;

/// The throughput one partition key value can take, in capacity units per second.
///
/// DynamoDB's documented per-partition limits are the default; lower them to plan against a
/// stricter budget (or to model a test environment).
///
/// ```
/// use sharded_runtime::planner::PerKeyLimits;
/// let limits = PerKeyLimits::default();
/// assert_eq!((limits.write_units_per_second, limits.read_units_per_second), (1_000.0, 3_000.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerKeyLimits {
    /// Write units per second one key takes (DynamoDB: 1,000).
    pub write_units_per_second: f64,
    /// Read units per second one key takes (DynamoDB: 3,000).
    pub read_units_per_second: f64,
}

impl PerKeyLimits {
    /// DynamoDB's per-partition limits: 1,000 WCU/s and 3,000 RCU/s.
    pub const DYNAMODB: PerKeyLimits = PerKeyLimits {
        write_units_per_second: 1_000.0,
        read_units_per_second: 3_000.0,
    };

    /// DynamoDB's limits times `factor`, e.g. to overload a key in seconds in a test.
    ///
    /// ```
    /// use sharded_runtime::planner::PerKeyLimits;
    /// let tenth = PerKeyLimits::scaled(0.1);
    /// assert_eq!(tenth.write_units_per_second, 100.0);
    /// assert_eq!(tenth.read_units_per_second, 300.0);
    /// ```
    pub fn scaled(factor: f64) -> Self {
        PerKeyLimits {
            write_units_per_second: Self::DYNAMODB.write_units_per_second * factor,
            read_units_per_second: Self::DYNAMODB.read_units_per_second * factor,
        }
    }
}

impl Default for PerKeyLimits {
    fn default() -> Self {
        Self::DYNAMODB
    }
}

/// How reads are made: strongly consistent reads cost twice the units of eventually
/// consistent ones.
///
/// ```
/// use sharded_runtime::planner::Consistency;
/// assert_eq!(Consistency::default(), Consistency::Strong);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Consistency {
    /// `ConsistentRead = true`: one read unit per 4 KB.
    #[default]
    Strong,
    /// The default of `GetItem`/`Query`: half a read unit per 4 KB.
    Eventual,
}

/// The write load one GSI puts on its hottest partition key value.
///
/// Two fractions describe it: `write_fraction`, the share of the logical key's puts that
/// write this GSI at all (1.0 unless the index is sparse), and `hottest_key_share`, the share
/// of those GSI writes that land on its single hottest key value. The default, 1.0, is the
/// worst case (a constant GSI key, or one made only of the base key's fields, like the seeds'
/// `ELECTION#2024`); a GSI key such as `PLAYER#{player_id}` that spreads writes over many
/// values has a small share and needs no sharding.
///
/// ```
/// use sharded_runtime::planner::GsiLoad;
/// let by_player = GsiLoad::new("gsi1", 1.0).hottest_key_share(0.01);
/// let keys_only = GsiLoad::new("by-day", 1.0).projected_bytes(100);
/// assert_eq!(by_player.write_fraction, 1.0);
/// assert_eq!(keys_only.item_bytes, Some(100));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GsiLoad {
    /// The index name (`gsi1`, or the `index = "..."` given to the derive).
    pub name: String,
    /// Share of the logical key's puts that write this GSI, 0.0 to 1.0.
    pub write_fraction: f64,
    /// Share of those GSI writes landing on the GSI's hottest key value, 0.0 to 1.0.
    pub hottest_key_share: f64,
    /// Size of the item as projected into the GSI; `None` = the base item size (projection
    /// `ALL`).
    pub item_bytes: Option<u64>,
}

impl GsiLoad {
    /// A GSI written by `write_fraction` of the puts, all on one GSI key value, projecting the
    /// whole item.
    pub fn new(name: impl Into<String>, write_fraction: f64) -> Self {
        Self {
            name: name.into(),
            write_fraction,
            hottest_key_share: 1.0,
            item_bytes: None,
        }
    }

    /// Sets the share of this GSI's writes that land on its hottest key value.
    pub fn hottest_key_share(mut self, share: f64) -> Self {
        self.hottest_key_share = share;
        self
    }

    /// Sets the size of the projected GSI item (e.g. `KEYS_ONLY` projections are small).
    pub fn projected_bytes(mut self, bytes: u64) -> Self {
        self.item_bytes = Some(bytes);
        self
    }
}

/// What [`plan`] needs to know about one logical key's peak traffic.
///
/// Build it with [`PlanInput::new`] and the setters (or fill the public fields); everything
/// but the write rate and the item size has a default.
///
/// ```
/// use sharded_runtime::planner::{plan, Consistency, GsiLoad, PlanInput};
/// let input = PlanInput::new(7_000.0, 1_024)   // peak puts/s on the logical key, item size
///     .scatter_reads_per_sec(50.0)            // top-100 queries/s over all shards
///     .items_per_read(100)
///     .consistency(Consistency::Eventual)
///     .headroom(0.3)
///     .gsi(GsiLoad::new("gsi1", 1.0));
/// let shard_plan = plan(&input)?;
/// assert_eq!(shard_plan.base.n, 10);
/// assert_eq!(shard_plan.gsis[0].n, 10);
/// # Ok::<(), sharded_runtime::planner::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// Peak puts per second on the logical key (plan for the peak, not the average).
    pub peak_writes_per_sec: f64,
    /// Peak scatter-gather reads per second of the logical key; each queries every shard.
    pub scatter_reads_per_sec: f64,
    /// Peak point reads per second (`get`: one shard each); they spread over the shards like
    /// writes and can drive `n` when reads dominate.
    pub point_reads_per_sec: f64,
    /// Average item size in bytes, as DynamoDB counts it (see [`crate::size::item_size`]).
    pub item_bytes: u64,
    /// Items one scatter-gather read returns from each shard (its per-shard `Limit`); 1 by
    /// default.
    pub items_per_read: u32,
    /// The GSIs each put writes, with how concentrated their keys are.
    pub gsis: Vec<GsiLoad>,
    /// Fraction of the per-key limits kept free, 0.0 (inclusive) to 1.0 (exclusive).
    pub headroom: f64,
    /// Whether reads are strongly or eventually consistent.
    pub consistency: Consistency,
    /// The per-key limits to plan against.
    pub limits: PerKeyLimits,
}

impl PlanInput {
    /// A key taking `peak_writes_per_sec` puts/s of `item_bytes`-byte items, with no reads, no
    /// GSI, headroom 0.3, strongly consistent reads and DynamoDB's per-key limits.
    pub fn new(peak_writes_per_sec: f64, item_bytes: u64) -> Self {
        Self {
            peak_writes_per_sec,
            scatter_reads_per_sec: 0.0,
            point_reads_per_sec: 0.0,
            item_bytes,
            items_per_read: 1,
            gsis: Vec::new(),
            headroom: DEFAULT_HEADROOM,
            consistency: Consistency::Strong,
            limits: PerKeyLimits::DYNAMODB,
        }
    }

    /// Sets the peak scatter-gather reads per second (each reads every shard).
    pub fn scatter_reads_per_sec(mut self, reads: f64) -> Self {
        self.scatter_reads_per_sec = reads;
        self
    }

    /// Sets the peak point reads per second (each reads one shard).
    pub fn point_reads_per_sec(mut self, reads: f64) -> Self {
        self.point_reads_per_sec = reads;
        self
    }

    /// Sets how many items a scatter-gather read takes from each shard.
    pub fn items_per_read(mut self, items: u32) -> Self {
        self.items_per_read = items;
        self
    }

    /// Adds a GSI that puts write.
    pub fn gsi(mut self, gsi: GsiLoad) -> Self {
        self.gsis.push(gsi);
        self
    }

    /// Sets the headroom: the fraction of each per-key limit kept free.
    pub fn headroom(mut self, headroom: f64) -> Self {
        self.headroom = headroom;
        self
    }

    /// Sets the read consistency.
    pub fn consistency(mut self, consistency: Consistency) -> Self {
        self.consistency = consistency;
        self
    }

    /// Sets the per-key limits (write and read units per second).
    pub fn limits(mut self, write_units: f64, read_units: f64) -> Self {
        self.limits = PerKeyLimits {
            write_units_per_second: write_units,
            read_units_per_second: read_units,
        };
        self
    }
}

/// Why [`plan`] refused its input.
///
/// ```
/// use sharded_runtime::planner::{plan, PlanError, PlanInput};
/// let err = plan(&PlanInput::new(7_000.0, 1_024).headroom(1.0)).unwrap_err();
/// assert!(matches!(err, PlanError::InvalidNumber { ref field, .. } if field == "headroom"));
/// assert!(err.to_string().contains("0.3"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A rate, fraction or limit is negative, not finite, or out of its range.
    #[error("`{field}` is {value}, but it must be {expected}")]
    InvalidNumber {
        /// The input field (for a GSI: `gsis[<name>].<field>`).
        field: String,
        /// The value given.
        value: f64,
        /// The range accepted, and what to use.
        expected: &'static str,
    },
    /// An item size of 0 or above DynamoDB's 400 KB item limit.
    #[error(
        "`{field}` is {bytes} bytes, but an item holds 1 to {} bytes: give the average size of \
         the item as DynamoDB counts it (`sharded_runtime::size::item_size`)",
        ITEM_SIZE_LIMIT
    )]
    InvalidItemSize {
        /// The input field (`item_bytes` or `gsis[<name>].item_bytes`).
        field: String,
        /// The size given.
        bytes: u64,
    },
    /// `items_per_read` is 0.
    #[error("`items_per_read` is 0: a read returns at least one item per shard; use 1 or more")]
    NoItemsPerRead,
    /// A GSI has an empty name.
    #[error("a GSI has an empty name: give the index name (`gsi1`, or its `index = \"...\"`)")]
    EmptyGsiName,
    /// The same GSI is listed twice.
    #[error(
        "GSI `{name}` is listed twice: list each index once, with the share of puts that write it"
    )]
    DuplicateGsi {
        /// The repeated name.
        name: String,
    },
}

/// Read or write, for warnings and flags that concern one of them.
///
/// ```
/// use sharded_runtime::planner::UnitKind;
/// assert_eq!(UnitKind::Write.to_string(), "write");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnitKind {
    /// Read capacity units.
    Read,
    /// Write capacity units.
    Write,
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::Read => "read",
            UnitKind::Write => "write",
        })
    }
}

/// The plan of one partition key: the base table's or one GSI's.
///
/// ```
/// use sharded_runtime::planner::{plan, PlanInput};
/// let key = plan(&PlanInput::new(1_000.0, 3_000))?.base;
/// assert_eq!(key.write_units_per_put, 3);
/// assert_eq!(key.write_units_per_sec, 3_000.0);
/// assert_eq!(key.n, 5);
/// assert_eq!(key.derive_n(), Some(5));
/// assert!(key.lines.iter().any(|l| l == "n = ceil(3,000 / 700) = 5"));
/// # Ok::<(), sharded_runtime::planner::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPlan {
    /// `None` for the base table, `Some(name)` for a GSI.
    pub index: Option<String>,
    /// The recommended shard count (at least 1; may exceed what the derive accepts, see
    /// [`KeyPlan::derive_n`]).
    pub n: u64,
    /// Share of the logical key's puts that write this index (1.0 for the base table).
    pub write_fraction: f64,
    /// Write units one write of this key's item costs.
    pub write_units_per_put: u64,
    /// Peak write units per second on the (logical) key, before sharding.
    pub write_units_per_sec: f64,
    /// Peak write units per second on each shard at `n` shards.
    pub write_units_per_shard: f64,
    /// The arithmetic, one step a line.
    pub lines: Vec<String>,
}

impl KeyPlan {
    /// `n` as the derive's `n = ...` takes it: `None` when it is above the maximum of 1,000.
    pub fn derive_n(&self) -> Option<u32> {
        u32::try_from(self.n)
            .ok()
            .filter(|n| (1..=MAX_SHARDS).contains(n))
    }

    fn label(&self) -> &str {
        self.index.as_deref().unwrap_or("base table")
    }
}

/// Something about a plan that needs a decision beyond choosing `n`.
///
/// ```
/// use sharded_runtime::planner::{plan, PlanInput, PlanWarning};
/// let shard_plan = plan(&PlanInput::new(500.0, 1_024))?;
/// assert_eq!(shard_plan.warnings, vec![PlanWarning::NoShardingNeeded { index: None }]);
/// # Ok::<(), sharded_runtime::planner::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlanWarning {
    /// `n = 1`: one key carries the load within its budget.
    NoShardingNeeded {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
    },
    /// `n` is above the derive's maximum of 1,000 shards.
    TooManyShards {
        /// `None` for the base table, `Some(name)` for a GSI.
        index: Option<String>,
        /// The shard count the load would need.
        n: u64,
    },
    /// A GSI key takes more than one key's budget and must be sharded itself.
    GsiNeedsSharding {
        /// The index name.
        index: String,
        /// The shard count it needs.
        n: u64,
    },
    /// Scatter-gather reads (plus point reads) take more read units per shard than the
    /// per-key read budget; sharding does not help, because every such read hits every shard.
    ReadsOverBudget {
        /// Read units per second each shard takes at the planned `n`.
        read_units_per_shard: f64,
        /// The per-shard read budget (limit x (1 - headroom)).
        budget: f64,
        /// The per-key read limit.
        limit: f64,
    },
}

fn index_label(index: Option<&str>) -> String {
    match index {
        None => "the base table key".to_owned(),
        Some(name) => format!("the {name} key"),
    }
}

impl fmt::Display for PlanWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanWarning::NoShardingNeeded { index } => write!(
                f,
                "{} needs no sharding: one key carries the peak within its budget; keep it \
                 unsharded (scatter-gather reads cost n queries)",
                index_label(index.as_deref())
            ),
            PlanWarning::TooManyShards { index, n } => write!(
                f,
                "{} would need n = {}, above the derive's maximum of {}: every read \
                 would query that many shards; give the key more cardinality instead (a time \
                 bucket, a region, a finer id in the template) so the load splits over many \
                 logical keys",
                index_label(index.as_deref()),
                fmt_num(*n as f64),
                fmt_num(f64::from(MAX_SHARDS))
            ),
            PlanWarning::GsiNeedsSharding { index, n } => write!(
                f,
                "the {index} key takes more writes than one key's budget: shard the GSI key: \
                 #[{index}(..., shard = {n})] (or `index = \"{index}\"` with `shard = {n}`)"
            ),
            PlanWarning::ReadsOverBudget {
                read_units_per_shard,
                budget,
                limit,
            } => {
                let verdict = if read_units_per_shard > limit {
                    "above the per-key limit: these reads will throttle"
                } else {
                    "inside the limit but above the budget: no headroom for spikes"
                };
                write!(
                    f,
                    "reads take {} RCU/s on every shard against a budget of {} RCU ({} RCU \
                     limit), {verdict}. Scatter-gather reads hit EVERY shard, so raising n does \
                     not lower this: cache the answer (DAX, or an in-process cache of the top-K \
                     for a second), read fewer items per query, use eventually consistent reads \
                     (half the units), or read single items with point lookups (one shard each)",
                    fmt_num(*read_units_per_shard),
                    fmt_num(*budget),
                    fmt_num(*limit)
                )
            }
        }
    }
}

/// The result of [`plan`]: `n` for the base key and each GSI, the arithmetic, and warnings.
///
/// `Display` prints every step, so the plan can go into a design document or a commit message:
///
/// ```
/// use sharded_runtime::planner::{plan, PlanInput};
/// let text = plan(&PlanInput::new(7_000.0, 3_000))?.to_string();
/// assert!(text.contains("item 3,000 B -> 3 write units per put (1 KB each, rounded up)"));
/// assert!(text.contains("7,000 puts/s x 3 units = 21,000 WCU/s on the logical key"));
/// assert!(text.contains("per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU"));
/// assert!(text.contains("n = ceil(21,000 / 700) = 30"));
/// # Ok::<(), sharded_runtime::planner::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ShardPlan {
    /// The base table's partition key.
    pub base: KeyPlan,
    /// Each GSI's partition key, in input order.
    pub gsis: Vec<KeyPlan>,
    /// Read units one scatter-gather read costs on each shard (0 without scatter reads).
    pub read_units_per_shard_query: f64,
    /// Peak read units per second on each base shard at the planned `n`.
    pub read_units_per_shard: f64,
    /// Write units one put costs, summed over the base table and the GSIs it writes.
    pub write_units_per_put_total: f64,
    /// Peak write units per second of all puts, base table and GSIs.
    pub total_write_units_per_sec: f64,
    /// What needs attention beyond `n`.
    pub warnings: Vec<PlanWarning>,
}

impl fmt::Display for ShardPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for key in std::iter::once(&self.base).chain(&self.gsis) {
            writeln!(f, "{}: n = {}", key.label(), fmt_num(key.n as f64))?;
            for line in &key.lines {
                writeln!(f, "  {line}")?;
            }
        }
        let mut parts = vec![format!("{} base", self.base.write_units_per_put)];
        for gsi in &self.gsis {
            let units = gsi.write_fraction * gsi.write_units_per_put as f64;
            parts.push(format!("{} {}", fmt_num(units), gsi.label()));
        }
        writeln!(
            f,
            "total: a put costs {} write units on average ({}): {} WCU/s in all",
            fmt_num(self.write_units_per_put_total),
            parts.join(" + "),
            fmt_num(self.total_write_units_per_sec)
        )?;
        if self.warnings.is_empty() {
            writeln!(f, "warnings: none")?;
        } else {
            writeln!(f, "warnings:")?;
            for w in &self.warnings {
                writeln!(f, "  - {w}")?;
            }
        }
        Ok(())
    }
}

/// Plans the shard count of a logical key and of each GSI key its puts write.
///
/// See the [module documentation](self) for the formulas. Every input is checked first: a
/// negative or non-finite rate, a headroom outside `0.0..1.0`, a fraction outside `0..=1`, a
/// non-positive limit, an item size of 0 or above 400 KB, or a GSI listed twice is a
/// [`PlanError`] saying what to give instead.
///
/// ```
/// use sharded_runtime::planner::{plan, GsiLoad, PlanInput, PlanWarning};
/// // A GSI written by every put doubles the write units, and needs its own n.
/// let p = plan(&PlanInput::new(7_000.0, 1_024).gsi(GsiLoad::new("gsi1", 1.0)))?;
/// assert_eq!(p.total_write_units_per_sec, 14_000.0);
/// assert_eq!((p.base.n, p.gsis[0].n), (10, 10));
/// assert!(p.warnings.contains(&PlanWarning::GsiNeedsSharding { index: "gsi1".into(), n: 10 }));
/// # Ok::<(), sharded_runtime::planner::PlanError>(())
/// ```
pub fn plan(input: &PlanInput) -> Result<ShardPlan, PlanError> {
    validate(input)?;
    let limits = input.limits;
    let keep = 1.0 - input.headroom;
    let write_budget = limits.write_units_per_second * keep;
    let read_budget = limits.read_units_per_second * keep;
    // Base table writes.
    let units = write_units(input.item_bytes);
    let wcu = input.peak_writes_per_sec * units as f64;
    let n_writes = shards_for(wcu, write_budget);
    let mut lines = vec![
        item_line(input.item_bytes, units),
        format!(
            "{} puts/s x {} = {} WCU/s on the logical key",
            fmt_num(input.peak_writes_per_sec),
            plural(units, "unit"),
            fmt_num(wcu)
        ),
        budget_line(
            "",
            "WCU",
            limits.write_units_per_second,
            write_budget,
            input.headroom,
        ),
        format!(
            "n = ceil({} / {}) = {}",
            fmt_num(wcu),
            fmt_num(write_budget),
            fmt_num(n_writes as f64)
        ),
    ];

    // Point reads spread over the shards and may need more of them than the writes do.
    let read_unit_cost = |bytes: u64| read_units(bytes, input.consistency);
    let consistency_note = match input.consistency {
        Consistency::Strong => "strongly consistent",
        Consistency::Eventual => "halved: eventually consistent",
    };
    let mut n = n_writes;
    if input.point_reads_per_sec > 0.0 {
        let point_units = read_unit_cost(input.item_bytes);
        let point_rcu = input.point_reads_per_sec * point_units;
        let n_reads = shards_for(point_rcu, read_budget);
        lines.push(format!(
            "point reads: item {} B -> {} each (4 KB each, rounded up; {consistency_note})",
            fmt_num(input.item_bytes as f64),
            units_of(point_units, "read unit")
        ));
        lines.push(format!(
            "{} point reads/s x {} = {} RCU/s, spread over the shards",
            fmt_num(input.point_reads_per_sec),
            units_of(point_units, "unit"),
            fmt_num(point_rcu)
        ));
        lines.push(budget_line(
            "read ",
            "RCU",
            limits.read_units_per_second,
            read_budget,
            input.headroom,
        ));
        lines.push(format!(
            "n for point reads = ceil({} / {}) = {}",
            fmt_num(point_rcu),
            fmt_num(read_budget),
            fmt_num(n_reads as f64)
        ));
        n = n_writes.max(n_reads);
        lines.push(format!(
            "n = max(writes {}, point reads {}) = {}",
            fmt_num(n_writes as f64),
            fmt_num(n_reads as f64),
            fmt_num(n as f64)
        ));
    }

    // Scatter-gather reads: every read queries every shard, whatever n is.
    let mut read_units_per_shard_query = 0.0;
    let mut scatter_rcu = 0.0;
    if input.scatter_reads_per_sec > 0.0 {
        let bytes = u64::from(input.items_per_read).saturating_mul(input.item_bytes);
        read_units_per_shard_query = read_unit_cost(bytes);
        scatter_rcu = input.scatter_reads_per_sec * read_units_per_shard_query;
        lines.push(format!(
            "scatter reads: {} items x {} B = {} B per shard query -> {} (4 KB each, rounded \
             up; {consistency_note})",
            fmt_num(f64::from(input.items_per_read)),
            fmt_num(input.item_bytes as f64),
            fmt_num(bytes as f64),
            units_of(read_units_per_shard_query, "read unit")
        ));
        lines.push(format!(
            "{} scatter reads/s x {} = {} RCU/s on EVERY shard (each read queries all shards; \
             n does not lower this)",
            fmt_num(input.scatter_reads_per_sec),
            units_of(read_units_per_shard_query, "unit"),
            fmt_num(scatter_rcu)
        ));
    }

    let write_units_per_shard = wcu / n as f64;
    lines.push(format!(
        "at n = {}: {} WCU/s per shard ({} of the {} WCU limit)",
        fmt_num(n as f64),
        fmt_num(write_units_per_shard),
        percent(write_units_per_shard / limits.write_units_per_second),
        fmt_num(limits.write_units_per_second)
    ));
    let read_units_per_shard =
        scatter_rcu + input.point_reads_per_sec * read_unit_cost(input.item_bytes) / n as f64;
    if read_units_per_shard > 0.0 {
        lines.push(format!(
            "at n = {}: {} RCU/s per shard ({} of the {} RCU limit)",
            fmt_num(n as f64),
            fmt_num(read_units_per_shard),
            percent(read_units_per_shard / limits.read_units_per_second),
            fmt_num(limits.read_units_per_second)
        ));
    }
    if let Some(derive_n) = u32::try_from(n)
        .ok()
        .filter(|n| (2..=MAX_SHARDS).contains(n))
    {
        lines.push(format!(
            "derive: #[pk(template = \"...\", shard = \"hash(...)\", n = {derive_n})]"
        ));
    }

    let base = KeyPlan {
        index: None,
        n,
        write_fraction: 1.0,
        write_units_per_put: units,
        write_units_per_sec: wcu,
        write_units_per_shard,
        lines,
    };

    let mut warnings = Vec::new();
    key_warnings(&base, &mut warnings);
    if read_units_per_shard > read_budget {
        warnings.push(PlanWarning::ReadsOverBudget {
            read_units_per_shard,
            budget: read_budget,
            limit: limits.read_units_per_second,
        });
    }

    // GSIs: each its own key, same limits.
    let mut write_units_per_put_total = units as f64;
    let mut gsis = Vec::with_capacity(input.gsis.len());
    for gsi in &input.gsis {
        let bytes = gsi.item_bytes.unwrap_or(input.item_bytes);
        let g_units = write_units(bytes);
        write_units_per_put_total += gsi.write_fraction * g_units as f64;
        let g_wcu =
            input.peak_writes_per_sec * gsi.write_fraction * gsi.hottest_key_share * g_units as f64;
        let g_n = shards_for(g_wcu, write_budget);
        let per_shard = g_wcu / g_n as f64;
        let name = &gsi.name;
        let mut g_lines = vec![
            item_line(bytes, g_units),
            format!(
                "{} puts/s x {} (share of puts writing {name}) x {} (share on its hottest \
                 key) x {} = {} WCU/s on the hottest {name} key",
                fmt_num(input.peak_writes_per_sec),
                fmt_fraction(gsi.write_fraction),
                fmt_fraction(gsi.hottest_key_share),
                plural(g_units, "unit"),
                fmt_num(g_wcu)
            ),
            budget_line(
                "",
                "WCU",
                limits.write_units_per_second,
                write_budget,
                input.headroom,
            ),
            format!(
                "n = ceil({} / {}) = {}",
                fmt_num(g_wcu),
                fmt_num(write_budget),
                fmt_num(g_n as f64)
            ),
            format!(
                "at n = {}: {} WCU/s per shard ({} of the {} WCU limit)",
                fmt_num(g_n as f64),
                fmt_num(per_shard),
                percent(per_shard / limits.write_units_per_second),
                fmt_num(limits.write_units_per_second)
            ),
        ];
        if let Some(derive_n) = u32::try_from(g_n)
            .ok()
            .filter(|n| (2..=MAX_SHARDS).contains(n))
        {
            g_lines.push(format!("derive: #[{name}(..., shard = {derive_n})]"));
        }
        let key = KeyPlan {
            index: Some(name.clone()),
            n: g_n,
            write_fraction: gsi.write_fraction,
            write_units_per_put: g_units,
            write_units_per_sec: g_wcu,
            write_units_per_shard: per_shard,
            lines: g_lines,
        };
        key_warnings(&key, &mut warnings);
        gsis.push(key);
    }

    Ok(ShardPlan {
        base,
        gsis,
        read_units_per_shard_query,
        read_units_per_shard,
        write_units_per_put_total,
        total_write_units_per_sec: input.peak_writes_per_sec * write_units_per_put_total,
        warnings,
    })
}

fn key_warnings(key: &KeyPlan, warnings: &mut Vec<PlanWarning>) {
    if key.n == 1 {
        warnings.push(PlanWarning::NoShardingNeeded {
            index: key.index.clone(),
        });
    } else if key.n > u64::from(MAX_SHARDS) {
        warnings.push(PlanWarning::TooManyShards {
            index: key.index.clone(),
            n: key.n,
        });
    } else if let Some(index) = &key.index {
        warnings.push(PlanWarning::GsiNeedsSharding {
            index: index.clone(),
            n: key.n,
        });
    }
}

fn validate(input: &PlanInput) -> Result<(), PlanError> {
    fn rate(field: &str, value: f64) -> Result<(), PlanError> {
        if value.is_finite() && value >= 0.0 {
            Ok(())
        } else {
            Err(PlanError::InvalidNumber {
                field: field.to_owned(),
                value,
                expected: "a finite rate of 0 or more per second (use the peak you expect)",
            })
        }
    }
    fn fraction(field: String, value: f64) -> Result<(), PlanError> {
        if (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(PlanError::InvalidNumber {
                field,
                value,
                expected: "a fraction from 0.0 to 1.0 (1.0 = every put)",
            })
        }
    }
    fn size(field: String, bytes: u64) -> Result<(), PlanError> {
        if bytes == 0 || bytes > ITEM_SIZE_LIMIT as u64 {
            Err(PlanError::InvalidItemSize { field, bytes })
        } else {
            Ok(())
        }
    }
    rate("peak_writes_per_sec", input.peak_writes_per_sec)?;
    rate("scatter_reads_per_sec", input.scatter_reads_per_sec)?;
    rate("point_reads_per_sec", input.point_reads_per_sec)?;
    size("item_bytes".to_owned(), input.item_bytes)?;
    if input.items_per_read == 0 {
        return Err(PlanError::NoItemsPerRead);
    }
    if !(0.0..1.0).contains(&input.headroom) {
        return Err(PlanError::InvalidNumber {
            field: "headroom".to_owned(),
            value: input.headroom,
            expected: "a fraction from 0.0 up to (not including) 1.0; 0.3 plans each shard for \
                       70% of the per-key limit",
        });
    }
    for (field, value) in [
        (
            "limits.write_units_per_second",
            input.limits.write_units_per_second,
        ),
        (
            "limits.read_units_per_second",
            input.limits.read_units_per_second,
        ),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(PlanError::InvalidNumber {
                field: field.to_owned(),
                value,
                expected: "a finite number of units per second above 0 (DynamoDB: 1,000 write, \
                           3,000 read)",
            });
        }
    }
    let mut seen = HashSet::new();
    for gsi in &input.gsis {
        if gsi.name.is_empty() {
            return Err(PlanError::EmptyGsiName);
        }
        if !seen.insert(gsi.name.as_str()) {
            return Err(PlanError::DuplicateGsi {
                name: gsi.name.clone(),
            });
        }
        fraction(
            format!("gsis[{}].write_fraction", gsi.name),
            gsi.write_fraction,
        )?;
        fraction(
            format!("gsis[{}].hottest_key_share", gsi.name),
            gsi.hottest_key_share,
        )?;
        if let Some(bytes) = gsi.item_bytes {
            size(format!("gsis[{}].item_bytes", gsi.name), bytes)?;
        }
    }
    Ok(())
}

/// Write units one write of a `bytes`-byte item costs: `ceil(bytes / 1,024)`, at least 1.
///
/// ```
/// use sharded_runtime::planner::write_units;
/// assert_eq!((write_units(1), write_units(1_024), write_units(1_025), write_units(3_000)), (1, 1, 2, 3));
/// ```
pub fn write_units(bytes: u64) -> u64 {
    bytes.div_ceil(WRITE_UNIT_BYTES).max(1)
}

/// Read units one read of `bytes` bytes costs: `ceil(bytes / 4,096)` (at least 1), halved for
/// eventually consistent reads. A `Query` sums the sizes of the items it returns first.
///
/// ```
/// use sharded_runtime::planner::{read_units, Consistency};
/// assert_eq!(read_units(1_024, Consistency::Strong), 1.0);
/// assert_eq!(read_units(1_024, Consistency::Eventual), 0.5);
/// assert_eq!(read_units(100 * 1_024, Consistency::Strong), 25.0);
/// ```
pub fn read_units(bytes: u64, consistency: Consistency) -> f64 {
    let strong = bytes.div_ceil(READ_UNIT_BYTES).max(1) as f64;
    match consistency {
        Consistency::Strong => strong,
        Consistency::Eventual => strong / 2.0,
    }
}

/// `ceil(load / budget)`, at least 1, with ratios within a relative 1e-9 of a whole number
/// taken as that number, so 7,000 / (1,000 x 0.7) is 10 even though 0.7 is not exact in binary.
pub(crate) fn shards_for(load: f64, budget: f64) -> u64 {
    let ratio = load / budget;
    let nearest = ratio.round();
    let n = if (ratio - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        ratio.ceil()
    };
    // `as` saturates: an absurd load gives u64::MAX, reported as too many shards.
    (n as u64).max(1)
}

fn budget_line(what: &str, unit: &str, limit: f64, budget: f64, headroom: f64) -> String {
    format!(
        "per shard {what}budget: {} {unit} x (1 - {headroom:.2}) = {} {unit}",
        fmt_num(limit),
        fmt_num(budget)
    )
}

fn item_line(bytes: u64, units: u64) -> String {
    format!(
        "item {} B -> {} per put (1 KB each, rounded up)",
        fmt_num(bytes as f64),
        plural(units, "write unit")
    )
}

fn units_of(count: f64, what: &str) -> String {
    if count == 1.0 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", fmt_num(count))
    }
}

fn plural(count: u64, what: &str) -> String {
    units_of(count as f64, what)
}

/// A fraction with two decimals (`1.00`, `0.50`), or all it needs when that would hide it
/// (`0.001`).
fn fmt_fraction(x: f64) -> String {
    let two = format!("{x:.2}");
    if two.parse::<f64>() == Ok(x) {
        two
    } else {
        x.to_string()
    }
}

pub(crate) fn percent(fraction: f64) -> String {
    format!("{}%", fmt_num((fraction * 100.0).round()))
}

/// A number with thousands separators and at most two decimals, trailing zeros dropped:
/// `21000.0` -> `21,000`, `666.666` -> `666.67`, `12.5` -> `12.5`.
pub(crate) fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let text = format!("{:.2}", x.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::with_capacity(text.len() + text.len() / 3 + 1);
    if x < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n_for(input: PlanInput) -> u64 {
        plan(&input).expect("valid input").base.n
    }

    #[test]
    fn seed_002_viral_leaderboard_needs_10_shards() {
        // 5,000 WCU/s sustained, peaks to 7,000, 1 KB items: plan for the peak.
        let p = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
        assert_eq!(p.base.n, 10);
        assert_eq!(p.base.write_units_per_put, 1);
        assert_eq!(p.base.write_units_per_sec, 7_000.0);
        assert_eq!(p.base.write_units_per_shard, 700.0);
        // Sustained 5,000 over the same 10 shards: 500 per shard ("500-700 WCU per shard").
        assert_eq!(5_000.0 / p.base.n as f64, 500.0);
        // Sustained alone would need fewer shards: the peak is what decides.
        assert_eq!(n_for(PlanInput::new(5_000.0, 1_024)), 8);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn seed_004_examples() {
        assert_eq!(n_for(PlanInput::new(10_000.0, 1_024)), 15);
        assert_eq!(
            n_for(PlanInput::new(50_000.0, 1_024).headroom(1.0 / 3.0)),
            75
        );
        // 500 WCU x 1.5 = 750 < 1,000: no sharding needed.
        let low = plan(&PlanInput::new(500.0, 1_024)).unwrap();
        assert_eq!(low.base.n, 1);
        assert_eq!(
            low.warnings,
            vec![PlanWarning::NoShardingNeeded { index: None }]
        );
        assert!(low.to_string().contains("needs no sharding"));
        // 500,000 WCU with 1/3 headroom: 750 shards, still within the derive's maximum.
        let huge = plan(&PlanInput::new(500_000.0, 1_024).headroom(1.0 / 3.0)).unwrap();
        assert_eq!(huge.base.n, 750);
        assert_eq!(huge.base.derive_n(), Some(750));
    }

    #[test]
    fn three_kb_items_cost_three_units() {
        let p = plan(&PlanInput::new(1_000.0, 3_000)).unwrap();
        assert_eq!(p.base.write_units_per_put, 3);
        assert_eq!(p.base.write_units_per_sec, 3_000.0);
        assert_eq!(p.base.n, 5);
        let text = p.to_string();
        assert!(text.contains("item 3,000 B -> 3 write units per put (1 KB each, rounded up)"));
        assert!(text.contains("1,000 puts/s x 3 units = 3,000 WCU/s on the logical key"));
        assert!(text.contains("per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU"));
        assert!(text.contains("n = ceil(3,000 / 700) = 5"));
        assert!(text.contains("at n = 5: 600 WCU/s per shard (60% of the 1,000 WCU limit)"));
        assert!(text.contains("n = 5)]"), "{text}");
    }

    #[test]
    fn brief_example_lines() {
        let text = plan(&PlanInput::new(7_000.0, 3_000)).unwrap().to_string();
        for line in [
            "base table: n = 30",
            "item 3,000 B -> 3 write units per put (1 KB each, rounded up)",
            "7,000 puts/s x 3 units = 21,000 WCU/s on the logical key",
            "per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU",
            "n = ceil(21,000 / 700) = 30",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn a_gsi_written_by_every_put_doubles_units_and_gets_its_own_n() {
        let without = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
        let with = plan(&PlanInput::new(7_000.0, 1_024).gsi(GsiLoad::new("gsi1", 1.0))).unwrap();
        assert_eq!(without.total_write_units_per_sec, 7_000.0);
        assert_eq!(with.total_write_units_per_sec, 14_000.0);
        assert_eq!(with.write_units_per_put_total, 2.0);
        assert_eq!(with.base.n, 10);
        assert_eq!(with.gsis.len(), 1);
        assert_eq!(with.gsis[0].index.as_deref(), Some("gsi1"));
        assert_eq!(with.gsis[0].n, 10);
        assert!(with.warnings.contains(&PlanWarning::GsiNeedsSharding {
            index: "gsi1".into(),
            n: 10
        }));
        let text = with.to_string();
        assert!(text.contains("gsi1: n = 10"), "{text}");
        assert!(text.contains("#[gsi1(..., shard = 10)]"), "{text}");
        assert!(text.contains("14,000 WCU/s in all"), "{text}");
    }

    #[test]
    fn gsi_fractions_and_projection_shape_its_n() {
        let p = plan(
            &PlanInput::new(7_000.0, 3_000)
                .gsi(GsiLoad::new("sparse", 0.5))
                .gsi(GsiLoad::new("by-player", 1.0).hottest_key_share(0.001))
                .gsi(GsiLoad::new("keys-only", 1.0).projected_bytes(200)),
        )
        .unwrap();
        assert_eq!(p.base.n, 30);
        // 7,000 x 0.5 x 3 = 10,500 -> 15.
        assert_eq!(p.gsis[0].write_units_per_sec, 10_500.0);
        assert_eq!(p.gsis[0].n, 15);
        // 7,000 x 0.001 x 3 = 21 WCU/s on the hottest player: no sharding.
        assert_eq!(p.gsis[1].n, 1);
        assert!(p.warnings.contains(&PlanWarning::NoShardingNeeded {
            index: Some("by-player".into())
        }));
        // 200 B projection: 1 unit, 7,000 WCU/s -> 10.
        assert_eq!(p.gsis[2].write_units_per_put, 1);
        assert_eq!(p.gsis[2].n, 10);
        // Per put: 3 + 0.5 x 3 + 3 + 1 = 8.5 units.
        assert_eq!(p.write_units_per_put_total, 8.5);
        assert_eq!(p.total_write_units_per_sec, 59_500.0);
    }

    #[test]
    fn above_the_derive_maximum_asks_for_cardinality() {
        let p = plan(&PlanInput::new(1_000_000.0, 1_024)).unwrap();
        assert_eq!(p.base.n, 1_429);
        assert_eq!(p.base.derive_n(), None);
        assert!(p.warnings.contains(&PlanWarning::TooManyShards {
            index: None,
            n: 1_429
        }));
        let text = p.to_string();
        assert!(text.contains("more cardinality"), "{text}");
        assert!(!text.contains("derive: #[pk"), "{text}");
    }

    #[test]
    fn scatter_reads_over_budget_warn_and_do_not_change_n() {
        // Seed 002: 12,000 top-100 reads/s of 1 KB items.
        let input = PlanInput::new(7_000.0, 1_024)
            .scatter_reads_per_sec(12_000.0)
            .items_per_read(100);
        let p = plan(&input).unwrap();
        assert_eq!(p.base.n, 10, "scatter reads do not drive n");
        assert_eq!(p.read_units_per_shard_query, 25.0);
        assert_eq!(p.read_units_per_shard, 300_000.0);
        assert!(p.warnings.contains(&PlanWarning::ReadsOverBudget {
            read_units_per_shard: 300_000.0,
            budget: 2_100.0,
            limit: 3_000.0,
        }));
        let text = p.to_string();
        assert!(text.contains("EVERY shard"), "{text}");
        assert!(text.contains("DAX"), "{text}");
        assert!(text.contains("will throttle"), "{text}");

        let eventual = plan(&input.clone().consistency(Consistency::Eventual)).unwrap();
        assert_eq!(eventual.read_units_per_shard_query, 12.5);
        assert_eq!(eventual.read_units_per_shard, 150_000.0);

        // A handful of reads stays inside the budget: no warning.
        let calm = plan(&input.scatter_reads_per_sec(50.0)).unwrap();
        assert_eq!(calm.read_units_per_shard, 1_250.0);
        assert!(calm.warnings.is_empty(), "{:?}", calm.warnings);
    }

    #[test]
    fn reads_between_budget_and_limit_warn_without_throttling() {
        let p = plan(&PlanInput::new(100.0, 4_096).scatter_reads_per_sec(2_500.0)).unwrap();
        assert_eq!(p.read_units_per_shard, 2_500.0);
        let w = p
            .warnings
            .iter()
            .find(|w| matches!(w, PlanWarning::ReadsOverBudget { .. }))
            .expect("over the 2,100 budget");
        assert!(w.to_string().contains("no headroom"), "{w}");
    }

    #[test]
    fn point_reads_can_drive_n() {
        // Writes need 1 shard; 20,000 strongly consistent 1 KB point reads need ceil(20,000 / 2,100).
        let p = plan(&PlanInput::new(100.0, 1_024).point_reads_per_sec(20_000.0)).unwrap();
        assert_eq!(p.base.n, 10);
        assert_eq!(p.read_units_per_shard, 2_000.0);
        assert!(p
            .base
            .lines
            .iter()
            .any(|l| l == "n = max(writes 1, point reads 10) = 10"));
        let eventual = plan(
            &PlanInput::new(100.0, 1_024)
                .point_reads_per_sec(20_000.0)
                .consistency(Consistency::Eventual),
        )
        .unwrap();
        assert_eq!(eventual.base.n, 5);
    }

    #[test]
    fn headroom_zero_and_custom_limits() {
        assert_eq!(n_for(PlanInput::new(7_000.0, 1_024).headroom(0.0)), 7);
        assert_eq!(
            n_for(
                PlanInput::new(7_000.0, 1_024)
                    .headroom(0.0)
                    .limits(500.0, 1_500.0)
            ),
            14
        );
        // No traffic at all: still one key.
        assert_eq!(n_for(PlanInput::new(0.0, 1)), 1);
    }

    #[test]
    fn ceil_is_exact_on_whole_ratios_and_rounds_up_otherwise() {
        assert_eq!(shards_for(7_000.0, 1_000.0 * (1.0 - 0.3)), 10);
        assert_eq!(shards_for(7_001.0, 700.0), 11);
        assert_eq!(shards_for(50_000.0, 1_000.0 * (1.0 - 1.0 / 3.0)), 75);
        assert_eq!(shards_for(0.0, 700.0), 1);
        assert_eq!(shards_for(1e300, 700.0), u64::MAX);
    }

    #[test]
    fn units_follow_dynamodb_rounding() {
        assert_eq!(write_units(1), 1);
        assert_eq!(write_units(1_024), 1);
        assert_eq!(write_units(1_025), 2);
        assert_eq!(write_units(0), 1);
        assert_eq!(read_units(4_096, Consistency::Strong), 1.0);
        assert_eq!(read_units(4_097, Consistency::Strong), 2.0);
        assert_eq!(read_units(4_097, Consistency::Eventual), 1.0);
        assert_eq!(read_units(1, Consistency::Eventual), 0.5);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_field() {
        let cases: Vec<(PlanInput, &str)> = vec![
            (PlanInput::new(-1.0, 1_024), "peak_writes_per_sec"),
            (PlanInput::new(f64::NAN, 1_024), "peak_writes_per_sec"),
            (PlanInput::new(f64::INFINITY, 1_024), "peak_writes_per_sec"),
            (
                PlanInput::new(1.0, 1_024).scatter_reads_per_sec(-5.0),
                "scatter_reads_per_sec",
            ),
            (
                PlanInput::new(1.0, 1_024).point_reads_per_sec(f64::NAN),
                "point_reads_per_sec",
            ),
            (PlanInput::new(1.0, 1_024).headroom(1.0), "headroom"),
            (PlanInput::new(1.0, 1_024).headroom(-0.1), "headroom"),
            (PlanInput::new(1.0, 1_024).headroom(f64::NAN), "headroom"),
            (
                PlanInput::new(1.0, 1_024).limits(0.0, 3_000.0),
                "limits.write_units_per_second",
            ),
            (
                PlanInput::new(1.0, 1_024).limits(1_000.0, f64::INFINITY),
                "limits.read_units_per_second",
            ),
            (
                PlanInput::new(1.0, 1_024).gsi(GsiLoad::new("g", 1.5)),
                "gsis[g].write_fraction",
            ),
            (
                PlanInput::new(1.0, 1_024).gsi(GsiLoad::new("g", 1.0).hottest_key_share(-0.5)),
                "gsis[g].hottest_key_share",
            ),
        ];
        for (input, field) in cases {
            match plan(&input) {
                Err(PlanError::InvalidNumber { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: expected InvalidNumber, got {other:?}"),
            }
        }
        let e = plan(&PlanInput::new(1.0, 0)).unwrap_err();
        assert_eq!(
            e,
            PlanError::InvalidItemSize {
                field: "item_bytes".into(),
                bytes: 0
            }
        );
        assert!(e.to_string().contains("409600"), "{e}");
        let e = plan(&PlanInput::new(1.0, 400 * 1024 + 1)).unwrap_err();
        assert!(matches!(e, PlanError::InvalidItemSize { .. }));
        assert!(plan(&PlanInput::new(1.0, 400 * 1024)).is_ok());
        let e = plan(&PlanInput::new(1.0, 1).gsi(GsiLoad::new("g", 1.0).projected_bytes(0)))
            .unwrap_err();
        assert!(
            matches!(e, PlanError::InvalidItemSize { ref field, .. } if field == "gsis[g].item_bytes")
        );
        assert_eq!(
            plan(&PlanInput::new(1.0, 1).items_per_read(0)).unwrap_err(),
            PlanError::NoItemsPerRead
        );
        assert_eq!(
            plan(&PlanInput::new(1.0, 1).gsi(GsiLoad::new("", 1.0))).unwrap_err(),
            PlanError::EmptyGsiName
        );
        let e = plan(
            &PlanInput::new(1.0, 1)
                .gsi(GsiLoad::new("gsi1", 1.0))
                .gsi(GsiLoad::new("gsi1", 0.5)),
        )
        .unwrap_err();
        assert_eq!(
            e,
            PlanError::DuplicateGsi {
                name: "gsi1".into()
            }
        );
        assert!(e.to_string().contains("listed twice"));
    }

    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(999.0), "999");
        assert_eq!(fmt_num(1_000.0), "1,000");
        assert_eq!(fmt_num(21_000.0), "21,000");
        assert_eq!(fmt_num(1_234_567.891), "1,234,567.89");
        assert_eq!(fmt_num(666.666_666), "666.67");
        assert_eq!(fmt_num(12.5), "12.5");
        assert_eq!(fmt_num(-1_500.0), "-1,500");
        assert_eq!(fmt_num(-0.001), "0");
        assert_eq!(percent(0.7), "70%");
        assert_eq!(fmt_fraction(1.0), "1.00");
        assert_eq!(fmt_fraction(0.5), "0.50");
        assert_eq!(fmt_fraction(0.001), "0.001");
    }
}

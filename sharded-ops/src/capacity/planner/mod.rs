//! The shard planner: how many shards `n` a logical key (and each GSI key) needs, with the
//! arithmetic shown.
//!
//! Layout: this file holds the inputs ([`PlanInput`], [`GsiLoad`]), the outputs ([`ShardPlan`],
//! [`KeyPlan`], [`PlanWarning`], [`PlanError`]) and [`plan`], which runs `validate` (the
//! input checks), `arithmetic` (the numbers: units, budgets, `n`, warnings) and `explain`
//! (the numbers as lines a person can check, and every `Display`).

mod arithmetic;
mod explain;
#[cfg(test)]
mod tests;
mod validate;

use crate::capacity::table_caps::TableCaps;
use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::capacity::PerKeyLimits;
use sharded_runtime::capacity::{Consistency, ITEM_SIZE_LIMIT};

pub(crate) use arithmetic::{per_shard_budget, shards_for};

/// The default headroom: plan each shard for 70% of the per-key limit.
pub const DEFAULT_HEADROOM: f64 = 0.3;

/// The write load one GSI puts on its hottest partition key value.
///
/// Two fractions describe it: `write_fraction`, the share of the logical key's puts that
/// write this GSI at all (1.0 unless the index is sparse), and `hottest_key_share`, the share
/// of those GSI writes that land on its single hottest key value. The default, 1.0, is the
/// worst case (a constant GSI key, or one made only of the base key's fields, like
/// `ELECTION#2024` in the vote-counter pattern); a GSI key such as `PLAYER#{player_id}` that spreads writes over many
/// values has a small share and needs no sharding.
///
/// ```
/// use sharded::capacity::GsiLoad;
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
/// use sharded::capacity::{plan, Consistency, GsiLoad, PlanInput};
/// let input = PlanInput::new(7_000.0, 1_024)   // peak puts/s on the logical key, item size
///     .scatter_reads_per_sec(50.0)            // top-100 queries/s over all shards
///     .items_per_read(100)
///     .consistency(Consistency::Eventual)
///     .headroom(0.3)
///     .gsi(GsiLoad::new("gsi1", 1.0));
/// let shard_plan = plan(&input)?;
/// assert_eq!(shard_plan.base.n, 10);
/// assert_eq!(shard_plan.gsis[0].n, 10);
/// # Ok::<(), sharded::capacity::PlanError>(())
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
    /// Average item size in bytes, as DynamoDB counts it (see [`sharded_runtime::capacity::item_size`]).
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
    /// What the table takes at once, if known ([`TableCaps::describe`] reads it): the plan
    /// warns when the planned load exceeds it, with the `UpdateTable` that lifts it.
    pub table: Option<TableCaps>,
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
            table: None,
        }
    }

    /// Checks the plan against the table's warm throughput, on-demand maximum or provisioned
    /// capacity: sharding lifts the per-key limit, not these.
    ///
    /// ```
    /// use sharded::capacity::{plan, PlanInput, PlanWarning, TableCaps};
    /// let caps = TableCaps::new("scores").warm(4_000.0, 12_000.0);
    /// let p = plan(&PlanInput::new(7_000.0, 1_024).table(caps))?;
    /// assert!(p.warnings.iter().any(|w| matches!(w, PlanWarning::TableCapBelowLoad { .. })));
    /// assert!(p.to_string().contains("--warm-throughput WriteUnitsPerSecond=7000"));
    /// # Ok::<(), sharded::capacity::PlanError>(())
    /// ```
    pub fn table(mut self, caps: TableCaps) -> Self {
        self.table = Some(caps);
        self
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
/// use sharded::capacity::{plan, PlanError, PlanInput};
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
         the item as DynamoDB counts it (`sharded::capacity::item_size`)",
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

/// The plan of one partition key: the base table's or one GSI's.
///
/// ```
/// use sharded::capacity::{plan, PlanInput};
/// let key = plan(&PlanInput::new(1_000.0, 3_000))?.base;
/// assert_eq!(key.write_units_per_put, 3);
/// assert_eq!(key.write_units_per_sec, 3_000.0);
/// assert_eq!(key.n, 5);
/// assert_eq!(key.derive_n(), Some(5));
/// assert!(key.lines.iter().any(|l| l == "n = ceil(3,000 / 700) = 5"));
/// # Ok::<(), sharded::capacity::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
}

/// Something about a plan that needs a decision beyond choosing `n`.
///
/// ```
/// use sharded::capacity::{plan, PlanInput, PlanWarning};
/// let shard_plan = plan(&PlanInput::new(500.0, 1_024))?;
/// assert_eq!(shard_plan.warnings, vec![PlanWarning::NoShardingNeeded { index: None }]);
/// # Ok::<(), sharded::capacity::PlanError>(())
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
        /// Read units one scatter-gather query takes from each shard (0 without scatter
        /// reads): what a cached answer saves every shard each time it is used.
        read_units_per_shard_query: f64,
        /// Of `read_units_per_shard`, what the point reads take (a cache of the scatter
        /// query leaves them).
        point_read_units_per_shard: f64,
        /// The per-shard read budget (limit x (1 - headroom)).
        budget: f64,
        /// The per-key read limit.
        limit: f64,
    },
    /// The planned load exceeds what the table takes at once (its warm throughput, on-demand
    /// maximum or provisioned capacity): throttled whatever `n` is, until `UpdateTable`.
    TableCapBelowLoad {
        /// Which cap, by how much, and the command that lifts it.
        gap: String,
    },
}

/// The result of [`plan`]: `n` for the base key and each GSI, the arithmetic, and warnings.
///
/// `Display` prints every step, so the plan can go into a design document or a commit message:
///
/// ```
/// use sharded::capacity::{plan, PlanInput};
/// let text = plan(&PlanInput::new(7_000.0, 3_000))?.to_string();
/// assert!(text.contains("item 3,000 B -> 3 write units per put (1 KB each, rounded up)"));
/// assert!(text.contains("7,000 puts/s x 3 units = 21,000 WCU/s on the logical key"));
/// assert!(text.contains("per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU"));
/// assert!(text.contains("n = ceil(21,000 / 700) = 30"));
/// # Ok::<(), sharded::capacity::PlanError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

/// Plans the shard count of a logical key and of each GSI key its puts write.
///
/// One partition key value takes at most about 1,000 write units/s and 3,000 read units/s.
/// `plan` turns a key's peak traffic into capacity units, divides by what one shard may
/// carry after keeping some headroom free, and rounds up:
///
/// ```text
/// write units per put = ceil(item bytes / 1,024)                    (at least 1)
/// WCU/s on the key    = peak puts/s x write units per put
/// per shard budget    = per-key write limit x (1 - headroom)        (1,000 x 0.7 = 700)
/// n                   = ceil(WCU/s on the key / per shard budget)   (at least 1)
/// ```
///
/// Each GSI is planned the same way on its own key (a GSI has its own partitions and the
/// same per-key limits). Point reads spread over the shards like writes and can raise `n`.
/// Scatter-gather reads are checked, not planned: they query every shard, so sharding does
/// not lower what each shard reads; the plan warns when they exceed the per-key read budget.
///
/// Every input is checked first: a negative or non-finite rate, a headroom outside
/// `0.0..1.0`, a fraction outside `0..=1`, a non-positive limit, an item size of 0 or above
/// 400 KB, or a GSI listed twice is a [`PlanError`] saying what to give instead.
///
/// A viral game's leaderboard takes 5,000 score writes/s, 7,000 at its peak, of 1 KB each:
/// ten shards carry 500 to 700 WCU/s each.
///
/// ```
/// use sharded::capacity::{plan, PlanInput};
/// let leaderboard = plan(&PlanInput::new(7_000.0, 1_024))?;
/// assert_eq!(leaderboard.base.n, 10);
/// assert_eq!(leaderboard.base.write_units_per_shard, 700.0); // at the peak; 500 sustained
///
/// // A bigger launch: 10,000 writes/s needs 15 shards; 50,000 with a 1.5x safety factor, 75.
/// assert_eq!(plan(&PlanInput::new(10_000.0, 1_024))?.base.n, 15);
/// assert_eq!(plan(&PlanInput::new(50_000.0, 1_024).headroom(1.0 / 3.0))?.base.n, 75);
/// // 500 writes/s: one key is enough.
/// assert_eq!(plan(&PlanInput::new(500.0, 1_024))?.base.n, 1);
/// # Ok::<(), sharded::capacity::PlanError>(())
/// ```
///
/// A GSI written by every put doubles the write units, and needs its own `n`:
///
/// ```
/// use sharded::capacity::{plan, GsiLoad, PlanInput, PlanWarning};
/// let p = plan(&PlanInput::new(7_000.0, 1_024).gsi(GsiLoad::new("gsi1", 1.0)))?;
/// assert_eq!(p.total_write_units_per_sec, 14_000.0);
/// assert_eq!((p.base.n, p.gsis[0].n), (10, 10));
/// assert!(p.warnings.contains(&PlanWarning::GsiNeedsSharding { index: "gsi1".into(), n: 10 }));
/// # Ok::<(), sharded::capacity::PlanError>(())
/// ```
pub fn plan(input: &PlanInput) -> Result<ShardPlan, PlanError> {
    validate::validate(input)?;
    let numbers = arithmetic::work_out(input);
    let base = KeyPlan {
        index: None,
        n: numbers.base.n,
        write_fraction: 1.0,
        write_units_per_put: numbers.base.units,
        write_units_per_sec: numbers.base.wcu,
        write_units_per_shard: numbers.base.write_units_per_shard,
        lines: explain::base_lines(input, &numbers),
    };
    let gsis = numbers
        .gsis
        .iter()
        .map(|gsi| KeyPlan {
            index: Some(gsi.load.name.clone()),
            n: gsi.n,
            write_fraction: gsi.load.write_fraction,
            write_units_per_put: gsi.units,
            write_units_per_sec: gsi.wcu,
            write_units_per_shard: gsi.write_units_per_shard,
            lines: explain::gsi_lines(input, &numbers, gsi),
        })
        .collect();
    Ok(ShardPlan {
        base,
        gsis,
        read_units_per_shard_query: numbers
            .base
            .scatter_reads
            .as_ref()
            .map_or(0.0, |s| s.units_per_query),
        read_units_per_shard: numbers.base.read_units_per_shard,
        write_units_per_put_total: numbers.write_units_per_put_total,
        total_write_units_per_sec: numbers.total_write_units_per_sec,
        warnings: numbers.warnings,
    })
    .map(|mut plan: ShardPlan| {
        if let Some(caps) = &input.table {
            let reads = plan.read_units_per_shard * plan.base.n as f64;
            if let Some(gap) = caps.gap(plan.total_write_units_per_sec, reads) {
                plan.warnings.push(PlanWarning::TableCapBelowLoad { gap });
            }
        }
        plan
    })
}

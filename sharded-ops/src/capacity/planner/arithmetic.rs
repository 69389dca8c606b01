//! The planner's arithmetic: units per put, per-shard budgets, `n` for the base key and each
//! GSI key, and the warnings, as numbers. How they read is in `explain`.

use crate::capacity::planner::{GsiLoad, PlanInput, PlanWarning};
use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::capacity::{read_units, write_units};

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

/// What one shard may carry: the per-key `limit` less the `headroom` kept free.
pub(crate) fn per_shard_budget(limit: f64, headroom: f64) -> f64 {
    limit * (1.0 - headroom)
}

/// Every number of a plan, before it is explained.
pub(super) struct Arithmetic<'a> {
    /// Write units per second one shard may carry.
    pub(super) write_budget: f64,
    /// Read units per second one shard may carry.
    pub(super) read_budget: f64,
    pub(super) base: BaseKey,
    pub(super) gsis: Vec<GsiKey<'a>>,
    /// Write units of one put, base table and the GSIs it writes (weighted by their share).
    pub(super) write_units_per_put_total: f64,
    pub(super) total_write_units_per_sec: f64,
    pub(super) warnings: Vec<PlanWarning>,
}

/// The base table's key: its writes, and the reads that may raise or strain its `n`.
pub(super) struct BaseKey {
    /// Write units of one put.
    pub(super) units: u64,
    /// Write units per second on the logical key.
    pub(super) wcu: f64,
    /// The shard count the writes alone need.
    pub(super) n_writes: u64,
    pub(super) point_reads: Option<PointReads>,
    pub(super) scatter_reads: Option<ScatterReads>,
    /// The shard count: the larger of what writes and point reads need.
    pub(super) n: u64,
    pub(super) write_units_per_shard: f64,
    /// Read units per second on each shard at `n`: scatter reads plus a share of point reads.
    pub(super) read_units_per_shard: f64,
}

/// Point reads (`get`): one shard each, so they spread like writes.
pub(super) struct PointReads {
    /// Read units of one read.
    pub(super) units: f64,
    /// Read units per second on the logical key.
    pub(super) rcu: f64,
    /// The shard count the point reads alone need.
    pub(super) n: u64,
}

/// Scatter-gather reads: every read queries every shard, whatever `n` is.
pub(super) struct ScatterReads {
    /// Bytes one read takes from each shard.
    pub(super) bytes: u64,
    /// Read units one read costs on each shard.
    pub(super) units_per_query: f64,
    /// Read units per second on every shard.
    pub(super) rcu: f64,
}

/// One GSI's hottest key.
pub(super) struct GsiKey<'a> {
    pub(super) load: &'a GsiLoad,
    /// Bytes of the item as projected into the GSI.
    pub(super) bytes: u64,
    /// Write units of one GSI write.
    pub(super) units: u64,
    /// Write units per second on the GSI's hottest key.
    pub(super) wcu: f64,
    pub(super) n: u64,
    pub(super) write_units_per_shard: f64,
}

/// Works out the numbers of a plan for a checked `input`.
pub(super) fn work_out(input: &PlanInput) -> Arithmetic<'_> {
    let write_budget = per_shard_budget(input.limits.write_units_per_second, input.headroom);
    let read_budget = per_shard_budget(input.limits.read_units_per_second, input.headroom);
    let base = base_key(input, write_budget, read_budget);
    let gsis: Vec<GsiKey<'_>> = input
        .gsis
        .iter()
        .map(|gsi| gsi_key(input, gsi, write_budget))
        .collect();

    let mut warnings: Vec<PlanWarning> = key_warning(None, base.n).into_iter().collect();
    if base.read_units_per_shard > read_budget {
        warnings.push(PlanWarning::ReadsOverBudget {
            read_units_per_shard: base.read_units_per_shard,
            read_units_per_shard_query: base
                .scatter_reads
                .as_ref()
                .map_or(0.0, |s| s.units_per_query),
            point_read_units_per_shard: base.read_units_per_shard
                - base.scatter_reads.as_ref().map_or(0.0, |s| s.rcu),
            budget: read_budget,
            limit: input.limits.read_units_per_second,
        });
    }
    let mut write_units_per_put_total = base.units as f64;
    for gsi in &gsis {
        write_units_per_put_total += gsi.load.write_fraction * gsi.units as f64;
        warnings.extend(key_warning(Some(&gsi.load.name), gsi.n));
    }
    Arithmetic {
        write_budget,
        read_budget,
        base,
        gsis,
        write_units_per_put_total,
        total_write_units_per_sec: input.peak_writes_per_sec * write_units_per_put_total,
        warnings,
    }
}

fn base_key(input: &PlanInput, write_budget: f64, read_budget: f64) -> BaseKey {
    let units = write_units(input.item_bytes);
    let wcu = input.peak_writes_per_sec * units as f64;
    let n_writes = shards_for(wcu, write_budget);
    let point_units = read_units(input.item_bytes, input.consistency);

    let point_reads = (input.point_reads_per_sec > 0.0).then(|| {
        let rcu = input.point_reads_per_sec * point_units;
        PointReads {
            units: point_units,
            rcu,
            n: shards_for(rcu, read_budget),
        }
    });
    let scatter_reads = (input.scatter_reads_per_sec > 0.0).then(|| {
        let bytes = u64::from(input.items_per_read).saturating_mul(input.item_bytes);
        let units_per_query = read_units(bytes, input.consistency);
        ScatterReads {
            bytes,
            units_per_query,
            rcu: input.scatter_reads_per_sec * units_per_query,
        }
    });

    let n = point_reads.as_ref().map_or(n_writes, |p| n_writes.max(p.n));
    let scatter_rcu = scatter_reads.as_ref().map_or(0.0, |s| s.rcu);
    BaseKey {
        units,
        wcu,
        n_writes,
        n,
        write_units_per_shard: wcu / n as f64,
        read_units_per_shard: scatter_rcu + input.point_reads_per_sec * point_units / n as f64,
        point_reads,
        scatter_reads,
    }
}

fn gsi_key<'a>(input: &PlanInput, gsi: &'a GsiLoad, write_budget: f64) -> GsiKey<'a> {
    let bytes = gsi.item_bytes.unwrap_or(input.item_bytes);
    let units = write_units(bytes);
    let wcu = input.peak_writes_per_sec * gsi.write_fraction * gsi.hottest_key_share * units as f64;
    let n = shards_for(wcu, write_budget);
    GsiKey {
        load: gsi,
        bytes,
        units,
        wcu,
        n,
        write_units_per_shard: wcu / n as f64,
    }
}

/// What a key's `n` alone calls for: no sharding, too many shards, or a GSI key to shard.
fn key_warning(index: Option<&str>, n: u64) -> Option<PlanWarning> {
    if n == 1 {
        Some(PlanWarning::NoShardingNeeded {
            index: index.map(str::to_owned),
        })
    } else if n > u64::from(MAX_SHARDS) {
        Some(PlanWarning::TooManyShards {
            index: index.map(str::to_owned),
            n,
        })
    } else {
        index.map(|index| PlanWarning::GsiNeedsSharding {
            index: index.to_owned(),
            n,
        })
    }
}

/// The `n` to write in the derive attribute, when the key is sharded (2 to 1,000 shards).
pub(super) fn derive_attribute_n(n: u64) -> Option<u32> {
    u32::try_from(n)
        .ok()
        .filter(|n| (2..=MAX_SHARDS).contains(n))
}

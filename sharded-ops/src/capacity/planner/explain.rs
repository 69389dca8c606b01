//! The planner's explanation: the arithmetic as lines a person can check, and the text of
//! each warning and of the whole plan.

use std::fmt;

use crate::capacity::format::{count_of, fmt_fraction, fmt_num, percent};
use crate::capacity::planner::arithmetic::{derive_attribute_n, Arithmetic, GsiKey};
use crate::capacity::planner::{KeyPlan, PlanInput, PlanWarning, ShardPlan};
use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::capacity::Consistency;

/// The steps of the base table key's plan, one a line.
pub(super) fn base_lines(input: &PlanInput, a: &Arithmetic<'_>) -> Vec<String> {
    let base = &a.base;
    let limits = input.limits;
    let mut lines = vec![
        item_line(input.item_bytes, base.units),
        format!(
            "{} puts/s x {} = {} WCU/s on the logical key",
            fmt_num(input.peak_writes_per_sec),
            count_of(base.units as f64, "unit"),
            fmt_num(base.wcu)
        ),
        write_budget_line(input, a.write_budget),
        ceil_line("n", base.wcu, a.write_budget, base.n_writes),
    ];
    let consistency_note = match input.consistency {
        Consistency::Strong => "strongly consistent",
        Consistency::Eventual => "halved: eventually consistent",
        Consistency::Transactional => "doubled: transactional",
        // A consistency added to the runtime later: its units are already in the figures.
        _ => "by its consistency",
    };
    if let Some(point) = &base.point_reads {
        lines.push(format!(
            "point reads: item {} B -> {} each (4 KB each, rounded up; {consistency_note})",
            fmt_num(input.item_bytes as f64),
            count_of(point.units, "read unit")
        ));
        lines.push(format!(
            "{} point reads/s x {} = {} RCU/s, spread over the shards",
            fmt_num(input.point_reads_per_sec),
            count_of(point.units, "unit"),
            fmt_num(point.rcu)
        ));
        lines.push(budget_line(
            "read ",
            "RCU",
            limits.read_units_per_second,
            a.read_budget,
            input.headroom,
        ));
        lines.push(ceil_line(
            "n for point reads",
            point.rcu,
            a.read_budget,
            point.n,
        ));
        lines.push(format!(
            "n = max(writes {}, point reads {}) = {}",
            fmt_num(base.n_writes as f64),
            fmt_num(point.n as f64),
            fmt_num(base.n as f64)
        ));
    }
    if let Some(scatter) = &base.scatter_reads {
        lines.push(format!(
            "scatter reads: {} items x {} B = {} B per shard query -> {} (4 KB each, rounded \
             up; {consistency_note})",
            fmt_num(f64::from(input.items_per_read)),
            fmt_num(input.item_bytes as f64),
            fmt_num(scatter.bytes as f64),
            count_of(scatter.units_per_query, "read unit")
        ));
        lines.push(format!(
            "{} scatter reads/s x {} = {} RCU/s on EVERY shard (each read queries all shards; \
             n does not lower this)",
            fmt_num(input.scatter_reads_per_sec),
            count_of(scatter.units_per_query, "unit"),
            fmt_num(scatter.rcu)
        ));
    }
    lines.push(per_shard_line(
        base.n,
        base.write_units_per_shard,
        limits.write_units_per_second,
        "WCU",
    ));
    if base.read_units_per_shard > 0.0 {
        lines.push(per_shard_line(
            base.n,
            base.read_units_per_shard,
            limits.read_units_per_second,
            "RCU",
        ));
    }
    if let Some(n) = derive_attribute_n(base.n) {
        lines.push(format!(
            "derive: #[pk(template = \"...\", shard = \"hash(...)\", n = {n})]"
        ));
    }
    lines
}

/// The steps of one GSI key's plan, one a line.
pub(super) fn gsi_lines(input: &PlanInput, a: &Arithmetic<'_>, gsi: &GsiKey<'_>) -> Vec<String> {
    let name = &gsi.load.name;
    let mut lines = vec![
        item_line(gsi.bytes, gsi.units),
        format!(
            "{} puts/s x {} (share of puts writing {name}) x {} (share on its hottest \
             key) x {} = {} WCU/s on the hottest {name} key",
            fmt_num(input.peak_writes_per_sec),
            fmt_fraction(gsi.load.write_fraction),
            fmt_fraction(gsi.load.hottest_key_share),
            count_of(gsi.units as f64, "unit"),
            fmt_num(gsi.wcu)
        ),
        write_budget_line(input, a.write_budget),
        ceil_line("n", gsi.wcu, a.write_budget, gsi.n),
        per_shard_line(
            gsi.n,
            gsi.write_units_per_shard,
            input.limits.write_units_per_second,
            "WCU",
        ),
    ];
    if let Some(n) = derive_attribute_n(gsi.n) {
        lines.push(format!("derive: #[{name}(..., shard = {n})]"));
    }
    lines
}

/// `item 3,000 B -> 3 write units per put (1 KB each, rounded up)`.
fn item_line(bytes: u64, units: u64) -> String {
    format!(
        "item {} B -> {} per put (1 KB each, rounded up)",
        fmt_num(bytes as f64),
        count_of(units as f64, "write unit")
    )
}

/// `per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU`.
fn write_budget_line(input: &PlanInput, budget: f64) -> String {
    budget_line(
        "",
        "WCU",
        input.limits.write_units_per_second,
        budget,
        input.headroom,
    )
}

/// `per shard <what>budget: <limit> <unit> x (1 - <headroom>) = <budget> <unit>`.
fn budget_line(what: &str, unit: &str, limit: f64, budget: f64, headroom: f64) -> String {
    format!(
        "per shard {what}budget: {} {unit} x (1 - {headroom:.2}) = {} {unit}",
        fmt_num(limit),
        fmt_num(budget)
    )
}

/// `<name> = ceil(<load> / <budget>) = <n>`.
fn ceil_line(name: &str, load: f64, budget: f64, n: u64) -> String {
    format!(
        "{name} = ceil({} / {}) = {}",
        fmt_num(load),
        fmt_num(budget),
        fmt_num(n as f64)
    )
}

/// `at n = 5: 600 WCU/s per shard (60% of the 1,000 WCU limit)`.
fn per_shard_line(n: u64, per_shard: f64, limit: f64, unit: &str) -> String {
    format!(
        "at n = {}: {} {unit}/s per shard ({} of the {} {unit} limit)",
        fmt_num(n as f64),
        fmt_num(per_shard),
        percent(per_shard / limit),
        fmt_num(limit)
    )
}

impl KeyPlan {
    /// `base table`, or the GSI's name.
    fn label(&self) -> &str {
        self.index.as_deref().unwrap_or("base table")
    }
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
            PlanWarning::TableCapBelowLoad { gap } => write!(f, "the table caps this load: {gap}"),
            PlanWarning::ReadsOverBudget {
                read_units_per_shard,
                read_units_per_shard_query,
                point_read_units_per_shard,
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
                     not lower this: read less. ",
                    fmt_num(*read_units_per_shard),
                    fmt_num(*budget),
                    fmt_num(*limit)
                )?;
                if *read_units_per_shard_query > 0.0 {
                    hot_read_tools(
                        f,
                        *read_units_per_shard_query,
                        budget - point_read_units_per_shard,
                    )?;
                }
                f.write_str(
                    "Also: read fewer items per query, use eventually consistent reads (half \
                     the units), read single items with point lookups (one shard each), or, \
                     shared across processes, DAX",
                )
            }
        }
    }
}

/// What the crate's own hot-read tools bound a scatter-gather query to, with the plan's
/// figures: `per_query`, the read units one query takes from each shard, and `room`, the
/// per-shard budget the point reads leave. (What they promise is `Query::max_staleness`'s and
/// `Repo::with_single_flight`'s to say; this repeats only the bound.)
fn hot_read_tools(f: &mut fmt::Formatter<'_>, per_query: f64, room: f64) -> fmt::Result {
    write!(
        f,
        "With `Query::max_staleness(S)` a `Repo` (and its clones) answers the query's \
         `collect()` from its answer at most S old, and single flight \
         (`Repo::with_single_flight`, on by default for eventually consistent `collect`) makes \
         its concurrent identical queries share one scatter-gather: each process then sends \
         the query at most once per S (more often only when its own writes drop the answer), \
         so each shard takes at most {} RCU per process per S ({} RCU/s at S = 1 s",
        fmt_num(per_query),
        fmt_num(per_query),
    )?;
    let processes = (room / per_query).floor();
    if processes >= 1.0 {
        write!(
            f,
            ": {} processes fit the {} RCU budget). ",
            fmt_num(processes),
            fmt_num(room)
        )
    } else if room > 0.0 {
        write!(
            f,
            ", more than the {} RCU/s the budget leaves: S of {} s or more per process). ",
            fmt_num(room),
            fmt_num((per_query / room).ceil())
        )
    } else {
        f.write_str(", and the point reads alone fill the budget: more shards spread those). ")
    }
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

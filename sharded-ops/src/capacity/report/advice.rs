//! What to do about each [`HotKeyFlag`]: its `Display`, the advice a report prints.

use std::fmt;

use crate::capacity::format::{fmt_num, percent};
use crate::capacity::report::flags::HotKeyFlag;
use sharded_keys::schema::MAX_SHARDS;
use sharded_runtime::capacity::UnitKind;

/// Where a key is: `base table key `K`` or `gsi1 key `K``.
fn where_(index: Option<&str>, key: &str) -> String {
    match index {
        None => format!("base table key `{key}`"),
        Some(index) => format!("{index} key `{key}`"),
    }
}

/// How to shard a key of `index` into `n` shards, as the derive attribute to write.
fn shard_advice(index: Option<&str>, n: u64) -> String {
    match index {
        None => format!("shard it: #[pk(..., shard = \"hash(...)\", n = {n})]"),
        Some(index) => format!("shard the GSI key: #[{index}(..., shard = {n})]"),
    }
}

/// What to do about a key near its read limit: the crate's own hot-read tools first, with
/// what they bound this key's reads to (a query's cost is not recorded, so the bound is in
/// requests: each process's identical queries reach the key at most once per staleness bound).
fn read_less(f: &mut fmt::Formatter<'_>, units_per_sec: f64, shards: Option<u32>) -> fmt::Result {
    write!(
        f,
        "read less (raising n does not help scatter-gather reads, which hit every shard): this \
         key takes {} RCU/s. With `Query::max_staleness(S)` a `Repo` (and its clones) answers \
         a query's `collect()` from its answer at most S old, and single flight (`Repo::with_single_flight`, \
         on by default for eventually consistent `collect`) makes its concurrent identical \
         queries share one scatter-gather: each process then sends each such query at most \
         once per S, whatever its callers' rate (more often only when its own writes drop the \
         answer)",
        fmt_num(units_per_sec)
    )?;
    match shards {
        Some(n) => write!(
            f,
            ", one request to this key and one to each other shard ({n} requests per S in all; \
             at S = 1 s, {n} per second per process and query)"
        )?,
        None => f.write_str(" (at S = 1 s, one request per second per process and query)")?,
    }
    f.write_str(
        ". Also: use eventually consistent reads (half the units), read single items with \
         point lookups; shared across processes, DAX",
    )
}

impl fmt::Display for HotKeyFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HotKeyFlag::NearLimit {
                index,
                key,
                kind,
                utilization,
                units_per_sec,
                shards,
                suggested_n,
            } => {
                write!(
                    f,
                    "near limit: {} {kind}s at {} of its per-key {kind} limit: ",
                    where_(index.as_deref(), key),
                    percent(*utilization)
                )?;
                match (kind, shards, suggested_n) {
                    (UnitKind::Read, shards, _) => read_less(f, *units_per_sec, *shards),
                    (UnitKind::Write, Some(n), Some(s)) if *s > u64::from(*n) => {
                        write!(f, "raise n from {n} to {s}")?;
                        if *s > u64::from(MAX_SHARDS) {
                            write!(
                                f,
                                " (above the maximum of 1,000: give the key more \
                                 cardinality instead)"
                            )?;
                        }
                        Ok(())
                    }
                    (UnitKind::Write, Some(n), _) => write!(
                        f,
                        "this shard is hotter than 1/{n} of its logical key: the shard hash \
                         field has a hot value; hash on a field with more distinct values, or \
                         use shard = \"random\""
                    ),
                    (UnitKind::Write, None, s) => {
                        f.write_str(&shard_advice(index.as_deref(), s.unwrap_or(2)))
                    }
                }
            }
            HotKeyFlag::DominantKey {
                index,
                key,
                kind,
                share,
            } => write!(
                f,
                "dominant key: {} takes {} of the {} {kind} units in the window: if it is one \
                 hot logical key, shard it (see the near-limit flags for n); if it should not \
                 be hot, look for a constant or low-cardinality key value",
                where_(index.as_deref(), key),
                percent(*share),
                index.as_deref().unwrap_or("base table"),
            ),
            HotKeyFlag::UnevenShards {
                index,
                logical_key,
                kind,
                max_over_mean,
                shards,
                hottest_shard,
            } => write!(
                f,
                "uneven shards: shard {hottest_shard} of {} (n = {shards}) takes {:.1}x the mean \
                 {kind} units: the shard hash field has a hot value (one player, one device); \
                 hash on a field with more distinct values or use shard = \"random\"; raising n \
                 does not move that value's traffic",
                where_(index.as_deref(), logical_key),
                max_over_mean
            ),
            HotKeyFlag::HotGsiKey {
                index,
                key,
                units_per_sec,
                hottest_base_units_per_sec,
                suggested_n,
            } => write!(
                f,
                "hot GSI key: {} takes {} WCU/s, more than the hottest base-table key ({} WCU/s): \
                 the GSI concentrates what the base table spreads; {}",
                where_(Some(index), key),
                fmt_num(*units_per_sec),
                fmt_num(*hottest_base_units_per_sec),
                shard_advice(Some(index), *suggested_n)
            ),
            HotKeyFlag::Throttled {
                index,
                key,
                reason,
                count,
            } => write!(
                f,
                "throttled: {} {count} time{} ({reason}): it is over a per-key limit, so \
                 requests are retried (latency) or fail; see the flags above, raise n or shard \
                 the key",
                where_(index.as_deref(), key),
                if *count == 1 { "" } else { "s" }
            ),
        }
    }
}

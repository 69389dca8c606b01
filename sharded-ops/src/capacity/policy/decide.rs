//! What the policy decides for each key of one look at the load: a pure function of the load
//! figures, the layout directory, the changes this process runs and the clock, so every rule
//! is tested without DynamoDB and without waiting.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sharded_runtime::layouts::{KeyEntry, Phase};

use super::LayoutPolicy;
use crate::capacity::planner::{per_shard_budget, shards_for};

/// One logical key's writes in the collector's window, all its shards together.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct KeyLoad {
    /// The busiest second of the logical key (write units/s, every shard): what the planner
    /// divides among shards.
    pub peak: f64,
    /// The busiest second of its busiest physical key: what the per-key limit applies to.
    pub hottest: f64,
}

/// What the policy sees at one look.
pub(crate) struct Observed<'a> {
    /// The collector's clock, now.
    pub now: Duration,
    /// The per-key write limit (units/s).
    pub limit: f64,
    /// The entity's declared `n`: every key not in the directory has it.
    pub declared_n: u32,
    /// The entity's `max_n`.
    pub max_n: u32,
    /// The write load of each logical key of the entity with traffic in the window.
    pub loads: &'a BTreeMap<String, KeyLoad>,
    /// The layout directory.
    pub entries: &'a BTreeMap<String, KeyEntry>,
    /// The keys whose change this process runs now.
    pub running: &'a BTreeSet<String>,
    /// The keys whose change this process started and that failed, with their target.
    pub failed: &'a BTreeMap<String, u32>,
}

/// What the policy remembers between looks: since when each widened key has been cold.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    pub cold_since: BTreeMap<String, Duration>,
}

/// What the policy decided for one key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub key: String,
    pub action: Action,
    /// The key's count now.
    pub from: u32,
    /// The count it is changed to (`from` when left alone).
    pub to: u32,
    /// The figure compared: the hottest physical key's peak to widen, the logical key's peak
    /// to narrow (write units/s).
    pub load: f64,
    /// What it was compared with (write units/s).
    pub threshold: f64,
}

/// The kinds of decision, each a label of the decision metric and event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Hot: widened to the count the planner's arithmetic gives.
    Widen,
    /// Cold for `narrow_after`: narrowed back to the declared `n`.
    Narrow,
    /// A change this process started failed half way: run again to its target.
    Resume,
    /// Hot, but the key is changing already (here or in another process): left alone.
    Changing,
    /// Hot, but at `max_n`: left alone.
    AtMax,
    /// Hot on one shard, but its count holds the key's load by the planner's arithmetic (an
    /// uneven shard hash, or a peak from before a widening still in the window): left alone.
    CountHolds,
}

impl Action {
    /// The label of the decision in telemetry.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Action::Widen => "widen",
            Action::Narrow => "narrow",
            Action::Resume => "resume",
            Action::Changing => "changing",
            Action::AtMax => "at_max",
            Action::CountHolds => "count_holds",
        }
    }

    /// Whether the decision starts a change.
    pub(crate) fn changes(self) -> bool {
        matches!(self, Action::Widen | Action::Narrow | Action::Resume)
    }
}

/// The decisions of one look, in key order: every key that is hot, every widened key cold
/// for `narrow_after`, and every failed change to resume. Keys with nothing to say get no
/// decision.
pub(crate) fn decide(
    policy: &LayoutPolicy,
    seen: &Observed<'_>,
    memory: &mut Memory,
) -> Vec<Decision> {
    let keys: BTreeSet<&String> = seen
        .loads
        .keys()
        .chain(seen.entries.keys())
        .chain(seen.failed.keys())
        .collect();
    // A key no longer listed nor loaded forgets its cold time.
    memory.cold_since.retain(|key, _| keys.contains(key));
    keys.into_iter()
        .filter_map(|key| decide_key(policy, seen, memory, key))
        .collect()
}

fn decide_key(
    policy: &LayoutPolicy,
    seen: &Observed<'_>,
    memory: &mut Memory,
    key: &str,
) -> Option<Decision> {
    let load = seen.loads.get(key).copied().unwrap_or_default();
    let entry = seen.entries.get(key);
    let hot_at = policy.widen_at * seen.limit;
    let decision = |action, from, to, load, threshold| Decision {
        key: key.to_owned(),
        action,
        from,
        to,
        load,
        threshold,
    };
    let changing = match entry {
        Some(e) if e.phase != Phase::Steady => Some(*e),
        _ => None,
    };
    let running = seen.running.contains(key);
    if let Some(e) = changing {
        // A change of ours that failed half way, still where it stopped.
        if !running && seen.failed.get(key) == Some(&e.to) {
            memory.cold_since.remove(key);
            return Some(decision(Action::Resume, e.from, e.to, load.hottest, hot_at));
        }
    }
    if running || changing.is_some() {
        memory.cold_since.remove(key);
        let steady = current(seen, entry);
        let (from, to) = changing.map_or((steady, steady), |e| (e.from, e.to));
        return (load.hottest >= hot_at)
            .then(|| decision(Action::Changing, from, to, load.hottest, hot_at));
    }
    let now_n = current(seen, entry);
    if load.hottest >= hot_at {
        memory.cold_since.remove(key);
        let budget = per_shard_budget(seen.limit, policy.headroom);
        let needed = shards_for(load.peak, budget).min(u64::from(u32::MAX)) as u32;
        let action = if needed <= now_n {
            Action::CountHolds
        } else if now_n >= seen.max_n {
            Action::AtMax
        } else {
            Action::Widen
        };
        let to = if action == Action::Widen {
            needed.min(seen.max_n)
        } else {
            now_n
        };
        return Some(decision(action, now_n, to, load.hottest, hot_at));
    }
    // Cold enough to narrow: the whole key's peak would sit on the declared count's shards
    // under `narrow_below` of the limit each.
    let cold_at = policy.narrow_below * seen.limit * f64::from(seen.declared_n);
    if now_n <= seen.declared_n || load.peak >= cold_at {
        memory.cold_since.remove(key);
        return None;
    }
    let since = *memory.cold_since.entry(key.to_owned()).or_insert(seen.now);
    if seen.now.saturating_sub(since) < policy.narrow_after {
        return None;
    }
    memory.cold_since.remove(key);
    Some(decision(
        Action::Narrow,
        now_n,
        seen.declared_n,
        load.peak,
        cold_at,
    ))
}

/// The count a steady key has: its directory entry's, or the declared `n`.
fn current(seen: &Observed<'_>, entry: Option<&KeyEntry>) -> u32 {
    entry.map_or(seen.declared_n, |e| e.to)
}

//! The policy's loop: at each interval, one look (the load, the directory, the decisions),
//! each decision recorded, each change run in the background.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use sharded_keys::template::{parse_key_with, KeyContext};
use sharded_runtime::capacity::HotKeyStats;
use sharded_runtime::layouts::Phase;
use sharded_runtime::telemetry::{
    DECISION, ENTITY, ERROR_MESSAGE, FROM_SHARDS, LAYOUT_DECISIONS, LOAD, LOGICAL_KEY, THRESHOLD,
    TO_SHARDS,
};
use sharded_runtime::{Repo, ShardedEntity};

use super::decide::{decide, Decision, KeyLoad, Memory, Observed};
use super::LayoutPolicy;
use crate::capacity::report::{report_at, HotKeyReport};
use crate::layouts::ChangeLayout;

/// The changes this process runs, and those of its changes that failed (with their target).
#[derive(Default)]
struct Changes {
    running: BTreeSet<String>,
    failed: BTreeMap<String, u32>,
}

type Shared = Arc<Mutex<Changes>>;

fn lock(changes: &Shared) -> std::sync::MutexGuard<'_, Changes> {
    changes.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) async fn run_policy<E>(policy: LayoutPolicy, repo: Repo<E>, stats: Arc<HotKeyStats>)
where
    E: ShardedEntity + Send + Sync + 'static,
{
    let changes = Shared::default();
    let mut memory = Memory::default();
    let mut ticks = tokio::time::interval(policy.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        look(&policy, &repo, &stats, &changes, &mut memory).await;
    }
}

/// One look: decides for every key and starts the changes decided.
async fn look<E>(
    policy: &LayoutPolicy,
    repo: &Repo<E>,
    stats: &HotKeyStats,
    changes: &Shared,
    memory: &mut Memory,
) where
    E: ShardedEntity + Send + Sync + 'static,
{
    let entity = E::SCHEMA.entity;
    let entries = match repo.layouts().entries().await {
        Ok(entries) => entries,
        Err(error) => {
            // Nothing decided without the directory: the next look reads it again.
            tracing::event!(
                name: "sharded.layout_policy",
                target: "sharded.layout_policy",
                tracing::Level::WARN,
                { ENTITY } = entity,
                { DECISION } = "unread",
                { ERROR_MESSAGE } = tracing::field::display(&error),
                "the layout policy could not read the layout directory; it tries again at its next look"
            );
            metrics::counter!(LAYOUT_DECISIONS, ENTITY => entity, DECISION => "unread")
                .increment(1);
            return;
        }
    };
    let (report, now) = report_at(stats);
    let loads = loads_of::<E>(&report);
    let (running, failed) = {
        let mut changes = lock(changes);
        // A failed change no longer where it stopped (finished or undone by someone else, or
        // never begun) is decided afresh.
        changes.failed.retain(|key, to| {
            entries
                .get(key)
                .is_some_and(|e| e.phase != Phase::Steady && e.to == *to)
        });
        (changes.running.clone(), changes.failed.clone())
    };
    let seen = Observed {
        now,
        limit: report.limits.write_units_per_second,
        declared_n: E::SCHEMA.pk.sharding.shard_count().unwrap_or(1),
        max_n: E::SCHEMA.pk.shard_bound().unwrap_or(1),
        loads: &loads,
        entries: &entries,
        running: &running,
        failed: &failed,
    };
    for decision in decide(policy, &seen, memory) {
        record(entity, &decision);
        if decision.action.changes() {
            start(policy, repo, changes, decision);
        }
    }
}

/// The write load of each logical key of `E` in the base table.
fn loads_of<E: ShardedEntity>(report: &HotKeyReport) -> BTreeMap<String, KeyLoad> {
    let pk = &E::SCHEMA.pk;
    let context = KeyContext {
        entity: E::SCHEMA.entity,
        attribute: pk.attribute,
    };
    report
        .logical_keys
        .iter()
        .filter(|row| row.index.is_none())
        .filter(|row| parse_key_with(context, pk.template, &row.logical_key, None).is_ok())
        .map(|row| {
            let load = KeyLoad {
                peak: row.write.peak_units_per_sec,
                hottest: row.write.hottest_key_peak_units_per_sec,
            };
            (row.logical_key.clone(), load)
        })
        .collect()
}

/// Runs the change `decision` decided, in the background; its end is an event too.
fn start<E>(policy: &LayoutPolicy, repo: &Repo<E>, changes: &Shared, decision: Decision)
where
    E: ShardedEntity + Send + Sync + 'static,
{
    {
        let mut changes = lock(changes);
        changes.running.insert(decision.key.clone());
        changes.failed.remove(&decision.key);
    }
    let layouts = match policy.migration_write_units {
        Some(units) => repo.layouts().with_write_budget(units),
        None => repo.layouts(),
    };
    let changes = Arc::clone(changes);
    let entity = E::SCHEMA.entity;
    tokio::spawn(async move {
        let result = layouts.change(&decision.key, decision.to).await;
        let mut changes = lock(&changes);
        changes.running.remove(&decision.key);
        match result {
            Ok(migration) => {
                tracing::event!(
                    name: "sharded.layout_policy",
                    target: "sharded.layout_policy",
                    tracing::Level::INFO,
                    { ENTITY } = entity,
                    { LOGICAL_KEY } = decision.key.as_str(),
                    { DECISION } = "changed",
                    { FROM_SHARDS } = decision.from,
                    { TO_SHARDS } = decision.to,
                    "the layout policy changed a key ({} items moved)",
                    migration.moved
                );
                metrics::counter!(LAYOUT_DECISIONS, ENTITY => entity, DECISION => "changed")
                    .increment(1);
            }
            Err(error) => {
                tracing::event!(
                    name: "sharded.layout_policy",
                    target: "sharded.layout_policy",
                    tracing::Level::WARN,
                    { ENTITY } = entity,
                    { LOGICAL_KEY } = decision.key.as_str(),
                    { DECISION } = "failed",
                    { FROM_SHARDS } = decision.from,
                    { TO_SHARDS } = decision.to,
                    { ERROR_MESSAGE } = tracing::field::display(&error),
                    "a change of the layout policy failed; it is resumed at the next look"
                );
                metrics::counter!(LAYOUT_DECISIONS, ENTITY => entity, DECISION => "failed")
                    .increment(1);
                changes.failed.insert(decision.key, decision.to);
            }
        }
    });
}

/// One decision as an event and a count.
fn record(entity: &'static str, decision: &Decision) {
    let label = decision.action.label();
    macro_rules! event {
        ($level:ident, $message:literal) => {
            tracing::event!(
                name: "sharded.layout_policy",
                target: "sharded.layout_policy",
                tracing::Level::$level,
                { ENTITY } = entity,
                { LOGICAL_KEY } = decision.key.as_str(),
                { DECISION } = label,
                { FROM_SHARDS } = decision.from,
                { TO_SHARDS } = decision.to,
                { LOAD } = decision.load,
                { THRESHOLD } = decision.threshold,
                $message
            )
        };
    }
    if decision.action.changes() {
        event!(INFO, "the layout policy changes a key");
    } else {
        // Left alone: said at every look while the key stays hot, so at debug.
        event!(DEBUG, "the layout policy leaves a hot key alone");
    }
    metrics::counter!(LAYOUT_DECISIONS, ENTITY => entity, DECISION => label).increment(1);
}

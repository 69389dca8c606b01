//! The migration's counts, recorded in the `sharded.migration.items` metric as a run goes.

use sharded_runtime::telemetry::{ENTITY, MIGRATION_ITEMS, OUTCOME};

use super::report::Progress;

/// Records in the migration metric what the counts of a run gained since `before`.
pub(super) fn record_progress(entity: &'static str, before: &Progress, now: &Progress) {
    type Count = fn(&Progress) -> u64;
    let outcomes: [(&'static str, Count); 8] = [
        ("scanned", |p| p.scanned),
        ("moved", |p| p.moved),
        ("superseded", |p| p.superseded),
        ("in_place", |p| p.in_place),
        ("tagged", |p| p.tagged),
        ("gone", |p| p.gone),
        ("conflicts", |p| p.conflicts),
        ("failed", |p| p.failed),
    ];
    for (outcome, count) in outcomes {
        let count = count(now).saturating_sub(count(before));
        if count > 0 {
            metrics::counter!(MIGRATION_ITEMS, ENTITY => entity, OUTCOME => outcome)
                .increment(count);
        }
    }
}

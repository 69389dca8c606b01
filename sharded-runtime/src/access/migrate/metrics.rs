//! The migration's counts, recorded in the `sharded.migration.items` metric as a run goes.

use crate::error::migration::report::Progress;

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
        crate::telemetry::migration_items(
            entity,
            outcome,
            count(now).saturating_sub(count(before)),
        );
    }
}

//! Resuming a migration: a checkpoint is taken back only by the migration that wrote it.

use super::checkpoint::{Checkpoint, Scope};
use super::error::MigrateError;

/// Refuses a checkpoint of another migration, naming what differs.
pub(super) fn check_resume(
    base: &Checkpoint,
    resume: &Checkpoint,
    parts: usize,
) -> Result<(), MigrateError> {
    let differs = |what: &str, theirs: &str, ours: &str| {
        Err(MigrateError::InvalidCheckpoint(format!(
            "this checkpoint is of a migration of {what} `{theirs}`, not `{ours}`: resume a \
             migration with its own checkpoint, or start this one without resume_from"
        )))
    };
    if resume.table != base.table {
        return differs("table", &resume.table, &base.table);
    }
    if resume.entity != base.entity {
        return differs("entity", &resume.entity, &base.entity);
    }
    if resume.layout != base.layout {
        return differs("the layout", &resume.layout, &base.layout);
    }
    let describe = |scope: &Scope, parts: usize| match scope {
        Scope::Table => "the whole table".to_owned(),
        Scope::Segments { first, total } => format!(
            "the unit {}",
            super::units::segments_id(*first, first.saturating_add(parts as u32), *total)
        ),
        Scope::Key { logical, .. } => format!("only({logical})"),
    };
    if resume.scope != base.scope {
        return differs(
            "scope",
            &describe(&resume.scope, resume.positions.len()),
            &describe(&base.scope, parts),
        );
    }
    if resume.positions.len() != parts {
        return Err(MigrateError::InvalidCheckpoint(format!(
            "this checkpoint is of a scan in {} segments, not {parts}: a scan resumes only with \
             its own segment count; drop .segments(..) or set it to {}",
            resume.positions.len(),
            resume.positions.len()
        )));
    }
    Ok(())
}

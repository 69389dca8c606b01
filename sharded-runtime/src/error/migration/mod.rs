//! What a migration hands back (its report, progress, failures and resumable checkpoint):
//! the values `Error::MigrationIncomplete` carries, so they live beside the error type. The
//! runner that fills them is the operator crate's (`sharded-ops`); it builds them through
//! `__ops`.

pub(crate) mod checkpoint;
pub(crate) mod report;

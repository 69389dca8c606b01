//! What a migration hands back (its report, progress, failures and resumable checkpoint):
//! values `Error::MigrationIncomplete` carries, kept beside the error type so that it imports
//! nothing from `access/`. The runner that fills them is `access/migrate/`.

pub(crate) mod checkpoint;
pub(crate) mod report;

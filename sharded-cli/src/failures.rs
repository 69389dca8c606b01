//! How a command's failures are told: a DynamoDB error, a migration that stopped or was
//! refused, a file that cannot be read. Shared by the commands and the migration's units, so
//! neither imports the other.

use std::path::Path;

use sharded::migrate::MigrateError;
use sharded::Error;

use crate::Failure;

/// A DynamoDB error on `table`: a failure of the work.
pub(crate) fn dynamo_failure(table: &str, error: Error) -> Failure {
    Failure::failed(format!("table `{table}`: {error}"))
}

/// Why `migrate` or `remaining` stopped. What the runner refuses before it sends any request
/// (settings that cannot run, an entity with no transition, a checkpoint of another
/// migration: `Refused`, `InvalidCheckpoint`) is bad input, [`EXIT_USAGE`](crate::EXIT_USAGE),
/// its message followed by the flags behind it (`given`, as typed) and what to do; anything
/// else is a failure of the work.
pub(crate) fn migration_failure(table: &str, error: MigrateError, given: &[String]) -> Failure {
    let refused = |why: String, what_to_do: &str| {
        let given = if given.is_empty() {
            String::new()
        } else {
            format!(" (given: {})", given.join(" "))
        };
        Failure::usage(format!(
            "table `{table}`: refused before any request, nothing was changed: \
             {why}{given}; {what_to_do}"
        ))
    };
    match error {
        MigrateError::Refused(why) => refused(
            why.to_string(),
            "change the setting it names, or leave its flag out for the default",
        ),
        MigrateError::InvalidCheckpoint(why) => refused(
            why,
            "give --checkpoint the file this migration wrote, or leave out --resume to start \
             from the beginning",
        ),
        MigrateError::Failed(other) => dynamo_failure(table, other),
        other => Failure::failed(format!("table `{table}`: {other}")),
    }
}

/// The text of the file at `path`, or bad input naming it.
pub(crate) fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
}

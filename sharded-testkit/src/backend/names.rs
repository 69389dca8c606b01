//! The names the backends go by: the variable that chooses one, its values, and the crate that
//! serves the embedded one (said in messages). A leaf, so that choosing, starting and explaining
//! a failure can each name them without importing one another.

/// The crate that serves the embedded backend, and the version this test kit was built with.
pub(super) const ENGINE: &str = "dynoxide";
/// The version of `dynoxide-rs` the test kit depends on (its `Cargo.toml`); said in messages.
pub(super) const ENGINE_VERSION: &str = "3.2";
/// The variable that chooses the backend: `embedded` or `dynamodb-local`.
pub(super) const BACKEND_ENV: &str = "SHARDED_TEST_BACKEND";
/// Its value for `BackendKind::Embedded`.
pub(super) const EMBEDDED: &str = "embedded";
/// Its value for `BackendKind::DynamoDbLocal`.
pub(super) const DYNAMODB_LOCAL: &str = "dynamodb-local";

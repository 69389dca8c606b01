//! The DynamoDB Local JVM: checking Java, starting the JVM on a free port from a supervisor
//! thread that stays its parent, and waiting until it answers (or telling a lost port race
//! from a real failure).

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use std::fs;

use tokio::sync::oneshot;

use super::error::LocalError;
use super::fetch::{ensure_distribution, Distribution};
use super::orphans::{die_with_spawning_thread, kill_at_exit, process_is_exiting, KillAtExit};
use super::output::OutputTail;
use super::POLL_INTERVAL;

pub(super) const JAVA: &str = "java";

/// DynamoDB Local rejects unsigned requests with 400, but does not check signatures.
const PROBE_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 \
    Credential=shardedlocal/20240101/us-east-1/dynamodb/aws4_request, \
    SignedHeaders=host, Signature=0";

/// How long the JVM may take to answer its first request. It usually needs 2-5 s,
/// but a 2-core CI box compiling tests in parallel can be much slower.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a fresh port is tried when another process grabs ours before the JVM binds it.
const PORT_ATTEMPTS: usize = 3;

/// Body of the dedicated supervisor thread: starts the JVM, reports the endpoint (or
/// the failure) to the waiting caller, then stays blocked on the JVM for as long as it
/// runs, because on Linux the JVM is killed when this thread ends.
pub(super) fn supervise(reply: oneshot::Sender<Result<String, LocalError>>) {
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
    _kill_at_exit: KillAtExit,
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
        let kill_at_exit = kill_at_exit(child.id());
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
            _kill_at_exit: kill_at_exit,
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
        // No longer ours: nobody listens, or (the port freed at once) another process's
        // listener took it, as a parallel test or DynamoDB Local may.
        assert_ne!(listener_owned_by(std::process::id(), port), Some(true));
        Ok(())
    }

    /// The port race: another DynamoDB Local already answers on the chosen port. Its
    /// 200 must not be mistaken for ours; ours must be reported as `PortTaken` so that
    /// `start_blocking` retries. Needs Java (and fetches DynamoDB Local if not cached), so it
    /// runs when DynamoDB Local is asked for (`SHARDED_TEST_BACKEND=dynamodb-local`, as CI
    /// does) and skips, saying so, on the embedded default.
    #[test]
    fn a_port_taken_by_another_dynamodb_local_is_retryable() -> Result<(), LocalError> {
        if !crate::backend::reference_asked_for() {
            crate::backend::skips::record_why(
                "the embedded DynamoDB (the default)",
                "starts DynamoDB Local's JVMs itself",
                "this test of DynamoDB Local's harness starts two of its JVMs itself",
            );
            return Ok(());
        }
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

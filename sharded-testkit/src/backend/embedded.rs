//! The embedded backend: dynoxide (a DynamoDB emulator on SQLite) serving the DynamoDB HTTP
//! API from this process, on a loopback port of our own.
//!
//! The server runs on a runtime of its own, on a thread of its own: every `#[tokio::test]`
//! has its own runtime, which ends with its test, and the one server of the process must
//! outlive them all. The database is in memory and the server holds no file, no child process
//! and no signal handler, so nothing is left behind when the process exits: it is shut down
//! by the process ending, however it ends.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::thread;

use super::error::BackendError;
use super::names::ENGINE;

/// Worker threads of the server's runtime. Requests reach SQLite one at a time (dynoxide
/// serialises them behind one lock); a second worker parses and writes HTTP meanwhile.
const WORKERS: usize = 2;

/// Starts dynoxide on `127.0.0.1:0` and returns its endpoint, e.g. `http://127.0.0.1:41234`.
///
/// The listener is bound before this returns, so the endpoint accepts connections at once
/// (the kernel queues them until the server's first poll): no readiness probe is needed.
pub(super) fn start() -> Result<String, BackendError> {
    let failed = |action: &str, detail: String| BackendError::Embedded {
        action: action.to_owned(),
        detail,
    };
    let database = dynoxide::Database::memory()
        .map_err(|e| failed("opening its in-memory SQLite database", e.to_string()))?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| failed("binding a port on 127.0.0.1", e.to_string()))?;
    let address = listener
        .local_addr()
        .map_err(|e| failed("reading the address of its port", e.to_string()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| failed("making its port non-blocking", e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("sharded-embedded-dynamodb")
        .enable_all()
        .build()
        .map_err(|e| failed("building its tokio runtime", e.to_string()))?;
    let listener = {
        let _context = runtime.enter();
        tokio::net::TcpListener::from_std(listener)
            .map_err(|e| failed("registering its port with tokio", e.to_string()))?
    };
    thread::Builder::new()
        .name("sharded-embedded-dynamodb".into())
        .spawn(move || {
            // Never resolves: the server stops when the process exits.
            let forever = std::future::pending::<()>();
            let served = runtime.block_on(dynoxide::server::serve_with_shutdown(
                listener, database, forever,
            ));
            if let Err(error) = served {
                say_stopped(&address.to_string(), &error);
            }
        })
        .map_err(|e| failed("spawning its server thread", e.to_string()))?;
    Ok(format!("http://{address}"))
}

/// The server failed after it started: every later request will fail to connect, so say why
/// on the process's stderr (not through the test harness's capture, which belongs to whichever
/// test happened to start the server).
fn say_stopped(address: &str, error: &str) {
    tracing::error!(%address, %error, "the embedded DynamoDB ({ENGINE}) stopped");
    let _ = writeln!(
        std::io::stderr(),
        "sharded-testkit: the embedded DynamoDB ({ENGINE}) on {address} stopped: {error}. \
         Requests to it will now fail; rerun, or set SHARDED_TEST_BACKEND=dynamodb-local to \
         use DynamoDB Local instead"
    );
}

//! A fault-injecting HTTP proxy, so that another process (a command line, a service under
//! test) meets the faults a test arms on a [`Faults`] as an in-process client does.
//!
//! [`FaultProxy`] listens on `127.0.0.1`, hands every request to the same interception as
//! [`Faults::client`] (the kit's one fault engine), and sends what it lets through on to the
//! backend. An injected error reaches the process as DynamoDB's status and body; a dropped
//! response ([`Faults::drop_responses`]) as a connection closed before any answer, after the
//! backend applied the request.

use std::io;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use aws_smithy_http_client::Connector;
use aws_smithy_runtime_api::client::http::SharedHttpConnector;
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;
use http::Uri;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

use crate::emulator::KeyLimitEmulator;
use crate::faults::Faults;
use crate::intercept::{Intercept, Next};

/// An HTTP proxy on `127.0.0.1` in front of a DynamoDB endpoint, every request going through
/// a [`Faults`]: point a process at [`endpoint`](Self::endpoint) (e.g. with
/// `AWS_ENDPOINT_URL`), arm faults on the same handle, and the process sees them.
///
/// It serves on a thread of its own (with its own Tokio runtime), so a test may wait for the
/// process synchronously. Dropping it stops it.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use sharded_testkit::backend::Backend;
/// use sharded_testkit::faults::Faults;
/// use sharded_testkit::proxy::FaultProxy;
///
/// let backend = Backend::shared().await?;
/// let faults = Faults::new();
/// let proxy = FaultProxy::start(backend.endpoint(), &faults)?;
/// faults.fail_partition("GAME#g1#3");
/// let status = std::process::Command::new("my-tool")
///     .env("AWS_ENDPOINT_URL", proxy.endpoint())
///     .status()?;
/// println!("{status}: {} Scan requests", faults.requests("Scan"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    endpoint: String,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (an `http://host:port` endpoint, as
    /// [`Backend::endpoint`](crate::backend::Backend::endpoint) gives) whose requests go
    /// through `faults` (a clone of the handle: faults armed on `faults` later apply).
    ///
    /// # Errors
    ///
    /// `upstream` is not an `http://` URL with a host, or the listener, its runtime or its
    /// thread cannot be started.
    pub fn start(upstream: &str, faults: &Faults) -> io::Result<FaultProxy> {
        serve(upstream, faults.clone())
    }

    /// Starts a proxy to `upstream` whose requests go through `emulator`'s per-key limits
    /// (a clone of the handle: its meters and counts are shared), so processes pointed at it
    /// meet DynamoDB's limits together, as a fleet of workers on one table does.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use sharded::capacity::PerKeyLimits;
    /// use sharded_testkit::backend::Backend;
    /// use sharded_testkit::emulator::KeyLimitEmulator;
    /// use sharded_testkit::proxy::FaultProxy;
    ///
    /// let backend = Backend::shared().await?;
    /// let emulator = KeyLimitEmulator::new(PerKeyLimits::DYNAMODB);
    /// let proxy = FaultProxy::start_emulating(backend.endpoint(), &emulator)?;
    /// println!("workers go to {}; {} throttled", proxy.endpoint(), emulator.counts().throttled);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_emulating(upstream: &str, emulator: &KeyLimitEmulator) -> io::Result<FaultProxy> {
        serve(upstream, emulator.clone())
    }

    /// The proxy's endpoint, `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A proxy to `upstream` on a thread of its own, each request going through `intercept`.
fn serve(upstream: &str, intercept: impl Intercept) -> io::Result<FaultProxy> {
    let upstream = upstream_of(upstream)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    listener.set_nonblocking(true)?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let listener = {
        let _in_runtime = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let (shutdown, stop) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("sharded-testkit-proxy".to_owned())
        .spawn(move || runtime.block_on(accept(listener, upstream, intercept, stop)))?;
    Ok(FaultProxy {
        endpoint,
        shutdown: Some(shutdown),
        thread: Some(thread),
    })
}

fn upstream_of(upstream: &str) -> io::Result<Uri> {
    let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
    let uri: Uri = upstream
        .parse()
        .map_err(|e| invalid(format!("upstream `{upstream}` is not a URL: {e}")))?;
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return Err(invalid(format!(
            "upstream `{upstream}` is not an http://host:port endpoint"
        )));
    }
    Ok(uri)
}

/// Serves each connection until `stop`.
async fn accept(
    listener: tokio::net::TcpListener,
    upstream: Uri,
    intercept: impl Intercept,
    mut stop: oneshot::Receiver<()>,
) {
    let next = Next::new(SharedHttpConnector::new(Connector::builder().build_http()));
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let (upstream, intercept, next) = (upstream.clone(), intercept.clone(), next.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                forward(request, upstream.clone(), intercept.clone(), next.clone())
            });
            // A connection ends in an error when a response is dropped on purpose: the
            // client sees it closed before any answer.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// `request` through `intercept`, sent on to `upstream`; an error closes the connection
/// without an answer.
async fn forward(
    request: hyper::Request<Incoming>,
    upstream: Uri,
    intercept: impl Intercept,
    next: Next,
) -> Result<hyper::Response<SdkBody>, ConnectorError> {
    let (mut parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| ConnectorError::io(e.into()))?
        .to_bytes();
    let mut to = upstream.into_parts();
    to.path_and_query = parts.uri.path_and_query().cloned();
    parts.uri = Uri::from_parts(to).map_err(|e| ConnectorError::other(e.into(), None))?;
    let request = HttpRequest::try_from(http::Request::from_parts(parts, SdkBody::from(body)))
        .map_err(|e| ConnectorError::other(e.into(), None))?;
    intercept
        .call(request, next)
        .await?
        .try_into_http1x()
        .map_err(|e| ConnectorError::other(e.into(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_an_upstream_it_cannot_reach() {
        for bad in [
            "not a url",
            "https://dynamodb.us-east-1.amazonaws.com",
            "/path",
        ] {
            let refused = FaultProxy::start(bad, &Faults::new()).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }
}

//! The kit's one HTTP client wrapper: every request a wrapped client sends is handed to an
//! [`Intercept`], which answers it itself or passes it (possibly rewritten) to [`Next`].
//!
//! Wrapping the HTTP client, below the SDK, keeps everything above it as in production: the
//! SDK's retries and error parsing, and `sharded`'s error classification.

use std::fmt;
use std::future::Future;

use aws_config::SdkConfig;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::Provider;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

/// What a wrapped client does with each request. Implemented by cheap-to-clone handles
/// (an `Arc` inside), one clone per request.
pub(crate) trait Intercept: Clone + fmt::Debug + Send + Sync + 'static {
    /// Answers `request`, typically by sending it on with `next` (before or after looking at
    /// it, changing it, delaying it) or by answering it without sending it.
    fn call(
        self,
        request: HttpRequest,
        next: Next,
    ) -> impl Future<Output = Result<HttpResponse, ConnectorError>> + Send + 'static;
}

/// The wrapped client's connector: where an [`Intercept`] sends a request on.
#[derive(Debug, Clone)]
pub(crate) struct Next(SharedHttpConnector);

impl Next {
    /// Requests sent on through `connector`.
    pub(crate) fn new(connector: SharedHttpConnector) -> Self {
        Next(connector)
    }

    /// Sends `request` on to the wrapped client.
    pub(crate) async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ConnectorError> {
        self.0.call(request).await
    }
}

/// `inner` with every request going through `intercept`.
pub(crate) fn wrap(inner: SharedHttpClient, intercept: impl Intercept) -> SharedHttpClient {
    SharedHttpClient::new(Intercepted { inner, intercept })
}

/// The HTTP client of `sdk_config`, or the SDK's default HTTPS client (rustls with aws-lc)
/// when the config names none: aws-config leaves the default to each service client.
pub(crate) fn base_http_client(sdk_config: &SdkConfig) -> SharedHttpClient {
    sdk_config.http_client().unwrap_or_else(|| {
        aws_smithy_http_client::Builder::new()
            .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
            .build_https()
    })
}

/// A DynamoDB client from `sdk_config` whose requests go through `intercept`.
pub(crate) fn client(
    sdk_config: &SdkConfig,
    intercept: impl Intercept,
) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk_config)
        .http_client(wrap(base_http_client(sdk_config), intercept))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// The DynamoDB operation of a request (`Query`, `BatchWriteItem`, ...), from its
/// `X-Amz-Target: DynamoDB_20120810.<Operation>` header.
pub(crate) fn operation(request: &HttpRequest) -> Option<&str> {
    request
        .headers()
        .get("x-amz-target")
        .and_then(|target| target.rsplit('.').next())
}

#[derive(Debug)]
struct Intercepted<I> {
    inner: SharedHttpClient,
    intercept: I,
}

impl<I: Intercept> HttpClient for Intercepted<I> {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(InterceptedConnector {
            next: Next(self.inner.http_connector(settings, components)),
            intercept: self.intercept.clone(),
        })
    }
}

#[derive(Debug)]
struct InterceptedConnector<I> {
    next: Next,
    intercept: I,
}

impl<I: Intercept> HttpConnector for InterceptedConnector<I> {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        HttpConnectorFuture::new(self.intercept.clone().call(request, self.next.clone()))
    }
}

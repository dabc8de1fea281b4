//! The S3 client s3sweep measures with: one `aws_sdk_s3::Client` per process on top of a
//! transport this module owns.
//!
//! The transport is hyper-util's connection pool (the same pool aws-smithy-http-client
//! uses) with rustls for HTTPS and `TCP_NODELAY` on every socket. What it adds, and why
//! it is ours rather than the SDK's default client:
//! - a hard cap on TCP connections per host (`pool_connections`): hyper's pool has no
//!   such cap, so each connection holds a permit of a per-host semaphore until it closes;
//! - counters the sweep reads between configurations: connections opened, time spent
//!   connecting, GET attempts (so retries can be counted) and S3 Express `CreateSession`
//!   calls;
//! - the connect and first-byte timeouts, applied here because the SDK leaves them to
//!   the HTTP client.
//!
//! Credentials and region come from the standard AWS chain, or, for a local endpoint,
//! the embedded server's fixed credentials (see [`crate::server::LOCAL_ACCESS_KEY`]).

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Region, RequestChecksumCalculation};
use aws_sdk_s3::config::{ResponseChecksumValidation, StalledStreamProtectionConfig};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector as TcpConnector};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::server::{LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY};

type BoxError = Box<dyn StdError + Send + Sync>;

/// Errors building the client. Request-level failures are never errors here: the sweep
/// counts them by kind.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    InvalidEndpoint { url: String, reason: String },
}

/// Where credentials come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialSource {
    /// The standard AWS chain: environment, profile, container or instance role.
    Chain,
    /// The embedded server's fixed access key `s3sweep` / `s3sweep-local-secret`.
    Local,
}

/// How to build the process's S3 client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Explicit endpoint (`http://127.0.0.1:9000`). `None`: AWS's own endpoints.
    /// With an endpoint, path-style addressing is used.
    pub endpoint: Option<String>,
    /// Region; `None` takes it from the AWS chain, falling back to `us-east-1`.
    pub region: Option<String>,
    /// Where credentials come from.
    pub credentials: CredentialSource,
}

impl ClientOptions {
    /// Options for a local S3-compatible endpoint with the embedded server's credentials.
    pub fn local(endpoint: impl Into<String>) -> Self {
        ClientOptions {
            endpoint: Some(endpoint.into()),
            region: Some("us-east-1".into()),
            credentials: CredentialSource::Local,
        }
    }

    /// Options for real AWS: everything from the standard chain.
    pub fn aws() -> Self {
        ClientOptions {
            endpoint: None,
            region: None,
            credentials: CredentialSource::Chain,
        }
    }
}

/// Settings of the transport for one sweep. Changing them drops the pool, so
/// connections from an earlier sweep with other limits never leak into this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportSettings {
    /// Most TCP connections open at once to one host (scheme + authority).
    pub pool_connections: usize,
    /// Limit on establishing one connection (TCP, and TLS for HTTPS).
    pub connect_timeout: Duration,
}

impl Default for TransportSettings {
    fn default() -> Self {
        TransportSettings {
            pool_connections: 20,
            connect_timeout: Duration::from_secs(3),
        }
    }
}

/// Per-request settings the SDK applies: retries and timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSettings {
    /// Attempts per request, first included (1 = no retries).
    pub max_attempts: u32,
    /// Limit from sending a request to its response headers.
    pub first_byte_timeout: Duration,
    /// Limit on one attempt (the SDK's attempt timeout).
    pub attempt_timeout: Duration,
}

impl RequestSettings {
    /// Settings for writing or deleting test objects (seed, clean) rather than
    /// measuring: 3 attempts, 10 s to the first byte, `attempt` per attempt.
    pub const fn maintenance(attempt: Duration) -> Self {
        RequestSettings {
            max_attempts: 3,
            first_byte_timeout: Duration::from_secs(10),
            attempt_timeout: attempt,
        }
    }
}

/// Monotonic counters of the transport. Take two snapshots and subtract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportCounters {
    /// TCP (and TLS) connections successfully opened.
    pub connections_opened: u64,
    /// Connection attempts that failed or timed out.
    pub connections_failed: u64,
    /// Total time spent establishing connections, in nanoseconds.
    pub connect_ns: u64,
    /// HTTP requests sent other than S3 Express `CreateSession` (each retry counts).
    pub requests_sent: u64,
    /// S3 Express `CreateSession` calls sent.
    pub session_requests: u64,
}

impl TransportCounters {
    /// Counters accumulated since `earlier`.
    pub fn since(&self, earlier: &TransportCounters) -> TransportCounters {
        TransportCounters {
            connections_opened: self.connections_opened - earlier.connections_opened,
            connections_failed: self.connections_failed - earlier.connections_failed,
            connect_ns: self.connect_ns - earlier.connect_ns,
            requests_sent: self.requests_sent - earlier.requests_sent,
            session_requests: self.session_requests - earlier.session_requests,
        }
    }
}

/// What the transport did on behalf of one task: connections it opened and S3 Express
/// `CreateSession` calls it sent. The sweep sets one per worker ([`COLD_PROBE`]) and
/// takes it after each request, so requests that paid for a new connection or session
/// (cold) are told apart from requests on a warm connection.
#[derive(Debug, Default)]
pub struct ColdProbe {
    connections: AtomicU64,
    connect_ns: AtomicU64,
    sessions: AtomicU64,
}

/// Taken from a [`ColdProbe`]: what happened since the last take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColdWork {
    /// Connections opened (TCP, and TLS for HTTPS).
    pub connections: u64,
    /// Time spent opening them, summed, in nanoseconds.
    pub connect_ns: u64,
    /// `CreateSession` calls sent.
    pub sessions: u64,
}

impl ColdProbe {
    /// Returns what was recorded since the last call and resets the probe.
    pub fn take(&self) -> ColdWork {
        ColdWork {
            connections: self.connections.swap(0, Ordering::Relaxed),
            connect_ns: self.connect_ns.swap(0, Ordering::Relaxed),
            sessions: self.sessions.swap(0, Ordering::Relaxed),
        }
    }
}

tokio::task_local! {
    /// The probe of the task sending requests, if it set one. Read synchronously when a
    /// connection or session is started, so a connect that hyper finishes in the
    /// background is still credited to the task that asked for it.
    pub static COLD_PROBE: Arc<ColdProbe>;
}

fn current_probe() -> Option<Arc<ColdProbe>> {
    COLD_PROBE.try_with(Arc::clone).ok()
}

#[derive(Debug, Default)]
struct Counters {
    connections_opened: AtomicU64,
    connections_failed: AtomicU64,
    connect_ns: AtomicU64,
    requests_sent: AtomicU64,
    session_requests: AtomicU64,
    connections_open: AtomicI64,
}

/// Size of each connection's read buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;

type Stack = LimitedConnector<hyper_rustls::HttpsConnector<TcpConnector>>;

/// One generation of the pool: the hyper client and its per-host connection caps.
struct Pool {
    settings: TransportSettings,
    client: HyperClient<Stack, SdkBody>,
}

/// The HTTP transport: a capped, counted hyper-util pool. Cheap to clone (an `Arc`).
#[derive(Clone)]
pub struct Transport {
    inner: Arc<TransportInner>,
}

struct TransportInner {
    counters: Arc<Counters>,
    tls: rustls::ClientConfig,
    pool: RwLock<Arc<Pool>>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("settings", &self.settings())
            .field("counters", &self.counters())
            .finish()
    }
}

impl Transport {
    /// A transport with the given settings and the webpki root certificates.
    pub fn new(settings: TransportSettings) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
            .with_no_client_auth();
        let counters = Arc::new(Counters::default());
        let pool = Arc::new(build_pool(settings, &tls, &counters));
        Transport {
            inner: Arc::new(TransportInner {
                counters,
                tls,
                pool: RwLock::new(pool),
            }),
        }
    }

    /// The settings of the current pool.
    pub fn settings(&self) -> TransportSettings {
        self.current().settings
    }

    /// Switches to new settings. When they differ, the old pool is dropped (its idle
    /// connections close) and a new, empty one takes its place.
    pub fn configure(&self, settings: TransportSettings) {
        let mut pool = self.inner.pool.write().unwrap_or_else(|e| e.into_inner());
        if pool.settings != settings {
            *pool = Arc::new(build_pool(settings, &self.inner.tls, &self.inner.counters));
        }
    }

    /// A snapshot of the monotonic counters.
    pub fn counters(&self) -> TransportCounters {
        let c = &self.inner.counters;
        TransportCounters {
            connections_opened: c.connections_opened.load(Ordering::Relaxed),
            connections_failed: c.connections_failed.load(Ordering::Relaxed),
            connect_ns: c.connect_ns.load(Ordering::Relaxed),
            requests_sent: c.requests_sent.load(Ordering::Relaxed),
            session_requests: c.session_requests.load(Ordering::Relaxed),
        }
    }

    /// Connections open right now (a gauge, not a counter).
    pub fn connections_open(&self) -> i64 {
        self.inner.counters.connections_open.load(Ordering::Relaxed)
    }

    fn current(&self) -> Arc<Pool> {
        self.inner.pool.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// This transport as the SDK's HTTP client.
    pub fn http_client(&self) -> SharedHttpClient {
        SharedHttpClient::new(self.clone())
    }
}

fn build_pool(settings: TransportSettings, tls: &rustls::ClientConfig, counters: &Arc<Counters>) -> Pool {
    let mut tcp = TcpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    let stack = LimitedConnector {
        inner: https,
        limits: Arc::new(HostLimits {
            per_host: settings.pool_connections.max(1),
            semaphores: Mutex::new(HashMap::new()),
        }),
        counters: counters.clone(),
        connect_timeout: settings.connect_timeout,
    };
    let client = HyperClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(60))
        // One 64 KiB read buffer per connection instead of hyper's adaptive one that
        // starts at 8 KiB: a 46 KB body arrives in one or two reads, not five or six.
        .http1_read_buf_exact_size(READ_BUFFER_BYTES)
        .build(stack);
    Pool { settings, client }
}

impl HttpClient for Transport {
    fn http_connector(&self, settings: &HttpConnectorSettings, _components: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(TransportConnector {
            transport: self.clone(),
            read_timeout: settings.read_timeout(),
        })
    }
}

/// The SDK-facing side of the transport for one set of connector settings.
#[derive(Debug)]
struct TransportConnector {
    transport: Transport,
    read_timeout: Option<Duration>,
}

impl HttpConnector for TransportConnector {
    fn call(&self, request: aws_smithy_runtime_api::client::orchestrator::HttpRequest) -> HttpConnectorFuture {
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(err) => return HttpConnectorFuture::ready(Err(ConnectorError::user(err.into()))),
        };
        let counters = &self.transport.inner.counters;
        if is_create_session(request.uri()) {
            counters.session_requests.fetch_add(1, Ordering::Relaxed);
            if let Some(probe) = current_probe() {
                probe.sessions.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            counters.requests_sent.fetch_add(1, Ordering::Relaxed);
        }
        let pool = self.transport.current();
        let response = pool.client.request(request);
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move {
            // Keep this generation of the pool alive while the request is in flight.
            let _pool = pool;
            let response = match read_timeout {
                Some(limit) => match tokio::time::timeout(limit, response).await {
                    Ok(result) => result,
                    Err(_) => return Err(ConnectorError::timeout(Box::new(FirstByteTimeout(limit)))),
                },
                None => response.await,
            };
            let response = response
                .map_err(|err| classify_hyper_error(Box::new(err)))?
                .map(SdkBody::from_body_1_x);
            HttpResponse::try_from(response).map_err(|err| ConnectorError::other(err.into(), None))
        })
    }
}

fn is_create_session(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|part| part == "session" || part.starts_with("session="))
    })
}

#[derive(Debug)]
struct FirstByteTimeout(Duration);

impl fmt::Display for FirstByteTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no response headers within {} ms", self.0.as_millis())
    }
}
impl StdError for FirstByteTimeout {}

#[derive(Debug)]
struct ConnectTimeout(Duration);

impl fmt::Display for ConnectTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection not established within {} ms", self.0.as_millis())
    }
}
impl StdError for ConnectTimeout {}

fn find_source<'a, E: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        next = err.source();
    }
    None
}

/// Maps a hyper-util error to the SDK's connector error kinds, so the SDK's retry
/// classifier and our error counting see timeouts and I/O failures as such.
fn classify_hyper_error(err: BoxError) -> ConnectorError {
    if find_source::<ConnectTimeout>(err.as_ref()).is_some() {
        return ConnectorError::timeout(err);
    }
    if let Some(hyper_err) = find_source::<hyper::Error>(err.as_ref()) {
        if hyper_err.is_timeout() {
            return ConnectorError::timeout(err);
        }
        if hyper_err.is_user() {
            return ConnectorError::user(err);
        }
        if hyper_err.is_incomplete_message() {
            // The server closed the connection before a whole response: a connection
            // failure (counted as `connection`, retried as transient), not "other".
            return ConnectorError::io(err);
        }
        if hyper_err.is_closed() || hyper_err.is_canceled() || find_source::<std::io::Error>(hyper_err).is_some() {
            return ConnectorError::io(err);
        }
    }
    if let Some(util_err) = find_source::<hyper_util::client::legacy::Error>(err.as_ref()) {
        if util_err.is_connect() || find_source::<std::io::Error>(util_err).is_some() {
            return ConnectorError::io(err);
        }
    }
    if find_source::<std::io::Error>(err.as_ref()).is_some() {
        return ConnectorError::io(err);
    }
    ConnectorError::other(err, None)
}

/// Per-host connection caps: one semaphore per scheme + authority.
struct HostLimits {
    per_host: usize,
    semaphores: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl HostLimits {
    fn for_uri(&self, uri: &Uri) -> Arc<Semaphore> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let mut map = self.semaphores.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key)
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_host)))
            .clone()
    }
}

/// A connector that waits for a per-host permit before connecting and keeps it for the
/// connection's life, so no host ever has more than `per_host` connections open.
#[derive(Clone)]
struct LimitedConnector<C> {
    inner: C,
    limits: Arc<HostLimits>,
    counters: Arc<Counters>,
    connect_timeout: Duration,
}

/// How long a connect may wait for a free slot under the per-host cap. A request never
/// waits this long: hyper hands it the next connection returned to the pool, and only
/// the speculative background connect is left to give up.
const PERMIT_WAIT: Duration = Duration::from_secs(120);

impl<C> tower_service::Service<Uri> for LimitedConnector<C>
where
    C: tower_service::Service<Uri> + Clone + Send + 'static,
    C::Future: Send + 'static,
    C::Response: hyper::rt::Read + hyper::rt::Write + Connection + Unpin + Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = CountedIo<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        // The clone is ready as the original was (hyper's connectors are always ready).
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        let semaphore = self.limits.for_uri(&uri);
        let counters = self.counters.clone();
        let connect_timeout = self.connect_timeout;
        let probe = current_probe();
        Box::pin(async move {
            let permit = match tokio::time::timeout(PERMIT_WAIT, semaphore.acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(closed)) => return Err(Box::new(closed) as BoxError),
                Err(_) => return Err("timed out waiting for a free connection slot".into()),
            };
            let started = Instant::now();
            let result = tokio::time::timeout(connect_timeout, inner.call(uri)).await;
            let io = match result {
                Ok(Ok(io)) => io,
                Ok(Err(err)) => {
                    counters.connections_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(err.into());
                }
                Err(_) => {
                    counters.connections_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(Box::new(ConnectTimeout(connect_timeout)) as BoxError);
                }
            };
            let connect_ns = started.elapsed().as_nanos() as u64;
            counters.connect_ns.fetch_add(connect_ns, Ordering::Relaxed);
            if let Some(probe) = probe {
                probe.connections.fetch_add(1, Ordering::Relaxed);
                probe.connect_ns.fetch_add(connect_ns, Ordering::Relaxed);
            }
            counters.connections_opened.fetch_add(1, Ordering::Relaxed);
            counters.connections_open.fetch_add(1, Ordering::Relaxed);
            Ok(CountedIo {
                io,
                _permit: permit,
                counters,
            })
        })
    }
}

/// A connection that holds its host's permit and updates the open-connections gauge.
pub struct CountedIo<T> {
    io: T,
    _permit: OwnedSemaphorePermit,
    counters: Arc<Counters>,
}

impl<T> Drop for CountedIo<T> {
    fn drop(&mut self) {
        self.counters.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T: Connection> Connection for CountedIo<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for CountedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for CountedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

/// The process's S3 client: one SDK client on one [`Transport`], built once and reused
/// for every sweep. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SweepClient {
    base: aws_sdk_s3::Config,
    transport: Transport,
    endpoint: Option<String>,
    region: String,
    derived: Arc<Mutex<Option<(RequestSettings, aws_sdk_s3::Client)>>>,
}

impl SweepClient {
    /// Builds the client: region and credentials from `options`, the transport with
    /// default settings (each sweep sets its own).
    pub async fn new(options: ClientOptions) -> Result<Self, ClientError> {
        let transport = Transport::new(TransportSettings::default());
        if let Some(url) = &options.endpoint {
            validate_endpoint(url)?;
        }
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(transport.http_client());
        if let Some(region) = &options.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if options.credentials == CredentialSource::Local {
            loader = loader.credentials_provider(aws_credential_types::Credentials::new(
                LOCAL_ACCESS_KEY,
                LOCAL_SECRET_KEY,
                None,
                None,
                "s3sweep-local",
            ));
        }
        let shared = loader.load().await;
        let region = shared
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "us-east-1".to_string());
        let mut builder = aws_sdk_s3::config::Builder::from(&shared)
            .region(Region::new(region.clone()))
            // Bodies are counted, not checked: a CRC per GET is client CPU the seed's
            // question is not about, and S3 only returns checksums when asked.
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            // Our own timeouts bound every body; the SDK's stall detector would add a
            // second, differently defined one.
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
        if let Some(url) = &options.endpoint {
            builder = builder.endpoint_url(url).force_path_style(true);
        }
        Ok(SweepClient {
            base: builder.build(),
            transport,
            endpoint: options.endpoint,
            region,
            derived: Arc::new(Mutex::new(None)),
        })
    }

    /// The transport, for its counters and settings.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The explicit endpoint, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The SDK client with the given retries and timeouts. The same settings give the
    /// same client back; all of them share the transport (and so the pool).
    pub fn s3(&self, settings: RequestSettings) -> aws_sdk_s3::Client {
        let mut derived = self.derived.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((have, client)) = derived.as_ref() {
            if *have == settings {
                return client.clone();
            }
        }
        let config = self
            .base
            .to_builder()
            .retry_config(RetryConfig::standard().with_max_attempts(settings.max_attempts.max(1)))
            .timeout_config(
                TimeoutConfig::builder()
                    .read_timeout(settings.first_byte_timeout)
                    .operation_attempt_timeout(settings.attempt_timeout)
                    .build(),
            )
            .build();
        let client = aws_sdk_s3::Client::from_conf(config);
        *derived = Some((settings, client.clone()));
        client
    }
}

fn validate_endpoint(url: &str) -> Result<(), ClientError> {
    let bad = |reason: &str| ClientError::InvalidEndpoint {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => return Err(bad("the scheme must be http or https")),
    }
    if uri.authority().is_none() {
        return Err(bad("no host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_session_is_recognised_by_query() {
        assert!(is_create_session(
            &"https://b--use1-az4--x-s3.s3express-use1-az4.us-east-1.amazonaws.com/?session"
                .parse()
                .unwrap()
        ));
        assert!(!is_create_session(
            &"http://127.0.0.1:9000/b/test/1/vectors?x-id=GetObject".parse().unwrap()
        ));
        assert!(!is_create_session(&"http://127.0.0.1:9000/b/sessions".parse().unwrap()));
    }

    #[test]
    fn endpoint_validation_names_the_problem() {
        assert!(validate_endpoint("http://127.0.0.1:9000").is_ok());
        assert!(validate_endpoint("https://s3.us-east-1.amazonaws.com").is_ok());
        let err = validate_endpoint("ftp://host").unwrap_err().to_string();
        assert!(err.contains("scheme"), "{err}");
        let err = validate_endpoint("not a url").unwrap_err().to_string();
        assert!(err.contains("not a URL"), "{err}");
    }

    #[test]
    fn counters_subtract() {
        let a = TransportCounters {
            connections_opened: 2,
            connections_failed: 0,
            connect_ns: 10,
            requests_sent: 5,
            session_requests: 1,
        };
        let b = TransportCounters {
            connections_opened: 5,
            connections_failed: 1,
            connect_ns: 30,
            requests_sent: 9,
            session_requests: 1,
        };
        let d = b.since(&a);
        assert_eq!(d.connections_opened, 3);
        assert_eq!(d.connections_failed, 1);
        assert_eq!(d.connect_ns, 20);
        assert_eq!(d.requests_sent, 4);
        assert_eq!(d.session_requests, 0);
    }
}

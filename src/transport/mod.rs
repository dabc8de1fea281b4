//! The HTTP transport s3sweep measures through: hyper-util's connection pool (the same
//! pool aws-smithy-http-client uses) with rustls for HTTPS and `TCP_NODELAY` on every
//! socket, handed to the AWS SDK as its HTTP client. What it adds, and why it is ours
//! rather than the SDK's default client:
//! - trust in a CA file besides the webpki roots ([`tls`]: `--ca-file`, `AWS_CA_BUNDLE`),
//!   and a handshake error that names it;
//! - a hard cap on TCP connections per host (`pool_connections`): hyper's pool has no
//!   such cap, so each connection holds a permit of a per-host semaphore until it
//!   closes ([`connector`]);
//! - counters the engine reads between configurations: connections opened, time spent
//!   connecting (TCP connect and TLS handshake apart), TLS handshakes, requests sent (so
//!   retries can be counted) and S3 Express `CreateSession` calls, the requests in
//!   flight and their peak (what the sweep's pool caps), plus a
//!   [`RequestProbe`] per GET (what the transport did for it: connections, sessions,
//!   the time of each attempt), which tells cold requests from warm ones;
//! - the connect and first-byte timeouts, applied here because the SDK leaves them to
//!   the HTTP client.

mod attempts;
mod connector;
mod counters;
mod pool;
mod tls;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use aws_smithy_runtime_api::client::connection::{CaptureSmithyConnection, ConnectionMetadata};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;

use crate::model::{ErrorKind, RetryCauses};
use http::Uri;
use hyper_util::client::legacy::connect::{capture_connection, CaptureConnection};

pub use attempts::{AttemptStamp, Stamps, MAX_STAMPED_ATTEMPTS};
use connector::answer_of;
use counters::Counters;
pub use counters::TransportCounters;
use pool::Pool;
pub use pool::{share, Lanes};

pub(crate) use tls::{handshake, server_name, Trust};
pub use tls::{TlsHandshakeError, TrustError};

/// Settings of the transport for one sweep. Changing them drops the pool, so
/// connections from an earlier sweep with other limits never leak into this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportSettings {
    /// Most TCP connections open at once to one host (scheme + authority).
    pub pool_connections: usize,
    /// Limit on establishing one connection (TCP, and TLS for HTTPS).
    pub connect_timeout: Duration,
    /// TCP keepalive probes after this much idle time; `None`: the system's default
    /// (none). Long silent calls (a synchronous Lambda Invoke) need it to survive NAT
    /// idle timeouts.
    pub tcp_keepalive: Option<Duration>,
    /// An idle pooled connection is closed after this long (default
    /// [`DEFAULT_POOL_IDLE_TIMEOUT`]): before S3's own idle close (about 20 s), so a
    /// request is never sent on a connection the server is closing.
    pub pool_idle_timeout: Duration,
    /// Lanes of the pool (default 1): threads, each with its own runtime and its own
    /// share of `pool_connections` ([`Transport::lanes`]); at most one per connection.
    pub lanes: usize,
}

/// The pool's default idle timeout: 15 s, below S3's idle close of about 20 s.
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(15);

impl Default for TransportSettings {
    fn default() -> Self {
        TransportSettings {
            pool_connections: 20,
            connect_timeout: Duration::from_secs(3),
            tcp_keepalive: None,
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
            lanes: 1,
        }
    }
}

/// What the transport did on behalf of one request (one GET and its retries): the
/// connections it opened and S3 Express `CreateSession` calls it sent (so cold requests
/// are told apart from warm ones), and where its time went, attempt by attempt. The
/// sweep sets one per GET ([`REQUEST_PROBE`], [`RequestProbe::begin`]) and takes it when the
/// GET ends.
///
/// Times are stamps of [`clock_ns`]. For each attempt the transport stamps the hand-over
/// (the SDK calls the HTTP client: the request is serialised, signed, its endpoint and
/// identity resolved), the moment hyper gives the request a connection, and the
/// response headers; the SDK's retry loop stamps the start of each attempt after the
/// first ([`RequestProbe::attempt_started`]), so the backoff sleep is apart from the work of
/// preparing the retry.
#[derive(Debug, Default)]
pub struct RequestProbe {
    connections: AtomicU64,
    connect_ns: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_ns: AtomicU64,
    sessions: AtomicU64,
    /// Attempts handed to the transport (CreateSession calls not included).
    attempts: AtomicU64,
    /// Start of the attempt being prepared: the call for the first attempt.
    attempt_start: AtomicU64,
    /// End of the last attempt (its headers or its failure); 0 before the first.
    last_end: AtomicU64,
    prep_ns: AtomicU64,
    backoff_ns: AtomicU64,
    pool_wait_ns: AtomicU64,
    /// Connection in hand to response headers, the last attempt that got headers.
    wire_ttfb_ns: AtomicU64,
    has_wire_ttfb: std::sync::atomic::AtomicBool,
    /// The connection the last attempt went out on (its number; 0: none yet).
    connection_id: AtomicU64,
    /// What ended the last attempt ([`Cause`] as a number; 0: not ended yet).
    last_cause: std::sync::atomic::AtomicU8,
    /// Attempts that were retried, by what ended them, in [`Cause`] order.
    retried: [AtomicU64; 5],
    /// The request's call ([`RequestProbe::begin`]): the zero of `stamps`.
    began: AtomicU64,
    /// Each attempt's stamps.
    stamps: attempts::AttemptLog,
}

/// What ended an attempt, as far as the transport can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Cause {
    Throttled = 1,
    ServerError = 2,
    Timeout = 3,
    Connection = 4,
    Other = 5,
}

impl Cause {
    /// What an answer's status says ([`ErrorKind::of_http_status`], the one sorting of
    /// statuses), as far as retries are told apart.
    fn of_status(status: u16) -> Option<Cause> {
        ErrorKind::of_http_status(status).map(|kind| match kind {
            ErrorKind::Throttled => Cause::Throttled,
            ErrorKind::ServerError => Cause::ServerError,
            _ => Cause::Other,
        })
    }
}

/// Taken from a [`RequestProbe`]: what happened since [`RequestProbe::begin`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColdWork {
    /// Connections opened (TCP, and TLS for HTTPS).
    pub connections: u64,
    /// Time spent opening them (TCP and TLS), summed, in nanoseconds.
    pub connect_ns: u64,
    /// TLS handshakes among them (0 over HTTP).
    pub tls_handshakes: u64,
    /// The part of `connect_ns` spent in TLS handshakes, in nanoseconds.
    pub tls_ns: u64,
    /// `CreateSession` calls sent.
    pub sessions: u64,
    /// Attempts sent (1 + retries); 0 when the request never reached the transport.
    pub attempts: u64,
    /// Client work before each attempt was handed to the HTTP client (serialising,
    /// endpoint and identity resolution, a `CreateSession` it waited for, signing),
    /// summed over attempts, in nanoseconds.
    pub prep_ns: u64,
    /// Sleeping between attempts (the retry strategy's backoff), in nanoseconds.
    pub backoff_ns: u64,
    /// Waiting inside the HTTP client for a connection, connects this request opened
    /// not included, summed over attempts, in nanoseconds.
    pub pool_wait_ns: u64,
    /// Connection in hand to response headers, the last attempt that got them: the
    /// first-byte time at the wire. `None` when no attempt got headers.
    pub wire_ttfb_ns: Option<u64>,
    /// The connection the last attempt went out on (numbered from 1 in the order the
    /// process opened them); `None` when it got none.
    pub connection_id: Option<u64>,
    /// The attempts that were retried, by what ended them.
    pub retry_causes: RetryCauses,
    /// Each attempt's times and connection (the first [`MAX_STAMPED_ATTEMPTS`]).
    pub attempt_stamps: Stamps,
}

impl RequestProbe {
    /// Starts a request: its call is now.
    pub fn begin(&self) {
        let now = clock_ns();
        self.attempt_start.store(now, Ordering::Relaxed);
        self.began.store(now, Ordering::Relaxed);
    }

    /// The SDK's retry loop starts another attempt (after its backoff): called by the
    /// S3 client's interceptor before each attempt.
    pub fn attempt_started(&self) {
        let last_end = self.last_end.load(Ordering::Relaxed);
        if last_end != 0 {
            let now = clock_ns();
            self.backoff_ns
                .fetch_add(now.saturating_sub(last_end), Ordering::Relaxed);
            self.attempt_start.store(now, Ordering::Relaxed);
        }
    }

    /// Returns what was recorded since [`RequestProbe::begin`] and resets the probe.
    pub fn take(&self) -> ColdWork {
        let has_ttfb = self.has_wire_ttfb.swap(false, Ordering::Relaxed);
        let wire_ttfb_ns = self.wire_ttfb_ns.swap(0, Ordering::Relaxed);
        self.attempt_start.store(0, Ordering::Relaxed);
        self.last_end.store(0, Ordering::Relaxed);
        ColdWork {
            connections: self.connections.swap(0, Ordering::Relaxed),
            connect_ns: self.connect_ns.swap(0, Ordering::Relaxed),
            tls_handshakes: self.tls_handshakes.swap(0, Ordering::Relaxed),
            tls_ns: self.tls_ns.swap(0, Ordering::Relaxed),
            sessions: self.sessions.swap(0, Ordering::Relaxed),
            attempts: self.attempts.swap(0, Ordering::Relaxed),
            prep_ns: self.prep_ns.swap(0, Ordering::Relaxed),
            backoff_ns: self.backoff_ns.swap(0, Ordering::Relaxed),
            pool_wait_ns: self.pool_wait_ns.swap(0, Ordering::Relaxed),
            wire_ttfb_ns: has_ttfb.then_some(wire_ttfb_ns),
            connection_id: Some(self.connection_id.swap(0, Ordering::Relaxed)).filter(|&id| id != 0),
            attempt_stamps: self.stamps.take(),
            retry_causes: {
                self.last_cause.store(0, Ordering::Relaxed);
                let [throttled, server_error, timeout, connection, other] =
                    self.retried.each_ref().map(|n| n.swap(0, Ordering::Relaxed));
                RetryCauses {
                    throttled,
                    server_error,
                    timeout,
                    connection,
                    other,
                }
            },
        }
    }

    /// An attempt is handed to the transport at `sent`.
    fn handed_over(&self, sent: u64) {
        // Another attempt after one that ended: that one was retried.
        let before = self.last_cause.swap(0, Ordering::Relaxed);
        if let Some(n) = (before as usize).checked_sub(1).and_then(|i| self.retried.get(i)) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        self.attempts.fetch_add(1, Ordering::Relaxed);
        self.connection_id.store(0, Ordering::Relaxed);
        let start = self.attempt_start.load(Ordering::Relaxed);
        if start != 0 {
            self.prep_ns.fetch_add(sent.saturating_sub(start), Ordering::Relaxed);
        }
    }

    /// The attempt handed over at `sent` ended at `end`; it had a connection from
    /// `conn` (if hyper gave it one), while this request's own connects took
    /// `connecting_ns`; `headers`: it got response headers at `end`.
    fn attempt_ended(
        &self,
        sent: u64,
        conn: Option<u64>,
        end: u64,
        connecting_ns: u64,
        headers: bool,
        cause: Option<Cause>,
    ) {
        // An attempt without a cause (a success) is never retried: 0 stays.
        self.last_cause.store(cause.map_or(0, |c| c as u8), Ordering::Relaxed);
        let waited = conn.unwrap_or(end).saturating_sub(sent).saturating_sub(connecting_ns);
        self.pool_wait_ns.fetch_add(waited, Ordering::Relaxed);
        if let (true, Some(conn)) = (headers, conn) {
            self.wire_ttfb_ns.store(end.saturating_sub(conn), Ordering::Relaxed);
            self.has_wire_ttfb.store(true, Ordering::Relaxed);
        }
        self.last_end.store(end, Ordering::Relaxed);
        self.stamps.note(
            self.attempts.load(Ordering::Relaxed),
            self.began.load(Ordering::Relaxed),
            (sent, headers.then_some(end), end),
            self.connection_id.load(Ordering::Relaxed),
        );
    }
}

/// Nanoseconds since the first call in this process: the clock of [`RequestProbe`]'s
/// stamps (monotonic; never 0, which the probe reads as "not stamped").
pub fn clock_ns() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64 + 1
}

tokio::task_local! {
    /// The probe of the request being sent, if the caller set one (a scope around the
    /// request's future). Read synchronously when a connection or session is started,
    /// so a connect that hyper finishes in the background is still credited to the
    /// request that asked for it.
    pub static REQUEST_PROBE: Arc<RequestProbe>;
}

/// The probe of the request being sent, if any ([`REQUEST_PROBE`]).
pub fn current_probe() -> Option<Arc<RequestProbe>> {
    REQUEST_PROBE.try_with(Arc::clone).ok()
}

/// Set once the request that started a connect has its answer (or failed). hyper-util
/// races a new connect against the pool; when the pool wins, the connect goes on in
/// the background to add an idle connection. Under the per-host cap such a connect
/// would wait for a slot, and the slot a closing (retired) connection frees would go to
/// it rather than to a request that still needs one, which could then wait for its
/// first-byte timeout. So a connect that is still waiting for a slot when its request
/// is served gives up.
#[derive(Debug, Default)]
pub(crate) struct RequestServed {
    done: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl RequestServed {
    fn set(&self) {
        self.done.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Resolves once the request is served.
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.done.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

tokio::task_local! {
    /// The request a connect is started for (see [`RequestServed`]).
    pub(crate) static REQUEST_SERVED: Arc<RequestServed>;
}

/// Size of each connection's read buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The HTTP transport: a capped, counted hyper-util pool. Cheap to clone (an `Arc`).
#[derive(Clone)]
pub struct Transport {
    inner: Arc<TransportInner>,
}

struct TransportInner {
    counters: Arc<Counters>,
    trust: Trust,
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
    /// A transport with the given settings that trusts the webpki root certificates.
    pub fn new(settings: TransportSettings) -> Self {
        Self::with_trust(settings, Trust::load(None).expect("the webpki roots always load"))
    }

    /// A transport that trusts the webpki roots and, when given, the certificates of
    /// `ca_file` (PEM): a private CA such as the lab's, an S3-compatible store's or a
    /// corporate proxy's.
    pub fn with_ca_file(settings: TransportSettings, ca_file: Option<&std::path::Path>) -> Result<Self, TrustError> {
        Ok(Self::with_trust(settings, Trust::load(ca_file)?))
    }

    fn with_trust(settings: TransportSettings, trust: Trust) -> Self {
        let counters = Arc::new(Counters::default());
        let pool = Arc::new(Pool::build(settings, &trust, &counters));
        Transport {
            inner: Arc::new(TransportInner {
                counters,
                trust,
                pool: RwLock::new(pool),
            }),
        }
    }

    /// What this transport trusts, in words (for messages).
    pub fn trusted(&self) -> &str {
        &self.inner.trust.described
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
            *pool = Arc::new(Pool::build(settings, &self.inner.trust, &self.inner.counters));
        }
    }

    /// A snapshot of the monotonic counters.
    pub fn counters(&self) -> TransportCounters {
        let c = &self.inner.counters;
        TransportCounters {
            connections_opened: c.connections_opened.load(Ordering::Relaxed),
            connections_failed: c.connections_failed.load(Ordering::Relaxed),
            connect_ns: c.connect_ns.load(Ordering::Relaxed),
            tls_handshakes: c.tls_handshakes.load(Ordering::Relaxed),
            tls_handshake_ns: c.tls_handshake_ns.load(Ordering::Relaxed),
            requests_sent: c.requests_sent.load(Ordering::Relaxed),
            session_requests: c.session_requests.load(Ordering::Relaxed),
            throttled_responses: c.throttled_responses.load(Ordering::Relaxed),
        }
    }

    /// Bytes read from the pool's connections so far (monotonic): the responses'
    /// headers, bodies and HTTP framing (under TLS, decrypted). Read at a timeline's
    /// interval edges for its wire bytes.
    pub fn rx_bytes(&self) -> u64 {
        self.inner.counters.rx_bytes.load(Ordering::Relaxed)
    }

    /// Connections open right now (a gauge, not a counter).
    pub fn connections_open(&self) -> i64 {
        self.inner.counters.connections_open.load(Ordering::Relaxed)
    }

    /// The most requests in flight at once (handed over, their response bodies not yet
    /// read or dropped) since the last call: what the sweep's pool caps, hedges
    /// included. The count starts again from the requests in flight now.
    pub fn take_requests_in_flight_peak(&self) -> u64 {
        self.inner.counters.take_in_flight_peak()
    }

    fn current(&self) -> Arc<Pool> {
        self.inner.pool.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The lanes of the current pool (`pool.rs`): work spawned on lane `i` sends
    /// through lane `i`'s connections, polled on that lane's thread. The snapshot keeps
    /// its generation of the pool, threads and connections alive while it is held, so
    /// a later `configure` does not stop the work running on it.
    pub fn lanes(&self) -> Lanes {
        Lanes { pool: self.current() }
    }

    /// This transport as the SDK's HTTP client.
    pub fn http_client(&self) -> SharedHttpClient {
        SharedHttpClient::new(self.clone())
    }
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
        let sent = clock_ns();
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(err) => return HttpConnectorFuture::ready(Err(ConnectorError::user(err.into()))),
        };
        let response = self.transport.dispatch(request, self.read_timeout, sent);
        HttpConnectorFuture::new(async move {
            let response = response.await?;
            HttpResponse::try_from(response).map_err(|err| ConnectorError::other(err.into(), None))
        })
    }
}

impl Transport {
    /// Sends one request through the pool, as the SDK's requests go: the same per-host
    /// cap, TLS, counters, probe stamps (the caller's [`REQUEST_PROBE`]) and first-byte
    /// limit (`first_byte_timeout`, connection in hand or not, to the response headers).
    /// The lean client's way in ([`crate::s3::lean`]).
    pub fn send(
        &self,
        request: http::Request<SdkBody>,
        first_byte_timeout: Option<Duration>,
    ) -> impl std::future::Future<Output = Result<http::Response<SdkBody>, ConnectorError>> + Send + 'static {
        self.dispatch(request, first_byte_timeout, clock_ns())
    }

    /// Counts a request handed over at `sent`: a CreateSession call, or an attempt of a
    /// GET (stamped into the caller's probe).
    fn count_handed_over(&self, session: bool, probe: Option<&Arc<RequestProbe>>, sent: u64) {
        let counters = &self.inner.counters;
        if session {
            counters.session_requests.fetch_add(1, Ordering::Relaxed);
            if let Some(probe) = probe {
                probe.sessions.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            counters.requests_sent.fetch_add(1, Ordering::Relaxed);
            if let Some(probe) = probe {
                probe.handed_over(sent);
            }
        }
    }

    /// One request handed over at `sent`: counted, stamped into the caller's probe,
    /// sent on the current pool, bounded by `read_timeout` to its headers.
    fn dispatch(
        &self,
        mut request: http::Request<SdkBody>,
        read_timeout: Option<Duration>,
        sent: u64,
    ) -> impl std::future::Future<Output = Result<http::Response<SdkBody>, ConnectorError>> + Send + 'static {
        let session = is_create_session(request.uri());
        let probe = current_probe();
        self.count_handed_over(session, probe.as_ref(), sent);
        let in_flight = counters::InFlight::enter(&self.inner.counters);
        let mut connection = capture_connection(&mut request);
        hand_over_connection(&request, &connection);
        // To send again if hyper leaves the request without a connection (see below).
        let template = copy_request(&request);
        let counters = self.inner.counters.clone();
        let pool = self.current();
        let served = Arc::new(RequestServed::default());
        let response = REQUEST_SERVED.scope(served.clone(), pool.client().request(request));
        // CreateSession calls are part of some GET's preparation, not attempts of it.
        let probe = probe.filter(|_| !session);
        let mut attempt = AttemptRecord {
            connecting_before: probe.as_ref().map_or(0, |p| p.connect_ns.load(Ordering::Relaxed)),
            probe,
            sent,
            conn_at: None,
        };
        async move {
            let conn_at = &mut attempt.conn_at;
            // This generation of the pool, kept alive (moved in) while the request is
            // in flight, and used to send the request again.
            let pool_ref = &pool;
            let served_ref = &served;
            let timed = async {
                tokio::pin!(response);
                let mut redispatch_at = tokio::time::Instant::now() + REDISPATCH_AFTER;
                let mut due = false;
                loop {
                    tokio::select! {
                        biased;
                        answer = &mut response => break answer,
                        got = connection.wait_for_connection_metadata(), if conn_at.is_none() => {
                            // `None`: hyper dropped the request without a connection.
                            *conn_at = Some(got.is_some().then(clock_ns));
                        }
                        _ = tokio::time::sleep_until(redispatch_at), if conn_at.is_none() && template.is_some() => {
                            redispatch_at += REDISPATCH_AFTER;
                            due = true;
                        }
                    }
                    // hyper-util's pool can leave a request waiting only for a connect of
                    // its own (after the idle connection it was handed turned out closed),
                    // and under the per-host cap that connect waits for a slot that idle
                    // connections hold. A request that never reached a connection can be
                    // sent again safely: a fresh checkout finds the idle ones.
                    if std::mem::take(&mut due) && conn_at.is_none() && connection.connection_metadata().is_none() {
                        if let Some(mut again) = template.as_ref().and_then(copy_request) {
                            connection = capture_connection(&mut again);
                            hand_over_connection(&again, &connection);
                            tracing::debug!("no connection after {REDISPATCH_AFTER:?}: request sent again");
                            response.set(REQUEST_SERVED.scope(served_ref.clone(), pool_ref.client().request(again)));
                        }
                    }
                }
            };
            let response = match read_timeout {
                Some(limit) => tokio::time::timeout(limit, timed).await.ok(),
                None => Some(timed.await),
            };
            served.set();
            connector::note_connection(attempt.probe.as_deref(), connection.connection_metadata().as_ref());
            let (headers, cause) = match &response {
                None => (false, Some(Cause::Timeout)),
                Some(Err(_)) => (false, Some(Cause::Connection)),
                Some(Ok(r)) => (true, Cause::of_status(r.status().as_u16())),
            };
            retire_after_an_error_answer(cause, &connection);
            attempt.ended(headers, cause);
            answer_of(response, read_timeout, (!session).then_some(&counters), in_flight)
        }
    }
}

/// A connection whose answer was throttled or a server error is retired now, at the
/// headers, as the SDK would retire it after reading the error: poisoned later, it
/// would already be back in the pool, maybe handed to a request waiting for one, which
/// then finds it closed and waits for a connect of its own while every slot under the
/// cap is held by idle connections.
fn retire_after_an_error_answer(cause: Option<Cause>, connection: &CaptureConnection) {
    if matches!(cause, Some(Cause::Throttled | Cause::ServerError)) {
        if let Some(connected) = connection.connection_metadata().as_ref() {
            connected.poison();
        }
    }
}

/// How long a request may wait for hyper to give it a connection before it is sent
/// again (see the connector's loop): far longer than a connect on a loaded machine.
const REDISPATCH_AFTER: Duration = Duration::from_millis(250);

/// A copy of a request that was not sent yet (method, URI, version, headers and a
/// body that can be copied, as the SDK's GETs and small PUTs have); `None` otherwise.
/// Extensions are not copied: the copy gets its own connection capture.
fn copy_request(request: &http::Request<SdkBody>) -> Option<http::Request<SdkBody>> {
    let mut copy = http::Request::new(request.body().try_clone()?);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    if let Some(smithy) = request.extensions().get::<CaptureSmithyConnection>() {
        copy.extensions_mut().insert(smithy.clone());
    }
    Some(copy)
}

/// One attempt's stamps until it ends, into its GET's probe. An attempt dropped before
/// its headers (the SDK's attempt timeout, or the caller's) ends as a timeout.
struct AttemptRecord {
    probe: Option<Arc<RequestProbe>>,
    sent: u64,
    /// When hyper gave the request a connection; `Some(None)`: it gave up without one.
    conn_at: Option<Option<u64>>,
    connecting_before: u64,
}

impl AttemptRecord {
    fn ended(&mut self, headers: bool, cause: Option<Cause>) {
        if let Some(probe) = self.probe.take() {
            let connecting = probe
                .connect_ns
                .load(Ordering::Relaxed)
                .saturating_sub(self.connecting_before);
            probe.attempt_ended(
                self.sent,
                self.conn_at.flatten(),
                clock_ns(),
                connecting,
                headers,
                cause,
            );
        }
    }
}

impl Drop for AttemptRecord {
    fn drop(&mut self) {
        self.ended(false, Some(Cause::Timeout));
    }
}

/// Lets the SDK retire the connection a request went out on: its connection-poisoning
/// interceptor puts a [`CaptureSmithyConnection`] into the request and, after a
/// transient error (a 5xx, a timeout), asks it for the connection to poison, so the
/// pool never hands it out again. Without a retriever the SDK logs an ERROR per
/// transient error and the suspect connection is reused.
fn hand_over_connection<B>(request: &http::Request<B>, connection: &CaptureConnection) {
    let Some(smithy) = request.extensions().get::<CaptureSmithyConnection>() else {
        return;
    };
    let connection = connection.clone();
    smithy.set_connection_retriever(move || {
        let proxied = connection.connection_metadata().as_ref()?.is_proxied();
        let capture = connection.clone();
        Some(
            ConnectionMetadata::builder()
                .proxied(proxied)
                .poison_fn(move || {
                    if let Some(connected) = capture.connection_metadata().as_ref() {
                        connected.poison();
                    }
                })
                .build(),
        )
    });
}

fn is_create_session(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|part| part == "session" || part.starts_with("session="))
    })
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
}

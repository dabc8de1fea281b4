//! The HTTP transport s3sweep measures through: hyper-util's connection pool (the same
//! pool aws-smithy-http-client uses) with rustls for HTTPS and `TCP_NODELAY` on every
//! socket, handed to the AWS SDK as its HTTP client. A [`Transport`] is a value with
//! fixed settings: one sweep session builds its own, so two sessions in one process
//! share no connection, pool or counter. What it adds, and why it is ours rather than
//! the SDK's default client:
//! - lanes ([`lanes`]): each [`Lane`] its own hyper client with its share of the pool,
//!   handed to the SDK as that lane's HTTP client, and a thread with its own runtime;
//! - trust in a CA file besides the webpki roots ([`tls`]: `--ca-file`, `AWS_CA_BUNDLE`),
//!   and a handshake error that names it;
//! - a hard cap on TCP connections per host (`pool_connections`): hyper's pool has no
//!   such cap, so each connection holds a permit of a per-host semaphore until it
//!   closes ([`connector`]);
//! - counters the engine reads between configurations ([`counters`]): connections
//!   opened, time spent connecting (TCP connect and TLS handshake apart), TLS
//!   handshakes, requests sent and retries, S3 Express `CreateSession` calls, the
//!   requests in flight and their peak, plus a [`RequestProbe`] per GET ([`probe`]:
//!   what the transport did for it), which tells cold requests from warm ones;
//! - the connect and first-byte timeouts ([`dispatch`]), applied here because the SDK
//!   leaves them to the HTTP client.

mod attempts;
mod connector;
mod counters;
mod dispatch;
mod lanes;
mod probe;
pub(crate) mod tls;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;

pub use attempts::{AttemptStamp, Stamps, MAX_STAMPED_ATTEMPTS};
use counters::Counters;
pub use counters::TransportCounters;
pub(crate) use dispatch::REQUEST_SERVED;
use lanes::LaneThreads;
pub use lanes::{share, Lane};
pub use probe::{clock_ns, current_probe, ColdWork, RequestProbe, REQUEST_PROBE};

pub use tls::{handshake, server_name, Trust};
pub use tls::{TlsHandshakeError, TrustError};

/// Settings of a transport, fixed when it is built: a sweep with other limits builds
/// another, so connections from an earlier sweep never leak into this one.
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

/// Size of each connection's read buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The HTTP transport of one session: its settings, its lanes (each a capped hyper
/// client of its own), their threads and its counters. Cheap to clone (an `Arc`); the
/// lanes' threads stop and their connections close when the last clone is dropped.
#[derive(Clone)]
pub struct Transport {
    inner: Arc<TransportInner>,
}

struct TransportInner {
    settings: TransportSettings,
    trust: Trust,
    counters: Arc<Counters>,
    lanes: Vec<Lane>,
    /// Started on the first [`Transport::start`] or [`Transport::spawn`].
    threads: OnceLock<LaneThreads>,
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

    /// A transport with `settings` trusting what this one trusts (the CA file is not
    /// read again), with lanes, connections and counters of its own.
    pub fn sibling(&self, settings: TransportSettings) -> Self {
        Self::with_trust(settings, self.inner.trust.clone())
    }

    /// `settings.lanes` lanes (at least one, at most one per pooled connection), each
    /// with its share of the per-host cap.
    fn with_trust(settings: TransportSettings, trust: Trust) -> Self {
        let counters = Arc::new(Counters::default());
        let count = settings.lanes.clamp(1, settings.pool_connections.max(1));
        let lanes = (0..count)
            .map(|i| {
                let connections = share(settings.pool_connections, count, i);
                Lane::build(i, &settings, connections, &trust, &counters)
            })
            .collect();
        Transport {
            inner: Arc::new(TransportInner {
                settings,
                trust,
                counters,
                lanes,
                threads: OnceLock::new(),
            }),
        }
    }

    /// What this transport trusts, in words (for messages).
    pub fn trusted(&self) -> &str {
        &self.inner.trust.described
    }

    /// Its settings.
    pub fn settings(&self) -> TransportSettings {
        self.inner.settings
    }

    /// Its lanes, in order.
    pub fn lanes(&self) -> &[Lane] {
        &self.inner.lanes
    }

    /// Lane `i` (modulo the lanes).
    pub fn lane(&self, i: usize) -> &Lane {
        &self.inner.lanes[i % self.inner.lanes.len()]
    }

    /// Lane 0 as the SDK's HTTP client: for work off the lanes' threads.
    pub fn http_client(&self) -> SharedHttpClient {
        self.lane(0).http_client()
    }

    /// Sends one request through lane 0 ([`Lane::send`]).
    pub fn send(
        &self,
        request: http::Request<SdkBody>,
        first_byte_timeout: Option<Duration>,
    ) -> impl std::future::Future<Output = Result<http::Response<SdkBody>, ConnectorError>> + Send + 'static {
        self.lane(0).send(request, first_byte_timeout)
    }

    fn threads(&self) -> &LaneThreads {
        self.inner
            .threads
            .get_or_init(|| LaneThreads::start(self.inner.lanes.len()))
    }

    /// Starts the lanes' threads (once); false when a thread could not start, and work
    /// is then spawned on the caller's runtime.
    pub fn start(&self) -> bool {
        !self.threads().is_empty()
    }

    /// Spawns `work` into `set` on lane `i`'s thread (modulo the lanes), or on the
    /// caller's runtime when the lanes' threads could not start. `work` should send
    /// through [`Transport::lane`] `i`: then its connections are polled where it runs.
    pub fn spawn<T: Send + 'static>(
        &self,
        set: &mut tokio::task::JoinSet<T>,
        i: usize,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) {
        self.threads().spawn(set, i, work);
    }

    /// The lanes' runtimes' busy time and their threads, once started.
    pub fn busy(&self) -> Option<(Duration, u32)> {
        self.inner.threads.get().and_then(LaneThreads::busy)
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
            retries: c.retries.load(Ordering::Relaxed),
            session_requests: c.session_requests.load(Ordering::Relaxed),
            throttled_responses: c.throttled_responses.load(Ordering::Relaxed),
        }
    }

    /// Bytes read from the transport's connections so far (monotonic): the responses'
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
}

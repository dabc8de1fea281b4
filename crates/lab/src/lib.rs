//! The embedded S3-compatible server: a real S3 protocol server (s3s) on a real TCP
//! socket, so the SDK's signing and connection pool are exercised exactly as against S3.
//!
//! - [`store::MemStore`] keeps buckets in memory behind the s3s `S3` trait, with S3's
//!   ETags and conditional requests (`conditions`) and listings (`listing`), and the
//!   object and store size caps of [`LabLimits`], and the caps on buckets, sessions
//!   and prefix partitions ([`caps`]);
//! - [`latency::WithLatency`] adds each bucket's read latency profile in front of it;
//! - [`faults::WithFaults`] and the HTTP layer in `conn` inject each bucket's faults
//!   (503/500/403, resets, stalls, late first bytes, truncated bodies) and count them;
//! - [`layered::Layered`] is the one wrapper both are made with (forwarding written once);
//! - [`detect`] asks an endpoint whether it is the lab (`GET /_s3sweep/hello`), so
//!   clients use the lab's keys only with the lab;
//! - [`sessions`] and [`express`] make directory buckets (`NAME--ZONE--x-s3`) work as
//!   S3 Express: `CreateSession`, requests signed with a session checked, expired or
//!   unknown sessions and ReadOnly-session writes refused as S3 refuses them;
//! - [`network`] is the lab's network as Lambda and S3 see it: a NIC ([`nic`], with
//!   the [`lambda_nic`] figures), S3's per-prefix request rate ([`prefix_rate`]) and
//!   its idle timeout for keep-alive connections ([`idle`]), with their tally;
//! - [`fair`] keeps the connection cap fair: at the cap, an idle kept-alive
//!   connection gives up its slot to the new one;
//! - [`iam`] evaluates an IAM policy as AWS does; with `serve --iam-policy FILE`
//!   every request is authorized against it first ([`iam_s3`]), AccessDenied as S3 answers;
//! - [`tls`] makes a CA and a server certificate at start, for HTTPS;
//! - [`child::LabProcess`] runs the server as a child process (`s3sweep serve`), so its
//!   CPU is not counted as the client's;
//! - [`start`] binds a listener (port 0 for tests), checks SigV4 against the fixed
//!   local credentials ([`LOCAL_ACCESS_KEY`] / [`LOCAL_SECRET_KEY`]), serves path-style
//!   requests over HTTP/1.1 (or HTTPS) with `TCP_NODELAY` on every accepted socket, and
//!   returns a [`RunningServer`] handle.

// The core's modules under their own names, so `crate::model::...` reads as before.
use s3sweep_core::{model, plan, s3, sys, transport};

mod caps;
pub mod child;
mod conditions;
mod conn;
pub mod detect;
pub(crate) mod express;
mod fair;
pub(crate) mod faults;
pub mod iam;
pub mod iam_s3;
mod idle;
pub mod lambda_nic;
pub(crate) mod latency;
pub(crate) mod layered;
mod listing;
pub(crate) mod network;
pub mod nic;
pub mod prefix_rate;
pub(crate) mod regions;
pub(crate) mod sessions;
mod sigv4;
pub(crate) mod store;
pub mod tls;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::s3::ClientOptions;

pub use caps::{MAX_BUCKETS, MAX_PREFIX_PARTITIONS, MAX_SESSIONS};
pub use conn::FAULTS_PATH;
pub use detect::HELLO_PATH;
pub use faults::{BucketFault, FaultKind, FaultSpec, FaultTally, FaultTiming, Faults};
pub use idle::DEFAULT_IDLE_TIMEOUT;
pub use latency::{LatencyProfile, Profiles, Tail};
pub use network::{Network, NetworkConfig, NetworkError, NetworkProblem, NetworkTally, NETWORK_PATH};
pub use regions::{BucketRegion, BucketRegions, LAB_REGION};
pub use sessions::{
    Session, SessionMode, SessionTally, Sessions, UnknownSessionMode, DEFAULT_SESSION_TTL, SESSIONS_PATH,
};
pub use store::{GetTally, MemStore, StoreLimits};

// How a client talks to the lab lives in the core, below the function and the lab:
// the function reaches a lab without depending on it.
pub use crate::s3::lab_client::{client_options, credentials, LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY};

/// `items`' texts joined with `; `: the message of an error that names every problem
/// it found (the NIC's, the network's, a NIC table's bad lines).
pub(crate) fn each_named<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Client options for a running lab: its endpoint, and its CA when it serves HTTPS.
pub fn client_options_for(server: &RunningServer) -> ClientOptions {
    client_options(server.endpoint()).with_ca_file(server.ca_file().map(Path::to_path_buf))
}

/// HTTPS settings of the server.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Where to write the CA certificate (PEM; it must not exist yet); `None`: a new
    /// private folder under the temporary folder. Removed when the server stops.
    pub ca_file: Option<PathBuf>,
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Buckets created at start, each with its latency profile.
    pub buckets: Vec<(String, LatencyProfile)>,
    /// Profile of buckets created later by clients.
    pub default_profile: LatencyProfile,
    /// Seed of the latency draws.
    pub seed: u64,
    /// HTTPS with a CA made at start; `None`: plain HTTP.
    pub tls: Option<TlsOptions>,
    /// How long S3 Express sessions last (S3: 5 minutes).
    pub session_ttl: Duration,
    /// The NIC, the per-prefix rate and the idle timeout (default: no NIC, no
    /// prefix rate, idle connections closed after 20 s).
    pub network: NetworkConfig,
    /// What the server takes in: header-read time, connections, body and store bytes.
    pub limits: LabLimits,
}

/// What the lab takes in, so that a hostile or broken client costs little. Each is a
/// `serve` flag (docs/lab.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabLimits {
    /// How long a client has to send a request's headers once it starts one (and
    /// between requests on a kept-alive connection) before the connection is closed.
    /// Default 20 s: long enough that a client's pool, idle between rounds, rarely
    /// loses a connection it is about to reuse.
    pub header_read_timeout: Duration,
    /// Most connections served at once; the next one is answered 503 `SlowDown` (over
    /// HTTP) or closed (over HTTPS, before the handshake) and counted. Default 4,096.
    pub max_connections: usize,
    /// Object size and store size caps ([`StoreLimits`]).
    pub store: StoreLimits,
}

impl Default for LabLimits {
    fn default() -> Self {
        LabLimits {
            header_read_timeout: Duration::from_secs(20),
            max_connections: 4096,
            store: StoreLimits::default(),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            buckets: Vec::new(),
            default_profile: LatencyProfile::None,
            seed: 1,
            tls: None,
            session_ttl: DEFAULT_SESSION_TTL,
            limits: LabLimits::default(),
            network: NetworkConfig::default(),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("binding {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Tls(#[from] tls::TlsSetupError),
    #[error("network settings: {0}")]
    Network(#[from] network::NetworkError),
}

/// Counts of the server's TLS handshakes.
#[derive(Debug, Default)]
struct TlsCounts {
    done: AtomicU64,
    failed: AtomicU64,
    /// The client closed or reset the connection mid-handshake (a client process
    /// killed, a connect abandoned): not a TLS failure.
    abandoned: AtomicU64,
}

/// A running server. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    /// Connections refused past [`LabLimits::max_connections`].
    refused: Arc<AtomicU64>,
    /// The connections served, to close an idle one at the cap.
    conns: Arc<fair::Conns>,
    store: MemStore,
    profiles: Arc<Profiles>,
    faults: Arc<Faults>,
    iam: Arc<iam_s3::IamGate>,
    connections: Arc<AtomicU64>,
    tls_counts: Arc<TlsCounts>,
    network: Arc<Network>,
    /// The CA file (HTTPS), removed when the server is dropped.
    ca_file: Option<tls::CaFile>,
    stop: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint URL clients use (`http://127.0.0.1:PORT`, `https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.ca_file.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The CA certificate file clients must trust, when serving HTTPS.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_ref().map(tls::CaFile::path)
    }

    /// The S3 Express sessions handed out, their tally, and `expire_all`.
    pub fn sessions(&self) -> &Arc<Sessions> {
        self.store.sessions()
    }

    /// TLS handshakes completed so far (0 over HTTP).
    pub fn tls_handshakes(&self) -> u64 {
        self.tls_counts.done.load(Ordering::Relaxed)
    }

    /// TLS handshakes that failed (a client that does not trust the CA, for one).
    pub fn tls_handshakes_failed(&self) -> u64 {
        self.tls_counts.failed.load(Ordering::Relaxed)
    }

    /// TLS handshakes the client walked away from: it closed or reset the connection
    /// before the handshake ended (its process killed, say), with no TLS error.
    pub fn tls_handshakes_abandoned(&self) -> u64 {
        self.tls_counts.abandoned.load(Ordering::Relaxed)
    }

    /// The store, for tests that inspect or prepare it directly.
    pub fn store(&self) -> &MemStore {
        &self.store
    }

    /// The latency profiles, to set a bucket's profile after start.
    pub fn profiles(&self) -> &Arc<Profiles> {
        &self.profiles
    }

    /// The fault profiles and the tally of injected faults (none until set).
    pub fn faults(&self) -> &Arc<Faults> {
        &self.faults
    }

    /// The IAM gate: the policy every request is authorized against (none until set).
    pub fn iam(&self) -> &Arc<iam_s3::IamGate> {
        &self.iam
    }

    /// Connections refused because [`LabLimits::max_connections`] were open.
    pub fn connections_refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Idle kept-alive connections closed at the connection cap to serve a new one.
    pub fn connections_evicted(&self) -> u64 {
        self.conns.evicted()
    }

    /// The NIC, the per-prefix rate and the idle timeout, and their tally.
    pub fn network(&self) -> &Arc<Network> {
        &self.network
    }

    /// TCP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting connections and waits for the accept loop to end. Open
    /// connections finish the request they are serving.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.accept.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Binds and starts serving on the current tokio runtime: the listener, the CA with
/// HTTPS, the store and its buckets, the S3 service with its layers, the accept loop.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    let bind = |source| StartError::Bind {
        addr: config.addr,
        source,
    };
    config.network.check()?;
    let listener = TcpListener::bind(config.addr).await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let (tls, ca_file) = tls_for(&config, addr)?;
    let store = MemStore::with_limits(config.limits.store);
    store.sessions().set_ttl(config.session_ttl);
    let profiles = Arc::new(Profiles::new(config.default_profile, config.seed));
    for (bucket, profile) in &config.buckets {
        store.ensure_bucket(bucket);
        profiles.set(bucket, *profile);
    }
    let faults = Arc::new(Faults::new(config.seed));
    let iam = Arc::new(iam_s3::IamGate::default());
    let network = Arc::new(Network::new(config.network.clone()));
    let (stop, stopped) = watch::channel(false);
    let accepting = Accepting {
        listener,
        tls,
        service: s3_service(&store, &profiles, &faults, &network, &iam),
        faults: faults.clone(),
        sessions: store.sessions().clone(),
        network: network.clone(),
        limits: config.limits,
        accepted: Arc::new(AtomicU64::new(0)),
        refused: Arc::new(AtomicU64::new(0)),
        handshakes: Arc::new(TlsCounts::default()),
        conns: Arc::new(fair::Conns::default()),
    };
    let conns = accepting.conns.clone();
    let (connections, refused, tls_counts) = (
        accepting.accepted.clone(),
        accepting.refused.clone(),
        accepting.handshakes.clone(),
    );
    let accept = tokio::spawn(accepting.run(stopped));
    Ok(RunningServer {
        addr,
        refused,
        conns,
        store,
        profiles,
        faults,
        iam,
        connections,
        tls_counts,
        network,
        ca_file,
        stop,
        accept: Some(accept),
    })
}

/// With HTTPS: a CA and server certificate made now, the acceptor, and the CA file.
fn tls_for(
    config: &ServerConfig,
    addr: SocketAddr,
) -> Result<(Option<tokio_rustls::TlsAcceptor>, Option<tls::CaFile>), StartError> {
    let Some(options) = &config.tls else {
        return Ok((None, None));
    };
    let certificates = tls::generate()?;
    let file = tls::CaFile::create(options.ca_file.as_deref(), addr.port(), &certificates.ca_pem)?;
    Ok((Some(tokio_rustls::TlsAcceptor::from(certificates.server)), Some(file)))
}

/// The S3 service: the store behind each bucket's latency, its faults, the
/// per-prefix rate and the IAM gate, signed with the lab's keys, S3 Express sessions checked.
fn s3_service(
    store: &MemStore,
    profiles: &Arc<Profiles>,
    faults: &Arc<Faults>,
    network: &Arc<Network>,
    iam: &Arc<iam_s3::IamGate>,
) -> s3s::service::S3Service {
    let latency = latency::WithLatency::new(store.clone(), profiles.clone());
    let prefix_rate = layered::Layered {
        inner: faults::WithFaults::new(latency, faults.clone()),
        layer: prefix_rate::PrefixRateLayer {
            rate: network.prefix_rate(),
        },
    };
    let gated = iam_s3::WithIam {
        inner: prefix_rate,
        gate: iam.clone(),
    };
    let mut builder = S3ServiceBuilder::new(gated);
    builder.set_auth(SimpleAuth::from_single(LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY.to_string()));
    builder.set_access(express::LabAccess {
        sessions: store.sessions().clone(),
    });
    builder.build()
}

/// The accept loop and what it shares with every connection it serves.
struct Accepting {
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: s3s::service::S3Service,
    faults: Arc<Faults>,
    sessions: Arc<Sessions>,
    network: Arc<Network>,
    limits: LabLimits,
    accepted: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
    handshakes: Arc<TlsCounts>,
    conns: Arc<fair::Conns>,
}

impl Accepting {
    /// Accepts until `stopped` changes: `TCP_NODELAY` on every socket; at the
    /// connection cap an idle kept-alive connection closed to make room ([`fair`]),
    /// or, with none idle, a refusal (counted); a task per connection behind the NIC.
    async fn run(self, mut stopped: watch::Receiver<bool>) {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout);
        let slots = Arc::new(tokio::sync::Semaphore::new(self.limits.max_connections));
        loop {
            let (stream, peer) = tokio::select! {
                res = self.listener.accept() => match res {
                    Ok(conn) => conn,
                    Err(err) => {
                        // Out of file descriptors and the like: back off, keep serving.
                        tracing::warn!(%err, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                },
                _ = stopped.changed() => break,
            };
            let _ = stream.set_nodelay(true);
            self.accepted.fetch_add(1, Ordering::Relaxed);
            let slot = match slots.clone().try_acquire_owned() {
                Ok(slot) => slot,
                Err(_) if self.conns.evict_one() => {
                    // The evicted connection's slot comes once it has closed.
                    let waiting = tokio::time::timeout(fair::EVICTION_WAIT, slots.clone().acquire_owned());
                    let refused = self.refused.clone();
                    let tls = self.tls.is_some();
                    let pending = self.pending(stream, peer.ip(), &http);
                    tokio::spawn(async move {
                        match waiting.await {
                            Ok(Ok(slot)) => serve_accepted(slot, pending).await,
                            _ => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                conn::refuse_busy(pending.stream, tls);
                            }
                        }
                    });
                    continue;
                }
                Err(_) => {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                    conn::refuse_busy(stream, self.tls.is_some());
                    continue;
                }
            };
            // The TLS handshake runs in the connection's own task, never in the accept loop.
            tokio::spawn(serve_accepted(slot, self.pending(stream, peer.ip(), &http)));
        }
    }

    /// An accepted connection from `peer`, registered, ready to serve once it has a slot.
    fn pending(&self, stream: tokio::net::TcpStream, peer: std::net::IpAddr, http: &Http) -> Pending {
        let per_conn = self.connection_service(&stream);
        let registered = self.conns.register(peer, per_conn.activity.clone());
        Pending {
            stream,
            per_conn,
            registered,
            tls: self.tls.clone(),
            http: http.clone(),
            network: self.network.clone(),
            handshakes: self.handshakes.clone(),
        }
    }

    /// The service one accepted connection is served by.
    fn connection_service(&self, stream: &tokio::net::TcpStream) -> conn::ConnService {
        conn::ConnService {
            inner: self.service.clone(),
            faults: self.faults.clone(),
            sessions: self.sessions.clone(),
            socket: Arc::new(conn::ConnSocket::new(std::os::fd::AsRawFd::as_raw_fd(stream))),
            network: self.network.clone(),
            activity: idle::Activity::new(),
        }
    }
}

type Http = hyper::server::conn::http1::Builder;

/// An accepted connection and what serving it takes.
struct Pending {
    stream: tokio::net::TcpStream,
    per_conn: conn::ConnService,
    registered: fair::Registered,
    tls: Option<tokio_rustls::TlsAcceptor>,
    http: Http,
    network: Arc<Network>,
    handshakes: Arc<TlsCounts>,
}

/// Serves one accepted connection (after its TLS handshake, with HTTPS) until it ends
/// or is closed for idleness; counts the handshake's outcome.
async fn serve_accepted(slot: tokio::sync::OwnedSemaphorePermit, pending: Pending) {
    // Held for the connection's life: the connection cap counts it until it ends.
    let _slot = slot;
    let Pending {
        stream,
        per_conn,
        registered,
        tls: acceptor,
        http,
        network,
        handshakes,
    } = pending;
    let stream = nic::NicStream::new(stream, network.nic());
    let evicted = registered.close.clone();
    let idle_timeout = network.config().idle_timeout;
    let closes = network.idle_closes_counter();
    let activity = per_conn.activity.clone();
    let served = match acceptor {
        None => {
            let conn = http.serve_connection(TokioIo::new(stream), per_conn);
            idle::serve(conn, activity, idle_timeout, closes, &evicted).await
        }
        Some(acceptor) => match tokio::time::timeout(TLS_HANDSHAKE_LIMIT, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                handshakes.done.fetch_add(1, Ordering::Relaxed);
                let conn = http.serve_connection(TokioIo::new(tls), per_conn);
                idle::serve(conn, activity, idle_timeout, closes, &evicted).await
            }
            Ok(Err(err)) => {
                use std::io::ErrorKind as K;
                let gone = matches!(
                    err.kind(),
                    K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
                );
                let count = if gone {
                    &handshakes.abandoned
                } else {
                    &handshakes.failed
                };
                count.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%err, gone, "TLS handshake did not complete");
                return;
            }
            Err(_) => {
                handshakes.failed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("TLS handshake timed out");
                return;
            }
        },
    };
    if let Err(err) = served {
        tracing::debug!(%err, "connection ended with an error");
    }
}

/// How long a client has to finish its TLS handshake.
const TLS_HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

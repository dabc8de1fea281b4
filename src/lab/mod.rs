//! The embedded S3-compatible server: a real S3 protocol server (s3s) on a real TCP
//! socket, so the SDK's signing and connection pool are exercised exactly as against S3.
//!
//! - [`store::MemStore`] keeps buckets in memory behind the s3s `S3` trait;
//! - [`latency::WithLatency`] adds each bucket's read latency profile in front of it;
//! - [`faults::WithFaults`] and the HTTP layer in `conn` inject each bucket's faults
//!   (503/500/403, resets, stalls, late first bytes, truncated bodies) and count them;
//! - [`layered::Layered`] is the one wrapper both are made with (forwarding written once);
//! - [`probe`] asks an endpoint whether it is the lab (`GET /_s3sweep/hello`), so
//!   clients use the lab's keys only with the lab;
//! - [`child::LabProcess`] runs the server as a child process (`s3sweep serve`), so its
//!   CPU is not counted as the client's;
//! - [`start`] binds a listener (port 0 for tests), checks SigV4 against the fixed
//!   local credentials ([`LOCAL_ACCESS_KEY`] / [`LOCAL_SECRET_KEY`]), serves path-style
//!   requests over HTTP/1.1 with `TCP_NODELAY` on every accepted socket, and returns a
//!   [`RunningServer`] handle.

pub mod child;
mod conn;
pub mod faults;
pub mod latency;
pub mod layered;
pub mod probe;
pub mod store;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::s3::{ClientOptions, CredentialSource, StaticCredentials};

pub use conn::FAULTS_PATH;
pub use faults::{BucketFault, FaultKind, FaultSpec, FaultTally, FaultTiming, Faults};
pub use latency::{LatencyProfile, Profiles};
pub use probe::HELLO_PATH;
pub use store::MemStore;

/// Access key the embedded server accepts (and the only one).
pub const LOCAL_ACCESS_KEY: &str = "s3sweep";
/// Secret key of [`LOCAL_ACCESS_KEY`]. Not a secret: it only guards a loopback test server.
pub const LOCAL_SECRET_KEY: &str = "s3sweep-local-secret";

/// The lab's credentials, for a client that talks to it.
pub fn credentials() -> CredentialSource {
    CredentialSource::Static(StaticCredentials {
        access_key_id: LOCAL_ACCESS_KEY.to_string(),
        secret_access_key: LOCAL_SECRET_KEY.to_string(),
        provider_name: "lab",
    })
}

/// Client options for the lab at `endpoint`: its credentials, region us-east-1.
pub fn client_options(endpoint: impl Into<String>) -> ClientOptions {
    ClientOptions::for_endpoint(Some(endpoint.into()), Some("us-east-1".into()), credentials())
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
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            buckets: Vec::new(),
            default_profile: LatencyProfile::None,
            seed: 1,
        }
    }
}

/// A running server. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    store: MemStore,
    profiles: Arc<Profiles>,
    faults: Arc<Faults>,
    connections: Arc<AtomicU64>,
    stop: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint URL clients use (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
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

/// Binds and starts serving on the current tokio runtime.
pub async fn start(config: ServerConfig) -> std::io::Result<RunningServer> {
    let listener = TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let store = MemStore::new();
    let profiles = Arc::new(Profiles::new(config.default_profile, config.seed));
    for (bucket, profile) in &config.buckets {
        store.ensure_bucket(bucket);
        profiles.set(bucket, *profile);
    }
    let faults = Arc::new(Faults::new(config.seed));
    let service = {
        let latency = latency::WithLatency::new(store.clone(), profiles.clone());
        let mut builder = S3ServiceBuilder::new(faults::WithFaults::new(latency, faults.clone()));
        builder.set_auth(SimpleAuth::from_single(LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY.to_string()));
        builder.build()
    };
    let (stop, mut stopped) = watch::channel(false);
    let connections = Arc::new(AtomicU64::new(0));
    let accepted = connections.clone();
    let conn_faults = faults.clone();
    let accept = tokio::spawn(async move {
        let http = hyper::server::conn::http1::Builder::new();
        loop {
            let (stream, _peer) = tokio::select! {
                res = listener.accept() => match res {
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
            accepted.fetch_add(1, Ordering::Relaxed);
            let per_conn = conn::ConnService {
                inner: service.clone(),
                faults: conn_faults.clone(),
                socket: Arc::new(conn::ConnSocket::new(std::os::fd::AsRawFd::as_raw_fd(&stream))),
            };
            let conn = http.serve_connection(TokioIo::new(stream), per_conn);
            tokio::spawn(async move {
                if let Err(err) = conn.await {
                    tracing::debug!(%err, "connection ended with an error");
                }
            });
        }
    });
    Ok(RunningServer {
        addr,
        store,
        profiles,
        faults,
        connections,
        stop,
        accept: Some(accept),
    })
}

//! The pool of one generation of settings, in lanes. A lane is a thread with its own
//! single-threaded tokio runtime and its own hyper-util client, which holds the lane's
//! share of the per-host cap (`pool_connections`). Work spawned on a lane
//! ([`Lanes::spawn`]) sends its requests through that lane's client, so a
//! connection's task and the requests it serves are polled on one thread: an answer
//! never wakes a task on another core, and no lane waits for a connection another
//! lane holds idle. Requests from any other thread (preflight, listing, seeding, the
//! Lambda invoker) go through lane 0's client; work that needs the whole pool (the
//! bandwidth probe) spreads itself over the lanes. A lane's thread knows its index,
//! not its pool: `configure` during a sweep (which no caller does) would send its
//! requests through the new pool's lane of that index. The threads start on first use
//! and stop when the pool is dropped (a new generation, or the transport's end); their
//! connections close with them. Why lanes: docs/performance.md, "Lanes: a thread,
//! runtime and pool per core".

use std::cell::Cell;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_smithy_types::body::SdkBody;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::runtime::Handle;

use super::connector::{HostLimits, LimitedConnector};
use super::counters::Counters;
use super::{TransportSettings, Trust, READ_BUFFER_BYTES};

thread_local! {
    /// The lane this thread is, on a lane's thread.
    static LANE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Lane `i`'s share of `total` over `lanes` lanes: the same split the engine makes of
/// its GETs in flight, so each lane's GETs have its connections.
pub fn share(total: usize, lanes: usize, i: usize) -> usize {
    let lanes = lanes.max(1);
    total / lanes + usize::from(i < total % lanes)
}

/// The lanes of one generation of the pool ([`super::Transport::lanes`]).
#[derive(Clone)]
pub struct Lanes {
    pub(super) pool: Arc<Pool>,
}

impl Lanes {
    /// How many lanes the pool has (their threads started or not).
    pub fn count(&self) -> usize {
        self.pool.lanes()
    }

    /// Starts the lanes' threads (once); false when a thread could not start, and work
    /// is then spawned on the caller's runtime.
    pub fn start(&self) -> bool {
        !self.pool.threads().is_empty()
    }

    /// Spawns `work` into `set` on lane `i` (modulo the lanes), or on the caller's
    /// runtime when the lanes' threads could not start.
    pub fn spawn<T: Send + 'static>(
        &self,
        set: &mut tokio::task::JoinSet<T>,
        i: usize,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) {
        match self.pool.threads() {
            [] => set.spawn(work),
            threads => set.spawn_on(work, &threads[i % threads.len()].handle),
        };
    }

    /// The lanes' runtimes' busy time and their threads, once started.
    pub fn busy(&self) -> Option<(Duration, u32)> {
        let threads = self.pool.threads.get().filter(|t| !t.is_empty())?;
        let busy = threads
            .iter()
            .map(|t| t.handle.metrics().worker_total_busy_duration(0))
            .sum();
        Some((busy, threads.len() as u32))
    }
}

/// One generation of the pool: a hyper client per lane, and the lanes' threads.
pub(super) struct Pool {
    pub(super) settings: TransportSettings,
    clients: Vec<HyperClient<LimitedConnector, SdkBody>>,
    /// Started on the first [`Pool::threads`]; empty when a thread could not start.
    threads: OnceLock<Vec<LaneThread>>,
}

/// A lane's thread: its runtime's handle, and the sender whose drop stops it.
struct LaneThread {
    handle: Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Pool {
    /// `settings.lanes` lanes (at least one, at most one per pooled connection), each
    /// with its share of the per-host cap.
    pub(super) fn build(settings: TransportSettings, trust: &Trust, counters: &Arc<Counters>) -> Pool {
        let lanes = settings.lanes.clamp(1, settings.pool_connections.max(1));
        let clients = (0..lanes)
            .map(|i| client(&settings, share(settings.pool_connections, lanes, i), trust, counters))
            .collect();
        Pool {
            settings,
            clients,
            threads: OnceLock::new(),
        }
    }

    /// The client of the calling thread's lane (lane 0 off the lanes).
    pub(super) fn client(&self) -> &HyperClient<LimitedConnector, SdkBody> {
        let lane = LANE.with(Cell::get).unwrap_or(0);
        &self.clients[lane.min(self.clients.len() - 1)]
    }

    pub(super) fn lanes(&self) -> usize {
        self.clients.len()
    }

    /// The lanes' threads, started on the first call; none when one could not start.
    fn threads(&self) -> &[LaneThread] {
        self.threads.get_or_init(|| {
            let started: std::io::Result<Vec<LaneThread>> = (0..self.lanes()).map(start).collect();
            started.unwrap_or_else(|err| {
                tracing::warn!("transport: a lane's thread did not start ({err}); the sweep runs on its own runtime");
                Vec::new()
            })
        })
    }
}

/// Lane `i`'s thread: a single-threaded runtime that runs what is spawned on it until
/// the returned sender is dropped. The runtime is built and dropped on the thread
/// itself (a runtime must not be dropped inside another's async context).
fn start(i: usize) -> std::io::Result<LaneThread> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready, started) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("s3sweep-lane-{i}"))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(err) => return drop(ready.send(Err(err))),
            };
            let _ = ready.send(Ok(runtime.handle().clone()));
            LANE.with(|lane| lane.set(Some(i)));
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
    let handle = started
        .recv()
        .map_err(|_| std::io::Error::other("the lane's thread ended before its runtime started"))??;
    Ok(LaneThread { handle, _stop: stop })
}

/// A lane's hyper client, capped at `connections` per host.
fn client(
    settings: &TransportSettings,
    connections: usize,
    trust: &Trust,
    counters: &Arc<Counters>,
) -> HyperClient<LimitedConnector, SdkBody> {
    let mut tcp = TcpConnector::new();
    tcp.set_nodelay(true);
    tcp.set_keepalive(settings.tcp_keepalive);
    tcp.enforce_http(false);
    let stack = LimitedConnector {
        tcp,
        trust: trust.clone(),
        limits: Arc::new(HostLimits::new(connections)),
        counters: counters.clone(),
        connect_timeout: settings.connect_timeout,
    };
    HyperClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(settings.pool_idle_timeout)
        // One 64 KiB read buffer per connection instead of hyper's adaptive one that
        // starts at 8 KiB: a 46 KB body arrives in one or two reads, not five or six.
        .http1_read_buf_exact_size(READ_BUFFER_BYTES)
        .build(stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for total in 0..40 {
            for lanes in 1..6 {
                let shares: Vec<usize> = (0..lanes).map(|i| share(total, lanes, i)).collect();
                assert_eq!(shares.iter().sum::<usize>(), total, "{total} over {lanes}");
                assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
            }
        }
    }
}

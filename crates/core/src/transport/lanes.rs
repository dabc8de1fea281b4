//! A transport's lanes. A [`Lane`] is a hyper-util client of its own, holding the
//! lane's share of the per-host cap (`pool_connections`), and is handed to the AWS SDK
//! (or the lean client) as that lane's HTTP client: whoever holds lane `i` sends
//! through lane `i`'s connections, and nothing routes by thread. [`LaneThreads`] are
//! the lanes' threads, each with its own single-threaded tokio runtime: work spawned on
//! lane `i` ([`super::Transport::spawn`]) with lane `i`'s client runs there, so a
//! connection's task and the requests it serves are polled on one thread (an answer
//! never wakes a task on another core) and no lane waits for a connection another lane
//! holds idle. Work off the lanes' threads (preflight, listing, seeding, the Lambda
//! invoker) uses lane 0 on the caller's runtime; work that needs the whole pool (the
//! bandwidth probe) spreads itself over the lanes. The threads start on first use and
//! stop when their transport is dropped; their connections close with them. Why lanes:
//! docs/performance.md, "Lanes: a thread, runtime and pool per core".

use std::sync::Arc;
use std::time::Duration;

use aws_smithy_types::body::SdkBody;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::runtime::Handle;

use super::connector::{HostLimits, LimitedConnector};
use super::counters::Counters;
use super::{TransportSettings, Trust, READ_BUFFER_BYTES};

/// Lane `i`'s share of `total` over `lanes` lanes: the same split the engine makes of
/// its GETs in flight, so each lane's GETs have its connections.
pub fn share(total: usize, lanes: usize, i: usize) -> usize {
    let lanes = lanes.max(1);
    total / lanes + usize::from(i < total % lanes)
}

/// One lane of a transport: its own capped hyper client and its transport's counters.
/// As the SDK's HTTP client ([`Lane::http_client`]) or the lean client's way in
/// ([`Lane::send`]), every request it is given goes out on this lane's connections.
/// Cheap to clone (an `Arc`).
#[derive(Clone)]
pub struct Lane {
    pub(super) inner: Arc<LaneInner>,
}

pub(super) struct LaneInner {
    pub(super) index: usize,
    pub(super) client: HyperClient<LimitedConnector, SdkBody>,
    pub(super) counters: Arc<Counters>,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane").field("index", &self.inner.index).finish()
    }
}

impl Lane {
    /// Lane `index` of a transport with `settings`, capped at `connections` per host.
    pub(super) fn build(
        index: usize,
        settings: &TransportSettings,
        connections: usize,
        trust: &Trust,
        counters: &Arc<Counters>,
    ) -> Lane {
        Lane {
            inner: Arc::new(LaneInner {
                index,
                client: client(settings, connections, trust, counters),
                counters: counters.clone(),
            }),
        }
    }

    /// Its index among its transport's lanes.
    pub fn index(&self) -> usize {
        self.inner.index
    }
}

/// The lanes' threads, started once; empty when one could not start (work is then
/// spawned on the caller's runtime).
pub(super) struct LaneThreads(Vec<LaneThread>);

/// A lane's thread: its runtime's handle, and the sender whose drop stops it.
struct LaneThread {
    handle: Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl LaneThreads {
    /// `lanes` threads, or none when one could not start.
    pub(super) fn start(lanes: usize) -> LaneThreads {
        let started: std::io::Result<Vec<LaneThread>> = (0..lanes).map(start).collect();
        LaneThreads(started.unwrap_or_else(|err| {
            tracing::warn!("transport: a lane's thread did not start ({err}); the sweep runs on its own runtime");
            Vec::new()
        }))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Spawns `work` into `set` on thread `i` (modulo the threads), or on the caller's
    /// runtime when there are none.
    pub(super) fn spawn<T: Send + 'static>(
        &self,
        set: &mut tokio::task::JoinSet<T>,
        i: usize,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) {
        match self.0.as_slice() {
            [] => set.spawn(work),
            threads => set.spawn_on(work, &threads[i % threads.len()].handle),
        };
    }

    /// The runtimes' busy time and their threads, when there are any.
    pub(super) fn busy(&self) -> Option<(Duration, u32)> {
        if self.0.is_empty() {
            return None;
        }
        let busy = self
            .0
            .iter()
            .map(|t| t.handle.metrics().worker_total_busy_duration(0))
            .sum();
        Some((busy, self.0.len() as u32))
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

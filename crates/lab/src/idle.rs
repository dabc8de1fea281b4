//! Idle keep-alive connections closed as S3 closes them: a connection with no request
//! in flight for the idle timeout (S3: about 20 s, as several SDKs' maintainers report)
//! is closed between requests, cleanly (hyper's graceful shutdown of an idle HTTP/1.1
//! connection: no response cut, a FIN), and the close is counted.
//!
//! [`Activity`] is one connection's state: requests in flight (from the moment the
//! service is called until hyper drops the response body, i.e. has written it) and
//! when the last one ended. [`serve`] runs a connection and watches it.

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::server::conn::http1::Connection;
use s3s::Body;
use tokio::time::Instant;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// S3's idle timeout for keep-alive connections, as reported: 20 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// One connection's requests in flight and when the last ended.
#[derive(Debug)]
pub(crate) struct Activity {
    in_flight: AtomicU32,
    last_end: Mutex<Instant>,
    /// Requests answered so far.
    answered: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Activity {
            in_flight: AtomicU32::new(0),
            last_end: Mutex::new(Instant::now()),
            answered: AtomicU64::new(0),
        })
    }

    /// A request starts; it ends when the guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    /// When the connection became idle, or `None` while a request is in flight.
    fn idle_since(&self) -> Option<Instant> {
        let last = *self.last_end.lock().unwrap_or_else(|e| e.into_inner());
        (self.in_flight.load(Ordering::Acquire) == 0).then_some(last)
    }

    /// When a kept-alive connection became idle after answering at least one request,
    /// or `None` (a request in flight, or none sent yet: that wait is bounded by the
    /// header read timeout).
    pub(crate) fn kept_alive_since(&self) -> Option<Instant> {
        if self.answered.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.idle_since()
    }
}

/// A request in flight: ends when dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.0.last_end.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.answered.fetch_add(1, Ordering::AcqRel);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request in flight until hyper has written it.
struct TrackedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `resp` with its body holding `in_flight` until written.
pub(crate) fn track(mut resp: http::Response<Body>, in_flight: InFlight) -> http::Response<Body> {
    let inner = std::mem::take(resp.body_mut());
    *resp.body_mut() = Body::http_body_unsync(TrackedBody {
        inner,
        _in_flight: in_flight,
    });
    resp
}

/// Serves `conn` to its end; with a `timeout`, closes it once it has been idle that
/// long (counted in `closes`); closes it gracefully (the response in flight, if one
/// raced in, still written) once `evicted` is notified (`fair`).
pub(crate) async fn serve<I, S, B>(
    conn: Connection<I, S>,
    activity: Arc<Activity>,
    timeout: Option<Duration>,
    closes: &AtomicU64,
    evicted: &tokio::sync::Notify,
) -> hyper::Result<()>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: HttpBody + 'static,
    B::Error: Into<BoxError>,
{
    tokio::pin!(conn);
    let Some(timeout) = timeout else {
        tokio::select! {
            done = conn.as_mut() => return done,
            _ = evicted.notified() => {}
        }
        conn.as_mut().graceful_shutdown();
        return conn.await;
    };
    loop {
        let now = Instant::now();
        let check_at = match activity.idle_since() {
            Some(since) if now.saturating_duration_since(since) >= timeout => {
                closes.fetch_add(1, Ordering::Relaxed);
                conn.as_mut().graceful_shutdown();
                return conn.await;
            }
            Some(since) => since + timeout,
            None => now + timeout,
        };
        tokio::select! {
            done = conn.as_mut() => return done,
            _ = evicted.notified() => {
                conn.as_mut().graceful_shutdown();
                return conn.await;
            }
            _ = tokio::time::sleep_until(check_at) => {}
        }
    }
}

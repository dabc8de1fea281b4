//! The transport's counters: the monotonic ones the engine snapshots between
//! configurations ([`TransportCounters`]: connections, requests, retries counted where
//! they are sent, sessions), the atomics behind them, the bytes the transport has read
//! from its connections ([`super::Transport::rx_bytes`]), which a configuration samples
//! at its timeline's interval edges, and the requests in flight with their peak
//! ([`InFlight`]: from the hand-over to the end of the response body).

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Monotonic counters of the transport. Take two snapshots and subtract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportCounters {
    /// TCP (and TLS) connections successfully opened.
    pub connections_opened: u64,
    /// Connection attempts that failed or timed out.
    pub connections_failed: u64,
    /// Total time spent establishing connections (TCP and TLS), in nanoseconds.
    pub connect_ns: u64,
    /// TLS handshakes completed (one per HTTPS connection opened).
    pub tls_handshakes: u64,
    /// The part of `connect_ns` spent in TLS handshakes, in nanoseconds.
    pub tls_handshake_ns: u64,
    /// HTTP requests sent other than S3 Express `CreateSession` (each retry counts).
    pub requests_sent: u64,
    /// Retries among them: attempts sent after an attempt of the same request ended
    /// (counted where they are sent; a hedge is a request of its own, not a retry).
    pub retries: u64,
    /// S3 Express `CreateSession` calls sent.
    pub session_requests: u64,
    /// 503 / 429 answers to requests other than `CreateSession`.
    pub throttled_responses: u64,
}

impl TransportCounters {
    /// Counters accumulated since `earlier`.
    pub fn since(&self, earlier: &TransportCounters) -> TransportCounters {
        TransportCounters {
            connections_opened: self.connections_opened - earlier.connections_opened,
            connections_failed: self.connections_failed - earlier.connections_failed,
            connect_ns: self.connect_ns - earlier.connect_ns,
            tls_handshakes: self.tls_handshakes - earlier.tls_handshakes,
            tls_handshake_ns: self.tls_handshake_ns - earlier.tls_handshake_ns,
            requests_sent: self.requests_sent - earlier.requests_sent,
            retries: self.retries - earlier.retries,
            session_requests: self.session_requests - earlier.session_requests,
            throttled_responses: self.throttled_responses - earlier.throttled_responses,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(super) connections_opened: AtomicU64,
    pub(super) connections_failed: AtomicU64,
    pub(super) connect_ns: AtomicU64,
    pub(super) tls_handshakes: AtomicU64,
    pub(super) tls_handshake_ns: AtomicU64,
    pub(super) requests_sent: AtomicU64,
    pub(super) retries: AtomicU64,
    pub(super) session_requests: AtomicU64,
    pub(super) throttled_responses: AtomicU64,
    pub(super) connections_open: AtomicI64,
    /// Bytes read from the pool's connections (responses: headers, bodies and HTTP
    /// framing; under TLS, the decrypted bytes), a relaxed add per read.
    pub(super) rx_bytes: AtomicU64,
    /// Requests handed over and not yet ended (a gauge), and its highest value since
    /// it was last taken ([`Counters::take_in_flight_peak`]).
    pub(super) requests_in_flight: AtomicU64,
    pub(super) requests_in_flight_peak: AtomicU64,
}

impl Counters {
    /// The most requests in flight at once since the last call (or since the start),
    /// and from now the count: the peak starts again from the requests in flight now.
    pub(super) fn take_in_flight_peak(&self) -> u64 {
        let now = self.requests_in_flight.load(Ordering::Relaxed);
        self.requests_in_flight_peak.swap(now, Ordering::Relaxed).max(now)
    }
}

/// One request in flight: counted from its hand-over until it is dropped, which is
/// when its attempt ends without a response, or else with its response body (read to
/// its end, or cancelled): the time it holds a connection, or waits for one.
pub(crate) struct InFlight {
    counters: Arc<Counters>,
}

impl InFlight {
    pub(crate) fn enter(counters: &Arc<Counters>) -> InFlight {
        let now = counters.requests_in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        counters.requests_in_flight_peak.fetch_max(now, Ordering::Relaxed);
        InFlight {
            counters: counters.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.counters.requests_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request [`InFlight`] until the body is dropped.
pub(crate) struct HeldBody<B> {
    inner: B,
    _in_flight: InFlight,
}

impl<B> HeldBody<B> {
    pub(crate) fn new(inner: B, in_flight: InFlight) -> Self {
        HeldBody {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl<B: http_body::Body + Unpin> http_body::Body for HeldBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_subtract() {
        let a = TransportCounters {
            connections_opened: 2,
            connections_failed: 0,
            connect_ns: 10,
            tls_handshakes: 2,
            tls_handshake_ns: 6,
            requests_sent: 5,
            retries: 1,
            session_requests: 1,
            throttled_responses: 1,
        };
        let b = TransportCounters {
            connections_opened: 5,
            connections_failed: 1,
            connect_ns: 30,
            tls_handshakes: 5,
            tls_handshake_ns: 20,
            requests_sent: 9,
            retries: 2,
            session_requests: 1,
            throttled_responses: 3,
        };
        let d = b.since(&a);
        assert_eq!(d.connections_opened, 3);
        assert_eq!(d.connections_failed, 1);
        assert_eq!(d.connect_ns, 20);
        assert_eq!(d.tls_handshakes, 3);
        assert_eq!(d.tls_handshake_ns, 14);
        assert_eq!(d.requests_sent, 4);
        assert_eq!(d.retries, 1);
        assert_eq!(d.session_requests, 0);
        assert_eq!(d.throttled_responses, 2);
    }

    #[test]
    fn the_in_flight_peak_is_the_most_at_once_since_it_was_taken() {
        let counters = Arc::new(Counters::default());
        let a = InFlight::enter(&counters);
        let b = InFlight::enter(&counters);
        drop(InFlight::enter(&counters));
        drop(a);
        assert_eq!(counters.take_in_flight_peak(), 3);
        // Taken: the peak starts again from the one still in flight.
        assert_eq!(counters.take_in_flight_peak(), 1);
        let body = HeldBody::new(http_body_util::Empty::<bytes::Bytes>::new(), b);
        assert_eq!(
            counters.requests_in_flight.load(Ordering::Relaxed),
            1,
            "the body holds it"
        );
        drop(body);
        assert_eq!(counters.requests_in_flight.load(Ordering::Relaxed), 0);
        assert_eq!(counters.take_in_flight_peak(), 1);
        assert_eq!(counters.take_in_flight_peak(), 0);
    }
}

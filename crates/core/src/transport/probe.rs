//! What the transport did for one request ([`RequestProbe`], set by the caller around
//! the request's future as [`REQUEST_PROBE`]): the connections and S3 Express sessions
//! it opened, each attempt's stamps on the [`clock_ns`] clock, what ended each attempt
//! ([`Cause`]) and which were retried; taken as [`ColdWork`] when the request ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::model::{ErrorKind, RetryCauses};

use super::attempts::{self, Stamps};

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
    pub(super) connections: AtomicU64,
    pub(super) connect_ns: AtomicU64,
    pub(super) tls_handshakes: AtomicU64,
    pub(super) tls_ns: AtomicU64,
    pub(super) sessions: AtomicU64,
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
    pub(super) connection_id: AtomicU64,
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
    pub(super) fn of_status(status: u16) -> Option<Cause> {
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
    /// Each attempt's times and connection (the first [`super::MAX_STAMPED_ATTEMPTS`]).
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

    /// An attempt is handed to the transport at `sent`; true when it is a retry (it
    /// follows an attempt of the same request that ended with a cause).
    pub(super) fn handed_over(&self, sent: u64) -> bool {
        // Another attempt after one that ended: that one was retried.
        let before = self.last_cause.swap(0, Ordering::Relaxed);
        let retried = (before as usize).checked_sub(1).and_then(|i| self.retried.get(i));
        if let Some(n) = retried {
            n.fetch_add(1, Ordering::Relaxed);
        }
        self.attempts.fetch_add(1, Ordering::Relaxed);
        self.connection_id.store(0, Ordering::Relaxed);
        let start = self.attempt_start.load(Ordering::Relaxed);
        if start != 0 {
            self.prep_ns.fetch_add(sent.saturating_sub(start), Ordering::Relaxed);
        }
        retried.is_some()
    }

    /// The attempt handed over at `sent` ended at `end`; it had a connection from
    /// `conn` (if hyper gave it one), while this request's own connects took
    /// `connecting_ns`; `headers`: it got response headers at `end`.
    pub(super) fn attempt_ended(
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

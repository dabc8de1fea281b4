//! The per-configuration recorder: latency histograms (first byte at the wire, last
//! byte, the sweep's pool wait), the phase breakdown (cold requests apart from steady
//! ones; client preparation, the HTTP client's wait for a connection, connects and
//! backoff apart), counts and errors, plus the busy time of the async runtime.
//!
//! Each of the sweep's driver tasks owns one [`Shard`] and records into it without a
//! lock or a shared counter (each GET also as an event, for the timeline); the shards
//! are merged when the configuration ends.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::model::stats::{histogram_us, micros, round3};
use crate::model::{Breakdown, ErrorCounts, Percentiles, RetryCauses};
use crate::s3::get::Outcome;

use super::timeline::{AttemptEvent, GetEvent, HedgeEvent};

/// Busy time of the current tokio runtime's workers, summed, and their number. `None`
/// outside a runtime. Busy time is wall time between a worker waking and parking, so
/// a thread the OS preempted while it had work still counts as busy.
pub(crate) fn runtime_busy() -> Option<(Duration, u32)> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let metrics = handle.metrics();
    let n = metrics.num_workers();
    let busy = (0..n).map(|i| metrics.worker_total_busy_duration(i)).sum();
    Some((busy, n as u32))
}

/// The breakdown's histograms and counts for some of a configuration's requests
/// (one driver's, or the warm-up's); merged with [`PhaseShard::add`].
pub(crate) struct PhaseShard {
    steady_ttfb_us: Histogram<u64>,
    steady_body_us: Histogram<u64>,
    steady_ttlb_us: Histogram<u64>,
    cold_ttfb_us: Histogram<u64>,
    cold_ttlb_us: Histogram<u64>,
    connect_us: Histogram<u64>,
    tcp_connect_us: Histogram<u64>,
    tls_handshake_us: Histogram<u64>,
    client_prep_us: Histogram<u64>,
    http_pool_wait_us: Histogram<u64>,
    cold_requests: u64,
    connections: u64,
    tls_handshakes: u64,
    sessions: u64,
    attempts: u64,
    backoff_ns: u64,
}

impl PhaseShard {
    pub(crate) fn new() -> Self {
        let h = histogram_us;
        PhaseShard {
            steady_ttfb_us: h(),
            steady_body_us: h(),
            steady_ttlb_us: h(),
            cold_ttfb_us: h(),
            cold_ttlb_us: h(),
            connect_us: h(),
            tcp_connect_us: h(),
            tls_handshake_us: h(),
            client_prep_us: h(),
            http_pool_wait_us: h(),
            cold_requests: 0,
            connections: 0,
            tls_handshakes: 0,
            sessions: 0,
            attempts: 0,
            backoff_ns: 0,
        }
    }

    pub(crate) fn add(&mut self, other: &PhaseShard) {
        // Auto-resizing histograms of equal precision always merge.
        for (into, from) in [
            (&mut self.steady_ttfb_us, &other.steady_ttfb_us),
            (&mut self.steady_body_us, &other.steady_body_us),
            (&mut self.steady_ttlb_us, &other.steady_ttlb_us),
            (&mut self.cold_ttfb_us, &other.cold_ttfb_us),
            (&mut self.cold_ttlb_us, &other.cold_ttlb_us),
            (&mut self.connect_us, &other.connect_us),
            (&mut self.tcp_connect_us, &other.tcp_connect_us),
            (&mut self.tls_handshake_us, &other.tls_handshake_us),
            (&mut self.client_prep_us, &other.client_prep_us),
            (&mut self.http_pool_wait_us, &other.http_pool_wait_us),
        ] {
            let _ = into.add(from);
        }
        self.cold_requests += other.cold_requests;
        self.connections += other.connections;
        self.tls_handshakes += other.tls_handshakes;
        self.sessions += other.sessions;
        self.attempts += other.attempts;
        self.backoff_ns += other.backoff_ns;
    }

    /// Records one request (`outcome.cold` is what the transport did for it). Returns
    /// whether it was cold: it opened a connection or sent `CreateSession`.
    pub(crate) fn record(&mut self, outcome: &Outcome) -> bool {
        let ok = outcome.result.is_ok();
        let cold = &outcome.cold;
        let is_cold = cold.connections > 0 || cold.sessions > 0;
        if let Some(per_ns) = cold.connect_ns.checked_div(cold.connections) {
            let _ = self.connect_us.record_n(per_ns / 1000, cold.connections);
            let tcp_ns = cold.connect_ns.saturating_sub(cold.tls_ns) / cold.connections;
            let _ = self.tcp_connect_us.record_n(tcp_ns / 1000, cold.connections);
            self.connections += cold.connections;
        }
        if let Some(per_ns) = cold.tls_ns.checked_div(cold.tls_handshakes) {
            let _ = self.tls_handshake_us.record_n(per_ns / 1000, cold.tls_handshakes);
            self.tls_handshakes += cold.tls_handshakes;
        }
        self.sessions += cold.sessions;
        if cold.attempts > 0 {
            let _ = self.client_prep_us.record(cold.prep_ns / 1000);
            let _ = self.http_pool_wait_us.record(cold.pool_wait_ns / 1000);
        }
        self.attempts += cold.attempts;
        self.backoff_ns += cold.backoff_ns;
        let (ttfb, ttlb) = (outcome.ttfb, outcome.ttlb);
        if is_cold {
            self.cold_requests += 1;
            if ok {
                let _ = self.cold_ttfb_us.record(micros(ttfb));
                let _ = self.cold_ttlb_us.record(micros(ttlb));
            }
        } else if ok {
            let _ = self.steady_ttfb_us.record(micros(ttfb));
            let _ = self
                .steady_body_us
                .record(micros(ttlb.saturating_sub(outcome.headers_at)));
            let _ = self.steady_ttlb_us.record(micros(ttlb));
        }
        is_cold
    }

    /// The breakdown of everything recorded (all shards added into this one), with
    /// the configuration's first request: its time to last byte in ms and whether it
    /// was cold.
    pub(crate) fn breakdown(&self, first: Option<(f64, bool)>) -> Breakdown {
        Breakdown {
            steady_requests: self.steady_ttlb_us.len(),
            steady_ttfb_ms: Percentiles::from_histogram_us(&self.steady_ttfb_us),
            steady_body_ms: Percentiles::from_histogram_us(&self.steady_body_us),
            steady_ttlb_ms: Percentiles::from_histogram_us(&self.steady_ttlb_us),
            cold_requests: self.cold_requests,
            cold_ttfb_ms: Percentiles::from_histogram_us(&self.cold_ttfb_us),
            cold_ttlb_ms: Percentiles::from_histogram_us(&self.cold_ttlb_us),
            connections_opened: self.connections,
            connect_ms: Percentiles::from_histogram_us(&self.connect_us),
            tcp_connect_ms: Percentiles::from_histogram_us(&self.tcp_connect_us),
            tls_handshakes: self.tls_handshakes,
            tls_handshake_ms: Percentiles::from_histogram_us(&self.tls_handshake_us),
            session_requests: self.sessions,
            client_prep_ms: Percentiles::from_histogram_us(&self.client_prep_us),
            http_pool_wait_ms: Percentiles::from_histogram_us(&self.http_pool_wait_us),
            attempts: self.attempts,
            backoff_ms_total: round3(self.backoff_ns as f64 / 1e6),
            first_request_ttlb_ms: first.map(|f| round3(f.0)),
            first_request_cold: first.is_some_and(|f| f.1),
        }
    }
}

impl Default for PhaseShard {
    fn default() -> Self {
        Self::new()
    }
}

/// What one driver task recorded: histograms, the breakdown, counts and errors.
pub(crate) struct Shard {
    pub(crate) ttfb_us: Histogram<u64>,
    pub(crate) ttlb_us: Histogram<u64>,
    pub(crate) pool_wait_us: Histogram<u64>,
    phases: PhaseShard,
    /// The configuration's first request, if this shard ran it: time to last byte
    /// (ms) and whether it was cold.
    first: Option<(f64, bool)>,
    pub(crate) errors: ErrorCounts,
    pub(crate) error_samples: Vec<String>,
    pub(crate) ok: u64,
    pub(crate) bytes: u64,
    /// Retried attempts by what ended them.
    pub(crate) retry_causes: RetryCauses,
    /// Every GET of the timed phase, for the timeline and the request log.
    pub(crate) events: Vec<GetEvent>,
    /// The attempts of the GETs that were retried (each naming its GET's event).
    pub(crate) attempts: Vec<AttemptEvent>,
    /// The hedge copies sent (each naming its GET's event).
    pub(crate) hedges: Vec<HedgeEvent>,
}

impl Shard {
    pub(crate) fn new() -> Self {
        let h = histogram_us;
        Shard {
            ttfb_us: h(),
            ttlb_us: h(),
            pool_wait_us: h(),
            phases: PhaseShard::new(),
            first: None,
            errors: ErrorCounts::default(),
            error_samples: Vec::new(),
            ok: 0,
            bytes: 0,
            retry_causes: RetryCauses::default(),
            events: Vec::new(),
            attempts: Vec::new(),
            hedges: Vec::new(),
        }
    }

    /// Records one request; `first` whether it was the configuration's first.
    pub(crate) fn record(&mut self, outcome: &Outcome, first: bool) {
        let _ = self.pool_wait_us.record(micros(outcome.pool_wait));
        let is_cold = self.phases.record(outcome);
        self.retry_causes.add_all(&outcome.cold.retry_causes);
        if first {
            self.first = Some((outcome.ttlb.as_secs_f64() * 1000.0, is_cold));
        }
        match &outcome.result {
            Ok(bytes) => {
                let _ = self.ttfb_us.record(micros(outcome.ttfb));
                let _ = self.ttlb_us.record(micros(outcome.ttlb));
                self.ok += 1;
                self.bytes += bytes;
            }
            Err(failure) => {
                self.errors.add(failure.kind, 1);
                if self.error_samples.len() < 3 && !self.error_samples.contains(&failure.message) {
                    self.error_samples.push(failure.message.clone());
                }
            }
        }
    }

    /// Adds another driver's shard into this one.
    pub(crate) fn add(&mut self, other: Shard) {
        // Auto-resizing histograms with equal precision always merge.
        let _ = self.ttfb_us.add(&other.ttfb_us);
        let _ = self.ttlb_us.add(&other.ttlb_us);
        let _ = self.pool_wait_us.add(&other.pool_wait_us);
        self.phases.add(&other.phases);
        self.first = self.first.or(other.first);
        self.errors.add_all(&other.errors);
        for s in other.error_samples {
            if self.error_samples.len() < 3 && !self.error_samples.contains(&s) {
                self.error_samples.push(s);
            }
        }
        self.ok += other.ok;
        self.bytes += other.bytes;
        self.retry_causes.add_all(&other.retry_causes);
        let base = u32::try_from(self.events.len()).unwrap_or(u32::MAX);
        self.attempts.extend(
            other
                .attempts
                .into_iter()
                .map(|a| AttemptEvent { get: a.get + base, ..a }),
        );
        self.hedges
            .extend(other.hedges.into_iter().map(|h| HedgeEvent { get: h.get + base, ..h }));
        self.events.extend(other.events);
    }

    /// The breakdown of the requests recorded here.
    pub(crate) fn breakdown(&self) -> Breakdown {
        self.phases.breakdown(self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ErrorKind;
    use crate::s3::errors::Failure;
    use crate::transport::ColdWork;

    fn outcome(ok: bool, ttfb_ms: u64, ttlb_ms: u64, cold: ColdWork) -> Outcome {
        let ms = Duration::from_millis;
        Outcome {
            pool_wait: Duration::ZERO,
            ttfb: ms(ttfb_ms),
            headers_at: ms(ttfb_ms),
            ttlb: ms(ttlb_ms),
            result: if ok {
                Ok(100)
            } else {
                Err(Failure::new(ErrorKind::Connection, "reset".to_string()))
            },
            cold,
        }
    }

    #[test]
    fn shards_keep_cold_apart_and_merge() {
        let mut shards = [Shard::new(), Shard::new()];
        let cold = ColdWork {
            connections: 1,
            connect_ns: 3_000_000,
            tls_handshakes: 1,
            tls_ns: 2_000_000,
            attempts: 1,
            prep_ns: 40_000,
            pool_wait_ns: 500_000,
            ..Default::default()
        };
        shards[0].record(&outcome(true, 20, 25, cold), true);
        let warm = ColdWork {
            attempts: 1,
            prep_ns: 30_000,
            ..Default::default()
        };
        for i in 0..10 {
            shards[i % 2].record(&outcome(true, 5, 6, warm), false);
        }
        let retried = ColdWork {
            attempts: 3,
            prep_ns: 90_000,
            backoff_ns: 75_000_000,
            ..Default::default()
        };
        shards[1].record(&outcome(false, 1, 1, retried), false);
        let [mut all, other] = shards;
        all.add(other);
        let b = all.breakdown();
        assert_eq!((all.ok, all.errors.total, all.bytes), (11, 1, 1100));
        assert_eq!(b.steady_requests, 10);
        assert_eq!(b.cold_requests, 1);
        assert_eq!(b.connections_opened, 1);
        assert!((b.connect_ms.p50 - 3.0).abs() < 0.01, "{b:?}");
        assert!((b.tcp_connect_ms.p50 - 1.0).abs() < 0.01, "{b:?}");
        assert_eq!(b.tls_handshakes, 1);
        assert!((b.tls_handshake_ms.p50 - 2.0).abs() < 0.01, "{b:?}");
        assert!((b.steady_ttlb_ms.p50 - 6.0).abs() < 0.01, "{b:?}");
        assert!((b.steady_body_ms.p50 - 1.0).abs() < 0.01, "{b:?}");
        assert!((b.cold_ttlb_ms.p50 - 25.0).abs() < 0.05, "{b:?}");
        assert!((b.client_prep_ms.p50 - 0.03).abs() < 0.001, "{b:?}");
        assert!((b.client_prep_ms.max - 0.09).abs() < 0.001, "{b:?}");
        assert!((b.http_pool_wait_ms.max - 0.5).abs() < 0.001, "{b:?}");
        assert_eq!(b.attempts, 14);
        assert_eq!(b.backoff_ms_total, 75.0);
        assert_eq!(b.first_request_ttlb_ms, Some(25.0));
        assert!(b.first_request_cold);
    }
}

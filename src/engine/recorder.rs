//! The per-configuration recorder: latency histograms (first byte, last byte, pool
//! wait) and the phase breakdown (cold requests apart from steady ones), sharded so
//! workers rarely contend for a lock, plus the busy time of the async runtime. One
//! lock per request records everything; shards are merged when the configuration
//! ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::model::stats::{histogram_us, micros, round3};
use crate::model::{Breakdown, ErrorCounts, Percentiles};
use crate::s3::get::Outcome;
use crate::transport::ColdWork;

/// Busy time of the current tokio runtime's workers, summed, and their number. `None`
/// outside a runtime. Busy time is wall time between a worker waking and parking, so
/// a thread the OS preempted while it had work still counts as busy.
pub fn runtime_busy() -> Option<(Duration, u32)> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let metrics = handle.metrics();
    let n = metrics.num_workers();
    let busy = (0..n).map(|i| metrics.worker_total_busy_duration(i)).sum();
    Some((busy, n as u32))
}

/// The breakdown's histograms and counts for one shard of a configuration's workers.
/// The engine keeps one inside each of its own latency shards, so a request takes one
/// lock for both, and merges them with [`PhaseShard::add`] at the end.
pub struct PhaseShard {
    steady_ttfb_us: Histogram<u64>,
    steady_body_us: Histogram<u64>,
    steady_ttlb_us: Histogram<u64>,
    cold_ttfb_us: Histogram<u64>,
    cold_ttlb_us: Histogram<u64>,
    connect_us: Histogram<u64>,
    tcp_connect_us: Histogram<u64>,
    tls_handshake_us: Histogram<u64>,
    cold_requests: u64,
    connections: u64,
    tls_handshakes: u64,
    sessions: u64,
}

impl PhaseShard {
    pub fn new() -> Self {
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
            cold_requests: 0,
            connections: 0,
            tls_handshakes: 0,
            sessions: 0,
        }
    }

    pub fn add(&mut self, other: &PhaseShard) {
        // Auto-resizing histograms of equal precision always merge.
        let _ = self.steady_ttfb_us.add(&other.steady_ttfb_us);
        let _ = self.steady_body_us.add(&other.steady_body_us);
        let _ = self.steady_ttlb_us.add(&other.steady_ttlb_us);
        let _ = self.cold_ttfb_us.add(&other.cold_ttfb_us);
        let _ = self.cold_ttlb_us.add(&other.cold_ttlb_us);
        let _ = self.connect_us.add(&other.connect_us);
        let _ = self.tcp_connect_us.add(&other.tcp_connect_us);
        let _ = self.tls_handshake_us.add(&other.tls_handshake_us);
        self.cold_requests += other.cold_requests;
        self.connections += other.connections;
        self.tls_handshakes += other.tls_handshakes;
        self.sessions += other.sessions;
    }
    /// Records one request: `ok` whether it succeeded, its TTFB and TTLB, and what the
    /// transport did for it (`cold`). Returns whether it was cold.
    pub fn record(&mut self, ok: bool, ttfb: Duration, ttlb: Duration, cold: ColdWork) -> bool {
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
        if is_cold {
            self.cold_requests += 1;
            if ok {
                let _ = self.cold_ttfb_us.record(micros(ttfb));
                let _ = self.cold_ttlb_us.record(micros(ttlb));
            }
        } else if ok {
            let _ = self.steady_ttfb_us.record(micros(ttfb));
            let _ = self.steady_body_us.record(micros(ttlb.saturating_sub(ttfb)));
            let _ = self.steady_ttlb_us.record(micros(ttlb));
        }
        is_cold
    }

    /// The breakdown of everything recorded (all shards added into this one), with
    /// the configuration's first request: its time to last byte in ms and whether it
    /// was cold.
    pub fn breakdown(&self, first: Option<(f64, bool)>) -> Breakdown {
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

/// Latency histograms and the diagnosis breakdown, sharded so workers rarely contend
/// for a lock; one lock per request records both.
pub(crate) struct Recorder {
    shards: Vec<Mutex<Shard>>,
    /// The configuration's first request: time to last byte (ms) and whether it was cold.
    first: Mutex<Option<(f64, bool)>>,
    pub(crate) errors: Mutex<(ErrorCounts, Vec<String>)>,
    pub(crate) ok: AtomicU64,
    pub(crate) bytes: AtomicU64,
}

struct Shard {
    ttfb_us: Histogram<u64>,
    ttlb_us: Histogram<u64>,
    pool_wait_us: Histogram<u64>,
    phases: PhaseShard,
}

impl Shard {
    fn new() -> Self {
        let h = histogram_us;
        Shard {
            ttfb_us: h(),
            ttlb_us: h(),
            pool_wait_us: h(),
            phases: PhaseShard::new(),
        }
    }
}

impl Recorder {
    pub(crate) fn new(shards: usize) -> Self {
        Recorder {
            shards: (0..shards.max(1)).map(|_| Mutex::new(Shard::new())).collect(),
            first: Mutex::new(None),
            errors: Mutex::new((ErrorCounts::default(), Vec::new())),
            ok: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Records one request; `cold` is what the transport did for it, `first` whether it
    /// was the configuration's first.
    pub(crate) fn record(&self, shard: usize, outcome: &Outcome, cold: ColdWork, first: bool) {
        let ok = outcome.result.is_ok();
        let is_cold = {
            let mut s = self.shards[shard % self.shards.len()]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            s.pool_wait_us.record(micros(outcome.pool_wait)).ok();
            if ok {
                s.ttfb_us.record(micros(outcome.ttfb)).ok();
                s.ttlb_us.record(micros(outcome.ttlb)).ok();
            }
            s.phases.record(ok, outcome.ttfb, outcome.ttlb, cold)
        };
        if first {
            *self.first.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((outcome.ttlb.as_secs_f64() * 1000.0, is_cold));
        }
        match &outcome.result {
            Ok(bytes) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
                self.bytes.fetch_add(*bytes, Ordering::Relaxed);
            }
            Err(failure) => {
                let mut e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
                e.0.add(failure.kind, 1);
                if e.1.len() < 3 && !e.1.contains(&failure.message) {
                    e.1.push(failure.message.clone());
                }
            }
        }
    }

    /// Every shard merged: TTFB, TTLB and pool-wait histograms, and the breakdown.
    pub(crate) fn merged(&self) -> (Histogram<u64>, Histogram<u64>, Histogram<u64>, Breakdown) {
        let mut it = self.shards.iter().map(|s| s.lock().unwrap_or_else(|e| e.into_inner()));
        let first = it.next().expect("at least one shard");
        let (mut a, mut b, mut c) = (first.ttfb_us.clone(), first.ttlb_us.clone(), first.pool_wait_us.clone());
        let mut phases = PhaseShard::new();
        phases.add(&first.phases);
        drop(first);
        for s in it {
            // Auto-resizing histograms with equal precision always merge.
            let _ = a.add(&s.ttfb_us);
            let _ = b.add(&s.ttlb_us);
            let _ = c.add(&s.pool_wait_us);
            phases.add(&s.phases);
        }
        let breakdown = phases.breakdown(*self.first.lock().unwrap_or_else(|e| e.into_inner()));
        (a, b, c, breakdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ColdWork;

    #[test]
    fn phase_shards_keep_cold_apart() {
        let mut shards = [PhaseShard::new(), PhaseShard::new()];
        let ms = Duration::from_millis;
        let cold = ColdWork {
            connections: 1,
            connect_ns: 3_000_000,
            tls_handshakes: 1,
            tls_ns: 2_000_000,
            sessions: 0,
        };
        let first_cold = shards[0].record(true, ms(20), ms(25), cold);
        for i in 0..10 {
            shards[i % 2].record(true, ms(5), ms(6), ColdWork::default());
        }
        shards[1].record(false, ms(1), ms(1), ColdWork::default());
        let [mut all, other] = shards;
        all.add(&other);
        let b = all.breakdown(Some((25.0, first_cold)));
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
        assert_eq!(b.first_request_ttlb_ms, Some(25.0));
        assert!(b.first_request_cold);
    }
}

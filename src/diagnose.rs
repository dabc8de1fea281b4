//! Diagnosis: why each configuration ran as fast as it did, and what the curve of each
//! bucket says about higher concurrency or more CPU.
//!
//! It owns four things:
//! - the per-request **breakdown** ([`Breakdown`], recorded in [`PhaseShard`]s while
//!   the engine runs): pool wait, time to first byte and body transfer of steady-state
//!   requests, kept apart from **cold** requests (those that opened a TCP/TLS connection
//!   or sent an S3 Express `CreateSession`), plus the time each new connection took;
//! - the **client side** of a configuration ([`ClientSide`]): CPU per GET, cores busy,
//!   how busy the async runtime's threads were, peak RSS, and the mean number of
//!   requests actually in flight by Little's law;
//! - the **verdict** per configuration ([`Diagnosis`]): one of `latency`, `client_cpu`,
//!   `pool`, `bandwidth`, `throttled`, `errors`, with the figures that decided it and a
//!   plain-words explanation. The rules and thresholds are in [`Thresholds`];
//! - the **curve analysis** per bucket ([`CurveAnalysis`]): the knee
//!   ([`crate::report::knee`]), a recommended worker count, a fit of the model
//!   `X = min(C / R, P / c, B / S)` (latency per request R, serial client cost c on P
//!   cores, bandwidth B, object size S), its predictions for 10x more workers and for
//!   6 vCPUs, and a bucket-vs-bucket comparison ([`BucketComparison`]).
//!
//! [`annotate`] fills the verdicts and the analysis into a finished
//! [`SweepResult`]; [`render`] writes the human-readable lines under each table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::client::ColdWork;
use crate::report::{knee, micros, round3, ConfigResult, Percentiles, SweepResult};

/// Errors of this module: only invalid thresholds can go wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiagnoseError {
    #[error("invalid thresholds: {0}")]
    InvalidThresholds(String),
}

// ---------------------------------------------------------------------------------
// Breakdown: recorded per request by the engine.
// ---------------------------------------------------------------------------------

/// Where the time of one configuration's requests went, cold and steady apart.
/// All durations in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Successful requests that reused an open connection and sent no `CreateSession`.
    pub steady_requests: u64,
    /// Request issued to response headers, steady requests only.
    pub steady_ttfb_ms: Percentiles,
    /// Body transfer (last byte minus first byte), steady requests only.
    pub steady_body_ms: Percentiles,
    /// Request issued to last body byte, steady requests only.
    pub steady_ttlb_ms: Percentiles,
    /// Requests (ok or failed) that opened a connection or sent `CreateSession`.
    pub cold_requests: u64,
    /// Time to first byte of successful cold requests (includes the connect).
    pub cold_ttfb_ms: Percentiles,
    /// Time to last byte of successful cold requests.
    pub cold_ttlb_ms: Percentiles,
    /// Connections opened by the timed requests (warm-up excluded).
    pub connections_opened: u64,
    /// Time to open one connection (TCP, and TLS for HTTPS), per connection.
    pub connect_ms: Percentiles,
    /// S3 Express `CreateSession` calls sent by the timed requests.
    pub session_requests: u64,
    /// Time to last byte of the first request issued in the configuration.
    pub first_request_ttlb_ms: Option<f64>,
    /// Whether that first request was cold.
    pub first_request_cold: bool,
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
    cold_requests: u64,
    connections: u64,
    sessions: u64,
}

impl PhaseShard {
    pub fn new() -> Self {
        let h = || Histogram::<u64>::new(3).expect("3 significant figures is valid");
        PhaseShard {
            steady_ttfb_us: h(),
            steady_body_us: h(),
            steady_ttlb_us: h(),
            cold_ttfb_us: h(),
            cold_ttlb_us: h(),
            connect_us: h(),
            cold_requests: 0,
            connections: 0,
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
        self.cold_requests += other.cold_requests;
        self.connections += other.connections;
        self.sessions += other.sessions;
    }
    /// Records one request: `ok` whether it succeeded, its TTFB and TTLB, and what the
    /// transport did for it (`cold`). Returns whether it was cold.
    pub fn record(&mut self, ok: bool, ttfb: Duration, ttlb: Duration, cold: ColdWork) -> bool {
        let is_cold = cold.connections > 0 || cold.sessions > 0;
        if let Some(per_ns) = cold.connect_ns.checked_div(cold.connections) {
            let _ = self.connect_us.record_n(per_ns / 1000, cold.connections);
            self.connections += cold.connections;
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

// ---------------------------------------------------------------------------------
// Client side.
// ---------------------------------------------------------------------------------

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

/// What the client itself did during one configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSide {
    /// vCPUs the process could run on.
    pub vcpus: u32,
    /// Worker threads of the async runtime that ran the requests.
    pub runtime_worker_threads: u32,
    /// Cores the client can use at once: the smaller of the two above (the model's P).
    pub client_cores: f64,
    /// Process CPU time (all threads) divided by wall time.
    pub cores_busy: f64,
    /// Busy time of the runtime's workers over (wall time x workers): 1.0 means the
    /// runtime never had a moment without work.
    pub runtime_busy_ratio: f64,
    /// `cpu_ms_per_get` restated for this block.
    pub cpu_ms_per_get: f64,
    /// Peak resident memory of the process so far, in bytes.
    pub peak_rss_bytes: u64,
    /// Little's law: successful GETs per second x their mean time to last byte.
    pub mean_in_flight: f64,
    /// `mean_in_flight` over the requests the engine could have in flight
    /// ([`possible_in_flight`]).
    pub in_flight_ratio: f64,
}

/// Raw client measurements of one configuration, taken by the engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientMeasure {
    pub runtime_busy: Duration,
    pub runtime_worker_threads: u32,
    pub vcpus: u32,
    pub peak_rss_bytes: u64,
}

/// Requests the engine could keep in flight on average: `min(workers, pool)`, less the
/// last round that runs part empty (N requests in rounds of W average N / ceil(N / W)).
pub fn possible_in_flight(row: &ConfigResult) -> f64 {
    let w = u64::from(row.workers.min(row.pool_connections)).max(1);
    let n = row.requests.max(1);
    n as f64 / n.div_ceil(w) as f64
}

/// The client side of a finished row.
pub fn client_side(row: &ConfigResult, m: ClientMeasure) -> ClientSide {
    let wall_ms = row.wall_ms.max(1e-6);
    let threads = m.runtime_worker_threads.max(1);
    let vcpus = m.vcpus.max(1);
    let mean_in_flight = row.objects_per_s * row.ttlb_ms.mean / 1000.0;
    let possible = possible_in_flight(row);
    ClientSide {
        vcpus,
        runtime_worker_threads: threads,
        client_cores: f64::from(vcpus.min(threads)),
        cores_busy: round3(row.cpu_ms / wall_ms),
        runtime_busy_ratio: round3((m.runtime_busy.as_secs_f64() * 1000.0 / (wall_ms * f64::from(threads))).min(1.0)),
        cpu_ms_per_get: row.cpu_ms_per_get,
        peak_rss_bytes: m.peak_rss_bytes,
        mean_in_flight: round3(mean_in_flight),
        in_flight_ratio: round3(mean_in_flight / possible),
    }
}

// ---------------------------------------------------------------------------------
// Verdicts.
// ---------------------------------------------------------------------------------

/// What bound a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Throughput is requests in flight over latency: more workers would help.
    Latency,
    /// The client's CPU is saturated: cores busy near the vCPUs, or the runtime never idle.
    ClientCpu,
    /// Requests spent a large share of their time waiting for a pooled connection.
    Pool,
    /// MiB/s near the configured bandwidth ceiling.
    Bandwidth,
    /// 503 SlowDown / 429 or retries.
    Throttled,
    /// Too many requests failed for the timings to mean much.
    Errors,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Latency => "latency",
            Verdict::ClientCpu => "client_cpu",
            Verdict::Pool => "pool",
            Verdict::Bandwidth => "bandwidth",
            Verdict::Throttled => "throttled",
            Verdict::Errors => "errors",
        }
    }
}

/// The thresholds of the verdict rules. The rules are checked in this order and the
/// first that holds wins:
///
/// 1. `throttled`: throttled requests (503 SlowDown, 429) plus retries are at least
///    `throttled_share` of requests (and at least one).
/// 2. `errors`: failed requests are at least `error_share` of requests.
/// 3. `bandwidth`: a bandwidth ceiling is known and MiB/s is at least
///    `bandwidth_share` of it.
/// 4. `client_cpu`: process CPU time / wall time is at least `cpu_busy_share` of the
///    cores the client can use (min(vCPUs, runtime threads)), or the runtime's worker
///    threads were busy at least `cpu_busy_share` of the wall time.
/// 5. `pool`: the mean wait for a pooled connection is at least `pool_wait_share` of a
///    request's mean total time (pool wait + time to last byte).
/// 6. `latency`: otherwise. Throughput is what the requests in flight allow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Default 0.005 (0.5% of requests).
    pub throttled_share: f64,
    /// Default 0.01 (1% of requests).
    pub error_share: f64,
    /// Default 0.8 (80% of the ceiling).
    pub bandwidth_share: f64,
    /// Default 0.85 (85% of the usable cores, or of the runtime's wall time).
    pub cpu_busy_share: f64,
    /// Default 0.2 (a fifth of a request's time spent waiting for a connection).
    pub pool_wait_share: f64,
    /// Known network ceiling in MiB/s (measured or configured); `None`: unknown, and
    /// the `bandwidth` verdict is never given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_ceiling_mib_per_s: Option<f64>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            throttled_share: 0.005,
            error_share: 0.01,
            bandwidth_share: 0.8,
            cpu_busy_share: 0.85,
            pool_wait_share: 0.2,
            bandwidth_ceiling_mib_per_s: None,
        }
    }
}

impl Thresholds {
    /// Checks every value, naming each bad one.
    pub fn validate(&self) -> Result<(), DiagnoseError> {
        let mut bad = Vec::new();
        for (name, v) in [
            ("throttled_share", self.throttled_share),
            ("error_share", self.error_share),
            ("bandwidth_share", self.bandwidth_share),
            ("cpu_busy_share", self.cpu_busy_share),
            ("pool_wait_share", self.pool_wait_share),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                bad.push(format!("{name} must be in (0, 1], got {v}"));
            }
        }
        if let Some(b) = self.bandwidth_ceiling_mib_per_s {
            if !(b.is_finite() && b > 0.0) {
                bad.push(format!("bandwidth_ceiling_mib_per_s must be positive, got {b}"));
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(DiagnoseError::InvalidThresholds(bad.join("; ")))
        }
    }
}

/// The verdict of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub verdict: Verdict,
    /// The figures the rule looked at, by name (units in the names).
    pub figures: BTreeMap<String, f64>,
    /// One line in plain words.
    pub explanation: String,
    /// Further findings: cold costs, a suspected delayed-ACK stall, idle workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A `client_cpu` verdict whose cores busy are below this share of the CPU threshold
/// (with the runtime busy) is a client starved of CPU rather than one using it all.
pub const STARVED_SHARE: f64 = 0.5;

/// One-worker latency in this window suggests the 40 ms delayed-ACK stall.
pub const DELAYED_ACK_WINDOW_MS: (f64, f64) = (38.0, 50.0);

/// The verdict of one row. Uses `row.client` when the engine measured it; without it
/// the CPU rule can only look at `cpu_ms` and `vcpus`.
pub fn diagnose_row(row: &ConfigResult, vcpus: u32, t: &Thresholds) -> Diagnosis {
    let requests = row.requests.max(1) as f64;
    let client = row.client.clone().unwrap_or_else(|| {
        client_side(
            row,
            ClientMeasure {
                vcpus,
                runtime_worker_threads: vcpus,
                ..ClientMeasure::default()
            },
        )
    });
    let mut figures = BTreeMap::new();
    let mut fig = |k: &str, v: f64| {
        figures.insert(k.to_string(), round3(v));
    };
    let throttled = row.errors.throttled + row.retries;
    let throttled_share = throttled as f64 / requests;
    let error_share = row.errors.total as f64 / requests;
    let latency_ms = row.ttlb_ms.mean;
    let pool_wait_ms = row.pool_wait_ms.mean;
    let pool_share = if pool_wait_ms + latency_ms > 0.0 {
        pool_wait_ms / (pool_wait_ms + latency_ms)
    } else {
        0.0
    };
    let cores = client.client_cores.max(1.0);
    let cpu_share = client.cores_busy / cores;
    let busy_share = client.runtime_busy_ratio;

    let (verdict, explanation) = if throttled > 0 && throttled_share >= t.throttled_share {
        fig("throttled_requests", row.errors.throttled as f64);
        fig("retries", row.retries as f64);
        fig("throttled_share", throttled_share);
        (
            Verdict::Throttled,
            format!(
                "S3 pushed back: {} throttled responses and {} retries in {} requests; more workers will not help until it scales (spread keys over prefixes, ramp up slowly)",
                row.errors.throttled, row.retries, row.requests
            ),
        )
    } else if row.errors.total > 0 && error_share >= t.error_share {
        fig("errors", row.errors.total as f64);
        fig("error_share", error_share);
        (
            Verdict::Errors,
            format!(
                "{} of {} requests failed ({}): the timings describe failures, fix them first",
                row.errors.total,
                row.requests,
                row.errors.short()
            ),
        )
    } else if let Some(ceiling) = t
        .bandwidth_ceiling_mib_per_s
        .filter(|c| row.mib_per_s >= t.bandwidth_share * c)
    {
        fig("mib_per_s", row.mib_per_s);
        fig("bandwidth_ceiling_mib_per_s", ceiling);
        (
            Verdict::Bandwidth,
            format!(
                "{:.0} MiB/s is {:.0}% of the {:.0} MiB/s network ceiling: more requests in flight only share the same pipe",
                row.mib_per_s,
                100.0 * row.mib_per_s / ceiling,
                ceiling
            ),
        )
    } else if cpu_share >= t.cpu_busy_share || busy_share >= t.cpu_busy_share {
        fig("cores_busy", client.cores_busy);
        fig("client_cores", cores);
        fig("runtime_busy_ratio", busy_share);
        fig("cpu_ms_per_get", row.cpu_ms_per_get);
        fig("objects_per_s", row.objects_per_s);
        let starved = cpu_share < STARVED_SHARE * t.cpu_busy_share;
        fig("starved", if starved { 1.0 } else { 0.0 });
        let explanation = if starved {
            format!(
                "the client's threads always had work (runtime busy {:.0}% of the time) but got only {:.2} of {:.0} cores: it is starved of CPU by other processes on the machine (or a fractional Lambda vCPU), {:.3} ms CPU per GET; more workers or lower latency will not help, more CPU will",
                100.0 * busy_share,
                client.cores_busy,
                cores,
                row.cpu_ms_per_get
            )
        } else {
            format!(
                "the client's CPU sets the pace: {:.2} cores busy of {:.0} usable, runtime threads busy {:.0}% of the time, {:.3} ms CPU per GET; lower latency or more workers will not help, more vCPUs or a cheaper client will",
                client.cores_busy,
                cores,
                100.0 * busy_share,
                row.cpu_ms_per_get
            )
        };
        (Verdict::ClientCpu, explanation)
    } else if pool_share >= t.pool_wait_share {
        fig("pool_wait_ms_mean", pool_wait_ms);
        fig("ttlb_ms_mean", latency_ms);
        fig("pool_wait_share", pool_share);
        fig("workers", f64::from(row.workers));
        fig("pool_connections", f64::from(row.pool_connections));
        (
            Verdict::Pool,
            format!(
                "requests waited {:.1} ms on average for one of {} connections ({:.0}% of their time) with {} workers: raise pool_connections to the worker count",
                pool_wait_ms,
                row.pool_connections,
                100.0 * pool_share,
                row.workers
            ),
        )
    } else {
        fig("mean_in_flight", client.mean_in_flight);
        fig("ttlb_ms_mean", latency_ms);
        fig("objects_per_s", row.objects_per_s);
        fig("cores_busy", client.cores_busy);
        (
            Verdict::Latency,
            format!(
                "{:.1} requests in flight at {:.2} ms each give {:.0} objects/s; the client had CPU to spare ({:.2} cores busy), so more workers would go faster",
                client.mean_in_flight, latency_ms, row.objects_per_s, client.cores_busy
            ),
        )
    };

    let mut notes = Vec::new();
    if let Some(b) = &row.breakdown {
        if b.cold_requests > 0 {
            notes.push(format!(
                "{} cold request(s) ({} new connection(s), connect p50 {:.2} ms, {} CreateSession) took p50 {:.2} ms to last byte vs {:.2} ms steady; they are left out of the steady figures",
                b.cold_requests,
                b.connections_opened,
                b.connect_ms.p50,
                b.session_requests,
                b.cold_ttlb_ms.p50,
                b.steady_ttlb_ms.p50
            ));
        }
    }
    let p50 = row.breakdown.as_ref().map_or(row.ttlb_ms.p50, |b| b.steady_ttlb_ms.p50);
    if row.workers <= 4 && p50 >= DELAYED_ACK_WINDOW_MS.0 && p50 <= DELAYED_ACK_WINDOW_MS.1 {
        notes.push(format!(
            "p50 {p50:.1} ms at {} worker(s) is in the 38-50 ms window of the 40 ms delayed-ACK timer: if the service should answer faster, check TCP_NODELAY on both ends",
            row.workers
        ));
    }
    if verdict != Verdict::Pool && client.in_flight_ratio < 0.7 && row.workers > 1 && row.ok > 0 {
        notes.push(format!(
            "only {:.1} of {:.1} possible requests were in flight on average: the workers spent the rest between requests (client work, scheduling) or waiting for the slowest to finish",
            client.mean_in_flight,
            possible_in_flight(row)
        ));
    }
    Diagnosis {
        verdict,
        figures,
        explanation,
        notes,
    }
}

// ---------------------------------------------------------------------------------
// Curve analysis and the model.
// ---------------------------------------------------------------------------------

/// The model `X = min(C / R, P / c, B / S)` fitted to one bucket's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFit {
    /// R: latency per request (ms) that explains the rising part of the curve.
    pub latency_ms_per_request: f64,
    /// The plateau the curve reached (objects/s), when it has one.
    pub plateau_objects_per_s: Option<f64>,
    /// 1000 / plateau: the serial cost per request the plateau implies (c / P), in ms.
    pub plateau_ms_per_request: Option<f64>,
    /// c: client CPU per request (ms), measured (median over the bucket's rows).
    pub client_cpu_ms_per_request: Option<f64>,
    /// P: cores the client could use.
    pub client_cores: f64,
    /// P / c in objects/s, when c is known.
    pub client_cpu_ceiling_objects_per_s: Option<f64>,
    /// B / S in objects/s, when a bandwidth ceiling is known.
    pub bandwidth_ceiling_objects_per_s: Option<f64>,
    /// Root-mean-square of ln(model / measured) over the points: 0.1 is about 10%.
    pub fit_rms_log_error: f64,
    /// Workers needed to reach the plateau: plateau x R (Little's law).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_to_plateau: Option<f64>,
}

/// What the model predicts for one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub scenario: String,
    /// C: requests in flight.
    pub workers: u32,
    /// P.
    pub client_cores: f64,
    pub objects_per_s: f64,
    /// Wall time for `objects` objects at that rate.
    pub wall_ms: f64,
    /// Which term of the model is the smallest: `latency`, `client_cpu`, `bandwidth`
    /// or `plateau` (a ceiling the curve shows but client CPU does not explain).
    pub limit: String,
}

/// The verdict at one worker count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerVerdict {
    pub workers: u32,
    pub verdict: Verdict,
}

/// The analysis of one bucket's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveAnalysis {
    pub bucket: String,
    /// Smallest worker count within 10% of the best throughput ([`crate::report::knee`]).
    pub knee_workers: Option<u32>,
    /// The worker count to use: the knee.
    pub recommended_workers: Option<u32>,
    /// Why, in plain words (including "the curve was still rising").
    pub recommendation: String,
    /// Verdicts by worker count (first repetition's row), in order run.
    pub verdicts: Vec<WorkerVerdict>,
    pub fit: Option<ModelFit>,
    pub predictions: Vec<Prediction>,
}

/// How much faster the lower-latency bucket is, at one worker and at the best count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketComparison {
    /// The bucket with the lowest fitted latency per request.
    pub faster_bucket: String,
    pub slower_bucket: String,
    /// Fitted R of the slower over the faster.
    pub latency_ratio: Option<f64>,
    /// One-worker wall time of the slower over the faster.
    pub one_worker_speedup: Option<f64>,
    /// Best wall time of the slower over the faster.
    pub best_speedup: f64,
    pub explanation: String,
}

/// The analysis block of the result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub thresholds: Thresholds,
    pub buckets: Vec<CurveAnalysis>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<BucketComparison>,
}

/// Inputs of the model beyond the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInputs {
    /// Measured client CPU per request (ms), when known.
    pub client_cpu_ms_per_request: Option<f64>,
    /// Cores the client can use in parallel (1 for a Python client under the GIL).
    pub client_cores: f64,
    /// Whether the client would use more vCPUs if it had them (false under a GIL).
    pub cores_scale_with_vcpus: bool,
    pub bandwidth_ceiling_mib_per_s: Option<f64>,
    pub object_size_bytes: f64,
    pub objects: u64,
    /// The configuration with the most workers was `client_cpu`-bound: the plateau
    /// is the client's CPU ceiling as measured, and scales with the cores.
    pub plateau_is_client_cpu: bool,
}

/// Fits `X = min(C / R, K)` to `(C, X)` points (requests in flight, objects/s) by least
/// squares in log space: for every split of the points sorted by C into a rising part
/// and a plateau, R is the geometric mean of C / X over the rising part and K the
/// geometric mean of X over the plateau; the split with the smallest error wins. A
/// plateau needs at least two points (one low last point is a curve still rising, more
/// slowly), and is dropped when it sits within 10% of where the line would be anyway.
/// Returns (R in seconds, K or None, rms log error).
pub fn fit_curve(points: &[(f64, f64)]) -> Option<(f64, Option<f64>, f64)> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite())
        .collect();
    if pts.is_empty() {
        return None;
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    let error = |r: f64, k: Option<f64>| -> f64 {
        let sum: f64 = pts
            .iter()
            .map(|&(c, x)| {
                let m = k.map_or(c / r, |k| (c / r).min(k));
                (m / x).ln().powi(2)
            })
            .sum();
        (sum / n as f64).sqrt()
    };
    let mut best: Option<(f64, Option<f64>, f64)> = None;
    for split in 1..=n {
        let rising = &pts[..split];
        let r = (rising.iter().map(|&(c, x)| (c / x).ln()).sum::<f64>() / split as f64).exp();
        if split < n && n - split < 2 {
            continue;
        }
        let k = if split < n {
            let flat = &pts[split..];
            Some((flat.iter().map(|p| p.1.ln()).sum::<f64>() / flat.len() as f64).exp())
        } else {
            None
        };
        let e = error(r, k);
        if best.is_none_or(|b| e < b.2 - 1e-12) {
            best = Some((r, k, e));
        }
    }
    let (r, k, e) = best?;
    let c_max = pts[n - 1].0;
    match k {
        Some(k) if k >= 0.9 * c_max / r => {
            // The "plateau" hardly bends the line: report a still-rising curve, fitted
            // as one line through every point.
            let r = (pts.iter().map(|&(c, x)| (c / x).ln()).sum::<f64>() / n as f64).exp();
            Some((r, None, error(r, None)))
        }
        _ => Some((r, k, e)),
    }
}

/// The model's throughput for `workers` in flight on `cores`, and its binding term.
fn predict(fit: &ModelFit, inputs: &ModelInputs, workers: u32, cores: f64) -> (f64, &'static str) {
    let mut best = (f64::from(workers) / (fit.latency_ms_per_request / 1000.0), "latency");
    let mut consider = |x: f64, name: &'static str| {
        if x < best.0 {
            best = (x, name);
        }
    };
    let scale = if inputs.cores_scale_with_vcpus {
        cores / fit.client_cores.max(1.0)
    } else {
        1.0
    };
    match (fit.client_cpu_ms_per_request, fit.plateau_objects_per_s) {
        (_, Some(k)) if inputs.plateau_is_client_cpu => {
            // The plateau's own rows were client-CPU-bound: it is the CPU ceiling as
            // measured (starvation and all), and it moves with the cores.
            consider(k * scale, "client_cpu");
        }
        (Some(c), plateau) if c > 0.0 => {
            let ceiling = cores * 1000.0 / c;
            consider(ceiling, "client_cpu");
            // A plateau well below the client's CPU ceiling is something else (the
            // server, the network, a serial section): it stays where it is.
            if let Some(k) = plateau {
                let now = fit.client_cores * 1000.0 / c;
                if k < 0.7 * now {
                    consider(k, "plateau");
                }
            }
        }
        (_, Some(k)) => {
            // No CPU measurement: read the plateau as client CPU (c / P = 1 / K).
            consider(k * scale, "client_cpu");
        }
        _ => {}
    }
    if let Some(b) = fit.bandwidth_ceiling_objects_per_s {
        consider(b, "bandwidth");
    }
    best
}

/// Analyses one bucket's curve: `points` are (workers, requests the engine could have
/// in flight, objects/s) medians per worker count, without failed configurations.
pub fn analyse_curve(
    bucket: &str,
    points: &[(u32, f64, f64)],
    inputs: &ModelInputs,
    verdicts: Vec<WorkerVerdict>,
) -> CurveAnalysis {
    let knee_workers = knee(&points.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>());
    let max_workers = points.iter().map(|p| p.0).max().unwrap_or(1);
    let fit = fit_curve(&points.iter().map(|p| (p.1, p.2)).collect::<Vec<_>>()).map(|(r, k, e)| {
        let c = inputs.client_cpu_ms_per_request.filter(|c| *c > 0.0);
        ModelFit {
            latency_ms_per_request: round3(r * 1000.0),
            plateau_objects_per_s: k.map(round3),
            plateau_ms_per_request: k.map(|k| round3(1000.0 / k)),
            client_cpu_ms_per_request: c.map(round3),
            client_cores: inputs.client_cores,
            client_cpu_ceiling_objects_per_s: c.map(|c| round3(inputs.client_cores * 1000.0 / c)),
            bandwidth_ceiling_objects_per_s: inputs
                .bandwidth_ceiling_mib_per_s
                .filter(|_| inputs.object_size_bytes > 0.0)
                .map(|b| round3(b * 1024.0 * 1024.0 / inputs.object_size_bytes)),
            fit_rms_log_error: round3(e),
            workers_to_plateau: k.map(|k| round3(k * r)),
        }
    });
    let still_rising = knee_workers == Some(max_workers) && points.len() > 1;
    let recommendation = match (knee_workers, &fit) {
        (None, _) => "no configuration without errors: no recommendation".to_string(),
        (Some(k), _) if still_rising => format!(
            "{k} workers, the largest tried: the curve was still rising, so try more (and a pool at least as large)"
        ),
        (Some(k), Some(f)) if f.plateau_objects_per_s.is_some() => format!(
            "{k} workers: the smallest count within 10% of the best; the plateau needs about {:.0} requests in flight at {:.1} ms each, more only queue",
            f.workers_to_plateau.unwrap_or(0.0),
            f.latency_ms_per_request
        ),
        (Some(k), _) => format!("{k} workers: the smallest count within 10% of the best"),
    };
    let mut predictions = Vec::new();
    if let Some(f) = &fit {
        let objects = inputs.objects.max(1) as f64;
        let mut push = |scenario: String, workers: u32, cores: f64| {
            let (x, limit) = predict(f, inputs, workers, cores);
            predictions.push(Prediction {
                scenario,
                workers,
                client_cores: cores,
                objects_per_s: round3(x),
                wall_ms: round3(objects / x * 1000.0),
                limit: limit.to_string(),
            });
        };
        let best = knee_workers.unwrap_or(max_workers);
        push(format!("as measured, {best} workers"), best, inputs.client_cores);
        push(
            format!("10x workers ({})", max_workers * 10),
            max_workers * 10,
            inputs.client_cores,
        );
        let six = if inputs.cores_scale_with_vcpus {
            6.0
        } else {
            inputs.client_cores
        };
        push(format!("6 vCPUs, {} workers", max_workers * 10), max_workers * 10, six);
    }
    CurveAnalysis {
        bucket: bucket.to_string(),
        knee_workers,
        recommended_workers: knee_workers,
        recommendation,
        verdicts,
        fit,
        predictions,
    }
}

/// Compares every bucket with the one of lowest fitted latency.
pub fn compare(analyses: &[CurveAnalysis], result: &SweepResult) -> Vec<BucketComparison> {
    let latency = |a: &CurveAnalysis| a.fit.as_ref().map(|f| f.latency_ms_per_request);
    let Some(fast) = analyses.iter().filter(|a| latency(a).is_some()).min_by(|a, b| {
        latency(a)
            .unwrap_or(f64::MAX)
            .total_cmp(&latency(b).unwrap_or(f64::MAX))
    }) else {
        return Vec::new();
    };
    let summary = |b: &str| result.summary.iter().find(|s| s.bucket == b);
    let best_verdict = |b: &str| {
        let s = summary(b)?;
        result
            .results
            .iter()
            .find(|r| r.bucket == b && r.workers == s.best_workers)
            .and_then(|r| r.diagnosis.as_ref())
            .map(|d| d.verdict)
    };
    let mut out = Vec::new();
    for slow in analyses.iter().filter(|a| a.bucket != fast.bucket) {
        let (Some(sf), Some(ss)) = (summary(&fast.bucket), summary(&slow.bucket)) else {
            continue;
        };
        let latency_ratio = match (latency(slow), latency(fast)) {
            (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
            _ => None,
        };
        let one = match (ss.one_worker_wall_ms, sf.one_worker_wall_ms) {
            (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
            _ => None,
        };
        let best = round3(ss.best_wall_ms / sf.best_wall_ms.max(0.001));
        let (vf, vs) = (best_verdict(&fast.bucket), best_verdict(&slow.bucket));
        let why = match (vf, vs) {
            (Some(a), Some(b)) if a == b && a != Verdict::Latency => format!(
                "at their best both are bound by {}, which does not depend on the bucket, so the gap closes",
                a.name()
            ),
            (Some(Verdict::Latency), Some(Verdict::Latency)) => {
                "at their best both are still latency-bound: more workers would keep the lower-latency bucket ahead"
                    .to_string()
            }
            (Some(a), Some(b)) => format!(
                "at their best {} is bound by {} and {} by {}",
                fast.bucket,
                a.name(),
                slow.bucket,
                b.name()
            ),
            _ => "no verdicts to compare".to_string(),
        };
        let explanation = format!(
            "{} is {}x as fast at one worker, where a request's latency is all there is (fitted latency ratio {}x), and {best:.2}x as fast at the best worker count; {why}",
            fast.bucket,
            one.map_or("?".to_string(), |o| format!("{o:.1}")),
            latency_ratio.map_or("?".to_string(), |l| format!("{l:.1}")),
        );
        out.push(BucketComparison {
            faster_bucket: fast.bucket.clone(),
            slower_bucket: slow.bucket.clone(),
            latency_ratio,
            one_worker_speedup: one,
            best_speedup: best,
            explanation,
        });
    }
    out
}

/// Latency per request this many times the bucket's lowest means requests queue.
pub const QUEUEING_FACTOR: f64 = 2.0;

/// Adds a note to rows whose steady latency is [`QUEUEING_FACTOR`] times the lowest of
/// their bucket: the requests queued somewhere (the server, the network, the client's
/// scheduler), so more workers add waiting rather than throughput.
fn queueing_notes(rows: &mut [ConfigResult]) {
    let p50 = |r: &ConfigResult| r.breakdown.as_ref().map_or(r.ttlb_ms.p50, |b| b.steady_ttlb_ms.p50);
    let mut lowest: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ok > 0 && p50(r) > 0.0) {
        let e = lowest.entry(r.bucket.clone()).or_insert((f64::MAX, 0));
        if p50(r) < e.0 {
            *e = (p50(r), r.workers);
        }
    }
    for r in rows.iter_mut() {
        let Some(&(low, at)) = lowest.get(&r.bucket) else {
            continue;
        };
        let now = p50(r);
        if now >= QUEUEING_FACTOR * low {
            if let Some(d) = r.diagnosis.as_mut() {
                d.figures.insert("ttlb_ms_p50_lowest_of_bucket".into(), round3(low));
                d.notes.push(format!(
                    "requests took {now:.1} ms (p50) against {low:.1} ms at {at} worker(s): they queue somewhere (server, network or the client's scheduler), so more workers add waiting, not throughput"
                ));
            }
        }
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Fills in every row's verdict and the per-bucket analysis.
pub fn annotate(result: &mut SweepResult, thresholds: &Thresholds) {
    let vcpus = result.environment.vcpus;
    for row in &mut result.results {
        row.diagnosis = Some(diagnose_row(row, vcpus, thresholds));
    }
    queueing_notes(&mut result.results);
    let mut analyses = Vec::new();
    for summary in &result.summary {
        let rows: Vec<&ConfigResult> = result.results.iter().filter(|r| r.bucket == summary.bucket).collect();
        let mut workers: Vec<u32> = Vec::new();
        for r in &rows {
            if !workers.contains(&r.workers) {
                workers.push(r.workers);
            }
        }
        let mut points = Vec::new();
        let mut verdicts = Vec::new();
        for &w in &workers {
            let same: Vec<&&ConfigResult> = rows.iter().filter(|r| r.workers == w).collect();
            if let Some(d) = same.first().and_then(|r| r.diagnosis.as_ref()) {
                verdicts.push(WorkerVerdict {
                    workers: w,
                    verdict: d.verdict,
                });
            }
            if same.iter().any(|r| r.errors.total > 0) {
                continue;
            }
            let possible = f64::from(w.min(same[0].pool_connections));
            if let Some(x) = median(same.iter().map(|r| r.objects_per_s).collect()) {
                points.push((w, possible, x));
            }
        }
        let client_cores = rows
            .iter()
            .find_map(|r| r.client.as_ref().map(|c| c.client_cores))
            .unwrap_or(f64::from(vcpus.max(1)));
        let size = median(
            rows.iter()
                .filter(|r| r.ok > 0)
                .map(|r| r.bytes as f64 / r.ok as f64)
                .collect(),
        )
        .unwrap_or(0.0);
        let inputs = ModelInputs {
            client_cpu_ms_per_request: median(rows.iter().map(|r| r.cpu_ms_per_get).filter(|c| *c > 0.0).collect()),
            client_cores,
            cores_scale_with_vcpus: true,
            bandwidth_ceiling_mib_per_s: thresholds.bandwidth_ceiling_mib_per_s,
            object_size_bytes: size,
            objects: rows.first().map_or(1, |r| r.requests),
            plateau_is_client_cpu: verdicts.last().is_some_and(|v| v.verdict == Verdict::ClientCpu),
        };
        analyses.push(analyse_curve(&summary.bucket, &points, &inputs, verdicts));
    }
    let comparisons = compare(&analyses, result);
    result.analysis = Some(Analysis {
        thresholds: *thresholds,
        buckets: analyses,
        comparisons,
    });
}

// ---------------------------------------------------------------------------------
// Human output.
// ---------------------------------------------------------------------------------

/// Compact verdict runs: `1-4 latency, 8-256 client_cpu`.
fn verdict_runs(verdicts: &[WorkerVerdict]) -> String {
    let mut runs: Vec<(u32, u32, Verdict)> = Vec::new();
    for &WorkerVerdict { workers: w, verdict: v } in verdicts {
        match runs.last_mut() {
            Some(last) if last.2 == v => last.1 = w,
            _ => runs.push((w, w, v)),
        }
    }
    runs.iter()
        .map(|(a, b, v)| {
            if a == b {
                format!("{a} {}", v.name())
            } else {
                format!("{a}-{b} {}", v.name())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines printed under one bucket's table.
pub fn render_bucket(result: &SweepResult, bucket: &str) -> String {
    let mut out = String::new();
    let Some(analysis) = result
        .analysis
        .as_ref()
        .and_then(|a| a.buckets.iter().find(|b| b.bucket == bucket))
    else {
        return out;
    };
    let _ = writeln!(out, "verdicts: {}", verdict_runs(&analysis.verdicts));
    // The explanation of the best configuration and of the largest worker count.
    let rows: Vec<&ConfigResult> = result.results.iter().filter(|r| r.bucket == bucket).collect();
    let best = result
        .summary
        .iter()
        .find(|s| s.bucket == bucket)
        .map(|s| s.best_workers);
    let mut shown = Vec::new();
    for w in [rows.first().map(|r| r.workers), best, rows.last().map(|r| r.workers)]
        .into_iter()
        .flatten()
    {
        if shown.contains(&w) {
            continue;
        }
        shown.push(w);
        if let Some(d) = rows.iter().find(|r| r.workers == w).and_then(|r| r.diagnosis.as_ref()) {
            let _ = writeln!(out, "  {w} workers, {}: {}", d.verdict.name(), d.explanation);
            for note in &d.notes {
                let _ = writeln!(out, "    note: {note}");
            }
        }
    }
    if let Some(f) = &analysis.fit {
        let _ = write!(out, "model: R = {:.2} ms per request", f.latency_ms_per_request);
        if let Some(c) = f.client_cpu_ms_per_request {
            let _ = write!(
                out,
                ", client CPU c = {c:.3} ms per GET on P = {:.0} core(s) (ceiling {:.0} objects/s)",
                f.client_cores,
                f.client_cpu_ceiling_objects_per_s.unwrap_or(0.0)
            );
        }
        match f.plateau_objects_per_s {
            Some(k) => {
                let _ = write!(
                    out,
                    "; plateau {k:.0} objects/s ({:.3} ms per request), reached with ~{:.0} in flight",
                    f.plateau_ms_per_request.unwrap_or(0.0),
                    f.workers_to_plateau.unwrap_or(0.0)
                );
            }
            None => out.push_str("; no plateau yet"),
        }
        let _ = writeln!(out, " (fit error {:.0}%)", 100.0 * f.fit_rms_log_error);
        let preds: Vec<String> = analysis
            .predictions
            .iter()
            .map(|p| format!("{}: {:.0} objects/s ({})", p.scenario, p.objects_per_s, p.limit))
            .collect();
        let _ = writeln!(out, "predicted: {}", preds.join("; "));
    }
    let _ = writeln!(out, "recommended: {}", analysis.recommendation);
    out
}

/// The bucket-vs-bucket lines.
pub fn render_comparisons(result: &SweepResult) -> String {
    let mut out = String::new();
    if let Some(a) = &result.analysis {
        for c in &a.comparisons {
            let _ = writeln!(out, "{} vs {}: {}", c.faster_bucket, c.slower_bucket, c.explanation);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::row;
    use crate::report::{ErrorKind, Percentiles};

    fn pct(mean: f64) -> Percentiles {
        Percentiles {
            p50: mean,
            p90: mean,
            p99: mean,
            max: mean,
            mean,
            count: 100,
        }
    }

    /// A healthy row: 100 requests, 10 workers, 10 ms each, 1000 objects/s.
    fn healthy() -> ConfigResult {
        let mut r = row("b", 10, 1, 100.0, 0);
        r.pool_connections = 10;
        r.ttlb_ms = pct(10.0);
        r.ttfb_ms = pct(9.0);
        r.cpu_ms = 20.0;
        r.cpu_ms_per_get = 0.2;
        r.client = Some(client_side(
            &r,
            ClientMeasure {
                runtime_busy: Duration::from_millis(40),
                runtime_worker_threads: 2,
                vcpus: 2,
                peak_rss_bytes: 1 << 20,
            },
        ));
        r
    }

    #[test]
    fn client_side_uses_littles_law() {
        let c = healthy().client.unwrap();
        assert_eq!(c.mean_in_flight, 10.0);
        assert_eq!(c.in_flight_ratio, 1.0);
        assert_eq!(c.cores_busy, 0.2);
        assert_eq!(c.runtime_busy_ratio, 0.2);
        assert_eq!(c.client_cores, 2.0);
    }

    #[test]
    fn latency_verdict_on_a_healthy_row() {
        let d = diagnose_row(&healthy(), 2, &Thresholds::default());
        assert_eq!(d.verdict, Verdict::Latency, "{d:?}");
        assert_eq!(d.figures["mean_in_flight"], 10.0);
        assert!(d.explanation.contains("in flight"), "{}", d.explanation);
    }

    #[test]
    fn throttled_beats_errors_and_needs_its_share() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.errors.add(ErrorKind::Throttled, 3);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
        let mut r = healthy();
        r.retries = 1;
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
        // One retry in 1,000 requests is below 0.5%.
        let mut r = healthy();
        r.requests = 1000;
        r.retries = 1;
        assert_ne!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
    }

    #[test]
    fn errors_verdict_at_one_percent() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.errors.add(ErrorKind::NotFound, 1);
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Errors);
        assert!(d.explanation.contains("not_found=1"), "{}", d.explanation);
        let mut r = healthy();
        r.requests = 1000;
        r.errors.add(ErrorKind::Timeout, 9);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn bandwidth_only_with_a_ceiling() {
        let mut r = healthy();
        r.mib_per_s = 90.0;
        assert_eq!(diagnose_row(&r, 2, &Thresholds::default()).verdict, Verdict::Latency);
        let t = Thresholds {
            bandwidth_ceiling_mib_per_s: Some(100.0),
            ..Thresholds::default()
        };
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Bandwidth);
        assert_eq!(d.figures["bandwidth_ceiling_mib_per_s"], 100.0);
        r.mib_per_s = 70.0;
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    /// What the client measured on a 2-vCPU machine: the runtime busy `busy_ms` on `threads` threads.
    fn on_two_vcpus(busy_ms: u64, threads: u32) -> ClientMeasure {
        ClientMeasure {
            runtime_busy: Duration::from_millis(busy_ms),
            runtime_worker_threads: threads,
            vcpus: 2,
            peak_rss_bytes: 0,
        }
    }

    #[test]
    fn client_cpu_by_cores_or_by_runtime() {
        let t = Thresholds::default();
        let mut r = healthy();
        // 1.8 cores of 2 usable.
        r.cpu_ms = 180.0;
        r.client = Some(client_side(&r, on_two_vcpus(40, 2)));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::ClientCpu);
        // One runtime thread busy 90% of the time, process CPU low.
        let mut r = healthy();
        r.client = Some(client_side(&r, on_two_vcpus(90, 1)));
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::ClientCpu, "{d:?}");
        assert_eq!(d.figures["runtime_busy_ratio"], 0.9);
        // 0.2 cores busy of 1 usable while the runtime had work: starved.
        assert_eq!(d.figures["starved"], 1.0);
        assert!(d.explanation.contains("starved"), "{}", d.explanation);
        // 80% is below the threshold.
        let mut r = healthy();
        r.client = Some(client_side(&r, on_two_vcpus(80, 1)));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn pool_when_the_wait_dominates() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.workers = 40;
        r.pool_wait_ms = pct(30.0);
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Pool, "{d:?}");
        assert_eq!(d.figures["pool_wait_share"], 0.75);
        r.pool_wait_ms = pct(2.0);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn notes_flag_delayed_ack_and_cold_requests() {
        let mut r = healthy();
        r.workers = 1;
        r.ttlb_ms = pct(42.0);
        r.breakdown = Some(Breakdown {
            steady_ttlb_ms: pct(42.0),
            cold_requests: 1,
            connections_opened: 1,
            cold_ttlb_ms: pct(44.0),
            ..Breakdown::default()
        });
        let d = diagnose_row(&r, 2, &Thresholds::default());
        assert!(d.notes.iter().any(|n| n.contains("delayed-ACK")), "{:?}", d.notes);
        assert!(d.notes.iter().any(|n| n.contains("cold request")), "{:?}", d.notes);
    }

    #[test]
    fn thresholds_are_validated() {
        assert!(Thresholds::default().validate().is_ok());
        let err = Thresholds {
            error_share: 0.0,
            cpu_busy_share: 2.0,
            bandwidth_ceiling_mib_per_s: Some(-1.0),
            ..Thresholds::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        for field in ["error_share", "cpu_busy_share", "bandwidth_ceiling_mib_per_s"] {
            assert!(err.contains(field), "{err}");
        }
    }

    fn seed_curve(walls: &[(u32, f64)]) -> Vec<(u32, f64, f64)> {
        walls
            .iter()
            .map(|&(w, ms)| (w, f64::from(w), 1000.0 / (ms / 1000.0)))
            .collect()
    }

    const EXPRESS: [(u32, f64); 6] = [
        (1, 7831.0),
        (2, 4037.0),
        (4, 2625.0),
        (8, 2826.0),
        (16, 2668.0),
        (20, 2410.0),
    ];
    const STANDARD: [(u32, f64); 6] = [
        (1, 47625.0),
        (2, 17334.0),
        (4, 6993.0),
        (8, 3508.0),
        (16, 2868.0),
        (20, 2587.0),
    ];

    fn python() -> ModelInputs {
        ModelInputs {
            client_cpu_ms_per_request: None,
            client_cores: 1.0,
            cores_scale_with_vcpus: false,
            bandwidth_ceiling_mib_per_s: None,
            object_size_bytes: 46_080.0,
            objects: 1000,
            plateau_is_client_cpu: false,
        }
    }

    #[test]
    fn the_seed_curves_fit_the_model() {
        let e = analyse_curve("express", &seed_curve(&EXPRESS), &python(), vec![]);
        let s = analyse_curve("standard", &seed_curve(&STANDARD), &python(), vec![]);
        assert_eq!(e.knee_workers, Some(4));
        assert_eq!(s.knee_workers, Some(16));
        let ef = e.fit.unwrap();
        let sf = s.fit.unwrap();
        // Express: ~8 ms per request, plateau ~2.6 ms per request (CONTEXT.md's c = 2.6 ms).
        assert!((7.0..9.0).contains(&ef.latency_ms_per_request), "{ef:?}");
        let c = ef.plateau_ms_per_request.unwrap();
        assert!((2.4..2.8).contains(&c), "{ef:?}");
        // Standard: tens of ms per request, the same plateau within 10%.
        assert!((25.0..50.0).contains(&sf.latency_ms_per_request), "{sf:?}");
        let cs = sf.plateau_ms_per_request.unwrap();
        assert!((cs / c - 1.0).abs() < 0.1, "{c} vs {cs}");
        assert!(ef.fit_rms_log_error < 0.1, "{ef:?}");
        // Under a GIL neither 10x workers nor 6 vCPUs move the plateau.
        for p in &e.predictions[1..] {
            assert_eq!(p.limit, "client_cpu", "{p:?}");
            assert!((p.wall_ms - 1000.0 * c).abs() < 1.0, "{p:?}");
        }
        // Few workers reach the plateau: about 3 for Express, about 12 for Standard.
        assert!((2.0..4.5).contains(&ef.workers_to_plateau.unwrap()), "{ef:?}");
        assert!((8.0..16.0).contains(&sf.workers_to_plateau.unwrap()), "{sf:?}");
    }

    #[test]
    fn a_native_client_is_predicted_to_scale() {
        // The seed's latencies, with a client costing 0.2 ms of CPU per GET on 2 cores.
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(0.2),
            client_cores: 2.0,
            cores_scale_with_vcpus: true,
            ..python()
        };
        let curve: Vec<(u32, f64, f64)> = [1u32, 2, 4, 8, 16, 32, 64]
            .iter()
            .map(|&w| (w, f64::from(w), f64::from(w) / 0.005))
            .collect();
        let a = analyse_curve("x", &curve, &inputs, vec![]);
        let f = a.fit.clone().unwrap();
        assert!((f.latency_ms_per_request - 5.0).abs() < 0.01, "{f:?}");
        assert_eq!(f.plateau_objects_per_s, None);
        assert!(a.recommendation.contains("still rising"), "{}", a.recommendation);
        // 640 workers at 5 ms: 128,000/s from latency, 10,000/s from 2 cores: CPU binds.
        assert_eq!(a.predictions[1].limit, "client_cpu");
        assert!((a.predictions[1].objects_per_s - 10_000.0).abs() < 1.0);
        // 6 vCPUs: 30,000/s.
        assert!((a.predictions[2].objects_per_s - 30_000.0).abs() < 1.0);
        // Bandwidth: 100 MiB/s of 46,080 B objects is ~2,276 objects/s.
        let b = analyse_curve(
            "x",
            &curve,
            &ModelInputs {
                bandwidth_ceiling_mib_per_s: Some(100.0),
                ..inputs
            },
            vec![],
        );
        assert_eq!(b.predictions[2].limit, "bandwidth");
        assert!(
            (b.predictions[2].objects_per_s - 2275.6).abs() < 1.0,
            "{:?}",
            b.predictions[2]
        );
    }

    #[test]
    fn a_client_cpu_plateau_scales_with_cores_and_another_does_not() {
        // 5 ms per request, flat at 5,000 objects/s from 32 workers, 0.2 ms CPU per GET
        // on 2 cores (a 10,000/s ceiling the plateau does not reach).
        let curve: Vec<(u32, f64, f64)> = [(1u32, 200.0), (8, 1600.0), (32, 5000.0), (64, 5050.0), (128, 4950.0)]
            .iter()
            .map(|&(w, x)| (w, f64::from(w), x))
            .collect();
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(0.2),
            client_cores: 2.0,
            cores_scale_with_vcpus: true,
            ..python()
        };
        let other = analyse_curve("x", &curve, &inputs, vec![]);
        assert_eq!(other.predictions[2].limit, "plateau", "{:?}", other.predictions);
        assert!((other.predictions[2].objects_per_s - 5000.0).abs() < 100.0);
        let cpu = analyse_curve(
            "x",
            &curve,
            &ModelInputs {
                plateau_is_client_cpu: true,
                ..inputs
            },
            vec![],
        );
        assert_eq!(cpu.predictions[1].limit, "client_cpu");
        assert!((cpu.predictions[1].objects_per_s - 5000.0).abs() < 100.0);
        // 6 vCPUs: 3x the 2-core plateau.
        assert!(
            (cpu.predictions[2].objects_per_s - 15_000.0).abs() < 300.0,
            "{:?}",
            cpu.predictions
        );
    }

    #[test]
    fn fit_handles_degenerate_curves() {
        assert_eq!(fit_curve(&[]), None);
        let (r, k, e) = fit_curve(&[(1.0, 100.0)]).unwrap();
        assert!((r - 0.01).abs() < 1e-9 && k.is_none() && e < 1e-9);
        // Flat from the start: the plateau is everything after the first point.
        let (r, k, _) = fit_curve(&[(1.0, 100.0), (2.0, 101.0), (4.0, 99.0)]).unwrap();
        assert!((r - 0.01).abs() < 1e-6);
        assert!((k.unwrap() - 100.0).abs() < 1.0);
    }

    #[test]
    fn one_low_last_point_is_not_a_plateau() {
        // 39, 302, 846 objects/s at 1, 8, 32 workers: still rising, more slowly.
        let (r, k, _) = fit_curve(&[(1.0, 39.0), (8.0, 302.0), (32.0, 846.0)]).unwrap();
        assert_eq!(k, None);
        assert!(r > 0.025 && r < 0.04, "{r}");
    }

    #[test]
    fn possible_in_flight_counts_the_last_round() {
        let mut r = row("b", 32, 1, 100.0, 0);
        r.pool_connections = 64;
        assert_eq!(possible_in_flight(&r), 25.0);
        r.pool_connections = 4;
        assert_eq!(possible_in_flight(&r), 4.0);
        r.workers = 200;
        r.pool_connections = 500;
        assert_eq!(possible_in_flight(&r), 100.0);
    }

    #[test]
    fn queueing_is_noted_against_the_buckets_lowest_latency() {
        let mut one = healthy();
        one.workers = 1;
        one.ttlb_ms = pct(10.0);
        let mut many = healthy();
        many.workers = 32;
        many.ttlb_ms = pct(40.0);
        let mut rows = vec![one, many];
        for r in &mut rows {
            r.diagnosis = Some(diagnose_row(r, 2, &Thresholds::default()));
        }
        queueing_notes(&mut rows);
        assert!(!rows[0]
            .diagnosis
            .as_ref()
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("queue")));
        let d = rows[1].diagnosis.as_ref().unwrap();
        assert!(d.notes.iter().any(|n| n.contains("queue")), "{d:?}");
        assert_eq!(d.figures["ttlb_ms_p50_lowest_of_bucket"], 10.0);
    }

    #[test]
    fn verdict_runs_are_compact() {
        let v: Vec<WorkerVerdict> = [
            (1, Verdict::Latency),
            (2, Verdict::Latency),
            (8, Verdict::ClientCpu),
            (16, Verdict::ClientCpu),
            (32, Verdict::Pool),
        ]
        .iter()
        .map(|&(workers, verdict)| WorkerVerdict { workers, verdict })
        .collect();
        assert_eq!(verdict_runs(&v), "1-2 latency, 8-16 client_cpu, 32 pool");
    }

    #[test]
    fn phase_shards_keep_cold_apart() {
        let mut shards = [PhaseShard::new(), PhaseShard::new()];
        let ms = Duration::from_millis;
        let cold = ColdWork {
            connections: 1,
            connect_ns: 3_000_000,
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
        assert!((b.steady_ttlb_ms.p50 - 6.0).abs() < 0.01, "{b:?}");
        assert!((b.steady_body_ms.p50 - 1.0).abs() < 0.01, "{b:?}");
        assert!((b.cold_ttlb_ms.p50 - 25.0).abs() < 0.05, "{b:?}");
        assert_eq!(b.first_request_ttlb_ms, Some(25.0));
        assert!(b.first_request_cold);
    }
}

//! The diagnosis blocks of the result document: where a configuration's time went
//! ([`Breakdown`]), what the client did ([`ClientSide`]), what bound it ([`Diagnosis`]
//! with a [`Verdict`] and the [`Thresholds`] of the rules), and per bucket the curve
//! analysis, model fit and predictions ([`Analysis`]). The rules that fill them in are
//! in [`crate::analysis`]; these are the values only.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;
use super::figures::{Figure, FigureName, Figures};
use super::stats::{tidy, Percentiles};

/// Invalid verdict thresholds (every bad value named).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiagnoseError {
    #[error("invalid thresholds: {0}")]
    InvalidThresholds(String),
}

/// Where the time of one configuration's requests went, cold and steady apart.
/// All durations in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Successful requests that reused an open connection and sent no `CreateSession`.
    pub steady_requests: u64,
    /// First byte at the wire (connection in hand to response headers), steady
    /// requests only.
    pub steady_ttfb_ms: Percentiles,
    /// Body transfer (last byte minus first byte), steady requests only.
    pub steady_body_ms: Percentiles,
    /// Request issued to last body byte, steady requests only.
    pub steady_ttlb_ms: Percentiles,
    /// Requests (ok or failed) that opened a connection or sent `CreateSession`.
    pub cold_requests: u64,
    /// First byte at the wire of successful cold requests (the connect is apart, in
    /// `connect_ms`).
    pub cold_ttfb_ms: Percentiles,
    /// Time to last byte of successful cold requests.
    pub cold_ttlb_ms: Percentiles,
    /// Connections opened by the timed requests (warm-up excluded).
    pub connections_opened: u64,
    /// Time to open one connection (TCP, and TLS for HTTPS), per connection.
    pub connect_ms: Percentiles,
    /// The TCP connect part of `connect_ms`, per connection.
    #[serde(default)]
    pub tcp_connect_ms: Percentiles,
    /// TLS handshakes among those connections (one per HTTPS connection, 0 over HTTP).
    #[serde(default)]
    pub tls_handshakes: u64,
    /// The TLS handshake part of `connect_ms`, per HTTPS connection.
    #[serde(default)]
    pub tls_handshake_ms: Percentiles,
    /// S3 Express `CreateSession` calls sent by the timed requests.
    pub session_requests: u64,
    /// Client work before a request reached the HTTP client, per request: from the
    /// call to the hand-over of its first attempt (serialising, endpoint and identity
    /// resolution, a `CreateSession` waited for, signing), plus the same for each retry.
    #[serde(default)]
    pub client_prep_ms: Percentiles,
    /// Waiting inside the HTTP client for a connection, per request (connects the
    /// request opened itself are in `connect_ms`, not here).
    #[serde(default)]
    pub http_pool_wait_ms: Percentiles,
    /// Attempts handed to the HTTP client, first ones included.
    #[serde(default)]
    pub attempts: u64,
    /// Sleeping between attempts (the retry strategy's backoff), summed over requests.
    #[serde(default, serialize_with = "tidy::dec3")]
    pub backoff_ms_total: f64,
    /// Time to last byte of the first request issued in the configuration.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub first_request_ttlb_ms: Option<f64>,
    /// Whether that first request was cold.
    pub first_request_cold: bool,
}

/// What the client itself did during one configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSide {
    /// vCPUs the process could run on.
    pub vcpus: u32,
    /// Threads that ran the requests: the transport's lanes (each a runtime of one thread).
    pub runtime_worker_threads: u32,
    /// Cores the client can use at once: the smaller of `usable_cores` and the runtime's
    /// threads (the model's P). Fractional under a CPU quota or a small Lambda.
    #[serde(serialize_with = "tidy::sig4")]
    pub client_cores: f64,
    /// Cores' worth of CPU time the process may use: from Lambda's memory (1,769 MB per
    /// vCPU), a cgroup quota, the affinity mask, or the core count (`cpu_source`).
    #[serde(default, serialize_with = "tidy::sig4")]
    pub usable_cores: f64,
    /// Where `usable_cores` comes from: `lambda_memory`, `cgroup_v2`, `cgroup_v1`,
    /// `affinity` or `cores`.
    #[serde(default)]
    pub cpu_source: CpuSource,
    /// The whole machine's busy CPU time over wall time (this process, a server the tool
    /// started, anything else), when the system reports it.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::sig4_opt")]
    pub machine_cores_busy: Option<f64>,
    /// Process CPU time (all threads) divided by wall time.
    #[serde(serialize_with = "tidy::sig4")]
    pub cores_busy: f64,
    /// Busy time of the runtime's workers over (wall time x workers): 1.0 means the
    /// runtime never had a moment without work.
    #[serde(serialize_with = "tidy::sig4")]
    pub runtime_busy_ratio: f64,
    /// `cpu_ms_per_get` restated for this block.
    #[serde(serialize_with = "tidy::sig4")]
    pub cpu_ms_per_get: f64,
    /// Peak resident memory of the process so far, in bytes.
    pub peak_rss_bytes: u64,
    /// Little's law: successful GETs per second x their mean time to last byte.
    #[serde(serialize_with = "tidy::sig4")]
    pub mean_in_flight: f64,
    /// `mean_in_flight` over the requests the engine could have in flight
    /// ([`ConfigResult::possible_in_flight`]).
    #[serde(serialize_with = "tidy::sig4")]
    pub in_flight_ratio: f64,
}

/// Raw client measurements of one configuration, taken by the engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientMeasure {
    pub runtime_busy: Duration,
    pub runtime_worker_threads: u32,
    pub vcpus: u32,
    pub peak_rss_bytes: u64,
    /// Usable cores (0: unknown, the vCPUs count) and their source.
    pub usable_cores: f64,
    pub cpu_source: CpuSource,
    /// The machine's busy CPU time during the configuration.
    pub machine_busy: Option<Duration>,
}

closed_set! {
    /// What bound a configuration. The rules that give each, in the order checked,
    /// are `analysis::rules::RULES`.
    pub enum Verdict {
        /// Throughput is requests in flight over latency, and the curve still rises here:
        /// more workers would help.
        Latency = "latency",
        /// The client's CPU is saturated: cores busy near the vCPUs, or the runtime never idle.
        ClientCpu = "client_cpu",
        /// Requests spent a large share of their time waiting for a pooled connection.
        Pool = "pool",
        /// MiB/s near the configured bandwidth ceiling.
        Bandwidth = "bandwidth",
        /// 503 SlowDown / 429 answers to GETs (retried ones included).
        Throttled = "throttled",
        /// Too many requests failed for the timings to mean much.
        Errors = "errors",
        /// The machine's CPU is used up (the client plus a server the tool started, or other
        /// load it can see), while the client alone is below its share.
        MachineCpu = "machine_cpu",
        /// Throughput stopped growing with more workers and nothing measured explains it
        /// (the explanation lists what was checked).
        Plateau = "plateau",
    }
}

closed_set! {
    /// Where a usable-CPU figure comes from.
    #[derive(Default)]
    pub enum CpuSource {
        /// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` / 1,769 MB per vCPU.
        LambdaMemory = "lambda_memory",
        /// cgroup v2 `cpu.max`.
        CgroupV2 = "cgroup_v2",
        /// cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`.
        CgroupV1 = "cgroup_v1",
        /// The CPU affinity mask (`sched_getaffinity`).
        Affinity = "affinity",
        /// The machine's core count.
        #[default]
        Cores = "cores",
        /// The environment of an emulated memory sweep only: each memory size ran under
        /// its own CPU quota, so the figure is per row (`client.cpu_source`).
        QuotaPerMemorySize = "cpu_quota_per_memory_size",
    }
}

closed_set! {
    /// Which term of the model `X = min(C / R, P / c, B / S)` is the smallest.
    pub enum Limit {
        /// C / R: the requests in flight over their latency.
        Latency = "latency",
        /// P / c: the client's cores over its CPU per request.
        ClientCpu = "client_cpu",
        /// B / S: the bandwidth ceiling over the object size.
        Bandwidth = "bandwidth",
        /// A ceiling the curve shows but client CPU does not explain.
        Plateau = "plateau",
    }
}

/// The thresholds of the verdict rules. The rules, their order and what each checks
/// are listed once, in `analysis::rules::RULES` (and, checked against it by a test,
/// in docs/diagnosis.md); the first rule that holds wins.
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
    /// Where that ceiling came from: `probe` (this run's bandwidth probe) or `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_ceiling_source: Option<super::network::CeilingSource>,
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
            bandwidth_ceiling_source: None,
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
    /// The figures the rule looked at, by name, each with its unit.
    pub figures: Figures,
    /// One line in plain words.
    pub explanation: String,
    /// Further findings: cold costs, a suspected delayed-ACK stall, idle workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// Sets a figure, rounded as the result document writes it.
    pub fn set_figure(&mut self, name: FigureName, figure: Figure) {
        self.figures.set(name, figure);
    }
}

/// The model `X = min(C / R, P / c, B / S)` fitted to one bucket's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFit {
    /// R: latency per request (ms) that explains the rising part of the curve.
    #[serde(serialize_with = "tidy::dec3")]
    pub latency_ms_per_request: f64,
    /// The plateau the curve reached (objects/s), when it has one.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub plateau_objects_per_s: Option<f64>,
    /// 1000 / plateau: the serial cost per request the plateau implies (c / P), in ms.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub plateau_ms_per_request: Option<f64>,
    /// c: client CPU per request (ms), measured (median over the bucket's rows).
    #[serde(serialize_with = "tidy::sig4_opt")]
    pub client_cpu_ms_per_request: Option<f64>,
    /// P: cores the client could use.
    #[serde(serialize_with = "tidy::sig4")]
    pub client_cores: f64,
    /// P / c in objects/s, when c is known.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub client_cpu_ceiling_objects_per_s: Option<f64>,
    /// B / S in objects/s, when a bandwidth ceiling is known.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub bandwidth_ceiling_objects_per_s: Option<f64>,
    /// Root-mean-square of ln(model / measured) over the points: 0.1 is about 10%.
    #[serde(serialize_with = "tidy::sig4")]
    pub fit_rms_log_error: f64,
    /// Workers needed to reach the plateau: plateau x R (Little's law).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "tidy::sig4_opt")]
    pub workers_to_plateau: Option<f64>,
    /// Worker counts the fit used (0, not written, in results from before it was recorded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub points_fitted: u32,
    /// The model's error on worker counts it did not see: fitted on the first counts,
    /// the rest predicted. `None` with fewer than 3 counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
    /// The basis is thin: fewer than 4 counts fitted, no held-out check, or a
    /// held-out error over 25%. Predictions are then rough.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rough: bool,
}

/// For `skip_serializing_if`: a count not recorded.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The model fitted on a bucket's first worker counts, checked on the rest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    /// Worker counts fitted (the smallest ones).
    pub points_fitted: u32,
    /// Worker counts predicted (the largest ones).
    pub points_predicted: u32,
    /// The largest |predicted / measured - 1| over the predicted counts: 0.5 is 50%.
    #[serde(serialize_with = "tidy::sig4")]
    pub error_share: f64,
}

/// What the model predicts for one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub scenario: String,
    /// C: requests in flight.
    pub workers: u32,
    /// P.
    #[serde(serialize_with = "tidy::sig4")]
    pub client_cores: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub objects_per_s: f64,
    /// Wall time for `objects` objects at that rate.
    #[serde(serialize_with = "tidy::dec3")]
    pub wall_ms: f64,
    /// Which term of the model is the smallest.
    pub limit: Limit,
    /// The throughput measured at `workers`, when that count was run: the prediction
    /// there is the model's, checked against it, never "as measured".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub measured_objects_per_s: Option<f64>,
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
    /// Smallest worker count within 10% of the best throughput, where the curve
    /// flattened: `None` while it still rises (see `analysis::summary::knee`).
    pub knee_workers: Option<u32>,
    /// The worker count to use: the knee, or the largest tried while the curve rises.
    pub recommended_workers: Option<u32>,
    /// Why, in plain words: the bucket's story (`analysis::story`).
    pub recommendation: String,
    /// Verdicts by worker count (first repetition's row), in order run.
    pub verdicts: Vec<WorkerVerdict>,
    pub fit: Option<ModelFit>,
    /// The model's predictions that agree with the verdict at the largest count (the
    /// ones the story prints).
    pub predictions: Vec<Prediction>,
    /// Why the model's other predictions are not given (a large held-out error, a
    /// limit the model has no term for, a figure that disagrees with the verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictions_withheld: Option<String>,
    /// The axes of these rows (memory size, object size, client), flattened.
    #[serde(flatten)]
    pub axes: super::Axes,
}

/// How much faster the lower-latency bucket is, at one worker and at the best count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketComparison {
    /// The bucket with the lowest fitted latency per request.
    pub faster_bucket: String,
    pub slower_bucket: String,
    /// Fitted R of the slower over the faster.
    #[serde(serialize_with = "tidy::sig4_opt")]
    pub latency_ratio: Option<f64>,
    /// One-worker wall time of the slower over the faster.
    #[serde(serialize_with = "tidy::sig4_opt")]
    pub one_worker_speedup: Option<f64>,
    /// Best wall time of the slower over the faster.
    #[serde(serialize_with = "tidy::sig4")]
    pub best_speedup: f64,
    pub explanation: String,
    /// The axes of these rows (memory size, object size, client), flattened.
    #[serde(flatten)]
    pub axes: super::Axes,
}

/// The analysis block of the result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub thresholds: Thresholds,
    pub buckets: Vec<CurveAnalysis>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<BucketComparison>,
    /// On a size axis, per bucket: the limit that binds at each object size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_limits: Vec<SizeLimits>,
}

/// One bucket of a size axis: what bound its largest worker counts at each object
/// size, and whether that changes with size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeLimits {
    pub bucket: String,
    /// The axes of these rows but the object size (`s3_client`: `sdk`, the default, not
    /// written), flattened.
    #[serde(flatten)]
    pub axes: super::Axes,
    /// One per object size, in the order run.
    pub sizes: Vec<SizeLimit>,
    /// True when two sizes are bound by different limits.
    pub changes: bool,
    /// The finding in words, e.g. "the binding limit changes with size: 4096 B
    /// client_cpu from 64 workers, 1048576 B bandwidth from 8 workers".
    pub note: String,
}

/// The binding limit at one object size: the verdict of the largest worker count, and
/// the smallest worker count from which every larger one has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeLimit {
    pub object_size_bytes: u64,
    pub verdict: Verdict,
    pub from_workers: u32,
}

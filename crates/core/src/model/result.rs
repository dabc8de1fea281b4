//! The result document (`s3sweep.result/v1`): the run's environment and request, one
//! row per configuration, per-bucket summaries, and the optional analysis and fan-out
//! blocks. Every duration field ends in `_ms` (floating-point milliseconds), every
//! size in `_bytes` or `mib`, every rate in `_per_s`; latency histograms record
//! microseconds.

use serde::{Deserialize, Serialize};

use super::axes::Axes;
use super::closed_set::{closed_set, Outcome};
use super::diagnosis::{Analysis, Breakdown, ClientMeasure, ClientSide, CpuSource, Diagnosis};
use super::errors::ErrorCounts;
use super::fanout::ChildMeasure;
use super::histogram::{cdf_points, decode_histogram, HistogramError};
use super::listing::ObjectSize;
use super::memory::MemorySweepReport;
use super::network::{ChildWire, FanoutProbe, NetworkReport, WireCounts};
use super::request::{KeyRange, Split, SweepRequest};
use super::stats::{first_seen, round3, tidy, Percentiles};
use super::substrate::LambdaEnvironment;

/// The schema name and version of the result document.
pub const SCHEMA: &str = "s3sweep.result/v1";

/// The whole result of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    pub tool: ToolInfo,
    pub environment: Environment,
    /// The validated request, defaults filled in.
    pub request: SweepRequest,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Whole run including warm-ups, in milliseconds.
    #[serde(serialize_with = "tidy::dec3")]
    pub total_wall_ms: f64,
    /// One row per bucket x workers x repetition, in plan order (bucket, workers,
    /// repetition); each row's `run_index` says when it ran (an interleaved order runs
    /// them in rounds).
    pub results: Vec<ConfigResult>,
    /// One entry per bucket.
    pub summary: Vec<BucketSummary>,
    /// True when configurations were skipped (deadline).
    pub truncated: bool,
    /// Configurations not run, and why.
    pub skipped: Vec<SkippedConfig>,
    /// A fan-out coordinator's result: the children, their failures and the merge.
    /// `results` then holds the merged rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<FanoutReport>,
    /// Set when parts of the answer were dropped to fit a size limit (Lambda's 6 MB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<Trimmed>,
    /// Per-bucket curve analysis, model predictions and bucket comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Analysis>,
    /// A memory sweep (request `memory_mb`): the sizes run, what was done to the
    /// function, and per bucket the fastest and the cheapest memory x workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySweepReport>,
    /// The network: the order run, the bandwidth ceiling used and its source, the
    /// bandwidth probe's report. Absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkReport>,
    /// A `key_prefix` sweep: per bucket, what the listing before the sweep found and
    /// cost (its time is not in any row).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listing: Vec<super::KeyListing>,
    /// The S3 object the full, untrimmed result is written to (request `results_uri`
    /// or the function's `S3SWEEP_RESULTS_URI`), as `s3://bucket/key`. Absent when the
    /// result is written nowhere, and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_uri: Option<String>,
    /// The writes of the result to [`SweepResult::results_uri`] so far: how many
    /// succeeded and failed, and the first failures' messages. A failed write is
    /// recorded here, never an error of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_writes: Option<ResultsWrites>,
    /// Written by another client (`tool.client`, e.g. the boto3 baseline function):
    /// the row fields it could not measure, left at zero in every row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<super::Unmeasured>,
}

/// Whether every write of a result reached S3 (`failed` from the first failed write on:
/// the copy in S3 may be older than the answer, or missing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WritesStatus {
    #[default]
    Written,
    Failed,
}

/// The writes of a result to its S3 destination (after every configuration and once
/// at the end).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultsWrites {
    /// `failed` once any write failed: the answer says the result was not kept whole.
    #[serde(default)]
    pub status: WritesStatus,
    /// PutObject calls that succeeded before this copy was made.
    pub written: u32,
    /// PutObject calls that failed before this copy was made.
    pub failed: u32,
    /// The first distinct failures (at most [`ResultsWrites::MAX_ERRORS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// False in a copy written while the run was still going: its `skipped` then lists
    /// the configurations not run yet, and it has no summary or analysis.
    pub complete: bool,
}

impl ResultsWrites {
    /// Most failure messages kept.
    pub const MAX_ERRORS: usize = 3;

    /// Counts one write: `Ok` or its failure's message.
    pub fn add(&mut self, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.written += 1,
            Err(message) => {
                self.failed += 1;
                self.status = WritesStatus::Failed;
                if self.errors.len() < Self::MAX_ERRORS && !self.errors.contains(&message) {
                    self.errors.push(message);
                }
            }
        }
    }
}

/// What was dropped from a result to fit a size limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trimmed {
    pub limit_bytes: u64,
    /// The answer's size before anything was dropped.
    pub bytes_before: u64,
    /// Its size after (this block included).
    pub bytes_after: u64,
    /// In the order dropped.
    pub dropped: Vec<Dropped>,
}

closed_set! {
    /// A part of a result that can be dropped to fit a size limit.
    pub enum Dropped {
        /// Every row's error samples.
        ErrorSamples = "error_samples",
        /// A fan-out's per-child rows (the merged rows stay).
        ChildrenRows = "children_rows",
        /// The serialized histograms of a child's rows.
        Histograms = "histograms",
        /// Every row's timeline (what the plot draws over time; the verdicts were read
        /// from it before the answer was trimmed).
        Timelines = "timelines",
    }
}

/// What produced the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// Empty for a result written by another client (then `client` names it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub aws_sdk_s3_version: String,
    /// The S3 client of a result not written by s3sweep, e.g. `boto3 1.43.11 (botocore 1.43.11, Python 3.12.3), ThreadPoolExecutor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl ToolInfo {
    pub fn current() -> Self {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            aws_sdk_s3_version: aws_sdk_s3::meta::PKG_VERSION.to_string(),
            client: None,
        }
    }
}

closed_set! {
    /// What ran the sweep (default: `local`, as in tests and examples).
    #[derive(Default)]
    pub enum Runner {
        /// `s3sweep run`: the CLI against real buckets.
        Cli = "cli",
        /// `s3sweep local`: the CLI against the embedded server.
        #[default]
        Local = "local",
        /// The Lambda function (a fan-out's merged result too).
        Lambda = "lambda",
    }
}

closed_set! {
    /// Why a fan-out child produced no result.
    pub enum ChildErrorKind {
        /// The child returned an error.
        FunctionError = "function_error",
        /// The Invoke call was throttled (429).
        Throttled = "throttled",
        /// No answer within the child's time.
        Timeout = "timeout",
        /// The Invoke call itself failed.
        InvokeFailed = "invoke_failed",
        /// The answer was not a result document.
        BadResponse = "bad_response",
    }
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub runner: Runner,
    pub os: String,
    pub arch: String,
    /// vCPUs the process could use.
    pub vcpus: u32,
    /// Threads that ran the requests: the transport's lanes, one per usable core (at
    /// most one per thread of the async runtime).
    pub runtime_worker_threads: u32,
    pub memory_total_bytes: Option<u64>,
    /// Region requests were signed for.
    pub region: String,
    /// Explicit endpoint, when not AWS's own.
    pub endpoint: Option<String>,
    /// Cores' worth of CPU time the process could use, and where that comes from (see
    /// the rows' `client` block).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::sig4_opt")]
    pub usable_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_source: Option<CpuSource>,
    /// Where the keys that signed the requests came from: `lab` (the embedded
    /// server's fixed keys) or `chain` (the standard AWS chain: environment, profile,
    /// SSO, role). Absent in results written before it was recorded.
    #[serde(default)]
    pub credentials: Option<String>,
    /// Lambda facts when run in Lambda.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<LambdaEnvironment>,
}

/// One configuration: one bucket, one worker count, one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    pub bucket: String,
    /// Requests kept in flight.
    pub workers: u32,
    /// 1-based.
    pub repetition: u32,
    pub pool_connections: u32,
    /// GETs that finished, ok or failed (one per object; fewer when `cut_short`).
    pub requests: u64,
    pub ok: u64,
    pub errors: ErrorCounts,
    /// Attempts beyond the first, over all requests.
    pub retries: u64,
    /// The retries by what ended the attempt before each (timed requests that
    /// finished; a request cancelled at the deadline is not in it).
    #[serde(default)]
    pub retries_by_cause: crate::model::RetryCauses,
    /// 503 SlowDown / 429 answers to GETs, every attempt counted (a retried throttle
    /// included, so `retries` minus this is what other causes retried at most).
    #[serde(default)]
    pub throttled_responses: u64,
    /// Body bytes received by successful requests.
    pub bytes: u64,
    /// From the first request issued to the last body byte of the last one.
    #[serde(serialize_with = "tidy::dec3")]
    pub wall_ms: f64,
    /// Successful GETs per second of wall time.
    #[serde(serialize_with = "tidy::dec3")]
    pub objects_per_s: f64,
    /// Body MiB per second of wall time.
    #[serde(serialize_with = "tidy::dec3")]
    pub mib_per_s: f64,
    /// First byte at the wire: the request's connection in hand to its response
    /// headers (the last attempt), successful requests. Client preparation, waiting
    /// for a connection, connecting and retries are apart (`breakdown`).
    pub ttfb_ms: Percentiles,
    /// The call to the last body byte (the whole GET as the caller sees it, retries
    /// included), successful requests.
    pub ttlb_ms: Percentiles,
    /// Waiting for one of `pool_connections` slots before a request could be issued.
    pub pool_wait_ms: Percentiles,
    /// CPU time of this process (all threads) during the configuration.
    #[serde(serialize_with = "tidy::dec3")]
    pub cpu_ms: f64,
    /// `cpu_ms` divided by requests.
    #[serde(serialize_with = "tidy::sig4")]
    pub cpu_ms_per_get: f64,
    /// TCP connections opened during the configuration (warm-up excluded).
    pub connections_opened: u64,
    /// Time spent opening them, summed.
    #[serde(serialize_with = "tidy::dec3")]
    pub connect_ms_total: f64,
    /// S3 Express `CreateSession` calls made during the configuration (warm-up
    /// excluded: see `warmup`).
    pub session_requests: u64,
    /// The time-to-last-byte histogram of the successful requests, compact (2
    /// significant digits, hdrhistogram V2 + deflate, base64, microseconds; see
    /// `model::histogram`): the plot's latency CDF. Absent in older results and for
    /// rows without a successful request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttlb_histogram_us: Option<String>,
    /// TLS handshakes done during the configuration (one per HTTPS connection opened,
    /// warm-up excluded).
    #[serde(default)]
    pub tls_handshakes: u64,
    /// What the untimed warm-up requests paid for before the timed ones: connections
    /// opened (TCP connect and TLS handshake apart), `CreateSession` calls. The same
    /// block as `breakdown`; absent when there was no warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Breakdown>,
    /// Fan-out children only: the timed phase's wall-clock window and serialized
    /// latency histograms, so the coordinator can merge rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildMeasure>,
    /// True when the deadline stopped the configuration before every object was read:
    /// the figures cover the GETs that finished.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
    /// Objects of the configuration not read because the deadline stopped it (GETs
    /// cancelled in flight included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_not_done: u64,
    /// Up to three distinct error messages, for a first look at failures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_samples: Vec<String>,
    /// Where the time went, cold requests apart from steady ones .
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// CPU, runtime threads, memory and requests in flight of the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientSide>,
    /// What bound this configuration, with the figures that decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
    /// The configuration's axes (flattened: `memory_mb`, the Lambda memory size, MB,
    /// of a memory sweep's row; `object_size_bytes`, a number on a size axis's row
    /// (request `object_sizes_bytes`: every object of the configuration has it), or
    /// `{min, p50, p99, max}` from a `key_prefix` sweep's listing, absent for a plain
    /// key template, whose objects are one size; `s3_client`, request `clients`).
    #[serde(flatten)]
    pub axes: Axes<ObjectSize>,
    /// True when that memory size was emulated (locally, by a CPU quota of
    /// `memory_mb` / 1,769 cores) rather than run on Lambda.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulated: bool,
    /// What the interface(s) received during the timed phase (OS counters; absent
    /// where they cannot be read, and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireCounts>,
    /// The round (1-based) of an interleaved order: the repetition's round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// 0-based position in the order the configurations ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_index: Option<u32>,
    /// True when the row moved more than the sustained ceiling allows (15% over the
    /// probe's sustained MiB/s): it ran on burst credit, and its figures flatter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_burst: bool,
    /// What happened inside the configuration, interval by interval (see
    /// `model::timeline`; absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<super::Timeline>,
    /// What hedging did (hedges sent, won, the bytes the losers had read); absent
    /// when the row's `hedge` is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<super::HedgeCounts>,
    /// Other invocations of the same process during the row (Lambda functions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<super::Overlap>,
}

/// The best configuration of one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketSummary {
    pub bucket: String,
    /// Worker count with the lowest median wall time over repetitions.
    pub best_workers: u32,
    #[serde(serialize_with = "tidy::dec3")]
    pub best_wall_ms: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub best_objects_per_s: f64,
    /// Median wall time at one worker, when one worker was run.
    #[serde(serialize_with = "tidy::dec3_opt")]
    pub one_worker_wall_ms: Option<f64>,
    /// `one_worker_wall_ms / best_wall_ms`.
    #[serde(serialize_with = "tidy::sig4_opt")]
    pub speedup_over_one_worker: Option<f64>,
    /// Failed requests over every configuration of the bucket.
    pub errors_total: u64,
    /// The knee: the smallest worker count whose median throughput is within 10% of
    /// the best, where a larger count was tried (more workers than this bought less
    /// than 10%); `None` while the curve still rises at its largest count.
    pub knee_workers: Option<u32>,
    /// The summary is per bucket and axes (memory size, object size, client).
    #[serde(flatten)]
    pub axes: Axes,
}

/// A configuration that was not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedConfig {
    pub bucket: String,
    pub workers: u32,
    pub repetition: u32,
    pub reason: String,
    /// The configuration's axes (object size on a size axis, client), flattened.
    #[serde(flatten)]
    pub axes: Axes,
}

/// The fan-out block of a coordinator's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanoutReport {
    /// The function invoked.
    pub function_name: String,
    pub invocations: u32,
    pub split: Split,
    pub start_delay_ms: u64,
    /// The shared start, ms since the Unix epoch.
    pub start_unix_ms: u64,
    /// Children whose result was merged.
    pub children_ok: u32,
    /// Children that errored, timed out or were throttled (named in `children`).
    pub children_failed: u32,
    /// Per configuration: how many children ran it and how far apart they were.
    pub configurations: Vec<MergedConfig>,
    /// Every child, its shard, its outcome and its own rows.
    pub children: Vec<ChildReport>,
    /// With `probe_bandwidth`: each merged child's probe and their sum, the merged
    /// rows' ceiling (N functions, N NICs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<FanoutProbe>,
}

/// How one merged configuration came together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedConfig {
    pub bucket: String,
    /// Requests in flight per child.
    pub workers: u32,
    pub repetition: u32,
    /// Children whose row was merged.
    pub children: u32,
    /// Requests in flight over all children (`workers` x `children`).
    pub workers_total: u32,
    /// Earliest child start, ms since the Unix epoch.
    #[serde(serialize_with = "tidy::dec3")]
    pub first_start_unix_ms: f64,
    /// Latest child finish.
    #[serde(serialize_with = "tidy::dec3")]
    pub last_finish_unix_ms: f64,
    /// The common window, first start to last finish: the merged row's `wall_ms`.
    #[serde(serialize_with = "tidy::dec3")]
    pub window_ms: f64,
    /// Latest start minus earliest start: clock skew, cold starts and drift.
    #[serde(serialize_with = "tidy::dec3")]
    pub start_spread_ms: f64,
    /// Latest finish minus earliest finish.
    #[serde(serialize_with = "tidy::dec3")]
    pub finish_spread_ms: f64,
    /// Children that started cold (first invocation of their execution environment).
    pub cold_children: Vec<u32>,
    /// Successful children that did not run this configuration (deadline).
    pub missing_children: Vec<u32>,
    /// Each child's wire rate (children that recorded one): N functions are N NICs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children_wire: Vec<ChildWire>,
    /// The sum of the children's wire rates, MiB/s: the aggregate over their NICs.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::dec3_opt")]
    pub wire_mib_per_s_total: Option<f64>,
}

/// One child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    /// 0-based index of the invocation.
    pub index: u32,
    /// The objects it read.
    pub key_range: KeyRange,
    /// The shuffle seed it used.
    pub seed: u64,
    pub status: Outcome,
    /// The Invoke call's round trip, ms.
    #[serde(serialize_with = "tidy::dec3")]
    pub invoke_ms: f64,
    /// First invocation of its execution environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ChildError>,
    /// Its rows (histograms dropped, window kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ConfigResult>,
    /// Configurations it skipped (deadline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedConfig>,
}

/// Why a child produced no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildError {
    pub kind: ChildErrorKind,
    /// The child's `errorType`, when it returned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    pub message: String,
}

impl ClientSide {
    /// The client side of a finished row.
    pub fn of(row: &ConfigResult, m: ClientMeasure) -> ClientSide {
        let wall_ms = row.wall_ms.max(1e-6);
        let threads = m.runtime_worker_threads.max(1);
        let vcpus = m.vcpus.max(1);
        let mean_in_flight = row.objects_per_s * row.ttlb_ms.mean / 1000.0;
        let possible = row.possible_in_flight();
        let usable = if m.usable_cores > 0.0 {
            m.usable_cores
        } else {
            f64::from(vcpus)
        };
        ClientSide {
            vcpus,
            runtime_worker_threads: threads,
            client_cores: round3(usable.min(f64::from(threads))),
            usable_cores: round3(usable),
            cpu_source: if m.usable_cores > 0.0 {
                m.cpu_source
            } else {
                CpuSource::Cores
            },
            machine_cores_busy: m.machine_busy.map(|b| round3(b.as_secs_f64() * 1000.0 / wall_ms)),
            cores_busy: round3(row.cpu_ms / wall_ms),
            runtime_busy_ratio: round3(
                (m.runtime_busy.as_secs_f64() * 1000.0 / (wall_ms * f64::from(threads))).min(1.0),
            ),
            cpu_ms_per_get: row.cpu_ms_per_get,
            peak_rss_bytes: m.peak_rss_bytes,
            mean_in_flight: round3(mean_in_flight),
            in_flight_ratio: round3(mean_in_flight / possible),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why a result file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    #[error("not a JSON document: {0}")]
    Json(serde_json::Error),
    #[error("not an s3sweep result: `schema` is {0:?}, expected {SCHEMA:?}")]
    Schema(String),
    #[error("not an s3sweep result ({SCHEMA}): {0}")]
    Shape(serde_json::Error),
}

impl SweepResult {
    /// A result document with nothing measured yet: no rows, no summary, no analysis.
    pub fn new(environment: Environment, request: SweepRequest, started_unix_ms: u64) -> Self {
        SweepResult {
            schema: SCHEMA.to_string(),
            tool: ToolInfo::current(),
            environment,
            request,
            started_unix_ms,
            total_wall_ms: 0.0,
            results: Vec::new(),
            summary: Vec::new(),
            truncated: false,
            skipped: Vec::new(),
            fanout: None,
            trimmed: None,
            analysis: None,
            memory: None,
            network: None,
            listing: Vec::new(),
            results_uri: None,
            results_writes: None,
            not_measured: Vec::new(),
        }
    }

    /// Parses a result document (from `local --json`, `run`, or the Lambda's response),
    /// checking its schema first so an unrelated JSON file gets a clear error.
    pub fn from_json(text: &str) -> Result<SweepResult, ResultFileError> {
        Self::from_json_with(text, |_| {})
    }

    /// [`SweepResult::from_json`], with `fix` applied to the parsed document first.
    pub fn from_json_with(
        text: &str,
        fix: impl FnOnce(&mut serde_json::Value),
    ) -> Result<SweepResult, ResultFileError> {
        let mut value: serde_json::Value = serde_json::from_str(text).map_err(ResultFileError::Json)?;
        fix(&mut value);
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => return Err(ResultFileError::Schema(other.to_string())),
            None => return Err(ResultFileError::Schema(String::new())),
        }
        serde_json::from_value(value).map_err(ResultFileError::Shape)
    }

    /// The document as the CLI writes it (`--json FILE`, `run`'s output): pretty JSON,
    /// two-space indent, no final newline.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a result document serializes")
    }

    /// The buckets of the rows, in the order first run.
    pub fn buckets(&self) -> Vec<&str> {
        first_seen(self.results.iter().map(|r| r.bucket.as_str()))
    }

    /// The rows of one bucket, in the order run.
    pub fn rows_of<'a>(&'a self, bucket: &'a str) -> impl Iterator<Item = &'a ConfigResult> + 'a {
        self.results.iter().filter(move |r| r.bucket == bucket)
    }

    /// The rows of one bucket at one memory size (`None`: rows without a size).
    pub fn rows_at<'a>(
        &'a self,
        bucket: &'a str,
        memory_mb: Option<u32>,
    ) -> impl Iterator<Item = &'a ConfigResult> + 'a {
        self.rows_of(bucket).filter(move |r| r.axes.memory_mb == memory_mb)
    }

    /// The rows of one summary: its bucket at its memory size and object size, of its
    /// S3 client.
    pub fn rows_for<'a>(&'a self, summary: &'a BucketSummary) -> impl Iterator<Item = &'a ConfigResult> + 'a {
        self.rows_of(&summary.bucket)
            .filter(move |r| r.axes.key() == summary.axes)
    }

    /// True when the rows come from more than one S3 client (request `clients`).
    pub fn several_clients(&self) -> bool {
        self.results
            .iter()
            .any(|r| r.axes.s3_client != self.results[0].axes.s3_client)
    }

    /// The axes the rows set or differ on: those every output names.
    pub fn named_axes(&self) -> super::axes::Named {
        super::axes::Named::of(self.results.iter().map(|r| r.axes.key()))
    }

    /// True when some rows hedged (request `hedge` other than `off`).
    pub fn hedged(&self) -> bool {
        self.results.iter().any(|r| !r.axes.hedge.is_off())
    }

    /// The object sizes of a size axis's rows, in the order first run (empty: no axis).
    pub fn object_sizes(&self) -> Vec<u64> {
        first_seen(self.results.iter().filter_map(ConfigResult::size_axis_bytes))
    }

    /// The memory sizes of the rows, in the order first run (empty: no memory sweep).
    pub fn memory_sizes(&self) -> Vec<u32> {
        first_seen(self.results.iter().filter_map(|r| r.axes.memory_mb))
    }
}

impl ConfigResult {
    /// The row's object size on a size axis (`None`: no axis, or a listing's spread).
    pub fn size_axis_bytes(&self) -> Option<u64> {
        self.axes.key().object_size_bytes
    }

    /// The latency CDF of the row from [`ConfigResult::ttlb_histogram_us`]: (ms,
    /// fraction at or below), one point per bucket. `None` when the row has no
    /// histogram.
    pub fn ttlb_cdf(&self) -> Option<Result<Vec<(f64, f64)>, HistogramError>> {
        let text = self.ttlb_histogram_us.as_deref()?;
        Some(decode_histogram("ttlb_histogram_us", text).map(|h| cdf_points(&h)))
    }

    /// Requests the engine could keep in flight on average: `min(workers, pool)`, less
    /// the last round that runs part empty (N requests in rounds of W average
    /// N / ceil(N / W)).
    pub fn possible_in_flight(&self) -> f64 {
        let w = u64::from(self.workers.min(self.pool_connections)).max(1);
        let n = self.requests.max(1);
        n as f64 / n.div_ceil(w) as f64
    }
}

/// The worker counts of `rows`, in the order first run.
pub(crate) fn worker_counts<'a>(rows: impl IntoIterator<Item = &'a ConfigResult>) -> Vec<u32> {
    first_seen(rows.into_iter().map(|r| r.workers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows;

    #[test]
    fn result_files_are_checked() {
        let a = test_rows::result(vec![test_rows::row("x-bucket", 4, 1, 10.0, 0)]);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(SweepResult::from_json(&text).unwrap(), a);
        assert!(matches!(SweepResult::from_json("{"), Err(ResultFileError::Json(_))));
        assert!(matches!(
            SweepResult::from_json(r#"{"schema": "other/v9"}"#),
            Err(ResultFileError::Schema(_))
        ));
        assert!(matches!(
            SweepResult::from_json(r#"{"schema": "s3sweep.result/v1"}"#),
            Err(ResultFileError::Shape(_))
        ));
    }

    /// `text` without the lines of the fields `names` (a field that opens an object or
    /// an array, with its block).
    fn without_fields(text: &str, names: &[&str]) -> String {
        let mut out = Vec::new();
        let mut skipping = 0i32;
        for line in text.lines() {
            if skipping > 0 {
                skipping += line.matches(['{', '[']).count() as i32 - line.matches(['}', ']']).count() as i32;
                continue;
            }
            let t = line.trim_start();
            if names.iter().any(|n| t.starts_with(&format!("\"{n}\": "))) {
                skipping = line.matches(['{', '[']).count() as i32 - line.matches(['}', ']']).count() as i32;
                continue;
            }
            out.push(line);
        }
        out.join("\n")
    }

    /// The committed v1 results (a sweep and an emulated memory sweep), read into the
    /// typed model and written back as the CLI writes them, are the same bytes: every
    /// serde name, enum name and number (to the last digit) of the contract is kept.
    /// docs/memory-demo.json too (a file written before a field was added to v1 names
    /// the field here: it comes back with its default).
    #[test]
    fn stored_v1_results_round_trip_byte_for_byte() {
        let added_since: [(&str, &[&str]); 2] = [("docs/demo.json", &[]), ("docs/memory-demo.json", &[])];
        for (name, added) in added_since {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(name);
            let text = std::fs::read_to_string(&path).unwrap();
            let again = without_fields(&SweepResult::from_json(&text).unwrap().to_json(), added);
            if let Some((n, (was, now))) = text.lines().zip(again.lines()).enumerate().find(|(_, (a, b))| a != b) {
                panic!("{name} line {}: stored {was:?}, written back {now:?}", n + 1);
            }
            assert!(again == text, "{name}: written back differs in length or at the end");
        }
    }
}

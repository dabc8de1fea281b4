//! The serde contract and nothing else: the sweep request (with its fan-out and price
//! sections), the result document (rows, summaries, environment, diagnosis and fan-out
//! blocks), percentiles and error kinds. This layer imports nothing from the crate;
//! every other layer speaks in these types.

pub(crate) mod axes;
pub mod closed_set;
pub(crate) mod diagnosis;
pub(crate) mod errors;
pub(crate) mod fanout;
pub(crate) mod figures;
pub(crate) mod hedge;
pub mod histogram;
pub(crate) mod listing;
pub(crate) mod memory;
pub mod network;
pub(crate) mod provenance;
pub mod request;
pub(crate) mod result;
pub(crate) mod run_kind;
pub mod stats;
pub(crate) mod substrate;
pub(crate) mod timeline;

pub use axes::{group_by_axes, Axes, AxisValues, Named, AXES};
pub use closed_set::{Client, Outcome};
pub use diagnosis::{
    Analysis, Breakdown, BucketComparison, ClientMeasure, ClientSide, CpuSource, CurveAnalysis, DiagnoseError,
    Diagnosis, HeldOut, Limit, ModelFit, Prediction, SizeLimit, SizeLimits, Thresholds, Verdict, WorkerVerdict,
};
pub use errors::{ErrorCounts, ErrorKind, RetryCauses};
pub use fanout::{ChildMeasure, SerializedHistograms};
pub use figures::{Figure, FigureName, FigureUnit, Figures};
pub use hedge::{Hedge, HedgeCounts};
pub use histogram::{decode_histogram, DecodeProblem, HistogramError};
pub use listing::{KeyListing, ObjectSize, SizeSpread};
pub use memory::{MemoryChoice, MemoryConfig, MemoryCost, MemoryMode, MemoryStep, MemorySweepReport};
pub use network::{
    BandwidthCeiling, CeilingSource, ChildProbe, ChildWire, FanoutProbe, NetworkReport, Order, ProbeBurst,
    ProbeObjectKind, ProbeReport, WireCounts,
};
pub use provenance::{Deployment, NetworkPath, Unmeasured};
pub use request::{
    Architecture, FanoutRequest, FromCoordinator, KeyRange, ListedShare, Prices, Role, Split, SweepRequest, TimeoutsMs,
};
pub use result::{
    BucketSummary, ChildError, ChildErrorKind, ChildReport, ConfigResult, Dropped, Environment, FanoutReport,
    MergedConfig, ResultFileError, ResultsWrites, Runner, SkippedConfig, SweepResult, ToolInfo, Trimmed, WritesStatus,
    SCHEMA,
};
pub use run_kind::RunKind;
pub use stats::Percentiles;
pub use substrate::{LambdaEnvironment, Overlap, Substrate, SubstrateInfo};
pub use timeline::{Bounded, KindCounts, Timeline, BASE_INTERVAL_MS, MAX_TIMELINE_INTERVALS};

// Rows and results for unit tests, this crate's and the function's (another crate,
// where `#[cfg(test)]` items of this one are not compiled). Not part of the API.
#[doc(hidden)]
pub mod test_rows {
    //! Rows and results for unit tests.
    pub use super::*;

    pub fn row(bucket: &str, workers: u32, rep: u32, wall_ms: f64, errors: u64) -> ConfigResult {
        let mut e = ErrorCounts::default();
        e.add(ErrorKind::NotFound, errors);
        ConfigResult {
            bucket: bucket.into(),
            workers,
            repetition: rep,
            pool_connections: 20,
            requests: 100,
            ok: 100 - errors,
            errors: e,
            retries: 0,
            retries_by_cause: Default::default(),
            throttled_responses: 0,
            bytes: 0,
            child: None,
            ttlb_histogram_us: None,
            wall_ms,
            objects_per_s: 100_000.0 / wall_ms,
            mib_per_s: 0.0,
            ttfb_ms: Percentiles::default(),
            ttlb_ms: Percentiles::default(),
            pool_wait_ms: Percentiles::default(),
            cpu_ms: 0.0,
            cpu_ms_per_get: 0.0,
            connections_opened: 0,
            connect_ms_total: 0.0,
            session_requests: 0,
            cut_short: false,
            requests_not_done: 0,
            tls_handshakes: 0,
            warmup: None,
            error_samples: vec![],
            breakdown: None,
            client: None,
            diagnosis: None,
            axes: Axes::default(),
            emulated: false,
            wire: None,
            round: None,
            run_index: None,
            in_burst: false,
            timeline: None,
            hedging: None,
            overlap: None,
        }
    }

    /// A timeline of 100 ms intervals with `gets` GETs each (64 KiB apiece), first
    /// bytes at 1/2 ms (p50/p99), 4 in flight, 99% done at 150 ms.
    pub fn timeline(gets: &[u32]) -> Timeline {
        Timeline {
            interval_ms: 100,
            gets: gets.to_vec(),
            body_bytes: gets.iter().map(|&g| u64::from(g) << 16).collect(),
            ttfb_p50_ms: vec![1.0; gets.len()],
            ttfb_p99_ms: vec![2.0; gets.len()],
            in_flight: vec![4.0; gets.len()],
            done_99pct_ms: Some(150.0),
            ..Timeline::default()
        }
    }

    /// A bandwidth probe's report of `mib_per_s` per interval of `interval_ms`.
    pub fn probe_report(interval_ms: u64, mib_per_s: Vec<f64>) -> ProbeReport {
        ProbeReport {
            bucket: "b-1".into(),
            kind: ProbeObjectKind::ProbeObject,
            key: "s3sweep/probe-object".into(),
            streams: 8,
            requests: 10,
            errors: 0,
            body_bytes: 1 << 28,
            wall_ms: interval_ms as f64 * mib_per_s.len() as f64,
            sustained_mib_per_s: mib_per_s.last().copied().unwrap_or(0.0),
            peak_mib_per_s: mib_per_s.iter().copied().fold(0.0, f64::max),
            interval_ms,
            interval_mib_per_s: mib_per_s,
            burst: None,
            cores_busy: 0.2,
            usable_cores: 1.0,
            machine_cores_busy: None,
            lower_bound: false,
            stopped_by: network::ProbeStop::Time,
            explanation: String::new(),
        }
    }

    /// A whole result document around `rows`: a local run on linux/x86_64, requesting
    /// the rows' buckets in the order they first appear, with no summary (see
    /// `analysis::summarized`).
    pub fn result(rows: Vec<ConfigResult>) -> SweepResult {
        let names = stats::first_seen(rows.iter().map(|r| r.bucket.clone()));
        SweepResult {
            schema: SCHEMA.into(),
            tool: ToolInfo::current(),
            environment: Environment {
                runner: Runner::Local,
                os: "linux".into(),
                arch: "x86_64".into(),
                vcpus: 2,
                runtime_worker_threads: 2,
                memory_total_bytes: None,
                region: "us-east-1".into(),
                endpoint: None,
                usable_cores: None,
                cpu_source: None,
                credentials: None,
                lambda: None,
            },
            request: SweepRequest::new(names),
            started_unix_ms: 0,
            total_wall_ms: 0.0,
            summary: vec![],
            results: rows,
            truncated: false,
            analysis: None,
            skipped: vec![],
            fanout: None,
            trimmed: None,
            memory: None,
            network: None,
            listing: Vec::new(),
            results_uri: None,
            results_writes: None,
            not_measured: Vec::new(),
        }
    }

    /// One row per wall time in `walls`: repetitions 1, 2, ... of (`bucket`, `workers`).
    pub fn reps(bucket: &str, workers: u32, walls: &[f64]) -> Vec<ConfigResult> {
        walls
            .iter()
            .enumerate()
            .map(|(i, &w)| row(bucket, workers, i as u32 + 1, w, 0))
            .collect()
    }

    /// The original measurement's wall times (workers, ms per 1,000 objects) for the
    /// Express One Zone bucket (docs/background.md).
    pub const SEED_EXPRESS_MS: [(u32, f64); 6] = [
        (1, 7831.0),
        (2, 4037.0),
        (4, 2625.0),
        (8, 2826.0),
        (16, 2668.0),
        (20, 2410.0),
    ];
    /// The same for the S3 Standard bucket.
    pub const SEED_STANDARD_MS: [(u32, f64); 6] = [
        (1, 47625.0),
        (2, 17334.0),
        (4, 6993.0),
        (8, 3508.0),
        (16, 2868.0),
        (20, 2587.0),
    ];
}

//! Results: the versioned result document (`s3sweep.result/v1`), its per-configuration
//! rows and per-bucket summaries, percentile summaries of hdrhistograms, and the human
//! tables the CLI prints.
//!
//! Every duration field ends in `_ms` (floating-point milliseconds), every size in
//! `_bytes` or `mib`, every rate in `_per_s`. Latency histograms record microseconds.

use std::fmt::Write as _;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::request::SweepRequest;

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
    pub total_wall_ms: f64,
    /// One row per bucket x workers x repetition, in the order run.
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
    pub fanout: Option<crate::fanout::FanoutReport>,
    /// Per-bucket curve analysis, model predictions and bucket comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<crate::diagnose::Analysis>,
}

/// What produced the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    pub aws_sdk_s3_version: String,
}

impl ToolInfo {
    pub fn current() -> Self {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            aws_sdk_s3_version: aws_sdk_s3::meta::PKG_VERSION.to_string(),
        }
    }
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `cli`, `local` or `lambda`.
    pub runner: String,
    pub os: String,
    pub arch: String,
    /// vCPUs the process could use.
    pub vcpus: u32,
    /// Threads of the async runtime that ran the requests.
    pub runtime_worker_threads: u32,
    pub memory_total_bytes: Option<u64>,
    /// Region requests were signed for.
    pub region: String,
    /// Explicit endpoint, when not AWS's own.
    pub endpoint: Option<String>,
    /// Lambda facts when run in Lambda.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<LambdaEnvironment>,
}

/// Facts of the Lambda function that ran the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LambdaEnvironment {
    pub function_name: Option<String>,
    pub function_version: Option<String>,
    pub memory_size_mb: Option<u32>,
    /// True for the first invocation of this execution environment.
    pub cold_start: bool,
    /// Lambda's name for the architecture: `x86_64` or `arm64`.
    #[serde(default)]
    pub architecture: Option<String>,
    /// `AWS_REGION` of the function.
    #[serde(default)]
    pub region: Option<String>,
    /// The invocation's request id.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Time left before the invocation's deadline when the handler started; `None`
    /// when the deadline was not plausible (e.g. under `cargo lambda watch`) and the
    /// sweep ran without one.
    #[serde(default)]
    pub remaining_ms_at_start: Option<u64>,
    /// Kept free before the deadline: no configuration starts unless it is expected
    /// to finish this long before the deadline.
    #[serde(default)]
    pub safety_margin_ms: u64,
}

/// Percentiles of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// Samples the percentiles are drawn from.
    pub count: u64,
}

impl Percentiles {
    /// Summarises a histogram of microseconds.
    pub fn from_histogram_us(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| round3(us as f64 / 1000.0);
        Percentiles {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            mean: round3(h.mean() / 1000.0),
            count: h.len(),
        }
    }
}

/// Failed requests by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub total: u64,
    /// 404 NoSuchKey / NoSuchBucket.
    pub not_found: u64,
    /// 403.
    pub access_denied: u64,
    /// 503 SlowDown, 429.
    pub throttled: u64,
    /// Other 5xx.
    pub server_error: u64,
    /// Connect, first-byte or attempt timeout.
    pub timeout: u64,
    /// Connection refused, reset or closed, truncated body.
    pub connection: u64,
    /// Anything else.
    pub other: u64,
}

/// The kinds of failure a request can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NotFound,
    AccessDenied,
    Throttled,
    ServerError,
    Timeout,
    Connection,
    Other,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AccessDenied => "access_denied",
            ErrorKind::Throttled => "throttled",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Other => "other",
        }
    }
}

impl ErrorCounts {
    pub fn add(&mut self, kind: ErrorKind, n: u64) {
        self.total += n;
        let slot = match kind {
            ErrorKind::NotFound => &mut self.not_found,
            ErrorKind::AccessDenied => &mut self.access_denied,
            ErrorKind::Throttled => &mut self.throttled,
            ErrorKind::ServerError => &mut self.server_error,
            ErrorKind::Timeout => &mut self.timeout,
            ErrorKind::Connection => &mut self.connection,
            ErrorKind::Other => &mut self.other,
        };
        *slot += n;
    }

    /// `kind=count` for every non-zero kind, or `0`.
    pub fn short(&self) -> String {
        if self.total == 0 {
            return "0".into();
        }
        let mut s = String::new();
        for (name, n) in [
            ("not_found", self.not_found),
            ("access_denied", self.access_denied),
            ("throttled", self.throttled),
            ("server_error", self.server_error),
            ("timeout", self.timeout),
            ("connection", self.connection),
            ("other", self.other),
        ] {
            if n > 0 {
                if !s.is_empty() {
                    s.push(' ');
                }
                let _ = write!(s, "{name}={n}");
            }
        }
        s
    }
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
    /// GETs issued (one per object).
    pub requests: u64,
    pub ok: u64,
    pub errors: ErrorCounts,
    /// Attempts beyond the first, over all requests.
    pub retries: u64,
    /// Body bytes received by successful requests.
    pub bytes: u64,
    /// From the first request issued to the last body byte of the last one.
    pub wall_ms: f64,
    /// Successful GETs per second of wall time.
    pub objects_per_s: f64,
    /// Body MiB per second of wall time.
    pub mib_per_s: f64,
    /// Request issued (connection in hand) to response headers, successful requests.
    pub ttfb_ms: Percentiles,
    /// Request issued to last body byte, successful requests.
    pub ttlb_ms: Percentiles,
    /// Waiting for one of `pool_connections` slots before a request could be issued.
    pub pool_wait_ms: Percentiles,
    /// CPU time of this process (all threads) during the configuration.
    pub cpu_ms: f64,
    /// `cpu_ms` divided by requests.
    pub cpu_ms_per_get: f64,
    /// TCP connections opened during the configuration (warm-up excluded).
    pub connections_opened: u64,
    /// Time spent opening them, summed.
    pub connect_ms_total: f64,
    /// S3 Express `CreateSession` calls made during the configuration.
    pub session_requests: u64,
    /// Fan-out children only: the timed phase's wall-clock window and serialized
    /// latency histograms, so the coordinator can merge rows (see [`crate::fanout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<crate::fanout::ChildMeasure>,
    /// Up to three distinct error messages, for a first look at failures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_samples: Vec<String>,
    /// Where the time went, cold requests apart from steady ones (see [`crate::diagnose`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<crate::diagnose::Breakdown>,
    /// CPU, runtime threads, memory and requests in flight of the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::diagnose::ClientSide>,
    /// What bound this configuration, with the figures that decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<crate::diagnose::Diagnosis>,
}

/// The best configuration of one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketSummary {
    pub bucket: String,
    /// Worker count with the lowest median wall time over repetitions.
    pub best_workers: u32,
    pub best_wall_ms: f64,
    pub best_objects_per_s: f64,
    /// Median wall time at one worker, when one worker was run.
    pub one_worker_wall_ms: Option<f64>,
    /// `one_worker_wall_ms / best_wall_ms`.
    pub speedup_over_one_worker: Option<f64>,
    /// Failed requests over every configuration of the bucket.
    pub errors_total: u64,
    /// The knee: the smallest worker count whose median throughput is within 10% of
    /// the best. More workers than this buy less than 10%.
    pub knee_workers: Option<u32>,
}

/// A configuration that was not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedConfig {
    pub bucket: String,
    pub workers: u32,
    pub repetition: u32,
    pub reason: String,
}

/// A duration in whole microseconds (saturating), the unit latency histograms record.
pub fn micros(d: std::time::Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Successful GETs per second and body MiB per second over `wall_s` seconds, as a
/// [`ConfigResult`] reports them.
pub fn rates(ok: u64, bytes: u64, wall_s: f64) -> (f64, f64) {
    (
        round3(ok as f64 / wall_s),
        round3(bytes as f64 / wall_s / (1024.0 * 1024.0)),
    )
}

/// CPU milliseconds per request, to the nanosecond.
pub fn cpu_ms_per_get(cpu_ms: f64, requests: u64) -> f64 {
    round3(cpu_ms / requests.max(1) as f64 * 1000.0) / 1000.0
}

/// Rounds to three decimals (microsecond resolution in milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Median of wall times per worker count for one bucket, in the order first run.
fn median_walls(results: &[ConfigResult], bucket: &str) -> Vec<(u32, f64, f64, u64)> {
    let mut order: Vec<u32> = Vec::new();
    for r in results.iter().filter(|r| r.bucket == bucket) {
        if !order.contains(&r.workers) {
            order.push(r.workers);
        }
    }
    order
        .into_iter()
        .map(|w| {
            let rows: Vec<&ConfigResult> = results
                .iter()
                .filter(|r| r.bucket == bucket && r.workers == w)
                .collect();
            let mut walls: Vec<f64> = rows.iter().map(|r| r.wall_ms).collect();
            walls.sort_by(f64::total_cmp);
            let median = walls[walls.len() / 2];
            let mut rates: Vec<f64> = rows.iter().map(|r| r.objects_per_s).collect();
            rates.sort_by(f64::total_cmp);
            let errors = rows.iter().map(|r| r.errors.total).sum();
            (w, median, rates[rates.len() / 2], errors)
        })
        .collect()
}

/// The knee of a throughput curve: the smallest worker count whose throughput is at
/// least 90% of the best. `points` are (workers, objects per second) in any order.
pub fn knee(points: &[(u32, f64)]) -> Option<u32> {
    let best = points
        .iter()
        .map(|p| p.1)
        .filter(|t| t.is_finite())
        .max_by(f64::total_cmp)?;
    points
        .iter()
        .filter(|p| p.1.is_finite() && p.1 >= 0.9 * best)
        .map(|p| p.0)
        .min()
}

/// Summaries per bucket, in the order buckets appear. Configurations with errors still
/// count: a fast run that failed half its requests is not the best, so the best is the
/// fastest among worker counts without errors when there is one.
pub fn summarize(results: &[ConfigResult]) -> Vec<BucketSummary> {
    let mut buckets: Vec<&str> = Vec::new();
    for r in results {
        if !buckets.contains(&r.bucket.as_str()) {
            buckets.push(&r.bucket);
        }
    }
    buckets
        .into_iter()
        .map(|bucket| {
            let walls = median_walls(results, bucket);
            let clean: Vec<_> = walls.iter().filter(|w| w.3 == 0).collect();
            let pool = if clean.is_empty() {
                walls.iter().collect()
            } else {
                clean
            };
            let best = pool
                .into_iter()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .copied()
                .expect("a bucket in results has at least one row");
            let one = walls.iter().find(|w| w.0 == 1).map(|w| w.1);
            let knee_workers = knee(
                &walls
                    .iter()
                    .filter(|w| w.3 == 0)
                    .map(|w| (w.0, w.2))
                    .collect::<Vec<_>>(),
            );
            BucketSummary {
                bucket: bucket.to_string(),
                best_workers: best.0,
                best_wall_ms: best.1,
                best_objects_per_s: best.2,
                one_worker_wall_ms: one,
                speedup_over_one_worker: one.map(|o| round3(o / best.1.max(0.001))),
                errors_total: results
                    .iter()
                    .filter(|r| r.bucket == bucket)
                    .map(|r| r.errors.total)
                    .sum(),
                knee_workers,
            }
        })
        .collect()
}

/// The human tables: one per bucket, then the summary lines.
pub fn render_tables(result: &SweepResult) -> String {
    render_tables_as(result, UTF8_FULL_CONDENSED)
}

/// The tables in Markdown, for pasting into issues.
pub fn render_markdown(result: &SweepResult) -> String {
    render_tables_as(result, comfy_table::presets::ASCII_MARKDOWN)
}

/// The tables with a comfy-table preset.
pub fn render_tables_as(result: &SweepResult, preset: &str) -> String {
    let mut out = String::new();
    for summary in &result.summary {
        let mut table = Table::new();
        table.load_preset(preset);
        table.set_header(vec![
            "workers",
            "rep",
            "wall ms",
            "objects/s",
            "MiB/s",
            "ttfb p50 ms",
            "ttfb p99 ms",
            "pool wait p50 ms",
            "cpu ms/GET",
            "conns",
            "in flight",
            "errors",
            "verdict",
        ]);
        for r in result.results.iter().filter(|r| r.bucket == summary.bucket) {
            table.add_row(vec![
                r.workers.to_string(),
                r.repetition.to_string(),
                format!("{:.0}", r.wall_ms),
                format!("{:.0}", r.objects_per_s),
                format!("{:.1}", r.mib_per_s),
                format!("{:.2}", r.ttfb_ms.p50),
                format!("{:.2}", r.ttfb_ms.p99),
                format!("{:.2}", r.pool_wait_ms.p50),
                format!("{:.3}", r.cpu_ms_per_get),
                r.connections_opened.to_string(),
                r.client
                    .as_ref()
                    .map_or("-".into(), |c| format!("{:.1}", c.mean_in_flight)),
                r.errors.short(),
                r.diagnosis.as_ref().map_or("-", |d| d.verdict.name()).to_string(),
            ]);
        }
        for i in 0..11 {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        if preset == comfy_table::presets::ASCII_MARKDOWN {
            let _ = writeln!(out, "### bucket {}\n\n{table}\n", summary.bucket);
        } else {
            let _ = writeln!(out, "bucket {}", summary.bucket);
            let _ = writeln!(out, "{table}");
        }
        let _ = write!(
            out,
            "best: {} workers, {:.0} ms ({:.0} objects/s)",
            summary.best_workers, summary.best_wall_ms, summary.best_objects_per_s
        );
        if let (Some(one), Some(speedup)) = (summary.one_worker_wall_ms, summary.speedup_over_one_worker) {
            let _ = write!(out, "; 1 worker: {one:.0} ms, speedup {speedup:.1}x");
        }
        if let Some(k) = summary.knee_workers {
            let _ = write!(out, "; knee at {k} workers");
        }
        if summary.errors_total > 0 {
            let _ = write!(out, "; {} failed requests", summary.errors_total);
        }
        out.push('\n');
        out.push_str(&crate::diagnose::render_bucket(result, &summary.bucket));
        out.push('\n');
    }
    out.push_str(&crate::diagnose::render_comparisons(result));
    if result.truncated {
        let _ = writeln!(
            out,
            "truncated: {} configuration(s) skipped ({})",
            result.skipped.len(),
            result.skipped.first().map(|s| s.reason.as_str()).unwrap_or("")
        );
    }
    out
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub(crate) fn row(bucket: &str, workers: u32, rep: u32, wall_ms: f64, errors: u64) -> ConfigResult {
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
            bytes: 0,
            child: None,
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
            error_samples: vec![],
            breakdown: None,
            client: None,
            diagnosis: None,
        }
    }

    /// A whole result document around `rows`: a local run on linux/x86_64, requesting
    /// the rows' buckets in the order they first appear.
    pub(crate) fn result(rows: Vec<ConfigResult>) -> SweepResult {
        let mut names: Vec<String> = Vec::new();
        for r in &rows {
            if !names.contains(&r.bucket) {
                names.push(r.bucket.clone());
            }
        }
        SweepResult {
            schema: SCHEMA.into(),
            tool: ToolInfo::current(),
            environment: Environment {
                runner: "local".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                vcpus: 2,
                runtime_worker_threads: 2,
                memory_total_bytes: None,
                region: "us-east-1".into(),
                endpoint: None,
                lambda: None,
            },
            request: SweepRequest::new(names),
            started_unix_ms: 0,
            total_wall_ms: 0.0,
            summary: summarize(&rows),
            results: rows,
            truncated: false,
            analysis: None,
            skipped: vec![],
            fanout: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::{self, row};
    use super::*;

    #[test]
    fn summary_picks_the_fastest_median_without_errors() {
        let results = vec![
            row("a", 1, 1, 1000.0, 0),
            row("a", 4, 1, 300.0, 0),
            row("a", 4, 2, 260.0, 0),
            row("a", 4, 3, 5000.0, 0),
            row("a", 8, 1, 100.0, 3),
            row("b", 2, 1, 50.0, 0),
        ];
        let s = summarize(&results);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].bucket, "a");
        assert_eq!(s[0].best_workers, 4);
        assert_eq!(s[0].best_wall_ms, 300.0);
        assert_eq!(s[0].one_worker_wall_ms, Some(1000.0));
        assert_eq!(s[0].speedup_over_one_worker, Some(3.333));
        assert_eq!(s[0].errors_total, 3);
        assert_eq!(s[1].best_workers, 2);
        assert_eq!(s[1].one_worker_wall_ms, None);
    }

    #[test]
    fn knee_of_the_seed_curves() {
        // CONTEXT.md's curves as objects/s (1000 objects / wall seconds).
        let rate = |ms: f64| 1000.0 / (ms / 1000.0);
        let express: Vec<(u32, f64)> = [
            (1, 7831.0),
            (2, 4037.0),
            (4, 2625.0),
            (8, 2826.0),
            (16, 2668.0),
            (20, 2410.0),
        ]
        .iter()
        .map(|&(w, ms)| (w, rate(ms)))
        .collect();
        let standard: Vec<(u32, f64)> = [
            (1, 47625.0),
            (2, 17334.0),
            (4, 6993.0),
            (8, 3508.0),
            (16, 2868.0),
            (20, 2587.0),
        ]
        .iter()
        .map(|&(w, ms)| (w, rate(ms)))
        .collect();
        assert_eq!(knee(&express), Some(4));
        assert_eq!(knee(&standard), Some(16));
        assert_eq!(knee(&[]), None);
    }

    #[test]
    fn percentiles_from_microseconds() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let p = Percentiles::from_histogram_us(&h);
        assert!((p.p50 - 500.0).abs() < 1.0, "{p:?}");
        assert!((p.p99 - 990.0).abs() < 2.0, "{p:?}");
        assert!((p.max - 1000.0).abs() < 1.0, "{p:?}");
        assert_eq!(p.count, 1000);
        assert_eq!(
            Percentiles::from_histogram_us(&Histogram::new(3).unwrap()),
            Percentiles::default()
        );
    }

    #[test]
    fn error_counts_by_kind() {
        let mut e = ErrorCounts::default();
        e.add(ErrorKind::Timeout, 2);
        e.add(ErrorKind::Throttled, 1);
        assert_eq!(e.total, 3);
        assert_eq!(e.short(), "throttled=1 timeout=2");
        assert_eq!(ErrorCounts::default().short(), "0");
    }

    #[test]
    fn tables_name_every_bucket() {
        let results = vec![row("a-bucket", 1, 1, 1000.0, 0), row("b-bucket", 1, 1, 500.0, 2)];
        let mut result = tests_support::result(results);
        result.environment.runner = "cli".into();
        let text = render_tables(&result);
        assert!(text.contains("bucket a-bucket"));
        assert!(text.contains("bucket b-bucket"));
        assert!(text.contains("not_found=2"));
        let md = render_markdown(&result);
        assert!(md.contains("### bucket a-bucket\n\n| workers | rep |"), "{md}");
        assert!(md.contains("|---"), "{md}");
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["schema"], "s3sweep.result/v1");
        assert!(json["results"][0]["ttfb_ms"]["p99"].is_number());
        let back: SweepResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, result);
    }
}

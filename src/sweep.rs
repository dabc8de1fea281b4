//! The sweep engine: for each bucket x worker count x repetition, keep exactly
//! `workers` GETs in flight until every object has been read once, and measure.
//!
//! Per request it records the wait for one of `pool_connections` slots, the time to
//! the response headers (TTFB) and to the last body byte (TTLB); bodies are streamed to
//! the end and counted, never kept. A failed request is counted by kind and the sweep
//! goes on. Per configuration it records wall time, CPU time of the process, and the
//! transport's counters (connections opened, retries, `CreateSession` calls).
//!
//! Memory does not grow with the number of requests: latencies go into a few shared
//! hdrhistograms, keys are formatted on the fly, and bodies are dropped chunk by chunk.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use hdrhistogram::Histogram;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tokio::sync::Semaphore;

use crate::client::{ColdProbe, ColdWork, RequestSettings, SweepClient, TransportSettings, COLD_PROBE};
use crate::diagnose::{Breakdown, ClientMeasure, PhaseShard};
use crate::report::{
    micros, round3, summarize, ConfigResult, Environment, ErrorCounts, ErrorKind, Percentiles, SkippedConfig,
    SweepResult, ToolInfo, SCHEMA,
};
use crate::request::Plan;
use crate::usage;

/// Told about progress. Every method has an empty default.
pub trait Observer: Send + Sync {
    /// A configuration is about to start (after its warm-up).
    fn config_started(&self, _bucket: &str, _workers: u32, _repetition: u32, _requests: u64) {}
    /// One request finished (ok or not). Called from the request's task: keep it cheap.
    fn request_done(&self, _ok: bool) {}
    /// A configuration finished.
    fn config_finished(&self, _result: &ConfigResult) {}
}

/// An observer that does nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// How a sweep runs, beyond the plan.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// `cli`, `local` or `lambda`, recorded in the environment.
    pub runner: String,
    /// Stop starting configurations that would not finish before this instant.
    pub deadline: Option<Instant>,
    /// Kept free before the deadline.
    pub safety_margin: Duration,
    /// Lambda facts for the environment block.
    pub lambda: Option<crate::report::LambdaEnvironment>,
    /// Fan-out child: wait until this wall-clock time before the timed phase of the
    /// first configuration, and add [`crate::fanout::ChildMeasure`] to every row.
    pub child: Option<crate::fanout::ChildOptions>,
    /// Rules of the per-configuration verdicts (and a known bandwidth ceiling).
    pub thresholds: crate::diagnose::Thresholds,
}

/// Why a sweep could not start: the first request to a bucket failed in a way that
/// every later request would too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("no AWS credentials were found: {detail}. Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or run where a role is attached")]
    NoCredentials { detail: String },
    #[error("bucket {bucket:?} does not exist (or is in another region): create it, or fix the name in the request")]
    BucketNotFound { bucket: String },
    #[error("access denied reading {bucket:?}/{key}: grant s3:GetObject on the bucket's objects (and s3express:CreateSession for a directory bucket)")]
    AccessDenied { bucket: String, key: String },
    #[error("object {bucket:?}/{key} does not exist: write the test objects first with `s3sweep seed --bucket {bucket}` (with the same key template and count)")]
    ObjectNotFound { bucket: String, key: String },
    #[error("cannot reach the S3 endpoint for {bucket:?}: {detail}")]
    Unreachable { bucket: String, detail: String },
    #[error("the first request to {bucket:?} failed: {detail}")]
    Other { bucket: String, detail: String },
}

impl StartError {
    /// A stable name for the kind of failure (the Lambda's `errorType`).
    pub fn error_type(&self) -> &'static str {
        match self {
            StartError::NoCredentials { .. } => "NoCredentials",
            StartError::BucketNotFound { .. } => "BucketNotFound",
            StartError::AccessDenied { .. } => "AccessDenied",
            StartError::ObjectNotFound { .. } => "ObjectNotFound",
            StartError::Unreachable { .. } => "EndpointUnreachable",
            StartError::Other { .. } => "StartFailed",
        }
    }
}

fn transport_settings(plan: &Plan) -> TransportSettings {
    TransportSettings {
        pool_connections: plan.pool_connections() as usize,
        connect_timeout: plan.connect_timeout(),
    }
}

fn request_settings(plan: &Plan) -> RequestSettings {
    RequestSettings {
        max_attempts: plan.max_attempts(),
        first_byte_timeout: plan.first_byte_timeout(),
        attempt_timeout: plan.attempt_timeout(),
    }
}

/// Tries the preflight gives a bucket whose first read fails in a way that may pass
/// (throttling, 5xx, a timeout, a dropped connection): one bad response on a bad day
/// must not abort a whole sweep.
pub const PREFLIGHT_TRIES: u32 = 3;

fn is_transient(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Throttled | ErrorKind::ServerError | ErrorKind::Timeout | ErrorKind::Connection
    )
}

/// Reads the first object of every bucket once, so a sweep that cannot work fails
/// fast with a [`StartError`] that says how to fix it, instead of counting the same
/// failure a million times. Transient failures get [`PREFLIGHT_TRIES`] tries.
pub async fn preflight(client: &SweepClient, plan: &Plan) -> Result<(), StartError> {
    client.transport().configure(transport_settings(plan));
    let s3 = client.s3(request_settings(plan));
    for bucket in plan.buckets() {
        let key = plan.keys().key(plan.key_range().start);
        let limit = plan.attempt_timeout() * plan.max_attempts();
        let mut outcome = get_one(&s3, bucket, &key, limit).await;
        for _ in 1..PREFLIGHT_TRIES {
            match &outcome.result {
                Err((kind, _)) if is_transient(*kind) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    outcome = get_one(&s3, bucket, &key, limit).await;
                }
                _ => break,
            }
        }
        if let Err((kind, detail)) = outcome.result {
            let bucket = bucket.clone();
            let lower = detail.to_ascii_lowercase();
            return Err(match kind {
                _ if lower.contains("credentials")
                    && (lower.contains("no credentials") || lower.contains("failed to load")) =>
                {
                    StartError::NoCredentials { detail }
                }
                ErrorKind::NotFound if lower.contains("nosuchbucket") || lower.contains("no such bucket") => {
                    StartError::BucketNotFound { bucket }
                }
                ErrorKind::NotFound => StartError::ObjectNotFound { bucket, key },
                ErrorKind::AccessDenied => StartError::AccessDenied { bucket, key },
                ErrorKind::Connection | ErrorKind::Timeout => StartError::Unreachable { bucket, detail },
                _ => StartError::Other { bucket, detail },
            });
        }
    }
    Ok(())
}

/// Runs the whole plan and returns the result document.
pub async fn run(
    client: &SweepClient,
    plan: &Plan,
    options: &SweepOptions,
    observer: Arc<dyn Observer>,
) -> SweepResult {
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let run_start = Instant::now();
    client.transport().configure(transport_settings(plan));
    let s3 = client.s3(request_settings(plan));
    let mut results: Vec<ConfigResult> = Vec::new();
    let mut skipped = Vec::new();
    let mut index = 0usize;
    for bucket in plan.buckets() {
        for &workers in plan.workers() {
            for repetition in 1..=plan.repetitions() {
                index += 1;
                let index = index - 1;
                if let Some(deadline) = options.deadline {
                    let estimate = estimate_duration(&results, bucket);
                    if let Some(reason) = deadline_blocks(Instant::now(), deadline, estimate, options.safety_margin) {
                        skipped.push(SkippedConfig {
                            bucket: bucket.clone(),
                            workers,
                            repetition,
                            reason,
                        });
                        continue;
                    }
                }
                let child = options.child.map(|c| c.for_configuration(index, results.is_empty()));
                let result = run_config(client, &s3, plan, (bucket, workers, repetition), child, &observer).await;
                observer.config_finished(&result);
                results.push(result);
            }
        }
    }
    let summary = summarize(&results);
    let mut result = SweepResult {
        schema: SCHEMA.to_string(),
        tool: ToolInfo::current(),
        environment: Environment {
            runner: options.runner.clone(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            vcpus: usage::vcpus() as u32,
            runtime_worker_threads: tokio::runtime::Handle::try_current()
                .map_or(1, |h| h.metrics().num_workers() as u32),
            memory_total_bytes: usage::memory_total_bytes(),
            region: client.region().to_string(),
            endpoint: client.endpoint().map(str::to_string),
            lambda: options.lambda.clone(),
        },
        request: plan.request().clone(),
        started_unix_ms,
        total_wall_ms: round3(run_start.elapsed().as_secs_f64() * 1000.0),
        truncated: !skipped.is_empty(),
        results,
        summary,
        skipped,
        fanout: None,
        analysis: None,
    };
    crate::diagnose::annotate(&mut result, &options.thresholds);
    result
}

/// How long the next configuration of `bucket` may take: the last one of the same
/// bucket (worker counts usually grow, so this errs long), else the longest so far,
/// else unknown (zero).
pub fn estimate_duration(done: &[ConfigResult], bucket: &str) -> Duration {
    let ms = done
        .iter()
        .rev()
        .find(|r| r.bucket == bucket)
        .map(|r| r.wall_ms)
        .or_else(|| done.iter().map(|r| r.wall_ms).max_by(f64::total_cmp))
        .unwrap_or(0.0);
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// `Some(reason)` when a configuration estimated to take `estimate` must not start.
pub fn deadline_blocks(now: Instant, deadline: Instant, estimate: Duration, margin: Duration) -> Option<String> {
    let left = deadline.saturating_duration_since(now);
    if left < estimate + margin {
        Some(format!(
            "deadline: {} ms left, the configuration needs about {} ms plus a {} ms safety margin",
            left.as_millis(),
            estimate.as_millis(),
            margin.as_millis()
        ))
    } else {
        None
    }
}

/// The order objects are read in one configuration.
fn key_order(plan: &Plan, workers: u32, repetition: u32) -> Vec<u32> {
    let mut order: Vec<u32> = plan.key_range().collect();
    if plan.shuffle() {
        let seed = plan.seed() ^ (u64::from(workers) << 32) ^ u64::from(repetition);
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    }
    order
}

/// Latency histograms and the diagnosis breakdown, sharded so workers rarely contend
/// for a lock; one lock per request records both.
struct Recorder {
    shards: Vec<Mutex<Shard>>,
    /// The configuration's first request: time to last byte (ms) and whether it was cold.
    first: Mutex<Option<(f64, bool)>>,
    errors: Mutex<(ErrorCounts, Vec<String>)>,
    ok: AtomicU64,
    bytes: AtomicU64,
}

struct Shard {
    ttfb_us: Histogram<u64>,
    ttlb_us: Histogram<u64>,
    pool_wait_us: Histogram<u64>,
    phases: PhaseShard,
}

impl Shard {
    fn new() -> Self {
        let h = || Histogram::<u64>::new(3).expect("3 significant figures is valid");
        Shard {
            ttfb_us: h(),
            ttlb_us: h(),
            pool_wait_us: h(),
            phases: PhaseShard::new(),
        }
    }
}

impl Recorder {
    fn new(shards: usize) -> Self {
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
    fn record(&self, shard: usize, outcome: &Outcome, cold: ColdWork, first: bool) {
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
            Err((kind, message)) => {
                let mut e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
                e.0.add(*kind, 1);
                if e.1.len() < 3 && !e.1.iter().any(|m| m == message) {
                    e.1.push(message.clone());
                }
            }
        }
    }

    /// Every shard merged: TTFB, TTLB and pool-wait histograms, and the breakdown.
    fn merged(&self) -> (Histogram<u64>, Histogram<u64>, Histogram<u64>, Breakdown) {
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

/// What one GET came to.
struct Outcome {
    pool_wait: Duration,
    ttfb: Duration,
    ttlb: Duration,
    /// Body bytes, or the kind of failure and a message.
    result: Result<u64, (ErrorKind, String)>,
}

async fn run_config(
    client: &SweepClient,
    s3: &aws_sdk_s3::Client,
    plan: &Plan,
    (bucket, workers, repetition): (&str, u32, u32),
    child: Option<crate::fanout::ChildOptions>,
    observer: &Arc<dyn Observer>,
) -> ConfigResult {
    let order = Arc::new(key_order(plan, workers, repetition));
    let pool = Arc::new(Semaphore::new(plan.pool_connections() as usize));
    let whole_request = plan.attempt_timeout() * plan.max_attempts();
    if plan.warmup() {
        warm_up(s3, plan, bucket, workers, &order, whole_request).await;
    }
    if let Some(at) = child.and_then(|c| c.start_at) {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            tokio::time::sleep(wait).await;
        }
    }
    let requests = order.len() as u64;
    observer.config_started(bucket, workers, repetition, requests);
    let recorder = Arc::new(Recorder::new((workers as usize).min(8)));
    let busy_before = crate::diagnose::runtime_busy();
    let next = Arc::new(AtomicUsize::new(0));
    let counters_before = client.transport().counters();
    let cpu_before = usage::process_cpu_time();
    let start = Instant::now();
    let started_at = SystemTime::now();
    let mut tasks = tokio::task::JoinSet::new();
    let spawned = (workers as usize).min(order.len());
    for w in 0..spawned {
        let s3 = s3.clone();
        let bucket = bucket.to_string();
        let keys = plan.keys().clone();
        let order = order.clone();
        let next = next.clone();
        let pool = pool.clone();
        let recorder = recorder.clone();
        let observer = observer.clone();
        let probe = Arc::new(ColdProbe::default());
        tasks.spawn(COLD_PROBE.scope(probe.clone(), async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = order.get(i) else { break };
                let key = keys.key(index);
                let queued = Instant::now();
                let permit = pool.acquire().await.expect("the pool semaphore is never closed");
                let pool_wait = queued.elapsed();
                let mut outcome = get_one(&s3, &bucket, &key, whole_request).await;
                drop(permit);
                outcome.pool_wait = pool_wait;
                recorder.record(w, &outcome, probe.take(), i == 0);
                observer.request_done(outcome.result.is_ok());
            }
        }));
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(err) = joined {
            tracing::error!(%err, "a sweep worker ended abnormally");
        }
    }
    let wall = start.elapsed();
    let cpu = usage::process_cpu_time().saturating_sub(cpu_before);
    let busy = match (busy_before, crate::diagnose::runtime_busy()) {
        (Some((a, _)), Some((b, n))) => (b.saturating_sub(a), n),
        _ => (Duration::ZERO, 1),
    };
    let counters = client.transport().counters().since(&counters_before);
    let (ttfb, ttlb, pool_wait, breakdown) = recorder.merged();
    let (errors, error_samples) = recorder.errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let ok = recorder.ok.load(Ordering::Relaxed);
    let bytes = recorder.bytes.load(Ordering::Relaxed);
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cpu_ms = cpu.as_secs_f64() * 1000.0;
    let (objects_per_s, mib_per_s) = crate::report::rates(ok, bytes, wall_s);
    let mut row = ConfigResult {
        bucket: bucket.to_string(),
        workers,
        repetition,
        pool_connections: plan.pool_connections(),
        requests,
        ok,
        errors,
        retries: counters.requests_sent.saturating_sub(requests),
        bytes,
        child: child.map(|_| crate::fanout::ChildMeasure::new(started_at, wall, [&ttfb, &ttlb, &pool_wait])),
        wall_ms: round3(wall_s * 1000.0),
        objects_per_s,
        mib_per_s,
        ttfb_ms: Percentiles::from_histogram_us(&ttfb),
        ttlb_ms: Percentiles::from_histogram_us(&ttlb),
        pool_wait_ms: Percentiles::from_histogram_us(&pool_wait),
        cpu_ms: round3(cpu_ms),
        cpu_ms_per_get: crate::report::cpu_ms_per_get(cpu_ms, requests),
        connections_opened: counters.connections_opened,
        connect_ms_total: round3(counters.connect_ns as f64 / 1e6),
        session_requests: counters.session_requests,
        error_samples,
        breakdown: Some(breakdown),
        client: None,
        diagnosis: None,
    };
    row.client = Some(crate::diagnose::client_side(
        &row,
        ClientMeasure {
            runtime_busy: busy.0,
            runtime_worker_threads: busy.1,
            vcpus: usage::vcpus() as u32,
            peak_rss_bytes: usage::peak_rss_bytes(),
        },
    ));
    row
}

/// Untimed requests before a configuration so its connections are already open:
/// `min(workers, pool_connections)` of them at once, twice.
async fn warm_up(s3: &aws_sdk_s3::Client, plan: &Plan, bucket: &str, workers: u32, order: &[u32], limit: Duration) {
    let n = (workers.min(plan.pool_connections()) as usize).min(order.len());
    for _ in 0..2 {
        let mut set = tokio::task::JoinSet::new();
        for &index in order.iter().take(n) {
            let s3 = s3.clone();
            let bucket = bucket.to_string();
            let key = plan.keys().key(index);
            set.spawn(async move {
                let _ = get_one(&s3, &bucket, &key, limit).await;
            });
        }
        while set.join_next().await.is_some() {}
    }
}

/// One GET: headers, then the body drained to the end, all within `limit`.
async fn get_one(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, limit: Duration) -> Outcome {
    let start = Instant::now();
    let mut ttfb = Duration::ZERO;
    let work = async {
        let output = s3
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| classify_sdk_error(&e))?;
        ttfb = start.elapsed();
        let expected = output.content_length();
        let mut body = output.body;
        let mut received: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| classify_body_error(&e))?;
            received += chunk.len() as u64;
        }
        if let Some(expected) = expected {
            if expected >= 0 && received != expected as u64 {
                return Err((
                    ErrorKind::Connection,
                    format!("body ended after {received} of {expected} bytes"),
                ));
            }
        }
        Ok(received)
    };
    let result = match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err((
            ErrorKind::Timeout,
            format!("request not finished within {} ms", limit.as_millis()),
        )),
    };
    Outcome {
        pool_wait: Duration::ZERO,
        ttfb,
        ttlb: start.elapsed(),
        result,
    }
}

/// Sorts an SDK error into a kind, with a one-line message.
pub fn classify_sdk_error(err: &SdkError<GetObjectError, HttpResponse>) -> (ErrorKind, String) {
    let message = one_line(&DisplayErrorContext(err).to_string());
    let kind = match err {
        SdkError::TimeoutError(_) => ErrorKind::Timeout,
        SdkError::DispatchFailure(f) => {
            if f.is_timeout() {
                ErrorKind::Timeout
            } else if f.is_io() {
                ErrorKind::Connection
            } else {
                ErrorKind::Other
            }
        }
        SdkError::ServiceError(e) => {
            let code = aws_sdk_s3::error::ProvideErrorMetadata::code(e.err()).unwrap_or("");
            kind_of_status(e.raw().status().as_u16(), code)
        }
        SdkError::ResponseError(e) => kind_of_status(e.raw().status().as_u16(), ""),
        _ => ErrorKind::Other,
    };
    (kind, message)
}

fn kind_of_status(status: u16, code: &str) -> ErrorKind {
    match (status, code) {
        (_, "SlowDown") | (429, _) | (503, _) => ErrorKind::Throttled,
        (_, "NoSuchKey") | (_, "NoSuchBucket") | (404, _) => ErrorKind::NotFound,
        (_, "AccessDenied") | (403, _) => ErrorKind::AccessDenied,
        (500..=599, _) => ErrorKind::ServerError,
        _ => ErrorKind::Other,
    }
}

fn classify_body_error(err: &aws_smithy_types::byte_stream::error::Error) -> (ErrorKind, String) {
    let message = one_line(&DisplayErrorContext(err).to_string());
    let lower = message.to_ascii_lowercase();
    let kind = if lower.contains("timed out") || lower.contains("timeout") {
        ErrorKind::Timeout
    } else {
        // Resets, early EOF and short bodies all surface here as I/O failures.
        ErrorKind::Connection
    };
    (kind, message)
}

fn one_line(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() > 300 {
        let mut end = 300;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(kind_of_status(404, "NoSuchKey"), ErrorKind::NotFound);
        assert_eq!(kind_of_status(403, ""), ErrorKind::AccessDenied);
        assert_eq!(kind_of_status(503, "SlowDown"), ErrorKind::Throttled);
        assert_eq!(kind_of_status(429, ""), ErrorKind::Throttled);
        assert_eq!(kind_of_status(500, "InternalError"), ErrorKind::ServerError);
        assert_eq!(kind_of_status(400, "Weird"), ErrorKind::Other);
    }

    #[test]
    fn key_order_is_a_seeded_permutation() {
        let plan = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 100}"#).unwrap();
        let a = key_order(&plan, 4, 1);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(a, key_order(&plan, 4, 1));
        assert_ne!(a, key_order(&plan, 8, 1));
        let plain = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 5, "shuffle": false}"#).unwrap();
        assert_eq!(key_order(&plain, 4, 1), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn deadline_logic() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(10);
        assert!(deadline_blocks(now, deadline, Duration::from_secs(5), Duration::from_secs(1)).is_none());
        let reason = deadline_blocks(now, deadline, Duration::from_secs(9), Duration::from_secs(2)).unwrap();
        assert!(reason.contains("deadline"), "{reason}");
        assert!(deadline_blocks(now, now, Duration::from_millis(1), Duration::ZERO).is_some());
    }

    #[test]
    fn estimates_use_the_same_bucket_first() {
        let a = crate::report::tests_support::row("a", 1, 1, 900.0, 0);
        let b = crate::report::tests_support::row("b", 1, 1, 2000.0, 0);
        let done = vec![a, b];
        assert_eq!(estimate_duration(&done, "a"), Duration::from_millis(900));
        assert_eq!(estimate_duration(&done, "c"), Duration::from_millis(2000));
        assert_eq!(estimate_duration(&[], "a"), Duration::ZERO);
    }
}

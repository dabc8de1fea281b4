//! The Lambda function: the handler that turns an event into a sweep result or a
//! `Diagnostic`, the invocation's deadline, and one log line per finished
//! configuration. An adapter: it calls the engine, then the one analysis step.
//!
//! `src/bin/s3sweep-lambda.rs` only sets up logging, builds one [`Function`] (and so
//! one S3 client) before `lambda_runtime::run`, and hands it the events. Everything
//! here is testable without the Lambda service: call [`Function::handle`] with a
//! `LambdaEvent` and a `Context` carrying whatever deadline the test needs.
//!
//! An event with `memory_mb` makes the handler the coordinator of a memory sweep: it
//! sets its own function's memory, publishes and invokes a version per size, and
//! cleans up ([`memory`], [`control`]).
//!
//! An event with a `fanout` field makes the handler a coordinator: it invokes its own
//! function N times ([`children`], [`invoke`]) and returns the merged result
//! ([`merge`]); an event whose coordinator's envelope (`from_coordinator`) says
//! `role: "child"` is one of those invocations. Every
//! setting comes from the environment, read once ([`settings`]); events are validated
//! in [`event`].
//!
//! Security: the S3 endpoint comes only from the function's environment
//! (`S3SWEEP_ENDPOINT_URL`); the event schema has no such field and rejects unknown
//! fields, so an event cannot point the function at another host.

// The core's modules under their own names, so `crate::model::...` reads as before.
use s3sweep_core::{analysis, engine, model, plan, render, s3, sys, transport};

pub(crate) mod children;
pub mod control;
pub(crate) mod event;
pub mod invoke;
pub mod memory;
pub(crate) mod merge;
pub(crate) mod overlap;
mod requests_log;
pub(crate) mod response;
pub(crate) mod settings;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lambda_runtime::{Context, Diagnostic, LambdaEvent};

use crate::engine::{BucketError, Deadline, Observer, ResultsLog, StartSchedule, SweepOptions};
use crate::model::stats::round3;
use crate::model::{Architecture, ConfigResult, LambdaEnvironment, Role, Runner, Substrate, SweepResult, Thresholds};
use crate::plan::json::EventJson;
use crate::plan::{Plan, RequestError};
use crate::s3::results::ResultsWriter;
use crate::s3::{ClientError, SweepClient, SweepSession};

pub use children::{child_event, child_requests, listing_reports, FanoutError};
pub use event::{validate_event, validate_event_with};
use invoke::Invoker;
pub use settings::{
    remaining_time, FunctionSettings, SettingsError, CA_BUNDLE_ENV, CREDENTIALS_ENV, ENDPOINT_ENV, FUNCTION_ENV,
    MEMORY_POLL_ENV, RESULTS_URI_ENV, SAFETY_MARGIN_ENV,
};

/// Why an invocation returned an error instead of a result. Per-request failures are
/// never here: they are counted in the result.
#[derive(Debug, thiserror::Error)]
pub enum InvocationError {
    /// The event is not a valid sweep request; names every bad field.
    #[error("{0}")]
    InvalidEvent(RequestError),
    /// The first request to a bucket failed in a way every later one would too.
    #[error("{}", start_message(.0))]
    Start(BucketError),
    /// The listing of `key_prefix` failed or found fewer keys than `object_count`.
    #[error("{0}")]
    Listing(crate::s3::list::ListingError),
    /// A fan-out was asked for but this process cannot invoke its function.
    #[error("{0}")]
    Fanout(FanoutError),
    /// The deadline (less its safety margin) came before the first read of every
    /// bucket was done.
    #[error("the invocation's deadline less the {margin_ms} ms safety margin came before the first read of every bucket finished: give the function a longer timeout (or a smaller S3SWEEP_SAFETY_MARGIN_MS)")]
    DeadlineInPreflight { margin_ms: u64 },
    /// The answer does not fit Lambda's response limit even trimmed.
    #[error("{0}")]
    TooLarge(response::TooLarge),
    /// A memory sweep that was refused, stopped, or could not restore the function.
    #[error("{0}")]
    MemorySweep(memory::MemorySweepError),
}

/// The start error's advice, plus what only applies to a function with the
/// template's role.
fn start_message(err: &BucketError) -> String {
    match err {
        BucketError::AccessDenied { .. } => format!(
            "{err}. The role itself was refused (the template's role grants s3:GetObject and s3:ListBucket on the Standard bucket and read-only s3express:CreateSession on the directory bucket, so a missing key is answered 404 ObjectNotFound, not this): check the bucket is the one the stack was deployed with (StandardBucketName, ExpressBucketName), in the stack's account and region, and that no bucket policy denies the role"
        ),
        _ => err.to_string(),
    }
}

impl InvocationError {
    /// The stable `errorType` the Lambda returns: `InvalidEvent`, or the
    /// [`BucketError::error_type`] (`NoCredentials`, `BucketNotFound`, `AccessDenied`,
    /// `ObjectNotFound`, `EndpointUnreachable`, `StartFailed`; from a `key_prefix`
    /// listing too), `TooFewKeys`, `FanoutUnavailable`, `DeadlineReached` (also a
    /// `key_prefix` listing out of its time), `ResponseTooLarge`, and a memory sweep's
    /// `ConcurrentMemorySweep`, `MemorySweepFailed`, `MemoryNotRestored`.
    pub fn error_type(&self) -> &'static str {
        match self {
            InvocationError::InvalidEvent(_) => "InvalidEvent",
            InvocationError::Start(e) => e.error_type(),
            InvocationError::Listing(e) => e.error_type(),
            InvocationError::Fanout(_) => "FanoutUnavailable",
            InvocationError::DeadlineInPreflight { .. } => "DeadlineReached",
            InvocationError::TooLarge(_) => "ResponseTooLarge",
            InvocationError::MemorySweep(e) => e.error_type(),
        }
    }
}

impl From<InvocationError> for Diagnostic {
    fn from(err: InvocationError) -> Diagnostic {
        Diagnostic {
            error_type: err.error_type().to_string(),
            error_message: err.to_string(),
        }
    }
}

/// Logs one line per finished configuration (a JSON object with
/// `AWS_LAMBDA_LOG_FORMAT=JSON`), so someone watching the logs sees progress.
pub struct LogProgress;

impl Observer for LogProgress {
    fn config_finished(&self, r: &ConfigResult) {
        tracing::info!(
            bucket = %r.bucket,
            workers = r.workers,
            repetition = r.repetition,
            wall_ms = r.wall_ms,
            objects_per_s = r.objects_per_s,
            ttfb_p50_ms = r.ttfb_ms.p50,
            ttfb_p99_ms = r.ttfb_ms.p99,
            cpu_ms_per_get = r.cpu_ms_per_get,
            errors = r.errors.total,
            "configuration finished"
        );
    }
}

/// The function: one S3 client, built once, used by every invocation.
pub struct Function {
    client: SweepClient,
    settings: FunctionSettings,
    cold: AtomicBool,
    observer: Arc<dyn Observer>,
    invoker: Option<Invoker>,
    /// The invocations running in this process (more than one on Managed Instances).
    invocations: Arc<overlap::Invocations>,
    /// The execution environment's init (`main` to ready), when the binary measured it.
    init: Option<Duration>,
}

impl Function {
    /// Builds the S3 client from the settings (once per execution environment).
    pub async fn new(settings: FunctionSettings) -> Result<Self, ClientError> {
        let client = s3sweep_aws::sweep_client(settings.client.clone()).await?;
        let invoker = Invoker::new(&settings.fanout).await;
        Ok(Self::with_client(client, settings).with_invoker(invoker))
    }

    /// A function around an existing client.
    pub fn with_client(client: SweepClient, settings: FunctionSettings) -> Self {
        Function {
            client,
            settings,
            cold: AtomicBool::new(true),
            observer: Arc::new(LogProgress),
            invoker: None,
            invocations: Arc::default(),
            init: None,
        }
    }

    /// The same function knowing how long its execution environment's init took: every
    /// result reports it as `environment.lambda.init_us`.
    pub fn with_init_time(mut self, init: Duration) -> Self {
        self.init = Some(init);
        self
    }

    /// The same function with a Lambda client for fan-out.
    pub fn with_invoker(mut self, invoker: Invoker) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// The client every invocation uses.
    pub fn client(&self) -> &SweepClient {
        &self.client
    }

    /// The settings read at start-up.
    pub fn settings(&self) -> &FunctionSettings {
        &self.settings
    }

    /// Handles one invocation: validates the event, checks the first object of every
    /// bucket, then sweeps. At the deadline less the safety margin the configuration
    /// running is cut short (its finished GETs kept) and the rest are skipped, so the
    /// function always answers in time; the answer is trimmed to fit 6 MB. The event is
    /// a `Value` or, as the runtime gives it, an [`EventJson`] that knows its
    /// duplicate keys.
    pub async fn handle(&self, event: LambdaEvent<impl Into<EventJson>>) -> Result<SweepResult, InvocationError> {
        let started = Instant::now();
        let running = self.invocations.begin();
        let (payload, context) = event.into_parts();
        let remaining = remaining_time(context.deadline, SystemTime::now());
        let invocation = Invocation {
            cold_start: self.cold.swap(false, Ordering::Relaxed),
            remaining,
            deadline: remaining.map(|left| Deadline::new(started + left, self.settings.safety_margin)),
            context,
            id: running.id(),
        };
        let plan = validate_event_with(payload, &self.settings.fanout).map_err(|err| {
            tracing::warn!(error_type = "InvalidEvent", error = %err, "invalid event");
            InvocationError::InvalidEvent(err)
        })?;
        tracing::info!(
            buckets = ?plan.buckets(),
            workers = ?plan.workers(),
            object_count = plan.object_count(),
            requests = plan.total_requests(),
            deadline_unix_ms = invocation.context.deadline,
            remaining_ms = remaining.map(|d| d.as_millis() as u64),
            cold_start = invocation.cold_start,
            "sweep starting"
        );
        self.check_buckets(&plan, self.deadline_of(&plan, invocation.deadline))
            .await?;
        // Boxed: the sweep's futures nest deep (the SDK's among them), and the binary's
        // main future must stay within the compiler's layout depth.
        // One run id for the result and its request log (its fallback reads the clock).
        let run_id = run_id_of(&plan, &invocation);
        let results = self.results_log(&plan, &invocation, &run_id);
        let requests = requests_log::S3RequestsLog::open(
            &self.client,
            &plan,
            &run_id,
            self.settings.results_uri.as_ref(),
            plan.memory_mb().is_empty() && plan.fanout().is_none(),
            self.observer.clone(),
        )
        .map_err(InvocationError::InvalidEvent)?;
        let mut result = if let Some(reason) = memory_mismatch(&plan, &invocation) {
            tracing::warn!(%reason, "refused: the function is not at the request's memory size");
            engine::refused(
                &self.client,
                &plan,
                &self.sweep_options(&plan, &invocation, None),
                &reason,
            )
        } else if !plan.memory_mb().is_empty() {
            Box::pin(self.coordinate_memory(&plan, &invocation)).await?
        } else if plan.fanout().is_some() {
            Box::pin(self.coordinate(&plan, &invocation)).await?
        } else {
            let observer = requests.as_ref().map(|r| r.observer());
            Box::pin(self.sweep(&plan, &invocation, results.clone(), observer)).await
        };
        if let Some(log) = requests {
            match log.finish(crate::s3::results::MAX_WRITE_TIME).await {
                Ok(line) => tracing::info!("{line}"),
                Err(e) => tracing::warn!(error = %e, "the request log could not be written to S3"),
            }
        }
        if let Some(log) = &results {
            log.finish(&mut result).await;
            if plan.results_html() {
                let source = format!("{}: {}", log.uri(), crate::analysis::compare::environment(&result));
                let page = crate::render::html::report_page(&result, &source, Default::default());
                log.put_beside(&mut result, "html", page.into_bytes(), "text/html; charset=utf-8")
                    .await;
            }
        }
        fit_answer(&mut result)?;
        self.log_metrics(&plan, &result);
        Ok(result)
    }

    /// The result's metrics as embedded-metric-format lines on stdout, where the
    /// function's log group (and so CloudWatch) reads them: when the event's
    /// `metrics_namespace` or the function's [`settings::METRICS_NAMESPACE_ENV`] names a
    /// namespace, and not from a coordinator's child (its coordinator logs the merged
    /// rows).
    fn log_metrics(&self, plan: &Plan, result: &SweepResult) {
        let given = plan.metrics_namespace();
        let Some(namespace) = given.or(self.settings.metrics_namespace.as_deref()) else {
            return;
        };
        if plan.from_coordinator() {
            return;
        }
        let now_ms = crate::sys::now_unix_ms();
        let lines = crate::render::emf::lines(result, namespace, now_ms);
        let mut out = std::io::stdout().lock();
        for line in &lines {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
        tracing::info!(namespace = %namespace, lines = lines.len(), "metrics logged in embedded metric format");
    }

    /// Where this invocation's result goes: the event's `results_uri`, else the
    /// function's [`RESULTS_URI_ENV`]; the key is `<prefix>/<run_id>.json`, or
    /// `<prefix>/<request id>.json` without a `run_id` (and for the invocations a
    /// coordinator sends, which must not replace its object). A fan-out's children
    /// write nothing (their coordinator writes the merged result).
    fn results_log(&self, plan: &Plan, invocation: &Invocation, run_id: &str) -> Option<Arc<ResultsLog>> {
        if plan.role() == Role::Child {
            return None;
        }
        let destination = plan.results_uri().or_else(|| self.settings.results_uri.clone())?;
        let now_s = crate::sys::now_unix_ms() / 1000;
        let destination = plan.dated_if_asked(destination, now_s);
        let writer = ResultsWriter::new(&self.client, &destination, run_id);
        tracing::info!(results_uri = %writer.uri(), "the result is written to S3 after every configuration");
        Some(Arc::new(ResultsLog::new(writer, invocation.deadline)))
    }

    /// The listing of a `key_prefix` within its budget (half the time left before the
    /// deadline less its margin, [`Deadline::listing_stop`]), then the preflight within
    /// the deadline less its margin.
    async fn check_buckets(&self, plan: &Plan, deadline: Option<Deadline>) -> Result<(), InvocationError> {
        if deadline.is_some_and(|d| d.passed(Instant::now())) {
            // No time at all: no listing, no preflight; every configuration is listed
            // as skipped.
            return Ok(());
        }
        // One session for both: the preflight reuses the listing's connections.
        let session = self.client.session(plan);
        self.list_keys(&session, plan, deadline).await?;
        let preflight = async {
            engine::preflight(&session, plan).await.map_err(|err| {
                tracing::error!(error_type = err.error_type(), error = %err, "sweep cannot start");
                InvocationError::Start(err)
            })
        };
        match deadline {
            Some(d) => tokio::time::timeout_at(d.stop_at().into(), preflight)
                .await
                .map_err(|_| {
                    tracing::error!(error_type = "DeadlineReached", "deadline reached in the preflight");
                    InvocationError::DeadlineInPreflight {
                        margin_ms: d.margin().as_millis() as u64,
                    }
                })?,
            None => preflight.await,
        }
    }

    /// The invocation's deadline, or a child's coordinator's finish time when that
    /// comes first (so a child's listing and sweep stop in time for the merge).
    fn deadline_of(&self, plan: &Plan, deadline: Option<Deadline>) -> Option<Deadline> {
        let Some(finish_by) = plan.finish_by_unix_ms() else {
            return deadline;
        };
        let until = UNIX_EPOCH + Duration::from_millis(finish_by);
        let by = Instant::now() + until.duration_since(SystemTime::now()).unwrap_or_default();
        let margin = self.settings.safety_margin;
        Some(deadline.map_or(Deadline::new(by, margin), |d| d.no_later_than(by)))
    }

    /// The listing of a `key_prefix` (nothing without one, or once listed), within
    /// `deadline`'s listing budget.
    async fn list_keys(
        &self,
        session: &SweepSession,
        plan: &Plan,
        deadline: Option<Deadline>,
    ) -> Result<(), InvocationError> {
        engine::list_keys_within(session, plan, deadline).await.map_err(|err| {
            tracing::error!(error_type = err.error_type(), error = %err, "the listing of key_prefix failed");
            InvocationError::Listing(err)
        })
    }

    /// A plain sweep, or a child's: a child stops in time for its coordinator to merge
    /// (its coordinator's finish time comes before its own deadline).
    /// `observer`: the request log's, else the function's own.
    async fn sweep(
        &self,
        plan: &Plan,
        invocation: &Invocation,
        results: Option<Arc<ResultsLog>>,
        observer: Option<Arc<dyn Observer>>,
    ) -> SweepResult {
        let options = self.sweep_options(plan, invocation, results);
        let observer = observer.unwrap_or_else(|| self.observer.clone());
        let overlaps = Arc::new(overlap::OverlapObserver::new(
            observer,
            self.invocations.clone(),
            invocation.id,
        ));
        // The invocation's own session: its transport, lanes and counters are shared
        // with no other invocation in this process.
        let mut result = engine::run(&self.client.session(plan), plan, &options, overlaps.clone()).await;
        let concurrent = self.settings.substrate.kind == Substrate::ManagedInstances;
        overlaps.apply(&mut result, concurrent);
        analysis::analyse(&mut result, &Thresholds::default());
        if result.truncated {
            tracing::warn!(
                skipped = result.skipped.len(),
                reason = result.skipped.first().map(|s| s.reason.as_str()).unwrap_or(""),
                "deadline reached: configurations cut short or skipped"
            );
        }
        tracing::info!(
            configurations = result.results.len(),
            total_wall_ms = result.total_wall_ms,
            truncated = result.truncated,
            "sweep finished"
        );
        result
    }
}

impl Function {
    /// The engine's options for one invocation's sweep.
    fn sweep_options(&self, plan: &Plan, invocation: &Invocation, results: Option<Arc<ResultsLog>>) -> SweepOptions {
        SweepOptions {
            runner: Runner::Lambda,
            deadline: self.deadline_of(plan, invocation.deadline),
            lambda: Some(lambda_environment(invocation, &self.settings, self.init)),
            schedule: StartSchedule::of(plan),
            results,
            memory_mb: None,
        }
    }
}

/// Why the invocation must not measure: the request says the memory size it must run
/// at (`expect_memory_mb`, the canary's) and the function runs at another (a memory
/// sweep has `$LATEST` at one of its sizes). `None`: go on.
fn memory_mismatch(plan: &Plan, invocation: &Invocation) -> Option<String> {
    let expected = plan.expect_memory_mb()?;
    let running = u32::try_from(invocation.context.env_config.memory).ok()?;
    (running != 0 && running != expected).then(|| {
        format!(
            "not run: the function runs at {running} MB, not the {expected} MB this request expects (expect_memory_mb): a memory sweep is resizing it, and a measurement at {running} MB would be recorded as the canary's; the next scheduled run measures"
        )
    })
}

/// The run's name in the keys it writes: the request's `run_id` (not for the
/// invocations a coordinator sends, which must not replace its objects), else the
/// invocation's request id.
fn run_id_of(plan: &Plan, invocation: &Invocation) -> String {
    let given = plan.run_id().filter(|_| !plan.from_coordinator()).map(str::to_string);
    given.unwrap_or_else(|| match invocation.context.request_id.as_str() {
        "" => format!("run-{}", crate::sys::now_unix_ms()),
        id => id.to_string(),
    })
}

/// One invocation's facts, read once by [`Function::handle`].
struct Invocation {
    context: Context,
    cold_start: bool,
    /// Time left at the start, when the deadline is a real one.
    remaining: Option<Duration>,
    deadline: Option<Deadline>,
    /// Its place among the invocations running in this process.
    id: u64,
}

/// Trims the answer to Lambda's response limit (see [`response`]).
fn fit_answer(result: &mut SweepResult) -> Result<(), InvocationError> {
    let limit = response::LAMBDA_RESPONSE_LIMIT_BYTES - response::RESPONSE_HEADROOM_BYTES;
    response::fit(result, limit).map_err(|e| {
        tracing::error!(error_type = "ResponseTooLarge", error = %e, "answer too large");
        InvocationError::TooLarge(e)
    })
}

/// What a coordinator (of a fan-out or of a memory sweep) starts from: the Lambda
/// client, the function it invokes, and when it started.
struct Coordinator<'f> {
    invoker: &'f Invoker,
    function: String,
    started_unix_ms: u64,
    started: Instant,
}

impl Function {
    /// The start every coordinator shares: its Lambda client and `function` (the one it
    /// invokes), or why it cannot coordinate.
    fn coordinator(&self, function: Option<String>) -> Result<Coordinator<'_>, InvocationError> {
        let invoker = self
            .invoker
            .as_ref()
            .ok_or(InvocationError::Fanout(FanoutError::NoInvoker))?;
        let function = function.ok_or(InvocationError::Fanout(FanoutError::NoFunctionName))?;
        Ok(Coordinator {
            invoker,
            function,
            started_unix_ms: crate::sys::now_unix_ms(),
            started: Instant::now(),
        })
    }

    /// The end every coordinator shares: the wall time of the whole, and the analysis.
    fn finish_coordination(&self, mut result: SweepResult, started: Instant) -> SweepResult {
        result.total_wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
        analysis::analyse(&mut result, &Thresholds::default());
        result
    }

    /// The coordinator's side of a fan-out: invoke the children, merge their rows.
    async fn coordinate(&self, plan: &Plan, invocation: &Invocation) -> Result<SweepResult, InvocationError> {
        let c = self.coordinator(self.settings.fanout.target(&invocation.context.invoked_function_arn))?;
        tracing::info!(function = %c.function, fanout = ?plan.fanout(), "fan-out starting");
        // A listed prefix is listed once, by the preflight or here (within its budget):
        // each child lists only its share.
        self.list_keys(&self.client.session(plan), plan, invocation.deadline)
            .await?;
        let (start_unix_ms, outcomes) =
            children::invoke_children(c.invoker, &self.settings.fanout, &c.function, plan, invocation.deadline)
                .await
                .map_err(InvocationError::Fanout)?;
        let environment = engine::environment(
            &self.client,
            Runner::Lambda,
            Some(lambda_environment(invocation, &self.settings, self.init)),
        );
        let mut merged = merge::merged_result(environment, plan, &c.function, start_unix_ms, outcomes);
        merged.listing = children::listing_reports(plan);
        merged.started_unix_ms = c.started_unix_ms;
        let result = self.finish_coordination(merged, c.started);
        if let Some(f) = &result.fanout {
            tracing::info!(
                children_ok = f.children_ok,
                children_failed = f.children_failed,
                configurations = result.results.len(),
                "fan-out finished"
            );
        }
        Ok(result)
    }

    /// The coordinator of a memory sweep: one version per size, invoked, cleaned up.
    async fn coordinate_memory(&self, plan: &Plan, invocation: &Invocation) -> Result<SweepResult, InvocationError> {
        let context = &invocation.context;
        let c = self.coordinator(self.settings.fanout.unqualified(&context.invoked_function_arn))?;
        // The lock's token: this invocation (request id), and when it started.
        let token = format!("{} {}", context.request_id, c.started_unix_ms);
        let control = control::ControlPlane::new(
            c.invoker.client().clone(),
            &c.function,
            token.trim(),
            self.settings.memory_poll,
        );
        let (results, report) = memory::sweep_memory(c.invoker, &control, plan, invocation.deadline)
            .await
            .map_err(|e| {
                tracing::error!(error_type = e.error_type(), error = %e, "memory sweep failed");
                InvocationError::MemorySweep(e)
            })?;
        let environment = engine::environment(
            &self.client,
            Runner::Lambda,
            Some(lambda_environment(invocation, &self.settings, self.init)),
        );
        let base = SweepResult::new(environment, plan.request().clone(), c.started_unix_ms);
        let result = self.finish_coordination(memory::merged(base, results, report), c.started);
        tracing::info!(configurations = result.results.len(), "memory sweep finished");
        Ok(result)
    }
}

fn lambda_environment(
    invocation: &Invocation,
    settings: &FunctionSettings,
    init: Option<Duration>,
) -> LambdaEnvironment {
    let context = &invocation.context;
    let config = &context.env_config;
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    LambdaEnvironment {
        function_name: non_empty(&config.function_name),
        function_version: non_empty(&config.version),
        memory_size_mb: u32::try_from(config.memory).ok().filter(|&m| m > 0),
        cold_start: invocation.cold_start,
        architecture: Some(Architecture::from_machine(std::env::consts::ARCH)),
        region: settings.region.clone(),
        request_id: non_empty(&context.request_id),
        remaining_ms_at_start: invocation.remaining.map(|d| d.as_millis() as u64),
        safety_margin_ms: settings.safety_margin.as_millis() as u64,
        deployment: settings.deployment.clone(),
        substrate: Some(settings.substrate.clone()),
        init_us: init.map(|d| d.as_micros() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_become_diagnostics_with_stable_types() {
        let err = validate_event(serde_json::json!({"buckets": ["OK"], "endpoint": "http://evil.test"})).unwrap_err();
        let d = Diagnostic::from(InvocationError::InvalidEvent(err));
        assert_eq!(d.error_type, "InvalidEvent");
        assert!(d.error_message.contains("buckets[0]"), "{}", d.error_message);
        assert!(d.error_message.contains("endpoint"), "{}", d.error_message);
        let d = Diagnostic::from(InvocationError::Start(BucketError::ObjectNotFound {
            bucket: "b-1".into(),
            key: "test/0/vectors".into(),
        }));
        assert_eq!(d.error_type, "ObjectNotFound");
        assert!(d.error_message.contains("s3sweep seed"), "{}", d.error_message);
        // With the template's role (s3:ListBucket granted) a missing key is a 404, so
        // a 403 is the role or the bucket, and the advice no longer blames a missing
        // key (issue 33).
        let d = Diagnostic::from(InvocationError::Start(BucketError::AccessDenied {
            action: crate::s3::errors::Action::Read,
            bucket: "b-1".into(),
            key: "test/0/vectors".into(),
            endpoint: "AWS S3 (us-east-1)".into(),
            code: "AccessDenied".into(),
        }));
        assert_eq!(d.error_type, "AccessDenied");
        assert!(d.error_message.contains("s3:GetObject"), "{}", d.error_message);
        assert!(d.error_message.contains("s3:ListBucket"), "{}", d.error_message);
        assert!(
            d.error_message.contains("404 ObjectNotFound, not this"),
            "{}",
            d.error_message
        );
        assert!(!d.error_message.contains("seed"), "{}", d.error_message);
    }

    #[test]
    fn architecture_uses_lambda_names() {
        let name = Architecture::from_machine(std::env::consts::ARCH).name();
        assert!(["x86_64", "arm64"].contains(&name), "{name}");
        assert_eq!(Architecture::from_machine("aarch64"), Architecture::Arm64);
    }
}

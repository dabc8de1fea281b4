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
//! ([`merge`]); an event with `role: "child"` is one of those invocations. Every
//! setting comes from the environment, read once ([`settings`]); events are validated
//! in [`event`].
//!
//! Security: the S3 endpoint comes only from the function's environment
//! (`S3SWEEP_ENDPOINT_URL`); the event schema has no such field and rejects unknown
//! fields, so an event cannot point the function at another host.

pub mod children;
pub mod control;
pub mod event;
pub mod invoke;
pub mod memory;
pub mod merge;
pub mod response;
pub mod settings;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lambda_runtime::{Context, Diagnostic, LambdaEvent};

use crate::analysis;
use crate::engine::{self, Observer, StartError, StartSchedule, SweepOptions};
use crate::model::stats::round3;
use crate::model::{ConfigResult, LambdaEnvironment, SweepResult, Thresholds};
use crate::plan::json::EventJson;
use crate::plan::{Plan, RequestError};
use crate::s3::{ClientError, SweepClient};

pub use children::FanoutError;
pub use event::{validate_event, validate_event_with};
use invoke::Invoker;
pub use settings::{
    remaining_time, FunctionSettings, SettingsError, CA_BUNDLE_ENV, CREDENTIALS_ENV, ENDPOINT_ENV, SAFETY_MARGIN_ENV,
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
    Start(StartError),
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
fn start_message(err: &StartError) -> String {
    match err {
        StartError::AccessDenied { .. } => format!(
            "{err}. Note: without s3:ListBucket (the template grants only s3:GetObject), S3 also answers 403 for a key that does not exist, so check the objects were written (`make seed-aws`, or `s3sweep seed`)"
        ),
        _ => err.to_string(),
    }
}

impl InvocationError {
    /// The stable `errorType` the Lambda returns: `InvalidEvent`, or the
    /// [`StartError::error_type`] (`NoCredentials`, `BucketNotFound`, `AccessDenied`,
    /// `ObjectNotFound`, `EndpointUnreachable`, `StartFailed`), `FanoutUnavailable`,
    /// `DeadlineReached`, `ResponseTooLarge`, and a memory sweep's
    /// `ConcurrentMemorySweep`, `MemorySweepFailed`, `MemoryNotRestored`.
    pub fn error_type(&self) -> &'static str {
        match self {
            InvocationError::InvalidEvent(_) => "InvalidEvent",
            InvocationError::Start(e) => e.error_type(),
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

/// Lambda's name for this process's architecture.
pub fn lambda_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "arm64",
        other => other,
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
}

impl Function {
    /// Builds the S3 client from the settings (once per execution environment).
    pub async fn new(settings: FunctionSettings) -> Result<Self, ClientError> {
        let client = SweepClient::new(settings.client.clone()).await?;
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
        }
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
        let (payload, context) = event.into_parts();
        let cold_start = self.cold.swap(false, Ordering::Relaxed);
        let remaining = remaining_time(context.deadline, SystemTime::now());
        let mut deadline = remaining.map(|left| started + left);

        let plan = validate_event_with(payload, &self.settings.fanout).map_err(|err| {
            tracing::warn!(error_type = "InvalidEvent", error = %err, "invalid event");
            InvocationError::InvalidEvent(err)
        })?;
        tracing::info!(
            buckets = ?plan.buckets(),
            workers = ?plan.workers(),
            object_count = plan.object_count(),
            requests = plan.total_requests(),
            deadline_unix_ms = context.deadline,
            remaining_ms = remaining.map(|d| d.as_millis() as u64),
            cold_start,
            "sweep starting"
        );
        // Nothing, the preflight included, runs past the deadline less the margin.
        let margin = self.settings.safety_margin;
        let stop_at = deadline.map(|d| d.checked_sub(margin).unwrap_or(started));
        let preflight = engine::preflight(&self.client, &plan);
        let checked = match stop_at {
            // No time at all: no preflight; every configuration is listed as skipped.
            Some(at) if at <= Instant::now() => Ok(()),
            Some(at) => tokio::time::timeout_at(at.into(), preflight).await.map_err(|_| {
                tracing::error!(error_type = "DeadlineReached", "deadline reached in the preflight");
                InvocationError::DeadlineInPreflight {
                    margin_ms: margin.as_millis() as u64,
                }
            })?,
            None => preflight.await,
        };
        checked.map_err(|err| {
            tracing::error!(error_type = err.error_type(), error = %err, "sweep cannot start");
            InvocationError::Start(err)
        })?;
        if !plan.memory_mb().is_empty() {
            let mut result = self
                .coordinate_memory(&plan, &context, cold_start, remaining, deadline)
                .await?;
            fit_answer(&mut result)?;
            return Ok(result);
        }
        if plan.fanout().is_some() {
            let mut result = self
                .coordinate(&plan, &context, cold_start, remaining, deadline)
                .await?;
            fit_answer(&mut result)?;
            return Ok(result);
        }
        // A child stops in time for its coordinator to merge (its own deadline is later).
        if let Some(finish_by) = plan.finish_by_unix_ms() {
            let until = UNIX_EPOCH + Duration::from_millis(finish_by);
            let left = until.duration_since(SystemTime::now()).unwrap_or_default();
            let by = started + started.elapsed() + left;
            deadline = Some(deadline.map_or(by, |d| d.min(by)));
        }

        let options = SweepOptions {
            runner: "lambda".into(),
            deadline,
            safety_margin: self.settings.safety_margin,
            lambda: Some(lambda_environment(&context, &self.settings, cold_start, remaining)),
            schedule: StartSchedule::of(&plan),
        };
        let mut result = engine::run(&self.client, &plan, &options, self.observer.clone()).await;
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
        fit_answer(&mut result)?;
        Ok(result)
    }
}

/// Trims the answer to Lambda's response limit (see [`response`]).
fn fit_answer(result: &mut SweepResult) -> Result<(), InvocationError> {
    let limit = response::LAMBDA_RESPONSE_LIMIT_BYTES - response::RESPONSE_HEADROOM_BYTES;
    response::fit(result, limit).map_err(|e| {
        tracing::error!(error_type = "ResponseTooLarge", error = %e, "answer too large");
        InvocationError::TooLarge(e)
    })
}

impl Function {
    /// The coordinator's side of a fan-out: invoke the children, merge their rows.
    async fn coordinate(
        &self,
        plan: &Plan,
        context: &Context,
        cold_start: bool,
        remaining: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<SweepResult, InvocationError> {
        let invoker = self
            .invoker
            .as_ref()
            .ok_or(InvocationError::Fanout(FanoutError::NoInvoker))?;
        let function = self
            .settings
            .fanout
            .target(&context.invoked_function_arn)
            .ok_or(InvocationError::Fanout(FanoutError::NoFunctionName))?;
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let started = Instant::now();
        tracing::info!(function = %function, fanout = ?plan.fanout(), "fan-out starting");
        let (start_unix_ms, outcomes) = children::invoke_children(
            invoker,
            &self.settings.fanout,
            &function,
            plan,
            deadline,
            self.settings.safety_margin,
        )
        .await
        .map_err(InvocationError::Fanout)?;
        let environment = engine::environment(
            &self.client,
            "lambda",
            Some(lambda_environment(context, &self.settings, cold_start, remaining)),
        );
        let mut result = merge::merged_result(environment, plan, &function, start_unix_ms, outcomes);
        result.started_unix_ms = started_unix_ms;
        result.total_wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
        analysis::analyse(&mut result, &Thresholds::default());
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
}

impl Function {
    /// The coordinator of a memory sweep: one version per size, invoked, cleaned up.
    async fn coordinate_memory(
        &self,
        plan: &Plan,
        context: &Context,
        cold_start: bool,
        remaining: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<SweepResult, InvocationError> {
        let invoker = self
            .invoker
            .as_ref()
            .ok_or(InvocationError::Fanout(FanoutError::NoInvoker))?;
        let function = self
            .settings
            .fanout
            .unqualified(&context.invoked_function_arn)
            .ok_or(InvocationError::Fanout(FanoutError::NoFunctionName))?;
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let started = Instant::now();
        // The lock's token: this invocation (request id), and when it started.
        let token = format!("{} {started_unix_ms}", context.request_id);
        let control = control::ControlPlane::new(
            invoker.client().clone(),
            &function,
            token.trim(),
            self.settings.memory_poll,
        );
        let (results, report) = memory::sweep_memory(invoker, &control, plan, deadline, self.settings.safety_margin)
            .await
            .map_err(|e| {
                tracing::error!(error_type = e.error_type(), error = %e, "memory sweep failed");
                InvocationError::MemorySweep(e)
            })?;
        let environment = engine::environment(
            &self.client,
            "lambda",
            Some(lambda_environment(context, &self.settings, cold_start, remaining)),
        );
        let base = SweepResult::new(environment, plan.request().clone(), started_unix_ms);
        let mut result = memory::merged(base, results, report);
        result.total_wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
        analysis::analyse(&mut result, &Thresholds::default());
        tracing::info!(configurations = result.results.len(), "memory sweep finished");
        Ok(result)
    }
}

fn lambda_environment(
    context: &Context,
    settings: &FunctionSettings,
    cold_start: bool,
    remaining: Option<Duration>,
) -> LambdaEnvironment {
    let config = &context.env_config;
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    LambdaEnvironment {
        function_name: non_empty(&config.function_name),
        function_version: non_empty(&config.version),
        memory_size_mb: u32::try_from(config.memory).ok().filter(|&m| m > 0),
        cold_start,
        architecture: Some(lambda_architecture().to_string()),
        region: settings.region.clone(),
        request_id: non_empty(&context.request_id),
        remaining_ms_at_start: remaining.map(|d| d.as_millis() as u64),
        safety_margin_ms: settings.safety_margin.as_millis() as u64,
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
        let d = Diagnostic::from(InvocationError::Start(StartError::ObjectNotFound {
            bucket: "b-1".into(),
            key: "test/0/vectors".into(),
        }));
        assert_eq!(d.error_type, "ObjectNotFound");
        assert!(d.error_message.contains("s3sweep seed"), "{}", d.error_message);
        // With the template's role a missing key is a 403 too: the advice says so.
        let d = Diagnostic::from(InvocationError::Start(StartError::AccessDenied {
            action: crate::s3::errors::Action::Read,
            bucket: "b-1".into(),
            key: "test/0/vectors".into(),
            endpoint: "AWS S3 (us-east-1)".into(),
            code: "AccessDenied".into(),
        }));
        assert_eq!(d.error_type, "AccessDenied");
        assert!(d.error_message.contains("s3:GetObject"), "{}", d.error_message);
        assert!(d.error_message.contains("does not exist"), "{}", d.error_message);
    }

    #[test]
    fn architecture_uses_lambda_names() {
        assert!(["x86_64", "arm64"].contains(&lambda_architecture()));
    }
}

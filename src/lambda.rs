//! The Lambda function's logic: its settings from the function's environment, the
//! handler that turns an event into a sweep result or a `Diagnostic`, the reading of
//! the invocation's deadline, and one log line per finished configuration.
//!
//! `src/bin/s3sweep-lambda.rs` only sets up logging, builds one [`Function`] (and so
//! one S3 client) before `lambda_runtime::run`, and hands it the events. Everything
//! here is testable without the Lambda service: call [`Function::handle`] with a
//! `LambdaEvent` and a `Context` carrying whatever deadline the test needs.
//!
//! An event with a `fanout` field makes the handler a coordinator: it invokes its own
//! function N times and returns the merged result ([`crate::fanout`]); an event with
//! `role: "child"` is one of those invocations.
//!
//! Security: the S3 endpoint comes only from the function's environment
//! (`S3SWEEP_ENDPOINT_URL`); the event schema has no such field and rejects unknown
//! fields, so an event cannot point the function at another host.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use serde_json::Value;

use crate::client::{ClientError, ClientOptions, CredentialSource, SweepClient};
use crate::report::{ConfigResult, LambdaEnvironment, SweepResult};
use crate::request::{FieldProblem, Plan, RequestError};
use crate::sweep::{self, Observer, StartError, SweepOptions};

/// Environment variable: S3 endpoint URL overriding AWS's own (e.g. the embedded server).
pub const ENDPOINT_ENV: &str = "S3SWEEP_ENDPOINT_URL";
/// Environment variable: `local` (the embedded server's fixed credentials, the default
/// with an endpoint override) or `chain` (the function's role / standard chain).
pub const CREDENTIALS_ENV: &str = "S3SWEEP_CREDENTIALS";
/// Environment variable: safety margin before the deadline, in milliseconds.
pub const SAFETY_MARGIN_ENV: &str = "S3SWEEP_SAFETY_MARGIN_MS";

/// Default time kept free before the invocation's deadline: the result still has to
/// be serialised and returned.
pub const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_secs(5);
/// Largest accepted `S3SWEEP_SAFETY_MARGIN_MS` (10 minutes).
pub const MAX_SAFETY_MARGIN_MS: u64 = 600_000;
/// Longest remaining time a real invocation can have: Lambda's 900 s timeout plus a
/// little clock skew. A deadline further away (or already past) is not a real one
/// (`cargo lambda watch` sends such deadlines) and is treated as unknown.
pub const MAX_PLAUSIBLE_REMAINING: Duration = Duration::from_secs(905);
/// Most configurations (buckets x worker counts x repetitions) one invocation may run,
/// because Lambda returns at most 6 MB: a result row is ~0.8 KB, up to ~2 KB with error
/// samples, and the limit leaves room for rows to grow.
pub const MAX_LAMBDA_CONFIGURATIONS: u64 = 1_000;

/// The function's settings, read once from its environment at start-up.
#[derive(Debug, Clone)]
pub struct FunctionSettings {
    /// How to build the one S3 client.
    pub client: ClientOptions,
    /// Kept free before the deadline. Default [`DEFAULT_SAFETY_MARGIN`].
    pub safety_margin: Duration,
    /// `AWS_REGION` of the function, recorded in the result.
    pub region: Option<String>,
    /// Fan-out: the most invocations, the function to invoke (see [`crate::fanout`]).
    pub fanout: crate::fanout::FanoutSettings,
}

/// A function environment that cannot work. Every bad variable is named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid function environment: {}", .problems.join("; "))]
pub struct SettingsError {
    pub problems: Vec<String>,
}

impl FunctionSettings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a map in tests).
    /// Empty values count as unset, so a template can pass an empty parameter.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let endpoint = get(ENDPOINT_ENV);
        let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION"));
        let credentials = match get(CREDENTIALS_ENV).as_deref() {
            None => None,
            Some("chain") => Some(CredentialSource::Chain),
            Some("local") => Some(CredentialSource::Local),
            Some(other) => {
                problems.push(format!(
                    "{CREDENTIALS_ENV}={other:?}: must be \"local\" (the embedded server's fixed credentials) or \"chain\" (the function's role)"
                ));
                None
            }
        };
        let client = match endpoint {
            Some(url) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.push(format!(
                        "{ENDPOINT_ENV}={url:?}: must be an http:// or https:// URL, e.g. http://127.0.0.1:9000"
                    ));
                }
                match credentials.unwrap_or(CredentialSource::Local) {
                    CredentialSource::Local => ClientOptions::local(url),
                    CredentialSource::Chain => ClientOptions {
                        endpoint: Some(url),
                        region: region.clone(),
                        credentials: CredentialSource::Chain,
                    },
                }
            }
            None => {
                if credentials == Some(CredentialSource::Local) {
                    problems.push(format!(
                        "{CREDENTIALS_ENV}=local: the local credentials only work with {ENDPOINT_ENV} pointing at an s3sweep server; unset it to use the function's role"
                    ));
                }
                ClientOptions::aws()
            }
        };
        let safety_margin = match get(SAFETY_MARGIN_ENV) {
            None => DEFAULT_SAFETY_MARGIN,
            Some(text) => match text.parse::<u64>() {
                Ok(ms) if ms <= MAX_SAFETY_MARGIN_MS => Duration::from_millis(ms),
                _ => {
                    problems.push(format!(
                        "{SAFETY_MARGIN_ENV}={text:?}: must be a whole number of milliseconds from 0 to {MAX_SAFETY_MARGIN_MS}"
                    ));
                    DEFAULT_SAFETY_MARGIN
                }
            },
        };
        let fanout = crate::fanout::FanoutSettings::from_lookup(get, &mut problems);
        if problems.is_empty() {
            Ok(FunctionSettings {
                client,
                safety_margin,
                region,
                fanout,
            })
        } else {
            Err(SettingsError { problems })
        }
    }
}

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
    Fanout(crate::fanout::FanoutError),
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
    /// `ObjectNotFound`, `EndpointUnreachable`, `StartFailed`).
    pub fn error_type(&self) -> &'static str {
        match self {
            InvocationError::InvalidEvent(_) => "InvalidEvent",
            InvocationError::Start(e) => e.error_type(),
            InvocationError::Fanout(_) => "FanoutUnavailable",
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

/// Time left before `deadline_unix_ms` (the invocation context's deadline), or `None`
/// when that deadline is not one a real invocation can have: already past, or more
/// than [`MAX_PLAUSIBLE_REMAINING`] away. `None` means "run without a deadline".
pub fn remaining_time(deadline_unix_ms: u64, now: SystemTime) -> Option<Duration> {
    let deadline = UNIX_EPOCH.checked_add(Duration::from_millis(deadline_unix_ms))?;
    let left = deadline.duration_since(now).ok()?;
    (!left.is_zero() && left <= MAX_PLAUSIBLE_REMAINING).then_some(left)
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
    invoker: Option<crate::fanout::Invoker>,
}

impl Function {
    /// Builds the S3 client from the settings (once per execution environment).
    pub async fn new(settings: FunctionSettings) -> Result<Self, ClientError> {
        let client = SweepClient::new(settings.client.clone()).await?;
        let invoker = crate::fanout::Invoker::new(&settings.fanout).await;
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
    pub fn with_invoker(mut self, invoker: crate::fanout::Invoker) -> Self {
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
    /// bucket, then sweeps, starting no configuration that would not finish before
    /// the deadline minus the safety margin.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<SweepResult, InvocationError> {
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
        sweep::preflight(&self.client, &plan).await.map_err(|err| {
            tracing::error!(error_type = err.error_type(), error = %err, "sweep cannot start");
            InvocationError::Start(err)
        })?;
        if plan.fanout().is_some() {
            return self.coordinate(&plan, &context, cold_start, remaining, deadline).await;
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
            child: crate::fanout::ChildOptions::of(&plan),
            ..SweepOptions::default()
        };
        let result = sweep::run(&self.client, &plan, &options, self.observer.clone()).await;
        if result.truncated {
            tracing::warn!(
                skipped = result.skipped.len(),
                reason = result.skipped.first().map(|s| s.reason.as_str()).unwrap_or(""),
                "deadline reached: configurations skipped"
            );
        }
        tracing::info!(
            configurations = result.results.len(),
            total_wall_ms = result.total_wall_ms,
            truncated = result.truncated,
            "sweep finished"
        );
        Ok(result)
    }
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
        use crate::fanout::{self, FanoutError};
        let invoker = self
            .invoker
            .as_ref()
            .ok_or(InvocationError::Fanout(FanoutError::NoInvoker))?;
        let function = self.settings.fanout.function_name.clone().unwrap_or_default();
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let started = Instant::now();
        tracing::info!(function = %function, fanout = ?plan.fanout(), "fan-out starting");
        let (start_unix_ms, outcomes) = fanout::invoke_children(
            invoker,
            &self.settings.fanout,
            plan,
            deadline,
            self.settings.safety_margin,
        )
        .await
        .map_err(InvocationError::Fanout)?;
        let environment = fanout::environment(
            &self.client,
            lambda_environment(context, &self.settings, cold_start, remaining),
        );
        let mut result = fanout::merged_result(environment, plan, &function, start_unix_ms, outcomes);
        result.started_unix_ms = started_unix_ms;
        result.total_wall_ms = crate::report::round3(started.elapsed().as_secs_f64() * 1000.0);
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

/// The event as a plan, with the one limit only the Lambda has: its response size.
pub fn validate_event(payload: Value) -> Result<Plan, RequestError> {
    validate_event_with(payload, &crate::fanout::FanoutSettings::default())
}

/// [`validate_event`] with the function's fan-out settings: `fanout.invocations` is
/// capped by `FanoutMax`, and the rows a coordinator keeps (children x configurations)
/// by the response limit.
pub fn validate_event_with(payload: Value, fanout: &crate::fanout::FanoutSettings) -> Result<Plan, RequestError> {
    let plan = Plan::from_value(payload)?;
    let configurations = plan.buckets().len() as u64 * plan.workers().len() as u64 * u64::from(plan.repetitions());
    let mut problems: Vec<FieldProblem> = fanout.check(&plan).into_iter().collect();
    if let Some(f) = plan.fanout() {
        let rows = configurations * u64::from(f.invocations);
        if rows > MAX_LAMBDA_CONFIGURATIONS && problems.is_empty() {
            problems.push(FieldProblem {
                field: "fanout.invocations".into(),
                message: format!(
                    "{} invocations x {configurations} configurations = {rows} child rows; a Lambda result holds at most {MAX_LAMBDA_CONFIGURATIONS} (6 MB response limit): fewer invocations or configurations",
                    f.invocations
                ),
            });
        }
    }
    if !problems.is_empty() {
        return Err(RequestError { problems });
    }
    if configurations > MAX_LAMBDA_CONFIGURATIONS {
        return Err(RequestError {
            problems: vec![FieldProblem {
                field: "repetitions".into(),
                message: format!(
                    "the run has {configurations} configurations ({} buckets x {} worker counts x {} repetitions); a Lambda result holds at most {MAX_LAMBDA_CONFIGURATIONS} (6 MB response limit): use fewer, or `s3sweep run`",
                    plan.buckets().len(),
                    plan.workers().len(),
                    plan.repetitions()
                ),
            }],
        });
    }
    // Lambda allows 1,024 file descriptors: a pool that needs more is a bad event, not
    // a run that fails half-way with EMFILE.
    if let Err(err) = crate::limits::check_budget(
        &crate::limits::nofile(),
        plan.pool_connections(),
        plan.buckets().len(),
        false,
    ) {
        return Err(RequestError {
            problems: vec![FieldProblem {
                field: "pool_connections".into(),
                message: err.to_string(),
            }],
        });
    }
    Ok(plan)
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
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<FunctionSettings, SettingsError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        FunctionSettings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn without_an_override_the_function_talks_to_aws_with_its_role() {
        let s = settings(&[("AWS_REGION", "eu-west-1")]).unwrap();
        assert_eq!(s.client.endpoint, None);
        assert_eq!(s.client.credentials, CredentialSource::Chain);
        assert_eq!(s.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.safety_margin, DEFAULT_SAFETY_MARGIN);
        // An empty override (a template parameter left blank) is no override.
        let s = settings(&[(ENDPOINT_ENV, " ")]).unwrap();
        assert_eq!(s.client.endpoint, None);
    }

    #[test]
    fn the_override_uses_local_credentials_unless_chain_is_asked_for() {
        let s = settings(&[(ENDPOINT_ENV, "http://127.0.0.1:9000")]).unwrap();
        assert_eq!(s.client.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(s.client.credentials, CredentialSource::Local);
        let s = settings(&[
            (ENDPOINT_ENV, "https://s3.example.test"),
            (CREDENTIALS_ENV, "chain"),
            ("AWS_REGION", "us-west-2"),
            (SAFETY_MARGIN_ENV, "250"),
        ])
        .unwrap();
        assert_eq!(s.client.credentials, CredentialSource::Chain);
        assert_eq!(s.client.region.as_deref(), Some("us-west-2"));
        assert_eq!(s.safety_margin, Duration::from_millis(250));
    }

    #[test]
    fn every_bad_variable_is_named() {
        let err = settings(&[
            (ENDPOINT_ENV, "127.0.0.1:9000"),
            (CREDENTIALS_ENV, "root"),
            (SAFETY_MARGIN_ENV, "-1"),
        ])
        .unwrap_err();
        let text = err.to_string();
        for name in [ENDPOINT_ENV, CREDENTIALS_ENV, SAFETY_MARGIN_ENV] {
            assert!(text.contains(name), "{name} not named in {text}");
        }
        assert_eq!(err.problems.len(), 3);
        let err = settings(&[(CREDENTIALS_ENV, "local")]).unwrap_err();
        assert!(err.to_string().contains(ENDPOINT_ENV), "{err}");
        let err = settings(&[(SAFETY_MARGIN_ENV, "600001")]).unwrap_err();
        assert!(err.to_string().contains(SAFETY_MARGIN_ENV), "{err}");
    }

    #[test]
    fn only_plausible_deadlines_count() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert_eq!(
            remaining_time(ms(now + Duration::from_secs(60)), now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            remaining_time(ms(now + Duration::from_secs(900)), now),
            Some(Duration::from_secs(900))
        );
        // Past, now, zero, and further than any Lambda timeout: unknown.
        assert_eq!(remaining_time(ms(now - Duration::from_secs(1)), now), None);
        assert_eq!(remaining_time(ms(now), now), None);
        assert_eq!(remaining_time(0, now), None);
        assert_eq!(remaining_time(ms(now + Duration::from_secs(906)), now), None);
        assert_eq!(remaining_time(ms(now + Duration::from_secs(86_400 * 365)), now), None);
        assert_eq!(remaining_time(u64::MAX, now), None);
    }

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
            bucket: "b-1".into(),
            key: "test/0/vectors".into(),
        }));
        assert_eq!(d.error_type, "AccessDenied");
        assert!(d.error_message.contains("s3:GetObject"), "{}", d.error_message);
        assert!(d.error_message.contains("does not exist"), "{}", d.error_message);
    }

    #[test]
    fn the_lambda_refuses_results_larger_than_its_response_limit() {
        let workers: Vec<u32> = (1..=50).collect();
        let err = validate_event(serde_json::json!({
            "buckets": ["a-bucket", "b-bucket"],
            "object_count": 10,
            "workers": workers,
            "repetitions": 11,
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["repetitions"]);
        assert!(err.to_string().contains("1100 configurations"), "{err}");
        let workers: Vec<u32> = (1..=50).collect();
        assert!(validate_event(serde_json::json!({
            "buckets": ["a-bucket", "b-bucket"],
            "object_count": 10,
            "workers": workers,
            "repetitions": 10,
        }))
        .is_ok());
    }

    #[test]
    fn architecture_uses_lambda_names() {
        assert!(["x86_64", "arm64"].contains(&lambda_architecture()));
    }

    #[test]
    fn a_pool_beyond_the_descriptor_limit_is_an_invalid_event() {
        let buckets: Vec<String> = (0..16).map(|i| format!("bucket-{i:02}")).collect();
        let event =
            serde_json::json!({"buckets": buckets, "object_count": 1, "workers": [1], "pool_connections": 4096});
        let (needed, _) = crate::limits::fds_needed(4096, 16, false);
        match validate_event(event) {
            Err(err) => {
                assert!(needed > crate::limits::nofile().soft, "{err}");
                assert_eq!(err.fields(), vec!["pool_connections"]);
                assert!(err.to_string().contains("file descriptors"), "{err}");
            }
            Ok(_) => assert!(
                needed <= crate::limits::nofile().soft,
                "a pool needing {needed} fds was accepted"
            ),
        }
    }
}

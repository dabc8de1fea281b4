//! The Lambda function `s3sweep-lambda`: logging, one S3 client built before the
//! runtime loop, and the handler in the `s3sweep_lambda` library. Thin: everything testable is in
//! the library.

#![recursion_limit = "256"]

use std::sync::Arc;
use std::time::Instant;

use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};

use s3sweep_core::plan::json::EventJson;
use s3sweep_lambda::{Function, FunctionSettings};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    // The init the results report: from here to ready for the first event.
    let started = Instant::now();
    // Honours AWS_LAMBDA_LOG_LEVEL (else RUST_LOG, else INFO) and
    // AWS_LAMBDA_LOG_FORMAT=JSON. Every line redacted (session tokens, URL passwords).
    lambda_runtime::tracing::init_default_subscriber_with_writer(s3sweep_core::sys::redact::Redacting(std::io::stdout));
    // Many pooled connections need many descriptors: lift the soft limit to the hard one.
    let fd_limits = s3sweep_core::sys::limits::raise_nofile();
    tracing::debug!(soft = fd_limits.soft, hard = fd_limits.hard, "file descriptor limits");
    let settings = FunctionSettings::from_env().inspect_err(|e| tracing::error!("{e}"))?;
    let function = Arc::new(
        Function::new(settings)
            .await
            .inspect_err(|e| tracing::error!("building the S3 client: {e}"))?
            .with_init_time(started.elapsed()),
    );
    tracing::info!(
        endpoint = function.client().endpoint().unwrap_or("AWS"),
        region = function.client().region(),
        safety_margin_ms = function.settings().safety_margin.as_millis() as u64,
        "s3sweep-lambda ready"
    );
    // The event is parsed strictly: a key given twice is an invalid event.
    // run_concurrent: on Lambda Managed Instances (AWS_LAMBDA_MAX_CONCURRENCY set by
    // Lambda) that many invocations at once, each in its own task; on Lambda, where it
    // is unset, one at a time, as `run` does.
    lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<EventJson>| {
        let function = function.clone();
        async move { function.handle(event).await.map_err(Diagnostic::from) }
    }))
    .await
}

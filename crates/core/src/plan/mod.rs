//! A request validated into a [`Plan`]: a raw JSON document is read section by
//! section (the fields of [`request_fields`], read by [`fields`] and [`sections`]),
//! every field checked, and every problem reported in one [`RequestError`]. A `Plan`
//! cannot hold an invalid value, so the engine never re-checks. Limits: workers
//! 1..=4096, object_count 1..=1,000,000, at most 10,000,000 timed requests per run.

pub(crate) mod bucket_name;
pub mod destination;
pub(crate) mod fields;
pub mod json;
pub(crate) mod key_template;
pub(crate) mod keys;
pub mod names;
pub mod request_fields;
pub(crate) mod sections;
pub mod sizes;
mod typed;

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::model::request::SweepRequest;
use crate::model::AxisValues;

pub use bucket_name::{check_bucket_name, is_directory_bucket, BucketNameError};
pub use destination::{check_metrics_namespace, DestinationError, ObjectUri, ResultsUri};
pub use key_template::{KeyTemplate, TemplateError};
pub use keys::{BucketListing, Keys, ListedObject};
use request_fields::typed_request;
pub use request_fields::REQUEST_FIELDS;
use sections::{check_fanout, check_memory, check_prices};
pub use sections::{LAMBDA_MEMORY_MB, MAX_INVOCATIONS, MAX_MEMORY_SIZES, MAX_TARGET_WALL_MS};
pub use sizes::{sized_template, MAX_OBJECT_SIZES, MAX_OBJECT_SIZE_BYTES};
pub use typed::Plan;

/// Most requests in flight in one configuration.
pub const MAX_WORKERS: u32 = 4096;
/// Most objects read per configuration.
pub const MAX_OBJECT_COUNT: u32 = 1_000_000;
/// Most timed requests in one run (buckets x worker counts x repetitions x objects).
pub const MAX_TOTAL_REQUESTS: u64 = 10_000_000;
/// Most buckets in one run.
pub const MAX_BUCKETS: usize = 16;
/// Most TCP connections per endpoint.
pub const MAX_POOL_CONNECTIONS: u32 = 4096;
/// Most repetitions of each configuration.
pub const MAX_REPETITIONS: u32 = 100;
/// Most attempts per request.
pub const MAX_ATTEMPTS: u32 = 10;
/// Longest key a template may produce (S3's own limit).
pub const MAX_KEY_BYTES: usize = 1024;
/// Most configurations (buckets x worker counts x repetitions x clients x memory sizes) in one
/// run, on every entry point: a result holds one row per configuration, and the
/// Lambda's answer must fit its 6 MB response limit (a row is ~3.8-4.8 KB with its
/// latency histogram, `docs/demo.json`, so 1,000 rows stay under 5 MB).
pub const MAX_CONFIGURATIONS: u64 = 1_000;
/// Problems an error lists in full; the rest are counted.
pub const MAX_LISTED_PROBLEMS: usize = 20;
/// Longest timeout, ms (Lambda's 15 minutes).
const MAX_TIMEOUT_MS: u64 = 900_000;

/// One problem with one field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldProblem {
    /// The field, as a path (`workers[2]`, `timeouts_ms.connect`); `(request)` for the
    /// document as a whole.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

/// Every problem found in a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RequestError {
    pub problems: Vec<FieldProblem>,
}

impl RequestError {
    /// The error of `problems`: the first [`MAX_LISTED_PROBLEMS`] in full, the rest
    /// counted in one last problem.
    pub fn new(mut problems: Vec<FieldProblem>) -> Self {
        if problems.len() > MAX_LISTED_PROBLEMS {
            let more = problems.len() - MAX_LISTED_PROBLEMS;
            problems.truncate(MAX_LISTED_PROBLEMS);
            problems.push(FieldProblem {
                field: "(request)".into(),
                message: format!("{more} more problem(s) not listed"),
            });
        }
        RequestError { problems }
    }

    pub fn single(field: &str, message: impl Into<String>) -> Self {
        RequestError {
            problems: vec![FieldProblem {
                field: field.to_string(),
                message: message.into(),
            }],
        }
    }

    /// The names of the bad fields, in order.
    pub fn fields(&self) -> Vec<&str> {
        self.problems.iter().map(|p| p.field.as_str()).collect()
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(f, "invalid request ({n} problem{}): ", if n == 1 { "" } else { "s" })?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "`{}`: {}", p.field, p.message)?;
        }
        Ok(())
    }
}

/// A request's values on every axis (memory sizes included).
pub fn axis_values(request: &SweepRequest) -> AxisValues {
    AxisValues::new(
        &request.memory_mb,
        &request.object_sizes_bytes,
        &request.clients,
        &request.hedge,
    )
}

/// The configurations of a request whose axes take `values`: buckets x worker counts x
/// repetitions x every point on the axes. The one place the count is written.
pub fn configurations_of(request: &SweepRequest, values: &AxisValues) -> u64 {
    request.buckets.len() as u64 * request.workers.len() as u64 * u64::from(request.repetitions) * values.count()
}

/// ` x 2 clients x 3 hedge policies`: each axis with more than one value.
fn swept_axes(request: &SweepRequest) -> String {
    axis_values(request)
        .lengths()
        .iter()
        .filter(|(n, _)| *n > 1)
        .map(|(n, what)| format!(" x {n} {what}"))
        .collect()
}

/// The problem of a run with more than [`MAX_CONFIGURATIONS`] configurations.
pub fn configurations_message(request: &SweepRequest, configurations: u64) -> String {
    format!(
        "the run has {configurations} configurations ({} buckets x {} worker counts x {} repetitions{}); a run holds at most {MAX_CONFIGURATIONS} (one result row each; a Lambda answer must fit 6 MB): use fewer",
        request.buckets.len(),
        request.workers.len(),
        request.repetitions,
        swept_axes(request),
    )
}

impl Plan {
    /// Parses and validates a JSON document.
    /// A key given twice is a problem ([`json::parse_event`]).
    pub fn from_json(text: &str) -> Result<Plan, RequestError> {
        Plan::from_event(json::parse_event(text)?)
    }

    /// Validates a parsed document: its duplicate keys first, then every field.
    pub fn from_event(event: json::EventJson) -> Result<Plan, RequestError> {
        let duplicates = event.duplicate_problems();
        match Plan::from_value(event.value) {
            Ok(plan) if duplicates.is_empty() => Ok(plan),
            Ok(_) => Err(RequestError::new(duplicates)),
            Err(e) => Err(RequestError::new(duplicates.into_iter().chain(e.problems).collect())),
        }
    }

    /// Validates an already parsed JSON value, reporting every bad field.
    pub fn from_value(value: Value) -> Result<Plan, RequestError> {
        let Value::Object(map) = value else {
            return Err(RequestError::single(
                "(request)",
                format!("must be a JSON object, got {}", fields::kind_of(&value)),
            ));
        };
        let mut problems = Vec::new();
        // Fields with the wrong type keep their (valid) defaults, so the range checks
        // below still report every other field.
        let request = typed_request(map, &mut problems);
        match Plan::from_request(request) {
            Ok(plan) if problems.is_empty() => Ok(plan),
            Ok(_) => Err(RequestError::new(problems)),
            Err(more) => {
                // A field already reported for its type is not reported again for the
                // default that stood in for it.
                let typed: Vec<String> = problems.iter().map(|p| p.field.clone()).collect();
                let already = |field: &str| {
                    typed.iter().any(|t| {
                        field == t || field.starts_with(&format!("{t}[")) || field.starts_with(&format!("{t}."))
                    })
                };
                problems.extend(more.problems.into_iter().filter(|p| !already(&p.field)));
                Err(RequestError::new(problems))
            }
        }
    }

    /// Validates a typed request: every check below, each adding one problem per bad
    /// field, so every problem is reported at once.
    pub fn from_request(request: SweepRequest) -> Result<Plan, RequestError> {
        let mut problems = Vec::new();
        check_buckets(&request, &mut problems);
        let template = check_keys(&request, &mut problems);
        check_fanout(&request, &mut problems);
        check_workers(&request, &mut problems);
        sections::check_clients(&request, &mut problems);
        sections::check_hedge(&request, &mut problems);
        check_counts(&request, &mut problems);
        check_network(&request, &mut problems);
        let (results_uri, requests_log_uri) = destination::check_destination(&request, &mut problems);
        check_prices(&request.prices, request.target_wall_ms, &mut problems);
        check_memory(&request, &mut problems);
        sizes::check_object_sizes(&request, &mut problems);
        check_total(&request, &mut problems);
        match template {
            Some(template) if problems.is_empty() => Ok(Plan::build(
                request,
                typed::Checked {
                    template,
                    results_uri,
                    requests_log_uri,
                },
            )),
            _ => Err(RequestError::new(problems)),
        }
    }
}

/// One problem with `field`.
fn problem(field: impl Into<String>, message: String) -> FieldProblem {
    FieldProblem {
        field: field.into(),
        message,
    }
}

/// `buckets`: one to [`MAX_BUCKETS`], each a valid name, none twice.
fn check_buckets(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    if request.buckets.is_empty() {
        problems.push(problem("buckets", "must name at least one bucket".into()));
    }
    if request.buckets.len() > MAX_BUCKETS {
        problems.push(problem(
            "buckets",
            format!("at most {MAX_BUCKETS} buckets, got {}", request.buckets.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    // Past the limit the length alone is the problem: no per-entry lines.
    let listed = if request.buckets.len() > MAX_BUCKETS {
        0
    } else {
        MAX_BUCKETS
    };
    for (i, b) in request.buckets.iter().enumerate().take(listed) {
        if let Err(e) = check_bucket_name(b) {
            problems.push(problem(format!("buckets[{i}]"), e.to_string()));
        } else if !seen.insert(b.as_str()) {
            problems.push(problem(format!("buckets[{i}]"), format!("{b:?} is listed twice")));
        }
    }
}

/// `object_count` in range, and the key template for that many objects.
fn check_keys(request: &SweepRequest, problems: &mut Vec<FieldProblem>) -> Option<KeyTemplate> {
    check_prefix(request, problems);
    if request.object_count == 0 || request.object_count > MAX_OBJECT_COUNT {
        problems.push(problem(
            "object_count",
            format!("must be between 1 and {MAX_OBJECT_COUNT}, got {}", request.object_count),
        ));
    }
    KeyTemplate::parse(&request.key_template, request.object_count.max(1) - 1)
        .map_err(|e| problems.push(problem("key_template", e.to_string())))
        .ok()
}

/// `key_prefix`: instead of a template (not beside one), at most 1,024 bytes, no
/// control characters; `allow_fewer_keys` only with it.
fn check_prefix(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let Some(prefix) = &request.key_prefix else {
        if request.allow_fewer_keys {
            problems.push(problem("allow_fewer_keys", "applies only with key_prefix".to_string()));
        }
        return;
    };
    if request.key_template != crate::model::request::DEFAULT_KEY_TEMPLATE {
        problems.push(sections::both_key_sources());
    }
    if let Err(e) = names::check_key_prefix(prefix) {
        problems.push(problem("key_prefix", e.to_string()));
    }
}

/// `workers`: at least one count, each 1..=[`MAX_WORKERS`], none twice.
fn check_workers(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    if request.workers.is_empty() {
        problems.push(problem("workers", "must list at least one worker count".into()));
    }
    if request.workers.len() > MAX_WORKERS as usize {
        problems.push(problem(
            "workers",
            format!("at most {MAX_WORKERS} worker counts, got {}", request.workers.len()),
        ));
    }
    // Past the limit the length alone is the problem: no per-entry lines.
    let listed = if request.workers.len() > MAX_WORKERS as usize {
        0
    } else {
        request.workers.len()
    };
    let mut seen = BTreeSet::new();
    for (i, &w) in request.workers.iter().enumerate().take(listed) {
        if w == 0 || w > MAX_WORKERS {
            problems.push(problem(
                format!("workers[{i}]"),
                format!("must be between 1 and {MAX_WORKERS}, got {w}"),
            ));
        } else if !seen.insert(w) {
            problems.push(problem(format!("workers[{i}]"), format!("{w} is listed twice")));
        }
    }
}

/// The counts and timeouts: `pool_connections`, `repetitions`, `max_attempts`,
/// `timeouts_ms.*`, each within its limit.
fn check_counts(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    for (field, value, max) in [
        ("pool_connections", request.pool_connections, MAX_POOL_CONNECTIONS),
        ("repetitions", request.repetitions, MAX_REPETITIONS),
        ("max_attempts", request.max_attempts, MAX_ATTEMPTS),
    ] {
        if value == 0 || value > max {
            problems.push(problem(field, format!("must be between 1 and {max}, got {value}")));
        }
    }
    for (name, v) in [
        ("connect", request.timeouts_ms.connect),
        ("first_byte", request.timeouts_ms.first_byte),
        ("attempt", request.timeouts_ms.attempt),
    ] {
        if v == 0 || v > MAX_TIMEOUT_MS {
            problems.push(problem(
                format!("timeouts_ms.{name}"),
                format!("must be between 1 and {MAX_TIMEOUT_MS} ms, got {v}"),
            ));
        }
    }
}

/// The client's network settings: the pool's idle timeout and the probe object's key.
fn check_network(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let idle = request.pool_idle_timeout_ms;
    if idle == 0 || idle > MAX_TIMEOUT_MS {
        problems.push(problem(
            "pool_idle_timeout_ms",
            format!("must be between 1 and {MAX_TIMEOUT_MS} ms, got {idle}"),
        ));
    }
    if let Some(key) = &request.probe_key {
        if key.is_empty() || key.len() > 1024 {
            problems.push(problem("probe_key", "must be an object key of 1 to 1024 bytes".into()));
        }
    }
}

/// The whole run within [`MAX_CONFIGURATIONS`] configurations and its timed requests
/// (every memory size counted) within [`MAX_TOTAL_REQUESTS`].
fn check_total(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let configurations = configurations_of(request, &axis_values(request));
    if configurations > MAX_CONFIGURATIONS {
        problems.push(problem("repetitions", configurations_message(request, configurations)));
    }
    let total = configurations * u64::from(request.object_count);
    if total > MAX_TOTAL_REQUESTS {
        problems.push(problem(
            "object_count",
            format!(
                "the run would make {total} requests ({} buckets x {} worker counts x {} repetitions x {} objects{}); the limit is {MAX_TOTAL_REQUESTS}",
                request.buckets.len(),
                request.workers.len(),
                request.repetitions,
                request.object_count,
                swept_axes(request),
            ),
        ));
    }
}

#[cfg(test)]
mod tests;

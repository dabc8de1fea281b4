//! Fan-out: one sweep spread over N invocations of the same Lambda function, started
//! together, results merged. Lambda is the distributed engine; there is no scheduler
//! of our own.
//!
//! The invoked function becomes the *coordinator* when its event has a `fanout` field
//! (`{"invocations": N, "start_delay_ms": D, "split": "shard" | "replicate"}`). It
//! invokes its own function (`AWS_LAMBDA_FUNCTION_NAME`, or `S3SWEEP_FANOUT_FUNCTION`)
//! N times at once with aws-sdk-lambda (`RequestResponse`, retries off so a failed child
//! never runs twice). Each child gets the same sweep with `role: "child"`, a shard of
//! the keys (`key_range`, contiguous, `shard`) or all keys with its own shuffle seed
//! (`replicate`), one shared `start_unix_ms` (now + D) and a `finish_by_unix_ms` that
//! keeps it inside the coordinator's own deadline. Children never fan out again: a
//! child event with `fanout` is rejected in validation.
//!
//! By default a child waits for the shared start once, before the timed phase of its
//! *first* configuration (after that configuration's warm-up, so cold connections do
//! not eat into the aligned window). Later configurations start as soon as the
//! previous one ends: children cannot talk to each other and configuration durations
//! are not known in advance, so no later barrier time can be agreed on by itself. A
//! user who knows a bound gives `fanout.slot_ms`: configuration k's timed phase then
//! starts at the shared start + k x `slot_ms` in every child, so children begin every
//! configuration together (one that overruns its slot delays the next). Either way the
//! drift is measured: every merged configuration reports the spread of the children's
//! start and finish times, and its throughput is taken over the common window (first
//! start to last finish), so drift lowers the figure rather than flattering it.
//!
//! Children add a [`ChildMeasure`] to every row: the timed phase's wall-clock window
//! and the latency histograms serialized (hdrhistogram V2 + deflate, base64). The
//! coordinator merges per configuration ([`merge`]): counts and errors are summed,
//! histograms are added (percentiles are never averaged), throughput is taken over the
//! common window. A child that errors, times out or is throttled is named in
//! [`FanoutReport::children`] and the others are still merged.

use std::io::Cursor;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_lambda::error::{DisplayErrorContext, SdkError};
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::client::{Transport, TransportSettings};
use crate::report::{
    round3, summarize, ConfigResult, Environment, ErrorCounts, LambdaEnvironment, Percentiles, SkippedConfig,
    SweepResult, ToolInfo, SCHEMA,
};
use crate::request::{field, field_name, kind_of, FieldProblem, Plan, SweepRequest};

/// Environment variable: most invocations one fan-out may ask for (template
/// parameter `FanoutMax`). Default [`DEFAULT_FANOUT_MAX`].
pub const FANOUT_MAX_ENV: &str = "S3SWEEP_FANOUT_MAX";
/// Environment variable: the function the coordinator invokes, instead of its own
/// `AWS_LAMBDA_FUNCTION_NAME` (for the emulator, whose function name is the binary's).
pub const FUNCTION_ENV: &str = "S3SWEEP_FANOUT_FUNCTION";
/// Environment variable, tests only: the child with this index gets an event with an
/// unknown field, so its invocation really fails (`InvalidEvent`) through the Invoke
/// API. Never set it on a deployed function.
pub const TEST_BREAK_CHILD_ENV: &str = "S3SWEEP_FANOUT_TEST_BREAK_CHILD";
/// Default of [`FANOUT_MAX_ENV`].
pub const DEFAULT_FANOUT_MAX: u32 = 10;
/// Largest `fanout.invocations` validation accepts whatever the environment says.
pub const MAX_INVOCATIONS: u32 = 1_000;
/// Default `fanout.start_delay_ms`: room for N cold starts before the shared start.
pub const DEFAULT_START_DELAY_MS: u64 = 2_000;
/// Largest `fanout.start_delay_ms`.
pub const MAX_START_DELAY_MS: u64 = 60_000;
/// Longest schedule of slots (configurations x `slot_ms`): Lambda's 15 minutes.
pub const MAX_SLOTS_MS: u64 = 900_000;
/// How far in the future a child's `start_unix_ms` may be (delay plus clock skew).
pub const MAX_START_AHEAD_MS: u64 = MAX_START_DELAY_MS + 10_000;
/// Wait for an invocation when the coordinator has no deadline (the emulator): Lambda's
/// 900 s limit plus a little.
pub const NO_DEADLINE_INVOKE_LIMIT: Duration = Duration::from_secs(930);

/// Who runs the sweep: the invoked function (`coordinator`, also a plain sweep) or an
/// invocation a coordinator started (`child`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    #[default]
    Coordinator,
    Child,
}

impl Role {
    /// For `skip_serializing_if`: the default is not echoed.
    pub fn is_coordinator(&self) -> bool {
        *self == Role::Coordinator
    }
}

/// How the keys are divided among children.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Each child reads its own contiguous range of the keys; together they read each
    /// object once per configuration.
    #[default]
    Shard,
    /// Every child reads every key (each in its own shuffled order).
    Replicate,
}

/// The `fanout` request field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FanoutRequest {
    /// Children to invoke, 1..=`FanoutMax`.
    pub invocations: u32,
    /// The shared start is this long after the coordinator starts invoking, ms.
    #[serde(default = "default_start_delay_ms")]
    pub start_delay_ms: u64,
    /// `shard` (default) or `replicate`.
    #[serde(default)]
    pub split: Split,
    /// With a slot, children align every configuration: configuration k's timed phase
    /// starts at the shared start + k x `slot_ms`. Without, only the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_ms: Option<u64>,
}

fn default_start_delay_ms() -> u64 {
    DEFAULT_START_DELAY_MS
}

/// Object indices `start..end` (end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRange {
    pub start: u32,
    pub end: u32,
}

/// Reads the fan-out fields of a raw request (`role`, `fanout`, `key_range`,
/// `start_unix_ms`, `finish_by_unix_ms`), naming every bad one.
pub(crate) fn typed_fields(map: &mut Map<String, Value>, problems: &mut Vec<FieldProblem>, request: &mut SweepRequest) {
    if let Some(v) = map.remove("role") {
        field(v, "role", "\"coordinator\" or \"child\"", problems, &mut request.role);
    }
    if let Some(v) = map.remove("fanout") {
        match v {
            Value::Object(mut f) => {
                for key in f.keys() {
                    if !["invocations", "start_delay_ms", "split", "slot_ms"].contains(&key.as_str()) {
                        problems.push(FieldProblem {
                            field: format!("fanout.{}", field_name(key)),
                            message: "unknown field; known fields are invocations, start_delay_ms, split, slot_ms".into(),
                        });
                    }
                }
                let mut fanout = FanoutRequest {
                    invocations: 1,
                    start_delay_ms: DEFAULT_START_DELAY_MS,
                    split: Split::Shard,
                    slot_ms: None,
                };
                match f.remove("invocations") {
                    None => problems.push(FieldProblem {
                        field: "fanout.invocations".into(),
                        message: "required: how many invocations to fan out to".into(),
                    }),
                    Some(v) => field(
                        v,
                        "fanout.invocations",
                        "a whole number",
                        problems,
                        &mut fanout.invocations,
                    ),
                }
                if let Some(v) = f.remove("start_delay_ms") {
                    field(
                        v,
                        "fanout.start_delay_ms",
                        "a whole number of milliseconds",
                        problems,
                        &mut fanout.start_delay_ms,
                    );
                }
                if let Some(v) = f.remove("slot_ms") {
                    field(
                        v,
                        "fanout.slot_ms",
                        "a whole number of milliseconds",
                        problems,
                        &mut fanout.slot_ms,
                    );
                }
                if let Some(v) = f.remove("split") {
                    field(v, "fanout.split", "\"shard\" or \"replicate\"", problems, &mut fanout.split);
                }
                request.fanout = Some(fanout);
            }
            other => problems.push(FieldProblem {
                field: "fanout".into(),
                message: format!(
                    "must be an object like {{\"invocations\": 4, \"start_delay_ms\": 2000, \"split\": \"shard\"}}, got {}",
                    kind_of(&other)
                ),
            }),
        }
    }
    if let Some(v) = map.remove("key_range") {
        let mut range: Option<KeyRange> = None;
        field(
            v,
            "key_range",
            "an object like {\"start\": 0, \"end\": 500}",
            problems,
            &mut range,
        );
        request.key_range = range;
    }
    if let Some(v) = map.remove("start_unix_ms") {
        field(
            v,
            "start_unix_ms",
            "milliseconds since the Unix epoch",
            problems,
            &mut request.start_unix_ms,
        );
    }
    if let Some(v) = map.remove("config_slot_ms") {
        field(
            v,
            "config_slot_ms",
            "a whole number of milliseconds",
            problems,
            &mut request.config_slot_ms,
        );
    }
    if let Some(v) = map.remove("finish_by_unix_ms") {
        field(
            v,
            "finish_by_unix_ms",
            "milliseconds since the Unix epoch",
            problems,
            &mut request.finish_by_unix_ms,
        );
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Range and consistency checks of the fan-out fields (called by
/// [`Plan::from_request`]).
pub(crate) fn check_request(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let mut bad = |field: &str, message: String| {
        problems.push(FieldProblem {
            field: field.to_string(),
            message,
        })
    };
    if let Some(f) = &request.fanout {
        if request.role == Role::Child {
            bad(
                "fanout",
                "a child (role \"child\") never fans out again: fan-out is one level deep".into(),
            );
        }
        if f.invocations == 0 || f.invocations > MAX_INVOCATIONS {
            bad(
                "fanout.invocations",
                format!("must be between 1 and {MAX_INVOCATIONS}, got {}", f.invocations),
            );
        } else if f.split == Split::Shard && f.invocations > request.object_count {
            bad(
                "fanout.invocations",
                format!(
                    "split \"shard\" gives every invocation at least one object: at most object_count ({}) invocations, or use split \"replicate\"",
                    request.object_count
                ),
            );
        }
        if f.start_delay_ms > MAX_START_DELAY_MS {
            bad(
                "fanout.start_delay_ms",
                format!("must be at most {MAX_START_DELAY_MS} ms, got {}", f.start_delay_ms),
            );
        }
        if let Some(slot) = f.slot_ms {
            let configurations =
                request.buckets.len() as u64 * request.workers.len() as u64 * u64::from(request.repetitions);
            if slot == 0 || slot.saturating_mul(configurations) > MAX_SLOTS_MS {
                bad(
                    "fanout.slot_ms",
                    format!(
                        "must be at least 1 ms, and {configurations} configurations x slot_ms at most {MAX_SLOTS_MS} ms (Lambda's 15 minutes), got {slot}"
                    ),
                );
            }
        }
        for (name, set) in [
            ("config_slot_ms", request.config_slot_ms.is_some()),
            ("key_range", request.key_range.is_some()),
            ("start_unix_ms", request.start_unix_ms.is_some()),
            ("finish_by_unix_ms", request.finish_by_unix_ms.is_some()),
        ] {
            if set {
                bad(
                    name,
                    "is set by the coordinator for its children; leave it out of a fan-out request".into(),
                );
            }
        }
    }
    if let Some(r) = request.key_range {
        if r.start >= r.end || r.end > request.object_count {
            bad(
                "key_range",
                format!(
                    "must satisfy start < end <= object_count ({}), got start {} end {}",
                    request.object_count, r.start, r.end
                ),
            );
        }
    }
    if let Some(slot) = request.config_slot_ms {
        if slot == 0 || slot > MAX_SLOTS_MS || request.start_unix_ms.is_none() {
            bad(
                "config_slot_ms",
                format!("must be 1 to {MAX_SLOTS_MS} ms and come with start_unix_ms, got {slot}"),
            );
        }
    }
    let now = now_unix_ms();
    if let Some(t) = request.start_unix_ms {
        if t > now + MAX_START_AHEAD_MS {
            bad(
                "start_unix_ms",
                format!(
                    "is {} ms in the future; at most {MAX_START_AHEAD_MS} ms is accepted",
                    t - now
                ),
            );
        }
    }
    if let (Some(start), Some(finish)) = (request.start_unix_ms, request.finish_by_unix_ms) {
        if finish <= start {
            bad(
                "finish_by_unix_ms",
                format!("must be after start_unix_ms ({start}), got {finish}"),
            );
        }
    }
}

/// The fan-out settings of the function, from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanoutSettings {
    /// Most invocations per fan-out ([`FANOUT_MAX_ENV`], default [`DEFAULT_FANOUT_MAX`]).
    pub max_invocations: u32,
    /// The function to invoke: [`FUNCTION_ENV`], else `AWS_LAMBDA_FUNCTION_NAME`.
    pub function_name: Option<String>,
    /// Tests only ([`TEST_BREAK_CHILD_ENV`]).
    pub break_child: Option<u32>,
}

impl Default for FanoutSettings {
    fn default() -> Self {
        FanoutSettings {
            max_invocations: DEFAULT_FANOUT_MAX,
            function_name: None,
            break_child: None,
        }
    }
}

impl FanoutSettings {
    /// Reads the settings through `get` (empty values already removed), adding a
    /// message per bad variable to `problems`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> Self {
        let mut settings = FanoutSettings {
            function_name: get(FUNCTION_ENV).or_else(|| get("AWS_LAMBDA_FUNCTION_NAME")),
            ..FanoutSettings::default()
        };
        if let Some(text) = get(FANOUT_MAX_ENV) {
            match text.parse::<u32>() {
                Ok(n) if (1..=MAX_INVOCATIONS).contains(&n) => settings.max_invocations = n,
                _ => problems.push(format!(
                    "{FANOUT_MAX_ENV}={text:?}: must be a whole number from 1 to {MAX_INVOCATIONS} (template parameter FanoutMax)"
                )),
            }
        }
        if let Some(text) = get(TEST_BREAK_CHILD_ENV) {
            match text.parse::<u32>() {
                Ok(n) => settings.break_child = Some(n),
                Err(_) => problems.push(format!("{TEST_BREAK_CHILD_ENV}={text:?}: must be a child index")),
            }
        }
        settings
    }

    /// The one limit only the function knows: `fanout.invocations` against `FanoutMax`.
    pub fn check(&self, plan: &Plan) -> Option<FieldProblem> {
        let f = plan.fanout()?;
        (f.invocations > self.max_invocations).then(|| FieldProblem {
            field: "fanout.invocations".into(),
            message: format!(
                "{} invocations asked for; this function allows at most {} ({FANOUT_MAX_ENV}, template parameter FanoutMax): ask for fewer, or redeploy with a larger FanoutMax (and enough reserved or account concurrency)",
                f.invocations, self.max_invocations
            ),
        })
    }
}

/// What a sweep run as a child does beyond the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildOptions {
    /// Wait until then before the timed phase of the first configuration (with
    /// `slot`: of configuration 0 in plan order).
    pub start_at: Option<SystemTime>,
    /// Configuration k (plan order, skipped ones counted) starts at `start_at + k x slot`.
    pub slot: Option<Duration>,
}

impl ChildOptions {
    /// The options of a child plan (`None` for a coordinator or plain sweep).
    pub fn of(plan: &Plan) -> Option<ChildOptions> {
        (plan.role() == Role::Child).then(|| ChildOptions {
            start_at: plan
                .start_unix_ms()
                .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms))),
            slot: plan.request().config_slot_ms.map(Duration::from_millis),
        })
    }

    /// The options for configuration `index` (plan order): with slots, its own start
    /// time; without, the shared start for the first configuration run, none after.
    pub fn for_configuration(self, index: usize, first_run: bool) -> ChildOptions {
        let start_at = match (self.start_at, self.slot) {
            (Some(at), Some(slot)) => Some(at + slot * index as u32),
            (at, None) if first_run => at,
            _ => None,
        };
        ChildOptions { start_at, ..self }
    }
}

/// Added by a child to each row: when its timed phase ran and its latency histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildMeasure {
    /// Start of the timed phase, ms since the Unix epoch (microsecond resolution).
    pub started_unix_ms: f64,
    /// End of the timed phase (last body byte of the last request).
    pub finished_unix_ms: f64,
    /// Serialized histograms; the coordinator drops them from the rows it keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<SerializedHistograms>,
}

/// Microsecond histograms as hdrhistogram V2 + deflate, base64 (standard alphabet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SerializedHistograms {
    pub ttfb_us: String,
    pub ttlb_us: String,
    pub pool_wait_us: String,
}

/// A histogram that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("histogram {name}: {reason}")]
pub struct HistogramError {
    pub name: &'static str,
    pub reason: String,
}

/// Serializes a histogram (V2 + deflate, base64).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        // Only fails on I/O into a Vec (cannot happen) or a histogram too large to encode.
        Err(e) => {
            tracing::error!(error = ?e, "serializing a histogram");
            String::new()
        }
    }
}

/// Reads a histogram written by [`encode_histogram`].
pub fn decode_histogram(name: &'static str, text: &str) -> Result<Histogram<u64>, HistogramError> {
    let err = |reason: String| HistogramError { name, reason };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| err(format!("not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| err(format!("not an hdrhistogram V2 encoding: {e:?}")))
}

fn unix_ms_f64(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| round3(d.as_secs_f64() * 1000.0))
}

impl ChildMeasure {
    /// The measure of a timed phase that began at `started` and took `wall`, with the
    /// ttfb, ttlb and pool-wait histograms (microseconds).
    pub fn new(started: SystemTime, wall: Duration, [ttfb, ttlb, pool_wait]: [&Histogram<u64>; 3]) -> Self {
        ChildMeasure {
            started_unix_ms: unix_ms_f64(started),
            finished_unix_ms: unix_ms_f64(started + wall),
            histograms: Some(SerializedHistograms {
                ttfb_us: encode_histogram(ttfb),
                ttlb_us: encode_histogram(ttlb),
                pool_wait_us: encode_histogram(pool_wait),
            }),
        }
    }
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
    pub first_start_unix_ms: f64,
    /// Latest child finish.
    pub last_finish_unix_ms: f64,
    /// The common window, first start to last finish: the merged row's `wall_ms`.
    pub window_ms: f64,
    /// Latest start minus earliest start: clock skew, cold starts and drift.
    pub start_spread_ms: f64,
    /// Latest finish minus earliest finish.
    pub finish_spread_ms: f64,
    /// Children that started cold (first invocation of their execution environment).
    pub cold_children: Vec<u32>,
    /// Successful children that did not run this configuration (deadline).
    pub missing_children: Vec<u32>,
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
    /// `ok` or `failed`.
    pub status: String,
    /// The Invoke call's round trip, ms.
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
    /// `function_error` (the child returned an error), `throttled` (429),
    /// `timeout`, `invoke_failed` (the Invoke call itself failed) or `bad_response`.
    pub kind: String,
    /// The child's `errorType`, when it returned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    pub message: String,
}

/// What came back from one child.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    pub index: u32,
    pub key_range: KeyRange,
    pub seed: u64,
    pub invoke_ms: f64,
    pub result: Result<SweepResult, ChildError>,
}

/// The child events of a fan-out plan: index, shard, and the request.
pub fn child_requests(plan: &Plan, start_unix_ms: u64, finish_by_unix_ms: Option<u64>) -> Vec<(u32, SweepRequest)> {
    let Some(f) = plan.fanout() else {
        return Vec::new();
    };
    let n = u64::from(f.invocations);
    let count = u64::from(plan.object_count());
    (0..f.invocations)
        .map(|k| {
            let mut request = plan.request().clone();
            request.role = Role::Child;
            request.fanout = None;
            request.start_unix_ms = Some(start_unix_ms);
            request.config_slot_ms = f.slot_ms;
            request.finish_by_unix_ms = finish_by_unix_ms;
            match f.split {
                Split::Shard => {
                    let k64 = u64::from(k);
                    request.key_range = Some(KeyRange {
                        start: (k64 * count / n) as u32,
                        end: ((k64 + 1) * count / n) as u32,
                    });
                }
                Split::Replicate => {
                    request.key_range = None;
                    // Each child its own order, so they do not all hit one object at once.
                    request.seed = request.seed.wrapping_add(u64::from(k));
                }
            }
            (k, request)
        })
        .collect()
}

/// The Lambda client the coordinator invokes children with: built once per execution
/// environment, on its own [`Transport`] (the S3 client's code, its own pool sized for
/// `FanoutMax` connections, so invocations never queue behind each other), retries off.
#[derive(Clone, Debug)]
pub struct Invoker {
    client: aws_sdk_lambda::Client,
}

impl Invoker {
    /// Builds the client from the standard chain (region, credentials, and
    /// `AWS_ENDPOINT_URL_LAMBDA` for an emulator).
    pub async fn new(settings: &FanoutSettings) -> Self {
        let transport = Transport::new(TransportSettings {
            pool_connections: settings.max_invocations as usize + 1,
            connect_timeout: Duration::from_secs(10),
        });
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(transport.http_client())
            .load()
            .await;
        let config = aws_sdk_lambda::config::Builder::from(&shared)
            // A retried Invoke could run a child twice: a failure is reported instead.
            .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
            .build();
        Invoker {
            client: aws_sdk_lambda::Client::from_conf(config),
        }
    }

    /// Invokes `function` once, synchronously, with `event`, within `limit`.
    pub async fn invoke(&self, function: &str, event: &Value, limit: Duration) -> Result<SweepResult, ChildError> {
        let payload = serde_json::to_vec(event).map_err(|e| ChildError {
            kind: "invoke_failed".into(),
            error_type: None,
            message: format!("serializing the child event: {e}"),
        })?;
        let call = self
            .client
            .invoke()
            .function_name(function)
            .invocation_type(InvocationType::RequestResponse)
            .payload(Blob::new(payload))
            .send();
        let output = match tokio::time::timeout(limit, call).await {
            Err(_) => {
                return Err(ChildError {
                    kind: "timeout".into(),
                    error_type: None,
                    message: format!("no answer within {} ms", limit.as_millis()),
                })
            }
            Ok(Err(err)) => return Err(classify_invoke_error(&err)),
            Ok(Ok(output)) => output,
        };
        let body = output.payload().map(|b| b.as_ref()).unwrap_or_default();
        if let Some(function_error) = output.function_error() {
            return Err(function_error_of(function_error, body));
        }
        serde_json::from_slice::<SweepResult>(body).map_err(|e| ChildError {
            kind: "bad_response".into(),
            error_type: None,
            message: format!("the child's answer is not a sweep result: {e}"),
        })
    }
}

/// The child's `{errorType, errorMessage}` (the payload of a function error).
fn function_error_of(header: &str, body: &[u8]) -> ChildError {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error_type = v.get("errorType").and_then(Value::as_str).map(str::to_string);
    let message = v
        .get("errorMessage")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned());
    let timed_out = error_type
        .as_deref()
        .is_some_and(|t| t.contains("Timedout") || t.contains("Timeout"));
    ChildError {
        kind: if timed_out { "timeout" } else { "function_error" }.into(),
        error_type: error_type.or_else(|| Some(header.to_string())),
        message,
    }
}

fn classify_invoke_error(
    err: &SdkError<aws_sdk_lambda::operation::invoke::InvokeError, aws_smithy_runtime_api::http::Response>,
) -> ChildError {
    // `cargo lambda watch` answers a function error with a 500 and the child's
    // `{errorType, errorMessage}` (Lambda itself: 200 and `X-Amz-Function-Error`).
    if let SdkError::ServiceError(e) = err {
        if let Some(body) = e.raw().body().bytes() {
            if serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("errorType").is_some()) {
                return function_error_of("Unhandled", body);
            }
        }
    }
    let mut message = DisplayErrorContext(err).to_string();
    if message.len() > 500 {
        let mut end = 500;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("...");
    }
    let (kind, error_type) = match err {
        SdkError::TimeoutError(_) => ("timeout", None),
        SdkError::DispatchFailure(f) if f.is_timeout() => ("timeout", None),
        SdkError::ServiceError(e) => {
            let code = aws_sdk_lambda::error::ProvideErrorMetadata::code(e.err()).map(str::to_string);
            if e.err().is_too_many_requests_exception() || e.raw().status().as_u16() == 429 {
                ("throttled", code)
            } else {
                ("invoke_failed", code)
            }
        }
        SdkError::ResponseError(e) if e.raw().status().as_u16() == 429 => ("throttled", None),
        _ => ("invoke_failed", None),
    };
    ChildError {
        kind: kind.into(),
        error_type,
        message,
    }
}

/// Why a fan-out could not start at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FanoutError {
    #[error(
        "fan-out needs the function's own name: AWS_LAMBDA_FUNCTION_NAME (set by Lambda) or {FUNCTION_ENV} is not set"
    )]
    NoFunctionName,
    #[error("fan-out is not available in this process (no Lambda client was built)")]
    NoInvoker,
}

/// Invokes every child of `plan` at once and waits for all of them. `deadline` is the
/// coordinator's own (the children are told to finish `safety_margin` before it).
pub async fn invoke_children(
    invoker: &Invoker,
    settings: &FanoutSettings,
    plan: &Plan,
    deadline: Option<Instant>,
    safety_margin: Duration,
) -> Result<(u64, Vec<ChildOutcome>), FanoutError> {
    let function = settings.function_name.clone().ok_or(FanoutError::NoFunctionName)?;
    let f = plan.fanout().copied().ok_or(FanoutError::NoInvoker)?;
    let now = Instant::now();
    let now_ms = now_unix_ms();
    let start_unix_ms = now_ms + f.start_delay_ms;
    let (limit, finish_by) = match deadline {
        Some(d) => {
            let left = d.saturating_duration_since(now);
            // Children stop `safety_margin` before the coordinator's deadline; the
            // coordinator waits until half the margin is left, then merges what it has.
            let finish_by = now_ms + left.saturating_sub(safety_margin).as_millis() as u64;
            (
                left.saturating_sub(safety_margin / 2),
                Some(finish_by.max(start_unix_ms + 1)),
            )
        }
        None => (NO_DEADLINE_INVOKE_LIMIT, None),
    };
    let children = child_requests(plan, start_unix_ms, finish_by);
    let calls = children.into_iter().map(|(index, request)| {
        let function = function.clone();
        let key_range = request.key_range.unwrap_or(KeyRange {
            start: 0,
            end: plan.object_count(),
        });
        let seed = request.seed;
        let mut event = serde_json::to_value(&request).unwrap_or(Value::Null);
        if settings.break_child == Some(index) {
            if let Value::Object(m) = &mut event {
                m.insert("broken_by_test_hook".into(), Value::Bool(true));
            }
        }
        async move {
            let started = Instant::now();
            let result = invoker.invoke(&function, &event, limit).await;
            let invoke_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
            match &result {
                Ok(_) => tracing::info!(child = index, invoke_ms, "child finished"),
                Err(e) => tracing::warn!(child = index, kind = %e.kind, error = %e.message, "child failed"),
            }
            ChildOutcome {
                index,
                key_range,
                seed,
                invoke_ms,
                result,
            }
        }
    });
    let outcomes = futures_util::future::join_all(calls).await;
    Ok((start_unix_ms, outcomes))
}

/// Merges the children's rows per configuration (in `plan` order) and builds the
/// report. Failed children are named and left out of the merge.
pub fn merge(
    plan: &Plan,
    function_name: &str,
    start_unix_ms: u64,
    outcomes: Vec<ChildOutcome>,
) -> (Vec<ConfigResult>, FanoutReport) {
    let f = plan.fanout().copied().unwrap_or(FanoutRequest {
        invocations: outcomes.len() as u32,
        start_delay_ms: 0,
        split: Split::Shard,
        slot_ms: None,
    });
    let ok: Vec<(&ChildOutcome, &SweepResult)> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok().map(|r| (o, r)))
        .collect();
    let cold = |r: &SweepResult| r.environment.lambda.as_ref().is_some_and(|l| l.cold_start);
    let mut merged = Vec::new();
    let mut configurations = Vec::new();
    for bucket in plan.buckets() {
        for &workers in plan.workers() {
            for repetition in 1..=plan.repetitions() {
                let mut rows = Vec::new();
                let mut missing = Vec::new();
                for (o, r) in &ok {
                    match r
                        .results
                        .iter()
                        .find(|x| &x.bucket == bucket && x.workers == workers && x.repetition == repetition)
                    {
                        Some(row) => rows.push((o.index, cold(r), row)),
                        None => missing.push(o.index),
                    }
                }
                if rows.is_empty() {
                    continue;
                }
                let (row, config) = merge_rows(&rows);
                merged.push(row);
                configurations.push(MergedConfig {
                    missing_children: missing,
                    ..config
                });
            }
        }
    }
    let children = outcomes
        .into_iter()
        .map(|o| {
            let mut report = ChildReport {
                index: o.index,
                key_range: o.key_range,
                seed: o.seed,
                status: if o.result.is_ok() { "ok" } else { "failed" }.into(),
                invoke_ms: o.invoke_ms,
                cold_start: None,
                request_id: None,
                error: None,
                results: Vec::new(),
                skipped: Vec::new(),
            };
            match o.result {
                Ok(r) => {
                    let lambda = r.environment.lambda.as_ref();
                    report.cold_start = lambda.map(|l| l.cold_start);
                    report.request_id = lambda.and_then(|l| l.request_id.clone());
                    report.skipped = r.skipped;
                    report.results = r
                        .results
                        .into_iter()
                        .map(|mut row| {
                            if let Some(c) = &mut row.child {
                                c.histograms = None;
                            }
                            row
                        })
                        .collect();
                }
                Err(e) => report.error = Some(e),
            }
            report
        })
        .collect::<Vec<_>>();
    let children_ok = children.iter().filter(|c| c.error.is_none()).count() as u32;
    let report = FanoutReport {
        function_name: function_name.to_string(),
        invocations: f.invocations,
        split: f.split,
        start_delay_ms: f.start_delay_ms,
        start_unix_ms,
        children_ok,
        children_failed: children.len() as u32 - children_ok,
        configurations,
        children,
    };
    (merged, report)
}

/// One merged row from the children's rows of one configuration: `(index, cold, row)`.
fn merge_rows(rows: &[(u32, bool, &ConfigResult)]) -> (ConfigResult, MergedConfig) {
    let first = rows[0].2;
    let new_hist = || Histogram::<u64>::new(3).expect("3 significant figures is valid");
    let (mut ttfb, mut ttlb, mut pool_wait) = (new_hist(), new_hist(), new_hist());
    let mut errors = ErrorCounts::default();
    let mut samples: Vec<String> = Vec::new();
    let (mut requests, mut ok, mut bytes, mut retries, mut conns, mut sessions) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut cpu_ms, mut connect_ms) = (0.0f64, 0.0f64);
    let mut starts = Vec::new();
    let mut finishes = Vec::new();
    for (index, _, r) in rows {
        requests += r.requests;
        ok += r.ok;
        bytes += r.bytes;
        retries += r.retries;
        conns += r.connections_opened;
        sessions += r.session_requests;
        cpu_ms += r.cpu_ms;
        connect_ms += r.connect_ms_total;
        add_errors(&mut errors, &r.errors);
        for s in &r.error_samples {
            if samples.len() < 3 && !samples.contains(s) {
                samples.push(format!("child {index}: {s}"));
            }
        }
        match &r.child {
            Some(c) => {
                starts.push(c.started_unix_ms);
                finishes.push(c.finished_unix_ms);
                match &c.histograms {
                    Some(h) => {
                        for (name, text, into) in [
                            ("ttfb_us", &h.ttfb_us, &mut ttfb),
                            ("ttlb_us", &h.ttlb_us, &mut ttlb),
                            ("pool_wait_us", &h.pool_wait_us, &mut pool_wait),
                        ] {
                            match decode_histogram(name, text) {
                                Ok(h) => {
                                    // An auto-resizing histogram takes any other.
                                    let _ = into.add(&h);
                                }
                                Err(e) => push_sample(&mut samples, format!("child {index}: {e}")),
                            }
                        }
                    }
                    None => push_sample(&mut samples, format!("child {index}: no latency histograms")),
                }
            }
            None => push_sample(&mut samples, format!("child {index}: no timing window")),
        }
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (first_start, last_finish) = if starts.is_empty() {
        (0.0, 0.0)
    } else {
        (min(&starts), max(&finishes))
    };
    let window_ms = if starts.is_empty() {
        rows.iter().map(|r| r.2.wall_ms).fold(0.0, f64::max)
    } else {
        round3(last_finish - first_start)
    };
    let window_s = (window_ms / 1000.0).max(1e-9);
    let (objects_per_s, mib_per_s) = crate::report::rates(ok, bytes, window_s);
    let row = ConfigResult {
        bucket: first.bucket.clone(),
        workers: first.workers,
        repetition: first.repetition,
        pool_connections: first.pool_connections,
        requests,
        ok,
        errors,
        retries,
        bytes,
        child: None,
        wall_ms: window_ms,
        objects_per_s,
        mib_per_s,
        ttfb_ms: Percentiles::from_histogram_us(&ttfb),
        ttlb_ms: Percentiles::from_histogram_us(&ttlb),
        pool_wait_ms: Percentiles::from_histogram_us(&pool_wait),
        cpu_ms: round3(cpu_ms),
        cpu_ms_per_get: crate::report::cpu_ms_per_get(cpu_ms, requests),
        connections_opened: conns,
        connect_ms_total: round3(connect_ms),
        session_requests: sessions,
        error_samples: samples,
        breakdown: None,
        client: None,
        diagnosis: None,
    };
    let spread = |v: &[f64]| if v.is_empty() { 0.0 } else { round3(max(v) - min(v)) };
    let config = MergedConfig {
        bucket: first.bucket.clone(),
        workers: first.workers,
        repetition: first.repetition,
        children: rows.len() as u32,
        workers_total: first.workers * rows.len() as u32,
        first_start_unix_ms: round3(first_start),
        last_finish_unix_ms: round3(last_finish),
        window_ms,
        start_spread_ms: spread(&starts),
        finish_spread_ms: spread(&finishes),
        cold_children: rows.iter().filter(|r| r.1).map(|r| r.0).collect(),
        missing_children: Vec::new(),
    };
    (row, config)
}

fn push_sample(samples: &mut Vec<String>, s: String) {
    if samples.len() < 3 {
        samples.push(s);
    }
}

fn add_errors(into: &mut ErrorCounts, e: &ErrorCounts) {
    into.total += e.total;
    into.not_found += e.not_found;
    into.access_denied += e.access_denied;
    into.throttled += e.throttled;
    into.server_error += e.server_error;
    into.timeout += e.timeout;
    into.connection += e.connection;
    into.other += e.other;
}

/// The coordinator's environment block (it reads no objects itself).
pub fn environment(client: &crate::client::SweepClient, lambda: LambdaEnvironment) -> Environment {
    Environment {
        runner: "lambda".into(),
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        vcpus: crate::usage::vcpus() as u32,
        runtime_worker_threads: tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers() as u32),
        memory_total_bytes: crate::usage::memory_total_bytes(),
        region: client.region().to_string(),
        endpoint: client.endpoint().map(str::to_string),
        lambda: Some(lambda),
    }
}

/// The coordinator's result document (`s3sweep.result/v1`): its environment and
/// request, the merged rows and their summaries, and the fan-out block.
/// `started_unix_ms` and `total_wall_ms` are the caller's to fill in.
pub fn merged_result(
    environment: Environment,
    plan: &Plan,
    function_name: &str,
    start_unix_ms: u64,
    outcomes: Vec<ChildOutcome>,
) -> SweepResult {
    let (rows, report) = merge(plan, function_name, start_unix_ms, outcomes);
    let mut base = SweepResult {
        schema: SCHEMA.to_string(),
        tool: ToolInfo::current(),
        environment,
        request: plan.request().clone(),
        started_unix_ms: 0,
        total_wall_ms: 0.0,
        summary: summarize(&rows),
        results: Vec::new(),
        truncated: false,
        skipped: Vec::new(),
        fanout: None,
        analysis: None,
    };
    base.skipped = report
        .configurations
        .iter()
        .filter(|c| !c.missing_children.is_empty())
        .map(|c| SkippedConfig {
            bucket: c.bucket.clone(),
            workers: c.workers,
            repetition: c.repetition,
            reason: format!("children {:?} did not run it (deadline)", c.missing_children),
        })
        .collect();
    base.truncated = !base.skipped.is_empty() || report.children.iter().any(|c| !c.skipped.is_empty());
    base.results = rows;
    base.fanout = Some(report);
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    fn child_row(
        bucket: &str,
        workers: u32,
        start_ms: f64,
        wall_ms: f64,
        ttfb_us: &[u64],
        errors: u64,
    ) -> ConfigResult {
        let mut row = crate::report::tests_support::row(bucket, workers, 1, wall_ms, errors);
        let started = UNIX_EPOCH + Duration::from_secs_f64(start_ms / 1000.0);
        let h = hist(ttfb_us);
        row.requests = ttfb_us.len() as u64 + errors;
        row.ok = ttfb_us.len() as u64;
        row.bytes = row.ok * 46_080;
        row.child = Some(ChildMeasure::new(
            started,
            Duration::from_secs_f64(wall_ms / 1000.0),
            [&h, &h, &hist(&[1])],
        ));
        row
    }

    /// A child's result: the shared fixture with a Lambda environment.
    fn child_result(rows: Vec<ConfigResult>, cold: bool) -> SweepResult {
        let mut result = crate::report::tests_support::result(rows);
        result.environment.runner = "lambda".into();
        result.environment.lambda = Some(LambdaEnvironment {
            function_name: Some("f".into()),
            function_version: None,
            memory_size_mb: None,
            cold_start: cold,
            architecture: None,
            region: None,
            request_id: Some("req".into()),
            remaining_ms_at_start: None,
            safety_margin_ms: 0,
        });
        result
    }

    fn plan() -> Plan {
        Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [4], "object_count": 30,
            "fanout": {"invocations": 3, "start_delay_ms": 500}
        }))
        .unwrap()
    }

    fn outcome(index: u32, result: Result<SweepResult, ChildError>) -> ChildOutcome {
        ChildOutcome {
            index,
            key_range: KeyRange {
                start: index * 10,
                end: index * 10 + 10,
            },
            seed: 1,
            invoke_ms: 10.0,
            result,
        }
    }

    #[test]
    fn histograms_round_trip() {
        let h = hist(&[100, 250, 250, 4_000, 1_000_000]);
        let back = decode_histogram("ttfb_us", &encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        let err = decode_histogram("ttfb_us", "not base64!").unwrap_err();
        assert!(err.to_string().contains("ttfb_us"), "{err}");
        let err = decode_histogram("ttlb_us", "AAAA").unwrap_err();
        assert!(err.to_string().contains("V2"), "{err}");
    }

    #[test]
    fn merge_sums_counts_and_merges_histograms_not_percentiles() {
        // Child 0: ten fast requests; child 1: ten slow ones; child 2 failed.
        let fast: Vec<u64> = (1..=10).map(|i| i * 1_000).collect();
        let slow: Vec<u64> = (1..=10).map(|i| 100_000 + i * 1_000).collect();
        let c0 = child_result(vec![child_row("b-1", 4, 1_000_000.0, 100.0, &fast, 0)], false);
        let c1 = child_result(vec![child_row("b-1", 4, 1_000_020.0, 200.0, &slow, 2)], true);
        let failed = ChildError {
            kind: "function_error".into(),
            error_type: Some("InvalidEvent".into()),
            message: "invalid request".into(),
        };
        let outcomes = vec![outcome(0, Ok(c0)), outcome(1, Ok(c1)), outcome(2, Err(failed))];
        let (rows, report) = merge(&plan(), "s3sweep-lambda", 1_000_000, outcomes);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.requests, 22);
        assert_eq!(r.ok, 20);
        assert_eq!(r.errors.total, 2);
        assert_eq!(r.errors.not_found, 2);
        assert_eq!(r.bytes, 20 * 46_080);
        // Window: first start (1,000,000) to last finish (1,000,020 + 200).
        assert_eq!(r.wall_ms, 220.0);
        assert_eq!(r.objects_per_s, round3(20.0 / 0.22));
        // The merged median is that of all 20 samples (between the two groups), not
        // the mean of the children's medians (~55.5 ms).
        let all: Vec<u64> = fast.iter().chain(&slow).copied().collect();
        let expected = Percentiles::from_histogram_us(&hist(&all));
        assert_eq!(r.ttfb_ms, expected);
        assert_eq!(r.ttfb_ms.count, 20);
        assert!((r.ttfb_ms.p50 - 10.0).abs() < 0.05, "{:?}", r.ttfb_ms);
        assert!((r.ttfb_ms.max - 110.0).abs() < 0.1, "{:?}", r.ttfb_ms);
        assert!(r.child.is_none());
        let c = &report.configurations[0];
        assert_eq!(c.children, 2);
        assert_eq!(c.workers_total, 8);
        assert_eq!(c.start_spread_ms, 20.0);
        assert_eq!(c.finish_spread_ms, 120.0);
        assert_eq!(c.cold_children, vec![1]);
        assert_eq!(report.children_ok, 2);
        assert_eq!(report.children_failed, 1);
        let failed = &report.children[2];
        assert_eq!(failed.status, "failed");
        assert_eq!(
            failed.error.as_ref().unwrap().error_type.as_deref(),
            Some("InvalidEvent")
        );
        // Kept child rows keep their window but not their histograms.
        let kept = report.children[0].results[0].child.as_ref().unwrap();
        assert!(kept.histograms.is_none());
        assert_eq!(kept.started_unix_ms, 1_000_000.0);
    }

    #[test]
    fn a_child_missing_a_configuration_is_named_and_the_result_truncated() {
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [4, 8], "object_count": 30,
            "fanout": {"invocations": 2}
        }))
        .unwrap();
        let both = child_result(
            vec![
                child_row("b-1", 4, 0.0, 10.0, &[1000], 0),
                child_row("b-1", 8, 20.0, 10.0, &[1000], 0),
            ],
            false,
        );
        let one = child_result(vec![child_row("b-1", 4, 0.0, 10.0, &[1000], 0)], false);
        let env = child_result(vec![], false).environment;
        let result = merged_result(env, &p, "f", 0, vec![outcome(0, Ok(both)), outcome(1, Ok(one))]);
        assert_eq!(result.results.len(), 2);
        assert_eq!(result.results[1].ok, 1);
        assert!(result.truncated);
        assert_eq!(result.skipped.len(), 1);
        assert!(result.skipped[0].reason.contains("[1]"), "{:?}", result.skipped);
        let fanout = result.fanout.unwrap();
        assert_eq!(fanout.configurations[1].missing_children, vec![1]);
        assert_eq!(result.summary.len(), 1);
    }

    #[test]
    fn shards_cover_every_key_once_and_replicas_vary_the_seed() {
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 10, "fanout": {"invocations": 3}
        }))
        .unwrap();
        let children = child_requests(&p, 123, Some(456));
        let ranges: Vec<(u32, u32)> = children
            .iter()
            .map(|(_, r)| r.key_range.map(|k| (k.start, k.end)).unwrap())
            .collect();
        assert_eq!(ranges, vec![(0, 3), (3, 6), (6, 10)]);
        for (_, r) in &children {
            assert_eq!(r.role, Role::Child);
            assert!(r.fanout.is_none());
            assert_eq!(r.start_unix_ms, Some(123));
            // Every child event is itself a valid child plan.
            let plan = Plan::from_value(serde_json::to_value(r).unwrap()).unwrap();
            assert_eq!(plan.role(), Role::Child);
        }
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 10, "fanout": {"invocations": 2, "split": "replicate"}
        }))
        .unwrap();
        let children = child_requests(&p, 123, None);
        assert!(children.iter().all(|(_, r)| r.key_range.is_none()));
        assert_ne!(children[0].1.seed, children[1].1.seed);
    }

    #[test]
    fn fanout_fields_are_validated_with_every_bad_one_named() {
        let err = Plan::from_value(json!({
            "buckets": ["b-1"],
            "object_count": 2,
            "role": "child",
            "fanout": {"invocations": 3, "start_delay_ms": 999999, "colour": 1},
            "key_range": {"start": 5, "end": 1},
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "fanout.colour",
            "fanout",
            "fanout.invocations",
            "fanout.start_delay_ms",
            "key_range",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        assert!(err.to_string().contains("never fans out again"), "{err}");
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "role": "boss", "fanout": {"split": "halves"}, "start_unix_ms": "soon"
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in ["role", "fanout.invocations", "fanout.split", "start_unix_ms"] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        let err = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 0}})).unwrap_err();
        assert_eq!(err.fields(), vec!["fanout.invocations"]);
        let err = Plan::from_value(json!({"buckets": ["b-1"], "fanout": 3})).unwrap_err();
        assert_eq!(err.fields(), vec!["fanout"]);
        let far = now_unix_ms() + MAX_START_AHEAD_MS + 60_000;
        let err = Plan::from_value(json!({"buckets": ["b-1"], "role": "child", "start_unix_ms": far})).unwrap_err();
        assert_eq!(err.fields(), vec!["start_unix_ms"]);
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "fanout": {"invocations": 2}, "key_range": {"start": 0, "end": 5}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["key_range"]);
        // Defaults, and a child with its shard.
        let p = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 2}})).unwrap();
        assert_eq!(p.fanout().unwrap().start_delay_ms, DEFAULT_START_DELAY_MS);
        assert_eq!(p.fanout().unwrap().split, Split::Shard);
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 100, "role": "child", "key_range": {"start": 10, "end": 20}
        }))
        .unwrap();
        assert_eq!(p.key_range(), 10..20);
        assert_eq!(p.total_requests(), 9 * 10);
        // A plain request echoes none of the fan-out fields.
        let plain = Plan::from_value(json!({"buckets": ["b-1"]})).unwrap();
        let echoed = serde_json::to_value(plain.request()).unwrap();
        for f in [
            "role",
            "fanout",
            "key_range",
            "start_unix_ms",
            "finish_by_unix_ms",
            "config_slot_ms",
        ] {
            assert!(echoed.get(f).is_none(), "{f} echoed in {echoed}");
        }
    }

    #[test]
    fn slots_align_every_configuration() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000);
        let first_only = ChildOptions {
            start_at: Some(start),
            slot: None,
        };
        assert_eq!(first_only.for_configuration(0, true).start_at, Some(start));
        assert_eq!(
            first_only.for_configuration(3, true).start_at,
            Some(start),
            "first run after skips"
        );
        assert_eq!(first_only.for_configuration(1, false).start_at, None);
        let slotted = ChildOptions {
            start_at: Some(start),
            slot: Some(Duration::from_millis(250)),
        };
        assert_eq!(slotted.for_configuration(0, true).start_at, Some(start));
        assert_eq!(
            slotted.for_configuration(4, false).start_at,
            Some(start + Duration::from_secs(1))
        );
        // Validation: the schedule fits in 15 minutes; a child slot needs a start.
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [1, 2, 4], "fanout": {"invocations": 2, "slot_ms": 300_001}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["fanout.slot_ms"]);
        let err = Plan::from_value(json!({"buckets": ["b-1"], "role": "child", "config_slot_ms": 100})).unwrap_err();
        assert_eq!(err.fields(), vec!["config_slot_ms"]);
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [1, 2], "fanout": {"invocations": 2, "slot_ms": 5000}
        }))
        .unwrap();
        let children = child_requests(&p, now_unix_ms() + 1000, None);
        assert_eq!(children[1].1.config_slot_ms, Some(5000));
        let child = Plan::from_value(serde_json::to_value(&children[1].1).unwrap()).unwrap();
        assert_eq!(ChildOptions::of(&child).unwrap().slot, Some(Duration::from_secs(5)));
    }

    #[test]
    fn settings_cap_the_invocations() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let mut problems = Vec::new();
        let s = FanoutSettings::from_lookup(
            env(&[(FANOUT_MAX_ENV, "2"), ("AWS_LAMBDA_FUNCTION_NAME", "s3sweep-fn")]),
            &mut problems,
        );
        assert!(problems.is_empty());
        assert_eq!(s.function_name.as_deref(), Some("s3sweep-fn"));
        let p = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 3}})).unwrap();
        let problem = s.check(&p).unwrap();
        assert_eq!(problem.field, "fanout.invocations");
        assert!(problem.message.contains("FanoutMax"), "{}", problem.message);
        let s = FanoutSettings::from_lookup(
            env(&[
                (FANOUT_MAX_ENV, "0"),
                (TEST_BREAK_CHILD_ENV, "x"),
                (FUNCTION_ENV, "other"),
            ]),
            &mut problems,
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains(FANOUT_MAX_ENV));
        assert_eq!(s.function_name.as_deref(), Some("other"));
    }

    #[test]
    fn invoke_errors_are_classified() {
        use aws_sdk_lambda::operation::invoke::InvokeError;
        use aws_sdk_lambda::types::error::TooManyRequestsException;
        use aws_smithy_runtime_api::http::{Response, StatusCode};
        use aws_smithy_types::body::SdkBody;
        let response = |status: u16, body: &str| {
            Response::new(StatusCode::try_from(status).unwrap(), SdkBody::from(body.to_string()))
        };
        let throttled = SdkError::service_error(
            InvokeError::TooManyRequestsException(TooManyRequestsException::builder().message("Rate exceeded").build()),
            response(429, r#"{"message": "Rate exceeded"}"#),
        );
        assert_eq!(classify_invoke_error(&throttled).kind, "throttled");
        let generic = InvokeError::generic(aws_smithy_types::error::ErrorMetadata::builder().code("X").build());
        assert_eq!(
            classify_invoke_error(&SdkError::service_error(generic, response(429, "{}"))).kind,
            "throttled"
        );
        let timeout: SdkError<InvokeError, Response> = SdkError::timeout_error("operation timed out");
        assert_eq!(classify_invoke_error(&timeout).kind, "timeout");
        // The emulator's function error: a 500 whose body is the child's error.
        let generic = InvokeError::generic(aws_smithy_types::error::ErrorMetadata::builder().build());
        let emulated = SdkError::service_error(
            generic,
            response(
                500,
                r#"{"errorType": "ObjectNotFound", "errorMessage": "object missing"}"#,
            ),
        );
        let e = classify_invoke_error(&emulated);
        assert_eq!(e.kind, "function_error");
        assert_eq!(e.error_type.as_deref(), Some("ObjectNotFound"));
        let generic = InvokeError::generic(
            aws_smithy_types::error::ErrorMetadata::builder()
                .code("ResourceNotFoundException")
                .build(),
        );
        let missing = SdkError::service_error(generic, response(404, &"x".repeat(5000)));
        let e = classify_invoke_error(&missing);
        assert_eq!(e.kind, "invoke_failed");
        assert_eq!(e.error_type.as_deref(), Some("ResourceNotFoundException"));
        assert!(e.message.len() <= 503, "{}", e.message.len());
    }

    #[test]
    fn function_errors_are_named() {
        let e = function_error_of(
            "Unhandled",
            br#"{"errorType": "InvalidEvent", "errorMessage": "invalid request (1 problem)"}"#,
        );
        assert_eq!(e.kind, "function_error");
        assert_eq!(e.error_type.as_deref(), Some("InvalidEvent"));
        let e = function_error_of(
            "Unhandled",
            br#"{"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out"}"#,
        );
        assert_eq!(e.kind, "timeout");
        let e = function_error_of("Unhandled", b"garbage");
        assert_eq!(e.error_type.as_deref(), Some("Unhandled"));
        assert_eq!(e.message, "garbage");
    }
}

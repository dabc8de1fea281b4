//! The sweep request (the JSON event the Lambda takes and `s3sweep run --event` reads)
//! and its validation into a [`Plan`].
//!
//! [`SweepRequest`] is the wire schema: every field but `buckets` has a documented
//! default, unknown fields are rejected. [`Plan::from_json`] checks every field and
//! reports all problems in one [`RequestError`]; a `Plan` cannot hold an invalid value,
//! so the engine never re-checks. Limits: workers 1..=4096, object_count
//! 1..=1,000,000, at most 10,000,000 timed requests per run.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// The placeholder a key template must contain; replaced by the object index 0..N.
pub const INDEX_PLACEHOLDER: &str = "{i}";

/// The sweep request: what to read, from where, at which concurrencies.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `buckets` | required | buckets to sweep, in order (1 to 16) |
/// | `key_template` | `test/{i}/vectors` | object key, `{i}` replaced by 0..object_count |
/// | `object_count` | 1000 | objects read per configuration |
/// | `workers` | 1,2,4,8,16,17,18,19,20 | requests in flight, one configuration each |
/// | `pool_connections` | 20 | most TCP connections per bucket endpoint; more workers wait, and the wait is measured |
/// | `repetitions` | 1 | times each configuration is run |
/// | `warmup` | true | untimed requests before each configuration so connections are open |
/// | `shuffle` | true | read keys in a seeded random order (false: 0, 1, 2, ...) |
/// | `seed` | 1 | seed of the shuffle |
/// | `timeouts_ms.connect` | 3000 | establishing one connection |
/// | `timeouts_ms.first_byte` | 10000 | from sending a request to its response headers |
/// | `timeouts_ms.attempt` | 30000 | one attempt, from sending to the last body byte |
/// | `max_attempts` | 1 | attempts per request; retries are counted separately |
/// | `role` | `coordinator` | `child` for an invocation a fan-out coordinator started |
/// | `fanout` | none | `{"invocations": N, "start_delay_ms": D, "split": "shard"\|"replicate"}`, see [`crate::fanout`] |
/// | `key_range` | all keys | `{"start": a, "end": b}`: read only objects a..b (a child's shard) |
/// | `start_unix_ms` | none | wall-clock time the first configuration's timed phase waits for |
/// | `finish_by_unix_ms` | none | wall-clock time a child must be done by (set by its coordinator) |
/// | `config_slot_ms` | none | a child's slot per configuration (from `fanout.slot_ms`) |
/// | `prices` | us-east-1 list prices | price table for the cost estimate, see [`crate::cost`] |
/// | `target_wall_ms` | none | wall time a configuration must meet to be named the cheapest |
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    pub buckets: Vec<String>,
    #[serde(default = "default_key_template")]
    pub key_template: String,
    #[serde(default = "default_object_count")]
    pub object_count: u32,
    #[serde(default = "default_workers")]
    pub workers: Vec<u32>,
    #[serde(default = "default_pool_connections")]
    pub pool_connections: u32,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    #[serde(default = "default_true")]
    pub warmup: bool,
    #[serde(default = "default_true")]
    pub shuffle: bool,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// `coordinator` (the default) or `child`; children never fan out.
    #[serde(default, skip_serializing_if = "crate::fanout::Role::is_coordinator")]
    pub role: crate::fanout::Role,
    /// Fan the sweep out over this many invocations of the function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<crate::fanout::FanoutRequest>,
    /// Only objects `start..end` (a child's shard); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_range: Option<crate::fanout::KeyRange>,
    /// Wall-clock ms since the epoch the first configuration's timed phase waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ms: Option<u64>,
    /// Wall-clock ms since the epoch by which a child must be done (its coordinator's
    /// deadline less the safety margin); no configuration starts that would end later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_by_unix_ms: Option<u64>,
    /// A child's slot per configuration: configuration k starts at `start_unix_ms` +
    /// k x this (set by the coordinator from `fanout.slot_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_slot_ms: Option<u64>,
    #[serde(default)]
    pub timeouts_ms: TimeoutsMs,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Price table of the cost estimate (defaults: us-east-1 list prices).
    #[serde(default)]
    pub prices: crate::cost::Prices,
    /// Wall time, ms, the cheapest configuration named in the cost summary must meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_wall_ms: Option<u64>,
}

/// Timeouts in milliseconds; each must be 1..=900,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsMs {
    #[serde(default = "default_connect_ms")]
    pub connect: u64,
    #[serde(default = "default_first_byte_ms")]
    pub first_byte: u64,
    #[serde(default = "default_attempt_ms")]
    pub attempt: u64,
}

impl Default for TimeoutsMs {
    fn default() -> Self {
        TimeoutsMs {
            connect: default_connect_ms(),
            first_byte: default_first_byte_ms(),
            attempt: default_attempt_ms(),
        }
    }
}

fn default_key_template() -> String {
    "test/{i}/vectors".to_string()
}
fn default_object_count() -> u32 {
    1000
}
/// The worker counts of the measurement in CONTEXT.md.
pub fn default_workers() -> Vec<u32> {
    vec![1, 2, 4, 8, 16, 17, 18, 19, 20]
}
fn default_pool_connections() -> u32 {
    20
}
fn default_repetitions() -> u32 {
    1
}
fn default_true() -> bool {
    true
}
fn default_seed() -> u64 {
    1
}
fn default_connect_ms() -> u64 {
    3_000
}
fn default_first_byte_ms() -> u64 {
    10_000
}
fn default_attempt_ms() -> u64 {
    30_000
}
fn default_max_attempts() -> u32 {
    1
}

const MAX_TIMEOUT_MS: u64 = 900_000;

impl SweepRequest {
    /// A request for `buckets` with every other field at its default.
    pub fn new(buckets: Vec<String>) -> Self {
        SweepRequest {
            buckets,
            key_template: default_key_template(),
            object_count: default_object_count(),
            workers: default_workers(),
            pool_connections: default_pool_connections(),
            repetitions: default_repetitions(),
            warmup: true,
            shuffle: true,
            seed: default_seed(),
            role: crate::fanout::Role::Coordinator,
            fanout: None,
            key_range: None,
            start_unix_ms: None,
            finish_by_unix_ms: None,
            config_slot_ms: None,
            timeouts_ms: TimeoutsMs::default(),
            max_attempts: default_max_attempts(),
            prices: crate::cost::Prices::default(),
            target_wall_ms: None,
        }
    }
}

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
    fn single(field: &str, message: impl Into<String>) -> Self {
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

/// A key template with exactly the `{i}` placeholder(s) substituted per object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<String>,
}

impl KeyTemplate {
    /// Parses a template; it must contain `{i}` and produce keys of at most 1,024 bytes.
    pub fn parse(template: &str, max_index: u32) -> Result<Self, String> {
        if !template.contains(INDEX_PLACEHOLDER) {
            return Err(format!(
                "must contain {INDEX_PLACEHOLDER} (the object index), got {}",
                preview(template)
            ));
        }
        if template.chars().any(|c| c.is_control()) {
            return Err("must not contain control characters".into());
        }
        let parts: Vec<String> = template.split(INDEX_PLACEHOLDER).map(str::to_string).collect();
        let t = KeyTemplate { parts };
        let longest = t.key(max_index).len();
        if longest > MAX_KEY_BYTES {
            return Err(format!(
                "produces keys of {longest} bytes; S3 keys are at most {MAX_KEY_BYTES}"
            ));
        }
        Ok(t)
    }

    /// The key of object `i`.
    pub fn key(&self, i: u32) -> String {
        let index = i.to_string();
        let mut key = String::with_capacity(self.parts.iter().map(String::len).sum::<usize>() + 8);
        for (n, part) in self.parts.iter().enumerate() {
            if n > 0 {
                key.push_str(&index);
            }
            key.push_str(part);
        }
        key
    }

    /// The template text.
    pub fn as_template(&self) -> String {
        self.parts.join(INDEX_PLACEHOLDER)
    }
}

/// A validated sweep: every value in range, nothing left to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    request: SweepRequest,
    keys: KeyTemplate,
}

impl Plan {
    /// Parses and validates a JSON document.
    pub fn from_json(text: &str) -> Result<Plan, RequestError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| RequestError::single("(request)", format!("not valid JSON: {e}")))?;
        Plan::from_value(value)
    }

    /// Validates an already parsed JSON value, reporting every bad field.
    pub fn from_value(value: Value) -> Result<Plan, RequestError> {
        let Value::Object(map) = value else {
            return Err(RequestError::single(
                "(request)",
                format!("must be a JSON object, got {}", kind_of(&value)),
            ));
        };
        let mut problems = Vec::new();
        // Fields with the wrong type keep their (valid) defaults, so the range checks
        // below still report every other field.
        let request = typed_request(map, &mut problems);
        match Plan::from_request(request) {
            Ok(plan) if problems.is_empty() => Ok(plan),
            Ok(_) => Err(RequestError { problems }),
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
                Err(RequestError { problems })
            }
        }
    }

    /// Validates a typed request.
    pub fn from_request(request: SweepRequest) -> Result<Plan, RequestError> {
        let mut problems = Vec::new();
        let mut bad = |field: String, message: String| problems.push(FieldProblem { field, message });

        if request.buckets.is_empty() {
            bad("buckets".into(), "must name at least one bucket".into());
        }
        if request.buckets.len() > MAX_BUCKETS {
            bad(
                "buckets".into(),
                format!("at most {MAX_BUCKETS} buckets, got {}", request.buckets.len()),
            );
        }
        let mut seen = BTreeSet::new();
        for (i, b) in request.buckets.iter().enumerate() {
            if let Err(msg) = check_bucket_name(b) {
                bad(format!("buckets[{i}]"), msg);
            } else if !seen.insert(b.as_str()) {
                bad(format!("buckets[{i}]"), format!("{b:?} is listed twice"));
            }
        }
        if request.object_count == 0 || request.object_count > MAX_OBJECT_COUNT {
            bad(
                "object_count".into(),
                format!("must be between 1 and {MAX_OBJECT_COUNT}, got {}", request.object_count),
            );
        }
        let keys = match KeyTemplate::parse(&request.key_template, request.object_count.max(1) - 1) {
            Ok(t) => Some(t),
            Err(msg) => {
                bad("key_template".into(), msg);
                None
            }
        };
        crate::fanout::check_request(&request, &mut problems);
        let mut bad = |field: String, message: String| problems.push(FieldProblem { field, message });
        if request.workers.is_empty() {
            bad("workers".into(), "must list at least one worker count".into());
        }
        let mut seen = BTreeSet::new();
        for (i, &w) in request.workers.iter().enumerate() {
            if w == 0 || w > MAX_WORKERS {
                bad(
                    format!("workers[{i}]"),
                    format!("must be between 1 and {MAX_WORKERS}, got {w}"),
                );
            } else if !seen.insert(w) {
                bad(format!("workers[{i}]"), format!("{w} is listed twice"));
            }
        }
        if request.pool_connections == 0 || request.pool_connections > MAX_POOL_CONNECTIONS {
            bad(
                "pool_connections".into(),
                format!(
                    "must be between 1 and {MAX_POOL_CONNECTIONS}, got {}",
                    request.pool_connections
                ),
            );
        }
        if request.repetitions == 0 || request.repetitions > MAX_REPETITIONS {
            bad(
                "repetitions".into(),
                format!("must be between 1 and {MAX_REPETITIONS}, got {}", request.repetitions),
            );
        }
        if request.max_attempts == 0 || request.max_attempts > MAX_ATTEMPTS {
            bad(
                "max_attempts".into(),
                format!("must be between 1 and {MAX_ATTEMPTS}, got {}", request.max_attempts),
            );
        }
        for (name, v) in [
            ("connect", request.timeouts_ms.connect),
            ("first_byte", request.timeouts_ms.first_byte),
            ("attempt", request.timeouts_ms.attempt),
        ] {
            if v == 0 || v > MAX_TIMEOUT_MS {
                bad(
                    format!("timeouts_ms.{name}"),
                    format!("must be between 1 and {MAX_TIMEOUT_MS} ms, got {v}"),
                );
            }
        }
        crate::cost::check_prices(&request.prices, &mut problems);
        crate::cost::check_target(request.target_wall_ms, &mut problems);
        let mut bad = |field: String, message: String| problems.push(FieldProblem { field, message });
        let total = request.buckets.len() as u64
            * request.workers.len() as u64
            * u64::from(request.repetitions)
            * u64::from(request.object_count);
        if total > MAX_TOTAL_REQUESTS {
            bad(
                "object_count".into(),
                format!(
                    "the run would make {total} requests ({} buckets x {} worker counts x {} repetitions x {} objects); the limit is {MAX_TOTAL_REQUESTS}",
                    request.buckets.len(),
                    request.workers.len(),
                    request.repetitions,
                    request.object_count
                ),
            );
        }
        match keys {
            Some(keys) if problems.is_empty() => Ok(Plan { request, keys }),
            _ => Err(RequestError { problems }),
        }
    }

    /// The request with every default filled in (echoed in results).
    pub fn request(&self) -> &SweepRequest {
        &self.request
    }
    pub fn buckets(&self) -> &[String] {
        &self.request.buckets
    }
    pub fn keys(&self) -> &KeyTemplate {
        &self.keys
    }
    pub fn object_count(&self) -> u32 {
        self.request.object_count
    }
    pub fn workers(&self) -> &[u32] {
        &self.request.workers
    }
    pub fn pool_connections(&self) -> u32 {
        self.request.pool_connections
    }
    pub fn repetitions(&self) -> u32 {
        self.request.repetitions
    }
    pub fn warmup(&self) -> bool {
        self.request.warmup
    }
    pub fn shuffle(&self) -> bool {
        self.request.shuffle
    }
    pub fn seed(&self) -> u64 {
        self.request.seed
    }
    pub fn max_attempts(&self) -> u32 {
        self.request.max_attempts
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.request.timeouts_ms.connect)
    }
    pub fn first_byte_timeout(&self) -> Duration {
        Duration::from_millis(self.request.timeouts_ms.first_byte)
    }
    pub fn attempt_timeout(&self) -> Duration {
        Duration::from_millis(self.request.timeouts_ms.attempt)
    }
    /// Timed requests the whole run makes (warm-up excluded).
    pub fn total_requests(&self) -> u64 {
        self.request.buckets.len() as u64
            * self.request.workers.len() as u64
            * u64::from(self.request.repetitions)
            * u64::from(self.key_range().len() as u32)
    }
    /// `coordinator` or `child`.
    pub fn role(&self) -> crate::fanout::Role {
        self.request.role
    }
    /// The fan-out asked for, if any (never on a child).
    pub fn fanout(&self) -> Option<&crate::fanout::FanoutRequest> {
        self.request.fanout.as_ref()
    }
    /// Indices of the objects this sweep reads: `key_range`, or `0..object_count`.
    pub fn key_range(&self) -> std::ops::Range<u32> {
        match self.request.key_range {
            Some(r) => r.start..r.end,
            None => 0..self.request.object_count,
        }
    }
    /// The time a child must be done by, ms since the Unix epoch.
    pub fn finish_by_unix_ms(&self) -> Option<u64> {
        self.request.finish_by_unix_ms
    }
    /// The shared start time a child waits for, ms since the Unix epoch.
    pub fn start_unix_ms(&self) -> Option<u64> {
        self.request.start_unix_ms
    }
}

/// Field by field typing, so one pass reports every wrong type and unknown field.
fn typed_request(mut map: Map<String, Value>, problems: &mut Vec<FieldProblem>) -> SweepRequest {
    const KNOWN: &[&str] = &[
        "buckets",
        "key_template",
        "object_count",
        "workers",
        "pool_connections",
        "repetitions",
        "warmup",
        "shuffle",
        "seed",
        "role",
        "fanout",
        "key_range",
        "start_unix_ms",
        "finish_by_unix_ms",
        "config_slot_ms",
        "timeouts_ms",
        "max_attempts",
        "prices",
        "target_wall_ms",
    ];
    for key in map.keys() {
        if !KNOWN.contains(&key.as_str()) {
            problems.push(FieldProblem {
                field: field_name(key),
                message: format!("unknown field; known fields are {}", KNOWN.join(", ")),
            });
        }
    }
    let mut request = SweepRequest::new(Vec::new());
    match map.remove("buckets") {
        None => problems.push(FieldProblem {
            field: "buckets".into(),
            message: "required: the list of buckets to sweep".into(),
        }),
        Some(v) => field(v, "buckets", "a list of bucket names", problems, &mut request.buckets),
    }
    if let Some(v) = map.remove("key_template") {
        field(v, "key_template", "a string", problems, &mut request.key_template);
    }
    if let Some(v) = map.remove("object_count") {
        field(v, "object_count", "a whole number", problems, &mut request.object_count);
    }
    if let Some(v) = map.remove("workers") {
        field(v, "workers", "a list of whole numbers", problems, &mut request.workers);
    }
    if let Some(v) = map.remove("pool_connections") {
        field(
            v,
            "pool_connections",
            "a whole number",
            problems,
            &mut request.pool_connections,
        );
    }
    if let Some(v) = map.remove("repetitions") {
        field(v, "repetitions", "a whole number", problems, &mut request.repetitions);
    }
    if let Some(v) = map.remove("warmup") {
        field(v, "warmup", "true or false", problems, &mut request.warmup);
    }
    if let Some(v) = map.remove("shuffle") {
        field(v, "shuffle", "true or false", problems, &mut request.shuffle);
    }
    if let Some(v) = map.remove("seed") {
        field(v, "seed", "a whole number", problems, &mut request.seed);
    }
    crate::fanout::typed_fields(&mut map, problems, &mut request);
    if let Some(v) = map.remove("max_attempts") {
        field(v, "max_attempts", "a whole number", problems, &mut request.max_attempts);
    }
    if let Some(v) = map.remove("prices") {
        request.prices = crate::cost::typed_prices(v, problems);
    }
    if let Some(v) = map.remove("target_wall_ms") {
        field(
            v,
            "target_wall_ms",
            "a whole number of milliseconds",
            problems,
            &mut request.target_wall_ms,
        );
    }
    if let Some(v) = map.remove("timeouts_ms") {
        match v {
            Value::Object(mut t) => {
                for key in t.keys() {
                    if !["connect", "first_byte", "attempt"].contains(&key.as_str()) {
                        problems.push(FieldProblem {
                            field: format!("timeouts_ms.{}", field_name(key)),
                            message: "unknown field; known fields are connect, first_byte, attempt".into(),
                        });
                    }
                }
                for (name, slot) in [
                    ("connect", &mut request.timeouts_ms.connect),
                    ("first_byte", &mut request.timeouts_ms.first_byte),
                    ("attempt", &mut request.timeouts_ms.attempt),
                ] {
                    if let Some(v) = t.remove(name) {
                        field(
                            v,
                            &format!("timeouts_ms.{name}"),
                            "a whole number of milliseconds",
                            problems,
                            slot,
                        );
                    }
                }
            }
            other => problems.push(FieldProblem {
                field: "timeouts_ms".into(),
                message: format!(
                    "must be an object like {{\"connect\": 3000, \"first_byte\": 10000, \"attempt\": 30000}}, got {}",
                    kind_of(&other)
                ),
            }),
        }
    }
    request
}

pub(crate) fn field<T: serde::de::DeserializeOwned>(
    value: Value,
    name: &str,
    expected: &str,
    problems: &mut Vec<FieldProblem>,
    slot: &mut T,
) {
    let shown = kind_of(&value);
    match serde_json::from_value::<T>(value) {
        Ok(v) => *slot = v,
        Err(e) => problems.push(FieldProblem {
            field: name.to_string(),
            message: format!("must be {expected}, got {shown} ({})", trim_serde(&e.to_string())),
        }),
    }
}

fn trim_serde(msg: &str) -> String {
    preview(msg)
}

/// A short description of a JSON value, never its whole text (strings may be huge).
pub(crate) fn kind_of(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string {}", preview(s)),
        Value::Array(a) => format!("a list of {} item(s)", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// An unknown field's name as given, or a quoted preview when it is long or odd.
pub(crate) fn field_name(key: &str) -> String {
    let plain = key.len() <= 60 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain && !key.is_empty() {
        key.to_string()
    } else {
        preview(key)
    }
}

/// At most 60 characters of `s`, quoted.
fn preview(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}... ({} bytes)", s.len())
    }
}

/// S3 bucket naming rules (general purpose and directory buckets): 3 to 63 characters,
/// lowercase letters, digits, '.' and '-', starting and ending with a letter or digit.
pub fn check_bucket_name(name: &str) -> Result<(), String> {
    let len = name.len();
    if !(3..=63).contains(&len) {
        return Err(format!(
            "{} is not a bucket name: must be 3 to 63 characters long",
            preview(name)
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return Err(format!(
            "{} is not a bucket name: {c:?} is not allowed (lowercase letters, digits, '.' and '-' only)",
            preview(name)
        ));
    }
    let first = name.as_bytes()[0];
    let last = name.as_bytes()[len - 1];
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(format!(
            "{} is not a bucket name: must start and end with a letter or digit",
            preview(name)
        ));
    }
    if name.contains("..") {
        return Err(format!(
            "{} is not a bucket name: must not contain \"..\"",
            preview(name)
        ));
    }
    Ok(())
}

/// True for an S3 Express One Zone directory bucket name (`name--azid--x-s3`).
pub fn is_directory_bucket(name: &str) -> bool {
    name.ends_with("--x-s3")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_the_seed_experiment() {
        let plan = Plan::from_json(r#"{"buckets": ["my-bucket"]}"#).unwrap();
        assert_eq!(plan.object_count(), 1000);
        assert_eq!(plan.workers(), &[1, 2, 4, 8, 16, 17, 18, 19, 20]);
        assert_eq!(plan.pool_connections(), 20);
        assert_eq!(plan.repetitions(), 1);
        assert!(plan.warmup());
        assert!(plan.shuffle());
        assert_eq!(plan.max_attempts(), 1);
        assert_eq!(plan.keys().key(7), "test/7/vectors");
        assert_eq!(plan.connect_timeout(), Duration::from_secs(3));
        assert_eq!(plan.total_requests(), 9000);
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let err = Plan::from_value(json!({
            "buckets": ["Bad_Bucket", "ok-bucket", "ok-bucket"],
            "key_template": "no-placeholder",
            "object_count": 0,
            "workers": [0, 8, 8, 5000],
            "pool_connections": 0,
            "repetitions": 0,
            "max_attempts": 0,
            "timeouts_ms": {"connect": 0}
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "buckets[0]",
            "buckets[2]",
            "key_template",
            "object_count",
            "workers[0]",
            "workers[2]",
            "workers[3]",
            "pool_connections",
            "repetitions",
            "max_attempts",
            "timeouts_ms.connect",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
    }

    #[test]
    fn wrong_types_and_unknown_fields_are_all_named() {
        let err = Plan::from_value(json!({
            "buckets": "just-one",
            "object_count": -5,
            "workers": ["four"],
            "warmup": "yes",
            "colour": "blue",
            "timeouts_ms": {"connect": 1.5, "nap": 3}
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "buckets",
            "object_count",
            "workers",
            "warmup",
            "colour",
            "timeouts_ms.connect",
            "timeouts_ms.nap",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        let text = err.to_string();
        assert!(text.contains("-5"), "{text}");
    }

    #[test]
    fn missing_buckets_and_non_objects_are_clear() {
        let err = Plan::from_json("{}").unwrap_err();
        assert_eq!(err.fields(), vec!["buckets"]);
        assert!(err.to_string().contains("required"));
        let err = Plan::from_json("[1,2]").unwrap_err();
        assert!(err.to_string().contains("must be a JSON object"));
        let err = Plan::from_json("{\"buckets\": [").unwrap_err();
        assert!(err.to_string().contains("not valid JSON"));
        let err = Plan::from_json(r#"{"buckets": []}"#).unwrap_err();
        assert!(err.to_string().contains("at least one bucket"));
    }

    #[test]
    fn total_request_limit() {
        let err = Plan::from_value(json!({
            "buckets": ["a-bucket", "b-bucket"],
            "object_count": 1_000_000,
            "workers": [1, 2, 4, 8, 16, 32],
        }))
        .unwrap_err();
        assert!(err.to_string().contains("12000000 requests"), "{err}");
    }

    #[test]
    fn huge_strings_are_not_echoed() {
        let long = "x".repeat(10 * 1024 * 1024);
        let err = Plan::from_value(json!({"buckets": [long.clone()], "key_template": long})).unwrap_err();
        let text = err.to_string();
        assert!(text.len() < 2000, "error is {} bytes", text.len());
        assert_eq!(err.fields(), vec!["buckets[0]", "key_template"]);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = Plan::from_json(&format!("{{\"buckets\": {deep}}}")).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
    }

    #[test]
    fn key_templates() {
        let t = KeyTemplate::parse("a/{i}/b/{i}", 10).unwrap();
        assert_eq!(t.key(3), "a/3/b/3");
        assert_eq!(t.as_template(), "a/{i}/b/{i}");
        assert!(KeyTemplate::parse("x".repeat(1030).as_str(), 1).is_err());
        assert!(KeyTemplate::parse(&format!("{}{{i}}", "x".repeat(1020)), 99_999).is_err());
        assert!(KeyTemplate::parse("a\n{i}", 1).is_err());
    }

    #[test]
    fn bucket_names() {
        assert!(check_bucket_name("standard-like").is_ok());
        assert!(check_bucket_name("my-bucket--use1-az4--x-s3").is_ok());
        assert!(is_directory_bucket("my-bucket--use1-az4--x-s3"));
        assert!(check_bucket_name("ab").is_err());
        assert!(check_bucket_name("-abc").is_err());
        assert!(check_bucket_name("ABC").is_err());
        assert!(check_bucket_name("a..b").is_err());
    }

    #[test]
    fn prices_and_target_are_validated_with_the_rest() {
        let err = Plan::from_value(json!({
            "buckets": ["ok-bucket"],
            "workers": [0],
            "prices": {"s3_standard_get_per_1000_usd": -0.1, "lambda_memory_mb": 99999, "lambda_arm64_gb_s_usd": "x"},
            "target_wall_ms": 0
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "workers[0]",
            "prices.s3_standard_get_per_1000_usd",
            "prices.lambda_memory_mb",
            "prices.lambda_arm64_gb_s_usd",
            "target_wall_ms",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        let plan = Plan::from_json(
            r#"{"buckets": ["b-1"], "prices": {"s3_express_get_per_1000_usd": 0.0001}, "target_wall_ms": 2500}"#,
        )
        .unwrap();
        assert_eq!(plan.request().prices.s3_express_get_per_1000_usd, 0.0001);
        assert_eq!(plan.request().prices.s3_standard_get_per_1000_usd, 0.0004);
        assert_eq!(plan.request().target_wall_ms, Some(2500));
        let echoed = serde_json::to_value(plan.request()).unwrap();
        assert_eq!(echoed["prices"]["lambda_memory_mb"], 10240);
    }

    #[test]
    fn request_round_trips() {
        let plan = Plan::from_json(r#"{"buckets": ["b-1"], "workers": [3], "timeouts_ms": {"attempt": 5}}"#).unwrap();
        let text = serde_json::to_string(plan.request()).unwrap();
        let again = Plan::from_json(&text).unwrap();
        assert_eq!(plan, again);
        assert_eq!(again.attempt_timeout(), Duration::from_millis(5));
        assert_eq!(again.first_byte_timeout(), Duration::from_secs(10));
    }
}

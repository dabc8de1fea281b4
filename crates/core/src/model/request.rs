//! The sweep request: the JSON event the Lambda takes and `s3sweep run --event` reads,
//! with its fan-out and price sections. Only the wire schema and its defaults live
//! here; [`crate::plan`] validates a request into a plan that cannot hold invalid
//! values.

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;
pub(crate) use super::network::Order;

/// The placeholder a key template must contain; replaced by the object index 0..N.
pub(crate) const INDEX_PLACEHOLDER: &str = "{i}";
/// Default `fanout.start_delay_ms`: room for N cold starts before the shared start.
pub(crate) const DEFAULT_START_DELAY_MS: u64 = 2_000;

/// The sweep request: what to read, from where, at which concurrencies. Each field is
/// defined once in `plan::request_fields` (how it is read, its flag) and documented in
/// docs/usage.md's request table (checked against that list); its default is set once,
/// in `impl Default for SweepRequest`, which serde fills missing fields from.
///
/// The events a coordinator sends its own function (a fan-out's children, a memory
/// sweep's sizes) also carry [`FROM_COORDINATOR_FIELD`], an envelope only the
/// coordinator writes ([`FromCoordinator`]); it is not one of the request's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepRequest {
    pub buckets: Vec<String>,
    pub key_template: String,
    /// Read the first `object_count` keys listed under this prefix instead of the
    /// template's keys (exactly one of the two is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    /// With `key_prefix`: sweep the keys found when the prefix holds fewer than
    /// `object_count` (false: that is an error naming both numbers).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_fewer_keys: bool,
    pub object_count: u32,
    pub workers: Vec<u32>,
    pub pool_connections: u32,
    pub repetitions: u32,
    pub warmup: bool,
    pub shuffle: bool,
    pub seed: u64,
    /// Fan the sweep out over this many invocations of the function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fanout: Option<FanoutRequest>,
    /// What a coordinator told the invocation it started (its role, shard, shared
    /// start and finish time); `None` in a user's request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_coordinator: Option<FromCoordinator>,
    pub timeouts_ms: TimeoutsMs,
    pub max_attempts: u32,
    /// Price table of the cost estimate (defaults: us-east-1 list prices).
    pub prices: Prices,
    /// Wall time, ms, the cheapest configuration named in the cost summary must meet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_wall_ms: Option<u64>,
    /// Lambda memory sizes, MB, to run the whole sweep at, one after the other (a
    /// memory sweep: on Lambda a published version per size; locally a CPU quota per
    /// size). Empty: the function's own memory only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_mb: Vec<u32>,
    /// The order configurations run in; `None`: [`Order::default_for`] the repetitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Measure the bandwidth ceiling before the sweep.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub probe_bandwidth: bool,
    /// The probe object's key (default [`DEFAULT_PROBE_KEY`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_key: Option<String>,
    /// The client's pool closes a connection idle this long, ms (1 to 900,000).
    #[serde(skip_serializing_if = "is_default_idle")]
    pub pool_idle_timeout_ms: u64,
    /// Where the full result is written after every configuration (`s3://bucket/prefix`);
    /// `None`: nowhere (the Lambda then uses `S3SWEEP_RESULTS_URI` if set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results_uri: Option<String>,
    /// Where the function writes the request log (`s3://bucket/prefix`): the object
    /// `<prefix>/<run id>.requests.csv.gz`, gzipped CSV capped like `--requests-log`;
    /// under the function's `S3SWEEP_RESULTS_URI` when it has one. `None`: no log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_log_uri: Option<String>,
    /// The run's name (1 to 64 of `A-Za-z0-9._-`): the result is written to
    /// `<results prefix>/<run_id>.json`; `None`: the invocation's request id names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// With `true` the result's key gains the run's UTC date,
    /// `<results prefix>/YYYY/MM/DD/<run id>.json` (a scheduled canary's results, listed
    /// by day). Default `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub results_by_date: bool,
    /// With `true` the Lambda also writes the result as one HTML page beside it,
    /// `<results prefix>/<run id>.html` (`report --html`'s page). Default `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub results_html: bool,
    /// The Lambda memory size, MB, this request must run at (the scheduled canary's: the
    /// stack's `MemorySize`): an invocation running at another size (`$LATEST` while a
    /// memory sweep resizes it) measures nothing, and its result says why (every
    /// configuration skipped). `None`: any size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_memory_mb: Option<u32>,
    /// The CloudWatch namespace of the metrics the Lambda logs in embedded metric
    /// format, one line per configuration (render::emf); `None`: the function's
    /// `S3SWEEP_METRICS_NAMESPACE`, and without it no metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_namespace: Option<String>,
    /// Object sizes, bytes, to sweep (the size axis): each size's objects are read at
    /// [`size_prefix`] + the key template. Empty: one size, the template's own keys.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub object_sizes_bytes: Vec<u64>,
    /// The S3 clients each configuration runs with, in order (default `["sdk"]`).
    #[serde(skip_serializing_if = "is_default_clients")]
    pub clients: Vec<super::closed_set::Client>,
    /// The hedge policies each configuration runs with, in order (default `["off"]`;
    /// docs/hedging.md).
    #[serde(skip_serializing_if = "is_default_hedge")]
    pub hedge: Vec<super::hedge::Hedge>,
    /// Most hedges a configuration sends, in percent of its GETs so far (default 5).
    #[serde(skip_serializing_if = "is_default_hedge_budget")]
    pub max_hedge_percent: u32,
}

fn is_default_hedge(hedge: &[super::hedge::Hedge]) -> bool {
    hedge == [super::hedge::Hedge::Off]
}

/// Default `max_hedge_percent`.
pub(crate) const DEFAULT_MAX_HEDGE_PERCENT: u32 = 5;

fn is_default_hedge_budget(percent: &u32) -> bool {
    *percent == DEFAULT_MAX_HEDGE_PERCENT
}

fn is_default_clients(clients: &[super::closed_set::Client]) -> bool {
    clients == [super::closed_set::Client::Sdk]
}

/// The prefix the objects of size `size_bytes` live under on a size axis (`s4096/`):
/// `seed --object-sizes` writes them there and the sweep reads them there.
pub(crate) fn size_prefix(size_bytes: u64) -> String {
    format!("s{size_bytes}/")
}

/// Timeouts in milliseconds; each must be 1..=900,000 (checked by the plan). Missing
/// fields take their [`Default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutsMs {
    pub connect: u64,
    pub first_byte: u64,
    pub attempt: u64,
}

impl Default for TimeoutsMs {
    fn default() -> Self {
        TimeoutsMs {
            connect: 3_000,
            first_byte: 10_000,
            attempt: 30_000,
        }
    }
}

/// The key `seed --probe-object-mib` writes the probe object to, and the probe reads.
pub const DEFAULT_PROBE_KEY: &str = "s3sweep/probe-object";
/// Default `pool_idle_timeout_ms`: below S3's idle close (about 20 s), so the client
/// retires a connection before the server does.
pub(crate) const DEFAULT_POOL_IDLE_TIMEOUT_MS: u64 = 15_000;

fn is_default_idle(ms: &u64) -> bool {
    *ms == DEFAULT_POOL_IDLE_TIMEOUT_MS
}
/// The default `key_template`.
pub(crate) const DEFAULT_KEY_TEMPLATE: &str = "test/{i}/vectors";

/// Every field's default, the one place they are set: serde fills a missing field
/// from it, and the plan reads a request over it. `buckets` is empty (a request must
/// name at least one).
impl Default for SweepRequest {
    fn default() -> Self {
        SweepRequest {
            buckets: Vec::new(),
            key_template: DEFAULT_KEY_TEMPLATE.to_string(),
            key_prefix: None,
            allow_fewer_keys: false,
            object_count: 1000,
            // The worker counts of the original measurement (docs/background.md).
            workers: vec![1, 2, 4, 8, 16, 17, 18, 19, 20],
            pool_connections: 20,
            repetitions: 1,
            warmup: true,
            shuffle: true,
            seed: 1,
            fanout: None,
            from_coordinator: None,
            timeouts_ms: TimeoutsMs::default(),
            max_attempts: 1,
            prices: Prices::default(),
            results_uri: None,
            requests_log_uri: None,
            run_id: None,
            results_by_date: false,
            results_html: false,
            expect_memory_mb: None,
            metrics_namespace: None,
            target_wall_ms: None,
            memory_mb: Vec::new(),
            order: None,
            probe_bandwidth: false,
            probe_key: None,
            pool_idle_timeout_ms: DEFAULT_POOL_IDLE_TIMEOUT_MS,
            object_sizes_bytes: Vec::new(),
            clients: vec![super::closed_set::Client::Sdk],
            hedge: vec![super::hedge::Hedge::Off],
            max_hedge_percent: DEFAULT_MAX_HEDGE_PERCENT,
        }
    }
}

impl SweepRequest {
    /// A request for `buckets` with every other field at its default.
    pub fn new(buckets: Vec<String>) -> Self {
        SweepRequest {
            buckets,
            ..SweepRequest::default()
        }
    }
}

/// The key of the envelope a coordinator adds to the events it sends its own function.
pub(crate) const FROM_COORDINATOR_FIELD: &str = "from_coordinator";

/// The envelope a coordinator adds to an event it sends its own function
/// ([`FROM_COORDINATOR_FIELD`]): a fan-out's child gets its role, shard, shared start
/// and finish time; a memory sweep's size gets its finish time. Kept apart from the
/// request's own fields so a user's event cannot set them by accident, and not listed
/// among the fields users are shown.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `role` | `coordinator` | `child` for an invocation a fan-out coordinator started (it never fans out) |
/// | `key_range` | all keys | `{"start": a, "end": b}`: read only objects a..b (a child's shard) |
/// | `start_unix_ms` | none | wall-clock time the first configuration's timed phase waits for |
/// | `finish_by_unix_ms` | none | wall-clock time the invocation must be done by (its coordinator's deadline less the safety margin) |
/// | `config_slot_ms` | none | a child's slot per configuration (from `fanout.slot_ms`) |
/// | `listed_shares` | none | with `key_prefix`: per bucket, the child's share of the coordinator's listing |
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromCoordinator {
    /// `coordinator` (the default: a memory sweep's size) or `child`.
    #[serde(default, skip_serializing_if = "Role::is_coordinator")]
    pub role: Role,
    /// Only objects `start..end` (a child's shard); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_range: Option<KeyRange>,
    /// Wall-clock ms since the epoch the first configuration's timed phase waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ms: Option<u64>,
    /// Wall-clock ms since the epoch by which the invocation must be done (its
    /// coordinator's deadline less the safety margin); no configuration starts that
    /// would end later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_by_unix_ms: Option<u64>,
    /// A child's slot per configuration: configuration k starts at `start_unix_ms` +
    /// k x this (set by the coordinator from `fanout.slot_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_slot_ms: Option<u64>,
    /// With `key_prefix`, one per bucket in the request's order: the child lists only
    /// its share of the keys its coordinator listed (never the whole prefix again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed_shares: Vec<ListedShare>,
}

/// A fan-out child's part of one bucket's listing: the `count` keys that follow
/// `start_after` under the prefix (from the prefix's first key when `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedShare {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    pub count: u32,
}

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

closed_set! {
    /// A Lambda CPU architecture, as priced (Lambda's names).
    pub enum Architecture {
        X86_64 = "x86_64",
        Arm64 = "arm64",
    }
}

impl Architecture {
    /// The architecture of a machine as `std::env::consts::ARCH` names it.
    pub fn from_machine(arch: &str) -> Self {
        match arch {
            "aarch64" | "arm64" => Architecture::Arm64,
            _ => Architecture::X86_64,
        }
    }
}

/// The price table (request field `prices`). Missing fields take their [`Default`]
/// (us-east-1 list prices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Prices {
    pub s3_standard_get_per_1000_usd: f64,
    pub s3_express_get_per_1000_usd: f64,
    pub s3_express_retrieval_per_gb_usd: f64,
    pub lambda_x86_64_gb_s_usd: f64,
    pub lambda_arm64_gb_s_usd: f64,
    /// Lambda Managed Instances: the EC2 On-Demand price of the instance, per hour.
    pub lmi_instance_hour_usd: f64,
    /// Lambda Managed Instances: the compute management fee, a share of the instance
    /// price (0.15 = 15%).
    pub lmi_management_fee_share: f64,
    /// Lambda Managed Instances: the request charge, per million invocations.
    pub lmi_request_per_million_usd: f64,
    pub lambda_memory_mb: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lambda_architecture: Option<Architecture>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub express_buckets: Vec<String>,
}

// Validation keeps every price finite, so equality is total.
impl Eq for Prices {}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            s3_standard_get_per_1000_usd: 0.0004,
            s3_express_get_per_1000_usd: 0.00003,
            s3_express_retrieval_per_gb_usd: 0.0006,
            lambda_x86_64_gb_s_usd: 0.000_016_666_7,
            lambda_arm64_gb_s_usd: 0.000_013_333_4,
            lambda_memory_mb: 10_240,
            lambda_architecture: None,
            express_buckets: Vec::new(),
            // c7gn.large (the template's first managed-instances type), us-east-1 Linux
            // On-Demand; the fee and request charge from aws.amazon.com/lambda/pricing
            // (see analysis/cost.rs).
            lmi_instance_hour_usd: 0.1248,
            lmi_management_fee_share: 0.15,
            lmi_request_per_million_usd: 0.20,
        }
    }
}

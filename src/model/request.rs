//! The sweep request: the JSON event the Lambda takes and `s3sweep run --event` reads,
//! with its fan-out and price sections. Only the wire schema and its defaults live
//! here; [`crate::plan`] validates a request into a plan that cannot hold invalid
//! values.

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;
pub use super::network::Order;

/// The placeholder a key template must contain; replaced by the object index 0..N.
pub(crate) const INDEX_PLACEHOLDER: &str = "{i}";
/// Default `fanout.start_delay_ms`: room for N cold starts before the shared start.
pub(crate) const DEFAULT_START_DELAY_MS: u64 = 2_000;

/// The sweep request: what to read, from where, at which concurrencies.
///
/// | field | default | meaning |
/// |---|---|---|
/// | `buckets` | required | buckets to sweep, in order (1 to 16) |
/// | `key_template` | `test/{i}/vectors` | object key, `{i}` replaced by 0..object_count |
/// | `key_prefix` | none | instead of `key_template`: read the first `object_count` keys listed under this prefix (docs/prefix.md) |
/// | `allow_fewer_keys` | false | with `key_prefix`: sweep the keys found when fewer than `object_count` are listed (else an error) |
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
/// | `fanout` | none | `{"invocations": N, "start_delay_ms": D, "split": "shard"\|"replicate"}`, see [`FanoutRequest`] |
/// | `prices` | us-east-1 list prices | price table for the cost estimate, see [`Prices`] |
/// | `target_wall_ms` | none | wall time a configuration must meet to be named the cheapest |
/// | `memory_mb` | none | Lambda memory sizes to sweep (each 128 to 10,240): the sweep runs once per size, see `docs/memory-sweep.md` |
/// | `order` | `interleaved` when `repetitions` > 1, else `ascending` | the order configurations run in, see [`Order`] |
/// | `probe_bandwidth` | false | measure the bandwidth ceiling to the first bucket before the sweep (docs/diagnosis.md) |
/// | `probe_key` | `s3sweep/probe-object` | the probe object `seed --probe-object-mib` writes; without it the probe reads the sweep's objects |
/// | `pool_idle_timeout_ms` | 15000 | the client closes a pooled connection idle this long (S3 closes after about 20 s) |
/// | `clients` | `["sdk"]` | the S3 clients each configuration runs with: `sdk` (aws-sdk-s3) and/or `lean` (signed GETs with the least client work, docs/lean-client.md) |
/// | `results_uri` | none | `s3://bucket/prefix`: the full result is written to `<prefix>/<run_id>.json` after every configuration (docs/usage.md, long sweeps) |
/// | `object_sizes_bytes` | none | object sizes to sweep (each 1 to 5 GiB): size x workers per bucket, size `S` read at `s{S}/` + the key template, as `seed --object-sizes` writes them (docs/usage.md, the size axis) |
///
/// The events a coordinator sends its own function (a fan-out's children, a memory
/// sweep's sizes) also carry [`FROM_COORDINATOR_FIELD`], an envelope only the
/// coordinator writes ([`FromCoordinator`]); it is not one of the request's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    pub buckets: Vec<String>,
    #[serde(default = "default_key_template")]
    pub key_template: String,
    /// Read the first `object_count` keys listed under this prefix instead of the
    /// template's keys (exactly one of the two is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    /// With `key_prefix`: sweep the keys found when the prefix holds fewer than
    /// `object_count` (false: that is an error naming both numbers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_fewer_keys: bool,
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
    /// Fan the sweep out over this many invocations of the function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<FanoutRequest>,
    /// What a coordinator told the invocation it started (its role, shard, shared
    /// start and finish time); `None` in a user's request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_coordinator: Option<FromCoordinator>,
    #[serde(default)]
    pub timeouts_ms: TimeoutsMs,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Price table of the cost estimate (defaults: us-east-1 list prices).
    #[serde(default)]
    pub prices: Prices,
    /// Wall time, ms, the cheapest configuration named in the cost summary must meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_wall_ms: Option<u64>,
    /// Lambda memory sizes, MB, to run the whole sweep at, one after the other (a
    /// memory sweep: on Lambda a published version per size; locally a CPU quota per
    /// size). Empty: the function's own memory only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_mb: Vec<u32>,
    /// The order configurations run in; `None`: [`Order::default_for`] the repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Measure the bandwidth ceiling before the sweep.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_bandwidth: bool,
    /// The probe object's key (default [`DEFAULT_PROBE_KEY`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_key: Option<String>,
    /// The client's pool closes a connection idle this long, ms (1 to 900,000).
    #[serde(default = "default_pool_idle_timeout_ms", skip_serializing_if = "is_default_idle")]
    pub pool_idle_timeout_ms: u64,
    /// Where the full result is written after every configuration (`s3://bucket/prefix`);
    /// `None`: nowhere (the Lambda then uses `S3SWEEP_RESULTS_URI` if set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_uri: Option<String>,
    /// Object sizes, bytes, to sweep (the size axis): each size's objects are read at
    /// [`size_prefix`] + the key template. Empty: one size, the template's own keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_sizes_bytes: Vec<u64>,
    /// The S3 clients each configuration runs with, in order (default `["sdk"]`).
    #[serde(default = "default_clients", skip_serializing_if = "is_default_clients")]
    pub clients: Vec<super::closed_set::Client>,
}

fn default_clients() -> Vec<super::closed_set::Client> {
    vec![super::closed_set::Client::Sdk]
}
fn is_default_clients(clients: &[super::closed_set::Client]) -> bool {
    clients == [super::closed_set::Client::Sdk]
}

/// The prefix the objects of size `size_bytes` live under on a size axis (`s4096/`):
/// `seed --object-sizes` writes them there and the sweep reads them there.
pub fn size_prefix(size_bytes: u64) -> String {
    format!("s{size_bytes}/")
}

/// Timeouts in milliseconds; each must be 1..=900,000 (checked by the plan).
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

/// The key `seed --probe-object-mib` writes the probe object to, and the probe reads.
pub(crate) const DEFAULT_PROBE_KEY: &str = "s3sweep/probe-object";
/// Default `pool_idle_timeout_ms`: below S3's idle close (about 20 s), so the client
/// retires a connection before the server does.
pub(crate) const DEFAULT_POOL_IDLE_TIMEOUT_MS: u64 = 15_000;

fn is_default_idle(ms: &u64) -> bool {
    *ms == DEFAULT_POOL_IDLE_TIMEOUT_MS
}
fn default_pool_idle_timeout_ms() -> u64 {
    DEFAULT_POOL_IDLE_TIMEOUT_MS
}
/// The default `key_template`.
pub(crate) fn default_key_template() -> String {
    "test/{i}/vectors".to_string()
}
fn default_object_count() -> u32 {
    1000
}
/// The worker counts of the original measurement (docs/background.md).
pub(crate) fn default_workers() -> Vec<u32> {
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

impl SweepRequest {
    /// A request for `buckets` with every other field at its default.
    pub fn new(buckets: Vec<String>) -> Self {
        SweepRequest {
            buckets,
            key_template: default_key_template(),
            key_prefix: None,
            allow_fewer_keys: false,
            object_count: default_object_count(),
            workers: default_workers(),
            pool_connections: default_pool_connections(),
            repetitions: default_repetitions(),
            warmup: true,
            shuffle: true,
            seed: default_seed(),
            fanout: None,
            from_coordinator: None,
            timeouts_ms: TimeoutsMs::default(),
            max_attempts: default_max_attempts(),
            prices: Prices::default(),
            results_uri: None,
            target_wall_ms: None,
            memory_mb: Vec::new(),
            order: None,
            probe_bandwidth: false,
            probe_key: None,
            pool_idle_timeout_ms: DEFAULT_POOL_IDLE_TIMEOUT_MS,
            object_sizes_bytes: Vec::new(),
            clients: default_clients(),
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

/// The price table (request field `prices`). See the module docs for the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default = "default_standard_get")]
    pub s3_standard_get_per_1000_usd: f64,
    #[serde(default = "default_express_get")]
    pub s3_express_get_per_1000_usd: f64,
    #[serde(default = "default_express_retrieval")]
    pub s3_express_retrieval_per_gb_usd: f64,
    #[serde(default = "default_lambda_x86")]
    pub lambda_x86_64_gb_s_usd: f64,
    #[serde(default = "default_lambda_arm")]
    pub lambda_arm64_gb_s_usd: f64,
    #[serde(default = "default_memory_mb")]
    pub lambda_memory_mb: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_architecture: Option<Architecture>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub express_buckets: Vec<String>,
}

// Validation keeps every price finite, so equality is total.
impl Eq for Prices {}

fn default_standard_get() -> f64 {
    0.0004
}
fn default_express_get() -> f64 {
    0.00003
}
fn default_express_retrieval() -> f64 {
    0.0006
}
fn default_lambda_x86() -> f64 {
    0.000_016_666_7
}
fn default_lambda_arm() -> f64 {
    0.000_013_333_4
}
fn default_memory_mb() -> u32 {
    10_240
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            s3_standard_get_per_1000_usd: default_standard_get(),
            s3_express_get_per_1000_usd: default_express_get(),
            s3_express_retrieval_per_gb_usd: default_express_retrieval(),
            lambda_x86_64_gb_s_usd: default_lambda_x86(),
            lambda_arm64_gb_s_usd: default_lambda_arm(),
            lambda_memory_mb: default_memory_mb(),
            lambda_architecture: None,
            express_buckets: Vec::new(),
        }
    }
}

//! The [`Plan`]: what validation found, as typed values. [`super::Plan::from_request`]
//! checks a request field by field and, only when nothing is wrong, builds a `Plan`
//! from the checked request once ([`Plan::build`]): durations as [`Duration`]s, the
//! order and probe key resolved from their defaults, the destinations parsed, the
//! coordinator's envelope taken apart, the configurations counted. The fields are
//! private and set nowhere else, so a `Plan` cannot hold an unchecked value, and the
//! accessors read a field, never the request again. The request itself is kept only to
//! be echoed in results ([`Plan::request`]).

use std::ops::Range;
use std::time::Duration;

use crate::model::request::{FanoutRequest, ListedShare, Role, SweepRequest, DEFAULT_PROBE_KEY};
use crate::model::{AxisValues, Client, Hedge, Order};

use super::destination::ResultsUri;
use super::key_template::KeyTemplate;
use super::keys::{self, BucketListing, Keys};

/// A validated sweep: every value in range, nothing left to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The request with every default filled in: echoed in results, never read for a
    /// value the sweep uses.
    request: SweepRequest,
    buckets: Vec<String>,
    objects: Objects,
    workers: Vec<u32>,
    pool_connections: u32,
    repetitions: u32,
    order: Order,
    warmup: bool,
    shuffle: bool,
    seed: u64,
    max_attempts: u32,
    timeouts: Timeouts,
    pool_idle_timeout: Duration,
    clients: Vec<Client>,
    hedges: Vec<Hedge>,
    max_hedge_percent: u32,
    object_sizes_bytes: Vec<u64>,
    memory_mb: Vec<u32>,
    probe_bandwidth: bool,
    probe_key: String,
    fanout: Option<FanoutRequest>,
    envelope: Envelope,
    outputs: Outputs,
    /// The values on the axes one run sweeps (the memory axis aside).
    axis_values: AxisValues,
    /// Configurations of one run: buckets x worker counts x repetitions x axis points.
    configurations: u64,
    /// With `key_prefix`: the keys listed once per bucket, shared by clones of the plan.
    listing: keys::ListingCell,
}

/// The objects each configuration reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Objects {
    /// `object_count`: 1 to [`super::MAX_OBJECT_COUNT`].
    count: u32,
    /// The numbered keys (with `key_prefix`, the default template, unused).
    template: KeyTemplate,
    /// The prefix whose listed keys are read instead, if any.
    prefix: Option<String>,
    /// With `prefix`: sweep a prefix holding fewer than `count` keys anyway.
    allow_fewer_keys: bool,
    /// The indices read: a child's shard, else `0..count`.
    range: Range<u32>,
}

/// The per-request timeouts, each 1 ms to 15 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timeouts {
    connect: Duration,
    first_byte: Duration,
    attempt: Duration,
}

/// What a coordinator told the invocation it started (defaults in a user's request).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Envelope {
    /// Whether the request came from a coordinator at all.
    given: bool,
    role: Role,
    start_unix_ms: Option<u64>,
    finish_by_unix_ms: Option<u64>,
    config_slot: Option<Duration>,
    listed_shares: Vec<ListedShare>,
}

/// Where the run's outputs go and what they are called, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outputs {
    results_uri: Option<ResultsUri>,
    requests_log_uri: Option<ResultsUri>,
    results_by_date: bool,
    results_html: bool,
    run_id: Option<String>,
    metrics_namespace: Option<String>,
    expect_memory_mb: Option<u32>,
}

/// The checked values validation hands over beside the request: those it parsed.
pub(super) struct Checked {
    pub(super) template: KeyTemplate,
    pub(super) results_uri: Option<ResultsUri>,
    pub(super) requests_log_uri: Option<ResultsUri>,
}

impl Plan {
    /// The plan of a request every check passed, with the values the checks parsed.
    pub(super) fn build(request: SweepRequest, checked: Checked) -> Plan {
        let r = &request;
        let coordinator = r.from_coordinator.clone().unwrap_or_default();
        let objects = Objects {
            count: r.object_count,
            template: checked.template,
            prefix: r.key_prefix.clone(),
            allow_fewer_keys: r.allow_fewer_keys,
            range: coordinator.key_range.map_or(0..r.object_count, |k| k.start..k.end),
        };
        let axis_values = AxisValues {
            memory_mb: vec![None],
            ..super::axis_values(r)
        };
        Plan {
            buckets: r.buckets.clone(),
            objects,
            workers: r.workers.clone(),
            pool_connections: r.pool_connections,
            repetitions: r.repetitions,
            order: r.order.unwrap_or_else(|| Order::default_for(r.repetitions)),
            warmup: r.warmup,
            shuffle: r.shuffle,
            seed: r.seed,
            max_attempts: r.max_attempts,
            timeouts: Timeouts {
                connect: Duration::from_millis(r.timeouts_ms.connect),
                first_byte: Duration::from_millis(r.timeouts_ms.first_byte),
                attempt: Duration::from_millis(r.timeouts_ms.attempt),
            },
            pool_idle_timeout: Duration::from_millis(r.pool_idle_timeout_ms),
            clients: r.clients.clone(),
            hedges: r.hedge.clone(),
            max_hedge_percent: r.max_hedge_percent,
            object_sizes_bytes: r.object_sizes_bytes.clone(),
            memory_mb: r.memory_mb.clone(),
            probe_bandwidth: r.probe_bandwidth,
            probe_key: r.probe_key.clone().unwrap_or_else(|| DEFAULT_PROBE_KEY.to_string()),
            fanout: r.fanout,
            envelope: Envelope {
                given: r.from_coordinator.is_some(),
                role: coordinator.role,
                start_unix_ms: coordinator.start_unix_ms,
                finish_by_unix_ms: coordinator.finish_by_unix_ms,
                config_slot: coordinator.config_slot_ms.map(Duration::from_millis),
                listed_shares: coordinator.listed_shares,
            },
            outputs: Outputs {
                results_uri: checked.results_uri,
                requests_log_uri: checked.requests_log_uri,
                results_by_date: r.results_by_date,
                results_html: r.results_html,
                run_id: r.run_id.clone(),
                metrics_namespace: r.metrics_namespace.clone(),
                expect_memory_mb: r.expect_memory_mb,
            },
            configurations: super::configurations_of(r, &axis_values),
            axis_values,
            listing: keys::ListingCell::default(),
            request,
        }
    }

    /// The request with every default filled in (echoed in results).
    pub fn request(&self) -> &SweepRequest {
        &self.request
    }
    pub fn buckets(&self) -> &[String] {
        &self.buckets
    }
    /// The key template (with `key_prefix`, the default one, unused: see [`Plan::keys_of`]).
    pub fn keys(&self) -> &KeyTemplate {
        &self.objects.template
    }
    /// The prefix whose listed keys the sweep reads, if the request names one.
    pub fn key_prefix(&self) -> Option<&str> {
        self.objects.prefix.as_deref()
    }
    /// Whether a prefix holding fewer than `object_count` keys is swept anyway.
    pub fn allow_fewer_keys(&self) -> bool {
        self.objects.allow_fewer_keys
    }
    /// The keys bucket number `bucket` is read with: the template's, or the listing's
    /// (empty until [`Plan::set_listing`]).
    pub fn keys_of(&self, bucket: usize) -> Keys {
        if self.objects.prefix.is_none() {
            return Keys::Template(self.objects.template.clone());
        }
        let listed = self.listing().and_then(|l| l.get(bucket)).map(|b| b.objects.clone());
        Keys::Listed(listed.unwrap_or_default())
    }
    /// The listing of every bucket, once made.
    pub fn listing(&self) -> Option<&[BucketListing]> {
        self.listing.get()
    }
    /// Records the listing (once per run: clones of this plan share it).
    pub fn set_listing(&self, listing: Vec<BucketListing>) {
        self.listing.set(listing)
    }
    pub fn object_count(&self) -> u32 {
        self.objects.count
    }
    pub fn workers(&self) -> &[u32] {
        &self.workers
    }
    pub fn pool_connections(&self) -> u32 {
        self.pool_connections
    }
    pub fn repetitions(&self) -> u32 {
        self.repetitions
    }
    pub fn warmup(&self) -> bool {
        self.warmup
    }
    pub fn shuffle(&self) -> bool {
        self.shuffle
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    pub fn connect_timeout(&self) -> Duration {
        self.timeouts.connect
    }
    pub fn first_byte_timeout(&self) -> Duration {
        self.timeouts.first_byte
    }
    pub fn attempt_timeout(&self) -> Duration {
        self.timeouts.attempt
    }
    /// How long the client's pool keeps an idle connection.
    pub fn pool_idle_timeout(&self) -> Duration {
        self.pool_idle_timeout
    }
    /// Timed requests the whole run makes (warm-up excluded): every configuration of
    /// one memory size, each its key range.
    pub fn total_requests(&self) -> u64 {
        self.configurations * u64::from(self.objects.range.len() as u32)
    }
    /// Whether a coordinator sent this request (a fan-out's child, a memory sweep's size).
    pub fn from_coordinator(&self) -> bool {
        self.envelope.given
    }
    /// `coordinator` or `child` (from the coordinator's envelope; `coordinator` without).
    pub fn role(&self) -> Role {
        self.envelope.role
    }
    /// The fan-out asked for, if any (never on a child).
    pub fn fanout(&self) -> Option<&FanoutRequest> {
        self.fanout.as_ref()
    }
    /// A fan-out child's shares of its coordinator's listing, one per bucket (empty:
    /// list the prefix itself).
    pub fn listed_shares(&self) -> &[ListedShare] {
        &self.envelope.listed_shares
    }
    /// Indices of the objects this sweep reads: `key_range`, or `0..object_count`.
    pub fn key_range(&self) -> Range<u32> {
        self.objects.range.clone()
    }
    /// The time an invocation a coordinator started must be done by, ms since the
    /// Unix epoch.
    pub fn finish_by_unix_ms(&self) -> Option<u64> {
        self.envelope.finish_by_unix_ms
    }
    /// The shared start time a child waits for, ms since the Unix epoch.
    pub fn start_unix_ms(&self) -> Option<u64> {
        self.envelope.start_unix_ms
    }
    /// A child's slot per configuration.
    pub fn config_slot(&self) -> Option<Duration> {
        self.envelope.config_slot
    }
    /// The configurations one run of the plan has (one memory size: a memory sweep
    /// runs the plan once per size).
    pub fn configurations(&self) -> u64 {
        self.configurations
    }
    /// The plan's values on the axes one run sweeps (the memory axis aside).
    pub fn axis_values(&self) -> AxisValues {
        self.axis_values.clone()
    }
    /// The memory sizes to sweep, MB (empty: none).
    pub fn memory_mb(&self) -> &[u32] {
        &self.memory_mb
    }
    /// The object sizes swept, bytes (empty: no size axis).
    pub fn object_sizes(&self) -> &[u64] {
        &self.object_sizes_bytes
    }
    /// The order configurations run in (the request's, else the default for its
    /// repetitions).
    pub fn order(&self) -> Order {
        self.order
    }
    /// The S3 clients each configuration runs with, in the request's order.
    pub fn clients(&self) -> &[Client] {
        &self.clients
    }
    /// The hedge policies each configuration runs with, in the request's order.
    pub fn hedges(&self) -> &[Hedge] {
        &self.hedges
    }
    /// Most hedges a configuration sends, in percent of its GETs so far.
    pub fn max_hedge_percent(&self) -> u32 {
        self.max_hedge_percent
    }
    /// Whether to probe the bandwidth ceiling before the sweep.
    pub fn probe_bandwidth(&self) -> bool {
        self.probe_bandwidth
    }
    /// The probe object's key.
    pub fn probe_key(&self) -> &str {
        &self.probe_key
    }
    /// `uri`, one level down per UTC day of `now_unix_s` when the request asks for
    /// `results_by_date` ([`ResultsUri::dated`]).
    pub fn dated_if_asked(&self, uri: ResultsUri, now_unix_s: u64) -> ResultsUri {
        if self.outputs.results_by_date {
            uri.dated(now_unix_s as i64)
        } else {
            uri
        }
    }
    /// Where the function writes the request log (request `requests_log_uri`), if
    /// anywhere.
    pub fn requests_log_uri(&self) -> Option<ResultsUri> {
        self.outputs.requests_log_uri.clone()
    }
    /// Where the result is written (request `results_uri`), if anywhere.
    pub fn results_uri(&self) -> Option<ResultsUri> {
        self.outputs.results_uri.clone()
    }
    /// Whether the result is also written as an HTML page beside it.
    pub fn results_html(&self) -> bool {
        self.outputs.results_html
    }
    /// The run's name the request gives (checked: 1 to 64 of `A-Za-z0-9._-`).
    pub fn run_id(&self) -> Option<&str> {
        self.outputs.run_id.as_deref()
    }
    /// The CloudWatch namespace the request names for its metrics (checked).
    pub fn metrics_namespace(&self) -> Option<&str> {
        self.outputs.metrics_namespace.as_deref()
    }
    /// The Lambda memory size, MB, the request must run at, if it says.
    pub fn expect_memory_mb(&self) -> Option<u32> {
        self.outputs.expect_memory_mb
    }

    /// Checks that the sweep's pool fits in this process's file-descriptor limit
    /// (`in_process_server`: the embedded server's end of each connection too).
    pub fn check_fd_budget(&self, in_process_server: bool) -> Result<(), crate::sys::limits::LimitError> {
        crate::sys::limits::check_budget(
            &crate::sys::limits::nofile(),
            self.pool_connections,
            self.buckets.len(),
            in_process_server,
        )
    }
}

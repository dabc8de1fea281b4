//! The network side of a result: what each row's interfaces received (bytes and
//! packets from the OS counters), the bandwidth ceiling the verdicts used and where it
//! came from (`probe`, `user`, or `sweep`: the sweep's own rows), with its interval
//! and the figure it was revised up from when a row went faster, the bandwidth probe's report (sustained rate, a
//! burst when one was seen, whether the figure is only a lower bound), and the order
//! the configurations ran in (`ascending` or `interleaved`, with its seed). Every field
//! is optional in older results.

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;
use super::stats::tidy;

closed_set! {
    /// The order configurations run in (request `order`).
    pub enum Order {
        /// Bucket, then worker count, then repetition, each ascending, back to back.
        Ascending = "ascending",
        /// Repetitions as rounds; within a round, each bucket's worker counts in a
        /// seeded shuffle (a new one per round), so warm-up, a burst allowance or a
        /// noisy neighbour do not land on the same worker count every time.
        Interleaved = "interleaved",
    }
}

impl Order {
    /// The default for `repetitions`: interleaved when there is more than one.
    pub fn default_for(repetitions: u32) -> Order {
        if repetitions > 1 {
            Order::Interleaved
        } else {
            Order::Ascending
        }
    }
}

closed_set! {
    /// Where a bandwidth ceiling came from.
    pub enum CeilingSource {
        /// Measured by the bandwidth probe of this run (`probe_bandwidth`).
        Probe = "probe",
        /// Given by the user (`--bandwidth-mib-s`).
        User = "user",
        /// Read from the sweep's own rows: MiB/s flat over more requests in flight
        /// while each body took longer and the CPU was not used up (the rule in
        /// docs/diagnosis.md, "Bandwidth by evidence").
        Sweep = "sweep",
        /// The row's own settled rate after a burst, read from its timeline (a row's
        /// diagnosis only; never the run's ceiling).
        Timeline = "timeline",
    }
}

/// What the client's network interface(s) received during one configuration (its
/// timed phase), from the OS counters (`/proc/net/dev`): every non-loopback interface,
/// or loopback when the endpoint is on this machine. Other traffic of the machine in
/// that time is counted too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireCounts {
    /// The interfaces summed.
    pub interfaces: Vec<String>,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    /// `rx_bytes` per second of the row's wall time, in MiB/s.
    #[serde(serialize_with = "tidy::dec3")]
    pub rx_mib_per_s: f64,
    /// `rx_bytes` over the row's body bytes: headers, TLS, TCP/IP framing and
    /// retransmissions (about 1.03 to 1.1 for 46 KB objects over HTTP). On loopback
    /// the requests the client sent are counted too (a loopback interface receives
    /// both directions). `None` when no body byte arrived.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::sig4_opt")]
    pub wire_to_body_ratio: Option<f64>,
    /// The counters received far more than this row's requests can explain: other
    /// traffic on the interface (the machine's, not the row's) is in them, so
    /// `rx_mib_per_s` is not this row's rate (set by the analysis).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_traffic: bool,
}

/// A known bandwidth ceiling and its source.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BandwidthCeiling {
    /// Body MiB/s the client can reach to the bucket.
    #[serde(serialize_with = "tidy::dec3")]
    pub mib_per_s: f64,
    pub source: CeilingSource,
    /// True when the probe's figure is only a lower bound (the client's CPU, not the
    /// network, bound it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// Where the link's rate lies, `[low, high]` MiB/s: for a `sweep` ceiling, from the
    /// rows that showed it (their body MiB/s, less what an idle link's credit gives, to
    /// their body MiB/s plus the wire's overhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_mib_per_s: Option<[f64; 2]>,
    /// The figure the ceiling was revised up from: a row (not on burst credit) went
    /// faster than it, so the ceiling is at least that row's MiB/s.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::dec3_opt")]
    pub revised_from_mib_per_s: Option<f64>,
}

closed_set! {
    /// What the probe read.
    pub enum ProbeObjectKind {
        /// One large probe object (written by `seed --probe-object-mib`), read in
        /// ranges.
        ProbeObject = "probe_object",
        /// The sweep's own objects (no probe object in the bucket).
        SweepObjects = "sweep_objects",
    }
}

closed_set! {
    /// Why the probe stopped.
    pub enum ProbeStop {
        /// Its time budget ran out.
        Time = "time",
        /// Its byte budget was read.
        Bytes = "bytes",
        /// Its reads ended first.
        Done = "done",
    }
}

/// A burst seen by the probe: a rate above the sustained one for a while at the start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeBurst {
    /// Body MiB received before the rate settled.
    #[serde(serialize_with = "tidy::dec3")]
    pub mib: f64,
    /// Their rate, MiB/s.
    #[serde(serialize_with = "tidy::dec3")]
    pub mib_per_s: f64,
    /// How long the burst lasted, ms from the probe's start.
    #[serde(serialize_with = "tidy::dec3")]
    pub duration_ms: f64,
}

/// The bandwidth probe's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub bucket: String,
    pub kind: ProbeObjectKind,
    /// The probe object's key (`probe_object`) or the sweep's key template.
    pub key: String,
    /// GETs kept in flight.
    pub streams: u32,
    pub requests: u64,
    /// Failed probe GETs (counted, not fatal).
    pub errors: u64,
    pub body_bytes: u64,
    #[serde(serialize_with = "tidy::dec3")]
    pub wall_ms: f64,
    /// The rate it settled at: the median of the later half of its intervals.
    #[serde(serialize_with = "tidy::dec3")]
    pub sustained_mib_per_s: f64,
    /// The fastest interval.
    #[serde(serialize_with = "tidy::dec3")]
    pub peak_mib_per_s: f64,
    /// The length of one interval of `interval_mib_per_s`.
    pub interval_ms: u64,
    /// Body MiB/s per interval, in order.
    pub interval_mib_per_s: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<ProbeBurst>,
    /// The client's CPU during the probe: process CPU time over wall time, in cores.
    #[serde(serialize_with = "tidy::sig4")]
    pub cores_busy: f64,
    /// Cores the client could use.
    #[serde(serialize_with = "tidy::sig4")]
    pub usable_cores: f64,
    /// The machine's busy CPU during the probe, in cores (all processes).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::sig4_opt")]
    pub machine_cores_busy: Option<f64>,
    /// True when CPU may have set the figure rather than the network: the client's
    /// cores at least 85% busy, or the machine's (other processes starving the
    /// client), unless the probe saw a burst and then a settled rate (the same
    /// client ran faster first, so the path, not the CPU, set the settled rate). The
    /// figure is then only a lower bound.
    pub lower_bound: bool,
    /// Why the probe stopped: `time` or `bytes` (its budget), or `done`.
    pub stopped_by: ProbeStop,
    /// One line in plain words.
    pub explanation: String,
}

/// The network block of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// The order the configurations ran in.
    pub order: Order,
    /// The seed of the interleaved order's shuffles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// The client's pool closes a connection idle this long, ms.
    pub pool_idle_timeout_ms: u64,
    /// The ceiling the verdicts and the model use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<BandwidthCeiling>,
    /// The probe's report (of the first bucket), when `probe_bandwidth` was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeReport>,
}

/// One fan-out child's wire rate in one merged configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChildWire {
    /// The child's index.
    pub child: u32,
    /// What its interfaces received per second of its own timed phase, MiB/s.
    #[serde(serialize_with = "tidy::dec3")]
    pub rx_mib_per_s: f64,
}

/// One fan-out child's bandwidth probe, as the coordinator keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChildProbe {
    /// The child's index.
    pub child: u32,
    /// The rate its probe settled at, MiB/s: that function's own ceiling.
    #[serde(serialize_with = "tidy::dec3")]
    pub sustained_mib_per_s: f64,
    /// True when that figure is only a lower bound (the child's CPU may have set it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// The burst its probe saw first, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<ProbeBurst>,
}

/// A fan-out's bandwidth probes (request `probe_bandwidth` with `fanout`): each child
/// probed from its own function, and each function has its own NIC, so the ceiling of
/// the merged rows is the children's sum, until something they share (S3's per-prefix
/// rate, one bucket's limits) binds first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanoutProbe {
    /// Each merged child's probe, by child index.
    pub children: Vec<ChildProbe>,
    /// The children's sustained rates added, MiB/s: the merged rows' ceiling.
    #[serde(serialize_with = "tidy::dec3")]
    pub aggregate_mib_per_s: f64,
    /// True when any child's figure is only a lower bound (then so is the sum).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
}

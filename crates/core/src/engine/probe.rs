//! The bandwidth probe (request `probe_bandwidth`): before the sweep, within a time
//! and a byte budget, read as fast as the client can from one bucket and watch the
//! rate interval by interval. With the probe object (`seed --probe-object-mib`) it
//! keeps a few large ranged GETs in flight, which costs the client little CPU per
//! byte, so even a small client reaches a NIC's ceiling; without it, it reads the
//! sweep's own objects with many GETs in flight, and says its figure is only a lower
//! bound when CPU may have been the limit (the client's cores busy, or the machine's,
//! which starves the client), unless it saw a burst and then a settled rate, which
//! only a path's token bucket makes ([`Shape::shows_the_network`]). It reports the
//! rate it settled at (the
//! median of the later half of its intervals) and a burst (MiB, at what rate, for how
//! long) when the early intervals ran well above it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::network::ProbeStop;
use crate::model::stats::{median, round3};
use crate::model::{ProbeBurst, ProbeObjectKind, ProbeReport};
use crate::plan::Plan;
use crate::s3::SweepSession;
use crate::sys::cpu::UsableCpu;
use crate::sys::usage;

/// The probe's budget and shape. Defaults: 4 s, 1 GiB, 100 ms intervals, 8 ranged GETs
/// of 8 MiB in flight (probe object) or 64 GETs (the sweep's objects).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeSettings {
    pub time_budget: Duration,
    pub byte_budget: u64,
    pub interval: Duration,
    pub range_streams: u32,
    pub range_bytes: u64,
    pub object_streams: u32,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings {
            time_budget: Duration::from_secs(4),
            byte_budget: 1 << 30,
            interval: Duration::from_millis(100),
            range_streams: 8,
            range_bytes: 8 << 20,
            object_streams: 64,
        }
    }
}

/// Smallest probe object worth reading in ranges.
const MIN_PROBE_OBJECT_BYTES: i64 = 1 << 20;
/// A burst: the early intervals ran at least this much faster than the sustained rate.
const BURST_FACTOR: f64 = 1.25;
/// Cores busy over usable at which the client's CPU, not the network, set the pace.
const CPU_BOUND_SHARE: f64 = 0.85;
/// A settled rate: this share of the later half's intervals within
/// [`SETTLED_SPREAD`] of the sustained rate.
const SETTLED_SHARE: f64 = 0.8;
/// How far from the sustained rate a settled interval may be, as a share of it.
const SETTLED_SPREAD: f64 = 0.15;
const MIB: f64 = 1024.0 * 1024.0;

/// What the probe reads: ranges of one object, or whole sweep objects.
enum Source {
    Ranges { key: String, size: u64 },
    Objects,
}

/// Runs the probe on `bucket`: the probe object when it is there (HEAD), the sweep's
/// objects otherwise. Its streams are spread over the session's lanes, each stream on
/// its lane's thread with its lane's client, so together they have the whole pool
/// (each lane holds its share).
pub(crate) async fn probe(session: &SweepSession, plan: &Plan, bucket: &str, settings: ProbeSettings) -> ProbeReport {
    let key = plan.probe_key().to_string();
    let size = session
        .sdk(0)
        .head_object()
        .bucket(bucket)
        .key(&key)
        .send()
        .await
        .ok()
        .and_then(|h| h.content_length())
        .filter(|&n| n >= MIN_PROBE_OBJECT_BYTES);
    let source = match size {
        Some(n) => Source::Ranges { key, size: n as u64 },
        None => Source::Objects,
    };
    run_probe(session, plan, bucket, source, settings).await
}

/// Shared state of the probe's GETs.
#[derive(Default)]
struct Tally {
    bytes: AtomicU64,
    requests: AtomicU64,
    errors: AtomicU64,
    next: AtomicU64,
}

async fn run_probe(
    session: &SweepSession,
    plan: &Plan,
    bucket: &str,
    source: Source,
    settings: ProbeSettings,
) -> ProbeReport {
    let tally = Arc::new(Tally::default());
    let streams = match source {
        Source::Ranges { .. } => settings.range_streams,
        Source::Objects => settings.object_streams,
    };
    let source = Arc::new(source);
    let cpu_before = usage::process_cpu_time();
    let machine_before = usage::machine_busy_time();
    let start = Instant::now();
    let stop_at = start + settings.time_budget;
    let mut tasks = spawn_streams(
        session,
        plan,
        bucket,
        (source.clone(), streams),
        &tally,
        settings,
        stop_at,
    );
    let samples = sample(&tally, settings, start, stop_at, &mut tasks).await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let wall = start.elapsed();
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cores_busy = usage::process_cpu_time().saturating_sub(cpu_before).as_secs_f64() / wall_s;
    let machine_cores_busy = match (machine_before, usage::machine_busy_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64() / wall_s),
        _ => None,
    };
    let usable_cores = UsableCpu::read().cores;
    let bytes = tally.bytes.load(Ordering::Relaxed);
    let stopped_by = stop_reason(bytes, wall, &settings);
    let (kind, key) = probed_object(&source, plan);
    let shape = Shape::of(&samples, settings.interval);
    let vcpus = usage::vcpus() as f64;
    let cpu_may_bind = cores_busy >= CPU_BOUND_SHARE * usable_cores.min(vcpus).max(0.01)
        || machine_cores_busy.is_some_and(|m| m >= CPU_BOUND_SHARE * vcpus);
    let network_shown = shape.shows_the_network(&samples);
    let lower_bound = cpu_may_bind && !network_shown;
    let mut report = ProbeReport {
        bucket: bucket.to_string(),
        kind,
        key,
        streams,
        requests: tally.requests.load(Ordering::Relaxed),
        errors: tally.errors.load(Ordering::Relaxed),
        body_bytes: bytes,
        wall_ms: round3(wall.as_secs_f64() * 1000.0),
        sustained_mib_per_s: round3(shape.sustained),
        peak_mib_per_s: round3(shape.peak),
        interval_ms: settings.interval.as_millis() as u64,
        interval_mib_per_s: samples.iter().map(|&x| round3(x)).collect(),
        burst: shape.burst,
        cores_busy: crate::model::stats::sig4(cores_busy),
        machine_cores_busy: machine_cores_busy.map(crate::model::stats::sig4),
        usable_cores: crate::model::stats::sig4(usable_cores),
        lower_bound,
        stopped_by,
        explanation: String::new(),
    };
    report.explanation = explain(&report);
    if cpu_may_bind && network_shown {
        report.explanation.push_str(&format!(
            "; CPU was busy (the client {:.2} of {:.2} usable cores{}), but the same client ran faster in the burst, then settled: the settled rate is the path's, not the CPU's",
            report.cores_busy,
            report.usable_cores,
            report
                .machine_cores_busy
                .map_or(String::new(), |m| format!(", the machine {m:.2} of {vcpus:.0}"))
        ));
    }
    report
}

/// Why the probe stopped: its byte budget, its time budget, or every stream done.
fn stop_reason(bytes: u64, wall: Duration, settings: &ProbeSettings) -> ProbeStop {
    if bytes >= settings.byte_budget {
        ProbeStop::Bytes
    } else if wall >= settings.time_budget {
        ProbeStop::Time
    } else {
        ProbeStop::Done
    }
}

/// What the probe read: the probe object's key, or the sweep's objects (their template
/// or prefix).
fn probed_object(source: &Source, plan: &Plan) -> (ProbeObjectKind, String) {
    match source {
        Source::Ranges { key, .. } => (ProbeObjectKind::ProbeObject, key.clone()),
        Source::Objects => (
            ProbeObjectKind::SweepObjects,
            plan.key_prefix()
                .map_or_else(|| plan.keys().as_template(), |p| format!("{p}*")),
        ),
    }
}

/// Starts `streams` tasks, each keeping one probe GET in flight until `stop_at` or the
/// byte budget, stream `i` on lane `i` (modulo the lanes).
fn spawn_streams(
    session: &SweepSession,
    plan: &Plan,
    bucket: &str,
    (source, streams): (Arc<Source>, u32),
    tally: &Arc<Tally>,
    settings: ProbeSettings,
    stop_at: Instant,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..streams {
        let (s3, tally, source) = (session.sdk(i as usize).clone(), tally.clone(), source.clone());
        // On a size axis, the sweep's largest objects: the fewest requests per byte.
        let largest = plan.object_sizes().iter().max().copied();
        let (bucket, keys) = (bucket.to_string(), plan.keys_at(0, largest));
        let objects = u64::from(plan.object_count().min(keys.count()).max(1));
        session.transport().spawn(&mut tasks, i as usize, async move {
            while Instant::now() < stop_at && tally.bytes.load(Ordering::Relaxed) < settings.byte_budget {
                let n = tally.next.fetch_add(1, Ordering::Relaxed);
                let request = match &*source {
                    Source::Ranges { key, size } => {
                        let chunks = size.div_ceil(settings.range_bytes).max(1);
                        let first = (n % chunks) * settings.range_bytes;
                        let last = (first + settings.range_bytes).min(*size) - 1;
                        s3.get_object()
                            .bucket(&bucket)
                            .key(key)
                            .range(format!("bytes={first}-{last}"))
                    }
                    Source::Objects => s3.get_object().bucket(&bucket).key(keys.key((n % objects) as u32)),
                };
                tally.requests.fetch_add(1, Ordering::Relaxed);
                if read_body(request, &tally, stop_at).await.is_err() {
                    tally.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    tasks
}

/// One GET's body drained into the tally, stopping at `stop_at`.
async fn read_body(
    request: aws_sdk_s3::operation::get_object::builders::GetObjectFluentBuilder,
    tally: &Tally,
    stop_at: Instant,
) -> Result<(), ()> {
    let work = async {
        let output = request.send().await.map_err(|_| ())?;
        let mut body = output.body;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|_| ())?;
            tally.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    };
    match tokio::time::timeout_at(stop_at.into(), work).await {
        Ok(r) => r,
        // The budget ran out mid-body: what arrived is counted, nothing failed.
        Err(_) => Ok(()),
    }
}

/// MiB/s per interval until the budget is spent or every stream ended.
async fn sample(
    tally: &Tally,
    settings: ProbeSettings,
    start: Instant,
    stop_at: Instant,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Vec<f64> {
    let mut ticker = tokio::time::interval_at((start + settings.interval).into(), settings.interval);
    let (mut samples, mut last_bytes, mut last_at) = (Vec::new(), 0u64, start);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            joined = tasks.join_next() => if joined.is_none() { break } else { continue },
        }
        let now = Instant::now();
        let bytes = tally.bytes.load(Ordering::Relaxed);
        let dt = now.duration_since(last_at).as_secs_f64().max(1e-9);
        samples.push(bytes.saturating_sub(last_bytes) as f64 / MIB / dt);
        (last_bytes, last_at) = (bytes, now);
        if now >= stop_at || bytes >= settings.byte_budget {
            break;
        }
    }
    samples
}

/// The rate the probe settled at, its peak, and a burst before it settled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    pub sustained: f64,
    pub peak: f64,
    pub burst: Option<ProbeBurst>,
}

impl Shape {
    /// From per-interval rates: sustained is the median of the later half; a burst is
    /// the run of early intervals up to the last one above `BURST_FACTOR` x sustained
    /// (within the first half), reported when it averages above that too and spans at
    /// least two intervals.
    pub(crate) fn of(samples: &[f64], interval: Duration) -> Shape {
        let later = samples[samples.len() / 2..].to_vec();
        let sustained = median(later).unwrap_or(0.0);
        let peak = samples.iter().copied().fold(0.0, f64::max);
        let half = samples.len() / 2;
        let settle = samples[..half].iter().rposition(|&x| x > BURST_FACTOR * sustained);
        let burst = settle.and_then(|last| {
            let n = last + 1;
            let seconds = interval.as_secs_f64() * n as f64;
            let mib: f64 = samples[..n].iter().map(|x| x * interval.as_secs_f64()).sum();
            let rate = mib / seconds;
            (n >= 2 && rate > BURST_FACTOR * sustained).then(|| ProbeBurst {
                mib: round3(mib),
                mib_per_s: round3(rate),
                duration_ms: round3(seconds * 1000.0),
            })
        });
        Shape { sustained, peak, burst }
    }
}

impl Shape {
    /// Whether the rate's shape shows a network ceiling whatever the CPU did: a burst,
    /// then a settled rate (at least [`SETTLED_SHARE`] of the later half's intervals
    /// within [`SETTLED_SPREAD`] of the sustained rate). The same client on the same
    /// CPU moved at least `BURST_FACTOR` times faster first, so it could have moved
    /// more than the settled rate: a client bound by its CPU does not slow down after
    /// its first second and then hold a steady rate, a token bucket does. A client
    /// starved by other processes shows a scattered rate instead, and stays a lower
    /// bound.
    pub(crate) fn shows_the_network(&self, samples: &[f64]) -> bool {
        let later = &samples[samples.len() / 2..];
        if self.burst.is_none() || later.is_empty() || self.sustained <= 0.0 {
            return false;
        }
        let near = later
            .iter()
            .filter(|&&x| (x - self.sustained).abs() <= SETTLED_SPREAD * self.sustained)
            .count();
        near as f64 >= SETTLED_SHARE * later.len() as f64
    }
}

fn explain(r: &ProbeReport) -> String {
    let what = match r.kind {
        ProbeObjectKind::ProbeObject => format!("{} ranged GETs in flight on the probe object {}", r.streams, r.key),
        ProbeObjectKind::SweepObjects => format!(
            "{} GETs in flight on the sweep's own objects (no probe object; `seed --probe-object-mib` writes one)",
            r.streams
        ),
    };
    let burst = match r.burst {
        Some(b) => format!(
            "; a burst first: {:.1} MiB at {:.0} MiB/s for {:.0} ms before the rate settled",
            b.mib, b.mib_per_s, b.duration_ms
        ),
        None => String::new(),
    };
    let machine = r
        .machine_cores_busy
        .map_or(String::new(), |m| format!(", the machine's {m:.2} cores busy"));
    let bound = if r.lower_bound {
        format!(
            "; a lower bound only: CPU, not the network, may have set it (the client {:.2} of {:.2} usable cores busy{machine}), the network may allow more",
            r.cores_busy, r.usable_cores
        )
    } else {
        String::new()
    };
    format!(
        "{:.1} MiB/s sustained ({} MiB in {:.0} ms, {}, {}){burst}{bound}",
        r.sustained_mib_per_s,
        r.body_bytes >> 20,
        r.wall_ms,
        what,
        match r.stopped_by {
            ProbeStop::Done => "its reads done".to_string(),
            budget => format!("stopped by its {budget} budget"),
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Duration = Duration::from_millis(100);

    #[test]
    fn a_flat_rate_has_no_burst() {
        let s = Shape::of(&[38.0, 41.0, 40.0, 39.0, 40.0, 41.0, 40.0, 40.0], I);
        assert_eq!(s.sustained, 40.0);
        assert!(s.burst.is_none(), "{s:?}");
    }

    #[test]
    fn an_early_fast_run_is_a_burst() {
        let s = Shape::of(&[200.0, 200.0, 200.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0], I);
        assert_eq!(s.sustained, 40.0);
        let b = s.burst.unwrap();
        assert!(
            (b.mib - 60.0).abs() < 1e-6 && (b.mib_per_s - 200.0).abs() < 1e-6,
            "{b:?}"
        );
        assert_eq!(b.duration_ms, 300.0);
        // One fast interval is noise, not a burst.
        assert!(Shape::of(&[200.0, 40.0, 40.0, 40.0, 40.0, 40.0], I).burst.is_none());
    }

    /// A burst shows the network only when a settled rate follows it: a flat rate, or a
    /// burst followed by a scattered rate, does not.
    #[test]
    fn a_burst_then_a_settled_rate_shows_the_network() {
        // A token bucket: fast, then flat within 15%.
        let bucket = [200.0, 200.0, 200.0, 40.0, 42.0, 38.0, 41.0, 39.0, 40.0, 44.0];
        assert!(Shape::of(&bucket, I).shows_the_network(&bucket));
        // A flat rate (no burst) says nothing about what bound it.
        let flat = [40.0; 10];
        assert!(!Shape::of(&flat, I).shows_the_network(&flat));
        // A burst, then a scattered rate (a client starved by other processes): not settled.
        let starved = [200.0, 200.0, 200.0, 40.0, 12.0, 70.0, 40.0, 15.0, 66.0, 40.0];
        let s = Shape::of(&starved, I);
        assert!(s.burst.is_some(), "{s:?}");
        assert!(!s.shows_the_network(&starved));
    }
}

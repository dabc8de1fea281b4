//! One configuration: bucket x workers x repetition. Untimed warm-up requests first
//! (so connections are open), then exactly `workers` GETs kept in flight until every
//! object has been read once, each request recorded; then the row: counts, rates,
//! percentiles, CPU time, transport counters and the client side.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use tokio::sync::Semaphore;

use crate::model::histogram::encode_cdf;
use crate::model::stats::{cpu_ms_per_get, rates, round3};
use crate::model::{Breakdown, ChildMeasure, ClientMeasure, ClientSide, ConfigResult, Percentiles};
use crate::plan::Plan;
use crate::s3::get::get_one;
use crate::s3::SweepClient;
use crate::sys::cpu::UsableCpu;
use crate::sys::usage;
use crate::transport::{ColdProbe, COLD_PROBE};

use super::recorder::{runtime_busy, PhaseShard, Recorder};
use super::schedule::StartSchedule;
use super::Observer;

/// The order objects are read in one configuration.
fn key_order(plan: &Plan, workers: u32, repetition: u32) -> Vec<u32> {
    let mut order: Vec<u32> = plan.key_range().collect();
    if plan.shuffle() {
        let seed = plan.seed() ^ (u64::from(workers) << 32) ^ u64::from(repetition);
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    }
    order
}

/// Runs one configuration. With `stop_at` (the deadline less its safety margin) the
/// configuration is cut there: no GET starts after it, GETs still in flight are
/// cancelled, and the row covers the GETs that finished (`cut_short`). `None` when the
/// deadline came before the timed phase began (during the warm-up or the wait for a
/// shared start).
pub(crate) async fn run_config(
    client: &SweepClient,
    s3: &aws_sdk_s3::Client,
    plan: &Plan,
    (bucket, workers, repetition): (&str, u32, u32),
    schedule: Option<StartSchedule>,
    stop_at: Option<Instant>,
    observer: &Arc<dyn Observer>,
) -> Option<ConfigResult> {
    let order = Arc::new(key_order(plan, workers, repetition));
    let pool = Arc::new(Semaphore::new(plan.pool_connections() as usize));
    let whole_request = plan.attempt_timeout() * plan.max_attempts();
    let before_timed_phase = async {
        let warmup = if plan.warmup() {
            Some(warm_up(s3, plan, bucket, workers, &order, whole_request).await)
        } else {
            None
        };
        if let Some(at) = schedule.and_then(|c| c.start_at) {
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                tokio::time::sleep(wait).await;
            }
        }
        warmup
    };
    let warmup = until(stop_at, before_timed_phase).await?;
    let planned = order.len() as u64;
    observer.config_started(bucket, workers, repetition, planned);
    let recorder = Arc::new(Recorder::new((workers as usize).min(8)));
    let busy_before = runtime_busy();
    let next = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicU64::new(0));
    let counters_before = client.transport().counters();
    let cpu_before = usage::process_cpu_time();
    let machine_before = usage::machine_busy_time();
    let usable = UsableCpu::read();
    let start = Instant::now();
    let started_at = SystemTime::now();
    let mut tasks = tokio::task::JoinSet::new();
    let spawned = (workers as usize).min(order.len());
    for w in 0..spawned {
        let s3 = s3.clone();
        let bucket = bucket.to_string();
        let keys = plan.keys().clone();
        let order = order.clone();
        let next = next.clone();
        let pool = pool.clone();
        let recorder = recorder.clone();
        let observer = observer.clone();
        let probe = Arc::new(ColdProbe::default());
        let started = started.clone();
        tasks.spawn(COLD_PROBE.scope(probe.clone(), async move {
            loop {
                if stop_at.is_some_and(|s| Instant::now() >= s) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = order.get(i) else { break };
                let key = keys.key(index);
                let one = async {
                    let queued = Instant::now();
                    let permit = pool.acquire().await.expect("the pool semaphore is never closed");
                    let pool_wait = queued.elapsed();
                    started.fetch_add(1, Ordering::Relaxed);
                    let mut outcome = get_one(&s3, &bucket, &key, whole_request).await;
                    drop(permit);
                    outcome.pool_wait = pool_wait;
                    outcome
                };
                // At the deadline the GET in flight is dropped (cancelled), not counted.
                let Some(outcome) = until(stop_at, one).await else {
                    break;
                };
                recorder.record(w, &outcome, probe.take(), i == 0);
                observer.request_done(outcome.result.is_ok());
            }
        }));
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(err) = joined {
            tracing::error!(%err, "a sweep worker ended abnormally");
        }
    }
    let wall = start.elapsed();
    let cpu = usage::process_cpu_time().saturating_sub(cpu_before);
    let busy = match (busy_before, runtime_busy()) {
        (Some((a, _)), Some((b, n))) => (b.saturating_sub(a), n),
        _ => (Duration::ZERO, 1),
    };
    let counters = client.transport().counters().since(&counters_before);
    let (ttfb, ttlb, pool_wait, breakdown) = recorder.merged();
    let (errors, error_samples) = recorder.errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let ok = recorder.ok.load(Ordering::Relaxed);
    let bytes = recorder.bytes.load(Ordering::Relaxed);
    let requests = ok + errors.total;
    let requests_not_done = planned.saturating_sub(requests);
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cpu_ms = cpu.as_secs_f64() * 1000.0;
    let (objects_per_s, mib_per_s) = rates(ok, bytes, wall_s);
    let mut row = ConfigResult {
        bucket: bucket.to_string(),
        workers,
        repetition,
        pool_connections: plan.pool_connections(),
        requests,
        ok,
        errors,
        retries: counters.requests_sent.saturating_sub(started.load(Ordering::Relaxed)),
        throttled_responses: counters.throttled_responses,
        bytes,
        child: schedule.map(|_| ChildMeasure::new(started_at, wall, [&ttfb, &ttlb, &pool_wait])),
        ttlb_histogram_us: encode_cdf(&ttlb),
        wall_ms: round3(wall_s * 1000.0),
        objects_per_s,
        mib_per_s,
        ttfb_ms: Percentiles::from_histogram_us(&ttfb),
        ttlb_ms: Percentiles::from_histogram_us(&ttlb),
        pool_wait_ms: Percentiles::from_histogram_us(&pool_wait),
        cpu_ms: round3(cpu_ms),
        cpu_ms_per_get: cpu_ms_per_get(cpu_ms, requests),
        connections_opened: counters.connections_opened,
        connect_ms_total: round3(counters.connect_ns as f64 / 1e6),
        session_requests: counters.session_requests,
        cut_short: requests_not_done > 0,
        requests_not_done,
        tls_handshakes: counters.tls_handshakes,
        warmup,
        error_samples,
        breakdown: Some(breakdown),
        client: None,
        diagnosis: None,
        memory_mb: None,
        emulated: false,
    };
    row.client = Some(ClientSide::of(
        &row,
        ClientMeasure {
            runtime_busy: busy.0,
            runtime_worker_threads: busy.1,
            vcpus: usage::vcpus() as u32,
            peak_rss_bytes: usage::peak_rss_bytes(),
            usable_cores: usable.cores,
            cpu_source: usable.source.name(),
            machine_busy: match (machine_before, usage::machine_busy_time()) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
        },
    ));
    Some(row)
}

/// `work` to its end, or `None` when `stop_at` comes first (the work is dropped).
async fn until<T>(stop_at: Option<Instant>, work: impl std::future::Future<Output = T>) -> Option<T> {
    match stop_at {
        Some(at) => tokio::time::timeout_at(at.into(), work).await.ok(),
        None => Some(work.await),
    }
}

/// Untimed requests before a configuration so its connections (and S3 Express
/// session) are ready: `min(workers, pool_connections)` of them at once, twice. Returns
/// what they paid for, as a breakdown (connections, TCP and TLS times, sessions).
async fn warm_up(
    s3: &aws_sdk_s3::Client,
    plan: &Plan,
    bucket: &str,
    workers: u32,
    order: &[u32],
    limit: Duration,
) -> Breakdown {
    let n = (workers.min(plan.pool_connections()) as usize).min(order.len());
    let phases = Arc::new(Mutex::new(PhaseShard::new()));
    for _ in 0..2 {
        let mut set = tokio::task::JoinSet::new();
        for &index in order.iter().take(n) {
            let s3 = s3.clone();
            let bucket = bucket.to_string();
            let key = plan.keys().key(index);
            let phases = phases.clone();
            let probe = Arc::new(ColdProbe::default());
            set.spawn(COLD_PROBE.scope(probe.clone(), async move {
                let outcome = get_one(&s3, &bucket, &key, limit).await;
                let cold = probe.take();
                let mut phases = phases.lock().unwrap_or_else(|e| e.into_inner());
                phases.record(outcome.result.is_ok(), outcome.ttfb, outcome.ttlb, cold);
            }));
        }
        while set.join_next().await.is_some() {}
    }
    let phases = phases.lock().unwrap_or_else(|e| e.into_inner());
    phases.breakdown(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_a_seeded_permutation() {
        let plan = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 100}"#).unwrap();
        let a = key_order(&plan, 4, 1);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(a, key_order(&plan, 4, 1));
        assert_ne!(a, key_order(&plan, 8, 1));
        let plain = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 5, "shuffle": false}"#).unwrap();
        assert_eq!(key_order(&plain, 4, 1), vec![0, 1, 2, 3, 4]);
    }
}

//! One configuration: bucket x workers x repetition. Untimed warm-up requests first
//! (so connections are open), then exactly `workers` GETs kept in flight until every
//! object has been read once, each request recorded; then the row: counts, rates,
//! percentiles, CPU time, transport counters and the client side. Each driver reads
//! through its lane's reader of the session; with a hedge policy, each timed GET goes
//! through its driver's [`Hedger`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures_util::{Stream, StreamExt};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tokio::sync::Semaphore;

use crate::model::histogram::encode_cdf;
use crate::model::stats::{cpu_ms_per_get, rates, round3};
use crate::model::HedgeCounts;
use crate::model::{
    Axes, Breakdown, ChildMeasure, ClientMeasure, ClientSide, ConfigResult, Named, ObjectSize, Percentiles, SizeSpread,
    WireCounts,
};
use crate::plan::{Keys, Plan};
use crate::s3::get::Reader;
use crate::s3::SweepSession;
use crate::sys::cpu::UsableCpu;
use crate::sys::netdev::{Interfaces, RxSnapshot};
use crate::sys::usage;
use crate::transport::{share, Transport, TransportCounters};

use super::hedge::Hedger;
use super::order::Step;
use super::recorder::{runtime_busy, PhaseShard, Shard};
use super::schedule::StartSchedule;
use super::slot;
use super::timeline::{self, AttemptEvent, GetEvent, HedgeEvent, WireSampler};
use super::Observer;

/// The order objects are read in one configuration.
/// The indices are the plan's key range, within the keys there are (a listing that
/// found fewer keys than `object_count`, allowed by `allow_fewer_keys`).
fn key_order(plan: &Plan, keys: &Keys, workers: u32, repetition: u32) -> Vec<u32> {
    let range = plan.key_range();
    let mut order: Vec<u32> = (range.start..range.end.min(keys.count())).collect();
    if plan.shuffle() {
        let seed = plan.seed() ^ (u64::from(workers) << 32) ^ u64::from(repetition);
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    }
    order
}

/// The name progress shows for configuration `step`: its bucket and its values on the
/// axes the run has more than one value of (`standard-like lean hedge p95`), and a
/// memory sweep step's size (`512MB`), so no two configurations are shown alike.
pub(crate) fn progress_name(plan: &Plan, step: &Step) -> String {
    let mut name = plan.buckets()[step.bucket].clone();
    let memory = Named::of([Axes {
        memory_mb: step.axes.memory_mb,
        ..Axes::default()
    }]);
    for word in step.axes.short_words(plan.axis_values().swept().and(memory)) {
        name.push(' ');
        name.push_str(&word);
    }
    name
}

/// Runs one configuration. With `stop_at` (the deadline less its safety margin) the
/// configuration is cut there: no GET starts after it, GETs still in flight are
/// cancelled, and the row covers the GETs that finished (`cut_short`). `None` when the
/// deadline came before the timed phase began (during the warm-up or the wait for a
/// shared start).
pub(crate) async fn run_config(
    session: &SweepSession,
    plan: &Plan,
    step: &Step,
    schedule: Option<StartSchedule>,
    stop_at: Option<Instant>,
    observer: &Arc<dyn Observer>,
) -> Option<ConfigResult> {
    let (workers, repetition, size) = (step.workers, step.repetition, step.axes.object_size_bytes);
    let bucket = plan.buckets()[step.bucket].as_str();
    let keys = plan.keys_at(step.bucket, size);
    let order = Arc::new(key_order(plan, &keys, workers, repetition));
    let whole_request = plan.attempt_timeout() * plan.max_attempts();
    let drivers = Drivers::of(session, plan, step, order.len());
    let before_timed_phase = async {
        let warmup = if plan.warmup() {
            Some(warm_up(&drivers, (bucket, &keys), &order, whole_request).await)
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
    let name = progress_name(plan, step);
    observer.config_started(&name, workers, repetition, order.len() as u64);
    let before = Before::now(session);
    // Shared by the drivers: the next position in `order`.
    let next = Arc::new(AtomicUsize::new(0));
    let started_at = SystemTime::now();
    let start = Instant::now();
    let sampler = WireSampler::start(session.transport(), start);
    let mut tasks = tokio::task::JoinSet::new();
    for (d, part) in drivers.shares.iter().enumerate() {
        let driver = Driver {
            s3: part.reader.clone(),
            bucket: bucket.to_string(),
            keys: keys.clone(),
            order: order.clone(),
            next: next.clone(),
            pool: part.pool.clone(),
            hedger: part.hedger.clone(),
            observer: observer.clone(),
            limit: whole_request,
            start,
        };
        drivers
            .transport
            .spawn(&mut tasks, d, driver.run(part.in_flight, stop_at));
    }
    let mut recorded = joined(tasks).await;
    let events = std::mem::take(&mut recorded.events);
    let attempts = std::mem::take(&mut recorded.attempts);
    let hedges = std::mem::take(&mut recorded.hedges);
    let wire = sampler.finish().await;
    let timed = Timed {
        sizes: sizes_of(size, &order, &keys),
        recorded,
        wall: start.elapsed(),
        started_at,
        planned: order.len() as u64,
        warmup,
    };
    let wall = timed.wall;
    let mut row = measured_row(plan, (bucket, workers, repetition), schedule, before, timed);
    with_axes(&mut row, step, drivers.hedging());
    row.timeline = Some(timeline::build(&events, wall, &wire));
    observer.gets_done(&row, &events, &attempts, &hedges);
    Some(row)
}

/// The configuration's size on a size axis, or the listed sizes of its keys.
fn sizes_of(size: Option<u64>, order: &[u32], keys: &Keys) -> Option<ObjectSize> {
    match size {
        Some(n) => Some(ObjectSize::Fixed(n)),
        None => SizeSpread::of(order.iter().filter_map(|&i| keys.size_bytes(i)).collect()).map(ObjectSize::Spread),
    }
}

/// A configuration's drivers, one per lane of the session's transport (at most one per
/// worker and per object): each keeps its share of the `workers` GETs in flight on its
/// lane's thread, through its lane's reader and so its lane's connections, with as
/// many of the sweep's pool slots as its lane has connections, and hedges with its own
/// [`Hedger`]. A task per lane, not per GET: many GETs per task
/// wake the runtime far less often (in `make bench`, a task per worker cost about 40%
/// more CPU per GET), and each driver records into its own [`Shard`], without locks.
/// On a lane's thread, not the shared runtime: a GET's answer wakes its driver on the
/// thread that read it (docs/performance.md, "Lanes: a thread, runtime and pool per core").
struct Drivers {
    /// The session's transport: its lanes' threads run the drivers.
    transport: Transport,
    shares: Vec<DriverShare>,
}

/// One driver's share: its GETs in flight, its lane's slots of the pool, its lane's
/// reader and its hedging (`None`: the policy is off).
struct DriverShare {
    in_flight: usize,
    slots: usize,
    pool: Arc<Semaphore>,
    reader: Reader,
    hedger: Option<Arc<Hedger>>,
}

impl Drivers {
    fn of(session: &SweepSession, plan: &Plan, step: &Step, objects: usize) -> Drivers {
        let transport = session.transport().clone();
        let (workers, lanes) = (step.workers as usize, transport.lanes().len());
        // Without the lanes' threads, one driver on this runtime, with lane 0's share.
        let drivers = match transport.start() {
            true => lanes.min(workers.min(objects)).max(1),
            false => 1,
        };
        let pool = plan.pool_connections() as usize;
        let shares = (0..drivers)
            .map(|d| {
                let slots = share(pool, lanes, d);
                DriverShare {
                    in_flight: share(workers, drivers, d),
                    slots,
                    pool: Arc::new(Semaphore::new(slots)),
                    reader: session.reader(d, step.axes.s3_client),
                    hedger: Hedger::new(step.axes.hedge, plan.max_hedge_percent()).map(Arc::new),
                }
            })
            .collect();
        Drivers { transport, shares }
    }

    /// What the drivers' hedging did, added up (`None`: the policy is off).
    fn hedging(&self) -> Option<HedgeCounts> {
        let mut hedgers = self.shares.iter().filter_map(|s| s.hedger.as_deref()).peekable();
        hedgers.peek()?;
        Some(hedgers.fold(HedgeCounts::default(), |mut all, h| {
            all.add(&h.counts());
            all
        }))
    }
}

/// The row's point on the axes (the step's) and, when it hedged, what hedging did
/// (the hedges are not retries: the transport counts a retry where it sends one).
fn with_axes(row: &mut ConfigResult, step: &Step, hedging: Option<HedgeCounts>) {
    row.axes = row.axes.at_point(step.axes);
    row.hedging = hedging;
}

/// The drivers' shards, added into one as each driver ends.
async fn joined(mut tasks: tokio::task::JoinSet<Shard>) -> Shard {
    let mut recorded = Shard::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(shard) => recorded.add(shard),
            Err(err) => tracing::error!(%err, "a sweep driver ended abnormally"),
        }
    }
    recorded
}

/// What is read just before a configuration's timed phase, to take the differences
/// after it.
struct Before {
    /// The transport whose lanes the drivers run on: their busy time and its counters
    /// are read again after.
    transport: Transport,
    busy: Option<(Duration, u32)>,
    counters: TransportCounters,
    cpu: Duration,
    machine: Option<Duration>,
    usable: UsableCpu,
    /// The interfaces the configuration reads through, and what they had received.
    interfaces: Interfaces,
    rx: Option<RxSnapshot>,
}

impl Before {
    fn now(session: &SweepSession) -> Before {
        let interfaces = Interfaces::for_endpoint(session.client().endpoint());
        let transport = session.transport().clone();
        Before {
            busy: busy_of(&transport),
            counters: transport.counters(),
            transport,
            cpu: usage::process_cpu_time(),
            machine: usage::machine_busy_time(),
            usable: UsableCpu::read(),
            interfaces,
            rx: RxSnapshot::read(interfaces),
        }
    }
}

/// What a configuration's timed phase recorded.
struct Timed {
    recorded: Shard,
    wall: Duration,
    started_at: SystemTime,
    /// GETs the configuration was to make.
    planned: u64,
    warmup: Option<Breakdown>,
    /// The configuration's size on a size axis, or the listed sizes of its keys (a
    /// `key_prefix` sweep).
    sizes: Option<ObjectSize>,
}

/// What changed over a configuration, each read now less its value in `before`.
struct Since {
    /// The interfaces' receive counters (`None`: not readable here).
    rx: Option<RxSnapshot>,
    /// The process's CPU time.
    cpu: Duration,
    /// The runtime's busy time and its worker threads.
    busy: (Duration, u32),
    counters: TransportCounters,
}

/// The busy time of the threads the drivers run on, and their number: the transport's
/// lanes, or this runtime when they did not start.
fn busy_of(transport: &Transport) -> Option<(Duration, u32)> {
    transport.busy().or_else(runtime_busy)
}

fn since(before: &Before) -> Since {
    Since {
        rx: before
            .rx
            .as_ref()
            .and_then(|b| RxSnapshot::read(before.interfaces).map(|a| a.since(b))),
        cpu: usage::process_cpu_time().saturating_sub(before.cpu),
        busy: match (before.busy, busy_of(&before.transport)) {
            (Some((a, _)), Some((b, n))) => (b.saturating_sub(a), n),
            _ => (Duration::ZERO, 1),
        },
        counters: before.transport.counters().since(&before.counters),
    }
}

/// The row of one configuration: counts, rates, percentiles, CPU time, transport
/// counters (each the difference from `before`) and the client side.
fn measured_row(
    plan: &Plan,
    (bucket, workers, repetition): (&str, u32, u32),
    schedule: Option<StartSchedule>,
    before: Before,
    timed: Timed,
) -> ConfigResult {
    let Since {
        rx,
        cpu,
        busy,
        counters,
    } = since(&before);
    let breakdown = timed.recorded.breakdown();
    let Shard {
        ttfb_us: ttfb,
        ttlb_us: ttlb,
        pool_wait_us: pool_wait,
        errors,
        error_samples,
        ok,
        bytes,
        retry_causes,
        ..
    } = timed.recorded;
    let requests = ok + errors.total;
    let requests_not_done = timed.planned.saturating_sub(requests);
    let wall_s = timed.wall.as_secs_f64().max(1e-9);
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
        retries: counters.retries,
        retries_by_cause: retry_causes,
        throttled_responses: counters.throttled_responses,
        bytes,
        child: schedule.map(|_| ChildMeasure::new(timed.started_at, timed.wall, [&ttfb, &ttlb, &pool_wait])),
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
        warmup: timed.warmup,
        error_samples,
        breakdown: Some(breakdown),
        client: None,
        diagnosis: None,
        axes: Axes {
            object_size_bytes: timed.sizes,
            ..Axes::default()
        },
        emulated: false,
        wire: rx.map(|rx| wire_counts(&rx, timed.wall, bytes)),
        round: None,
        run_index: None,
        in_burst: false,
        timeline: None,
        hedging: None,
        overlap: None,
    };
    row.client = Some(ClientSide::of(&row, client_measure(&before, busy)));
    row
}

/// What the client side of a row is judged by: the runtime's busy time (`busy`: since
/// `before`, and its worker threads), the machine, the CPU the process may use.
fn client_measure(before: &Before, busy: (Duration, u32)) -> ClientMeasure {
    ClientMeasure {
        runtime_busy: busy.0,
        runtime_worker_threads: busy.1,
        vcpus: usage::vcpus() as u32,
        peak_rss_bytes: usage::peak_rss_bytes(),
        usable_cores: before.usable.cores,
        cpu_source: before.usable.source,
        machine_busy: match (before.machine, usage::machine_busy_time()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
    }
}

/// The row's wire block from what the interfaces received during `wall`.
fn wire_counts(rx: &RxSnapshot, wall: Duration, body_bytes: u64) -> WireCounts {
    WireCounts {
        interfaces: rx.interfaces.clone(),
        rx_bytes: rx.bytes,
        rx_packets: rx.packets,
        rx_mib_per_s: round3(rx.mib_per_s(wall)),
        wire_to_body_ratio: (body_bytes > 0).then(|| crate::model::stats::sig4(rx.bytes as f64 / body_bytes as f64)),
        other_traffic: false,
    }
}

/// One driver task of a configuration: what it needs to issue GETs.
struct Driver {
    s3: Reader,
    bucket: String,
    keys: Keys,
    order: Arc<Vec<u32>>,
    /// The next position in `order`, shared by the drivers.
    next: Arc<AtomicUsize>,
    /// The sweep's own pool of `pool_connections` slots.
    pool: Arc<Semaphore>,
    /// This driver's hedging (`None`: its policy is off).
    hedger: Option<Arc<Hedger>>,
    observer: Arc<dyn Observer>,
    limit: Duration,
    /// The start of the timed phase: the timeline's zero.
    start: Instant,
}

impl Driver {
    /// Keeps `in_flight` GETs going until every object has been taken (by any
    /// driver) or `stop_at` comes; GETs in flight at `stop_at` are dropped (cancelled),
    /// not counted.
    async fn run(self, in_flight: usize, stop_at: Option<Instant>) -> Shard {
        let mut shard = Shard::new();
        let positions = futures_util::stream::iter(std::iter::from_fn(|| {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            (i < self.order.len()).then_some(i)
        }));
        let this = &self;
        let gets = positions
            .map(|i| async move {
                let key = this.keys.key(this.order[i]);
                let queued = Instant::now();
                let permit = slot(&this.pool).await;
                let pool_wait = queued.elapsed();
                let sent = this.start.elapsed();
                let (mut outcome, copy) = match &this.hedger {
                    Some(h) => h.get(&this.s3, &this.bucket, &key, this.limit, &this.pool).await,
                    None => (this.s3.get_one(&this.bucket, &key, this.limit).await, None),
                };
                drop(permit);
                outcome.pool_wait = pool_wait;
                (i, sent, outcome, copy)
            })
            .buffer_unordered(in_flight.max(1));
        // GETs still in flight at `stop_at` are dropped (cancelled) with `gets`.
        drain(gets, stop_at, |(i, sent, outcome, copy)| {
            shard.record(&outcome, i == 0);
            shard
                .attempts
                .extend(AttemptEvent::of(shard.events.len(), sent, &outcome));
            shard
                .hedges
                .extend(copy.map(|c| HedgeEvent::of(shard.events.len(), sent, &c)));
            shard.events.push(GetEvent::of(sent, &outcome));
            self.observer.request_done(outcome.result.is_ok());
        })
        .await;
        shard
    }
}

/// Hands every item of `items` to `each` until they end or `stop_at` comes (the items
/// not yet taken are dropped with `items`).
///
/// Not a `select!` on the deadline and the next item: `select!` returns pending before
/// polling anything when the task has used its scheduling budget (tokio's cooperative
/// budget, 128 uses of timers, sockets and semaphores per poll), and a driver, which
/// polls its whole share of the GETs in one task, uses it up on every busy poll: each
/// GET it polls touches two or three timers. Yielding there kept GETs whose answers had
/// come waiting a millisecond and more for the driver's next turn: one driver lost
/// about a quarter of its throughput, and the wake-ups raised the CPU per GET
/// (docs/performance.md, "The driver's yield points"). A timeout around the loop polls
/// the items first.
async fn drain<S: Stream>(items: S, stop_at: Option<Instant>, mut each: impl FnMut(S::Item)) {
    let mut items = std::pin::pin!(items);
    until(stop_at, async {
        while let Some(item) = items.next().await {
            each(item);
        }
    })
    .await;
}

/// `work` to its end, or `None` when `stop_at` comes first (the work is dropped).
async fn until<T>(stop_at: Option<Instant>, work: impl std::future::Future<Output = T>) -> Option<T> {
    match stop_at {
        Some(at) => tokio::time::timeout_at(at.into(), work).await.ok(),
        None => Some(work.await),
    }
}

/// Untimed requests before a configuration so its connections (and S3 Express
/// session) are ready: `min(workers, pool_connections)` of them at once, twice; their
/// first bytes are the hedger's first (a percentile policy's warm-up). Returns what
/// they paid for, as a breakdown (connections, TCP and TLS times, sessions).
async fn warm_up(drivers: &Drivers, (bucket, keys): (&str, &Keys), order: &[u32], limit: Duration) -> Breakdown {
    let phases = Arc::new(Mutex::new(PhaseShard::new()));
    let mut set = tokio::task::JoinSet::new();
    let mut taken = 0;
    // Each lane opens its own connections: its driver's share, on its thread.
    for (d, part) in drivers.shares.iter().enumerate() {
        let n = part.in_flight.min(part.slots).min(order.len() - taken);
        let mine: Vec<String> = order[taken..taken + n].iter().map(|&i| keys.key(i)).collect();
        taken += n;
        let (s3, bucket, phases, hedger) = (
            part.reader.clone(),
            bucket.to_string(),
            phases.clone(),
            part.hedger.clone(),
        );
        drivers.transport.spawn(&mut set, d, async move {
            for _ in 0..2 {
                futures_util::future::join_all(mine.iter().map(|key| async {
                    let outcome = s3.get_one(&bucket, key, limit).await;
                    if let Some(h) = &hedger {
                        h.learn(&outcome);
                    }
                    phases.lock().unwrap_or_else(|e| e.into_inner()).record(&outcome);
                }))
                .await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    let phases = phases.lock().unwrap_or_else(|e| e.into_inner());
    phases.breakdown(None)
}

#[cfg(test)]
mod tests {
    use std::task::Poll;

    use super::*;

    /// Spends the current task's scheduling budget, as a driver's busy poll does.
    async fn spend_budget() {
        std::future::poll_fn(|cx| loop {
            match tokio::task::coop::poll_proceed(cx) {
                Poll::Ready(restore) => restore.made_progress(),
                Poll::Pending => return Poll::Ready(()),
            }
        })
        .await;
        assert!(!tokio::task::coop::has_budget_remaining());
    }

    /// Whether `work` is done on its first poll.
    async fn done_at_once<F: std::future::Future>(work: F) -> bool {
        let mut work = std::pin::pin!(work);
        std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx).is_ready())).await
    }

    #[tokio::test]
    async fn draining_takes_what_is_ready_when_the_budget_is_spent() {
        for stop_at in [None, Some(Instant::now() + Duration::from_secs(60))] {
            let taken = std::cell::Cell::new(0);
            spend_budget().await;
            let all = drain(futures_util::stream::iter(0..1000), stop_at, |_| {
                taken.set(taken.get() + 1)
            });
            assert!(done_at_once(all).await, "{stop_at:?}");
            assert_eq!(taken.get(), 1000);
        }
    }

    #[tokio::test]
    async fn draining_stops_at_the_deadline() {
        let taken = std::cell::Cell::new(0);
        let items = futures_util::stream::iter(0..3).chain(futures_util::stream::pending());
        drain(items, Some(Instant::now() + Duration::from_millis(20)), |_| {
            taken.set(taken.get() + 1)
        })
        .await;
        assert_eq!(taken.get(), 3);
    }

    #[tokio::test]
    async fn a_free_slot_is_taken_when_the_budget_is_spent() {
        let pool = Semaphore::new(1);
        spend_budget().await;
        assert!(done_at_once(slot(&pool)).await);
        // With none free, it waits.
        let held = pool.try_acquire().unwrap();
        assert!(!done_at_once(slot(&pool)).await);
        drop(held);
    }

    #[test]
    fn key_order_is_a_seeded_permutation() {
        let plan = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 100}"#).unwrap();
        let a = key_order(&plan, &plan.keys_of(0), 4, 1);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(a, key_order(&plan, &plan.keys_of(0), 4, 1));
        assert_ne!(a, key_order(&plan, &plan.keys_of(0), 8, 1));
        let plain = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 5, "shuffle": false}"#).unwrap();
        assert_eq!(key_order(&plain, &plain.keys_of(0), 4, 1), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn progress_names_the_client_and_hedge_when_the_run_has_several() {
        let one = Plan::from_json(r#"{"buckets": ["b-1"], "object_count": 10}"#).unwrap();
        let named = |plan: &Plan| -> Vec<String> {
            super::super::order::steps(plan)
                .iter()
                .map(|s| progress_name(plan, s))
                .collect()
        };
        assert!(named(&one).iter().all(|n| n == "b-1"));
        let mut step = super::super::order::steps(&one)[0];
        step.axes.memory_mb = Some(512);
        assert_eq!(
            progress_name(&one, &step),
            "b-1 512MB",
            "a memory sweep's step names its size"
        );
        let both = Plan::from_json(
            r#"{"buckets": ["b-1"], "workers": [1], "object_count": 10, "clients": ["sdk", "lean"], "hedge": ["off", "p95"]}"#,
        )
        .unwrap();
        assert_eq!(
            named(&both),
            [
                "b-1 sdk hedge off",
                "b-1 sdk hedge p95",
                "b-1 lean hedge off",
                "b-1 lean hedge p95"
            ]
        );
    }
}

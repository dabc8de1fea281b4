//! Synthetic sweeps whose truth is known, for the story court. Each [`Truth`] is a
//! model of what limits the reads; a case draws its latency, object size, worker
//! counts, repetitions and noise from a seed (SplitMix64: the same seed, the same
//! sweep) and builds the rows a real run would record under that truth: throughput,
//! Little's-law latencies, CPU time and runtime busy time, pool waits, throttled
//! answers, failed requests, body times. Nothing here calls the analysis: the court
//! runs the rows through it.

use std::time::Duration;

use crate::model::{
    Breakdown, ClientMeasure, ClientSide, ConfigResult, CpuSource, ErrorKind, Hedge, HedgeCounts, Percentiles,
    SweepResult, Timeline, Verdict,
};

/// What limits a synthetic sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Truth {
    /// Requests in flight over latency, nothing else near.
    Latency,
    /// The client's CPU under a quota of this many cores.
    ClientCpu(f64),
    /// The NIC's rate, with or without a burst allowance first.
    Nic { burst: bool },
    /// 503 SlowDown from a per-prefix request rate.
    Throttled,
    /// Requests failing (timeouts) past a load.
    Failing,
    /// Too few pooled connections for the workers.
    Pool,
    /// A ceiling nothing measured explains (the server's).
    Plateau,
    /// The machine's two cores used up by the client and a server beside it (as in
    /// `s3sweep local`, where the lab shares the machine).
    MachineCpu,
}

impl Truth {
    /// Every truth the court tries.
    pub(crate) const ALL: [Truth; 12] = [
        Truth::Latency,
        Truth::ClientCpu(0.25),
        Truth::ClientCpu(0.5),
        Truth::ClientCpu(1.0),
        Truth::ClientCpu(2.0),
        Truth::Nic { burst: false },
        Truth::Nic { burst: true },
        Truth::Throttled,
        Truth::Failing,
        Truth::Pool,
        Truth::Plateau,
        Truth::MachineCpu,
    ];

    /// The verdict the sweep's largest worker count should get.
    pub(crate) fn verdict(self) -> Verdict {
        match self {
            Truth::Latency => Verdict::Latency,
            Truth::ClientCpu(_) => Verdict::ClientCpu,
            Truth::Nic { .. } => Verdict::Bandwidth,
            Truth::Throttled => Verdict::Throttled,
            Truth::Failing => Verdict::Errors,
            Truth::Pool => Verdict::Pool,
            Truth::Plateau => Verdict::Plateau,
            Truth::MachineCpu => Verdict::MachineCpu,
        }
    }

    /// A short name for the court's tally.
    pub(crate) fn name(self) -> String {
        match self {
            Truth::ClientCpu(p) => format!("client_cpu at {p} cores"),
            Truth::Nic { burst: true } => "nic with a burst".into(),
            Truth::Nic { burst: false } => "nic".into(),
            other => other.verdict().name().to_string(),
        }
    }
}

/// SplitMix64: a small seeded generator (the same seed gives the same sweep).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    pub(crate) fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Objects read by each synthetic row.
const OBJECTS: u64 = 1000;

/// A body's time on a fast path (no NIC limit), ms.
const FAST_BODY_MS: f64 = 0.05;

/// The parameters of one case, drawn from its seed.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) truth: Truth,
    pub(crate) seed: u64,
    /// Latency of one request alone, ms.
    latency_ms: f64,
    object_bytes: f64,
    /// The limit's rate, objects/s (the truth's ceiling).
    ceiling: f64,
    pub(crate) counts: Vec<u32>,
    pub(crate) repetitions: u32,
    /// Pool connections under `Truth::Pool`.
    pool: u32,
    /// Whether an unhedged and a p95-hedged row run at each count.
    pub(crate) hedged: bool,
    /// The most objects/s the workers alone would allow (the last count's line).
    max_line: f64,
    /// Outside `Truth::ClientCpu`: the share of the two cores the client keeps busy at
    /// its fastest row (below the `client_cpu` rule's 85%).
    cpu_share_at_peak: f64,
}

impl Case {
    /// The case of `truth` drawn from `seed`.
    pub(crate) fn draw(truth: Truth, seed: u64) -> Case {
        let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(truth.name().len() as u64));
        let latency_ms = rng.range(5.0, 40.0);
        let object_bytes = rng.range(8_000.0, 256_000.0).round();
        // The limit binds from about `knee` workers: between 4 and 32.
        let knee = 2f64.powf(rng.range(2.0, 5.0));
        let ceiling = knee * 1000.0 / latency_ms;
        let last = (knee * rng.range(4.0, 12.0)).clamp(16.0, 512.0);
        let mut counts: Vec<u32> = vec![1];
        let mut w = 1u32;
        while f64::from(w) < last {
            w *= if rng.below(3) == 0 { 4 } else { 2 };
            counts.push(w);
        }
        let repetitions = if rng.below(3) == 0 { 3 } else { 1 };
        let pool = (knee.round() as u32).max(2);
        let hedged = truth == Truth::Latency && rng.below(3) == 0;
        let max_line = f64::from(w) * 1000.0 / latency_ms;
        let cpu_share_at_peak = rng.range(0.02, 0.8);
        Case {
            truth,
            seed,
            latency_ms,
            object_bytes,
            ceiling,
            counts,
            repetitions,
            pool,
            hedged,
            max_line,
            cpu_share_at_peak,
        }
    }

    /// The sweep this case's truth would record.
    pub(crate) fn sweep(&self) -> SweepResult {
        let mut rng = Rng::new(self.seed);
        let mut rows = Vec::new();
        for rep in 1..=self.repetitions {
            for &w in &self.counts {
                let noise = rng.range(0.97, 1.03);
                rows.push(self.row(w, rep, noise, Hedge::Off));
                if self.hedged {
                    let noise = rng.range(0.9, 1.1);
                    rows.push(self.row(w, rep, noise, Hedge::Percentile(95)));
                }
            }
        }
        let mut result = crate::model::test_rows::result(rows);
        result.request.seed = self.seed;
        if let Truth::ClientCpu(p) = self.truth {
            result.environment.usable_cores = Some(p);
            result.environment.cpu_source = Some(CpuSource::CgroupV2);
        }
        result
    }

    /// One row at `w` workers.
    fn row(&self, w: u32, rep: u32, noise: f64, hedge: Hedge) -> ConfigResult {
        let mut r = crate::model::test_rows::row("b", w, rep, 1.0, 0);
        r.round = (self.repetitions > 1).then_some(rep);
        r.axes.hedge = hedge;
        r.requests = OBJECTS;
        r.pool_connections = if self.truth == Truth::Pool { self.pool } else { w };
        let in_flight = f64::from(w.min(r.pool_connections));
        let line = in_flight * 1000.0 / self.latency_ms;
        let x = match self.truth {
            Truth::Latency => line,
            // A burst lets the first part of the row run faster: the row's mean is a
            // little over the settled ceiling.
            Truth::Nic { burst: true } => line.min(self.ceiling * 1.08),
            _ => line.min(self.ceiling),
        } * noise;
        let over = f64::from(w) * 1000.0 / self.latency_ms / self.ceiling;
        match self.truth {
            Truth::Throttled if over > 1.0 => {
                let slow = ((over - 1.0).min(1.0) * 0.05 + 0.01) * OBJECTS as f64;
                r.throttled_responses = slow as u64;
                r.retries = slow as u64;
                r.retries_by_cause.throttled = slow as u64;
            }
            Truth::Failing if over > 1.0 => {
                let failed = ((over - 1.0).min(1.0) * 0.08 + 0.02) * OBJECTS as f64;
                r.errors.add(ErrorKind::Timeout, failed as u64);
            }
            _ => {}
        }
        r.ok = OBJECTS - r.errors.total;
        r.objects_per_s = x;
        r.wall_ms = OBJECTS as f64 / x * 1000.0;
        r.bytes = (r.ok as f64 * self.object_bytes) as u64;
        r.mib_per_s = x * self.object_bytes / f64::from(1u32 << 20);
        // Little's law: what the requests in flight waited, each.
        let ttlb = in_flight / x * 1000.0;
        let body = match self.truth {
            // Frames of every body in flight share the link: a body takes its share
            // of it, the whole link alone, 1/in-flight of it when the link is full.
            Truth::Nic { .. } => 1000.0 / self.ceiling * (in_flight * (x / self.ceiling).min(1.0)).max(1.0),
            _ => FAST_BODY_MS,
        }
        .min(0.9 * ttlb);
        if self.truth == (Truth::Nic { burst: true }) && over > 1.0 {
            r.timeline = Some(burst_timeline(x, r.wall_ms, self.object_bytes));
        }
        r.ttlb_ms = pct(ttlb);
        r.ttfb_ms = pct(ttlb - body);
        if self.truth == Truth::Pool && w > self.pool {
            r.pool_wait_ms = pct(f64::from(w - self.pool) / x * 1000.0);
        }
        r.breakdown = Some(Breakdown {
            steady_ttfb_ms: pct(ttlb - body),
            steady_body_ms: pct(body),
            steady_ttlb_ms: pct(ttlb),
            steady_requests: OBJECTS,
            ..Breakdown::default()
        });
        self.cpu(&mut r, x);
        if !hedge.is_off() {
            r.hedging = Some(HedgeCounts {
                hedges_sent: OBJECTS / 20,
                hedges_won: OBJECTS / 50,
                ..HedgeCounts::default()
            });
        }
        r
    }

    /// The client's CPU: 0.05 ms per GET on two cores, or, under a quota, as much per
    /// GET as makes the quota the ceiling.
    fn cpu(&self, r: &mut ConfigResult, x: f64) {
        let (cores, ms_per_get) = match self.truth {
            Truth::ClientCpu(p) => (p, p * 1000.0 / self.ceiling),
            // The fastest row keeps `cpu_share_at_peak` of the two cores busy.
            Truth::Latency => (2.0, self.cpu_share_at_peak * 2000.0 / self.max_line),
            // The client's own share stays under a fifth of the cores: the server's
            // is the rest.
            Truth::MachineCpu => (2.0, self.cpu_share_at_peak.min(0.2) * 2000.0 / self.ceiling),
            _ => (2.0, self.cpu_share_at_peak * 2000.0 / self.max_line.min(self.ceiling)),
        };
        let busy = (x * ms_per_get / 1000.0).min(cores * 0.98);
        r.cpu_ms = busy * r.wall_ms;
        r.cpu_ms_per_get = r.cpu_ms / OBJECTS as f64;
        let mut runtime_share = (busy / cores).min(1.0);
        let mut machine_busy = None;
        if self.truth == Truth::MachineCpu {
            // Client and server together use 97% of the two cores at the ceiling; the
            // client's threads then have work they cannot run 80% of the time.
            let load = (x / self.ceiling).min(1.0);
            runtime_share = runtime_share.max(0.8 * load);
            let cores_busy = (1.94 * load).max(busy);
            machine_busy = Some(Duration::from_secs_f64(cores_busy * r.wall_ms / 1000.0));
        }
        r.client = Some(ClientSide::of(
            r,
            ClientMeasure {
                runtime_busy: Duration::from_secs_f64(runtime_share * 2.0 * r.wall_ms / 1000.0),
                runtime_worker_threads: 2,
                vcpus: 2,
                peak_rss_bytes: 1 << 24,
                usable_cores: if cores < 2.0 { cores } else { 0.0 },
                cpu_source: CpuSource::CgroupV2,
                machine_busy,
            },
        ));
    }
}

/// A row's timeline on a link with a burst allowance: the first 30% of its
/// intervals at 1.6x the settled rate, the rest settled, `x` objects/s over all.
fn burst_timeline(x: f64, wall_ms: f64, object_bytes: f64) -> Timeline {
    let intervals = ((wall_ms / 100.0).ceil() as usize).max(10);
    let burst = (intervals * 3).div_ceil(10);
    let settled = x * intervals as f64 / (1.6 * burst as f64 + (intervals - burst) as f64);
    let gets: Vec<u32> = (0..intervals)
        .map(|i| {
            let rate = if i < burst { 1.6 * settled } else { settled };
            (rate / 10.0).round() as u32
        })
        .collect();
    Timeline {
        interval_ms: 100,
        body_bytes: gets.iter().map(|&g| (f64::from(g) * object_bytes) as u64).collect(),
        ttfb_p50_ms: vec![1.0; intervals],
        ttfb_p99_ms: vec![2.0; intervals],
        in_flight: vec![4.0; intervals],
        gets,
        ..Timeline::default()
    }
}

/// Percentiles all at `mean`.
fn pct(mean: f64) -> Percentiles {
    Percentiles::all_at(mean, OBJECTS)
}

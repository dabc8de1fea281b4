//! The verdict rules of one configuration: an ordered list ([`RULES`]) of small named
//! rules, each checking its condition against the [`Thresholds`] and, when it holds,
//! giving the figures that decided it and a plain-words explanation; the first that
//! holds wins. Then the row's notes (cold requests, few objects per worker, idle
//! workers), also one function each. Reading rows against their bucket's curve
//! (plateau, queueing, delayed ACK) is in [`super::verdict`].

use super::link::{body_figures, by_ceiling, by_evidence, LinkFacts};
use crate::model::stats::round3;
use crate::model::{
    CeilingSource, ClientMeasure, ClientSide, ConfigResult, CpuSource, Diagnosis, Figure, FigureName as N, Thresholds,
    Verdict,
};

/// A `client_cpu` verdict whose cores busy are below this share of the CPU threshold
/// (with the runtime busy) is a client starved of CPU rather than one using it all.
pub(crate) const STARVED_SHARE: f64 = 0.5;

/// Fewer objects per worker than this and a configuration's tail decides its wall time.
pub(crate) const FEW_OBJECTS_PER_WORKER: f64 = 8.0;

fn cpu_source_words(source: CpuSource) -> &'static str {
    match source {
        CpuSource::LambdaMemory => "Lambda's CPU share for its memory",
        CpuSource::CgroupV2 | CpuSource::CgroupV1 | CpuSource::QuotaPerMemorySize => "the CPU quota",
        CpuSource::Affinity => "the CPU affinity mask",
        CpuSource::Cores => "the machine's cores",
    }
}

/// What the rules read of one row: the row, its client side, the thresholds and the
/// shares derived from them.
struct Facts<'a> {
    row: &'a ConfigResult,
    client: ClientSide,
    t: &'a Thresholds,
    /// Throttling is what S3 said (503 SlowDown / 429), retried or not; a retry after
    /// a timeout or a reset is not throttling.
    throttled: u64,
    throttled_share: f64,
    error_share: f64,
    latency_ms: f64,
    pool_wait_ms: f64,
    pool_share: f64,
    /// Cores the client can use (fractional under a CPU quota or a small Lambda).
    cores: f64,
    machine_cores: f64,
    machine_share: Option<f64>,
    cpu_share: f64,
    busy_share: f64,
    /// What the sweep's rows showed of a full link ([`super::network::link_evidence`]).
    link: LinkFacts,
}

impl<'a> Facts<'a> {
    fn of(row: &'a ConfigResult, vcpus: u32, t: &'a Thresholds) -> Facts<'a> {
        let requests = row.requests.max(1) as f64;
        let client = row.client.clone().unwrap_or_else(|| {
            ClientSide::of(
                row,
                ClientMeasure {
                    vcpus,
                    runtime_worker_threads: vcpus,
                    ..ClientMeasure::default()
                },
            )
        });
        let throttled = row.errors.throttled.max(row.throttled_responses);
        let latency_ms = row.ttlb_ms.mean;
        let pool_wait_ms = row.pool_wait_ms.mean;
        let pool_share = if pool_wait_ms + latency_ms > 0.0 {
            pool_wait_ms / (pool_wait_ms + latency_ms)
        } else {
            0.0
        };
        let cores = client.client_cores.max(0.01);
        let machine_cores = f64::from(client.vcpus.max(1));
        Facts {
            row,
            t,
            throttled,
            throttled_share: throttled as f64 / requests,
            error_share: row.errors.total as f64 / requests,
            latency_ms,
            pool_wait_ms,
            pool_share,
            cores,
            machine_cores,
            machine_share: client.machine_cores_busy.map(|b| b / machine_cores),
            cpu_share: client.cores_busy / cores,
            busy_share: client.runtime_busy_ratio,
            client,
            link: LinkFacts::default(),
        }
    }
}

/// What a rule that holds found: the figures it looked at (each with its unit) and
/// the explanation in plain words.
struct Finding {
    figures: Vec<(N, Figure)>,
    explanation: String,
}

/// One verdict rule: the verdict it gives and the check, which returns what it found
/// when the rule holds.
pub(crate) struct Rule {
    pub(crate) verdict: Verdict,
    check: fn(&Facts) -> Option<Finding>,
}

/// The verdict rules of one row, checked in this order; the first that holds wins
/// (the last always holds). docs/diagnosis.md lists them in the same order, then
/// [`CURVE_VERDICTS`] (a test keeps the two lists equal). Adding a rule is adding a
/// function and its line here.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        verdict: Verdict::Throttled,
        check: throttled,
    },
    Rule {
        verdict: Verdict::Errors,
        check: errors,
    },
    Rule {
        verdict: Verdict::Bandwidth,
        check: bandwidth,
    },
    Rule {
        verdict: Verdict::ClientCpu,
        check: client_cpu,
    },
    Rule {
        verdict: Verdict::MachineCpu,
        check: machine_cpu,
    },
    Rule {
        verdict: Verdict::Pool,
        check: pool,
    },
    Rule {
        verdict: Verdict::Latency,
        check: latency,
    },
];

/// Verdicts given afterwards, reading each row against its bucket's curve
/// ([`super::verdict::curve_verdicts`]), in the order the docs list them after [`RULES`].
#[cfg(test)]
pub(crate) const CURVE_VERDICTS: &[Verdict] = &[Verdict::Plateau];

/// `throttled`: 503 SlowDown / 429 answers (retried or not) are at least
/// `throttled_share` of requests, and at least one.
fn throttled(f: &Facts) -> Option<Finding> {
    let row = f.row;
    if f.throttled == 0 || f.throttled_share < f.t.throttled_share {
        return None;
    }
    let throttled = f.throttled;
    let retried = throttled.saturating_sub(row.errors.throttled).min(row.retries);
    Some(Finding {
        figures: vec![
            (N::ThrottledResponses, Figure::Count(throttled)),
            (N::ThrottledRequests, Figure::Count(row.errors.throttled)),
            (N::Retries, Figure::Count(row.retries)),
            (N::RetriesAfterThrottling, Figure::Count(retried)),
            (N::ThrottledShare, Figure::Ratio(f.throttled_share)),
        ],
        explanation: format!(
            "S3 pushed back: {throttled} throttled answers (503 SlowDown / 429) in {} requests, {} of them final, {retried} of the {} retries after throttling; more workers will not help until it scales (spread keys over prefixes, ramp up slowly)",
            row.requests, row.errors.throttled, row.retries
        ),
    })
}

/// `errors`: failed requests are at least `error_share` of requests.
fn errors(f: &Facts) -> Option<Finding> {
    let row = f.row;
    if row.errors.total == 0 || f.error_share < f.t.error_share {
        return None;
    }
    Some(Finding {
        figures: vec![
            (N::Errors, Figure::Count(row.errors.total)),
            (N::ErrorShare, Figure::Ratio(f.error_share)),
        ],
        explanation: format!(
            "{} of {} requests failed ({}): the timings describe failures, fix them first",
            row.errors.total,
            row.requests,
            row.errors.short()
        ),
    })
}

/// `bandwidth`: a bandwidth ceiling is known and MiB/s is at least `bandwidth_share`
/// of it. A ceiling read from the sweep's own rows (source `sweep`) judges only the
/// rows that showed the evidence themselves (their bodies' time grew, with CPU to
/// spare: [`super::network::link_evidence`]). No line says a row ran above 100% of a
/// ceiling: a row on burst credit is said to be above it, and a ceiling a row beat is
/// revised up before the rules run ([`super::network::revise_ceiling`]).
fn bandwidth(f: &Facts) -> Option<Finding> {
    let row = f.row;
    // Issue 50: another invocation of the same process ran beside the row (Lambda
    // Managed Instances): the link carried its traffic too, so a full link is not this
    // sweep's network limit; the other rules judge the row, and a note says so.
    if row.overlap.as_ref().is_some_and(|o| o.shared()) {
        return None;
    }
    let source = f.t.bandwidth_ceiling_source;
    // A ceiling read from the row's own timeline is only the network's when the client
    // kept up: a client out of CPU bends its rate too (under a CPU quota, a row's first
    // few hundred ms ran at 1.7x its rest), so then `client_cpu` judges the row.
    if source == Some(CeilingSource::Timeline) && cpu_used_up(f) {
        return None;
    }
    if source == Some(CeilingSource::Sweep) && f.link.body.is_none() {
        return None;
    }
    let ceiling =
        f.t.bandwidth_ceiling_mib_per_s
            .filter(|c| row.mib_per_s >= f.t.bandwidth_share * c)?;
    let mut figures = vec![
        (N::MibPerS, Figure::MibPerS(row.mib_per_s)),
        (N::BandwidthCeilingMibPerS, Figure::MibPerS(ceiling)),
    ];
    let explanation = match f.link.body {
        Some(body) if source == Some(CeilingSource::Sweep) => {
            figures.extend(body_figures(&body));
            if let Some([lo, hi]) = f.link.interval {
                figures.push((N::BandwidthCeilingLowMibPerS, Figure::MibPerS(lo)));
                figures.push((N::BandwidthCeilingHighMibPerS, Figure::MibPerS(hi)));
            }
            by_evidence(row, &body, ceiling, f.link.interval, (f.client.cores_busy, f.cores))
        }
        _ => by_ceiling(row, ceiling, f.t.bandwidth_ceiling_source, f.link.revised_from),
    };
    Some(Finding { figures, explanation })
}

/// The client's CPU was used up: its CPU time over the wall time, or its runtime's
/// busy share, reached `cpu_busy_share` of the cores it can use.
fn cpu_used_up(f: &Facts) -> bool {
    f.cpu_share >= f.t.cpu_busy_share || f.busy_share >= f.t.cpu_busy_share
}

/// The machine's CPU was used up and the client shows it (`machine_cpu`'s test): its
/// share of the machine's cores busy, when it was.
fn machine_used_up(f: &Facts) -> Option<f64> {
    f.machine_share
        .filter(|m| *m >= f.t.cpu_busy_share && (f.busy_share >= 0.5 || f.client.in_flight_ratio < 0.7))
}

/// The row's client had CPU to spare: neither `client_cpu`'s test nor `machine_cpu`'s
/// holds, so a body that took longer was not the client reading it late.
pub(crate) fn cpu_spare(row: &ConfigResult, vcpus: u32, t: &Thresholds) -> bool {
    let f = Facts::of(row, vcpus, t);
    !cpu_used_up(&f) && machine_used_up(&f).is_none()
}

/// `client_cpu`: process CPU time / wall time is at least `cpu_busy_share` of the
/// cores the client can use, or the runtime's threads were busy at least that share
/// of the wall time (then, with few cores busy, the client is starved of CPU; starved
/// on a machine whose CPU is used up, the row is left to `machine_cpu`).
fn client_cpu(f: &Facts) -> Option<Finding> {
    let (row, client, cores, busy_share) = (f.row, &f.client, f.cores, f.busy_share);
    if !cpu_used_up(f) {
        return None;
    }
    let starved = f.cpu_share < STARVED_SHARE * f.t.cpu_busy_share;
    // Starved on a machine whose CPU is used up: other load took it, `machine_cpu`.
    if starved && f.machine_share.is_some_and(|m| m >= f.t.cpu_busy_share) {
        return None;
    }
    let explanation = if starved {
        format!(
            "the client's threads always had work (runtime busy {:.0}% of the time) but ran on only {:.2} of {:.2} usable cores: it is starved of CPU, its threads kept waiting to run (a CPU quota's throttling, or the scheduler), {:.3} ms CPU per GET; more workers or lower latency will not help, more CPU will",
            100.0 * busy_share,
            client.cores_busy,
            cores,
            row.cpu_ms_per_get
        )
    } else {
        format!(
            "the client's CPU sets the pace: {:.2} cores busy of {:.2} usable ({}), runtime threads busy {:.0}% of the time, {:.3} ms CPU per GET; lower latency or more workers will not help, more CPU (a larger Lambda) or a cheaper client will",
            client.cores_busy,
            cores,
            cpu_source_words(client.cpu_source),
            100.0 * busy_share,
            row.cpu_ms_per_get
        )
    };
    Some(Finding {
        figures: vec![
            (N::CoresBusy, Figure::Cores(client.cores_busy)),
            (N::ClientCores, Figure::Cores(cores)),
            (N::RuntimeBusyRatio, Figure::Ratio(busy_share)),
            (N::CpuMsPerGet, Figure::CpuMsPerGet(row.cpu_ms_per_get)),
            (N::ObjectsPerS, Figure::ObjectsPerS(row.objects_per_s)),
            (N::Starved, Figure::Flag(starved)),
        ],
        explanation,
    })
}

/// `machine_cpu`: the machine's busy CPU is at least `cpu_busy_share` of its cores
/// and the client shows it: its threads had work they could not run (busy half the
/// time or more), or its workers sat between requests.
fn machine_cpu(f: &Facts) -> Option<Finding> {
    let client = &f.client;
    let share = machine_used_up(f)?;
    let busy = client.machine_cores_busy.unwrap_or(0.0);
    let machine_cores = f.machine_cores;
    Some(Finding {
        figures: vec![
            (N::MachineCoresBusy, Figure::Cores(busy)),
            (N::MachineCores, Figure::Cores(machine_cores)),
            (N::MachineBusyShare, Figure::Ratio(share)),
            (N::CoresBusy, Figure::Cores(client.cores_busy)),
        ],
        explanation: format!(
            "the machine's CPU is used up: {busy:.2} of {machine_cores:.0} cores busy, {:.2} of them this client's: the rest is other load on the machine (in `s3sweep local`, the embedded server), so the client cannot go faster here; measure where the server runs elsewhere",
            client.cores_busy
        ),
    })
}

/// `pool`: the mean wait for a pooled connection is at least `pool_wait_share` of a
/// request's mean total time (pool wait + time to last byte).
fn pool(f: &Facts) -> Option<Finding> {
    let row = f.row;
    if f.pool_share < f.t.pool_wait_share {
        return None;
    }
    Some(Finding {
        figures: vec![
            (N::PoolWaitMsMean, Figure::Ms(f.pool_wait_ms)),
            (N::TtlbMsMean, Figure::Ms(f.latency_ms)),
            (N::PoolWaitShare, Figure::Ratio(f.pool_share)),
            (N::Workers, Figure::Count(u64::from(row.workers))),
            (N::PoolConnections, Figure::Count(u64::from(row.pool_connections))),
        ],
        explanation: format!(
            "requests waited {:.1} ms on average for one of {} connections ({:.0}% of their time) with {} workers: raise pool_connections to the worker count",
            f.pool_wait_ms,
            row.pool_connections,
            100.0 * f.pool_share,
            row.workers
        ),
    })
}

/// `latency`: otherwise. Throughput is what the requests in flight allow.
fn latency(f: &Facts) -> Option<Finding> {
    let (row, client) = (f.row, &f.client);
    Some(Finding {
        figures: vec![
            (N::MeanInFlight, Figure::Requests(client.mean_in_flight)),
            (N::TtlbMsMean, Figure::Ms(f.latency_ms)),
            (N::ObjectsPerS, Figure::ObjectsPerS(row.objects_per_s)),
            (N::CoresBusy, Figure::Cores(client.cores_busy)),
            (N::ClientCores, Figure::Cores(f.cores)),
        ],
        explanation: format!(
            "{:.1} requests in flight at {:.2} ms each give {:.0} objects/s; the client had CPU to spare ({:.2} of {:.2} usable cores busy)",
            client.mean_in_flight, f.latency_ms, row.objects_per_s, client.cores_busy, f.cores
        ),
    })
}

/// The notes of one row given its verdict, in the order written.
const NOTES: &[fn(&Facts, Verdict) -> Option<String>] = &[cold_note, few_objects_note, idle_workers_note, overlap_note];

/// Another invocation of the same process ran beside the row (Lambda Managed
/// Instances): its figures are the two sweeps together.
fn overlap_note(f: &Facts, _: Verdict) -> Option<String> {
    let o = f.row.overlap.as_ref().filter(|o| o.other_invocations > 0)?;
    Some(format!(
        "{} other invocation(s) of this execution environment ran beside this row for {:.0}% of its wall time, sharing its CPU and network interface: its MiB/s and latency are the sweeps together, so the network is not blamed for the neighbours' traffic; measure alone (PerExecutionEnvironmentMaxConcurrency 1, or one invocation at a time) for this sweep's own figures",
        o.other_invocations,
        o.overlapped_fraction * 100.0
    ))
}

/// Cold requests, left out of the steady figures.
fn cold_note(f: &Facts, _: Verdict) -> Option<String> {
    let b = f.row.breakdown.as_ref().filter(|b| b.cold_requests > 0)?;
    Some(format!(
        "{} cold request(s) ({} new connection(s), connect p50 {:.2} ms, {} CreateSession) took p50 {:.2} ms to last byte vs {:.2} ms steady; they are left out of the steady figures",
        b.cold_requests,
        b.connections_opened,
        b.connect_ms.p50,
        b.session_requests,
        b.cold_ttlb_ms.p50,
        b.steady_ttlb_ms.p50
    ))
}

/// Fewer than [`FEW_OBJECTS_PER_WORKER`] objects per worker: the tail decides.
fn few_objects_note(f: &Facts, _: Verdict) -> Option<String> {
    let row = f.row;
    let per_worker = row.requests as f64 / f64::from(row.workers.min(row.pool_connections).max(1));
    (row.workers > 1 && per_worker < FEW_OBJECTS_PER_WORKER).then(|| format!(
        "only {per_worker:.1} objects per worker: the slowest requests decide the wall time, so the figures are noisy; read more objects (at least {FEW_OBJECTS_PER_WORKER:.0} per worker)"
    ))
}

/// Workers idle between requests (not said of a `pool` row: the pool explains it).
fn idle_workers_note(f: &Facts, verdict: Verdict) -> Option<String> {
    let (row, client) = (f.row, &f.client);
    (verdict != Verdict::Pool && client.in_flight_ratio < 0.7 && row.workers > 1 && row.ok > 0).then(|| format!(
        "only {:.1} of {:.1} possible requests were in flight on average: the workers spent the rest between requests (client work, scheduling) or waiting for the slowest to finish",
        client.mean_in_flight,
        row.possible_in_flight()
    ))
}

/// The verdict of one row: the first of [`RULES`] that holds, then the [`NOTES`].
/// Uses `row.client` when the engine measured it; without it the CPU rule can only
/// look at `cpu_ms` and `vcpus`.
#[cfg(test)]
pub(crate) fn diagnose_row(row: &ConfigResult, vcpus: u32, t: &Thresholds) -> Diagnosis {
    diagnose_row_with(row, vcpus, t, LinkFacts::default())
}

/// [`diagnose_row`] with what the sweep's rows showed of the link ([`LinkFacts`]: the
/// row's own evidence of a full link, the ceiling's interval and what it was revised
/// up from).
pub(crate) fn diagnose_row_with(row: &ConfigResult, vcpus: u32, t: &Thresholds, link: LinkFacts) -> Diagnosis {
    let facts = Facts {
        link,
        ..Facts::of(row, vcpus, t)
    };
    let (verdict, finding) = RULES
        .iter()
        .find_map(|rule| (rule.check)(&facts).map(|found| (rule.verdict, found)))
        .expect("the last rule always holds");
    let mut diagnosis = Diagnosis {
        verdict,
        figures: Default::default(),
        explanation: finding.explanation,
        notes: NOTES.iter().filter_map(|note| note(&facts, verdict)).collect(),
    };
    for (name, value) in finding.figures {
        diagnosis.set_figure(name, value.map(round3));
    }
    diagnosis
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::test_rows::row;
    use crate::model::{Breakdown, ErrorKind, Percentiles};
    use std::time::Duration;

    pub(in crate::analysis) fn pct(mean: f64) -> Percentiles {
        Percentiles::all_at(mean, 100)
    }

    /// A healthy row: 100 requests, 10 workers, 10 ms each, 1000 objects/s.
    pub(in crate::analysis) fn healthy() -> ConfigResult {
        let mut r = row("b", 10, 1, 100.0, 0);
        r.pool_connections = 10;
        r.ttlb_ms = pct(10.0);
        r.ttfb_ms = pct(9.0);
        r.cpu_ms = 20.0;
        r.cpu_ms_per_get = 0.2;
        r.client = Some(ClientSide::of(
            &r,
            ClientMeasure {
                runtime_busy: Duration::from_millis(40),
                runtime_worker_threads: 2,
                vcpus: 2,
                peak_rss_bytes: 1 << 20,
                ..ClientMeasure::default()
            },
        ));
        r
    }

    /// The verdict names of the rule table in docs/diagnosis.md, in order.
    fn documented_rules(docs: &str) -> Vec<String> {
        documented_names(docs, "The rules, checked in this order")
    }

    /// The names in the first column (`` | `name` | ``) of the first table after
    /// `heading` in `docs`, in order.
    pub(in crate::analysis) fn documented_names(docs: &str, heading: &str) -> Vec<String> {
        let table = docs
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("docs/diagnosis.md has the table after {heading:?}"));
        table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_docs_list_the_rules_in_their_order_and_every_verdict_once() {
        let coded: Vec<String> = RULES
            .iter()
            .map(|r| r.verdict)
            .chain(CURVE_VERDICTS.iter().copied())
            .map(|v| v.name().to_string())
            .collect();
        assert_eq!(documented_rules(include_str!("../../../../docs/diagnosis.md")), coded);
        let mut sorted = coded.clone();
        sorted.sort();
        let mut all: Vec<String> = Verdict::ALL.iter().map(|v| v.name().to_string()).collect();
        all.sort();
        assert_eq!(sorted, all, "every verdict has exactly one rule");
        // The reader of the table sees a change of order.
        let swapped = include_str!("../../../../docs/diagnosis.md").replace("| `errors` |", "| `errors2` |");
        assert_ne!(documented_rules(&swapped), coded);
    }

    #[test]
    fn a_diagnosis_reads_back_equal_to_the_one_written() {
        // `ttlb_ms_mean` is milliseconds, written to three decimals: 18.382, not 18.3824.
        let mut r = healthy();
        r.ttlb_ms = pct(18.382_4);
        let d = diagnose_row(&r, 2, &Thresholds::default());
        assert_eq!(d.figures[N::TtlbMsMean], Figure::Ms(18.382), "{d:?}");
        let back: Diagnosis = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn the_last_rule_always_holds() {
        let last = RULES.last().unwrap();
        let mut r = healthy();
        r.requests = 0;
        r.ok = 0;
        r.client = None;
        let t = Thresholds::default();
        assert!((last.check)(&Facts::of(&r, 0, &t)).is_some());
    }

    #[test]
    fn client_side_uses_littles_law() {
        let c = healthy().client.unwrap();
        assert_eq!(c.mean_in_flight, 10.0);
        assert_eq!(c.in_flight_ratio, 1.0);
        assert_eq!(c.cores_busy, 0.2);
        assert_eq!(c.runtime_busy_ratio, 0.2);
        assert_eq!(c.client_cores, 2.0);
    }

    #[test]
    fn latency_verdict_on_a_healthy_row() {
        let d = diagnose_row(&healthy(), 2, &Thresholds::default());
        assert_eq!(d.verdict, Verdict::Latency, "{d:?}");
        assert_eq!(d.figures[N::MeanInFlight], Figure::Requests(10.0));
        assert!(d.explanation.contains("in flight"), "{}", d.explanation);
    }

    #[test]
    fn throttled_beats_errors_and_needs_its_share() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.errors.add(ErrorKind::Throttled, 3);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
        // A 503 that a retry got past is throttling too.
        let mut r = healthy();
        r.retries = 1;
        r.throttled_responses = 1;
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Throttled);
        assert_eq!(d.figures[N::RetriesAfterThrottling], Figure::Count(1));
        // A retry after a timeout or a reset is not.
        let mut r = healthy();
        r.retries = 5;
        assert_ne!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
        // One throttle in 1,000 requests is below 0.5%.
        let mut r = healthy();
        r.requests = 1000;
        r.throttled_responses = 1;
        assert_ne!(diagnose_row(&r, 2, &t).verdict, Verdict::Throttled);
    }

    #[test]
    fn errors_verdict_at_one_percent() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.errors.add(ErrorKind::NotFound, 1);
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Errors);
        assert!(d.explanation.contains("not_found=1"), "{}", d.explanation);
        let mut r = healthy();
        r.requests = 1000;
        r.errors.add(ErrorKind::Timeout, 9);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn bandwidth_only_with_a_ceiling() {
        let mut r = healthy();
        r.mib_per_s = 90.0;
        assert_eq!(diagnose_row(&r, 2, &Thresholds::default()).verdict, Verdict::Latency);
        let t = Thresholds {
            bandwidth_ceiling_mib_per_s: Some(100.0),
            ..Thresholds::default()
        };
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Bandwidth);
        assert_eq!(d.figures[N::BandwidthCeilingMibPerS], Figure::MibPerS(100.0));
        r.mib_per_s = 70.0;
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    /// Issue 50: a row another invocation of the process ran beside is not blamed on
    /// the network (the link carried the neighbour's traffic too), and says why.
    #[test]
    fn a_neighbours_traffic_is_not_blamed_on_the_network() {
        let mut r = healthy();
        r.mib_per_s = 90.0;
        let t = Thresholds {
            bandwidth_ceiling_mib_per_s: Some(100.0),
            ..Thresholds::default()
        };
        let overlap = |others, fraction| crate::model::Overlap {
            other_invocations: others,
            overlapped_fraction: fraction,
        };
        r.overlap = Some(overlap(0, 0.0));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Bandwidth, "alone");
        r.overlap = Some(overlap(1, 0.05));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Bandwidth, "a moment");
        r.overlap = Some(overlap(1, 0.8));
        let d = diagnose_row(&r, 2, &t);
        assert_ne!(d.verdict, Verdict::Bandwidth, "{d:?}");
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("1 other invocation(s)") && n.contains("80%")),
            "{:?}",
            d.notes
        );
    }

    /// What the client measured on a 2-vCPU machine: the runtime busy `busy_ms` on `threads` threads.
    pub(in crate::analysis) fn on_two_vcpus(busy_ms: u64, threads: u32) -> ClientMeasure {
        ClientMeasure {
            runtime_busy: Duration::from_millis(busy_ms),
            runtime_worker_threads: threads,
            vcpus: 2,
            peak_rss_bytes: 0,
            ..ClientMeasure::default()
        }
    }

    #[test]
    fn a_ceiling_from_the_rows_own_timeline_does_not_judge_a_client_out_of_cpu() {
        // 1.8 cores of 2 busy, at 90 MiB/s: under a given ceiling of 100 the network
        // binds; under the same figure read from the row's own timeline the client does.
        let mut r = healthy();
        r.mib_per_s = 90.0;
        r.cpu_ms = 180.0;
        r.client = Some(ClientSide::of(&r, on_two_vcpus(40, 2)));
        let given = Thresholds {
            bandwidth_ceiling_mib_per_s: Some(100.0),
            ..Thresholds::default()
        };
        assert_eq!(diagnose_row(&r, 2, &given).verdict, Verdict::Bandwidth);
        let timeline = Thresholds {
            bandwidth_ceiling_source: Some(CeilingSource::Timeline),
            ..given
        };
        assert_eq!(diagnose_row(&r, 2, &timeline).verdict, Verdict::ClientCpu);
        // A client with CPU to spare keeps the timeline's ceiling.
        r.cpu_ms = 20.0;
        r.client = Some(ClientSide::of(&r, on_two_vcpus(10, 2)));
        assert_eq!(diagnose_row(&r, 2, &timeline).verdict, Verdict::Bandwidth);
    }

    #[test]
    fn client_cpu_by_cores_or_by_runtime() {
        let t = Thresholds::default();
        let mut r = healthy();
        // 1.8 cores of 2 usable.
        r.cpu_ms = 180.0;
        r.client = Some(ClientSide::of(&r, on_two_vcpus(40, 2)));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::ClientCpu);
        // One runtime thread busy 90% of the time, process CPU low.
        let mut r = healthy();
        r.client = Some(ClientSide::of(&r, on_two_vcpus(90, 1)));
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::ClientCpu, "{d:?}");
        assert_eq!(d.figures[N::RuntimeBusyRatio], Figure::Ratio(0.9));
        // 0.2 cores busy of 1 usable while the runtime had work: starved.
        assert_eq!(d.figures[N::Starved], Figure::Flag(true));
        assert!(d.explanation.contains("starved"), "{}", d.explanation);
        // Other processes are `machine_cpu`'s meaning, not this one's.
        assert!(!d.explanation.contains("other processes"), "{}", d.explanation);
        // Starved while the machine's CPU is used up: other load took it.
        let mut busy_machine = on_two_vcpus(90, 1);
        busy_machine.machine_busy = Some(Duration::from_millis(190));
        r.client = Some(ClientSide::of(&r, busy_machine));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::MachineCpu);
        // 80% is below the threshold.
        let mut r = healthy();
        r.client = Some(ClientSide::of(&r, on_two_vcpus(80, 1)));
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn pool_when_the_wait_dominates() {
        let t = Thresholds::default();
        let mut r = healthy();
        r.workers = 40;
        r.pool_wait_ms = pct(30.0);
        let d = diagnose_row(&r, 2, &t);
        assert_eq!(d.verdict, Verdict::Pool, "{d:?}");
        assert_eq!(d.figures[N::PoolWaitShare], Figure::Ratio(0.75));
        r.pool_wait_ms = pct(2.0);
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    #[test]
    fn cold_requests_and_few_objects_per_worker_are_noted() {
        let mut r = healthy();
        r.breakdown = Some(Breakdown {
            steady_ttlb_ms: pct(42.0),
            cold_requests: 1,
            connections_opened: 1,
            cold_ttlb_ms: pct(44.0),
            ..Breakdown::default()
        });
        let d = diagnose_row(&r, 2, &Thresholds::default());
        assert!(d.notes.iter().any(|n| n.contains("cold request")), "{:?}", d.notes);
        assert!(
            !d.notes.iter().any(|n| n.contains("objects per worker")),
            "10 per worker: {:?}",
            d.notes
        );
        r.workers = 40;
        r.pool_connections = 40;
        let d = diagnose_row(&r, 2, &Thresholds::default());
        assert!(
            d.notes.iter().any(|n| n.contains("2.5 objects per worker")),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn thresholds_are_validated() {
        assert!(Thresholds::default().validate().is_ok());
        let err = Thresholds {
            error_share: 0.0,
            cpu_busy_share: 2.0,
            bandwidth_ceiling_mib_per_s: Some(-1.0),
            ..Thresholds::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        for field in ["error_share", "cpu_busy_share", "bandwidth_ceiling_mib_per_s"] {
            assert!(err.contains(field), "{err}");
        }
    }

    #[test]
    fn possible_in_flight_counts_the_last_round() {
        let mut r = row("b", 32, 1, 100.0, 0);
        r.pool_connections = 64;
        assert_eq!(r.possible_in_flight(), 25.0);
        r.pool_connections = 4;
        assert_eq!(r.possible_in_flight(), 4.0);
        r.workers = 200;
        r.pool_connections = 500;
        assert_eq!(r.possible_in_flight(), 100.0);
    }
}

//! The verdict of each configuration: what bound it, by rules checked in order
//! ([`Thresholds`]), with the figures that decided it and a plain-words explanation,
//! plus notes (cold requests, a suspected delayed-ACK stall, idle workers, queueing).

use std::collections::BTreeMap;

use crate::model::stats::round3;
use crate::model::{ClientMeasure, ClientSide, ConfigResult, Diagnosis, Thresholds, Verdict};

/// A `client_cpu` verdict whose cores busy are below this share of the CPU threshold
/// (with the runtime busy) is a client starved of CPU rather than one using it all.
pub const STARVED_SHARE: f64 = 0.5;

/// First-byte latency in this window can be the 40 ms delayed-ACK stall.
pub const DELAYED_ACK_WINDOW_MS: (f64, f64) = (38.0, 50.0);

/// Fewer objects per worker than this and a configuration's tail decides its wall time.
pub const FEW_OBJECTS_PER_WORKER: f64 = 8.0;

/// More workers that buy less than this factor of throughput mean the curve is flat.
pub const FLAT_GAIN: f64 = 1.1;

fn cpu_source_words(source: &str) -> &'static str {
    match source {
        "lambda_memory" => "Lambda's CPU share for its memory",
        "cgroup_v2" | "cgroup_v1" => "the CPU quota",
        "affinity" => "the CPU affinity mask",
        _ => "the machine's cores",
    }
}

/// The verdict of one row. Uses `row.client` when the engine measured it; without it
/// the CPU rule can only look at `cpu_ms` and `vcpus`.
pub fn diagnose_row(row: &ConfigResult, vcpus: u32, t: &Thresholds) -> Diagnosis {
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
    let mut figures = BTreeMap::new();
    let mut fig = |k: &str, v: f64| {
        figures.insert(k.to_string(), round3(v));
    };
    // Throttling is what S3 said (503 SlowDown / 429), retried or not; a retry after a
    // timeout or a reset is not throttling.
    let throttled = row.errors.throttled.max(row.throttled_responses);
    let throttled_share = throttled as f64 / requests;
    let error_share = row.errors.total as f64 / requests;
    let latency_ms = row.ttlb_ms.mean;
    let pool_wait_ms = row.pool_wait_ms.mean;
    let pool_share = if pool_wait_ms + latency_ms > 0.0 {
        pool_wait_ms / (pool_wait_ms + latency_ms)
    } else {
        0.0
    };
    // Fractional under a CPU quota or a small Lambda.
    let cores = client.client_cores.max(0.01);
    let machine_cores = f64::from(client.vcpus.max(1));
    let machine_share = client.machine_cores_busy.map(|b| b / machine_cores);
    let cpu_share = client.cores_busy / cores;
    let busy_share = client.runtime_busy_ratio;

    let (verdict, explanation) = if throttled > 0 && throttled_share >= t.throttled_share {
        let retried = throttled.saturating_sub(row.errors.throttled).min(row.retries);
        fig("throttled_responses", throttled as f64);
        fig("throttled_requests", row.errors.throttled as f64);
        fig("retries", row.retries as f64);
        fig("retries_after_throttling", retried as f64);
        fig("throttled_share", throttled_share);
        (
            Verdict::Throttled,
            format!(
                "S3 pushed back: {throttled} throttled answers (503 SlowDown / 429) in {} requests, {} of them final, {retried} of the {} retries after throttling; more workers will not help until it scales (spread keys over prefixes, ramp up slowly)",
                row.requests, row.errors.throttled, row.retries
            ),
        )
    } else if row.errors.total > 0 && error_share >= t.error_share {
        fig("errors", row.errors.total as f64);
        fig("error_share", error_share);
        (
            Verdict::Errors,
            format!(
                "{} of {} requests failed ({}): the timings describe failures, fix them first",
                row.errors.total,
                row.requests,
                row.errors.short()
            ),
        )
    } else if let Some(ceiling) = t
        .bandwidth_ceiling_mib_per_s
        .filter(|c| row.mib_per_s >= t.bandwidth_share * c)
    {
        fig("mib_per_s", row.mib_per_s);
        fig("bandwidth_ceiling_mib_per_s", ceiling);
        let source = t.bandwidth_ceiling_source.map_or("given", |s| s.name());
        let burst = if row.in_burst {
            " (this row ran on burst credit: above the sustained ceiling, its figures flatter)"
        } else {
            ""
        };
        (
            Verdict::Bandwidth,
            format!(
                "{:.0} MiB/s is {:.0}% of the {:.0} MiB/s network ceiling (source: {source}){burst}: more requests in flight only share the same pipe",
                row.mib_per_s,
                100.0 * row.mib_per_s / ceiling,
                ceiling
            ),
        )
    } else if cpu_share >= t.cpu_busy_share || busy_share >= t.cpu_busy_share {
        fig("cores_busy", client.cores_busy);
        fig("client_cores", cores);
        fig("runtime_busy_ratio", busy_share);
        fig("cpu_ms_per_get", row.cpu_ms_per_get);
        fig("objects_per_s", row.objects_per_s);
        let starved = cpu_share < STARVED_SHARE * t.cpu_busy_share;
        fig("starved", if starved { 1.0 } else { 0.0 });
        let explanation = if starved {
            format!(
                "the client's threads always had work (runtime busy {:.0}% of the time) but got only {:.2} of {:.2} usable cores: it is starved of CPU by other processes on the machine, {:.3} ms CPU per GET; more workers or lower latency will not help, more CPU will",
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
                cpu_source_words(&client.cpu_source),
                100.0 * busy_share,
                row.cpu_ms_per_get
            )
        };
        (Verdict::ClientCpu, explanation)
    } else if let Some(share) = machine_share
        // The machine is busy and the client shows it: its threads had work they could
        // not run, or its workers sat between requests.
        .filter(|m| *m >= t.cpu_busy_share && (busy_share >= 0.5 || client.in_flight_ratio < 0.7))
    {
        let busy = client.machine_cores_busy.unwrap_or(0.0);
        fig("machine_cores_busy", busy);
        fig("machine_cores", machine_cores);
        fig("machine_busy_share", share);
        fig("cores_busy", client.cores_busy);
        (
            Verdict::MachineCpu,
            format!(
                "the machine's CPU is used up: {busy:.2} of {machine_cores:.0} cores busy, {:.2} of them this client's: the rest is other load on the machine (in `s3sweep local`, the embedded server), so the client cannot go faster here; measure where the server runs elsewhere",
                client.cores_busy
            ),
        )
    } else if pool_share >= t.pool_wait_share {
        fig("pool_wait_ms_mean", pool_wait_ms);
        fig("ttlb_ms_mean", latency_ms);
        fig("pool_wait_share", pool_share);
        fig("workers", f64::from(row.workers));
        fig("pool_connections", f64::from(row.pool_connections));
        (
            Verdict::Pool,
            format!(
                "requests waited {:.1} ms on average for one of {} connections ({:.0}% of their time) with {} workers: raise pool_connections to the worker count",
                pool_wait_ms,
                row.pool_connections,
                100.0 * pool_share,
                row.workers
            ),
        )
    } else {
        fig("mean_in_flight", client.mean_in_flight);
        fig("ttlb_ms_mean", latency_ms);
        fig("objects_per_s", row.objects_per_s);
        fig("cores_busy", client.cores_busy);
        fig("client_cores", cores);
        (
            Verdict::Latency,
            format!(
                "{:.1} requests in flight at {:.2} ms each give {:.0} objects/s; the client had CPU to spare ({:.2} of {:.2} usable cores busy)",
                client.mean_in_flight, latency_ms, row.objects_per_s, client.cores_busy, cores
            ),
        )
    };

    let mut notes = Vec::new();
    if let Some(b) = &row.breakdown {
        if b.cold_requests > 0 {
            notes.push(format!(
                "{} cold request(s) ({} new connection(s), connect p50 {:.2} ms, {} CreateSession) took p50 {:.2} ms to last byte vs {:.2} ms steady; they are left out of the steady figures",
                b.cold_requests,
                b.connections_opened,
                b.connect_ms.p50,
                b.session_requests,
                b.cold_ttlb_ms.p50,
                b.steady_ttlb_ms.p50
            ));
        }
    }
    let per_worker = row.requests as f64 / f64::from(row.workers.min(row.pool_connections).max(1));
    if row.workers > 1 && per_worker < FEW_OBJECTS_PER_WORKER {
        notes.push(format!(
            "only {per_worker:.1} objects per worker: the slowest requests decide the wall time, so the figures are noisy; read more objects (at least {FEW_OBJECTS_PER_WORKER:.0} per worker)"
        ));
    }
    if verdict != Verdict::Pool && client.in_flight_ratio < 0.7 && row.workers > 1 && row.ok > 0 {
        notes.push(format!(
            "only {:.1} of {:.1} possible requests were in flight on average: the workers spent the rest between requests (client work, scheduling) or waiting for the slowest to finish",
            client.mean_in_flight,
            row.possible_in_flight()
        ));
    }
    Diagnosis {
        verdict,
        figures,
        explanation,
        notes,
    }
}

/// Latency per request this many times the bucket's lowest means requests queue.
pub const QUEUEING_FACTOR: f64 = 2.0;

/// The figure the queueing note leaves in a row's diagnosis (the bucket's lowest time to
/// last byte, p50 ms); its presence is how the curve's verdicts know the row queues.
const QUEUEING_FIGURE: &str = "ttlb_ms_p50_lowest_of_bucket";

/// Adds a note to rows whose steady latency is [`QUEUEING_FACTOR`] times the lowest of
/// their bucket: the requests queued somewhere (the server, the network, the client's
/// scheduler), so more workers add waiting rather than throughput.
pub(crate) fn queueing_notes(rows: &mut [ConfigResult]) {
    let p50 = |r: &ConfigResult| r.breakdown.as_ref().map_or(r.ttlb_ms.p50, |b| b.steady_ttlb_ms.p50);
    let mut lowest: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ok > 0 && p50(r) > 0.0) {
        let e = lowest.entry(r.bucket.clone()).or_insert((f64::MAX, 0));
        if p50(r) < e.0 {
            *e = (p50(r), r.workers);
        }
    }
    for r in rows.iter_mut() {
        let Some(&(low, at)) = lowest.get(&r.bucket) else {
            continue;
        };
        let now = p50(r);
        if now >= QUEUEING_FACTOR * low {
            if let Some(d) = r.diagnosis.as_mut() {
                d.figures.insert(QUEUEING_FIGURE.into(), round3(low));
                d.notes.push(format!(
                    "requests took {now:.1} ms (p50) against {low:.1} ms at {at} worker(s): they queue somewhere (server, network or the client's scheduler), so more workers add waiting, not throughput"
                ));
            }
        }
    }
}

/// The verdicts read against each bucket's curve, so no row contradicts it:
/// - a `latency` row whose throughput is less than [`FLAT_GAIN`] times the best at
///   fewer workers is on a flat segment: more workers did not go faster, so it is a
///   `plateau`, with what was checked and found not to explain it;
/// - a `latency` row on the rising part says more workers would go faster;
/// - a row at 4 workers or fewer whose first byte sits in the 38-50 ms window gets the
///   delayed-ACK note only with the stall's signature: the same bucket answers in less
///   than half that at more workers, or the row's own first bytes are bimodal (p50
///   well below a p90 in the window).
pub(crate) fn curve_verdicts(rows: &mut [ConfigResult]) {
    use crate::model::stats::{first_seen, median};
    let buckets: Vec<String> = first_seen(rows.iter().map(|r| r.bucket.clone()));
    for bucket in buckets {
        let mut workers: Vec<u32> = first_seen(rows.iter().filter(|r| r.bucket == bucket).map(|r| r.workers));
        workers.sort_unstable();
        let rate = |w: u32, rows: &[ConfigResult]| {
            median(
                rows.iter()
                    .filter(|r| r.bucket == bucket && r.workers == w && r.ok > 0)
                    .map(|r| r.objects_per_s)
                    .collect(),
            )
        };
        let rates: Vec<(u32, Option<f64>)> = workers.iter().map(|&w| (w, rate(w, rows))).collect();
        let ttfb = |r: &ConfigResult| r.breakdown.as_ref().map_or(r.ttfb_ms.p50, |b| b.steady_ttfb_ms.p50);
        let fastest_first_byte_more_workers = |w: u32, rows: &[ConfigResult]| {
            rows.iter()
                .filter(|r| r.bucket == bucket && r.workers > w && r.ok > 0)
                .map(ttfb)
                .filter(|t| *t > 0.0)
                .min_by(f64::total_cmp)
        };
        let quicker: Vec<(u32, Option<f64>)> = workers
            .iter()
            .map(|&w| (w, fastest_first_byte_more_workers(w, rows)))
            .collect();
        for r in rows.iter_mut().filter(|r| r.bucket == bucket) {
            let here = rates.iter().find(|(w, _)| *w == r.workers).and_then(|x| x.1);
            let before = rates
                .iter()
                .filter(|(w, _)| *w < r.workers)
                .filter_map(|(w, x)| x.map(|x| (*w, x)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let p50 = ttfb(r);
            let p90 = r.breakdown.as_ref().map_or(r.ttfb_ms.p90, |b| b.steady_ttfb_ms.p90);
            let in_window = |t: f64| (DELAYED_ACK_WINDOW_MS.0..=DELAYED_ACK_WINDOW_MS.1).contains(&t);
            let quicker_elsewhere = quicker.iter().find(|(w, _)| *w == r.workers).and_then(|x| x.1);
            let client = r.client.clone().unwrap_or_default();
            let pool_wait = r.pool_wait_ms.mean;
            let errors = r.errors.total;
            let Some(d) = r.diagnosis.as_mut() else { continue };
            if r.workers <= 4 && in_window(p50) && (quicker_elsewhere.is_some_and(|q| q < 0.5 * p50)) {
                d.notes.push(format!(
                    "first byte p50 {p50:.1} ms at {} worker(s), in the 38-50 ms window of the 40 ms delayed-ACK timer, while this bucket answers in {:.1} ms with more workers: a request or response written in two pieces without TCP_NODELAY stalls like this; check TCP_NODELAY on both ends",
                    r.workers,
                    quicker_elsewhere.unwrap_or(0.0)
                ));
            } else if r.workers <= 4 && in_window(p90) && p50 < 0.5 * p90 {
                d.notes.push(format!(
                    "first bytes are bimodal at {} worker(s): p50 {p50:.1} ms but p90 {p90:.1} ms, in the window of the 40 ms delayed-ACK timer: some requests stall on it; check TCP_NODELAY on both ends",
                    r.workers
                ));
            }
            if d.verdict != Verdict::Latency {
                continue;
            }
            match (here, before) {
                (Some(x), Some((w0, x0))) if x < FLAT_GAIN * x0 => {
                    d.verdict = Verdict::Plateau;
                    d.figures.insert("objects_per_s".into(), round3(x));
                    d.figures.insert("objects_per_s_at_fewer_workers".into(), round3(x0));
                    d.figures.insert("fewer_workers".into(), f64::from(w0));
                    d.explanation = format!(
                        "throughput stopped growing: {x:.0} objects/s at {} workers against {x0:.0} at {w0}; checked and not the cause: client CPU ({:.2} of {:.2} usable cores busy, runtime busy {:.0}%){}, the pool (requests waited {pool_wait:.2} ms on average), errors ({errors}), throttling (none), bandwidth (no ceiling known: pass --bandwidth-mib-s if one is known, or --probe-bandwidth to measure it); look at what the requests wait for (the queueing note, the server, the network)",
                        r.workers,
                        client.cores_busy,
                        client.client_cores,
                        100.0 * client.runtime_busy_ratio,
                        client
                            .machine_cores_busy
                            .map_or(String::new(), |m| format!(", machine CPU ({m:.2} of {} cores busy)", client.vcpus)),
                    );
                }
                // Rising, but its requests already queue (the queueing note): more
                // workers bought throughput so far, at the price of waiting.
                (Some(_), _) if d.figures.contains_key(QUEUEING_FIGURE) => d.explanation.push_str(
                    ": the curve still rises here, but requests already queue (see the note), so more workers would add waiting as well as throughput",
                ),
                (Some(_), _) => d
                    .explanation
                    .push_str(": the curve still rises here, so more workers would go faster"),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;
    use crate::model::{Breakdown, ErrorKind, Percentiles};
    use std::time::Duration;

    fn pct(mean: f64) -> Percentiles {
        Percentiles {
            p50: mean,
            p90: mean,
            p99: mean,
            max: mean,
            mean,
            count: 100,
        }
    }

    /// A healthy row: 100 requests, 10 workers, 10 ms each, 1000 objects/s.
    fn healthy() -> ConfigResult {
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
        assert_eq!(d.figures["mean_in_flight"], 10.0);
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
        assert_eq!(d.figures["retries_after_throttling"], 1.0);
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
        assert_eq!(d.figures["bandwidth_ceiling_mib_per_s"], 100.0);
        r.mib_per_s = 70.0;
        assert_eq!(diagnose_row(&r, 2, &t).verdict, Verdict::Latency);
    }

    /// What the client measured on a 2-vCPU machine: the runtime busy `busy_ms` on `threads` threads.
    fn on_two_vcpus(busy_ms: u64, threads: u32) -> ClientMeasure {
        ClientMeasure {
            runtime_busy: Duration::from_millis(busy_ms),
            runtime_worker_threads: threads,
            vcpus: 2,
            peak_rss_bytes: 0,
            ..ClientMeasure::default()
        }
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
        assert_eq!(d.figures["runtime_busy_ratio"], 0.9);
        // 0.2 cores busy of 1 usable while the runtime had work: starved.
        assert_eq!(d.figures["starved"], 1.0);
        assert!(d.explanation.contains("starved"), "{}", d.explanation);
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
        assert_eq!(d.figures["pool_wait_share"], 0.75);
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

    /// A bucket's rows at `points` (workers, objects/s, first byte p50 ms, p90 ms),
    /// diagnosed, then read against their curve.
    fn curve(points: &[(u32, f64, f64, f64)]) -> Vec<ConfigResult> {
        let mut rows: Vec<ConfigResult> = points
            .iter()
            .map(|&(w, x, p50, p90)| {
                let mut r = healthy();
                r.workers = w;
                r.pool_connections = w;
                r.requests = 1000;
                r.ok = 1000;
                r.objects_per_s = x;
                r.ttfb_ms = Percentiles { p50, p90, ..pct(p50) };
                r.client = Some(ClientSide::of(&r, on_two_vcpus(10, 2)));
                r.diagnosis = Some(diagnose_row(&r, 2, &Thresholds::default()));
                r
            })
            .collect();
        curve_verdicts(&mut rows);
        rows
    }

    fn verdicts(rows: &[ConfigResult]) -> Vec<Verdict> {
        rows.iter().map(|r| r.diagnosis.as_ref().unwrap().verdict).collect()
    }

    #[test]
    fn a_flat_segment_is_a_plateau_not_latency() {
        // The seed demo's standard-like curve: flat from 128 workers (211 -> 200 ms).
        let rows = curve(&[
            (64, 2900.0, 18.0, 30.0),
            (128, 4740.0, 20.0, 40.0),
            (256, 5000.0, 25.0, 60.0),
        ]);
        assert_eq!(
            verdicts(&rows),
            vec![Verdict::Latency, Verdict::Latency, Verdict::Plateau]
        );
        let d = rows[2].diagnosis.as_ref().unwrap();
        assert!(
            d.explanation.contains("stopped growing") && d.explanation.contains("checked"),
            "{}",
            d.explanation
        );
        assert!(
            !d.explanation.contains("more workers would go faster"),
            "{}",
            d.explanation
        );
        assert_eq!(d.figures["fewer_workers"], 128.0);
        let rising = rows[1].diagnosis.as_ref().unwrap();
        assert!(
            rising.explanation.ends_with("so more workers would go faster"),
            "{}",
            rising.explanation
        );
    }

    #[test]
    fn delayed_ack_is_noted_only_with_its_signature() {
        // 42 ms at 1 worker, 5 ms with more: the stall's signature.
        let rows = curve(&[(1, 24.0, 42.0, 44.0), (8, 1500.0, 5.0, 7.0)]);
        let d = rows[0].diagnosis.as_ref().unwrap();
        assert!(d.notes.iter().any(|n| n.contains("delayed-ACK")), "{:?}", d.notes);
        // 42 ms everywhere: an ordinary S3 Standard latency, no note.
        let rows = curve(&[(1, 24.0, 42.0, 60.0), (8, 190.0, 42.0, 60.0)]);
        assert!(!rows[0]
            .diagnosis
            .as_ref()
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("delayed-ACK")));
        // Bimodal first bytes at one worker: noted.
        let rows = curve(&[(1, 80.0, 6.0, 41.0), (8, 600.0, 6.0, 41.0)]);
        assert!(rows[0]
            .diagnosis
            .as_ref()
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("bimodal")));
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

    #[test]
    fn queueing_is_noted_against_the_buckets_lowest_latency() {
        let mut one = healthy();
        one.workers = 1;
        one.ttlb_ms = pct(10.0);
        let mut many = healthy();
        many.workers = 32;
        many.ttlb_ms = pct(40.0);
        let mut rows = vec![one, many];
        for r in &mut rows {
            r.diagnosis = Some(diagnose_row(r, 2, &Thresholds::default()));
        }
        queueing_notes(&mut rows);
        assert!(!rows[0]
            .diagnosis
            .as_ref()
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("queue")));
        let d = rows[1].diagnosis.as_ref().unwrap();
        assert!(d.notes.iter().any(|n| n.contains("queue")), "{d:?}");
        assert_eq!(d.figures["ttlb_ms_p50_lowest_of_bucket"], 10.0);
    }

    #[test]
    fn a_rising_row_whose_requests_queue_does_not_promise_speed() {
        // 1 -> 32 workers still rose (100 -> 800 objects/s), but at 4x the latency: the
        // explanation must not say more workers would go faster, against its own note.
        let mut one = healthy();
        one.workers = 1;
        one.ttlb_ms = pct(10.0);
        one.objects_per_s = 100.0;
        let mut many = healthy();
        many.workers = 32;
        many.ttlb_ms = pct(40.0);
        many.objects_per_s = 800.0;
        let mut rows = vec![one, many];
        for r in &mut rows {
            r.diagnosis = Some(diagnose_row(r, 2, &Thresholds::default()));
        }
        queueing_notes(&mut rows);
        curve_verdicts(&mut rows);
        let d = rows[1].diagnosis.as_ref().unwrap();
        assert_eq!(d.verdict, Verdict::Latency, "{d:?}");
        assert!(d.notes.iter().any(|n| n.contains("queue")), "{d:?}");
        assert!(
            d.explanation
                .ends_with("more workers would add waiting as well as throughput"),
            "{}",
            d.explanation
        );
        assert!(!d.explanation.contains("would go faster"), "{}", d.explanation);
    }
}

//! The verdicts read against each bucket's curve, after the row rules
//! ([`super::rules`]): a `latency` row on a flat segment becomes `plateau`, rows whose
//! requests queue are noted (and told so when the curve still rises), and the 40 ms
//! delayed-ACK stall is noted only with its signature.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::stats::round3;
use crate::model::{ConfigResult, Figure, FigureName, Runner, Verdict};

/// First-byte latency in this window can be the 40 ms delayed-ACK stall.
pub(crate) const DELAYED_ACK_WINDOW_MS: (f64, f64) = (38.0, 50.0);

/// More workers that buy less than this factor of throughput mean the curve is flat.
pub(crate) const FLAT_GAIN: f64 = 1.1;

/// Latency per request this many times the bucket's lowest means requests queue.
pub(crate) const QUEUEING_FACTOR: f64 = 2.0;

/// The figure the queueing note leaves in a row's diagnosis: the bucket's lowest time
/// to last byte, p50 ms.
const QUEUEING_FIGURE: FigureName = FigureName::TtlbMsP50LowestOfBucket;

/// Which rows' requests queue (by index into the rows [`queueing_notes`] read): what
/// [`curve_verdicts`] needs to know of the queueing notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Queueing {
    queues: Vec<bool>,
}

impl Queueing {
    /// True when row `i` was noted as queueing.
    pub(crate) fn queues(&self, i: usize) -> bool {
        self.queues.get(i).copied().unwrap_or(false)
    }
}

/// Adds a note to rows whose steady latency is [`QUEUEING_FACTOR`] times the lowest of
/// their bucket: the requests queued somewhere (the server, the network, the client's
/// scheduler), so more workers add waiting rather than throughput. Returns which rows
/// got the note.
pub(crate) fn queueing_notes(rows: &mut [ConfigResult]) -> Queueing {
    let p50 = |r: &ConfigResult| r.breakdown.as_ref().map_or(r.ttlb_ms.p50, |b| b.steady_ttlb_ms.p50);
    let mut lowest: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ok > 0 && p50(r) > 0.0) {
        let e = lowest.entry(r.bucket.clone()).or_insert((f64::MAX, 0));
        if p50(r) < e.0 {
            *e = (p50(r), r.workers);
        }
    }
    let mut queueing = Queueing {
        queues: vec![false; rows.len()],
    };
    for (i, r) in rows.iter_mut().enumerate() {
        let Some(&(low, at)) = lowest.get(&r.bucket) else {
            continue;
        };
        let now = p50(r);
        if now >= QUEUEING_FACTOR * low {
            if let Some(d) = r.diagnosis.as_mut() {
                queueing.queues[i] = true;
                d.set_figure(QUEUEING_FIGURE, Figure::Ms(round3(low)));
                d.notes.push(format!(
                    "requests took {now:.1} ms (p50) against {low:.1} ms at {at} worker(s): they queue somewhere (server, network or the client's scheduler), so more workers add waiting, not throughput"
                ));
            }
        }
    }
    queueing
}

/// How advice names a setting: the flag of `run` and `local`, or the event's field
/// for the Lambda.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Terms {
    #[default]
    Flags,
    Event,
}

impl Terms {
    /// The terms of what ran the sweep.
    pub(crate) fn of(runner: Runner) -> Terms {
        match runner {
            Runner::Lambda => Terms::Event,
            Runner::Cli | Runner::Local => Terms::Flags,
        }
    }

    /// How to give or measure a bandwidth ceiling.
    fn bandwidth_advice(self) -> &'static str {
        match self {
            Terms::Flags => "pass --bandwidth-mib-s if one is known, or --probe-bandwidth to measure it",
            Terms::Event => "set \"probe_bandwidth\": true in the event to measure it",
        }
    }
}

/// A bucket's curve as the curve verdicts read it: median throughput per worker count
/// and, per worker count, the quickest first byte at more workers.
struct Curve {
    rates: Vec<(u32, Option<f64>)>,
    quicker: Vec<(u32, Option<f64>)>,
}

/// First byte p50 of a row: steady requests when the breakdown has them.
fn first_byte_p50(r: &ConfigResult) -> f64 {
    r.breakdown.as_ref().map_or(r.ttfb_ms.p50, |b| b.steady_ttfb_ms.p50)
}

impl Curve {
    fn of(rows: &[ConfigResult], bucket: &str) -> Curve {
        use crate::model::stats::{first_seen, median};
        let mine = || rows.iter().filter(move |r| r.bucket == bucket && r.ok > 0);
        let mut workers: Vec<u32> = first_seen(rows.iter().filter(|r| r.bucket == bucket).map(|r| r.workers));
        workers.sort_unstable();
        let rate = |w: u32| median(mine().filter(|r| r.workers == w).map(|r| r.objects_per_s).collect());
        let quickest_with_more = |w: u32| {
            mine()
                .filter(|r| r.workers > w)
                .map(first_byte_p50)
                .filter(|t| *t > 0.0)
                .min_by(f64::total_cmp)
        };
        Curve {
            rates: workers.iter().map(|&w| (w, rate(w))).collect(),
            quicker: workers.iter().map(|&w| (w, quickest_with_more(w))).collect(),
        }
    }

    fn rate_at(&self, workers: u32) -> Option<f64> {
        self.rates.iter().find(|(w, _)| *w == workers).and_then(|x| x.1)
    }

    /// The best throughput at more workers.
    fn best_after(&self, workers: u32) -> Option<f64> {
        self.rates
            .iter()
            .filter(|(w, _)| *w > workers)
            .filter_map(|(_, x)| *x)
            .max_by(f64::total_cmp)
    }

    /// The best throughput at fewer workers, and where.
    fn best_before(&self, workers: u32) -> Option<(u32, f64)> {
        self.rates
            .iter()
            .filter(|(w, _)| *w < workers)
            .filter_map(|(w, x)| x.map(|x| (*w, x)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    fn quicker_than(&self, workers: u32) -> Option<f64> {
        self.quicker.iter().find(|(w, _)| *w == workers).and_then(|x| x.1)
    }
}

/// The verdicts read against each bucket's curve, so no row contradicts it:
/// - a `latency` row whose throughput is less than [`FLAT_GAIN`] times the best at
///   fewer workers is on a flat segment: more workers did not go faster, so it is a
///   `plateau`, with what was checked and found not to explain it;
/// - a `latency` row on the rising part says more workers would go faster (or, when
///   `queueing` says its requests already queue, that they would add waiting too);
/// - a row at 4 workers or fewer whose first byte sits in the 38-50 ms window gets the
///   delayed-ACK note only with the stall's signature: the same bucket answers in less
///   than half that at more workers, or the row's own first bytes are bimodal (p50
///   well below a p90 in the window).
pub(crate) fn curve_verdicts(rows: &mut [ConfigResult], queueing: &Queueing, terms: Terms) {
    use crate::model::stats::first_seen;
    for bucket in first_seen(rows.iter().map(|r| r.bucket.clone())) {
        let curve = Curve::of(rows, &bucket);
        for (i, r) in rows.iter_mut().enumerate().filter(|(_, r)| r.bucket == bucket) {
            if let Some(note) = delayed_ack_note(r, curve.quicker_than(r.workers)) {
                if let Some(d) = r.diagnosis.as_mut() {
                    d.notes.push(note);
                }
            }
            read_against_curve(r, &curve, queueing.queues(i), terms);
        }
    }
}

/// The delayed-ACK note, when the row shows the stall's signature.
fn delayed_ack_note(r: &ConfigResult, quicker_elsewhere: Option<f64>) -> Option<String> {
    let p50 = first_byte_p50(r);
    let p90 = r.breakdown.as_ref().map_or(r.ttfb_ms.p90, |b| b.steady_ttfb_ms.p90);
    let in_window = |t: f64| (DELAYED_ACK_WINDOW_MS.0..=DELAYED_ACK_WINDOW_MS.1).contains(&t);
    if r.workers > 4 {
        return None;
    }
    match quicker_elsewhere {
        Some(q) if in_window(p50) && q < 0.5 * p50 => Some(format!(
            "first byte p50 {p50:.1} ms at {} worker(s), in the 38-50 ms window of the 40 ms delayed-ACK timer, while this bucket answers in {q:.1} ms with more workers: a request or response written in two pieces without TCP_NODELAY stalls like this; check TCP_NODELAY on both ends",
            r.workers
        )),
        _ if in_window(p90) && p50 < 0.5 * p90 => Some(format!(
            "first bytes are bimodal at {} worker(s): p50 {p50:.1} ms but p90 {p90:.1} ms, in the window of the 40 ms delayed-ACK timer: some requests stall on it; check TCP_NODELAY on both ends",
            r.workers
        )),
        _ => None,
    }
}

/// A `latency` row on a flat segment becomes `plateau`; on the rising part its
/// explanation says what more workers would do.
fn read_against_curve(r: &mut ConfigResult, curve: &Curve, queues: bool, terms: Terms) {
    let (here, before) = (curve.rate_at(r.workers), curve.best_before(r.workers));
    let after = curve.best_after(r.workers);
    let client = r.client.clone().unwrap_or_default();
    let (workers, pool_wait, errors) = (r.workers, r.pool_wait_ms.mean, r.errors.total);
    let Some(d) = r.diagnosis.as_mut().filter(|d| d.verdict == Verdict::Latency) else {
        return;
    };
    match (here, before) {
        (Some(x), Some((w0, x0))) if x < FLAT_GAIN * x0 => {
            d.verdict = Verdict::Plateau;
            d.set_figure(FigureName::ObjectsPerS, Figure::ObjectsPerS(round3(x)));
            d.set_figure(FigureName::ObjectsPerSAtFewerWorkers, Figure::ObjectsPerS(round3(x0)));
            d.set_figure(FigureName::FewerWorkers, Figure::Count(u64::from(w0)));
            d.explanation = format!(
                "throughput stopped growing: {x:.0} objects/s at {workers} workers against {x0:.0} at {w0}; checked and not the cause: client CPU ({:.2} of {:.2} usable cores busy, runtime busy {:.0}%){}, the pool (requests waited {pool_wait:.2} ms on average), errors ({errors}), throttling (none), bandwidth (no ceiling known, and no row's bodies took longer with CPU to spare: {}); look at what the requests wait for (the queueing note, the server, the network)",
                client.cores_busy,
                client.client_cores,
                100.0 * client.runtime_busy_ratio,
                client
                    .machine_cores_busy
                    .map_or(String::new(), |m| format!(", machine CPU ({m:.2} of {} cores busy)", client.vcpus)),
                terms.bandwidth_advice(),
            );
        }
        // Rising to here, but more workers then gained less than FLAT_GAIN: the knee.
        (Some(x), _) if after.is_some_and(|a| a < FLAT_GAIN * x) => {
            let _ = write!(
                d.explanation,
                ": the curve rose to here, but more workers then gained less than 10% (at most {:.0} objects/s)",
                after.unwrap_or(x)
            );
        }
        // Rising, but its requests already queue (the queueing note): more workers
        // bought throughput so far, at the price of waiting.
        (Some(_), _) if queues => d.explanation.push_str(
            ": the curve still rises here, but requests already queue (see the note), so more workers would add waiting as well as throughput",
        ),
        (Some(_), _) => d
            .explanation
            .push_str(": the curve still rises here, so more workers would go faster"),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::rules::diagnose_row;
    use super::super::rules::tests::{healthy, on_two_vcpus, pct};
    use super::*;
    use crate::model::{ClientSide, Percentiles, Thresholds};

    /// A bucket's rows at `points` (workers, objects/s, first byte p50 ms, p90 ms),
    /// diagnosed, then read against their curve.
    fn curve(points: &[(u32, f64, f64, f64)]) -> Vec<ConfigResult> {
        curve_in(points, Terms::Flags)
    }

    /// [`curve`], its advice in `terms`.
    fn curve_in(points: &[(u32, f64, f64, f64)], terms: Terms) -> Vec<ConfigResult> {
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
        curve_verdicts(&mut rows, &Queueing::default(), terms);
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
        assert_eq!(d.figures[FigureName::FewerWorkers], Figure::Count(128));
        let rising = rows[0].diagnosis.as_ref().unwrap();
        assert!(
            rising.explanation.ends_with("so more workers would go faster"),
            "{}",
            rising.explanation
        );
        // The knee: it rose to here, and more workers then gained under 10%.
        let knee = rows[1].diagnosis.as_ref().unwrap();
        assert!(
            knee.explanation.contains("more workers then gained less than 10%")
                && !knee.explanation.contains("would go faster"),
            "{}",
            knee.explanation
        );
    }

    #[test]
    fn a_plateau_advises_flags_to_flag_users_and_fields_to_event_users() {
        let points = [
            (64, 2900.0, 18.0, 30.0),
            (128, 4740.0, 20.0, 40.0),
            (256, 5000.0, 25.0, 60.0),
        ];
        let said = |terms| curve_in(&points, terms)[2].diagnosis.clone().unwrap().explanation;
        let flags = said(Terms::Flags);
        assert!(
            flags.contains("--bandwidth-mib-s") && !flags.contains("\"probe_bandwidth\""),
            "{flags}"
        );
        let event = said(Terms::Event);
        assert!(
            event.contains("\"probe_bandwidth\": true") && !event.contains("--"),
            "{event}"
        );
        assert_eq!(Terms::of(Runner::Lambda), Terms::Event);
        assert_eq!(Terms::of(Runner::Cli), Terms::Flags);
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
        let queueing = queueing_notes(&mut rows);
        assert!(!queueing.queues(0) && queueing.queues(1), "{queueing:?}");
        assert!(!rows[0]
            .diagnosis
            .as_ref()
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("queue")));
        let d = rows[1].diagnosis.as_ref().unwrap();
        assert!(d.notes.iter().any(|n| n.contains("queue")), "{d:?}");
        assert_eq!(d.figures[QUEUEING_FIGURE], Figure::Ms(10.0));
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
        let queueing = queueing_notes(&mut rows);
        curve_verdicts(&mut rows, &queueing, Terms::Flags);
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

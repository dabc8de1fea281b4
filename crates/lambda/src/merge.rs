//! The coordinator's merge: per configuration (in plan order) the children's rows are
//! summed (counts, errors, bytes, CPU), their latency histograms added (percentiles are
//! never averaged), and throughput taken over the common window (first start to last
//! finish), so drift between children lowers the figure rather than flattering it.
//! A configuration is a bucket, worker count, repetition and point on the axes: a
//! hedged row merges with the children's hedged rows, its hedging counts summed.
//! Failed children are named and left out; a child missing a configuration is listed.

use hdrhistogram::Histogram;

use crate::model::decode_histogram;
use crate::model::histogram::encode_cdf;
use crate::model::stats::{cpu_ms_per_get, histogram_us, rates, round3};
use crate::model::{
    Axes, BandwidthCeiling, CeilingSource, ChildProbe, ChildReport, ChildWire, ConfigResult, Environment, ErrorCounts,
    FanoutProbe, FanoutReport, FanoutRequest, MergedConfig, NetworkReport, Outcome, Percentiles, SkippedConfig, Split,
    SweepResult, WireCounts,
};
use crate::plan::Plan;

use super::invoke::ChildOutcome;

/// Merges the children's rows per configuration (in `plan` order) and builds the
/// report. Failed children are named and left out of the merge.
pub(crate) fn merge(
    plan: &Plan,
    function_name: &str,
    start_unix_ms: u64,
    outcomes: Vec<ChildOutcome>,
) -> (Vec<ConfigResult>, FanoutReport) {
    let f = plan.fanout().copied().unwrap_or(FanoutRequest {
        invocations: outcomes.len() as u32,
        start_delay_ms: 0,
        split: Split::Shard,
        slot_ms: None,
    });
    let (merged, configurations) = merge_configurations(plan, &outcomes);
    let probe = fanout_probe(&outcomes);
    let children: Vec<ChildReport> = outcomes.into_iter().map(child_report).collect();
    let children_ok = children.iter().filter(|c| c.error.is_none()).count() as u32;
    let report = FanoutReport {
        function_name: function_name.to_string(),
        invocations: f.invocations,
        split: f.split,
        start_delay_ms: f.start_delay_ms,
        start_unix_ms,
        children_ok,
        children_failed: children.len() as u32 - children_ok,
        configurations,
        children,
        probe,
    };
    (merged, report)
}

/// The merged children's bandwidth probes and their sum (`None`: no child probed).
/// Each child probed from its own function, with its own NIC: the merged rows, which
/// add the children's bytes over the common window, are bound by the sum.
fn fanout_probe(outcomes: &[ChildOutcome]) -> Option<FanoutProbe> {
    let children: Vec<ChildProbe> = outcomes
        .iter()
        .filter_map(|o| {
            let probe = o.result.as_ref().ok()?.network.as_ref()?.probe.as_ref()?;
            Some(ChildProbe {
                child: o.index,
                sustained_mib_per_s: probe.sustained_mib_per_s,
                lower_bound: probe.lower_bound,
                burst: probe.burst,
            })
        })
        .collect();
    if children.is_empty() {
        return None;
    }
    Some(FanoutProbe {
        aggregate_mib_per_s: round3(children.iter().map(|c| c.sustained_mib_per_s).sum()),
        lower_bound: children.iter().any(|c| c.lower_bound),
        children,
    })
}

/// The merged result's network block: the plan's order and pool, and with the
/// children's probes their sum as the ceiling (source `probe`) the verdicts use.
fn merged_network(plan: &Plan, probe: Option<&FanoutProbe>) -> Option<NetworkReport> {
    let probe = probe.filter(|p| p.aggregate_mib_per_s > 0.0)?;
    let mut network = crate::engine::network_report(plan, None);
    network.ceiling = Some(BandwidthCeiling {
        mib_per_s: probe.aggregate_mib_per_s,
        source: CeilingSource::Probe,
        lower_bound: probe.lower_bound,
        interval_mib_per_s: None,
        revised_from_mib_per_s: None,
    });
    Some(network)
}

/// Every configuration of `plan` (in order) that some child answered: the merged row
/// and what the merge saw (window, spreads, cold and missing children).
fn merge_configurations(plan: &Plan, outcomes: &[ChildOutcome]) -> (Vec<ConfigResult>, Vec<MergedConfig>) {
    let ok: Vec<(&ChildOutcome, &SweepResult)> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok().map(|r| (o, r)))
        .collect();
    let cold = |r: &SweepResult| r.environment.lambda.as_ref().is_some_and(|l| l.cold_start);
    let mut merged = Vec::new();
    let mut configurations = Vec::new();
    // Each repetition once per point on the axes, each its own row.
    let points = plan.axis_values().points(0);
    for bucket in plan.buckets() {
        for &workers in plan.workers() {
            for (repetition, &point) in (1..=plan.repetitions()).flat_map(|r| points.iter().map(move |p| (r, p))) {
                let mut rows = Vec::new();
                let mut missing = Vec::new();
                for (o, r) in &ok {
                    match r.results.iter().find(|x| {
                        &x.bucket == bucket
                            && x.workers == workers
                            && x.repetition == repetition
                            && x.axes.key() == point
                    }) {
                        Some(row) => rows.push((o.index, cold(r), row)),
                        None => missing.push(o.index),
                    }
                }
                if rows.is_empty() {
                    continue;
                }
                let (row, config) = merge_rows(&rows);
                merged.push(row);
                configurations.push(MergedConfig {
                    missing_children: missing,
                    ..config
                });
            }
        }
    }
    (merged, configurations)
}

/// One child in the report: its shard, status, and its own rows (windows and counts
/// kept; histograms and CDF dropped, the merged row has them).
fn child_report(o: ChildOutcome) -> ChildReport {
    let mut report = ChildReport {
        index: o.index,
        key_range: o.key_range,
        seed: o.seed,
        status: if o.result.is_ok() { Outcome::Ok } else { Outcome::Failed },
        invoke_ms: o.invoke_ms,
        cold_start: None,
        request_id: None,
        error: None,
        results: Vec::new(),
        skipped: Vec::new(),
    };
    match o.result {
        Ok(r) => {
            let lambda = r.environment.lambda.as_ref();
            report.cold_start = lambda.map(|l| l.cold_start);
            report.request_id = lambda.and_then(|l| l.request_id.clone());
            report.skipped = r.skipped;
            report.results = r
                .results
                .into_iter()
                .map(|mut row| {
                    if let Some(c) = &mut row.child {
                        c.histograms = None;
                    }
                    row.ttlb_histogram_us = None;
                    row
                })
                .collect();
        }
        Err(e) => report.error = Some(e),
    }
    report
}

/// The children's rows of one configuration, added up.
struct Sums {
    ttfb: Histogram<u64>,
    ttlb: Histogram<u64>,
    pool_wait: Histogram<u64>,
    errors: ErrorCounts,
    samples: Vec<String>,
    requests: u64,
    ok: u64,
    bytes: u64,
    retries: u64,
    connections: u64,
    sessions: u64,
    handshakes: u64,
    cpu_ms: f64,
    connect_ms: f64,
    /// Each child's timed phase, ms since the Unix epoch.
    starts: Vec<f64>,
    finishes: Vec<f64>,
}

impl Sums {
    /// The sums of `rows` (`(index, cold, row)`).
    fn of(rows: &[(u32, bool, &ConfigResult)]) -> Sums {
        let mut sums = Sums {
            ttfb: histogram_us(),
            ttlb: histogram_us(),
            pool_wait: histogram_us(),
            errors: ErrorCounts::default(),
            samples: Vec::new(),
            requests: 0,
            ok: 0,
            bytes: 0,
            retries: 0,
            connections: 0,
            sessions: 0,
            handshakes: 0,
            cpu_ms: 0.0,
            connect_ms: 0.0,
            starts: Vec::new(),
            finishes: Vec::new(),
        };
        for &(index, _, r) in rows {
            sums.add(index, r);
        }
        sums
    }

    fn add(&mut self, index: u32, r: &ConfigResult) {
        self.requests += r.requests;
        self.ok += r.ok;
        self.bytes += r.bytes;
        self.retries += r.retries;
        self.connections += r.connections_opened;
        self.sessions += r.session_requests;
        self.handshakes += r.tls_handshakes;
        self.cpu_ms += r.cpu_ms;
        self.connect_ms += r.connect_ms_total;
        self.errors.add_all(&r.errors);
        for s in &r.error_samples {
            if self.samples.len() < 3 && !self.samples.contains(s) {
                self.samples.push(format!("child {index}: {s}"));
            }
        }
        let Some(c) = &r.child else {
            push_sample(&mut self.samples, format!("child {index}: no timing window"));
            return;
        };
        self.starts.push(c.started_unix_ms);
        self.finishes.push(c.finished_unix_ms);
        let Some(h) = &c.histograms else {
            push_sample(&mut self.samples, format!("child {index}: no latency histograms"));
            return;
        };
        for (name, text, into) in [
            ("ttfb_us", &h.ttfb_us, &mut self.ttfb),
            ("ttlb_us", &h.ttlb_us, &mut self.ttlb),
            ("pool_wait_us", &h.pool_wait_us, &mut self.pool_wait),
        ] {
            match decode_histogram(name, text) {
                Ok(h) => {
                    // An auto-resizing histogram takes any other.
                    let _ = into.add(&h);
                }
                Err(e) => push_sample(&mut self.samples, format!("child {index}: {e}")),
            }
        }
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// One merged row from the children's rows of one configuration: `(index, cold, row)`.
fn merge_rows(rows: &[(u32, bool, &ConfigResult)]) -> (ConfigResult, MergedConfig) {
    let first = rows[0].2;
    let sums = Sums::of(rows);
    let (first_start, last_finish) = if sums.starts.is_empty() {
        (0.0, 0.0)
    } else {
        (min(&sums.starts), max(&sums.finishes))
    };
    let window_ms = if sums.starts.is_empty() {
        rows.iter().map(|r| r.2.wall_ms).fold(0.0, f64::max)
    } else {
        round3(last_finish - first_start)
    };
    let children_wire = children_wire(rows);
    let spread = |v: &[f64]| if v.is_empty() { 0.0 } else { round3(max(v) - min(v)) };
    let config = MergedConfig {
        bucket: first.bucket.clone(),
        workers: first.workers,
        repetition: first.repetition,
        children: rows.len() as u32,
        workers_total: first.workers * rows.len() as u32,
        first_start_unix_ms: round3(first_start),
        last_finish_unix_ms: round3(last_finish),
        window_ms,
        start_spread_ms: spread(&sums.starts),
        finish_spread_ms: spread(&sums.finishes),
        cold_children: rows.iter().filter(|r| r.1).map(|r| r.0).collect(),
        missing_children: Vec::new(),
        wire_mib_per_s_total: (!children_wire.is_empty())
            .then(|| round3(children_wire.iter().map(|c| c.rx_mib_per_s).sum())),
        children_wire,
    };
    (merged_row(rows, sums, window_ms), config)
}

/// The merged row: sums, percentiles of the added histograms, rates over the window.
fn merged_row(rows: &[(u32, bool, &ConfigResult)], sums: Sums, window_ms: f64) -> ConfigResult {
    let first = rows[0].2;
    let (objects_per_s, mib_per_s) = rates(sums.ok, sums.bytes, (window_ms / 1000.0).max(1e-9));
    ConfigResult {
        bucket: first.bucket.clone(),
        workers: first.workers,
        repetition: first.repetition,
        pool_connections: first.pool_connections,
        requests: sums.requests,
        ok: sums.ok,
        errors: sums.errors,
        retries: sums.retries,
        throttled_responses: rows.iter().map(|r| r.2.throttled_responses).sum(),
        retries_by_cause: rows.iter().fold(Default::default(), |mut all, r| {
            all.add_all(&r.2.retries_by_cause);
            all
        }),
        bytes: sums.bytes,
        child: None,
        ttlb_histogram_us: encode_cdf(&sums.ttlb),
        wall_ms: window_ms,
        objects_per_s,
        mib_per_s,
        ttfb_ms: Percentiles::from_histogram_us(&sums.ttfb),
        ttlb_ms: Percentiles::from_histogram_us(&sums.ttlb),
        pool_wait_ms: Percentiles::from_histogram_us(&sums.pool_wait),
        cpu_ms: round3(sums.cpu_ms),
        cpu_ms_per_get: cpu_ms_per_get(sums.cpu_ms, sums.requests),
        connections_opened: sums.connections,
        connect_ms_total: round3(sums.connect_ms),
        session_requests: sums.sessions,
        cut_short: rows.iter().any(|r| r.2.cut_short),
        requests_not_done: rows.iter().map(|r| r.2.requests_not_done).sum(),
        tls_handshakes: sums.handshakes,
        warmup: None,
        error_samples: sums.samples,
        breakdown: None,
        client: None,
        diagnosis: None,
        axes: Axes {
            object_size_bytes: None,
            ..first.axes
        },
        hedging: rows.iter().filter_map(|r| r.2.hedging).reduce(|mut all, h| {
            all.add(&h);
            all
        }),
        emulated: first.emulated,
        wire: merged_wire(rows, (window_ms / 1000.0).max(1e-9), sums.bytes),
        round: first.round,
        run_index: first.run_index,
        in_burst: false,
        timeline: merged_timeline(rows, window_ms),
        overlap: None,
    }
}

/// The children's timelines on the coordinator's clock: each shifted by when its timed
/// phase began after the first child's.
fn merged_timeline(rows: &[(u32, bool, &ConfigResult)], window_ms: f64) -> Option<crate::model::Timeline> {
    let first = rows
        .iter()
        .filter_map(|r| r.2.child.as_ref().map(|c| c.started_unix_ms))
        .fold(f64::INFINITY, f64::min);
    let parts: Vec<(f64, &crate::model::Timeline)> = rows
        .iter()
        .filter_map(|r| {
            let offset = r.2.child.as_ref().map_or(0.0, |c| c.started_unix_ms - first);
            r.2.timeline.as_ref().map(|t| (offset, t))
        })
        .collect();
    crate::model::Timeline::merged(&parts, window_ms)
}

/// Each child's wire rate (children that recorded one).
fn children_wire(rows: &[(u32, bool, &ConfigResult)]) -> Vec<ChildWire> {
    rows.iter()
        .filter_map(|(index, _, r)| {
            r.wire.as_ref().map(|w| ChildWire {
                child: *index,
                rx_mib_per_s: w.rx_mib_per_s,
            })
        })
        .collect()
}

/// The merged row's wire block: the children's received bytes and packets summed,
/// over the common window (children without counters left out; `None` if none had).
fn merged_wire(rows: &[(u32, bool, &ConfigResult)], window_s: f64, body_bytes: u64) -> Option<WireCounts> {
    let walls: Vec<&WireCounts> = rows.iter().filter_map(|r| r.2.wire.as_ref()).collect();
    let first = walls.first()?;
    let rx_bytes: u64 = walls.iter().map(|w| w.rx_bytes).sum();
    Some(WireCounts {
        interfaces: first.interfaces.clone(),
        rx_bytes,
        rx_packets: walls.iter().map(|w| w.rx_packets).sum(),
        rx_mib_per_s: round3(rx_bytes as f64 / (1024.0 * 1024.0) / window_s),
        wire_to_body_ratio: (body_bytes > 0).then(|| crate::model::stats::sig4(rx_bytes as f64 / body_bytes as f64)),
        other_traffic: false,
    })
}

fn push_sample(samples: &mut Vec<String>, s: String) {
    if samples.len() < 3 {
        samples.push(s);
    }
}

/// The coordinator's result document (`s3sweep.result/v1`): its environment and
/// request, the merged rows, and the fan-out block (the caller runs the analysis step).
/// `started_unix_ms` and `total_wall_ms` are the caller's to fill in.
pub(crate) fn merged_result(
    environment: Environment,
    plan: &Plan,
    function_name: &str,
    start_unix_ms: u64,
    outcomes: Vec<ChildOutcome>,
) -> SweepResult {
    let (rows, report) = merge(plan, function_name, start_unix_ms, outcomes);
    let mut base = SweepResult::new(environment, plan.request().clone(), 0);
    base.skipped = report
        .configurations
        .iter()
        .filter(|c| !c.missing_children.is_empty())
        .map(|c| SkippedConfig {
            bucket: c.bucket.clone(),
            workers: c.workers,
            repetition: c.repetition,
            reason: format!("children {:?} did not run it (deadline)", c.missing_children),
            axes: Axes::default(),
        })
        .collect();
    base.truncated = !base.skipped.is_empty() || report.children.iter().any(|c| !c.skipped.is_empty());
    base.results = rows;
    base.network = merged_network(plan, report.probe.as_ref());
    base.fanout = Some(report);
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        ChildError, ChildErrorKind, ChildMeasure, Hedge, HedgeCounts, KeyRange, LambdaEnvironment, Runner,
    };
    use hdrhistogram::Histogram;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    fn child_row(
        bucket: &str,
        workers: u32,
        start_ms: f64,
        wall_ms: f64,
        ttfb_us: &[u64],
        errors: u64,
    ) -> ConfigResult {
        let mut row = crate::model::test_rows::row(bucket, workers, 1, wall_ms, errors);
        let started = UNIX_EPOCH + Duration::from_secs_f64(start_ms / 1000.0);
        let h = hist(ttfb_us);
        row.requests = ttfb_us.len() as u64 + errors;
        row.ok = ttfb_us.len() as u64;
        row.bytes = row.ok * 46_080;
        row.ttlb_histogram_us = crate::model::histogram::encode_cdf(&h);
        row.child = Some(ChildMeasure::new(
            started,
            Duration::from_secs_f64(wall_ms / 1000.0),
            [&h, &h, &hist(&[1])],
        ));
        row
    }

    /// A child's result: the shared fixture with a Lambda environment.
    fn child_result(rows: Vec<ConfigResult>, cold: bool) -> SweepResult {
        let mut result = crate::model::test_rows::result(rows);
        result.environment.runner = Runner::Lambda;
        result.environment.lambda = Some(LambdaEnvironment {
            function_name: Some("f".into()),
            function_version: None,
            memory_size_mb: None,
            cold_start: cold,
            architecture: None,
            region: None,
            request_id: Some("req".into()),
            remaining_ms_at_start: None,
            safety_margin_ms: 0,
            deployment: None,
            substrate: None,
            init_us: None,
        });
        result
    }

    fn plan() -> Plan {
        Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [4], "object_count": 30,
            "fanout": {"invocations": 3, "start_delay_ms": 500}
        }))
        .unwrap()
    }

    fn outcome(index: u32, result: Result<SweepResult, ChildError>) -> ChildOutcome {
        ChildOutcome {
            index,
            key_range: KeyRange {
                start: index * 10,
                end: index * 10 + 10,
            },
            seed: 1,
            invoke_ms: 10.0,
            result,
        }
    }

    #[test]
    fn merge_sums_counts_and_merges_histograms_not_percentiles() {
        // Child 0: ten fast requests; child 1: ten slow ones; child 2 failed.
        let fast: Vec<u64> = (1..=10).map(|i| i * 1_000).collect();
        let slow: Vec<u64> = (1..=10).map(|i| 100_000 + i * 1_000).collect();
        let c0 = child_result(vec![child_row("b-1", 4, 1_000_000.0, 100.0, &fast, 0)], false);
        let c1 = child_result(vec![child_row("b-1", 4, 1_000_020.0, 200.0, &slow, 2)], true);
        let failed = ChildError {
            kind: ChildErrorKind::FunctionError,
            error_type: Some("InvalidEvent".into()),
            message: "invalid request".into(),
        };
        let outcomes = vec![outcome(0, Ok(c0)), outcome(1, Ok(c1)), outcome(2, Err(failed))];
        let (rows, report) = merge(&plan(), "s3sweep-lambda", 1_000_000, outcomes);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.requests, 22);
        assert_eq!(r.ok, 20);
        assert_eq!(r.errors.total, 2);
        assert_eq!(r.errors.not_found, 2);
        assert_eq!(r.bytes, 20 * 46_080);
        // Window: first start (1,000,000) to last finish (1,000,020 + 200).
        assert_eq!(r.wall_ms, 220.0);
        assert_eq!(r.objects_per_s, round3(20.0 / 0.22));
        // The merged median is that of all 20 samples (between the two groups), not
        // the mean of the children's medians (~55.5 ms).
        let all: Vec<u64> = fast.iter().chain(&slow).copied().collect();
        let expected = Percentiles::from_histogram_us(&hist(&all));
        assert_eq!(r.ttfb_ms, expected);
        assert_eq!(r.ttfb_ms.count, 20);
        assert!((r.ttfb_ms.p50 - 10.0).abs() < 0.05, "{:?}", r.ttfb_ms);
        assert!((r.ttfb_ms.max - 110.0).abs() < 0.1, "{:?}", r.ttfb_ms);
        assert!(r.child.is_none());
        // The merged row's CDF covers all 20 samples (from the merged histogram).
        let cdf = r.ttlb_cdf().unwrap().unwrap();
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.iter().any(|p| (p.1 - 0.5).abs() < 1e-9 && p.0 < 20.0), "{cdf:?}");
        assert!(cdf.last().unwrap().0 > 100.0, "{cdf:?}");
        let c = &report.configurations[0];
        assert_eq!(c.children, 2);
        assert_eq!(c.workers_total, 8);
        assert_eq!(c.start_spread_ms, 20.0);
        assert_eq!(c.finish_spread_ms, 120.0);
        assert_eq!(c.cold_children, vec![1]);
        assert_eq!(report.children_ok, 2);
        assert_eq!(report.children_failed, 1);
        let failed = &report.children[2];
        assert_eq!(failed.status, Outcome::Failed);
        assert_eq!(
            failed.error.as_ref().unwrap().error_type.as_deref(),
            Some("InvalidEvent")
        );
        // Kept child rows keep their window but not their histograms.
        let kept = report.children[0].results[0].child.as_ref().unwrap();
        assert!(kept.histograms.is_none());
        assert!(report.children[0].results[0].ttlb_histogram_us.is_none());
        assert_eq!(kept.started_unix_ms, 1_000_000.0);
    }

    #[test]
    fn the_childrens_wire_rates_are_listed_and_added() {
        let wired = |start_ms: f64, rx_mib_per_s: f64| {
            let mut row = child_row("b-1", 4, start_ms, 100.0, &[1000; 10], 0);
            row.wire = Some(WireCounts {
                interfaces: vec!["eth0".into()],
                rx_bytes: (rx_mib_per_s * 0.1 * 1024.0 * 1024.0) as u64,
                rx_packets: 100,
                rx_mib_per_s,
                wire_to_body_ratio: None,
                other_traffic: false,
            });
            child_result(vec![row], false)
        };
        let outcomes = vec![outcome(0, Ok(wired(0.0, 70.0))), outcome(1, Ok(wired(0.0, 75.0)))];
        let (rows, report) = merge(&plan(), "f", 0, outcomes);
        let c = &report.configurations[0];
        let rates: Vec<(u32, f64)> = c.children_wire.iter().map(|w| (w.child, w.rx_mib_per_s)).collect();
        assert_eq!(rates, vec![(0, 70.0), (1, 75.0)]);
        assert_eq!(c.wire_mib_per_s_total, Some(145.0));
        let w = rows[0].wire.as_ref().unwrap();
        assert_eq!(w.rx_packets, 200);
        // Both children over the same 100 ms window: the merged rate is their sum.
        assert!((w.rx_mib_per_s - 145.0).abs() < 0.01, "{w:?}");
    }

    #[test]
    fn hedged_rows_merge_with_hedged_rows_their_counts_summed() {
        let plan = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [4], "object_count": 20, "hedge": ["off", "p95"],
            "fanout": {"invocations": 2}
        }))
        .unwrap();
        let child = |sent: u64| {
            let off = child_row("b-1", 4, 0.0, 100.0, &[1000; 10], 0);
            let mut p95 = child_row("b-1", 4, 0.0, 50.0, &[1000; 10], 0);
            p95.axes.hedge = Hedge::Percentile(95);
            p95.hedging = Some(HedgeCounts {
                hedges_sent: sent,
                hedges_won: 1,
                hedge_discarded_bytes: 10,
                hedges_refused: 0,
            });
            child_result(vec![off, p95], false)
        };
        let (rows, _) = merge(&plan, "f", 0, vec![outcome(0, Ok(child(2))), outcome(1, Ok(child(3)))]);
        let got: Vec<(Hedge, Option<HedgeCounts>, u64)> =
            rows.iter().map(|r| (r.axes.hedge, r.hedging, r.ok)).collect();
        let summed = HedgeCounts {
            hedges_sent: 5,
            hedges_won: 2,
            hedge_discarded_bytes: 20,
            hedges_refused: 0,
        };
        assert_eq!(
            got,
            vec![(Hedge::Off, None, 20), (Hedge::Percentile(95), Some(summed), 20)]
        );
    }

    /// A child's result whose probe settled at `sustained` MiB/s.
    fn probed(sustained: f64, lower_bound: bool, row_mib_per_s: f64) -> SweepResult {
        let mut row = child_row("b-1", 4, 0.0, 100.0, &[1000; 10], 0);
        row.mib_per_s = row_mib_per_s;
        let mut result = child_result(vec![row], false);
        result.network = Some(NetworkReport {
            order: crate::model::Order::Ascending,
            order_seed: None,
            pool_idle_timeout_ms: 15_000,
            ceiling: None,
            probe: Some(crate::model::ProbeReport {
                bucket: "b-1".into(),
                kind: crate::model::ProbeObjectKind::ProbeObject,
                key: "s3sweep/probe-object".into(),
                streams: 8,
                requests: 10,
                errors: 0,
                body_bytes: 1 << 28,
                wall_ms: 4000.0,
                sustained_mib_per_s: sustained,
                peak_mib_per_s: sustained,
                interval_ms: 100,
                interval_mib_per_s: vec![sustained; 40],
                burst: None,
                cores_busy: 0.2,
                usable_cores: 1.0,
                machine_cores_busy: None,
                lower_bound,
                stopped_by: crate::model::network::ProbeStop::Time,
                explanation: String::new(),
            }),
        });
        result
    }

    /// The merged answer keeps each answering child's probe (a failed child left out),
    /// its ceiling is their sum, a lower-bound child makes the sum a lower bound, and
    /// with no child probed there is no probe block.
    #[test]
    fn each_childs_probe_is_kept_and_the_merged_ceiling_is_their_sum() {
        // Three functions, three NICs of about 75 MiB/s; child 2 failed (left out).
        let failed = ChildError {
            kind: ChildErrorKind::Timeout,
            error_type: None,
            message: "timed out".into(),
        };
        let outcomes = vec![
            outcome(0, Ok(probed(74.0, false, 70.0))),
            outcome(1, Ok(probed(76.0, false, 72.0))),
            outcome(2, Err(failed)),
        ];
        let env = child_result(vec![], false).environment;
        let mut result = merged_result(env, &plan(), "f", 0, outcomes);
        let probe = result.fanout.as_ref().unwrap().probe.clone().expect("a probe block");
        let per_child: Vec<(u32, f64)> = probe
            .children
            .iter()
            .map(|c| (c.child, c.sustained_mib_per_s))
            .collect();
        assert_eq!(per_child, vec![(0, 74.0), (1, 76.0)]);
        assert_eq!(probe.aggregate_mib_per_s, 150.0);
        assert!(!probe.lower_bound);
        let ceiling = result.network.as_ref().unwrap().ceiling.unwrap();
        assert_eq!((ceiling.mib_per_s, ceiling.source), (150.0, CeilingSource::Probe));
        // The merged row moved 142 MiB/s: near the sum of the NICs, far over any one.
        result.results[0].mib_per_s = 142.0;
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
        let d = result.results[0].diagnosis.as_ref().unwrap();
        assert_eq!(
            d.figures.get(crate::model::FigureName::BandwidthCeilingMibPerS),
            Some(crate::model::Figure::MibPerS(150.0)),
            "{d:?}"
        );
        // One child's figure a lower bound: so is the sum.
        let outcomes = vec![
            outcome(0, Ok(probed(74.0, false, 1.0))),
            outcome(1, Ok(probed(20.0, true, 1.0))),
        ];
        let (_, report) = merge(&plan(), "f", 0, outcomes);
        let probe = report.probe.unwrap();
        assert!(probe.lower_bound && probe.children[1].lower_bound);
        // No child probed: no probe block, no network block.
        let env = child_result(vec![], false).environment;
        let plain = merged_result(env, &plan(), "f", 0, vec![outcome(0, Ok(child_result(vec![], false)))]);
        assert!(plain.fanout.unwrap().probe.is_none() && plain.network.is_none());
    }

    #[test]
    fn a_child_missing_a_configuration_is_named_and_the_result_truncated() {
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [4, 8], "object_count": 30,
            "fanout": {"invocations": 2}
        }))
        .unwrap();
        let both = child_result(
            vec![
                child_row("b-1", 4, 0.0, 10.0, &[1000], 0),
                child_row("b-1", 8, 20.0, 10.0, &[1000], 0),
            ],
            false,
        );
        let one = child_result(vec![child_row("b-1", 4, 0.0, 10.0, &[1000], 0)], false);
        let env = child_result(vec![], false).environment;
        let mut result = merged_result(env, &p, "f", 0, vec![outcome(0, Ok(both)), outcome(1, Ok(one))]);
        // The coordinator's one analysis step: a merged result gets summaries and a
        // diagnosis like any other.
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
        assert_eq!(result.summary.len(), 1);
        assert!(result.results.iter().all(|r| r.diagnosis.is_some()));
        assert_eq!(result.analysis.as_ref().map(|a| a.buckets.len()), Some(1));
        assert_eq!(result.results.len(), 2);
        assert_eq!(result.results[1].ok, 1);
        assert!(result.truncated);
        assert_eq!(result.skipped.len(), 1);
        assert!(result.skipped[0].reason.contains("[1]"), "{:?}", result.skipped);
        let fanout = result.fanout.unwrap();
        assert_eq!(fanout.configurations[1].missing_children, vec![1]);
    }
}

//! Analysis: functions from model values to model values. [`analyse`] is the one step
//! the adapters call on a measured result; the parts:
//!
//! - [`summary`]: best configuration, one-worker speed-up and knee per bucket;
//! - [`rules`]: what bound each configuration, by an ordered list of rules with
//!   thresholds; [`verdict`]: the same read against each bucket's curve;
//! - [`story`]: one story per bucket from its rows' verdicts: the curve's shape (knee or
//!   still rising), what binds, the recommendation and the plot's subtitle;
//! - [`fit`]: the throughput model fitted per bucket, its predictions, and the
//!   bucket-vs-bucket comparison; [`forecast`]: which predictions agree with the
//!   verdict, so the story may print them;
//! - [`cost`]: what each configuration's GETs and Lambda time cost;
//! - [`memory`]: a memory sweep's fastest and cheapest memory x workers per bucket;
//! - [`sizes`]: on a size axis, where the binding limit changes with the object size;
//! - [`timeline`]: what each row's timeline says (a burst then a settled rate,
//!   throttling that began, a stall, a slow start, the stragglers), as notes;
//! - [`link`]: what the rows showed of the client's link, as the `bandwidth` rule
//!   reads it, and that rule's explanations;
//! - [`network`]: the bandwidth ceiling the verdicts use (the user's, the probe's, or
//!   read from the sweep's own rows by evidence) and the rows that ran on burst credit;
//! - [`clients`]: with `clients: ["sdk", "lean"]`, what the lean client reached
//!   beside each CPU-bound SDK row, and what that means in Lambda memory;
//! - [`hedging`]: with `hedge`, what each hedged row bought against the unhedged one
//!   beside it (wall time, p99, extra GETs and their price) and whether it paid;
//! - [`compare`]: two results side by side, with significance from repetitions
//!   ([`significance`]: the tests and Holm's correction);
//! - [`history`]: many results over time as series per configuration, with the
//!   change points found by the same tests.

pub(crate) mod clients;
pub mod compare;
pub mod cost;
pub(crate) mod fit;
pub(crate) mod forecast;
pub(crate) mod hedging;
pub mod history;
pub(crate) mod link;
pub(crate) mod memory;
pub(crate) mod network;
pub(crate) mod rules;
pub(crate) mod significance;
pub(crate) mod sizes;
pub(crate) mod story;
pub(crate) mod summary;
pub(crate) mod timeline;
pub(crate) mod verdict;

use crate::model::result::worker_counts;
use crate::model::stats::median;
use crate::model::RunKind;
use crate::model::{
    group_by_axes, Analysis, BucketComparison, BucketSummary, ConfigResult, CpuSource, CurveAnalysis, MemoryChoice,
    MemoryCost, SweepResult, Thresholds, Verdict, WorkerVerdict,
};

use fit::{analyse_curve, compare_buckets, ModelInputs};
use rules::diagnose_row_with;
use summary::summarize;
use verdict::{curve_verdicts, queueing_notes, Terms};

/// The one analysis step every adapter calls on a finished result: per-bucket
/// summaries, every row's verdict, and per bucket the curve analysis, model fit,
/// predictions and the bucket-vs-bucket comparison. Model in, model out: it reads only
/// the document, so a merged fan-out result gets the same analysis as a plain run.
///
/// A memory sweep's rows (`memory_mb` set) are analysed size by size, each size as a
/// sweep of its own (summaries and curves then carry `memory_mb`), and the memory
/// block gets each bucket's fastest and cheapest memory x workers. A size axis's rows
/// (`object_size_bytes` a number) are analysed object size by object size the same
/// way, and each bucket gets a note on where its binding limit changes with size. The
/// rows of each client (request `clients`) are analysed apart in the same way
/// (summaries and curves carry `s3_client`); then a CPU-bound SDK row says what the
/// lean client reached ([`clients`]).
pub fn analyse(result: &mut SweepResult, thresholds: &Thresholds) {
    let kind = result.run_kind();
    if kind == RunKind::Plain {
        analyse_one(result, thresholds);
        return;
    }
    let rows = std::mem::take(&mut result.results);
    // One group per axes (memory size x object size x client ...), in the order first
    // run; rows without a memory size after a memory sweep's.
    let mut groups = group_by_axes(&rows, |r| r.axes.key());
    let mut analysed: Vec<Option<ConfigResult>> = vec![None; rows.len()];
    let (mut summary, mut buckets, mut comparisons) = (Vec::new(), Vec::new(), Vec::new());
    groups.sort_by_key(|g| g.0.memory_mb.is_none() && kind == RunKind::MemorySweep);
    for (axes, index) in groups {
        let mut part = SweepResult {
            results: index.iter().map(|&i| rows[i].clone()).collect(),
            fanout: None,
            memory: None,
            ..result.clone()
        };
        if let (Some(l), Some(m)) = (part.environment.lambda.as_mut(), axes.memory_mb) {
            l.memory_size_mb = Some(m);
        }
        analyse_one(&mut part, thresholds);
        for (i, row) in index.into_iter().zip(part.results) {
            analysed[i] = Some(row);
        }
        summary.extend(part.summary.into_iter().map(|s| BucketSummary { axes, ..s }));
        if let Some(a) = part.analysis {
            buckets.extend(a.buckets.into_iter().map(|c| CurveAnalysis { axes, ..c }));
            comparisons.extend(a.comparisons.into_iter().map(|c| BucketComparison { axes, ..c }));
        }
    }
    result.results = analysed.into_iter().flatten().collect();
    result.summary = summary;
    result.analysis = Some(Analysis {
        thresholds: *thresholds,
        buckets,
        comparisons,
        size_limits: sizes::size_limits(&result.results),
    });
    clients::lean_notes(&mut result.results);
    hedging::hedge_notes(result);
    if kind == RunKind::MemorySweep {
        memory_answers_per_client(result);
    }
}

/// A memory sweep's answers per client and hedge policy (each group of rows alike but
/// for the memory), within `target`, and the first group's costs: what the analysis
/// stores and the report prints.
pub(crate) fn memory_answers(result: &SweepResult, target: Option<u64>) -> (Vec<MemoryChoice>, Vec<MemoryCost>) {
    // Only a memory sweep has answers: no copy of the rows for any other run.
    if result.run_kind() != RunKind::MemorySweep {
        return (Vec::new(), Vec::new());
    }
    let mut choices = Vec::new();
    let mut costs = Vec::new();
    let groups = group_by_axes(&result.results, |r| r.axes.key().without_memory());
    for (i, (axes, index)) in groups.into_iter().enumerate() {
        let part = SweepResult {
            results: index.iter().map(|&i| result.results[i].clone()).collect(),
            ..result.clone()
        };
        let mine = memory::choices(&part, target);
        choices.extend(mine.into_iter().map(|c| MemoryChoice { axes, ..c }));
        if i == 0 {
            costs = memory::costs(&part);
        }
    }
    (choices, costs)
}

/// A memory sweep's answers, one per client (and other axes but the memory): the
/// fastest and cheapest memory size for the SDK, and for a client costing less CPU per
/// GET. The cost table is the first client's (the SDK's unless the request says
/// otherwise): one row per bucket, memory and workers.
fn memory_answers_per_client(result: &mut SweepResult) {
    let target = result.request.target_wall_ms;
    let (choices, costs) = memory_answers(result, target);
    if let Some(m) = result.memory.as_mut() {
        m.choices = choices;
        m.costs = costs;
    }
}

/// A bucket's curve: per worker count, its verdict, and (without errors) the point the
/// model fits: workers, the requests that could be in flight, the median objects/s.
fn curve_points(rows: &[&ConfigResult]) -> (Vec<(u32, f64, f64)>, Vec<WorkerVerdict>) {
    let mut points = Vec::new();
    let mut verdicts = Vec::new();
    for w in worker_counts(rows.iter().copied()) {
        let same: Vec<&&ConfigResult> = rows.iter().filter(|r| r.workers == w).collect();
        if let Some(d) = same.first().and_then(|r| r.diagnosis.as_ref()) {
            verdicts.push(WorkerVerdict {
                workers: w,
                verdict: d.verdict,
            });
        }
        if same.iter().any(|r| r.errors.total > 0) {
            continue;
        }
        let possible = f64::from(w.min(same[0].pool_connections));
        if let Some(x) = median(same.iter().map(|r| r.objects_per_s).collect()) {
            points.push((w, possible, x));
        }
    }
    (points, verdicts)
}

fn analyse_one(result: &mut SweepResult, thresholds: &Thresholds) {
    let thresholds = &network::ceiling(result, thresholds);
    network::flag_bursts(result, thresholds);
    timeline::flag_bursts(&mut result.results);
    let (thresholds, link) = network::by_evidence(result, thresholds);
    let thresholds = &thresholds;
    result.summary = summarize(&result.results);
    let vcpus = result.environment.vcpus;
    for (row, link) in result.results.iter_mut().zip(link) {
        let t = timeline::row_thresholds(row, thresholds);
        row.diagnosis = Some(diagnose_row_with(row, vcpus, &t, link));
    }
    let queueing = queueing_notes(&mut result.results);
    curve_verdicts(&mut result.results, &queueing, Terms::of(result.environment.runner));
    network::flag_other_traffic(&mut result.results);
    network::shared_pool_notes(result);
    result.results.iter_mut().for_each(timeline::annotate);
    timeline::burst_notes(&mut result.results);
    let lambda_memory = result
        .environment
        .lambda
        .as_ref()
        .and_then(|l| l.memory_size_mb)
        .filter(|_| result.environment.cpu_source == Some(CpuSource::LambdaMemory));
    let mut analyses = Vec::new();
    for summary in &result.summary {
        let rows: Vec<&ConfigResult> = result.rows_of(&summary.bucket).collect();
        let (points, verdicts) = curve_points(&rows);
        let client_cores = rows
            .iter()
            .find_map(|r| r.client.as_ref().map(|c| c.client_cores))
            .unwrap_or(f64::from(vcpus.max(1)));
        let size = median(
            rows.iter()
                .filter(|r| r.ok > 0)
                .map(|r| r.bytes as f64 / r.ok as f64)
                .collect(),
        )
        .unwrap_or(0.0);
        let inputs = ModelInputs {
            client_cpu_ms_per_request: median(rows.iter().map(|r| r.cpu_ms_per_get).filter(|c| *c > 0.0).collect()),
            client_cores,
            cores_scale_with_vcpus: true,
            bandwidth_ceiling_mib_per_s: thresholds.bandwidth_ceiling_mib_per_s,
            object_size_bytes: size,
            objects: rows.first().map_or(1, |r| r.requests),
            // The machine's CPU (the client's and a server's on it) is CPU too: more
            // vCPUs move it.
            plateau_is_client_cpu: verdicts
                .last()
                .is_some_and(|v| matches!(v.verdict, Verdict::ClientCpu | Verdict::MachineCpu)),
            lambda_memory_mb: lambda_memory,
        };
        analyses.push(analyse_curve(&summary.bucket, &points, &inputs, verdicts));
    }
    let comparisons = compare_buckets(&analyses, result);
    result.analysis = Some(Analysis {
        thresholds: *thresholds,
        buckets: analyses,
        comparisons,
        size_limits: Vec::new(),
    });
}

/// A result around `rows` (see [`crate::model::test_rows::result`]) with its summaries.
#[cfg(test)]
pub(crate) fn summarized(rows: Vec<ConfigResult>) -> SweepResult {
    let mut result = crate::model::test_rows::result(rows);
    result.summary = summarize(&result.results);
    result
}

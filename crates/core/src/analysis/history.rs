//! `history`: many results of the same sweep over time, grouped by configuration
//! (bucket, workers and the [`Axes`]: object size, client, memory; plus the
//! function's own memory), each configuration a series of runs ordered by
//! `started_unix_ms`. A change point is where a series steps beyond its runs' own
//! spread, found with the statistics `compare` uses ([`super::significance`]): every
//! candidate (a step at run i; or, up to [`MAX_RUNS_FOR_STRETCHES`] runs, a stretch
//! i..j that stepped and came back), leaving at least [`MIN_REPETITIONS`] runs in
//! each part, is tested with the Mann-Whitney U test (the stretch's runs against the
//! rest), the p-values of one search corrected together with Holm's method
//! (family-wise [`ALPHA`]); the candidate with the smallest p is the change when it
//! passes, and each part is searched again (binary segmentation). The measures
//! searched are an ordered list of small rules ([`RULES`]), each giving one value per
//! run (the median of the run's repetitions).

use serde::Serialize;

use crate::model::stats::median;
use crate::model::{Axes, ConfigResult, SweepResult, Verdict};

use super::compare::MIN_REPETITIONS;
use super::significance::{holm, mann_whitney_p_of_u, ALPHA};

/// One run of one configuration: its repetitions' medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The run's position among the runs read, oldest first, from 1.
    pub run: usize,
    pub run_id: String,
    pub started_unix_ms: u64,
    pub objects_per_s: f64,
    pub ttfb_p50_ms: f64,
    pub ttfb_p99_ms: f64,
    /// Failed requests, summed over the repetitions.
    pub errors: u64,
    /// The verdict of the run's first repetition with one.
    pub verdict: Option<Verdict>,
    /// What the run measured with, in words (objects, their size, the network path
    /// and Lambda memory): runs of one series whose setups differ are not the same
    /// sweep, and `history` says so.
    pub setup: String,
}

/// The setup of a run's configuration, in words: the objects read and their size
/// (the rows' bytes per GET), the function's memory and network path when in Lambda.
fn setup_of(result: &SweepResult, rows: &[&ConfigResult]) -> String {
    let size = median(
        rows.iter()
            .filter(|r| r.ok > 0)
            .map(|r| r.bytes as f64 / r.ok as f64)
            .collect(),
    );
    let mut words = format!("{} objects", result.request.object_count);
    if let Some(bytes) = size {
        words.push_str(&format!(" of {bytes:.0} bytes"));
    }
    if let Some(l) = &result.environment.lambda {
        if let Some(mb) = l.memory_size_mb {
            words.push_str(&format!(", Lambda {mb} MB"));
        }
        if let Some(d) = &l.deployment {
            words.push_str(&format!(", network {}", d.describe()));
        }
    }
    words
}

/// The measures a change point is looked for in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    ObjectsPerS,
    TtfbP50Ms,
}

impl Measure {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Measure::ObjectsPerS => "objects/s",
            Measure::TtfbP50Ms => "first-byte p50 ms",
        }
    }
}

/// A step in one measure of one series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    pub measure: Measure,
    /// The first run after the change ([`Point::run`]).
    pub run: usize,
    pub started_unix_ms: u64,
    /// Medians of the runs before and after, within the segment searched.
    pub before: f64,
    pub after: f64,
    /// `after / before`.
    pub ratio: f64,
    pub p: f64,
    pub p_adjusted: f64,
}

/// One configuration's runs and the changes found in them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub bucket: String,
    pub workers: u32,
    pub axes: Axes,
    /// The function's memory (MB) when the runs were in Lambda.
    pub function_memory_mb: Option<u32>,
    pub points: Vec<Point>,
    pub changes: Vec<ChangePoint>,
}

/// Every series of the results read, in the order first seen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub runs: usize,
    pub series: Vec<Series>,
}

/// A rule: the measure and its value for one run.
type Rule = (Measure, fn(&Point) -> f64);

/// The measures searched, in order.
pub(crate) const RULES: &[Rule] = &[
    (Measure::ObjectsPerS, |p| p.objects_per_s),
    (Measure::TtfbP50Ms, |p| p.ttfb_p50_ms),
];

/// The history of `results` (any order: they are sorted by start time).
pub fn history(results: &[SweepResult]) -> History {
    let mut runs: Vec<&SweepResult> = results.iter().collect();
    runs.sort_by_key(|r| r.started_unix_ms);
    let mut series: Vec<Series> = Vec::new();
    for (i, result) in runs.iter().enumerate() {
        let memory = result.environment.lambda.as_ref().and_then(|l| l.memory_size_mb);
        for (key, rows) in configurations(result) {
            let point = point_of(i + 1, result, &rows);
            let (bucket, workers, axes) = key;
            match series.iter_mut().find(|s| {
                s.bucket == bucket && s.workers == workers && s.axes == axes && s.function_memory_mb == memory
            }) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    bucket,
                    workers,
                    axes,
                    function_memory_mb: memory,
                    points: vec![point],
                    changes: Vec::new(),
                }),
            }
        }
    }
    for s in &mut series {
        s.changes = changes(&s.points);
    }
    History {
        runs: runs.len(),
        series,
    }
}

type Key = (String, u32, Axes);

/// The rows of one result grouped by configuration, in the order first seen.
fn configurations(result: &SweepResult) -> Vec<(Key, Vec<&ConfigResult>)> {
    let mut out: Vec<(Key, Vec<&ConfigResult>)> = Vec::new();
    for row in &result.results {
        let key = (row.bucket.clone(), row.workers, row.axes.key());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => out.push((key, vec![row])),
        }
    }
    out
}

fn point_of(run: usize, result: &SweepResult, rows: &[&ConfigResult]) -> Point {
    let med = |v: Vec<f64>| median(v).unwrap_or(0.0);
    Point {
        run,
        run_id: result.request.run_id.clone().unwrap_or_default(),
        started_unix_ms: result.started_unix_ms,
        objects_per_s: med(rows.iter().map(|r| r.objects_per_s).collect()),
        ttfb_p50_ms: med(rows.iter().map(|r| r.ttfb_ms.p50).collect()),
        ttfb_p99_ms: med(rows.iter().map(|r| r.ttfb_ms.p99).collect()),
        errors: rows.iter().map(|r| r.errors.total).sum(),
        verdict: rows.iter().find_map(|r| r.diagnosis.as_ref().map(|d| d.verdict)),
        setup: setup_of(result, rows),
    }
}

/// The change points of a series, every measure of [`RULES`], oldest first.
fn changes(points: &[Point]) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    for &(measure, value) in RULES {
        let values: Vec<f64> = points.iter().map(value).collect();
        let mut splits = Vec::new();
        segment(&values, 0, &mut splits);
        for (k, before, after, p, p_adjusted) in splits {
            let at = &points[k];
            out.push(ChangePoint {
                measure,
                run: at.run,
                started_unix_ms: at.started_unix_ms,
                before,
                after,
                ratio: if before > 0.0 { after / before } else { f64::NAN },
                p,
                p_adjusted,
            });
        }
    }
    out.sort_by_key(|c| c.run);
    out
}

/// A change found: the index of the first value after it, the medians before and
/// after, its p and Holm-adjusted p.
type Split = (usize, f64, f64, f64, f64);

/// Longest series (runs) searched for a stretch that stepped and came back; longer
/// ones are searched for single steps only (the search grows with the square).
pub(crate) const MAX_RUNS_FOR_STRETCHES: usize = 64;

/// The candidates of a segment of `n` runs: `(i, j)`, runs `i..j` against the rest,
/// every part at least [`MIN_REPETITIONS`] runs. `j == n` is a single step at `i`; a
/// stretch `i..j` inside is a step and a step back (searched up to
/// [`MAX_RUNS_FOR_STRETCHES`] runs).
fn candidates(n: usize) -> Vec<(usize, usize)> {
    let m = MIN_REPETITIONS;
    let mut out: Vec<(usize, usize)> = (m..=n.saturating_sub(m)).map(|i| (i, n)).collect();
    if n <= MAX_RUNS_FOR_STRETCHES {
        for i in m..n {
            out.extend((i + m..=n.saturating_sub(m)).map(|j| (i, j)));
        }
    }
    out
}

/// The ranks of `values` among themselves, from 1, ties given their mean rank, as
/// running sums: `sums[k]` is the ranks of `values[..k]` added up.
fn rank_sums(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start+1..=end, shared.
        let mean = (start + 1 + end) as f64 / 2.0;
        for &k in &order[start..end] {
            ranks[k] = mean;
        }
        start = end;
    }
    let mut sums = Vec::with_capacity(values.len() + 1);
    sums.push(0.0);
    for r in ranks {
        sums.push(sums.last().copied().unwrap_or(0.0) + r);
    }
    sums
}

/// The U of runs `i..j` of the segment against the rest (the pairs in which the
/// stretch's value is the larger, ties one half), from the segment's rank sums: the
/// stretch's ranks less the least they could be. One sort per segment, then each
/// candidate in constant time (comparing every pair made the search cubic in the
/// runs: `history --limit 5000` took 38 s).
fn u_of(sums: &[f64], i: usize, j: usize) -> f64 {
    let inside = (j - i) as f64;
    sums[j] - sums[i] - inside * (inside + 1.0) / 2.0
}

/// Binary segmentation of `values` (starting at `offset` in the series): the
/// candidate with the smallest p, when it passes after Holm's correction over every
/// candidate, then each part again.
fn segment(values: &[f64], offset: usize, out: &mut Vec<Split>) {
    let n = values.len();
    let cands = candidates(n);
    let sums = rank_sums(values);
    let ps: Vec<f64> = cands
        .iter()
        .map(|&(i, j)| mann_whitney_p_of_u(u_of(&sums, i, j), n - (j - i), j - i))
        .collect();
    let adjusted = holm(&ps);
    let Some(best) = (0..cands.len()).min_by(|&a, &b| ps[a].total_cmp(&ps[b])) else {
        return;
    };
    if adjusted[best] > ALPHA {
        return;
    }
    let (i, j) = cands[best];
    let med = |v: &[f64]| median(v.to_vec()).unwrap_or(0.0);
    let (before, inside) = (med(&values[..i]), med(&values[i..j]));
    out.push((offset + i, before, inside, ps[best], adjusted[best]));
    if j < n {
        out.push((offset + j, inside, med(&values[j..]), ps[best], adjusted[best]));
    }
    segment(&values[..i], offset, out);
    segment(&values[i..j], offset + i, out);
    segment(&values[j..], offset + j, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splits(values: &[f64]) -> Vec<usize> {
        let mut out = Vec::new();
        segment(values, 0, &mut out);
        out.iter().map(|s| s.0).collect()
    }

    /// A wobble that is not noise-free (ranks interleave) but has no step.
    fn flat(n: usize) -> Vec<f64> {
        (0..n).map(|i| 1000.0 + ((i * 7) % 5) as f64 * 10.0).collect()
    }

    #[test]
    fn a_step_halfway_is_found_where_it_is_and_nowhere_else() {
        let mut v = flat(20);
        for x in &mut v[10..] {
            *x *= 0.5;
        }
        assert_eq!(splits(&v), vec![10]);
    }

    #[test]
    fn a_flat_series_has_no_change() {
        assert!(splits(&flat(20)).is_empty());
        assert!(splits(&flat(40)).is_empty());
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut v = flat(30);
        for x in &mut v[10..20] {
            *x *= 0.5;
        }
        let mut found = splits(&v);
        found.sort();
        assert_eq!(found, vec![10, 20]);
    }

    #[test]
    fn long_flat_series_find_nothing() {
        assert!(splits(&flat(MAX_RUNS_FOR_STRETCHES)).is_empty());
        assert!(splits(&flat(200)).is_empty());
    }

    #[test]
    fn ranks_give_the_u_that_comparing_every_pair_gives() {
        use crate::analysis::significance::mann_whitney_p;
        // Ties on purpose: a value from a handful.
        let values: Vec<f64> = (0..40).map(|i| ((i * 37 + 11) % 7) as f64).collect();
        let sums = rank_sums(&values);
        for (i, j) in candidates(values.len()) {
            let rest: Vec<f64> = values[..i].iter().chain(&values[j..]).copied().collect();
            let (m, k) = (rest.len(), j - i);
            let p = mann_whitney_p_of_u(u_of(&sums, i, j), m, k);
            assert!((p - mann_whitney_p(&rest, &values[i..j])).abs() < 1e-12, "{i}..{j}");
        }
    }

    /// The search grows near linearly with the runs: 10 times the runs take about 13
    /// times the CPU (n log n: 13.3; 9.8 measured), under 25 (side by side, printed): a
    /// copy of the values per candidate measured 37.5x. Comparing every
    /// pair was cubic (`history --limit 5000`: 38 s); a copy of the rest per candidate,
    /// quadratic, measured 124x from 500 to 5,000 runs.
    #[test]
    fn the_search_grows_near_linearly_with_the_runs() {
        // The fastest of 9, the two sizes taken in turn, in this thread's CPU time: a
        // busy machine (the tests beside this one) takes the core away between the two
        // clock reads, which wall time would count (48x at a load of 20 on 2 cores).
        fn thread_cpu_s() -> f64 {
            let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes the timespec it is given.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
        }
        let once = |values: &[f64]| {
            let start = thread_cpu_s();
            segment(values, 0, &mut Vec::new());
            thread_cpu_s() - start
        };
        let (few, many) = (flat(1_000), flat(10_000));
        let (mut small, mut large) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..9 {
            small = small.min(once(&few));
            large = large.min(once(&many));
            // Spread over a second: some pair lands where the other tests are done.
            std::thread::sleep(std::time::Duration::from_millis(120));
        }
        let ratio = large / small;
        eprintln!(
            "segment: 1,000 runs {:.2} ms, 10,000 runs {:.2} ms: {ratio:.1}x",
            small * 1e3,
            large * 1e3
        );
        assert!(ratio < 25.0, "10x the runs took {ratio:.1}x the CPU");
    }

    #[test]
    fn too_few_runs_find_nothing() {
        assert!(splits(&[1.0, 1.0, 1.0, 5.0, 5.0]).is_empty());
    }
}

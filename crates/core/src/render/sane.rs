//! The values a figure plots, bounded before plotters sees them: a result file is the
//! user's (or anyone's) JSON, and plotters maps a coordinate far outside its axis to
//! a saturated pixel, then walks the line to it (a throughput of -1e308 drew for a
//! minute at 11 GB; a first-byte p50 of 1e-308 spun for minutes). [`plottable`]
//! keeps the rows whose plotted values are all finite and within the ranges below,
//! and says how many it left out and why; every panel then draws only sane values.
//!
//! | value | kept when |
//! |---|---|
//! | `workers` (x axis, log 2) | 1 or more |
//! | `axes.memory_mb` (x axis, log 2) | 1 to [`MAX_MEMORY_MB`] |
//! | `objects_per_s`, `mib_per_s` | 0 to [`MAX_RATE`] |
//! | `wall_ms`, `ttfb_ms`, `ttlb_ms` percentiles | 0 (none measured) or [`MIN_MS`] to [`MAX_MS`] |
//! | the `ttlb_histogram_us` CDF | every point [`MIN_MS`] to [`MAX_MS`], else the row's percentiles are drawn |
//! | a cost per 1,000 GETs (memory plot) | above 0, at most [`MAX_USD`] |
//! | the probe's `interval_mib_per_s` (the timeline panel) | an interval of 1 ms to [`MAX_MS`], every value a rate; else the probe's line is not drawn |
//! | a row's `timeline` (`report --timeline`) | an interval of 1 ms to [`MAX_MS`], every interval's objects/s and MiB/s a rate, its first-byte percentiles and the 95%/99% marks times, requests in flight 0 to [`MAX_RATE`]; else the row's timeline is not drawn |

use crate::model::{ConfigResult, Percentiles, SweepResult};

/// The highest rate plotted, objects or MiB per second (a billion: S3 serves a few
/// thousand GETs per second per prefix).
pub(crate) const MAX_RATE: f64 = 1e9;
/// The shortest time plotted, ms (a microsecond: no request over a socket is faster).
pub(crate) const MIN_MS: f64 = 1e-3;
/// The longest time plotted, ms (a billion ms, 11.6 days: no run lasts that long).
pub(crate) const MAX_MS: f64 = 1e9;
/// The largest memory size plotted, MB (Lambda's largest is 10,240).
pub(crate) const MAX_MEMORY_MB: u32 = 1 << 20;
/// The highest cost plotted, US$ per 1,000 GETs.
pub(crate) const MAX_USD: f64 = 1e9;

/// True when `v` is a rate the figure can draw.
pub(crate) fn rate(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_RATE).contains(&v)
}

/// True when `v` is a time the figure can draw: 0 (nothing measured, left off a log
/// axis) or within [`MIN_MS`]..=[`MAX_MS`].
pub(crate) fn ms(v: f64) -> bool {
    v == 0.0 || (MIN_MS..=MAX_MS).contains(&v)
}

/// True when `v` is a cost the figure can draw on its log axis.
pub(crate) fn usd(v: f64) -> bool {
    v.is_finite() && v > 0.0 && v <= MAX_USD
}

fn percentiles(p: &Percentiles) -> bool {
    [p.p50, p.p90, p.p99, p.max].into_iter().all(ms)
}

/// The first plotted value of `row` out of range, by name (`None`: the row is sane).
/// The checks, in order: the axes, the rates, the times.
fn out_of_range(row: &ConfigResult) -> Option<&'static str> {
    let checks: [(&'static str, bool); 7] = [
        ("workers", row.workers >= 1),
        (
            "memory_mb",
            row.axes.memory_mb.is_none_or(|m| (1..=MAX_MEMORY_MB).contains(&m)),
        ),
        ("objects_per_s", rate(row.objects_per_s)),
        ("mib_per_s", rate(row.mib_per_s)),
        ("wall_ms", ms(row.wall_ms)),
        ("ttfb_ms", percentiles(&row.ttfb_ms)),
        ("ttlb_ms", percentiles(&row.ttlb_ms)),
    ];
    checks.into_iter().find(|(_, ok)| !ok).map(|(name, _)| name)
}

/// True when the row's histogram CDF is all within range (or the row has none, or
/// it cannot be read: the plot then draws the percentiles, as for an older result).
fn histogram_sane(row: &ConfigResult) -> bool {
    match row.ttlb_cdf() {
        Some(Ok(points)) => points.iter().all(|&(v, f)| ms(v) && (0.0..=1.0).contains(&f)),
        _ => true,
    }
}

/// True when every value the timeline picture draws of `row` is in range (or the row
/// has no timeline).
fn timeline_sane(row: &ConfigResult) -> bool {
    let Some(t) = &row.timeline else {
        return true;
    };
    let interval_ms = f64::from(t.interval_ms);
    let per_s = 1000.0 / interval_ms.max(1.0);
    (1.0..=MAX_MS).contains(&interval_ms)
        && t.gets.iter().all(|&g| rate(f64::from(g) * per_s))
        && t.body_bytes.iter().all(|&b| rate(b as f64 / 1_048_576.0 * per_s))
        && t.ttfb_p50_ms.iter().chain(&t.ttfb_p99_ms).all(|&v| ms(v))
        && t.in_flight.iter().all(|&v| rate(v))
        && [t.done_95pct_ms, t.done_99pct_ms].into_iter().flatten().all(ms)
}

/// What [`plottable`] left out of a figure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Rows with a plotted value out of range, none of their values drawn.
    pub rows: usize,
    /// Rows whose histogram CDF was out of range (their percentiles drawn instead).
    pub histograms: usize,
    /// Rows whose timeline held a value out of range (their timeline not drawn).
    pub timelines: usize,
    /// The fields that were out of range, each once, in the order found.
    pub fields: Vec<&'static str>,
}

impl LeftOut {
    /// A line for stderr, or `None` when nothing was left out.
    pub fn note(&self) -> Option<String> {
        if self.rows == 0 && self.histograms == 0 && self.timelines == 0 {
            return None;
        }
        let timelines = match self.timelines {
            0 => String::new(),
            n => format!(", {n} timeline(s)"),
        };
        Some(format!(
            "plot: left out {} row(s) and {} latency histogram(s){timelines} with values out of the plottable range ({})",
            self.rows,
            self.histograms,
            self.fields.join(", ")
        ))
    }
}

/// `result` with only the rows a figure can draw, and what was left out.
pub(crate) fn plottable(result: &SweepResult) -> (SweepResult, LeftOut) {
    let mut kept = result.clone();
    let mut left = LeftOut::default();
    let note = |left: &mut LeftOut, name| {
        if !left.fields.contains(&name) {
            left.fields.push(name);
        }
    };
    kept.results.retain(|row| match out_of_range(row) {
        Some(name) => {
            left.rows += 1;
            note(&mut left, name);
            false
        }
        None => true,
    });
    for row in &mut kept.results {
        if !histogram_sane(row) {
            row.ttlb_histogram_us = None;
            left.histograms += 1;
            note(&mut left, "ttlb_histogram_us");
        }
        if !timeline_sane(row) {
            row.timeline = None;
            left.timelines += 1;
            note(&mut left, "timeline");
        }
    }
    if let Some(p) = kept.network.as_mut().and_then(|n| n.probe.as_mut()) {
        let sane = p.interval_ms > 0 && ms(p.interval_ms as f64) && p.interval_mib_per_s.iter().all(|&v| rate(v));
        if !sane && !p.interval_mib_per_s.is_empty() {
            p.interval_mib_per_s.clear();
            left.timelines += 1;
            note(&mut left, "network.probe.interval_mib_per_s");
        }
    }
    (kept, left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};

    #[test]
    fn rows_out_of_range_are_left_out_and_counted_by_field() {
        let mut bad_rate = row("b-1", 2, 1, 900.0, 0);
        bad_rate.objects_per_s = -1e308;
        let mut tiny = row("b-1", 4, 1, 900.0, 0);
        tiny.ttfb_ms.p50 = 1e-308;
        let mut no_workers = row("b-1", 8, 1, 900.0, 0);
        no_workers.workers = 0;
        let good = row("b-1", 16, 1, 900.0, 0);
        let (kept, left) = plottable(&result(vec![bad_rate, tiny, no_workers, good.clone()]));
        assert_eq!(kept.results, vec![good]);
        assert_eq!(left.rows, 3);
        assert_eq!(left.fields, vec!["objects_per_s", "ttfb_ms", "workers"]);
        assert!(left.note().unwrap().contains("left out 3 row(s)"));
    }

    #[test]
    fn the_ranges_refuse_non_finite_negative_subnormal_and_huge() {
        for v in [f64::NAN, f64::INFINITY, -1.0, -1e308, 1e308, MAX_RATE * 2.0] {
            assert!(!rate(v), "{v}");
        }
        for v in [f64::NAN, -1e-3, 1e-308, 5e-324, 1e308, MAX_MS * 2.0] {
            assert!(!ms(v), "{v}");
        }
        for v in [0.0, f64::NAN, -1.0, 1e308] {
            assert!(!usd(v), "{v}");
        }
        assert!(rate(0.0) && rate(1234.5) && ms(0.0) && ms(0.001) && ms(5e5) && usd(4e-4));
        let (_, left) = plottable(&result(vec![row("b-1", 2, 1, 900.0, 0)]));
        assert_eq!(left.note(), None);
    }

    #[test]
    fn a_timeline_out_of_range_is_not_drawn_and_counted() {
        let timeline = |done_99: f64, gets: u32| crate::model::Timeline {
            interval_ms: 100,
            gets: vec![gets, 5],
            body_bytes: vec![1000, 1000],
            ttfb_p50_ms: vec![1.0, 1.0],
            ttfb_p99_ms: vec![2.0, 2.0],
            in_flight: vec![4.0, 4.0],
            done_99pct_ms: Some(done_99),
            ..crate::model::Timeline::default()
        };
        let mut sane_row = row("b-1", 2, 1, 900.0, 0);
        sane_row.timeline = Some(timeline(150.0, 5));
        let mut huge_mark = row("b-1", 4, 1, 900.0, 0);
        huge_mark.timeline = Some(timeline(1e308, 5));
        let mut huge_count = row("b-1", 8, 1, 900.0, 0);
        huge_count.timeline = Some(timeline(150.0, u32::MAX));
        let (kept, left) = plottable(&result(vec![sane_row, huge_mark, huge_count]));
        assert_eq!((left.rows, left.timelines), (0, 2));
        assert_eq!(left.fields, vec!["timeline"]);
        assert!(kept.results[0].timeline.is_some());
        assert!(kept.results[1].timeline.is_none() && kept.results[2].timeline.is_none());
        assert!(left.note().unwrap().contains("2 timeline(s)"));
    }

    #[test]
    fn a_histogram_out_of_range_is_dropped_and_the_percentiles_drawn() {
        let mut h = hdrhistogram::Histogram::<u64>::new(2).unwrap();
        h.record(1_500).unwrap();
        let mut sane_row = row("b-1", 2, 1, 900.0, 0);
        sane_row.ttlb_histogram_us = crate::model::histogram::encode_cdf(&h);
        // 2^60 us: 1.15e15 ms, past MAX_MS.
        h.record(1 << 60).unwrap();
        let mut huge = row("b-1", 4, 1, 900.0, 0);
        huge.ttlb_histogram_us = crate::model::histogram::encode_cdf(&h);
        let (kept, left) = plottable(&result(vec![sane_row, huge]));
        assert_eq!((left.rows, left.histograms), (0, 1));
        assert_eq!(left.fields, vec!["ttlb_histogram_us"]);
        assert!(kept.results[0].ttlb_histogram_us.is_some());
        assert!(kept.results[1].ttlb_histogram_us.is_none());
    }
}

//! The timeline picture (`report --timeline WORKERS|all --plot FILE`): objects/s and
//! MiB/s over the timed phase, a line per bucket. For one worker count, two panels
//! with the marks the analysis found (the end of a burst, a stall, when 99% of the
//! GETs had ended); for `all`, a small panel of objects/s per worker count. Each line
//! is the configuration's first repetition.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::stats::first_seen;
use crate::model::{ConfigResult, FigureName, SweepResult, Timeline};

use super::labels::draw_legend;
use super::plot::{colour, err, panel, register_font, PlotError};

/// Which configurations the timeline picture shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelinePick {
    /// One worker count, every bucket.
    Workers(u32),
    /// Every worker count, a small panel each.
    All,
}

impl std::str::FromStr for TimelinePick {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all" => Ok(TimelinePick::All),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|&w| w > 0)
                .map(TimelinePick::Workers)
                .ok_or_else(|| format!("expected a worker count or `all`, got {n:?}")),
        }
    }
}

/// One bucket's line: (seconds, objects/s, MiB/s) at each interval's middle.
type Line = Vec<(f64, f64, f64)>;

/// The line of a row's timeline.
fn line_of(t: &Timeline) -> Line {
    let s = f64::from(t.interval_ms) / 1000.0;
    (0..t.len())
        .map(|i| {
            let mib = t.body_bytes[i] as f64 / (1024.0 * 1024.0);
            ((i as f64 + 0.5) * s, f64::from(t.gets[i]) / s, mib / s)
        })
        .collect()
}

/// Per bucket (in the order run), its first row at `workers` with a timeline.
fn rows_at(result: &SweepResult, workers: u32) -> Vec<&ConfigResult> {
    let buckets = first_seen(result.results.iter().map(|r| r.bucket.clone()));
    buckets
        .iter()
        .filter_map(|b| {
            result
                .results
                .iter()
                .find(|r| r.bucket == *b && r.workers == workers && r.timeline.as_ref().is_some_and(|t| !t.is_empty()))
        })
        .collect()
}

/// The worker counts that have a timeline, in increasing order.
pub(crate) fn timeline_workers(result: &SweepResult) -> Vec<u32> {
    let mut w: Vec<u32> = result
        .results
        .iter()
        .filter(|r| r.timeline.as_ref().is_some_and(|t| !t.is_empty()))
        .map(|r| r.workers)
        .collect();
    w.sort_unstable();
    w.dedup();
    w
}

/// Draws the timeline picture `pick` of `result` on `root`.
pub(super) fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    result: &SweepResult,
    pick: TimelinePick,
) -> Result<(), PlotError> {
    register_font();
    let workers = match pick {
        TimelinePick::Workers(w) => vec![w],
        TimelinePick::All => timeline_workers(result),
    };
    if workers.iter().all(|&w| rows_at(result, w).is_empty()) {
        return Err(PlotError::Empty);
    }
    root.fill(&WHITE).map_err(err)?;
    let title = match pick {
        TimelinePick::Workers(w) => format!("s3sweep timeline: {w} workers, per {} ms", interval_of(result, w)),
        TimelinePick::All => "s3sweep timelines: objects/s over time at each worker count".to_string(),
    };
    let root = root.titled(&title, ("sans-serif", 26).into_font()).map_err(err)?;
    let (legend_area, root) = root.split_vertically(30);
    let buckets = first_seen(result.results.iter().map(|r| r.bucket.clone()));
    let legend: Vec<(RGBColor, String)> = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| (colour(i), b.clone()))
        .collect();
    draw_legend(&legend_area, &legend).map_err(PlotError::Draw)?;
    let colour_of = |r: &ConfigResult| colour(buckets.iter().position(|b| *b == r.bucket).unwrap_or(0));
    match pick {
        TimelinePick::Workers(w) => {
            let rows = rows_at(result, w);
            let panels = root.split_evenly((2, 1));
            timeline_panel(&panels[0], "objects/s", &rows, &colour_of, |p| p.1, true)?;
            timeline_panel(&panels[1], "MiB/s", &rows, &colour_of, |p| p.2, false)?;
        }
        TimelinePick::All => {
            let cols = (workers.len() as f64).sqrt().ceil() as usize;
            let grid = root.split_evenly((workers.len().div_ceil(cols), cols));
            for (area, &w) in grid.iter().zip(&workers) {
                let caption = format!("{w} workers: objects/s");
                timeline_panel(area, &caption, &rows_at(result, w), &colour_of, |p| p.1, true)?;
            }
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

/// The interval of the first row at `workers` with a timeline, ms.
fn interval_of(result: &SweepResult, workers: u32) -> u32 {
    rows_at(result, workers)
        .first()
        .and_then(|r| r.timeline.as_ref())
        .map_or(0, |t| t.interval_ms)
}

/// The rows the main plot's timeline panel shows, with their colour and label: per
/// bucket (the summary's order), the best configuration's first row with a timeline,
/// then the knee's in a lighter shade when the knee is another worker count (none
/// while the curve still rises).
pub(super) fn best_and_knee(result: &SweepResult) -> Vec<(&ConfigResult, RGBColor, String)> {
    let mut picked = Vec::new();
    for (i, s) in result.summary.iter().enumerate() {
        let at = |w: u32| {
            result
                .rows_for(s)
                .find(|r| r.workers == w && r.timeline.as_ref().is_some_and(|t| !t.is_empty()))
        };
        let RGBColor(r, g, b) = colour(i);
        if let Some(row) = at(s.best_workers) {
            picked.push((
                row,
                RGBColor(r, g, b),
                format!("{} best {} w", s.bucket, s.best_workers),
            ));
        }
        let knee = s.knee_workers.filter(|&k| k != s.best_workers);
        if let Some((k, row)) = knee.and_then(|k| at(k).map(|row| (k, row))) {
            let light = |c: u8| c + (255 - c) / 2;
            picked.push((
                row,
                RGBColor(light(r), light(g), light(b)),
                format!("{} knee {k} w (light)", s.bucket),
            ));
        }
    }
    picked
}

/// The bandwidth probe's MiB/s per interval (seconds into the probe, MiB/s at each
/// interval's middle), when the result has a probe with intervals.
pub(crate) fn probe_line(result: &SweepResult) -> Option<Vec<(f64, f64)>> {
    let p = result.network.as_ref()?.probe.as_ref()?;
    let s = p.interval_ms as f64 / 1000.0;
    (s > 0.0 && !p.interval_mib_per_s.is_empty()).then(|| {
        p.interval_mib_per_s
            .iter()
            .enumerate()
            .map(|(i, &v)| ((i as f64 + 0.5) * s, v))
            .collect()
    })
}

/// The main plot's timeline panel on `area` ([`super::figure`] puts it under the four
/// panels): objects/s over time of [`best_and_knee`]'s rows, with their marks, and
/// beside it their MiB/s with the bandwidth probe's (in black, when it ran).
pub(super) fn best_and_knee_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    result: &SweepResult,
) -> Result<(), PlotError> {
    register_font();
    let picked = best_and_knee(result);
    if picked.is_empty() {
        return Err(PlotError::Empty);
    }
    area.fill(&WHITE).map_err(err)?;
    let labels: Vec<&str> = picked.iter().map(|p| p.2.as_str()).collect();
    let rows: Vec<&ConfigResult> = picked.iter().map(|p| p.0).collect();
    let colour_of = |r: &ConfigResult| picked.iter().find(|p| std::ptr::eq(p.0, r)).map_or(BLACK, |p| p.1);
    let halves = area.split_evenly((1, 2));
    let caption = format!("timeline, objects/s: {}", labels.join(", "));
    timeline_panel(&halves[0], &caption, &rows, &colour_of, |p| p.1, true)?;
    let probe = probe_line(result);
    let caption = match probe {
        Some(_) => "timeline, MiB/s; the bandwidth probe in black (seconds into the probe)",
        None => "timeline, MiB/s",
    };
    let panel = Panel {
        probe: probe.as_deref(),
        ..Panel::new(caption, |p| p.2)
    };
    draw_panel(&halves[1], &panel, &rows, &colour_of)
}

/// What one timeline panel draws besides its rows.
struct Panel<'a> {
    caption: &'a str,
    /// The value of a line's point drawn: objects/s or MiB/s.
    value: fn(&(f64, f64, f64)) -> f64,
    /// The analysis's marks drawn.
    marks: bool,
    /// The bandwidth probe's line (seconds, MiB/s), drawn in black.
    probe: Option<&'a [(f64, f64)]>,
}

impl<'a> Panel<'a> {
    fn new(caption: &'a str, value: fn(&(f64, f64, f64)) -> f64) -> Panel<'a> {
        Panel {
            caption,
            value,
            marks: false,
            probe: None,
        }
    }
}

/// One panel: each row's `value` over time, and with `marks` the analysis's marks.
fn timeline_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    rows: &[&ConfigResult],
    colour_of: &dyn Fn(&ConfigResult) -> RGBColor,
    value: fn(&(f64, f64, f64)) -> f64,
    marks: bool,
) -> Result<(), PlotError> {
    let panel = Panel {
        marks,
        ..Panel::new(caption, value)
    };
    draw_panel(area, &panel, rows, colour_of)
}

/// A panel as `panel` says: each row's value over time, the probe's line, the marks.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel_of: &Panel<'_>,
    rows: &[&ConfigResult],
    colour_of: &dyn Fn(&ConfigResult) -> RGBColor,
) -> Result<(), PlotError> {
    let (value, marks, probe) = (panel_of.value, panel_of.marks, panel_of.probe.unwrap_or(&[]));
    let lines: Vec<Line> = rows.iter().filter_map(|r| r.timeline.as_ref().map(line_of)).collect();
    let xmax = rows
        .iter()
        .map(|r| r.wall_ms / 1000.0)
        .chain(probe.iter().map(|p| p.0))
        .fold(0.001f64, f64::max);
    let ymax = lines
        .iter()
        .flatten()
        .map(value)
        .chain(probe.iter().map(|p| p.1))
        .fold(0.001f64, f64::max)
        * 1.15;
    let mut chart = panel(area, panel_of.caption)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the configuration")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    if !probe.is_empty() {
        let style = ShapeStyle::from(&BLACK).stroke_width(2);
        chart
            .draw_series(LineSeries::new(probe.iter().copied(), style))
            .map_err(err)?;
    }
    for (r, line) in rows.iter().zip(&lines) {
        let style = ShapeStyle::from(&colour_of(r)).stroke_width(2);
        let points: Vec<(f64, f64)> = line.iter().map(|p| (p.0, value(p))).collect();
        chart.draw_series(LineSeries::new(points, style)).map_err(err)?;
        if marks {
            for (at_s, label) in marks_of(r) {
                let dashed = ShapeStyle::from(&colour_of(r)).stroke_width(1);
                chart
                    .draw_series(DashedLineSeries::new([(at_s, 0.0), (at_s, ymax)], 6, 4, dashed))
                    .map_err(err)?;
                chart
                    .draw_series([Text::new(label, (at_s, ymax * 0.95), ("sans-serif", 13))])
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// The marks of a row, (seconds, label): a burst's end, a stall's start and end,
/// throttling's start, when 99% of the GETs had ended.
fn marks_of(r: &ConfigResult) -> Vec<(f64, String)> {
    let Some(d) = r.diagnosis.as_ref() else {
        return Vec::new();
    };
    let f = |n: FigureName| d.figures.get(n).map(|v| v.value());
    let mut marks = Vec::new();
    if let (Some(mib), Some(rate)) = (f(FigureName::BurstMib), f(FigureName::BurstMibPerS)) {
        marks.push((mib / rate.max(1e-9), format!("burst ends ({mib:.0} MiB)")));
    }
    if let (Some(at), Some(ms)) = (f(FigureName::StallAtMs), f(FigureName::StallMs)) {
        marks.push((at / 1000.0, format!("stall {ms:.0} ms")));
        marks.push(((at + ms) / 1000.0, String::new()));
    }
    if let Some(at) = f(FigureName::ThrottlingAtMs) {
        marks.push((at / 1000.0, "throttling".to_string()));
    }
    if let Some(done) = r.timeline.as_ref().and_then(|t| t.done_99pct_ms) {
        marks.push((done / 1000.0, "99% done".to_string()));
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};

    fn with_timeline(bucket: &str, workers: u32, gets: &[u32]) -> ConfigResult {
        let mut r = row(bucket, workers, 1, gets.len() as f64 * 100.0, 0);
        r.timeline = Some(crate::model::test_rows::timeline(gets));
        r
    }

    /// The picture drawn here as SVG (not through render::figure, which imports this
    /// module: the test would make a circle).
    fn svg_of(r: &SweepResult, pick: TimelinePick) -> Result<String, PlotError> {
        let mut s = String::new();
        draw(
            SVGBackend::with_string(&mut s, (super::super::plot::WIDTH, super::super::plot::HEIGHT))
                .into_drawing_area(),
            r,
            pick,
        )?;
        Ok(s)
    }

    #[test]
    fn a_worker_count_and_all_of_them_are_drawn() {
        let mut r = result(vec![
            with_timeline("b-1", 1, &[5, 5, 5]),
            with_timeline("b-2", 1, &[9, 9]),
            with_timeline("b-1", 8, &[40, 0, 0, 40]),
        ]);
        crate::analysis::analyse(&mut r, &crate::model::Thresholds::default());
        let svg = svg_of(&r, TimelinePick::Workers(1)).unwrap();
        assert!(svg.contains("1 workers, per 100 ms"), "title");
        assert!(
            svg.contains("MiB/s") && svg.contains("b-2"),
            "both panels, both buckets"
        );
        assert!(svg.contains("99% done"));
        let all = svg_of(&r, TimelinePick::All).unwrap();
        assert!(all.contains("1 workers: objects/s") && all.contains("8 workers: objects/s"));
        let none = svg_of(&r, TimelinePick::Workers(3));
        assert!(matches!(none, Err(PlotError::Empty)));
        assert_eq!("all".parse::<TimelinePick>(), Ok(TimelinePick::All));
        assert!("0".parse::<TimelinePick>().is_err() && "x".parse::<TimelinePick>().is_err());
    }
}

//! The picture of a result, drawn with plotters as SVG or PNG (chosen by the file's
//! extension): four panels, one line per bucket (a memory sweep of several sizes is
//! drawn by `memory_plot` instead: see [`super::figure`]).
//!
//! 1. throughput (objects/s) against workers, log-2 x axis, the knee circled;
//! 2. wall time against workers (log-log), the knee circled;
//! 3. first-byte latency p50 (solid) and p99 (dashed) against workers;
//! 4. the request latency (to the last byte) CDF of each bucket at its best worker
//!    count, log x axis, drawn through every bucket of the row's recorded histogram
//!    (`ttlb_histogram_us`, 1% buckets); results written before rows kept it get a
//!    line through p50, p90, p99 and max, and the axis says so.
//!
//! One legend for the figure, under the titles (a colour per bucket, its knee and best
//! worker count), so no legend covers a line; knee labels are placed where they
//! overlap no other label, marker or line ([`super::labels`]). Values are medians
//! over repetitions. Text is rendered with the bundled DejaVu Sans (assets/fonts,
//! Bitstream Vera licence), so PNGs need no system fonts.

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::story::Story;
use crate::model::stats::median;
use crate::model::{ConfigResult, SweepResult};

use super::labels::{draw_knees, draw_legend};

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("unknown plot format {0:?}: use a file name ending in .svg or .png")]
    UnknownFormat(String),
    #[error("the result has no configurations to plot")]
    Empty,
    #[error("drawing the plot: {0}")]
    Draw(String),
}

/// Default image size, pixels.
pub(crate) const WIDTH: u32 = 1400;
pub(crate) const HEIGHT: u32 = 1000;

static FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

pub(super) fn register_font() {
    REGISTER.call_once(|| {
        for style in [
            FontStyle::Normal,
            FontStyle::Bold,
            FontStyle::Italic,
            FontStyle::Oblique,
        ] {
            // The font is bundled and known good; a failure would show as missing text.
            let _ = plotters::style::register_font("sans-serif", style, FONT);
        }
    });
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

pub(super) fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// One worker count of one bucket: medians over repetitions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CurvePoint {
    pub workers: u32,
    pub objects_per_s: f64,
    pub wall_ms: f64,
    pub ttfb_p50_ms: f64,
    pub ttfb_p99_ms: f64,
}

/// One bucket's line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    pub bucket: String,
    /// By increasing workers.
    pub points: Vec<CurvePoint>,
    pub knee_workers: Option<u32>,
    pub best_workers: u32,
    /// (latency ms, fraction of requests at or below) at the best worker count.
    pub cdf: Vec<(f64, f64)>,
    /// True when `cdf` has every bucket of the row's histogram; false when it is the
    /// four percentiles of an older result.
    pub cdf_from_histogram: bool,
}

/// The row whose wall time is the median of its repetitions.
fn median_row<'a>(rows: &[&'a ConfigResult]) -> &'a ConfigResult {
    let mut sorted = rows.to_vec();
    sorted.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
    sorted[sorted.len() / 2]
}

/// The lines to draw, one per bucket in the order of the summary.
pub(crate) fn curves(result: &SweepResult) -> Vec<Curve> {
    result
        .summary
        .iter()
        .map(|s| {
            let mine: Vec<&ConfigResult> = result.rows_for(s).collect();
            let mut workers: Vec<u32> = mine.iter().map(|r| r.workers).collect();
            workers.sort_unstable();
            workers.dedup();
            // Every listed worker count has at least one row.
            let med = |v: Vec<f64>| median(v).unwrap_or(0.0);
            let points = workers
                .iter()
                .map(|&w| {
                    let rows: Vec<&ConfigResult> = mine.iter().copied().filter(|r| r.workers == w).collect();
                    CurvePoint {
                        workers: w,
                        objects_per_s: med(rows.iter().map(|r| r.objects_per_s).collect()),
                        wall_ms: med(rows.iter().map(|r| r.wall_ms).collect()),
                        ttfb_p50_ms: med(rows.iter().map(|r| r.ttfb_ms.p50).collect()),
                        ttfb_p99_ms: med(rows.iter().map(|r| r.ttfb_ms.p99).collect()),
                    }
                })
                .collect();
            let best: Vec<&ConfigResult> = mine.iter().copied().filter(|r| r.workers == s.best_workers).collect();
            let (cdf, cdf_from_histogram) = if best.is_empty() {
                (Vec::new(), false)
            } else {
                let row = median_row(&best);
                match row.ttlb_cdf() {
                    Some(Ok(points)) if !points.is_empty() => (points, true),
                    _ => {
                        let p = row.ttlb_ms;
                        if p.count == 0 {
                            (Vec::new(), false)
                        } else {
                            (vec![(p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99), (p.max, 1.0)], false)
                        }
                    }
                }
            };
            Curve {
                bucket: client_label(result, &s.bucket, &s.axes),
                points,
                knee_workers: s.knee_workers,
                best_workers: s.best_workers,
                cdf,
                cdf_from_histogram,
            }
        })
        .collect()
}

/// The image formats a plot can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// The format of a plot file, from its extension; check it before a long run.
pub fn format_of(path: &Path) -> Result<Format, PlotError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "svg" => Ok(Format::Svg),
        "png" => Ok(Format::Png),
        other => Err(PlotError::UnknownFormat(other.to_string())),
    }
}

/// Labels a log axis at 1, 2 and 5 times a power of ten only, so labels never crowd.
pub(super) fn log_label(v: &f64) -> String {
    if *v <= 0.0 {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0].iter().any(|m| (mantissa - m).abs() < 0.01) {
        if *v >= 1.0 {
            format!("{v:.0}")
        } else {
            format!("{v}")
        }
    } else {
        String::new()
    }
}

/// One panel of the figure: its caption and the room every panel leaves for axis labels.
pub(super) fn panel<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    builder
}

pub(super) fn err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// A log axis range around positive values, with some room at both ends.
pub(super) fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return 0.1..10.0;
    }
    // plotters labels a log axis from the first power of ten in range: start at one.
    10f64.powf((lo / 1.15).log10().floor())..(hi * 1.5)
}

/// A curve's name: the bucket and the axes the run names (`standard-like (client
/// lean, hedge p95)`).
fn client_label(result: &SweepResult, bucket: &str, axes: &crate::model::Axes) -> String {
    format!("{bucket}{}", axes.label(result.named_axes()))
}

/// One line per figure saying why each bucket's curve flattens: its knee and what bound
/// its largest worker count (the diagnosis verdict). Empty without a diagnosis.
pub(crate) fn why_line(result: &SweepResult) -> String {
    let Some(analysis) = &result.analysis else {
        return String::new();
    };
    let parts: Vec<String> = result
        .summary
        .iter()
        .filter(|s| {
            analysis
                .buckets
                .iter()
                .any(|b| b.bucket == s.bucket && b.axes == s.axes)
        })
        .map(|s| {
            format!(
                "{}: {}",
                client_label(result, &s.bucket, &s.axes),
                Story::of_bucket(result, s).subtitle()
            )
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("why it flattens: {}", parts.join("; "))
    }
}

/// Draws the four panels on `root` (files, strings and buffers: [`super::figure`]).
pub(super) fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, result: &SweepResult) -> Result<(), PlotError> {
    register_font();
    let curves = curves(result);
    if curves.iter().all(|c| c.points.is_empty()) {
        return Err(PlotError::Empty);
    }
    root.fill(&WHITE).map_err(err)?;
    let root = titled(root, result)?;
    // The one legend, above the panels: no legend covers a line.
    let (legend_area, root) = root.split_vertically(30);
    draw_legend(&legend_area, &legend_entries(&curves)).map_err(PlotError::Draw)?;
    let panels = root.split_evenly((2, 2));
    let x_range = workers_range(&curves);
    throughput_panel(&panels[0], &curves, x_range.clone())?;
    wall_time_panel(&panels[1], &curves, x_range.clone())?;
    first_byte_panel(&panels[2], &curves, x_range)?;
    cdf_panel(&panels[3], &curves)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The figure's title (what was read, where), and under it why each curve flattens
/// (from the diagnosis).
fn titled<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    result: &SweepResult,
) -> Result<DrawingArea<DB, Shift>, PlotError> {
    let object_bytes = result
        .results
        .iter()
        .find(|r| r.ok > 0)
        .map(|r| r.bytes / r.ok)
        .unwrap_or(0);
    let title = format!(
        "s3sweep: {} objects of {} bytes per configuration ({} run, {} vCPUs, {} repetition(s))",
        result.request.object_count,
        object_bytes,
        result.environment.runner,
        result.environment.vcpus,
        result.request.repetitions
    );
    let root = root.titled(&title, ("sans-serif", 26).into_font()).map_err(err)?;
    let why = why_line(result);
    if why.is_empty() {
        Ok(root)
    } else {
        root.titled(&why, ("sans-serif", 18).into_font()).map_err(err)
    }
}

/// A legend entry per bucket: its colour, knee and best worker count.
fn legend_entries(curves: &[Curve]) -> Vec<(RGBColor, String)> {
    curves
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let text = match c.knee_workers {
                Some(k) => format!("{}: knee {k}, best {} workers", c.bucket, c.best_workers),
                None => format!("{}: best {} workers", c.bucket, c.best_workers),
            };
            (colour(i), text)
        })
        .collect()
}

/// The x range of the worker panels, with room at both ends.
fn workers_range(curves: &[Curve]) -> std::ops::Range<f64> {
    let workers = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| f64::from(p.workers)));
    let (wlo, whi) = workers.fold((f64::INFINITY, 0.0f64), |(lo, hi), w| (lo.min(w), hi.max(w)));
    (wlo / 1.5)..(whi * 1.5)
}

/// Each bucket's line of `value` against workers (points `keep` accepts), its knee
/// circled and labelled.
fn lines_with_knees<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    curves: &[Curve],
    value: fn(&CurvePoint) -> f64,
    keep: fn(&CurvePoint) -> bool,
) -> Result<(), PlotError> {
    let lines: Vec<Vec<(f64, f64)>> = curves
        .iter()
        .map(|c| {
            c.points
                .iter()
                .filter(|p| keep(p))
                .map(|p| (f64::from(p.workers), value(p)))
                .collect()
        })
        .collect();
    let mut knees = Vec::new();
    for (i, (c, pts)) in curves.iter().zip(&lines).enumerate() {
        let col = colour(i);
        chart
            .draw_series(LineSeries::new(pts.clone(), col.stroke_width(3)).point_size(4))
            .map_err(err)?;
        let knee = c
            .knee_workers
            .and_then(|k| c.points.iter().find(|p| p.workers == k && keep(p)));
        if let Some(p) = knee {
            knees.push((col, p.workers, (f64::from(p.workers), value(p))));
        }
    }
    draw_knees(chart, &knees, &lines).map_err(PlotError::Draw)
}

/// 1. Throughput against workers.
fn throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    x_range: std::ops::Range<f64>,
) -> Result<(), PlotError> {
    let ymax = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.objects_per_s))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.15;
    let mut chart = panel(area, "throughput (objects/s; knee circled)")
        .build_cartesian_2d(x_range.log_scale().base(2.0), 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("workers (requests in flight)")
        .y_desc("objects/s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(RGBColor(238, 238, 238))
        .x_max_light_lines(1)
        .y_max_light_lines(1)
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    lines_with_knees(&mut chart, curves, |p| p.objects_per_s, |_| true)
}

/// 2. Wall time against workers.
fn wall_time_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    x_range: std::ops::Range<f64>,
) -> Result<(), PlotError> {
    let y = log_range(curves.iter().flat_map(|c| c.points.iter().map(|p| p.wall_ms)));
    let mut chart = panel(area, "wall time per configuration (ms)")
        .build_cartesian_2d(x_range.log_scale().base(2.0), y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("workers (requests in flight)")
        .y_desc("wall ms")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&log_label)
        .y_labels(30)
        .light_line_style(RGBColor(238, 238, 238))
        .x_max_light_lines(1)
        .y_max_light_lines(1)
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    lines_with_knees(&mut chart, curves, |p| p.wall_ms, |p| p.wall_ms > 0.0)
}

/// 3. First-byte latency percentiles against workers.
fn first_byte_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[Curve],
    x_range: std::ops::Range<f64>,
) -> Result<(), PlotError> {
    let y = log_range(
        curves
            .iter()
            .flat_map(|c| c.points.iter().flat_map(|p| [p.ttfb_p50_ms, p.ttfb_p99_ms])),
    );
    let mut chart = panel(area, "first-byte latency: p50 solid, p99 dashed (ms)")
        .build_cartesian_2d(x_range.log_scale().base(2.0), y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("workers (requests in flight)")
        .y_desc("ttfb ms")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&log_label)
        .y_labels(30)
        .light_line_style(RGBColor(238, 238, 238))
        .x_max_light_lines(1)
        .y_max_light_lines(1)
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    let positive = |c: &Curve, value: fn(&CurvePoint) -> f64| -> Vec<(f64, f64)> {
        c.points
            .iter()
            .filter(|p| value(p) > 0.0)
            .map(|p| (f64::from(p.workers), value(p)))
            .collect()
    };
    for (i, c) in curves.iter().enumerate() {
        let col = colour(i);
        chart
            .draw_series(LineSeries::new(positive(c, |p| p.ttfb_p50_ms), col.stroke_width(3)).point_size(3))
            .map_err(err)?;
        chart
            .draw_series(DashedLineSeries::new(
                positive(c, |p| p.ttfb_p99_ms),
                8,
                5,
                col.stroke_width(2),
            ))
            .map_err(err)?;
    }
    Ok(())
}

/// 4. Latency CDF at the best worker count.
fn cdf_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, curves: &[Curve]) -> Result<(), PlotError> {
    let x = log_range(curves.iter().flat_map(|c| c.cdf.iter().map(|p| p.0)));
    let mut chart = panel(area, "request latency CDF at each bucket's best worker count")
        .build_cartesian_2d(x.log_scale(), 0.0..1.05)
        .map_err(err)?;
    let what = if curves.iter().any(|c| !c.cdf.is_empty() && !c.cdf_from_histogram) {
        "request to last byte, ms (points: p50, p90, p99, max: the result has no histogram)"
    } else {
        "request to last byte, ms (every 1% bucket of the recorded histogram)"
    };
    chart
        .configure_mesh()
        .x_desc(what)
        .y_desc("fraction of requests")
        .x_label_formatter(&log_label)
        .x_labels(30)
        .light_line_style(RGBColor(238, 238, 238))
        .x_max_light_lines(1)
        .y_max_light_lines(1)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    for (i, c) in curves.iter().enumerate().filter(|(_, c)| !c.cdf.is_empty()) {
        let size = if c.cdf_from_histogram { 0 } else { 5 };
        chart
            .draw_series(LineSeries::new(c.cdf.clone(), colour(i).stroke_width(3)).point_size(size))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::summarized as result;
    use crate::model::test_rows::row;
    use crate::model::Percentiles;

    // The curves drawn the ways the tests read them; `super::figure` draws every figure
    // the same way for the product (importing it here would make the files a circle).
    fn render_file(result: &SweepResult, path: &Path) -> Result<(), PlotError> {
        match format_of(path)? {
            Format::Svg => draw(SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area(), result),
            Format::Png => draw(BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area(), result),
        }
    }

    fn render_svg(result: &SweepResult) -> Result<String, PlotError> {
        let mut s = String::new();
        draw(
            SVGBackend::with_string(&mut s, (WIDTH, HEIGHT)).into_drawing_area(),
            result,
        )?;
        Ok(s)
    }

    fn render_rgb(result: &SweepResult, width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
        let mut buf = vec![0u8; width as usize * height as usize * 3];
        draw(
            BitMapBackend::with_buffer(&mut buf, (width, height)).into_drawing_area(),
            result,
        )?;
        Ok(buf)
    }

    /// The original measurement's two curves (docs/background.md), as a result document.
    pub(crate) fn seed_result() -> SweepResult {
        let mut results = Vec::new();
        for (bucket, walls, ttfb) in [
            ("express-like", [7831.0, 4037.0, 2625.0, 2826.0, 2668.0, 2410.0], 5.0),
            (
                "standard-like",
                [47625.0, 17334.0, 6993.0, 3508.0, 2868.0, 2587.0],
                30.0,
            ),
        ] {
            for (w, wall) in [1, 2, 4, 8, 16, 20].into_iter().zip(walls) {
                let mut r = row(bucket, w, 1, wall, 0);
                r.ok = 1000;
                r.requests = 1000;
                r.bytes = 1000 * 46_080;
                r.objects_per_s = 1000.0 / (wall / 1000.0);
                r.ttfb_ms = Percentiles {
                    p50: ttfb,
                    p90: ttfb * 1.5,
                    p99: ttfb * 3.0,
                    max: ttfb * 5.0,
                    mean: ttfb * 1.1,
                    count: 1000,
                };
                r.ttlb_ms = Percentiles {
                    p50: ttfb * 1.2,
                    p90: ttfb * 1.8,
                    p99: ttfb * 3.5,
                    max: ttfb * 6.0,
                    mean: ttfb * 1.3,
                    count: 1000,
                };
                results.push(r);
            }
        }
        result(results)
    }

    /// A knee label's top-left corner and text.
    type KneeLabel = (i32, i32, String);

    /// The knee labels and knee circles (cx, cy) of an SVG plot.
    fn knees_in(svg: &str) -> (Vec<KneeLabel>, Vec<(i32, i32)>) {
        let attr = |tag: &str, name: &str| -> i32 {
            let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[start..].split('"').next().unwrap().parse::<f64>().unwrap() as i32
        };
        let mut labels = Vec::new();
        let mut circles = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            rest = &rest[i..];
            let end = rest.find('>').unwrap();
            let tag = &rest[..end];
            if tag.starts_with("<text") {
                let text = rest[end + 1..].split("</text>").next().unwrap().trim();
                if text.starts_with("knee ") {
                    labels.push((attr(tag, "x"), attr(tag, "y"), text.to_string()));
                }
            } else if tag.starts_with("<circle") && tag.contains("r=\"12\"") {
                circles.push((attr(tag, "cx"), attr(tag, "cy")));
            }
            rest = &rest[end..];
        }
        (labels, circles)
    }

    #[test]
    fn a_hedged_curve_names_its_policy() {
        let mut r = crate::model::test_rows::row("b", 4, 1, 100.0, 0);
        r.axes.hedge = crate::model::Hedge::Percentile(95);
        let off = crate::model::test_rows::row("b", 4, 1, 100.0, 0);
        let result = crate::model::test_rows::result(vec![off.clone(), r.clone()]);
        assert_eq!(client_label(&result, "b", &r.axes.key()), "b (hedge p95)");
        assert_eq!(client_label(&result, "b", &off.axes.key()), "b (hedge off)");
        let plain = crate::model::test_rows::result(vec![off.clone()]);
        assert_eq!(client_label(&plain, "b", &off.axes.key()), "b");
    }

    #[test]
    fn knee_labels_overlap_neither_each_other_nor_the_knees() {
        // Both knees at 16 workers, 8% apart in wall time: the markers nearly touch.
        let mut r = seed_result();
        for row in &mut r.results {
            if row.workers >= 16 {
                row.wall_ms = if row.bucket == "express-like" { 100.0 } else { 108.0 };
                row.objects_per_s = 1000.0 / (row.wall_ms / 1000.0);
            }
        }
        r.summary = crate::analysis::summary::summarize(&r.results);
        assert!(r.summary.iter().all(|s| s.knee_workers == Some(16)), "{:?}", r.summary);
        let (labels, circles) = knees_in(&render_svg(&r).unwrap());
        assert_eq!(labels.len(), 4, "{labels:?}");
        let boxes: Vec<(i32, i32, i32, i32)> = labels
            .iter()
            .map(|(x, y, t)| (*x, *y, x + 8 * t.len() as i32, y + 15))
            .collect();
        let overlap =
            |a: &(i32, i32, i32, i32), b: &(i32, i32, i32, i32)| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                assert!(!overlap(a, b), "labels overlap: {a:?} {b:?}");
            }
            for (cx, cy) in &circles {
                let c = (cx - 13, cy - 13, cx + 13, cy + 13);
                assert!(!overlap(a, &c), "label {a:?} covers the knee at {cx},{cy}");
            }
        }
    }

    #[test]
    fn the_cdf_is_every_bucket_of_the_histogram_and_no_legend_covers_a_panel() {
        let mut r = seed_result();
        let mut h = crate::model::stats::histogram_us();
        for i in 0..1000u64 {
            h.record(3_000 + i * i / 10).unwrap();
        }
        for row in &mut r.results {
            row.ttlb_histogram_us = crate::model::histogram::encode_cdf(&h);
        }
        let c = curves(&r);
        assert!(c[0].cdf_from_histogram);
        assert!(c[0].cdf.len() > 100, "{} points", c[0].cdf.len());
        assert_eq!(c[0].cdf.last().unwrap().1, 1.0);
        assert!((c[0].cdf[0].0 - 3.0).abs() < 0.05, "{:?}", c[0].cdf[0]);
        let svg = render_svg(&r).unwrap();
        assert!(svg.contains("every 1% bucket of the recorded histogram"));
        // One legend for the figure, none in the panels.
        assert!(svg.contains("express-like: knee 4, best 20 workers"), "figure legend");
        assert!(
            !svg.contains("express-like p99") && !svg.contains("at 20 workers<"),
            "a panel legend"
        );
    }

    #[test]
    fn curves_follow_the_summary() {
        let c = curves(&seed_result());
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].bucket, "express-like");
        assert_eq!(c[0].knee_workers, Some(4));
        assert_eq!(c[1].knee_workers, Some(16));
        assert_eq!(c[1].points.len(), 6);
        assert_eq!(c[1].best_workers, 20);
        // No histogram in the rows: the four percentiles.
        assert_eq!(c[1].cdf.len(), 4);
        assert_eq!(c[1].cdf[3], (180.0, 1.0));
        assert!(!c[1].cdf_from_histogram);
    }

    #[test]
    fn png_has_ink_in_every_panel_and_both_colours() {
        let (w, h) = (800u32, 600u32);
        let buf = render_rgb(&seed_result(), w, h).unwrap();
        let px = |x: u32, y: u32| {
            let i = (y as usize * w as usize + x as usize) * 3;
            (buf[i], buf[i + 1], buf[i + 2])
        };
        // Every quadrant has non-white pixels.
        for (qx, qy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let mut ink = 0;
            for y in (qy * h / 2 + 30)..((qy + 1) * h / 2) {
                for x in (qx * w / 2)..((qx + 1) * w / 2) {
                    if px(x, y) != (255, 255, 255) {
                        ink += 1;
                    }
                }
            }
            assert!(ink > 2000, "quadrant {qx},{qy} has only {ink} inked pixels");
        }
        // Both bucket colours are drawn.
        for c in [COLOURS[0], COLOURS[1]] {
            let n = (0..h)
                .flat_map(|y| (0..w).map(move |x| (x, y)))
                .filter(|&(x, y)| px(x, y) == (c.0, c.1, c.2))
                .count();
            assert!(n > 300, "colour {c:?} drawn on only {n} pixels");
        }
        // Text is rendered (the title band at the top has dark pixels).
        let dark = (0..30)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| px(x, y).0 < 100)
            .count();
        assert!(dark > 100, "title has {dark} dark pixels");
    }

    #[test]
    fn failed_buckets_and_single_points_still_draw() {
        // One worker count only, and a bucket whose every request failed (no latency).
        let mut dead = row("dead-bucket", 8, 1, 50.0, 100);
        dead.objects_per_s = 0.0;
        let alive = row("live-bucket", 8, 1, 200.0, 0);
        let mut r = seed_result();
        r.results = vec![alive, dead];
        r.summary = crate::analysis::summary::summarize(&r.results);
        let buf = render_rgb(&r, 600, 400).unwrap();
        assert!(buf.iter().any(|&b| b != 255));
        let svg = render_svg(&r).unwrap();
        assert!(svg.contains("live-bucket") && svg.contains("dead-bucket"));
        r.results.clear();
        r.summary.clear();
        assert!(matches!(render_svg(&r), Err(PlotError::Empty)));
    }

    #[test]
    fn files_by_extension() {
        // S3SWEEP_PLOT_DIR keeps the images for a look.
        let keep = std::env::var_os("S3SWEEP_PLOT_DIR");
        let dir = keep
            .clone()
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join(format!("s3sweep-plot-{}", std::process::id())));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("p.png");
        render_file(&seed_result(), &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 20_000, "png is {} bytes", bytes.len());
        let svg = dir.join("p.svg");
        render_file(&seed_result(), &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..40]);
        assert!(text.contains("knee 16") && text.contains("knee 4"));
        assert!(matches!(
            render_file(&seed_result(), &dir.join("p.gif")),
            Err(PlotError::UnknownFormat(_))
        ));
        if keep.is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn the_why_line_names_each_knee_and_what_bound_it() {
        let mut r = seed_result();
        assert_eq!(why_line(&r), "", "no diagnosis, no sentence");
        crate::analysis::analyse(&mut r, &crate::model::Thresholds::default());
        let line = why_line(&r);
        assert!(line.starts_with("why it flattens: "), "{line}");
        assert!(line.contains("express-like: knee at 4 workers, flat to 20"), "{line}");
        assert!(line.contains("standard-like: knee at 16 workers, flat to 20"), "{line}");
        assert!(!line.contains("bound by plateau"), "{line}");
    }
}

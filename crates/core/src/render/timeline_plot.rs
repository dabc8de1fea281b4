//! The timeline picture (`report --timeline WORKERS|all --plot FILE`): objects/s and
//! MiB/s over the timed phase, a line per bucket. For one worker count, two panels
//! with the marks the analysis found (the end of a burst, a stall, when 99% of the
//! GETs had ended); for `all`, a small panel of objects/s per worker count. Each line
//! is the configuration's first repetition.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::stats::first_seen;
use crate::model::{ConfigResult, FigureName, SweepResult, Timeline};

use plotters::coord::types::RangedCoordf64;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::labels::{draw_legend, fit_lines, place_marks, text_size};
use super::plot::{colour, err, register_font, PlotError};

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
pub fn timeline_workers(result: &SweepResult) -> Vec<u32> {
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
    let drawn = |w: u32| -> Vec<Drawn<'_>> {
        rows_at(result, w)
            .into_iter()
            .map(|r| {
                (
                    r,
                    colour(buckets.iter().position(|b| *b == r.bucket).unwrap_or(0)),
                    r.bucket.clone(),
                )
            })
            .collect()
    };
    match pick {
        TimelinePick::Workers(w) => {
            let rows = drawn(w);
            let panels = root.split_evenly((2, 1));
            let marked = Panel {
                marks: true,
                ..Panel::new(vec!["objects/s".to_string()], |p| p.1)
            };
            draw_panel(&panels[0], &marked, &rows)?;
            draw_panel(&panels[1], &Panel::new(vec!["MiB/s".to_string()], |p| p.2), &rows)?;
        }
        TimelinePick::All => {
            let cols = (workers.len() as f64).sqrt().ceil() as usize;
            let grid = root.split_evenly((workers.len().div_ceil(cols), cols));
            for (area, &w) in grid.iter().zip(&workers) {
                let panel = Panel {
                    marks: true,
                    ..Panel::new(vec![format!("{w} workers: objects/s")], |p| p.1)
                };
                draw_panel(area, &panel, &drawn(w))?;
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
    let halves = area.split_evenly((1, 2));
    // The title names each line: the first after the quantity, the rest wrapped.
    let mut names: Vec<String> = picked.iter().map(|p| p.2.clone()).collect();
    names[0] = format!("objects/s over time: {}", names[0]);
    let panel = Panel {
        marks: true,
        ..Panel::new(names, |p| p.1)
    };
    draw_panel(&halves[0], &panel, &picked)?;
    let probe = probe_line(result);
    let title = match probe {
        Some(_) => vec!["MiB/s over time; the bandwidth probe in black (time into the probe)".to_string()],
        None => vec!["MiB/s over time".to_string()],
    };
    let panel = Panel {
        probe: probe.as_deref(),
        ..Panel::new(title, |p| p.2)
    };
    draw_panel(&halves[1], &panel, &picked)
}

/// A row a panel draws: the row, its colour and its name.
pub(super) type Drawn<'a> = (&'a ConfigResult, RGBColor, String);

/// A row with fewer intervals than this is too short to draw as a line: the panel
/// says so instead.
pub(crate) const MIN_INTERVALS: usize = 5;

/// The panel's title font, its mark labels' and its notes'.
const TITLE_FONT: (&str, i32) = ("sans-serif", 20);
const MARK_FONT: (&str, i32) = ("sans-serif", 13);
const NOTE_FONT: (&str, i32) = ("sans-serif", 15);
/// Room at each side of a panel, pixels.
const MARGIN: i32 = 12;
/// Lines a title may take; rows of mark labels.
const TITLE_LINES: usize = 2;
const MARK_ROWS: usize = 3;

/// What one timeline panel draws besides its rows.
struct Panel<'a> {
    /// The title: its parts, wrapped to the panel's width.
    title: Vec<String>,
    /// The value of a line's point drawn: objects/s or MiB/s.
    value: fn(&(f64, f64, f64)) -> f64,
    /// The analysis's marks drawn.
    marks: bool,
    /// The bandwidth probe's line (seconds, MiB/s), drawn in black.
    probe: Option<&'a [(f64, f64)]>,
}

impl<'a> Panel<'a> {
    fn new(title: Vec<String>, value: fn(&(f64, f64, f64)) -> f64) -> Panel<'a> {
        Panel {
            title,
            value,
            marks: false,
            probe: None,
        }
    }
}

/// True when the row has too few intervals to draw as a line.
pub(crate) fn too_short(r: &ConfigResult) -> bool {
    r.timeline.as_ref().is_none_or(|t| t.len() < MIN_INTERVALS)
}

/// The note that names the rows too short to draw, each with its wall time and
/// intervals.
fn short_note(short: &[&Drawn<'_>]) -> Vec<String> {
    let mut parts: Vec<String> = short
        .iter()
        .map(|(r, _, name)| {
            let (n, width) = r.timeline.as_ref().map_or((0, 0), |t| (t.len(), t.interval_ms));
            format!("{name} ({:.0} ms in {n} of {width} ms)", r.wall_ms)
        })
        .collect();
    if let Some(first) = parts.first_mut() {
        *first = format!("too short to draw over time (fewer than {MIN_INTERVALS} intervals): {first}");
    }
    parts
}

/// Draws `lines` centred in `font` from `y` down; returns the height used.
fn centred<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[String],
    font: (&str, i32),
    y: i32,
) -> Result<i32, PlotError> {
    let x = area.dim_in_pixel().0 as i32 / 2;
    let style = TextStyle::from(font.into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    let step = font.1 + 4;
    for (i, line) in lines.iter().enumerate() {
        area.draw(&Text::new(line.clone(), (x, y + i as i32 * step), style.clone()))
            .map_err(err)?;
    }
    Ok(lines.len() as i32 * step)
}

/// A panel as `panel_of` says: its title fitted to its width, each row's value over
/// time, the probe's line, the marks with labels that fit; rows too short to draw
/// named in a note (in place of the chart when none can be drawn).
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel_of: &Panel<'_>,
    rows: &[Drawn<'_>],
) -> Result<(), PlotError> {
    let room = area.dim_in_pixel().0 as i32 - 2 * MARGIN;
    let title = fit_lines(&panel_of.title, ", ", TITLE_FONT, room, TITLE_LINES);
    let mut head = MARGIN / 2 + centred(area, &title, TITLE_FONT, MARGIN / 2)?;
    let (short, long): (Vec<&Drawn<'_>>, Vec<&Drawn<'_>>) = rows.iter().partition(|d| too_short(d.0));
    let probe = panel_of.probe.unwrap_or(&[]);
    let nothing_drawn = long.is_empty() && probe.is_empty();
    if !short.is_empty() {
        let note = fit_lines(&short_note(&short), ", ", NOTE_FONT, room, 6);
        let y = if nothing_drawn {
            area.dim_in_pixel().1 as i32 / 3
        } else {
            head
        };
        head += centred(area, &note, NOTE_FONT, y)?;
    }
    if nothing_drawn {
        return Ok(());
    }
    let (_, chart_area) = area.split_vertically(head);
    draw_chart(&chart_area, panel_of, &long, probe)
}

/// The chart of a panel: each row's value over time (ms when the longest is under
/// 2 s, else seconds), the probe's line and the marks.
fn draw_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel_of: &Panel<'_>,
    rows: &[&Drawn<'_>],
    probe: &[(f64, f64)],
) -> Result<(), PlotError> {
    let value = panel_of.value;
    let lines: Vec<Line> = rows.iter().filter_map(|d| d.0.timeline.as_ref().map(line_of)).collect();
    let longest_s = rows
        .iter()
        .map(|d| d.0.wall_ms / 1000.0)
        .chain(probe.iter().map(|p| p.0))
        .fold(0.001f64, f64::max);
    let (scale, unit) = if longest_s < 2.0 {
        (1000.0, "ms")
    } else {
        (1.0, "seconds")
    };
    let ymax = lines
        .iter()
        .flatten()
        .map(value)
        .chain(probe.iter().map(|p| p.1))
        .fold(0.001f64, f64::max)
        * 1.15;
    // Room on the right for the last tick label, centred on the plot's edge.
    let mut chart = ChartBuilder::on(area)
        .margin(MARGIN)
        .margin_right(3 * MARGIN)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..longest_s * scale, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(format!("{unit} into the configuration"))
        .y_label_formatter(&|y| {
            if ymax < 10.0 {
                format!("{y:.1}")
            } else {
                format!("{y:.0}")
            }
        })
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    if !probe.is_empty() {
        let style = ShapeStyle::from(&BLACK).stroke_width(2);
        let points = probe.iter().map(|p| (p.0 * scale, p.1));
        chart.draw_series(LineSeries::new(points, style)).map_err(err)?;
    }
    let mut marks = Vec::new();
    for (d, line) in rows.iter().zip(&lines) {
        let style = ShapeStyle::from(&d.1).stroke_width(2);
        let points: Vec<(f64, f64)> = line.iter().map(|p| (p.0 * scale, value(p))).collect();
        chart.draw_series(LineSeries::new(points, style)).map_err(err)?;
        if panel_of.marks {
            marks.extend(
                marks_of(d.0)
                    .into_iter()
                    .map(|(at_s, label)| (at_s * scale, label, d.1)),
            );
        }
    }
    draw_marks(&mut chart, &marks, ymax)
}

/// The marks, (x, label, colour): a dashed line each, and its label where
/// [`place_marks`] finds room (dropped where it finds none).
fn draw_marks<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    marks: &[(f64, String, RGBColor)],
    ymax: f64,
) -> Result<(), PlotError> {
    let area = super::labels::plot_area(chart);
    for (at, _, col) in marks {
        let dashed = ShapeStyle::from(col).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new([(*at, 0.0), (*at, ymax)], 6, 4, dashed))
            .map_err(err)?;
    }
    let labelled: Vec<&(f64, String, RGBColor)> = marks.iter().filter(|m| !m.1.is_empty()).collect();
    let wanted: Vec<(i32, (i32, i32))> = labelled
        .iter()
        .map(|m| (chart.backend_coord(&(m.0, ymax)).0, text_size(&m.1, MARK_FONT)))
        .collect();
    for (m, spot) in labelled.iter().zip(place_marks(&wanted, area, MARK_ROWS)) {
        let Some(r) = spot else { continue };
        let anchor = chart.backend_coord(&(m.0, ymax));
        let font = MARK_FONT.into_font().color(&m.2);
        let text = Text::new(m.1.clone(), (r.x0 - anchor.0, r.y0 - anchor.1), font);
        chart.draw_series([EmptyElement::at((m.0, ymax)) + text]).map_err(err)?;
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
    use crate::render::labels::Rect;

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

    /// The main plot's timeline panel alone, on 1400 x 420 pixels, as SVG.
    fn panel_svg(r: &SweepResult) -> String {
        let mut s = String::new();
        let area = SVGBackend::with_string(&mut s, (1400, 420)).into_drawing_area();
        best_and_knee_panel(&area, r).unwrap();
        drop(area);
        s
    }

    /// Every unrotated text of an SVG plotters wrote: its content and its box (from
    /// the font's own measure, as the panel measured it).
    fn text_boxes(svg: &str) -> Vec<(String, Rect)> {
        let attr = |tag: &str, name: &str| {
            tag.split(&format!(" {name}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_string)
        };
        svg.split("<text")
            .skip(1)
            .filter(|t| !t.contains("transform="))
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let text = rest
                    .split("</text>")
                    .next()
                    .unwrap()
                    .trim()
                    .replace("&amp;", "&")
                    .replace("&lt;", "<");
                let num = |n: &str| attr(tag, n).unwrap().parse::<f64>().unwrap();
                let size = (num("font-size") * 1.24).round() as i32;
                let (w, h) = text_size(&text, ("sans-serif", size));
                let (x, y) = (num("x") as i32, num("y") as i32);
                let x0 = match attr(tag, "text-anchor").as_deref() {
                    Some("middle") => x - w / 2,
                    Some("end") => x - w,
                    _ => x,
                };
                let y0 = match attr(tag, "dy").as_deref() {
                    Some("0.5ex") => y - h / 2,
                    Some("-0.5ex") => y - h,
                    _ => y,
                };
                (
                    text,
                    Rect {
                        x0,
                        y0,
                        x1: x0 + w,
                        y1: y0 + h,
                    },
                )
            })
            .collect()
    }

    /// A demo-like result: two buckets, each with a best and a knee row of `intervals`
    /// intervals, all ending at nearly the same time (their "99% done" marks close).
    fn demo_like(intervals: usize) -> SweepResult {
        let mut rows = Vec::new();
        for bucket in ["standard-like", "express-like--lab1-az1--x-s3"] {
            for (w, gets) in [(1, 1u32), (2, 2), (64, 30), (128, 31), (256, 32)] {
                let mut r = with_timeline(bucket, w, &vec![gets; intervals]);
                let t = r.timeline.as_mut().unwrap();
                t.done_99pct_ms = Some(intervals as f64 * 100.0 - f64::from(w) / 64.0);
                r.objects_per_s = f64::from(gets) * 10.0;
                rows.push(r);
            }
        }
        let mut r = result(rows);
        crate::analysis::analyse(&mut r, &crate::model::Thresholds::default());
        r
    }

    #[test]
    fn a_worker_count_and_all_of_them_are_drawn() {
        let mut r = result(vec![
            with_timeline("b-1", 1, &[5; 6]),
            with_timeline("b-2", 1, &[9; 8]),
            with_timeline("b-1", 8, &[40, 0, 0, 40, 40, 40]),
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

    #[test]
    fn titles_and_labels_fit_their_panels_and_do_not_overlap() {
        let r = demo_like(50);
        assert!(best_and_knee(&r).len() >= 3, "several lines named in the title");
        let svg = panel_svg(&r);
        let boxes = text_boxes(&svg);
        assert!(boxes.iter().any(|b| b.0 == "99% done"), "a mark label drawn: {boxes:?}");
        assert!(
            boxes.iter().any(|b| b.0.contains("standard-like best")),
            "the title names the lines"
        );
        for (text, b) in &boxes {
            let half = if b.x0 < 700 { (0, 700) } else { (700, 1400) };
            assert!(
                b.x0 >= half.0 && b.x1 <= half.1 && b.y0 >= 0 && b.y1 <= 420,
                "{text:?} leaves its panel: {b:?}"
            );
        }
        for (i, (ta, a)) in boxes.iter().enumerate() {
            for (tb, b) in &boxes[i + 1..] {
                assert!(!a.overlaps(b), "{ta:?} {a:?} overlaps {tb:?} {b:?}");
            }
        }
    }

    #[test]
    fn a_row_too_short_to_draw_says_so() {
        // The demo's rows as an older build wrote them: one interval of 100 ms each.
        let r = demo_like(1);
        let svg = panel_svg(&r);
        assert!(svg.contains("too short to draw over time"), "{svg}");
        assert!(svg.contains("standard-like best"), "the rows named");
        assert!(!svg.contains("into the configuration"), "no empty frame drawn");
        let drawn = panel_svg(&demo_like(10));
        assert!(drawn.contains("into the configuration") && !drawn.contains("too short"));
    }
}

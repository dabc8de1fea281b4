//! `history` for people: a trend table per configuration (bucket, workers, axes),
//! one row per run (time, objects/s, first-byte p50 and p99, errors, verdict, the
//! change found there), the change points in words under it, and the trend plot
//! (objects/s per run, one line per configuration, each change marked). Values that
//! cannot be drawn are left out as [`super::sane`] says.

use std::fmt::Write as _;

use plotters::prelude::*;

use crate::analysis::history::{ChangePoint, History, Series};

use super::layout::fitting;
use super::{align_right, sane, Layout, Style};

/// `started_unix_ms` as `YYYY-MM-DD HH:MM` UTC.
pub(crate) fn utc_minute(unix_ms: u64) -> String {
    match time::OffsetDateTime::from_unix_timestamp((unix_ms / 1000) as i64) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            t.year(),
            t.month() as u8,
            t.day(),
            t.hour(),
            t.minute()
        ),
        Err(_) => format!("{unix_ms} ms"),
    }
}

/// The configuration a series is, in words.
fn heading(s: &Series) -> String {
    let plural = if s.workers == 1 { "" } else { "s" };
    let mut text = format!("{}, {} worker{plural}", s.bucket, s.workers);
    text.push_str(&s.axes.label(crate::model::Named::of([s.axes])));
    if let Some(mb) = s.function_memory_mb {
        let _ = write!(text, ", function {mb} MB");
    }
    text
}

/// One change point in words: when, what, and how much.
pub(crate) fn change_line(c: &ChangePoint) -> String {
    format!(
        "change at run {} ({} UTC): {} {:.1} -> {:.1} (x{:.2}; Mann-Whitney p={:.2e}, Holm {:.2e})",
        c.run,
        utc_minute(c.started_unix_ms),
        c.measure.name(),
        c.before,
        c.after,
        c.ratio,
        c.p,
        c.p_adjusted
    )
}

/// The history columns a narrow table keeps, and the others in the order it adds
/// them while they fit.
const HISTORY_ESSENTIAL: [&str; 5] = ["run", "time (UTC)", "objects/s", "verdict", "change"];
const HISTORY_BY_PRIORITY: [&str; 3] = ["first-byte p50 ms", "errors", "first-byte p99 ms"];

/// A series' table, each cell under its own header; with a width, the columns that
/// fit it, and the others' names.
fn series_table(s: &Series, layout: &Layout) -> (comfy_table::Table, Vec<&'static str>) {
    let header = vec![
        "run",
        "time (UTC)",
        "objects/s",
        "first-byte p50 ms",
        "first-byte p99 ms",
        "errors",
        "verdict",
        "change",
    ];
    let rows: Vec<Vec<String>> = s
        .points
        .iter()
        .map(|p| {
            let change: Vec<&str> = s
                .changes
                .iter()
                .filter(|c| c.run == p.run)
                .map(|c| c.measure.name())
                .collect();
            vec![
                p.run.to_string(),
                utc_minute(p.started_unix_ms),
                format!("{:.1}", p.objects_per_s),
                format!("{:.2}", p.ttfb_p50_ms),
                format!("{:.2}", p.ttfb_p99_ms),
                p.errors.to_string(),
                p.verdict.map_or("-", |v| v.name()).to_string(),
                if change.is_empty() {
                    String::new()
                } else {
                    format!("<- {}", change.join(", "))
                },
            ]
        })
        .collect();
    let draw = |shown: &[&'static str]| {
        let mut table = layout.style.table(shown.to_vec());
        for row in &rows {
            table.add_row(
                header
                    .iter()
                    .zip(row)
                    .filter(|(h, _)| shown.contains(h))
                    .map(|(_, v)| v.clone()),
            );
        }
        for (i, h) in shown.iter().enumerate() {
            if !matches!(*h, "time (UTC)" | "verdict" | "change") {
                align_right(&mut table, i..i + 1);
            }
        }
        table
    };
    let shown = match layout.width_chars {
        Some(w) => fitting(&header, &HISTORY_ESSENTIAL, &HISTORY_BY_PRIORITY, w, &draw),
        None => header.clone(),
    };
    let mut table = draw(&shown);
    layout.fit_table(&mut table);
    let hidden = header.into_iter().filter(|h| !shown.contains(h)).collect();
    (table, hidden)
}

/// The runs of a series grouped by setup, when they differ: `runs 1-2: 1000 objects
/// of 46080 bytes; run 3: 300 objects of 46080 bytes`. `None` when every run had one.
fn setup_differs(s: &Series) -> Option<String> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for p in &s.points {
        match groups.iter_mut().find(|g| g.0 == p.setup) {
            Some(g) => g.1.push(p.run),
            None => groups.push((p.setup.as_str(), vec![p.run])),
        }
    }
    (groups.len() > 1).then(|| {
        let parts: Vec<String> = groups
            .iter()
            .map(|(setup, runs)| {
                let list: Vec<String> = runs.iter().map(usize::to_string).collect();
                let word = if runs.len() == 1 { "run" } else { "runs" };
                format!("{word} {}: {setup}", list.join(", "))
            })
            .collect();
        parts.join("; ")
    })
}

/// True when run `run`'s setup differs from the run before it in the series.
fn setup_changed_at(s: &Series, run: usize) -> bool {
    let at = s.points.iter().position(|p| p.run == run).unwrap_or(0);
    at > 0 && s.points[at].setup != s.points[at - 1].setup
}

/// One line for a series with no change and one setup: its runs, the range of its
/// figures and its verdicts.
fn quiet_line(s: &Series) -> String {
    let range = |v: Vec<f64>, decimals: usize| {
        let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        if (hi - lo).abs() < 1e-9 {
            format!("{lo:.decimals$}")
        } else {
            format!("{lo:.decimals$}-{hi:.decimals$}")
        }
    };
    let mut verdicts: Vec<&str> = s.points.iter().map(|p| p.verdict.map_or("-", |v| v.name())).collect();
    verdicts.dedup();
    let n = s.points.len();
    let said = if n == 1 {
        "one run: nothing to compare".to_string()
    } else {
        "no change beyond the runs' own spread".to_string()
    };
    format!(
        "{}: {n} run{} ({}), {} objects/s, first-byte p50 {} ms, {}: {said}",
        heading(s),
        if n == 1 { "" } else { "s" },
        s.points[0].setup,
        range(s.points.iter().map(|p| p.objects_per_s).collect(), 1),
        range(s.points.iter().map(|p| p.ttfb_p50_ms).collect(), 2),
        verdicts.join("/"),
    )
}

/// The trend tables of the series with a change or runs of different setups (what
/// differs said, and a change at a setup's edge said as one), with the columns left
/// out to fit said once; one line each for the others.
pub fn render_history(h: &History, style: Style) -> String {
    render_history_in(h, &Layout::wide(style))
}

/// [`render_history`] laid out by `layout`: tables fitted and lines wrapped to its width.
pub fn render_history_in(h: &History, layout: &Layout) -> String {
    let markdown = layout.style == Style::Markdown;
    let mut out = String::new();
    let bullet = if markdown { "- " } else { "" };
    let (quiet, busy): (Vec<&Series>, Vec<&Series>) = h
        .series
        .iter()
        .partition(|s| s.changes.is_empty() && setup_differs(s).is_none());
    if !quiet.is_empty() {
        let mut lines = String::new();
        for s in &quiet {
            let _ = writeln!(lines, "{bullet}{}", quiet_line(s));
        }
        out.push_str(&layout.wrap(&lines));
        out.push('\n');
    }
    let mut said: Vec<&str> = Vec::new();
    for s in busy {
        if markdown {
            let _ = writeln!(out, "### {}\n", heading(s));
        } else {
            let _ = writeln!(out, "{}", layout.wrap(&heading(s)));
        }
        let (table, hidden) = series_table(s, layout);
        let _ = writeln!(out, "{table}");
        if markdown {
            out.push('\n');
        }
        let mut under = String::new();
        if !hidden.is_empty() && hidden != said {
            let _ = writeln!(
                under,
                "{bullet}history columns not shown (to fit the width): {}; --markdown shows them",
                hidden.join(", ")
            );
            said = hidden;
        }
        if let Some(differs) = setup_differs(s) {
            let _ = writeln!(
                under,
                "{bullet}the runs differ in setup, so they are not one sweep repeated: {differs}"
            );
        }
        if s.changes.is_empty() {
            let _ = writeln!(under, "{bullet}no change beyond the runs' own spread");
        }
        for c in &s.changes {
            let across = if setup_changed_at(s, c.run) {
                " (the setup changed at this run too: not a change of the same sweep)"
            } else {
                ""
            };
            let _ = writeln!(under, "{bullet}{}{across}", change_line(c));
        }
        out.push_str(&layout.wrap(&under));
        out.push('\n');
    }
    out
}

/// The summary for `--html`: one line per configuration, its changes or none.
pub fn summary_markdown(h: &History) -> String {
    let mut out = format!("{} runs, {} configurations.\n\n", h.runs, h.series.len());
    for s in &h.series {
        let changes: Vec<String> = s.changes.iter().map(change_line).collect();
        let found = if changes.is_empty() {
            "no change beyond the runs' own spread".to_string()
        } else {
            changes.join("; ")
        };
        let _ = writeln!(out, "- **{}** ({} runs): {found}", heading(s), s.points.len());
    }
    out
}

const WIDTH_PX: u32 = 960;
const HEIGHT_PX: u32 = 540;

/// The trend plot as an SVG document: objects/s per run, one line per
/// configuration, a vertical rule at each change. `None` when nothing is drawable.
pub fn trend_svg(h: &History) -> Option<String> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = h
        .series
        .iter()
        .map(|s| {
            let pts = s
                .points
                .iter()
                .filter(|p| sane::rate(p.objects_per_s))
                .map(|p| (p.run as f64, p.objects_per_s))
                .collect();
            (heading(s), pts)
        })
        .filter(|(_, pts): &(String, Vec<(f64, f64)>)| !pts.is_empty())
        .collect();
    let top = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(0.0, f64::max);
    if lines.is_empty() || top <= 0.0 {
        return None;
    }
    super::plot::register_font();
    let mut svg = String::new();
    draw(h, &lines, top, &mut svg).ok()?;
    Some(svg)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(h: &History, lines: &[(String, Vec<(f64, f64)>)], top: f64, svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("objects/s per run (changes marked)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.5f64..(h.runs as f64 + 0.5), 0f64..top * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("run (oldest first)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_desc("objects/s")
        .draw()?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    for c in h.series.iter().flat_map(|s| &s.changes) {
        let x = c.run as f64 - 0.5;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, top * 1.1)],
            RED.stroke_width(1),
        )))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::history::history;
    use crate::model::SweepResult;

    /// docs/demo.json, started `minutes` later, read `objects` objects.
    fn demo(minutes: u64, objects: u32) -> SweepResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/demo.json")).unwrap();
        let mut r: SweepResult = serde_json::from_str(&text).unwrap();
        r.started_unix_ms += minutes * 60_000;
        r.request.object_count = objects;
        r
    }

    #[test]
    fn a_configuration_without_change_is_one_line_and_a_change_of_setup_is_said() {
        let same = history(&[demo(0, 1000), demo(10, 1000), demo(20, 1000)]);
        for width in [80, 100] {
            let text = render_history_in(&same, &Layout::fitted(Style::Terminal, width, None));
            let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
            assert!(long.is_empty(), "over {width}: {long:#?}");
            assert!(!text.contains('┆'), "no table without a change: {text}");
            let flat = text.replace("\n  ", " ");
            assert_eq!(
                flat.matches("no change beyond the runs' own spread").count(),
                demo(0, 1000).results.len(),
                "{text}"
            );
        }
        let one = render_history(&history(&[demo(0, 1000)]), Style::Terminal);
        assert!(
            one.contains("1 run (1000 objects of 46080 bytes)") && one.contains("one run: nothing to compare"),
            "{one}"
        );
        // The third run read 300 objects: every series says its runs differ.
        let mixed = history(&[demo(0, 1000), demo(10, 1000), demo(20, 300)]);
        for width in [80, 100] {
            let text = render_history_in(&mixed, &Layout::fitted(Style::Terminal, width, None));
            let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
            assert!(long.is_empty(), "over {width}: {long:#?}");
            let flat = text.replace("\n  ", " ");
            assert!(
                flat.contains("the runs differ in setup, so they are not one sweep repeated: runs 1, 2: 1000 objects of 46080 bytes; run 3: 300 objects"),
                "{text}"
            );
        }
    }
}

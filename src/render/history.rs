//! `history` for people: a trend table per configuration (bucket, workers, axes),
//! one row per run (time, objects/s, first-byte p50 and p99, errors, verdict, the
//! change found there), the change points in words under it, and the trend plot
//! (objects/s per run, one line per configuration, each change marked). Values that
//! cannot be drawn are left out as [`super::sane`] says.

use std::fmt::Write as _;

use plotters::prelude::*;

use crate::analysis::history::{ChangePoint, History, Series};

use super::{align_right, sane, Style};

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
    text.push_str(&s.axes.label(!crate::model::Client::is_sdk(&s.axes.s3_client)));
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

fn series_table(s: &Series, style: Style) -> comfy_table::Table {
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
    let mut table = style.table(header);
    for p in &s.points {
        let change: Vec<&str> = s
            .changes
            .iter()
            .filter(|c| c.run == p.run)
            .map(|c| c.measure.name())
            .collect();
        table.add_row(vec![
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
        ]);
    }
    align_right(&mut table, 0..1);
    align_right(&mut table, 2..6);
    table
}

/// The trend tables, each configuration's change points (or that none was found)
/// under its table.
pub(crate) fn render_history(h: &History, style: Style) -> String {
    let markdown = style == Style::Markdown;
    let mut out = String::new();
    let bullet = if markdown { "- " } else { "" };
    for s in &h.series {
        if markdown {
            let _ = writeln!(out, "### {}\n", heading(s));
        } else {
            let _ = writeln!(out, "{}", heading(s));
        }
        let _ = writeln!(out, "{}", series_table(s, style));
        if markdown {
            out.push('\n');
        }
        if s.changes.is_empty() {
            let _ = writeln!(out, "{bullet}no change beyond the runs' own spread");
        }
        for c in &s.changes {
            let _ = writeln!(out, "{bullet}{}", change_line(c));
        }
        out.push('\n');
    }
    out
}

/// The summary for `--html`: one line per configuration, its changes or none.
pub(crate) fn summary_markdown(h: &History) -> String {
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
pub(crate) fn trend_svg(h: &History) -> Option<String> {
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

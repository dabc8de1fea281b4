//! The picture of a size axis (rows of several object sizes, request
//! `object_sizes_bytes`): a column of panels per object size, one line per bucket,
//! workers across (log-2 axis): throughput in objects/s on top, MiB/s under it, so a
//! curve that flattens on requests at a small size and on bytes at a large one shows
//! side by side. The title says where the binding limit changes with size (the
//! analysis's `size_limits`). Values are medians over repetitions.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::stats::{first_seen, median};
use crate::model::{ConfigResult, SweepResult};

use super::labels::draw_legend;
use super::plot::{colour, err, panel, register_font, PlotError};

/// One bucket's line at one size: (workers, objects/s, MiB/s) by increasing workers.
type Line = Vec<(u32, f64, f64)>;

/// Per object size (in the order run), per bucket (in the order run), its line.
pub(crate) fn size_curves(result: &SweepResult) -> Vec<(u64, Vec<(String, Line)>)> {
    let buckets = first_seen(result.results.iter().map(|r| r.bucket.clone()));
    result
        .object_sizes()
        .into_iter()
        .map(|size| {
            let lines = buckets
                .iter()
                .map(|b| {
                    let rows: Vec<&ConfigResult> = result
                        .rows_of(b)
                        .filter(|r| r.size_axis_bytes() == Some(size))
                        .collect();
                    (b.clone(), line_of(&rows))
                })
                .collect();
            (size, lines)
        })
        .collect()
}

/// Medians per worker count, by increasing workers.
fn line_of(rows: &[&ConfigResult]) -> Line {
    let mut workers: Vec<u32> = rows.iter().map(|r| r.workers).collect();
    workers.sort_unstable();
    workers.dedup();
    workers
        .into_iter()
        .map(|w| {
            let at: Vec<&&ConfigResult> = rows.iter().filter(|r| r.workers == w).collect();
            let med = |f: fn(&ConfigResult) -> f64| median(at.iter().map(|r| f(r)).collect()).unwrap_or(0.0);
            (w, med(|r| r.objects_per_s), med(|r| r.mib_per_s))
        })
        .collect()
}

/// Draws a panel per object size on `root` (files, strings and buffers:
/// [`super::figure`]).
pub(super) fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, result: &SweepResult) -> Result<(), PlotError> {
    register_font();
    let curves = size_curves(result);
    if curves.iter().all(|(_, lines)| lines.iter().all(|(_, l)| l.is_empty())) {
        return Err(PlotError::Empty);
    }
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "s3sweep: {} objects per configuration at {} object sizes ({} run, {} vCPUs)",
        result.request.object_count,
        curves.len(),
        result.environment.runner,
        result.environment.vcpus
    );
    let mut root = root.titled(&title, ("sans-serif", 26).into_font()).map_err(err)?;
    for note in result.analysis.iter().flat_map(|a| &a.size_limits) {
        let line = format!(
            "{}{}: {}",
            note.bucket,
            super::diagnosis::client_of(result, note),
            note.note
        );
        root = root.titled(&line, ("sans-serif", 16).into_font()).map_err(err)?;
    }
    let (legend_area, root) = root.split_vertically(30);
    let legend: Vec<(RGBColor, String)> = curves[0]
        .1
        .iter()
        .enumerate()
        .map(|(i, (b, _))| (colour(i), b.clone()))
        .collect();
    draw_legend(&legend_area, &legend).map_err(PlotError::Draw)?;
    let panels = root.split_evenly((2, curves.len()));
    let (lo, hi) = curves
        .iter()
        .flat_map(|(_, ls)| ls.iter().flat_map(|(_, l)| l.iter().map(|p| f64::from(p.0))))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), w| (lo.min(w), hi.max(w)));
    let x = (lo / 1.5)..(hi * 1.5);
    for (i, (size, lines)) in curves.iter().enumerate() {
        let caption = |what: &str| format!("objects of {size} B: {what}");
        size_panel(&panels[i], &caption("objects/s"), lines, x.clone(), |p| p.1)?;
        size_panel(&panels[curves.len() + i], &caption("MiB/s"), lines, x.clone(), |p| p.2)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// One panel: each bucket's `value` against workers.
fn size_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    lines: &[(String, Line)],
    x: std::ops::Range<f64>,
    value: fn(&(u32, f64, f64)) -> f64,
) -> Result<(), PlotError> {
    let ymax = lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(value))
        .fold(0.0f64, f64::max)
        .max(0.001)
        * 1.15;
    let mut chart = panel(area, caption)
        .build_cartesian_2d(x.log_scale().base(2.0), 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("workers")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(RGBColor(238, 238, 238))
        .x_max_light_lines(1)
        .y_max_light_lines(1)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, (_, line)) in lines.iter().enumerate() {
        let style = ShapeStyle::from(&colour(i)).stroke_width(2);
        let points: Vec<(f64, f64)> = line.iter().map(|p| (f64::from(p.0), value(p))).collect();
        chart.draw_series(LineSeries::new(points.clone(), style)).map_err(err)?;
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, style.filled())))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::test_rows::{result, row};
    use crate::model::ObjectSize;

    #[test]
    fn a_panel_per_size() {
        let at = |size: u64, workers: u32, wall_ms: f64| {
            let mut r = row("b-1", workers, 1, wall_ms, 0);
            r.axes.object_size_bytes = Some(ObjectSize::Fixed(size));
            r.mib_per_s = size as f64 / 1e3;
            r
        };
        let mut three = result(vec![
            at(4096, 1, 900.0),
            at(4096, 8, 200.0),
            at(46_080, 1, 950.0),
            at(46_080, 8, 250.0),
            at(1_048_576, 1, 990.0),
            at(1_048_576, 8, 600.0),
        ]);
        crate::analysis::analyse(&mut three, &crate::model::Thresholds::default());
        let svg = super::super::figure::render_svg(&three).unwrap();
        for size in [4096, 46_080, 1_048_576] {
            for what in ["objects/s", "MiB/s"] {
                let caption = format!("objects of {size} B: {what}");
                assert_eq!(svg.matches(&caption).count(), 1, "{caption} once");
            }
        }
    }
}

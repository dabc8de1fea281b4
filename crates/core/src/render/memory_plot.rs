//! The picture of a memory sweep (rows of several `memory_mb`): two panels, one line
//! per bucket, memory size (MB, log-2 axis) across: the best throughput (objects/s)
//! at each size, and what a configuration costs per 1,000 GETs at each size (the
//! fastest one, solid; the cheapest one, dashed). The cheapest memory x workers within
//! `target_wall_ms` is circled. Emulated sizes (a local CPU quota) are said in the
//! title. Values are medians over repetitions of configurations without failed
//! requests.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::cost::{clean_configurations, cost_report, CostOverrides};
use crate::analysis::memory::choices;
use crate::model::stats::{first_seen, median};
use crate::model::SweepResult;

use super::plot::{colour, err, log_label, log_range, panel, register_font, PlotError};
use super::sane;

/// One memory size of one bucket: its fastest configuration and its cheapest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryPoint {
    pub memory_mb: u32,
    /// Workers of the fastest configuration at this size.
    pub workers: u32,
    pub objects_per_s: f64,
    /// Cost per 1,000 GETs of that fastest configuration.
    pub per_1000_gets_usd: f64,
    /// The lowest cost per 1,000 GETs at this size (any worker count).
    pub cheapest_per_1000_gets_usd: f64,
}

/// Per bucket (in the order run), its points by increasing memory.
pub(crate) fn memory_curves(result: &SweepResult) -> Vec<(String, Vec<MemoryPoint>)> {
    let report = cost_report(result, CostOverrides::default());
    let configs = clean_configurations(result, &report.rows);
    first_seen(result.results.iter().map(|r| r.bucket.clone()))
        .into_iter()
        .map(|bucket| {
            let mut sizes: Vec<u32> = configs
                .iter()
                .filter(|c| c.bucket == bucket)
                .filter_map(|c| c.axes.memory_mb)
                .collect();
            sizes.sort_unstable();
            sizes.dedup();
            let points = sizes
                .into_iter()
                .filter_map(|m| {
                    let at: Vec<_> = configs
                        .iter()
                        .filter(|c| c.bucket == bucket && c.axes.memory_mb == Some(m))
                        .collect();
                    let fastest = at.iter().min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))?;
                    let rates = result
                        .rows_at(&bucket, Some(m))
                        .filter(|r| r.workers == fastest.workers)
                        .map(|r| r.objects_per_s)
                        .collect();
                    Some(MemoryPoint {
                        memory_mb: m,
                        workers: fastest.workers,
                        objects_per_s: median(rates).unwrap_or(0.0),
                        per_1000_gets_usd: fastest.per_1000_gets_usd,
                        cheapest_per_1000_gets_usd: at
                            .iter()
                            .map(|c| c.per_1000_gets_usd)
                            .fold(f64::INFINITY, f64::min),
                    })
                })
                .collect();
            (bucket, points)
        })
        .collect()
}

/// Draws the two panels on `root` (files, strings and buffers: [`super::figure`]).
pub(super) fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, result: &SweepResult) -> Result<(), PlotError> {
    register_font();
    let curves = memory_curves(result);
    if curves.iter().all(|(_, p)| p.is_empty()) {
        return Err(PlotError::Empty);
    }
    root.fill(&WHITE).map_err(err)?;
    let (top, body) = root.split_vertically(60);
    top.draw(&Text::new(title(result), (20, 20), ("sans-serif", 22).into_font()))
        .map_err(err)?;
    let panels = body.split_evenly((1, 2));
    let all: Vec<&MemoryPoint> = curves.iter().flat_map(|(_, p)| p.iter()).collect();
    let lo = all.iter().map(|p| f64::from(p.memory_mb)).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|p| f64::from(p.memory_mb)).fold(0.0f64, f64::max);
    let x_range = (lo / 1.3)..(hi * 1.3);
    throughput_panel(&panels[0], &curves, &all, x_range.clone())?;
    cost_panel(&panels[1], result, &curves, &all, x_range)?;
    root.present().map_err(err)?;
    Ok(())
}

/// What was swept and how: emulated by a CPU quota, or a Lambda version per size.
fn title(result: &SweepResult) -> String {
    let emulated = result.results.iter().any(|r| r.emulated);
    format!(
        "s3sweep memory sweep: {} objects per configuration, {} ({} run)",
        result.request.object_count,
        if emulated {
            "memory EMULATED by a client CPU quota of MB / 1,769 cores"
        } else {
            "a published Lambda version per memory size"
        },
        result.environment.runner
    )
}

fn memory_label(v: &f64) -> String {
    format!("{v:.0}")
}

/// The first panel, throughput against memory, each point labelled with its worker count.
fn throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[(String, Vec<MemoryPoint>)],
    all: &[&MemoryPoint],
    x_range: std::ops::Range<f64>,
) -> Result<(), PlotError> {
    let y_max = all.iter().map(|p| p.objects_per_s).fold(0.0f64, f64::max) * 1.15;
    let mut chart = panel(area, "best objects/s at each memory size")
        .build_cartesian_2d(x_range.log_scale().base(2.0), 0.0..y_max.max(1.0))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("Lambda memory, MB")
        .y_desc("objects/s")
        .x_label_formatter(&memory_label)
        .draw()
        .map_err(err)?;
    for (i, (bucket, points)) in curves.iter().enumerate() {
        let c = colour(i);
        let line: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (f64::from(p.memory_mb), p.objects_per_s))
            .collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(bucket.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 4, c.filled())))
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|p| {
                Text::new(
                    format!("{}w", p.workers),
                    (f64::from(p.memory_mb), p.objects_per_s),
                    ("sans-serif", 13).into_font().color(&c),
                )
            }))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// (memory, cost) of each point; a cost out of range (from the request's prices) is
/// not drawn.
fn cost_points(points: &[MemoryPoint], cost: fn(&MemoryPoint) -> f64) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|p| (f64::from(p.memory_mb), cost(p)))
        .filter(|&(_, usd)| sane::usd(usd))
        .collect()
}

/// The second panel, cost per 1,000 GETs against memory: the fastest configuration
/// (solid) and the cheapest (dashed); the cheapest within the target circled.
fn cost_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    result: &SweepResult,
    curves: &[(String, Vec<MemoryPoint>)],
    all: &[&MemoryPoint],
    x_range: std::ops::Range<f64>,
) -> Result<(), PlotError> {
    let y = log_range(
        all.iter()
            .flat_map(|p| [p.per_1000_gets_usd, p.cheapest_per_1000_gets_usd])
            .filter(|&usd| sane::usd(usd)),
    );
    let target = result.request.target_wall_ms;
    let caption = match target {
        Some(t) => format!("$ per 1,000 GETs (circled: cheapest within {t} ms)"),
        None => "$ per 1,000 GETs (circled: cheapest)".to_string(),
    };
    let mut chart = panel(area, &caption)
        .build_cartesian_2d(x_range.log_scale().base(2.0), y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("Lambda memory, MB")
        .y_desc("US$ per 1,000 GETs (S3 + Lambda GB-s)")
        .x_label_formatter(&memory_label)
        .y_label_formatter(&|v| {
            if log_label(v).is_empty() {
                String::new()
            } else {
                format!("{v:.0e}")
            }
        })
        .draw()
        .map_err(err)?;
    let chosen = choices(result, target);
    for (i, (bucket, points)) in curves.iter().enumerate() {
        let c = colour(i);
        let at = |cost: fn(&MemoryPoint) -> f64| cost_points(points, cost);
        let fastest = at(|p| p.per_1000_gets_usd);
        chart
            .draw_series(LineSeries::new(fastest.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(format!("{bucket}: fastest"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(fastest.iter().map(|&(x, y)| Circle::new((x, y), 3, c.filled())))
            .map_err(err)?;
        chart
            .draw_series(DashedLineSeries::new(
                at(|p| p.cheapest_per_1000_gets_usd),
                6,
                4,
                c.stroke_width(1),
            ))
            .map_err(err)?
            .label(format!("{bucket}: cheapest"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1)));
        let cheapest = chosen
            .iter()
            .find(|ch| &ch.bucket == bucket)
            .and_then(|ch| ch.cheapest.as_ref());
        if let Some(best) = cheapest.filter(|b| sane::usd(b.per_1000_gets_usd)) {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (f64::from(best.memory_mb), best.per_1000_gets_usd),
                    9,
                    c.stroke_width(2),
                )))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};
    use crate::render::figure::render_svg;

    fn at(bucket: &str, memory_mb: u32, workers: u32, wall_ms: f64) -> crate::model::ConfigResult {
        let mut r = row(bucket, workers, 1, wall_ms, 0);
        r.axes.memory_mb = Some(memory_mb);
        r.emulated = true;
        r
    }

    #[test]
    fn one_point_per_bucket_and_size_at_its_fastest_and_the_svg_draws() {
        let r = result(vec![
            at("b-1", 512, 4, 900.0),
            at("b-1", 512, 32, 600.0),
            at("b-1", 1769, 4, 800.0),
            at("b-1", 1769, 32, 200.0),
            at("b-2--use1-az4--x-s3", 512, 32, 500.0),
            at("b-2--use1-az4--x-s3", 1769, 32, 150.0),
        ]);
        let curves = memory_curves(&r);
        assert_eq!(curves.len(), 2);
        let b1: Vec<(u32, u32)> = curves[0].1.iter().map(|p| (p.memory_mb, p.workers)).collect();
        assert_eq!(b1, vec![(512, 32), (1769, 32)]);
        assert!(curves[0].1[1].objects_per_s > curves[0].1[0].objects_per_s);
        // 1,769 MB x 4 workers for 800 ms costs more than 1,769 MB x 32 for 200 ms.
        assert!(curves[0].1[1].cheapest_per_1000_gets_usd <= curves[0].1[1].per_1000_gets_usd);
        let svg = render_svg(&r).unwrap();
        assert!(svg.contains("EMULATED"), "the title says the sizes were emulated");
        assert!(svg.contains("best objects/s at each memory size"));
        assert!(svg.contains("b-2--use1-az4--x-s3: cheapest"));
    }
}

//! Which picture a result gets, chosen once from the result ([`Figure::of`]), and the
//! one place a picture is drawn, in memory (an SVG string or a pixel buffer), from
//! only the values [`super::sane`] keeps, then written atomically: the
//! four-panel plot ([`super::plot`]), with under it the best and knee configurations'
//! timelines when the rows have them ([`super::timeline_plot::best_and_knee_panel`]),
//! for a memory sweep of more than one size the
//! memory plot ([`super::memory_plot`]), for a size axis of more than one object size
//! a panel per size ([`super::size_plot`]); on request (`report --timeline`) the
//! timeline picture ([`super::timeline_plot`]).

use std::path::Path;

use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{RunKind, SweepResult};

use super::plot::{self, Format, PlotError, HEIGHT, WIDTH};
use super::sane::{self, LeftOut};
use super::timeline_plot::{self, TimelinePick};
use super::{memory_plot, size_plot};

/// The height of the timeline panel under the four panels, pixels.
const UNDER_HEIGHT: u32 = 420;

/// The pictures a result can be drawn as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Four panels, a line per bucket ([`super::plot`]).
    Curves,
    /// The four panels and under them the best and knee configurations' timelines
    /// ([`super::timeline_plot::best_and_knee_panel`]), when the result has them.
    CurvesAndTimeline,
    /// Throughput and cost against memory, a line per bucket ([`super::memory_plot`]).
    Memory,
    /// A panel per object size ([`super::size_plot`]).
    Sizes,
    /// Objects/s and MiB/s over time ([`super::timeline_plot`]).
    Timeline(TimelinePick),
}

impl Figure {
    /// The picture of `result`: a memory sweep of several sizes gets the memory plot,
    /// then a size axis of several sizes a panel per size, anything else the curves
    /// (with the timeline panel when a best or knee row has a timeline).
    pub(crate) fn of(result: &SweepResult) -> Figure {
        match result.run_kind() {
            RunKind::MemorySweep if result.memory_sizes().len() > 1 => Figure::Memory,
            RunKind::MemorySweep | RunKind::SizeAxis if result.object_sizes().len() > 1 => Figure::Sizes,
            _ if !timeline_plot::best_and_knee(result).is_empty() => Figure::CurvesAndTimeline,
            _ => Figure::Curves,
        }
    }

    /// The picture's size in pixels: the timeline panel adds height under the four.
    fn size(self) -> (u32, u32) {
        match self {
            Figure::CurvesAndTimeline => (WIDTH, HEIGHT + UNDER_HEIGHT),
            _ => (WIDTH, HEIGHT),
        }
    }

    /// Draws this picture of `result` on `root`.
    fn draw<DB: DrawingBackend>(self, root: DrawingArea<DB, Shift>, result: &SweepResult) -> Result<(), PlotError> {
        match self {
            Figure::Curves => plot::draw(root, result),
            Figure::CurvesAndTimeline => {
                // The panel first: the four panels' drawing ends the picture.
                let top = root.dim_in_pixel().1.saturating_sub(UNDER_HEIGHT);
                let (top, under) = root.split_vertically(top);
                timeline_plot::best_and_knee_panel(&under, result)?;
                plot::draw(top, result)
            }
            Figure::Memory => memory_plot::draw(root, result),
            Figure::Sizes => size_plot::draw(root, result),
            Figure::Timeline(pick) => timeline_plot::draw(root, result, pick),
        }
    }

    /// This picture of `result` as the bytes of a file in `format`, drawn in memory
    /// (an SVG string, or a pixel buffer encoded as PNG).
    fn render(self, result: &SweepResult, format: Format) -> Result<Vec<u8>, PlotError> {
        match format {
            Format::Svg => {
                let mut s = String::new();
                self.draw(SVGBackend::with_string(&mut s, self.size()).into_drawing_area(), result)?;
                Ok(s.into_bytes())
            }
            Format::Png => {
                let (width, height) = self.size();
                let mut rgb = vec![0u8; width as usize * height as usize * 3];
                self.draw(
                    BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area(),
                    result,
                )?;
                let mut png = Vec::new();
                image::codecs::png::PngEncoder::new(&mut png)
                    .write_image(&rgb, width, height, image::ColorType::Rgb8)
                    .map_err(|e| PlotError::Draw(format!("encoding the PNG: {e}")))?;
                Ok(png)
            }
        }
    }
}

/// Draws the picture of `result` into `path` (SVG or PNG by extension), whole or not
/// at all: only the values a figure can draw ([`super::sane`]), rendered in memory,
/// then put in place by the project's one atomic write (a new temporary file that
/// follows no link, renamed over `path`). Returns what was left out of the figure.
pub fn render_file(result: &SweepResult, path: &Path) -> Result<LeftOut, PlotError> {
    render_file_as(result, path, Figure::of(result))
}

/// [`render_file`] of the picture `figure`.
pub fn render_file_as(result: &SweepResult, path: &Path, figure: Figure) -> Result<LeftOut, PlotError> {
    let format = plot::format_of(path)?;
    let (result, left_out) = sane::plottable(result);
    let bytes = figure.render(&result, format)?;
    crate::sys::files::write_atomic(path, &bytes).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(left_out)
}

/// The picture of `result` as an SVG document (what `report --html` puts in its page),
/// from the values a figure can draw ([`super::sane`]).
pub(crate) fn render_svg(result: &SweepResult) -> Result<String, PlotError> {
    render_svg_as(result, Figure::of(result))
}

/// The picture `figure` of `result` as an SVG document, from the values a figure can
/// draw.
pub(crate) fn render_svg_as(result: &SweepResult, figure: Figure) -> Result<String, PlotError> {
    let (result, _) = sane::plottable(result);
    let bytes = figure.render(&result, Format::Svg)?;
    Ok(String::from_utf8(bytes).expect("plotters writes UTF-8 SVG"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};
    use crate::model::{Client, ObjectSize};

    fn at(memory_mb: Option<u32>, size: Option<u64>, wall_ms: f64) -> crate::model::ConfigResult {
        let mut r = row("b-1", 4, 1, wall_ms, 0);
        r.axes.memory_mb = memory_mb;
        r.axes.object_size_bytes = size.map(ObjectSize::Fixed);
        r
    }

    #[test]
    fn the_figure_is_chosen_by_the_kind_of_run_and_its_sizes() {
        let of = |rows| Figure::of(&result(rows));
        assert_eq!(of(vec![at(None, None, 900.0)]), Figure::Curves);
        let mut lean = at(None, None, 500.0);
        lean.axes.s3_client = Client::Lean;
        assert_eq!(of(vec![at(None, None, 900.0), lean]), Figure::Curves);
        // One memory size or one object size: one sweep's curves.
        assert_eq!(of(vec![at(Some(512), None, 900.0)]), Figure::Curves);
        assert_eq!(of(vec![at(None, Some(4096), 900.0)]), Figure::Curves);
        let two_memory = vec![at(Some(512), None, 900.0), at(Some(1024), None, 500.0)];
        assert_eq!(of(two_memory), Figure::Memory);
        let two_sizes = vec![at(None, Some(4096), 900.0), at(None, Some(65_536), 500.0)];
        assert_eq!(of(two_sizes), Figure::Sizes);
        // One memory size over two object sizes: a panel per size.
        let both = vec![at(Some(512), Some(4096), 900.0), at(Some(512), Some(65_536), 500.0)];
        assert_eq!(of(both), Figure::Sizes);
    }

    #[test]
    fn several_sizes_get_the_memory_plot_one_size_the_usual_one() {
        let mut two = result(vec![at(Some(512), None, 900.0), at(Some(1024), None, 500.0)]);
        crate::analysis::analyse(&mut two, &crate::model::Thresholds::default());
        assert!(render_svg(&two).unwrap().contains("memory sweep"));
        let mut one = result(vec![at(Some(512), None, 900.0)]);
        crate::analysis::analyse(&mut one, &crate::model::Thresholds::default());
        assert!(!render_svg(&one).unwrap().contains("memory sweep"));
    }

    fn timed(workers: u32, gets: &[u32]) -> crate::model::ConfigResult {
        let mut r = at(None, None, gets.len() as f64 * 100.0);
        r.workers = workers;
        r.timeline = Some(crate::model::test_rows::timeline(gets));
        r
    }

    /// A result with timelines gets the timeline panel under the four, with the best
    /// and the knee configurations' lines; one without keeps the four panels only.
    #[test]
    fn the_curves_gain_a_timeline_panel_when_the_rows_have_timelines() {
        // Knee at 4 (8 buys < 10% more), best at 8; 1 is slower.
        let mut best = timed(8, &[52; 10]);
        (best.wall_ms, best.objects_per_s) = (950.0, 100_000.0 / 950.0);
        let rows = vec![timed(1, &[10; 40]), timed(4, &[50; 10]), best];
        let mut timed_result = result(rows.clone());
        crate::analysis::analyse(&mut timed_result, &crate::model::Thresholds::default());
        let s = &timed_result.summary[0];
        assert_eq!((s.best_workers, s.knee_workers), (8, Some(4)));
        assert_eq!(Figure::of(&timed_result), Figure::CurvesAndTimeline);
        let svg = render_svg(&timed_result).unwrap();
        assert!(
            svg.contains("objects/s over time: b-1 best 8 w, b-1 knee 4 w (light)"),
            "the panel's title"
        );
        assert!(svg.contains("99% done"), "the marks");
        assert!(svg.contains(&format!("height=\"{}\"", HEIGHT + UNDER_HEIGHT)), "taller");
        let stroke = |c: RGBColor| format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let picked = timeline_plot::best_and_knee(&timed_result);
        assert_eq!(picked.len(), 2);
        for (_, c, label) in &picked {
            assert!(svg.contains(&stroke(*c)), "{label}'s line");
        }
        // Without timelines: the four panels as before, not a pixel taller.
        let mut plain = timed_result.clone();
        plain.results.iter_mut().for_each(|r| r.timeline = None);
        assert_eq!(Figure::of(&plain), Figure::Curves);
        let svg = render_svg(&plain).unwrap();
        assert!(!svg.contains("timeline, objects/s") && svg.contains(&format!("height=\"{HEIGHT}\"")));
    }

    /// A result whose bandwidth probe ran gets the probe's MiB/s as one more line in
    /// the timeline panel (black, beside the rows' MiB/s); a probe whose intervals
    /// cannot be drawn is left out and said.
    #[test]
    fn the_probes_rate_is_a_line_of_the_timeline_panel() {
        let mut best = timed(8, &[52; 10]);
        (best.wall_ms, best.objects_per_s) = (950.0, 100_000.0 / 950.0);
        let mut r = result(vec![timed(1, &[10; 40]), timed(4, &[50; 10]), best]);
        crate::analysis::analyse(&mut r, &crate::model::Thresholds::default());
        let probe = crate::model::test_rows::probe_report(100, vec![40.0, 40.0, 10.0, 10.0, 10.0]);
        r.network = Some(crate::model::NetworkReport {
            order: crate::model::Order::Ascending,
            order_seed: None,
            pool_idle_timeout_ms: 15_000,
            ceiling: None,
            probe: Some(probe),
        });
        let probe = |r: &mut SweepResult| {
            r.network
                .as_mut()
                .unwrap()
                .probe
                .as_mut()
                .unwrap()
                .interval_mib_per_s
                .clone_from(&vec![])
        };
        let mut no_intervals = r.clone();
        probe(&mut no_intervals);
        let without = render_svg(&no_intervals).unwrap();
        let with = render_svg(&r).unwrap();
        // The probe's line: black, 2 pixels wide (the axes are 1), a point per interval.
        let probe_lines = |svg: &str| -> Vec<usize> {
            svg.split("<polyline")
                .filter(|l| l.contains(r##"stroke="#000000" stroke-width="2""##))
                .map(|l| {
                    l.split("points=\"")
                        .nth(1)
                        .map_or(0, |p| p.split(' ').filter(|x| x.contains(',')).count())
                })
                .collect()
        };
        assert!(with.contains("the bandwidth probe in black"), "the caption says it");
        assert!(!without.contains("the bandwidth probe"));
        assert_eq!(probe_lines(&with), vec![5], "the probe's line, a point per interval");
        assert!(probe_lines(&without).is_empty());
        r.network.as_mut().unwrap().probe.as_mut().unwrap().interval_mib_per_s[1] = f64::NAN;
        let (kept, left) = sane::plottable(&r);
        assert!(kept.network.unwrap().probe.unwrap().interval_mib_per_s.is_empty());
        assert!(left.fields.contains(&"network.probe.interval_mib_per_s"));
        assert!(probe_lines(&render_svg(&r).unwrap()).is_empty());
    }

    /// A link planted at the plot's temporary name is not followed: the file it
    /// points at keeps its bytes (plotters' own file backends opened the name with
    /// `File::create`, which follows it). The link is at every name this process
    /// would use next, as an attacker who knows the pid would plant them.
    #[test]
    fn a_link_at_the_plots_temporary_name_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("s3sweep-figure-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, b"the user's file").unwrap();
        let mut one = result(vec![at(None, None, 900.0)]);
        crate::analysis::analyse(&mut one, &crate::model::Thresholds::default());
        for name in ["plot.svg", "plot.png"] {
            let plot = dir.join(name);
            for tmp in crate::sys::files::next_temp_paths(&plot, 256) {
                std::os::unix::fs::symlink(&victim, tmp).unwrap();
            }
            // Refused (the name is taken) or written elsewhere; never through the link.
            let _ = render_file(&one, &plot);
            let kept = std::fs::read(&victim).unwrap() == b"the user's file";
            assert!(
                kept,
                "{name}: the plot was written through the link over the file it points at"
            );
            assert!(!plot.is_symlink(), "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_figure_is_written_whole_and_says_what_it_left_out() {
        let dir = std::env::temp_dir().join(format!("s3sweep-figure-whole-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut bad = at(None, None, 900.0);
        bad.workers = 8;
        bad.objects_per_s = -1e308;
        let mut two = result(vec![at(None, None, 900.0), bad]);
        crate::analysis::analyse(&mut two, &crate::model::Thresholds::default());
        for name in ["plot.svg", "plot.png"] {
            let left = render_file(&two, &dir.join(name)).unwrap();
            assert_eq!((left.rows, left.fields.clone()), (1, vec!["objects_per_s"]), "{name}");
        }
        assert!(std::fs::read_to_string(dir.join("plot.svg"))
            .unwrap()
            .ends_with("</svg>\n"));
        assert_eq!(&std::fs::read(dir.join("plot.png")).unwrap()[..4], b"\x89PNG");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "no temporary left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

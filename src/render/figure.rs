//! Which picture a result gets, chosen once from the result ([`Figure::of`]), and the
//! one place a picture is drawn into a file, an SVG string or a pixel buffer: the
//! four-panel plot ([`super::plot`]), for a memory sweep of more than one size the
//! memory plot ([`super::memory_plot`]), for a size axis of more than one object size
//! a panel per size ([`super::size_plot`]); on request (`report --timeline`) the
//! timeline picture ([`super::timeline_plot`]).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{RunKind, SweepResult};

use super::plot::{self, Format, PlotError, HEIGHT, WIDTH};
use super::timeline_plot::{self, TimelinePick};
use super::{memory_plot, size_plot};

/// The pictures a result can be drawn as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figure {
    /// Four panels, a line per bucket ([`super::plot`]).
    Curves,
    /// Throughput and cost against memory, a line per bucket ([`super::memory_plot`]).
    Memory,
    /// A panel per object size ([`super::size_plot`]).
    Sizes,
    /// Objects/s and MiB/s over time ([`super::timeline_plot`]).
    Timeline(TimelinePick),
}

impl Figure {
    /// The picture of `result`: a memory sweep of several sizes gets the memory plot,
    /// then a size axis of several sizes a panel per size, anything else the curves.
    pub(crate) fn of(result: &SweepResult) -> Figure {
        match result.run_kind() {
            RunKind::MemorySweep if result.memory_sizes().len() > 1 => Figure::Memory,
            RunKind::MemorySweep | RunKind::SizeAxis if result.object_sizes().len() > 1 => Figure::Sizes,
            _ => Figure::Curves,
        }
    }

    /// Draws this picture of `result` on `root`.
    fn draw<DB: DrawingBackend>(self, root: DrawingArea<DB, Shift>, result: &SweepResult) -> Result<(), PlotError> {
        match self {
            Figure::Curves => plot::draw(root, result),
            Figure::Memory => memory_plot::draw(root, result),
            Figure::Sizes => size_plot::draw(root, result),
            Figure::Timeline(pick) => timeline_plot::draw(root, result, pick),
        }
    }

    /// Draws this picture of `result` into `path` in `format`.
    fn draw_file(self, result: &SweepResult, path: &Path, format: Format) -> Result<(), PlotError> {
        match format {
            Format::Svg => self.draw(SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area(), result),
            Format::Png => self.draw(BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area(), result),
        }
    }
}

/// Draws the picture of `result` into `path` (SVG or PNG by extension), whole or not
/// at all: drawn into a temporary file beside it, then renamed over it.
pub(crate) fn render_file(result: &SweepResult, path: &Path) -> Result<(), PlotError> {
    render_file_as(result, path, Figure::of(result))
}

/// [`render_file`] of the picture `figure`.
pub(crate) fn render_file_as(result: &SweepResult, path: &Path, figure: Figure) -> Result<(), PlotError> {
    let format = plot::format_of(path)?;
    let mut drawn = Ok(());
    let placed = crate::sys::files::replace_with(path, |tmp| {
        drawn = figure.draw_file(result, tmp, format);
        match &drawn {
            Ok(()) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    });
    drawn?;
    placed.map_err(|e| PlotError::Draw(e.to_string()))
}

/// The picture of `result` as an SVG document.
#[cfg(test)]
pub(crate) fn render_svg(result: &SweepResult) -> Result<String, PlotError> {
    render_svg_as(result, Figure::of(result))
}

/// The picture `figure` of `result` as an SVG document.
#[cfg(test)]
pub(crate) fn render_svg_as(result: &SweepResult, figure: Figure) -> Result<String, PlotError> {
    let mut s = String::new();
    figure.draw(
        SVGBackend::with_string(&mut s, (WIDTH, HEIGHT)).into_drawing_area(),
        result,
    )?;
    Ok(s)
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
}

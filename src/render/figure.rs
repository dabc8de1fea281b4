//! Which picture a result gets: the four-panel plot ([`super::plot`]), for a memory
//! sweep of more than one size the memory plot ([`super::memory_plot`]), for a size
//! axis of more than one object size a panel per size ([`super::size_plot`]).

use std::path::Path;

use crate::model::SweepResult;

use super::plot::{self, PlotError};
use super::{memory_plot, size_plot};

/// True when `result` is drawn as a memory sweep.
pub(crate) fn is_memory_sweep(result: &SweepResult) -> bool {
    result.memory_sizes().len() > 1
}

/// True when `result` is drawn a panel per object size.
pub(crate) fn is_size_axis(result: &SweepResult) -> bool {
    result.object_sizes().len() > 1
}

/// Draws the picture of `result` into `path` (SVG or PNG by extension), whole or not
/// at all: drawn into a temporary file beside it, then renamed over it.
pub(crate) fn render_file(result: &SweepResult, path: &Path) -> Result<(), PlotError> {
    plot::format_of(path)?;
    let mut drawn = Ok(());
    let placed = crate::sys::files::replace_with(path, |tmp| {
        drawn = if is_memory_sweep(result) {
            memory_plot::render_file(result, tmp)
        } else if is_size_axis(result) {
            size_plot::render_file(result, tmp)
        } else {
            plot::render_file(result, tmp)
        };
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
    if is_memory_sweep(result) {
        memory_plot::render_svg(result)
    } else if is_size_axis(result) {
        size_plot::render_svg(result)
    } else {
        plot::render_svg(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};

    #[test]
    fn several_sizes_get_the_memory_plot_one_size_the_usual_one() {
        let at = |memory_mb: u32, wall_ms: f64| {
            let mut r = row("b-1", 4, 1, wall_ms, 0);
            r.axes.memory_mb = Some(memory_mb);
            r
        };
        let mut two = result(vec![at(512, 900.0), at(1024, 500.0)]);
        crate::analysis::analyse(&mut two, &crate::model::Thresholds::default());
        assert!(render_svg(&two).unwrap().contains("memory sweep"));
        let mut one = result(vec![at(512, 900.0)]);
        crate::analysis::analyse(&mut one, &crate::model::Thresholds::default());
        assert!(!render_svg(&one).unwrap().contains("memory sweep"));
    }
}

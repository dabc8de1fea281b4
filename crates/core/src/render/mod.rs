//! Output for people: the result tables ([`tables`]), the diagnosis in words
//! ([`diagnosis`]), the cost ([`cost`]) and comparison ([`compare`]) tables, the plot
//! ([`plot`], its labels placed by [`labels`]; a memory sweep's [`memory_plot`], chosen
//! by [`figure`], its values bounded by [`sane`]), the progress bars ([`progress`]), one
//! HTML page of it all ([`html`]), `history`'s trend tables and plot ([`history`]) and CloudWatch metrics as log lines ([`emf`]). Every
//! table is drawn for the terminal or as Markdown from one place, chosen by [`Style`];
//! [`layout`] fits tables and sentences to the terminal's width, picking the result
//! table's [`columns`]. [`court`] checks that what is printed tells one story.

pub mod columns;
pub mod compare;
pub(crate) mod cost;
pub mod court;
pub(crate) mod diagnosis;
pub mod emf;
#[cfg(test)]
mod every_config_tests;
pub mod figure;
pub mod history;
pub mod html;
pub(crate) mod labels;
pub mod layout;
pub(crate) mod memory_plot;
pub mod plot;
pub mod progress;
pub(crate) mod sane;
pub(crate) mod size_plot;
pub(crate) mod tables;
pub mod timeline_plot;

use comfy_table::{CellAlignment, Table};

pub use layout::Layout;
pub use tables::{render_tables, render_tables_in};

use crate::analysis::cost::{cost_report, CostOverrides};
use crate::model::SweepResult;

/// The whole report of `result` for people (or as Markdown), laid out by `layout`: the
/// tables with the lines under them, the cost, and the memory choices. `report`,
/// `run`, `local` and the HTML page all print this one text.
pub fn report_text(result: &SweepResult, layout: &Layout, overrides: CostOverrides) -> String {
    let target = overrides.target_wall_ms.or(result.request.target_wall_ms);
    format!(
        "{}{}{}",
        render_tables_in(result, layout),
        cost::render_cost(&cost_report(result, overrides), layout),
        layout.wrap(&cost::render_memory_choices(
            &crate::analysis::memory_answers(result, target).0
        ))
    )
}

/// How tables are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Box-drawing characters, for a terminal.
    Terminal,
    /// Markdown, for pasting into issues.
    Markdown,
}

impl Style {
    /// `Markdown` when asked for, else `Terminal`.
    pub fn markdown_if(markdown: bool) -> Style {
        if markdown {
            Style::Markdown
        } else {
            Style::Terminal
        }
    }

    /// A table in this style with `header`.
    pub(crate) fn table(self, header: Vec<&str>) -> Table {
        let mut table = Table::new();
        table.load_preset(match self {
            Style::Terminal => comfy_table::presets::UTF8_FULL_CONDENSED,
            Style::Markdown => comfy_table::presets::ASCII_MARKDOWN,
        });
        table.set_header(header);
        table
    }
}

/// Right-aligns the columns `columns` (numbers).
pub(crate) fn align_right(table: &mut Table, columns: std::ops::Range<usize>) {
    for i in columns {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

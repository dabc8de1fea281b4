//! The story court: [`hear`] renders an analysed result as `report` prints it (the
//! lines under each table, the HTML summary, the plot's subtitle, the cost lines) and
//! runs every rule of contradiction ([`contradictions::CONTRADICTIONS`]) over it: two
//! printed lines that disagree, or a quoted figure that differs from the document's.
//! The unit tests (`tests.rs`) try synthetic sweeps whose truth is known (`generator`);
//! the lab's sweeps are heard by `tests/it/story_court.rs`. docs/diagnosis.md lists
//! the rules.

pub mod contradictions;
#[cfg(test)]
mod generator;
#[cfg(test)]
mod tests;

use crate::analysis::cost::{cost_report, CostOverrides};
use crate::model::SweepResult;

use super::{Layout, Style};
use contradictions::{Printed, CONTRADICTIONS};

/// The lines under each table, from `best:` to `recommended:`, in the tables' order.
fn groups_under_tables(text: &str) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if line.starts_with("best: ") {
            groups.push(Vec::new());
            open = true;
        }
        if open {
            groups.last_mut().unwrap().push(line.to_string());
        }
        if line.starts_with("recommended: ") {
            open = false;
        }
    }
    groups
}

/// The HTML summary's rows, cell by cell (the header and rule left out).
fn summary_rows(markdown: &str) -> Vec<Vec<String>> {
    markdown
        .lines()
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}

/// What the court finds in one analysed result: each complaint with the name of its
/// rule. Empty when the story holds together.
#[doc(hidden)]
pub fn hear(result: &SweepResult) -> Vec<(String, String)> {
    let text = super::report_text(result, &Layout::wide(Style::Terminal), CostOverrides::default());
    let cost = cost_report(result, CostOverrides::default());
    let comparisons = super::diagnosis::render_comparisons(result);
    let cost_text = text
        .lines()
        .filter(|l| l.starts_with("total $"))
        .collect::<Vec<_>>()
        .join("\n");
    let groups = groups_under_tables(&text);
    let rows = summary_rows(&super::html::summary_markdown(result));
    // One part per summary, in order: "why it flattens: LABEL: SUBTITLE; ...".
    let why = super::plot::why_line(result);
    let subtitles: Vec<String> = why
        .trim_start_matches("why it flattens: ")
        .split("; ")
        .map(|part| part.split_once(": ").map_or(part, |p| p.1).to_string())
        .collect();
    let mut out = Vec::new();
    if groups.len() != result.summary.len() {
        out.push((
            "layout".into(),
            format!(
                "{} groups of lines for {} summaries",
                groups.len(),
                result.summary.len()
            ),
        ));
    }
    for (i, ((summary, lines), cells)) in result.summary.iter().zip(groups).zip(rows).enumerate() {
        let printed = Printed {
            result,
            summary,
            lines,
            summary_cells: cells,
            subtitle: subtitles.get(i).cloned().unwrap_or_default(),
            comparisons: comparisons.clone(),
            cost_text: cost_text.clone(),
            cost: &cost,
        };
        for rule in CONTRADICTIONS {
            out.extend((rule.check)(&printed).into_iter().map(|c| (rule.name.to_string(), c)));
        }
    }
    out
}

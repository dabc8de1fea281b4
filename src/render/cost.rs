//! The cost table: per configuration the billed GETs, S3 and Lambda dollars, and per
//! 1,000 GETs, with the basis of the Lambda price and the cheapest configuration.

use std::fmt::Write as _;

use crate::analysis::cost::CostReport;
use crate::model::{MemoryChoice, MemoryConfig};

use super::{align_right, Style};

/// Dollars with enough significant digits for tiny amounts.
pub(crate) fn usd(x: f64) -> String {
    if x == 0.0 {
        "$0".into()
    } else if x >= 0.01 {
        format!("${x:.4}")
    } else {
        // Three significant digits, never scientific notation.
        let decimals = (2 - x.abs().log10().floor() as i32).clamp(4, 12) as usize;
        format!("${x:.decimals$}")
    }
}

/// The cost table and the summary sentence.
pub(crate) fn render_cost(report: &CostReport, style: Style) -> String {
    let mut out = String::new();
    let sized = report.rows.iter().any(|r| r.axes.memory_mb.is_some());
    let _ = writeln!(out, "{}", basis_line(report, sized));
    let table = cost_table(report, style, sized);
    if style == Style::Markdown {
        let _ = writeln!(out, "\n{table}\n");
    } else {
        let _ = writeln!(out, "{table}");
    }
    let _ = write!(out, "total {}", usd(report.total_usd));
    out.push_str(&cheapest_sentence(report));
    out
}

/// What the prices are: the Lambda memory, architecture and price per GB-s, and where
/// the memory comes from.
fn basis_line(report: &CostReport, sized: bool) -> String {
    let l = &report.lambda;
    format!(
        "cost (list prices, see `prices` in the request; Lambda at {} {}, {} per GB-s, {}):",
        if sized {
            "each row's memory size".to_string()
        } else {
            format!("{} MB", l.memory_mb)
        },
        l.architecture.name(),
        usd(l.gb_s_usd),
        if sized {
            "a memory sweep"
        } else if l.measured_in_lambda {
            "the function's own memory"
        } else {
            "assumed: not run in Lambda"
        }
    )
}

/// One row per configuration (a memory column for a memory sweep).
fn cost_table(report: &CostReport, style: Style, sized: bool) -> comfy_table::Table {
    let mut header = vec!["bucket", "class"];
    if sized {
        header.push("memory MB");
    }
    let objects = report.rows.iter().any(|r| r.axes.object_size_bytes.is_some());
    if objects {
        header.push("object bytes");
    }
    header.extend([
        "workers",
        "rep",
        "GETs",
        "S3 $",
        "Lambda GB-s",
        "Lambda $",
        "total $",
        "$ per 1k GETs",
    ]);
    let mut table = style.table(header);
    for r in &report.rows {
        let mut cells = vec![r.bucket.clone(), r.class.name().to_string()];
        if sized {
            cells.push(r.axes.memory_mb.map_or("-".into(), |m| m.to_string()));
        }
        if objects {
            cells.push(r.axes.object_size_bytes.map_or("-".into(), |b| b.to_string()));
        }
        cells.extend([
            r.workers.to_string(),
            r.repetition.to_string(),
            r.billed_gets.to_string(),
            usd(r.s3_usd),
            format!("{:.3}", r.lambda_gb_s),
            usd(r.lambda_usd),
            usd(r.total_usd),
            usd(r.per_1000_gets_usd),
        ]);
        table.add_row(cells);
    }
    align_right(&mut table, 2..10 + usize::from(sized) + usize::from(objects));
    table
}

/// The rest of the total's line: the cheapest configuration (within the target, when
/// there is one), ending the line.
fn cheapest_sentence(report: &CostReport) -> String {
    let at = |c: &crate::analysis::cost::Cheapest| {
        format!(
            "{} at {}{} workers{}, {:.0} ms, {} per 1,000 GETs",
            c.bucket,
            c.axes.memory_mb.map(|m| format!("{m} MB x ")).unwrap_or_default(),
            c.workers,
            c.axes
                .object_size_bytes
                .map(|b| format!(" (objects of {b} bytes)"))
                .unwrap_or_default(),
            c.wall_ms,
            usd(c.per_1000_gets_usd)
        )
    };
    match (&report.cheapest, report.target_wall_ms) {
        (Some(c), Some(t)) => format!("; cheapest within the {t} ms target: {}\n", at(c)),
        (None, Some(t)) => format!("; no configuration without errors met the {t} ms target\n"),
        (Some(c), None) => format!("; cheapest: {} (set `target_wall_ms` to require a time)\n", at(c)),
        (None, None) => "\n".to_string(),
    }
}

/// A memory sweep's answer per bucket: the fastest memory x workers and the cheapest
/// meeting the target, one line each (nothing without memory sizes).
pub(crate) fn render_memory_choices(choices: &[MemoryChoice]) -> String {
    let mut out = String::new();
    let config = |c: &MemoryConfig| {
        format!(
            "{} MB x {} workers, {:.0} ms, {:.0} objects/s, {} per 1,000 GETs",
            c.memory_mb,
            c.workers,
            c.wall_ms,
            c.objects_per_s,
            usd(c.per_1000_gets_usd)
        )
    };
    for c in choices {
        let fastest = c.fastest.as_ref().map_or("none without errors".into(), config);
        let cheapest = match (&c.cheapest, c.target_wall_ms) {
            (Some(x), Some(t)) => format!("cheapest within {t} ms: {}", config(x)),
            (Some(x), None) => format!("cheapest: {} (set `target_wall_ms` to require a time)", config(x)),
            (None, Some(t)) => format!("no memory x workers without errors met {t} ms"),
            (None, None) => "no configuration without errors".into(),
        };
        let client = if c.axes.s3_client.is_sdk() {
            String::new()
        } else {
            format!(" (client {})", c.axes.s3_client)
        };
        let _ = writeln!(out, "memory for {}{client}: fastest {fastest}; {cheapest}", c.bucket);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_formatting() {
        assert_eq!(usd(0.0), "$0");
        assert_eq!(usd(1.5), "$1.5000");
        assert_eq!(usd(0.0004), "$0.000400");
        assert_eq!(usd(0.0012), "$0.00120");
        assert_eq!(usd(1.672e-4), "$0.000167");
        assert_eq!(usd(0.000_016_666_7), "$0.0000167");
    }

    #[test]
    fn a_missed_target_is_said_in_words() {
        use crate::analysis::cost::{cost_report, CostOverrides};
        use crate::model::test_rows::{result, row};
        let r = result(vec![row("b1", 1, 1, 1000.0, 0), row("b1", 8, 1, 600.0, 0)]);
        let overrides = CostOverrides {
            lambda_memory_mb: None,
            target_wall_ms: Some(500),
        };
        let text = render_cost(&cost_report(&r, overrides), Style::Terminal);
        assert!(
            text.contains("no configuration without errors met the 500 ms target"),
            "{text}"
        );
        let text = render_cost(&cost_report(&r, CostOverrides::default()), Style::Markdown);
        assert!(text.contains("cheapest: b1 at 8 workers"), "{text}");
        assert!(text.contains("| bucket |"), "{text}");
    }
}

//! The cost table: per configuration the billed GETs, S3 and Lambda dollars, per 1,000
//! objects read (what ranks) and per 1,000 GETs sent, with the basis of the Lambda
//! price and the cheapest configuration (per object read: the cheapest in total).

use std::fmt::Write as _;

use crate::analysis::cost::CostReport;
use crate::model::{MemoryChoice, MemoryConfig, Named};

use super::layout::fitting;
use super::{align_right, Layout, Style};

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

/// The cost table and the summary sentence, fitted to `layout`'s width.
pub(crate) fn render_cost(report: &CostReport, layout: &Layout) -> String {
    let mut out = String::new();
    let sized = report.rows.iter().any(|r| r.axes.memory_mb.is_some());
    let _ = writeln!(out, "{}", layout.wrap(&basis_line(report, sized)));
    let (table, hidden) = cost_table(report, layout);
    if layout.style == Style::Markdown {
        let _ = writeln!(out, "\n{table}\n");
    } else {
        let _ = writeln!(out, "{table}");
    }
    if !hidden.is_empty() {
        let line = format!("cost columns not shown: {}; --wide shows them", hidden.join(", "));
        let _ = writeln!(out, "{}", layout.wrap(&line));
    }
    let total = format!("total {}{}", usd(report.total_usd), cheapest_sentence(report));
    out.push_str(&layout.wrap(&total));
    out
}

/// What the prices are: the Lambda memory, architecture and price per GB-s, and where
/// the memory comes from.
fn basis_line(report: &CostReport, sized: bool) -> String {
    let l = &report.lambda;
    if let Some(m) = &l.managed_instances {
        return format!(
            "cost (list prices, see `prices` in the request; Lambda Managed Instances{}: the instance at {} per hour + {:.0}% management fee + {} per million requests, charged for each row's wall time; `Lambda GB-s` is 0 there):",
            m.instance_type.as_ref().map_or(String::new(), |t| format!(" on {t}")),
            usd(m.instance_hour_usd),
            m.management_fee_share * 100.0,
            usd(m.request_per_million_usd),
        );
    }
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

/// The cost columns a narrow table keeps: which configuration and what it costs.
const COST_ESSENTIAL: [&str; 7] = [
    "bucket",
    "client",
    "memory MB",
    "object bytes",
    "hedge",
    "workers",
    "total $",
];

/// The other cost columns, in the order a narrow table adds them while they fit.
const COST_BY_PRIORITY: [&str; 8] = [
    "$ per 1k objects",
    "class",
    "$ per 1k GETs",
    "S3 $",
    "Lambda $",
    "rep",
    "GETs",
    "Lambda GB-s",
];

/// One row per configuration (a column for each axis the rows set or differ on); with a
/// width, the columns that fit it, and the names of the others.
fn cost_table(report: &CostReport, layout: &Layout) -> (comfy_table::Table, Vec<&'static str>) {
    let mut header = vec!["bucket", "class"];
    let named = Named::of(report.rows.iter().map(|r| r.axes));
    header.extend(named.axes().map(|a| a.header));
    header.extend([
        "workers",
        "rep",
        "GETs",
        "S3 $",
        "Lambda GB-s",
        "Lambda $",
        "total $",
        "$ per 1k objects",
        "$ per 1k GETs",
    ]);
    let rows: Vec<Vec<String>> = report.rows.iter().map(|r| cost_cells(r, named)).collect();
    let draw = |shown: &[&str]| {
        let mut table = layout.style.table(shown.to_vec());
        for cells in &rows {
            table.add_row(
                header
                    .iter()
                    .zip(cells)
                    .filter(|(h, _)| shown.contains(h))
                    .map(|(_, c)| c.clone()),
            );
        }
        let first_number = shown.iter().position(|h| !matches!(*h, "bucket" | "class" | "client"));
        align_right(&mut table, first_number.unwrap_or(shown.len())..shown.len());
        table
    };
    let shown = match layout.width_chars {
        Some(w) => fitting(&header, &COST_ESSENTIAL, &COST_BY_PRIORITY, w, &draw),
        None => header.clone(),
    };
    let mut table = draw(&shown);
    layout.fit_table(&mut table);
    let hidden = header.into_iter().filter(|h| !shown.contains(h)).collect();
    (table, hidden)
}

/// The cells of one cost row, in the header's order.
fn cost_cells(r: &crate::analysis::cost::ConfigCost, named: Named) -> Vec<String> {
    let mut cells = vec![r.bucket.clone(), r.class.name().to_string()];
    cells.extend(r.axes.cells(named).into_iter().map(|(_, v)| v));
    cells.extend([
        r.workers.to_string(),
        r.repetition.to_string(),
        r.billed_gets.to_string(),
        usd(r.s3_usd),
        format!("{:.3}", r.lambda_gb_s),
        usd(r.lambda_usd),
        usd(r.total_usd),
        usd(r.per_1000_objects_usd),
        usd(r.per_1000_gets_usd),
    ]);
    cells
}

/// The rest of the total's line: the cheapest configuration (within the target, when
/// there is one), ending the line.
fn cheapest_sentence(report: &CostReport) -> String {
    let named = Named::of(report.rows.iter().map(|r| r.axes));
    let at = |c: &crate::analysis::cost::Cheapest| {
        format!(
            "{} at {} workers{}, {:.0} ms, {} per 1,000 objects read ({} in all)",
            c.bucket,
            c.workers,
            c.axes.label(named),
            c.wall_ms,
            usd(c.per_1000_objects_usd),
            usd(c.total_usd)
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
            "{} MB x {} workers, {:.0} ms, {:.0} objects/s, {} per 1,000 {}",
            c.memory_mb,
            c.workers,
            c.wall_ms,
            c.objects_per_s,
            usd(c.ranking_usd()),
            if c.per_1000_objects_usd > 0.0 {
                "objects read"
            } else {
                "GETs"
            }
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
        let client = c.axes.label(Named::of([c.axes]).without("memory MB"));
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
        let text = render_cost(&cost_report(&r, overrides), &Layout::wide(Style::Terminal));
        assert!(
            text.contains("no configuration without errors met the 500 ms target"),
            "{text}"
        );
        let text = render_cost(
            &cost_report(&r, CostOverrides::default()),
            &Layout::wide(Style::Markdown),
        );
        assert!(text.contains("cheapest: b1 at 8 workers"), "{text}");
        assert!(text.contains("| bucket |"), "{text}");
    }

    #[test]
    fn hedged_rows_are_told_apart_by_their_policy() {
        use crate::analysis::cost::{cost_report, CostOverrides};
        use crate::model::test_rows::{result, row};
        use crate::model::Hedge;
        let mut hedged = row("b1", 8, 1, 500.0, 0);
        hedged.axes.hedge = Hedge::Percentile(95);
        let r = result(vec![row("b1", 8, 1, 1000.0, 0), hedged]);
        let text = render_cost(
            &cost_report(&r, CostOverrides::default()),
            &Layout::wide(Style::Markdown),
        );
        assert!(text.contains("| hedge |"), "{text}");
        assert!(text.contains(" off |") && text.contains(" p95 |"), "{text}");
        assert!(text.contains("cheapest: b1 at 8 workers (hedge p95)"), "{text}");
        let unhedged = result(vec![row("b1", 8, 1, 1000.0, 0)]);
        let text = render_cost(
            &cost_report(&unhedged, CostOverrides::default()),
            &Layout::wide(Style::Markdown),
        );
        assert!(!text.contains("hedge"), "no column without hedging: {text}");
    }

    #[test]
    fn every_clients_configurations_are_in_the_table_and_the_total() {
        use crate::analysis::cost::{cost_report, CostOverrides};
        use crate::model::test_rows::{result, row};
        use crate::model::Client;
        let mut rows = Vec::new();
        for client in [Client::Sdk, Client::Lean] {
            for (bucket, w) in [("b1", 1), ("b1", 8), ("b2", 1), ("b2", 8)] {
                let mut r = row(bucket, w, 1, 1000.0 / f64::from(w), 0);
                r.axes.s3_client = client;
                rows.push(r);
            }
        }
        let report = cost_report(&result(rows), CostOverrides::default());
        assert_eq!(report.rows.len(), 8, "every configuration priced");
        let sum: f64 = report.rows.iter().map(|r| r.total_usd).sum();
        assert!((report.total_usd - sum).abs() < 1e-15);
        let lean: f64 = report
            .rows
            .iter()
            .filter(|r| r.axes.s3_client == Client::Lean)
            .map(|r| r.total_usd)
            .sum();
        assert!(lean > 0.0 && report.total_usd > lean, "the lean rows are in the total");
        let text = render_cost(&report, &Layout::wide(Style::Markdown));
        assert!(text.contains("| client |"), "{text}");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| b1 ") || l.starts_with("| b2 "))
            .collect();
        assert_eq!(lines.len(), 8, "{text}");
        for client in ["sdk", "lean"] {
            let of_client = |l: &&&str| l.split('|').map(str::trim).any(|c| c == client);
            assert_eq!(lines.iter().filter(of_client).count(), 4, "{text}");
        }
        // Fitted to 80 columns, the client column stays.
        let narrow = render_cost(&report, &Layout::fitted(Style::Terminal, 80, None));
        assert!(narrow.lines().any(|l| l.contains("client")), "{narrow}");
    }
}

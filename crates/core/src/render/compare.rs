//! Two results side by side, as tables: per bucket pair and worker count, wall time
//! with its spread, throughput, first byte, cost per 1,000 objects read, errors and
//! the significance of the difference.

use std::fmt::Write as _;

use crate::analysis::compare::{BucketPair, Comparison, OneSided, Spread, MIN_REPETITIONS};
use crate::analysis::significance::Test;
use crate::model::{Runner, Unmeasured};

use super::layout::fitting;
use super::{align_right, Layout, Style};

fn wall_cell(s: &Spread) -> String {
    if s.repetitions > 1 {
        format!("{:.0} [{:.0}-{:.0}]", s.median_wall_ms, s.min_wall_ms, s.max_wall_ms)
    } else {
        format!("{:.0}", s.median_wall_ms)
    }
}

/// The comparison as tables, every column, no width limit.
pub fn render_comparison(c: &Comparison, style: Style) -> String {
    render_comparison_in(c, &Layout::wide(style))
}

/// The comparison laid out by `layout`: each table with the columns that fit its
/// width (the others named under it), every line wrapped at the width.
pub fn render_comparison_in(c: &Comparison, layout: &Layout) -> String {
    let style = layout.style;
    let markdown = style == Style::Markdown;
    let mut out = String::new();
    let bullet = if markdown { "- " } else { "" };
    let _ = writeln!(out, "{bullet}A: {}", c.environment_a);
    let _ = writeln!(out, "{bullet}B: {}", c.environment_b);
    if let Some(note) = &c.placement_differs {
        let _ = writeln!(out, "{bullet}{note}");
    }
    for (side, fields) in [("A", &c.not_measured_a), ("B", &c.not_measured_b)] {
        if !fields.is_empty() {
            let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
            let _ = writeln!(out, "{bullet}{side} did not measure {} (shown as -)", names.join(", "));
        }
    }
    let mut out = layout.wrap(&out);
    if markdown {
        out.push('\n');
    }
    let mut said = Vec::new();
    for p in &c.pairs {
        out.push_str(&render_pair(p, layout, c, &mut said));
    }
    let mut tail = String::new();
    if !c.unpaired_a.is_empty() || !c.unpaired_b.is_empty() {
        let _ = writeln!(
            tail,
            "\nunpaired buckets: A [{}], B [{}] (choose with --bucket-a/--bucket-b)",
            c.unpaired_a.join(", "),
            c.unpaired_b.join(", ")
        );
    }
    tail.push_str(&significance_note(c));
    out.push_str(&layout.wrap(&tail));
    out
}

/// One bucket pair: its heading, the table, the best and knee of each side, and the
/// worker counts on one side only; with a width, the columns left out said once
/// (`said`: what the table before said).
fn render_pair(p: &BucketPair, layout: &Layout, c: &Comparison, said: &mut Vec<&'static str>) -> String {
    let markdown = layout.style == Style::Markdown;
    let mut out = String::new();
    let head = format!("A {} vs B {} (matched by {})", p.bucket_a, p.bucket_b, p.matched_by);
    if markdown {
        let _ = writeln!(out, "### {head}\n");
    } else {
        let _ = writeln!(out, "\n{}", layout.wrap(&head));
    }
    let (table, hidden) = pair_table(p, layout, c);
    let _ = writeln!(out, "{table}");
    if markdown {
        out.push('\n');
    }
    let mut under = String::new();
    if !hidden.is_empty() && hidden != *said {
        let _ = writeln!(
            under,
            "compare columns not shown (to fit the width): {}; --markdown shows every column",
            hidden.join(", ")
        );
        *said = hidden;
    }
    if let (Some((wa, ma)), Some((wb, mb))) = (p.best_a, p.best_b) {
        let _ = write!(
            under,
            "best{}: A {ma:.0} ms at {wa} workers, B {mb:.0} ms at {wb} workers (B/A {:.2})",
            p.best_object_size_bytes
                .map_or(String::new(), |b| format!(" (objects of {b} bytes)")),
            mb / ma.max(1e-9)
        );
        let knee = |k: Option<u32>| k.map_or("none".to_string(), |k| k.to_string());
        let _ = writeln!(under, "; knee A {}, B {}", knee(p.knee_a), knee(p.knee_b));
    }
    if !p.only_in_a.is_empty() || !p.only_in_b.is_empty() {
        let _ = writeln!(
            under,
            "not compared (configurations on one side only): A {}; B {}",
            one_sided(&p.only_in_a, p),
            one_sided(&p.only_in_b, p)
        );
    }
    out.push_str(&layout.wrap(&under));
    out
}

/// Configurations on one side only, each its worker count and its axes (named as the
/// pair's configurations and these name them), or `none`.
fn one_sided(only: &[OneSided], p: &BucketPair) -> String {
    if only.is_empty() {
        return "none".into();
    }
    let all = p.configs.iter().map(|m| m.axes);
    let named = crate::model::Named::of(all.chain(p.only_in_a.iter().chain(&p.only_in_b).map(|o| o.axes)));
    let each: Vec<String> = only
        .iter()
        .map(|o| format!("{} workers{}", o.workers, o.axes.label(named)))
        .collect();
    each.join(", ")
}

/// The compare columns a narrow table keeps: which configuration, the ratios and the
/// verdict of the test.
const COMPARE_ESSENTIAL: [&str; 8] = [
    "memory MB",
    "object bytes",
    "client",
    "hedge",
    "workers",
    "B/A wall",
    "B/A objects/s",
    "significance",
];

/// The other compare columns in the order a narrow table adds them while they fit:
/// the CPU per GET first (the headline that carries over to AWS), then the figures
/// the ratios come from.
const COMPARE_BY_PRIORITY: [&str; 11] = [
    "A cpu ms/GET",
    "B cpu ms/GET",
    "A $/1k objects",
    "B $/1k objects",
    "A objects/s",
    "B objects/s",
    "A wall ms",
    "B wall ms",
    "errors A/B",
    "A ttfb p50",
    "B ttfb p50",
];

/// One row per matched configuration (a memory column for a memory sweep), each cell
/// under its own header; with a width, the columns that fit it, and the others' names.
fn pair_table(p: &BucketPair, layout: &Layout, c: &Comparison) -> (comfy_table::Table, Vec<&'static str>) {
    let ttfb = |missing: &[Unmeasured], v: f64| {
        if missing.contains(&Unmeasured::TtfbMs) {
            "-".to_string()
        } else {
            format!("{v:.2}")
        }
    };
    let named = crate::model::Named::of(p.configs.iter().map(|m| m.axes));
    let rows: Vec<Vec<(&'static str, String)>> = p
        .configs
        .iter()
        .map(|m| {
            let mut cells = m.axes.cells(named);
            cells.extend([
                ("workers", m.workers.to_string()),
                ("A wall ms", wall_cell(&m.a)),
                ("B wall ms", wall_cell(&m.b)),
                ("B/A wall", format!("{:.2}", m.wall_ratio)),
                ("A objects/s", format!("{:.0}", m.a.median_objects_per_s)),
                ("B objects/s", format!("{:.0}", m.b.median_objects_per_s)),
                ("B/A objects/s", format!("{:.2}", m.throughput_ratio)),
                ("A ttfb p50", ttfb(&c.not_measured_a, m.a.median_ttfb_p50_ms)),
                ("B ttfb p50", ttfb(&c.not_measured_b, m.b.median_ttfb_p50_ms)),
                ("A cpu ms/GET", format!("{:.3}", m.a.median_cpu_ms_per_get)),
                ("B cpu ms/GET", format!("{:.3}", m.b.median_cpu_ms_per_get)),
                ("A $/1k objects", super::cost::usd(m.a.median_per_1000_objects_usd)),
                ("B $/1k objects", super::cost::usd(m.b.median_per_1000_objects_usd)),
                ("errors A/B", format!("{}/{}", m.a.errors, m.b.errors)),
                ("significance", m.significance.text()),
            ]);
            cells
        })
        .collect();
    let header: Vec<&'static str> = match rows.first() {
        Some(first) => first.iter().map(|(h, _)| *h).collect(),
        None => Vec::new(),
    };
    let draw = |shown: &[&'static str]| {
        let mut table = layout.style.table(shown.to_vec());
        for row in &rows {
            table.add_row(shown.iter().map(|s| {
                row.iter()
                    .find(|(h, _)| h == s)
                    .map_or_else(String::new, |(_, v)| v.clone())
            }));
        }
        let last_number = shown.iter().position(|h| *h == "significance").unwrap_or(shown.len());
        align_right(&mut table, 0..last_number);
        table
    };
    let shown = match layout.width_chars {
        Some(w) => fitting(&header, &COMPARE_ESSENTIAL, &COMPARE_BY_PRIORITY, w, &draw),
        None => header.clone(),
    };
    let mut table = draw(&shown);
    layout.fit_table(&mut table);
    let hidden = header.into_iter().filter(|h| !shown.contains(h)).collect();
    (table, hidden)
}

/// How to ask for more repetitions, in the terms of what ran the sweeps: the flag for
/// `run` and `local`, the request field for the Lambda (both when the sides differ).
fn rerun_with(runners: (Runner, Runner)) -> String {
    let flag = format!("--repetitions {MIN_REPETITIONS}");
    let field = format!("\"repetitions\": {MIN_REPETITIONS} in the event");
    match runners {
        (Runner::Lambda, Runner::Lambda) => field,
        (Runner::Lambda, _) | (_, Runner::Lambda) => format!("{flag} (s3sweep) or {field} (the Lambda)"),
        _ => flag,
    }
}

/// What the significance column means, or why no significance is claimed.
fn significance_note(c: &Comparison) -> String {
    if c.min_repetitions_a < MIN_REPETITIONS || c.min_repetitions_b < MIN_REPETITIONS {
        format!(
            "\nno significance claimed: that needs at least {MIN_REPETITIONS} repetitions of each configuration on both sides (A has {}, B has {}); rerun with {} or more\n",
            c.min_repetitions_a,
            c.min_repetitions_b,
            rerun_with(c.runners)
        )
    } else {
        let paired = c
            .pairs
            .iter()
            .flat_map(|p| &p.configs)
            .any(|m| m.test == Some(Test::PairedByRound));
        let test = if paired {
            "rows paired by round (both runs interleaved), sign test"
        } else {
            "exact Mann-Whitney U test on the repetitions"
        };
        format!(
            "\nsignificance: {test}; p corrected for the worker counts compared (Holm), \"B faster\"/\"B slower\" at corrected p <= 0.05; \"no difference shown\" where the test found none, or where the repetitions cannot reach 0.05 (it says how many would)\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::compare::{compare, CompareOptions};
    use crate::analysis::summarized as result;
    use crate::model::test_rows::reps;

    #[test]
    fn significance_is_claimed_only_with_enough_repetitions() {
        let a = result(
            [
                reps("b1", 1, &[100.0, 110.0, 105.0]),
                reps("b1", 8, &[50.0, 52.0, 51.0]),
            ]
            .concat(),
        );
        let b = result([reps("b1", 1, &[60.0, 62.0, 61.0]), reps("b1", 8, &[49.0, 53.0, 50.0])].concat());
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let text = render_comparison(&c, Style::Terminal);
        assert!(
            text.contains("no difference shown (cannot reach p<0.05; 5 reps would)"),
            "{text}"
        );
        assert!(text.contains("Holm"), "{text}");
        assert!(!text.contains("no significance claimed"), "{text}");

        let a = result(reps("x-bucket", 4, &[10.0, 11.0, 12.0]));
        let b1 = result(reps("x-bucket", 4, &[20.0]));
        let c = compare(&a, &b1, &CompareOptions::default()).unwrap();
        let text = render_comparison(&c, Style::Markdown);
        assert!(text.contains("no significance claimed"), "{text}");
        assert!(text.contains("| workers |"), "{text}");
        assert!(text.starts_with("- A: local"), "{text}");
        // A flags user gets the flag; an event user the field; both when mixed.
        assert!(text.contains("rerun with --repetitions 3 or more"), "{text}");
        assert!(!text.contains("\"repetitions\""), "{text}");
        let mut lambda_a = a.clone();
        lambda_a.environment.runner = Runner::Lambda;
        let mut lambda_b = b1.clone();
        lambda_b.environment.runner = Runner::Lambda;
        let c = compare(&lambda_a, &lambda_b, &CompareOptions::default()).unwrap();
        let text = render_comparison(&c, Style::Terminal);
        assert!(text.contains("rerun with \"repetitions\": 3 in the event"), "{text}");
        assert!(!text.contains("--repetitions"), "{text}");
        let c = compare(&lambda_a, &b1, &CompareOptions::default()).unwrap();
        let text = render_comparison(&c, Style::Terminal);
        assert!(
            text.contains("--repetitions 3 (s3sweep) or \"repetitions\": 3"),
            "{text}"
        );
    }

    #[test]
    fn placement_client_and_unmeasured_fields_are_shown() {
        use crate::model::{Deployment, NetworkPath};
        let lambda = |path: NetworkPath, zones: &[&str]| {
            let mut r = result(reps("b1", 4, &[10.0]));
            r.environment.lambda = Some(crate::model::LambdaEnvironment {
                function_name: None,
                function_version: None,
                memory_size_mb: Some(1769),
                cold_start: false,
                architecture: None,
                region: None,
                request_id: None,
                remaining_ms_at_start: None,
                safety_margin_ms: 0,
                deployment: Some(Deployment {
                    network_path: path,
                    subnet_zone_ids: zones.iter().map(|z| z.to_string()).collect(),
                }),
                substrate: None,
                init_us: None,
            });
            r
        };
        let mut a = lambda(NetworkPath::Vpc, &["use1-az4"]);
        a.tool.client = Some("boto3 1.43.11".into());
        a.not_measured = vec![Unmeasured::TtfbMs, Unmeasured::PoolWaitMs];
        a.results[0].cpu_ms_per_get = 2.5;
        let b = lambda(NetworkPath::Default, &[]);
        let text = render_comparison(&compare(&a, &b, &CompareOptions::default()).unwrap(), Style::Terminal);
        assert!(
            text.contains("client boto3 1.43.11, Lambda 1769 MB, network vpc (use1-az4)"),
            "{text}"
        );
        assert!(
            text.contains("B: local on linux x86_64, 2 vCPUs, Lambda 1769 MB, network default"),
            "{text}"
        );
        assert!(
            text.contains("the runs were placed differently: A network vpc (use1-az4), B network default"),
            "{text}"
        );
        assert!(
            text.contains("A did not measure ttfb_ms, pool_wait_ms (shown as -)"),
            "{text}"
        );
        assert!(text.contains("2.500"), "A's CPU per GET: {text}");
        let same = compare(&b, &b.clone(), &CompareOptions::default()).unwrap();
        assert_eq!(same.placement_differs, None);
    }

    #[test]
    fn each_client_is_compared_with_itself() {
        use crate::model::Client;
        let both = |sdk_ms: f64, lean_ms: f64| {
            let mut lean = reps("b1", 8, &[lean_ms]);
            lean[0].axes.s3_client = Client::Lean;
            result([reps("b1", 8, &[sdk_ms]), lean].concat())
        };
        let (a, b) = (both(100.0, 40.0), both(50.0, 40.0));
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let got: Vec<(Client, f64)> = c.pairs[0]
            .configs
            .iter()
            .map(|m| (m.axes.s3_client, m.wall_ratio))
            .collect();
        assert_eq!(
            got,
            vec![(Client::Lean, 1.0), (Client::Sdk, 0.5)],
            "never across clients"
        );
        let text = render_comparison(&c, Style::Markdown);
        assert!(text.contains("client"), "{text}");
        assert!(text.contains("lean") && text.contains("sdk"), "{text}");
    }

    /// Lambda against Managed Instances: each side is priced by its own substrate.
    #[test]
    fn compare_prices_each_side_on_its_own_substrate() {
        use crate::model::test_rows::row;
        use crate::render::tables::tests::from_lambda;
        let rows = || vec![row("std-bucket", 1, 1, 1000.0, 0), row("std-bucket", 8, 1, 300.0, 0)];
        let a = from_lambda(rows(), false);
        let mut b = from_lambda(rows(), true);
        b.request.prices.lmi_instance_hour_usd = 0.36;
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let m = &c.pairs[0].configs[1];
        // A, Lambda: 2 GB x 0.3 s x $0.0000133334 + 100 GETs x $0.0004 / 1,000, per
        // 100 objects: $0.0000480000, so $0.000480 per 1,000.
        // B, Managed Instances: 0.3 s x $0.0001 x 1.15 + $0.2 / 1e6 / 2 rows + S3
        // $0.00004 = $0.0000746 per 100 objects, $0.000746 per 1,000.
        assert!((m.a.median_per_1000_objects_usd - 4.8e-4).abs() < 1e-9, "{m:?}");
        assert!((m.b.median_per_1000_objects_usd - 7.46e-4).abs() < 1e-9, "{m:?}");
        let text = render_comparison(&c, Style::Markdown);
        assert!(text.contains("| A $/1k objects | B $/1k objects |"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains(" $0.000480 |") && l.contains(" $0.000746 |")),
            "{text}"
        );
        assert!(
            text.contains(
                "B: lambda on linux aarch64, 2 vCPUs, Lambda 2048 MB on Lambda Managed Instances on c7gn.large"
            ),
            "{text}"
        );
    }

    /// docs/demo.json, the committed result.
    fn demo() -> crate::model::SweepResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/demo.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn a_comparison_fits_the_width_and_keeps_the_cpu_per_get() {
        use crate::model::Client;
        let demo = demo();
        // A multi-axis result: both clients, each bucket at 8 and 64 workers.
        let mut rows = Vec::new();
        for client in [Client::Sdk, Client::Lean] {
            for w in [8, 64] {
                let mut r = reps(
                    "express-like--lab1-az1--x-s3",
                    w,
                    &[100.0 / f64::from(w), 110.0 / f64::from(w)],
                );
                r.iter_mut().for_each(|r| r.axes.s3_client = client);
                rows.extend(r);
            }
        }
        // And a hedged copy of each: both policies compared, each with itself.
        let hedged: Vec<_> = rows
            .iter()
            .cloned()
            .map(|mut r| {
                r.axes.hedge = crate::model::Hedge::Percentile(95);
                r
            })
            .collect();
        rows.extend(hedged);
        let multi = result(rows);
        for (a, b) in [(&demo, &demo), (&multi, &multi)] {
            let c = compare(a, b, &CompareOptions::default()).unwrap();
            let wide = render_comparison(&c, Style::Terminal);
            assert!(
                wide.lines().any(|l| l.chars().count() > 150),
                "the full table is wider than 150"
            );
            for width in [80, 100] {
                let text = render_comparison_in(&c, &Layout::fitted(Style::Terminal, width, None));
                let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
                assert!(long.is_empty(), "over {width}: {long:#?}\n{text}");
                assert!(text.contains("cpu ms/GET"), "the headline kept at {width}: {text}");
                assert_eq!(
                    text.matches("compare columns not shown").count(),
                    1,
                    "said once: {text}"
                );
                if std::ptr::eq(a, &multi) {
                    // Each (client, hedge, workers) once: 2 x 2 x 2 rows, none alike.
                    let mut keys: Vec<String> = text
                        .lines()
                        .filter(|l| l.contains(" p95 ") || l.contains(" off "))
                        .map(|l| l.split('┆').take(3).map(str::trim).collect::<Vec<_>>().join(" "))
                        .collect();
                    keys.sort();
                    let n = keys.len();
                    keys.dedup();
                    assert_eq!((n, keys.len()), (8, 8), "{text}");
                }
            }
        }
    }
}

//! Two results side by side, as tables: per bucket pair and worker count, wall time
//! with its spread, throughput, first byte, errors and the significance of the
//! difference.

use std::fmt::Write as _;

use crate::analysis::compare::{BucketPair, Comparison, Spread, MIN_REPETITIONS};
use crate::analysis::significance::Test;
use crate::model::{Runner, Unmeasured};

use super::{align_right, Style};

fn wall_cell(s: &Spread) -> String {
    if s.repetitions > 1 {
        format!("{:.0} [{:.0}-{:.0}]", s.median_wall_ms, s.min_wall_ms, s.max_wall_ms)
    } else {
        format!("{:.0}", s.median_wall_ms)
    }
}

/// The comparison as tables.
pub fn render_comparison(c: &Comparison, style: Style) -> String {
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
    if markdown {
        out.push('\n');
    }
    for p in &c.pairs {
        out.push_str(&render_pair(p, style, c));
    }
    if !c.unpaired_a.is_empty() || !c.unpaired_b.is_empty() {
        let _ = writeln!(
            out,
            "\nunpaired buckets: A [{}], B [{}] (choose with --bucket-a/--bucket-b)",
            c.unpaired_a.join(", "),
            c.unpaired_b.join(", ")
        );
    }
    out.push_str(&significance_note(c));
    out
}

/// One bucket pair: its heading, the table, the best and knee of each side, and the
/// worker counts on one side only.
fn render_pair(p: &BucketPair, style: Style, c: &Comparison) -> String {
    let markdown = style == Style::Markdown;
    let mut out = String::new();
    let head = format!("A {} vs B {} (matched by {})", p.bucket_a, p.bucket_b, p.matched_by);
    if markdown {
        let _ = writeln!(out, "### {head}\n");
    } else {
        let _ = writeln!(out, "\n{head}");
    }
    let _ = writeln!(out, "{}", pair_table(p, style, c));
    if markdown {
        out.push('\n');
    }
    if let (Some((wa, ma)), Some((wb, mb))) = (p.best_a, p.best_b) {
        let _ = write!(
            out,
            "best{}: A {ma:.0} ms at {wa} workers, B {mb:.0} ms at {wb} workers (B/A {:.2})",
            p.best_object_size_bytes
                .map_or(String::new(), |b| format!(" (objects of {b} bytes)")),
            mb / ma.max(1e-9)
        );
        let knee = |k: Option<u32>| k.map_or("none".to_string(), |k| k.to_string());
        let _ = writeln!(out, "; knee A {}, B {}", knee(p.knee_a), knee(p.knee_b));
    }
    if !p.only_in_a.is_empty() || !p.only_in_b.is_empty() {
        let _ = writeln!(
            out,
            "not compared (worker count on one side only): A {:?}, B {:?}",
            p.only_in_a, p.only_in_b
        );
    }
    out
}

/// One row per matched configuration (a memory column for a memory sweep).
fn pair_table(p: &BucketPair, style: Style, c: &Comparison) -> comfy_table::Table {
    let ttfb = |missing: &[Unmeasured], v: f64| {
        if missing.contains(&Unmeasured::TtfbMs) {
            "-".to_string()
        } else {
            format!("{v:.2}")
        }
    };
    let sized = p.configs.iter().any(|m| m.axes.memory_mb.is_some());
    let objects = p.configs.iter().any(|m| m.axes.object_size_bytes.is_some());
    let clients = p.configs.iter().any(|m| !m.axes.s3_client.is_sdk());
    let mut header = if sized { vec!["memory MB"] } else { Vec::new() };
    if objects {
        header.push("object bytes");
    }
    if clients {
        header.push("client");
    }
    header.extend([
        "workers",
        "A wall ms",
        "B wall ms",
        "B/A wall",
        "A objects/s",
        "B objects/s",
        "B/A objects/s",
        "A ttfb p50",
        "B ttfb p50",
        "A cpu ms/GET",
        "B cpu ms/GET",
        "errors A/B",
        "significance",
    ]);
    let mut table = style.table(header);
    for m in &p.configs {
        let mut cells = match (sized, m.axes.memory_mb) {
            (true, Some(mb)) => vec![mb.to_string()],
            (true, None) => vec!["-".to_string()],
            (false, _) => Vec::new(),
        };
        if objects {
            cells.push(m.axes.object_size_bytes.map_or("-".into(), |s| s.to_string()));
        }
        if clients {
            cells.push(m.axes.s3_client.to_string());
        }
        cells.extend([
            m.workers.to_string(),
            wall_cell(&m.a),
            wall_cell(&m.b),
            format!("{:.2}", m.wall_ratio),
            format!("{:.0}", m.a.median_objects_per_s),
            format!("{:.0}", m.b.median_objects_per_s),
            format!("{:.2}", m.throughput_ratio),
            ttfb(&c.not_measured_a, m.a.median_ttfb_p50_ms),
            ttfb(&c.not_measured_b, m.b.median_ttfb_p50_ms),
            format!("{:.3}", m.a.median_cpu_ms_per_get),
            format!("{:.3}", m.b.median_cpu_ms_per_get),
            format!("{}/{}", m.a.errors, m.b.errors),
            m.significance.text(),
        ]);
        table.add_row(cells);
    }
    align_right(&mut table, 0..12 + usize::from(sized) + usize::from(objects));
    table
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
}

//! Every output names every configuration: a property test over random axis
//! combinations (buckets x workers x clients x hedge policies x memory sizes x object
//! sizes x repetitions) on synthetic results (each output is a pure function of the
//! result). In each output (the JSON, the text and Markdown tables, the HTML summary,
//! the cost table and its total, the EMF lines, the plot legend, the `history` series
//! and their lines, `compare`'s pairs and its table) every configuration has exactly
//! one distinct entry, and none is dropped. The progress lines and the request log
//! (CSV and JSONL) are checked here too, from the names and lines the engine and
//! `RequestsLog` write; tests/it/requests_log.rs reads them from a real run.

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;

use crate::analysis::compare::{compare, CompareOptions};
use crate::analysis::cost::{cost_report, CostOverrides};
use crate::model::{Axes, AxisValues, Client, Hedge, ObjectSize, SweepResult, Thresholds};

use super::layout::Layout;
use super::Style;

/// A run's shape: its buckets, worker counts, repetitions and values on the axes.
#[derive(Debug, Clone)]
struct Shape {
    buckets: Vec<&'static str>,
    workers: Vec<u32>,
    repetitions: u32,
    values: AxisValues,
}

fn nonempty<T: Clone + std::fmt::Debug + 'static>(all: Vec<T>) -> impl Strategy<Value = Vec<T>> {
    let n = all.len();
    proptest::sample::subsequence(all, 1..=n)
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        nonempty(vec!["std-a", "exp--use1-az4--x-s3"]),
        nonempty(vec![1u32, 4, 16]),
        1u32..=2,
        prop_oneof![Just(vec![]), nonempty(vec![512u32, 1769])],
        prop_oneof![Just(vec![]), nonempty(vec![4096u64, 1 << 20])],
        nonempty(vec![Client::Sdk, Client::Lean]),
        nonempty(vec![Hedge::Off, Hedge::Percentile(95), Hedge::AfterMs(40)]),
    )
        .prop_map(
            |(buckets, workers, repetitions, memory, sizes, clients, hedges)| Shape {
                buckets,
                workers,
                repetitions,
                values: AxisValues::new(&memory, &sizes, &clients, &hedges),
            },
        )
}

/// One row per configuration of `shape`, each wall time its own, analysed.
fn result_of(shape: &Shape) -> SweepResult {
    let mut rows = Vec::new();
    for bucket in &shape.buckets {
        for point in shape.values.points(0) {
            for &w in &shape.workers {
                for rep in 1..=shape.repetitions {
                    let wall = 50.0 + rows.len() as f64 * 3.0;
                    let mut row = crate::model::test_rows::row(bucket, w, rep, wall, 0);
                    row.axes = Axes {
                        memory_mb: point.memory_mb,
                        object_size_bytes: point.object_size_bytes.map(ObjectSize::Fixed),
                        s3_client: point.s3_client,
                        hedge: point.hedge,
                    };
                    rows.push(row);
                }
            }
        }
    }
    let mut result = crate::analysis::summarized(rows);
    result.request.clients = shape.values.s3_client.clone();
    crate::analysis::analyse(&mut result, &Thresholds::default());
    result
}

/// The configurations of a result: (bucket, axes, workers, repetition).
fn configurations(result: &SweepResult) -> Vec<(String, Axes, u32, u32)> {
    result
        .results
        .iter()
        .map(|r| (r.bucket.clone(), r.axes.key(), r.workers, r.repetition))
        .collect()
}

/// The rows of every Markdown table in `text`: each a header and its rows, as cells.
fn markdown_rows(text: &str) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut tables: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
    let mut in_table = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table {
            in_table = true;
            tables.push((cells(line), Vec::new()));
        } else if !line.contains("---") || i == 0 {
            tables.last_mut().unwrap().1.push(cells(line));
        }
    }
    tables
}

/// Asserts `entries` has `want` entries, none twice.
fn distinct<T: std::hash::Hash + Eq + std::fmt::Debug>(
    what: &str,
    entries: Vec<T>,
    want: usize,
) -> Result<(), TestCaseError> {
    let n = entries.len();
    let set: HashSet<&T> = entries.iter().collect();
    prop_assert_eq!(set.len(), n, "{}: an entry twice in {:?}", what, entries);
    prop_assert_eq!(
        n,
        want,
        "{}: {} entries for {} configurations: {:?}",
        what,
        n,
        want,
        entries
    );
    Ok(())
}

/// The cells of a table row left of column `before` (its configuration's cells).
fn key_cells(header: &[String], row: &[String], before: &str) -> Vec<String> {
    let end = header.iter().position(|h| h == before).unwrap_or(header.len());
    row[..end].to_vec()
}

/// Each EMF line's dimensions with their values, and its repetition.
fn emf_keys(result: &SweepResult) -> Vec<String> {
    super::emf::lines(result, "ns", 0)
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let dims: Vec<String> = v["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| format!("{}={}", d.as_str().unwrap(), v[d.as_str().unwrap()]))
                .collect();
            format!("{} rep {}", dims.join(","), v["Repetition"])
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_output_names_every_configuration_once(shape in shape()) {
        let result = result_of(&shape);
        let all = configurations(&result);
        let n = shape.buckets.len() * shape.workers.len() * shape.repetitions as usize * shape.values.count() as usize;
        prop_assert_eq!(all.len(), n);
        // Rows grouped into summaries: one per bucket and point on the axes.
        let groups = shape.buckets.len() * shape.values.count() as usize;
        prop_assert_eq!(result.summary.len(), groups);

        // The JSON: every row with its axes.
        let json = serde_json::to_value(&result).unwrap();
        let keys: Vec<String> = json["results"].as_array().unwrap().iter().map(|r| {
            format!("{} {} {} {} {} {} {}", r["bucket"], r["workers"], r["repetition"], r["memory_mb"], r["object_size_bytes"], r["s3_client"], r["hedge"])
        }).collect();
        distinct("JSON rows", keys, n)?;

        // The text tables (one per bucket and axes, its title naming them) and Markdown.
        let md = super::tables::render_tables_in(&result, &Layout::wide(Style::Markdown));
        let titles: Vec<&str> = md.lines().filter_map(|l| l.strip_prefix("### ")).filter(|l| l.starts_with("bucket ")).collect();
        distinct("Markdown table titles", titles.clone(), groups)?;
        let terminal = super::tables::render_tables_in(&result, &Layout::wide(Style::Terminal));
        for t in &titles {
            let n = terminal.lines().filter(|l| l.trim() == *t).count();
            prop_assert_eq!(n, 1, "terminal title {:?} {} times: {}", t, n, terminal);
        }
        let tables = markdown_rows(&md);
        let table_rows: usize = tables.iter().map(|(_, rows)| rows.len()).sum();
        prop_assert!(table_rows >= groups * shape.workers.len(), "every worker count of every table: {}", md);

        // The HTML summary: a line per bucket and axes.
        let html = super::html::summary_markdown(&result);
        let firsts: Vec<String> = markdown_rows(&html).into_iter().flat_map(|(_, rows)| rows).map(|r| r[0].clone()).collect();
        distinct("HTML summary rows", firsts, groups)?;

        // The cost table and its total: every configuration priced.
        let report = cost_report(&result, CostOverrides::default());
        prop_assert_eq!(report.rows.len(), n);
        let sum: f64 = report.rows.iter().map(|r| r.total_usd).sum();
        prop_assert!((sum - report.total_usd).abs() <= 1e-9 * sum.max(1.0), "total {} vs rows {}", report.total_usd, sum);
        let cost = super::cost::render_cost(&report, &Layout::wide(Style::Markdown));
        let (header, rows) = markdown_rows(&cost).into_iter().next().expect("a cost table");
        let keys: Vec<Vec<String>> = rows.iter().map(|r| key_cells(&header, r, "GETs")).collect();
        distinct("cost rows", keys, n)?;

        // EMF: each line's dimensions and repetition.
        distinct("EMF dimensions", emf_keys(&result), n)?;

        // The plot legend: a curve per bucket and axes.
        let legend: Vec<String> = super::plot::curves(&result).into_iter().map(|c| c.bucket).collect();
        distinct("plot legend", legend, groups)?;

        // history (the run read twice): a series per bucket, axes and worker count, each
        // with its one line (no change between identical runs).
        let h = crate::analysis::history::history(&[result.clone(), result.clone()]);
        let per_bucket = shape.values.count() as usize * shape.workers.len();
        let keys: Vec<(String, Axes, u32)> = h.series.iter().map(|s| (s.bucket.clone(), s.axes, s.workers)).collect();
        distinct("history series", keys, groups * shape.workers.len())?;
        let text = super::history::render_history_in(&h, &Layout::wide(Style::Markdown));
        let headings: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("- ")?.split(": 2 runs").next()).collect();
        distinct("history lines", headings, groups * shape.workers.len())?;

        // compare (the run against a copy of itself): each configuration (axes, workers) paired
        // once, and its line in the table.
        let c = compare(&result, &result, &CompareOptions::default()).unwrap();
        prop_assert_eq!(c.pairs.len(), shape.buckets.len());
        for p in &c.pairs {
            let keys: Vec<(Axes, u32)> = p.configs.iter().map(|m| (m.axes, m.workers)).collect();
            distinct("compare pairs", keys, per_bucket)?;
        }
        let text = super::compare::render_comparison_in(&c, &Layout::wide(Style::Markdown));
        let rows: BTreeSet<Vec<String>> = markdown_rows(&text).into_iter()
            .filter(|(h, _)| h.iter().any(|x| x == "A wall ms"))
            .flat_map(|(h, rows)| rows.into_iter().map(move |r| key_cells(&h, &r, "A wall ms")))
            .collect();
        prop_assert_eq!(rows.len(), per_bucket, "compare's table rows: {}", text);
    }
}

/// The plan of `shape` without its memory sizes (a memory sweep runs the plan once
/// per size, each step carrying it: cli/memory.rs and the Lambda's memory sweep).
fn plan_of(shape: &Shape) -> crate::plan::Plan {
    let mut request = crate::model::SweepRequest::new(shape.buckets.iter().map(|b| b.to_string()).collect());
    request.workers = shape.workers.clone();
    request.repetitions = shape.repetitions;
    request.clients = shape.values.s3_client.clone();
    request.hedge = shape.values.hedge.clone();
    request.object_sizes_bytes = shape.values.object_size_bytes.iter().flatten().copied().collect();
    crate::plan::Plan::from_request(request).unwrap()
}

/// Every step the run of `shape` takes, each with its row of `result`.
fn steps_with_rows<'a>(
    shape: &Shape,
    result: &'a SweepResult,
) -> Vec<(
    crate::plan::Plan,
    crate::engine::order::Step,
    &'a crate::model::ConfigResult,
)> {
    let plan = plan_of(shape);
    let mut out = Vec::new();
    for &memory_mb in &shape.values.memory_mb {
        for mut step in crate::engine::order::steps(&plan) {
            step.axes.memory_mb = memory_mb;
            let bucket = &plan.buckets()[step.bucket];
            let row = result.results.iter().find(|r| {
                (&r.bucket, r.workers, r.repetition, r.axes.key()) == (bucket, step.workers, step.repetition, step.axes)
            });
            out.push((plan.clone(), step, row.expect("a row per step")));
        }
    }
    out
}

/// The request log `RequestsLog` writes for `result` in `format` (`csv` or `jsonl`):
/// two GETs per configuration, the first with a hedge copy whose fate turns with the
/// row (won, lost, cancelled); its lines as (column, value) pairs.
fn request_log_of(result: &SweepResult, format: &str) -> Vec<Vec<(String, String)>> {
    use crate::engine::hedge::HedgeFate;
    use crate::engine::requests_log::RequestsLog;
    use crate::engine::timeline::{GetEvent, HedgeEvent};
    let dir = std::env::temp_dir().join(format!("s3sweep-every-config-{}-{format}", std::process::id()));
    let path = dir.with_extension(format);
    let log = RequestsLog::create(&path, 1 << 30, std::sync::Arc::new(crate::engine::Quiet), true).unwrap();
    let get = |sent_us| GetEvent {
        sent_us,
        headers_us: 900,
        done_us: 1000,
        ttfb_us: 800,
        bytes: 100,
        attempts: 1,
        throttled: 0,
        error: None,
        connection_id: 1,
    };
    let fates = [HedgeFate::Won, HedgeFate::Lost, HedgeFate::Cancelled];
    for (i, row) in result.results.iter().enumerate() {
        let copy = HedgeEvent {
            get: 0,
            sent_us: 500,
            headers_us: None,
            end_us: 1200,
            bytes: 0,
            attempts: 1,
            connection_id: 2,
            error: None,
            fate: fates[i % 3],
        };
        crate::engine::Observer::gets_done(&log, row, &[get(0), get(10)], &[], &[copy]);
    }
    log.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    if format == "jsonl" {
        let value = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        return text
            .lines()
            .map(|l| {
                let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(l).unwrap();
                v.iter().map(|(k, x)| (k.clone(), value(x))).collect()
            })
            .collect();
    }
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    lines
        .map(|l| header.iter().cloned().zip(l.split(',').map(str::to_string)).collect())
        .collect()
}

/// The columns of a request log line that are not its configuration's.
const LINE_COLUMNS: &[&str] = &[
    "get",
    "attempt",
    "attempts",
    "sent_ms",
    "first_byte_ms",
    "last_byte_ms",
    "bytes",
    "connection",
    "outcome",
    "copy",
    "fate",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// The progress lines (one per step the run takes, named as the engine names it)
    /// and the request log (CSV and JSONL: each GET's line and each hedge copy's, with
    /// its fate) name every configuration once.
    #[test]
    fn every_progress_line_and_request_log_line_names_its_configuration(shape in shape()) {
        let result = result_of(&shape);
        let n = configurations(&result).len();
        let lines: Vec<String> = steps_with_rows(&shape, &result).iter().map(|(plan, step, row)| {
            let name = crate::engine::run_config::progress_name(plan, step);
            let line = super::progress::finished_line(&name, row, usize::MAX);
            line.split(": ").next().unwrap().to_string()
        }).collect();
        distinct("progress lines", lines, n)?;
        for format in ["csv", "jsonl"] {
            let log = request_log_of(&result, format);
            let config = |line: &[(String, String)]| -> Vec<String> {
                line.iter().filter(|(c, _)| !LINE_COLUMNS.contains(&c.as_str())).map(|(c, v)| format!("{c}={v}")).collect()
            };
            let field = |line: &[(String, String)], name: &str| line.iter().find(|(c, _)| c == name).map(|(_, v)| v.clone()).unwrap();
            let gets: Vec<(Vec<String>, String)> = log.iter().filter(|l| field(l, "copy") == "get").map(|l| (config(l), field(l, "get"))).collect();
            distinct(&format!("{format} GET lines"), gets, 2 * n)?;
            let copies: Vec<Vec<String>> = log.iter().filter(|l| field(l, "copy") == "hedge").map(|l| config(l)).collect();
            distinct(&format!("{format} hedge copies"), copies, n)?;
            let fates: BTreeSet<String> = log.iter().map(|l| field(l, "fate")).collect();
            let want = if n >= 3 { 3 } else { n };
            prop_assert!(fates.iter().filter(|f| ["won", "lost", "cancelled"].contains(&f.as_str())).count() == want, "{} fates: {:?}", format, fates);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// `compare` of a run against itself less one configuration (every repetition of
    /// it) lists exactly that configuration, with its axes, as A's alone.
    #[test]
    fn compare_lists_a_configuration_on_one_side_with_its_axes(shape in shape()) {
        let a = result_of(&shape);
        let (bucket, axes, workers, _) = configurations(&a).pop().unwrap();
        let mut b = a.clone();
        b.results.retain(|r| !(r.bucket == bucket && r.axes.key() == axes && r.workers == workers));
        prop_assume!(!b.results.iter().all(|r| r.bucket != bucket));
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let pair = c.pairs.iter().find(|p| p.bucket_a == bucket).unwrap();
        let only: Vec<(Axes, u32)> = pair.only_in_a.iter().map(|o| (o.axes, o.workers)).collect();
        prop_assert_eq!(only, vec![(axes, workers)]);
        prop_assert!(pair.only_in_b.is_empty());
        let others = c.pairs.iter().filter(|p| p.bucket_a != bucket);
        prop_assert!(others.clone().all(|p| p.only_in_a.is_empty() && p.only_in_b.is_empty()));
    }
}

//! The result tables: one per bucket (workers, wall time, rates, first byte, pool wait,
//! CPU per GET, connections and TLS handshake time, S3 Express sessions, requests in
//! flight, errors, verdict), with the summary and diagnosis lines under each, for the
//! terminal or as Markdown.

use std::fmt::Write as _;

#[cfg(test)]
use super::layout::line_chars;
#[cfg(test)]
use crate::model::Runner;
use crate::model::{BucketSummary, ConfigResult, RunKind, SweepResult, Unmeasured};

use crate::analysis::story::Story;

use super::columns::Column;
use super::diagnosis::{render_bucket, render_comparisons, render_size_limits};
use super::layout::{fitting, Layout};
use super::{align_right, Style};

/// The tables of a result with every column and no width limit: one per bucket with
/// the lines under it (summary and diagnosis), then the bucket comparisons.
pub fn render_tables(result: &SweepResult, style: Style) -> String {
    render_tables_in(result, &Layout::wide(style))
}

/// The tables of a result laid out by `layout`: each table with the columns picked or
/// those that fit the width, what was left out said once under it, and every line
/// under the tables wrapped at the same width.
pub fn render_tables_in(result: &SweepResult, layout: &Layout) -> String {
    let mut out = layout.wrap(&render_listing(result));
    out.push_str(&layout.wrap(&render_substrate(result)));
    out.push_str(&layout.wrap(&render_network(result)));
    let mut said = Vec::new();
    for summary in &result.summary {
        let (table, hidden) = bucket_table(result, summary, layout);
        let title = format!(
            "bucket {}{}{}{}",
            summary.bucket,
            memory_title(result, summary.axes.memory_mb),
            summary
                .axes
                .object_size_bytes
                .map_or(String::new(), |s| format!(", objects of {s} bytes")),
            client_title(result, summary)
        );
        if layout.style == Style::Markdown {
            let _ = writeln!(out, "### {title}\n\n{table}\n");
        } else {
            let _ = writeln!(out, "{}", layout.wrap(&title));
            let _ = writeln!(out, "{table}");
        }
        let mut under = hidden_line(&hidden, &mut said);
        under.push_str(&summary_line(summary, &Story::of_bucket(result, summary).knee_words()));
        under.push('\n');
        under.push_str(&render_bucket(result, summary));
        out.push_str(&if layout.style == Style::Markdown {
            as_list(&under)
        } else {
            layout.wrap(&under)
        });
        out.push('\n');
    }
    let mut tail = render_size_limits(result);
    tail.push_str(&render_comparisons(result));
    if result.truncated {
        let _ = writeln!(
            tail,
            "truncated: {} configuration(s) skipped ({})",
            result.skipped.len(),
            result.skipped.first().map(|s| s.reason.as_str()).unwrap_or("")
        );
    }
    out.push_str(&layout.wrap(&tail));
    out
}

/// Lines as a Markdown list, one item each (indented lines nested), so a renderer
/// keeps them apart instead of joining them into one paragraph.
fn as_list(lines: &str) -> String {
    let mut out = String::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let text = line.trim_start();
        let _ = writeln!(out, "{}- {text}", &line[..line.len() - text.len()]);
    }
    out
}

/// The wire cell: what the interfaces received per second, `burst` after it when the
/// row ran on burst credit; `-` without counters.
fn wire_cell(r: &ConfigResult) -> String {
    match &r.wire {
        // Not the row's rate: its note says what the counters received.
        Some(w) if w.other_traffic => "other traffic".into(),
        Some(w) if r.in_burst => format!("{:.1} burst", w.rx_mib_per_s),
        Some(w) => format!("{:.1}", w.rx_mib_per_s),
        None => "-".into(),
    }
}

/// Rows named in the overlap line at most (the others counted).
const OVERLAPS_NAMED: usize = 6;

/// Lines before the tables on what the function ran on (`environment.lambda.substrate`)
/// and which rows other invocations of the same execution environment overlapped
/// (Lambda Managed Instances): nothing when neither was recorded.
fn render_substrate(result: &SweepResult) -> String {
    let mut out = String::new();
    if let Some(s) = result.environment.lambda.as_ref().and_then(|l| l.substrate.as_ref()) {
        let _ = writeln!(out, "substrate: {}", s.describe());
    }
    let overlapped: Vec<(&ConfigResult, &crate::model::Overlap)> = result
        .results
        .iter()
        .filter_map(|r| r.overlap.as_ref().filter(|o| o.other_invocations > 0).map(|o| (r, o)))
        .collect();
    if !overlapped.is_empty() {
        let named: Vec<String> = overlapped
            .iter()
            .take(OVERLAPS_NAMED)
            .map(|(r, o)| {
                format!(
                    "{} {} workers rep {} ({} other(s), {:.0}%)",
                    r.bucket,
                    r.workers,
                    r.repetition,
                    o.other_invocations,
                    o.overlapped_fraction * 100.0
                )
            })
            .collect();
        let more = overlapped.len().saturating_sub(OVERLAPS_NAMED);
        let _ = writeln!(
            out,
            "overlap: {} of {} rows ran while other invocations of the same execution environment did, sharing its CPU and network interface (their figures are the sweeps together; the rows' notes say more): {}{}",
            overlapped.len(),
            result.results.len(),
            named.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    } else if result.results.iter().any(|r| r.overlap.is_some()) {
        let _ = writeln!(out, "overlap: no row ran beside another invocation");
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Lines on the network before the tables: the bandwidth probe, the ceiling used and
/// its source, an interleaved order and its seed. Nothing for a plain older result.
fn render_network(result: &SweepResult) -> String {
    let mut out = String::new();
    let Some(n) = &result.network else {
        return out;
    };
    if let Some(p) = &n.probe {
        let _ = writeln!(out, "bandwidth probe ({}): {}", p.bucket, p.explanation);
    }
    if let Some(c) = n.ceiling {
        let bound = if c.lower_bound { ", a lower bound" } else { "" };
        let interval = c
            .interval_mib_per_s
            .map_or(String::new(), |[lo, hi]| format!(", between {lo:.1} and {hi:.1}"));
        let revised = c.revised_from_mib_per_s.map_or(String::new(), |was| {
            format!(", revised up from {was:.1}: a row went faster")
        });
        let evidence = if c.source == crate::model::CeilingSource::Sweep {
            ": the sweep's own rows show a full link (bodies took longer while MiB/s stayed flat, with CPU to spare)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "bandwidth ceiling: {:.1} MiB/s{interval} (source: {}{bound}{revised}){evidence}",
            c.mib_per_s,
            c.source.name()
        );
    }
    if let Some(seed) = n.order_seed {
        let _ = writeln!(
            out,
            "order: {} (rounds of shuffled worker counts, seed {seed})",
            n.order.name()
        );
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The columns a bucket's table has: the memory column in a memory sweep, the client
/// column when several clients ran, the size columns for listed (varied) objects.
fn table_columns(result: &SweepResult, rows: &[&ConfigResult]) -> Vec<Column> {
    let sized = result.run_kind() == RunKind::MemorySweep;
    let clients = result.several_clients();
    let listed = rows
        .iter()
        .any(|r| matches!(r.axes.object_size_bytes, Some(crate::model::ObjectSize::Spread(_))));
    Column::ALL
        .into_iter()
        .filter(|c| match c {
            Column::MemoryMb => sized,
            Column::Client => clients,
            Column::BytesRead | Column::ObjectBytes => listed,
            _ => true,
        })
        .collect()
}

/// One row per configuration of a bucket (and memory size: a memory sweep's document
/// has a memory column, and a table per bucket and size), with the columns `layout`
/// picks or, by default, those that fit its width; and the columns left out.
fn bucket_table(result: &SweepResult, summary: &BucketSummary, layout: &Layout) -> (comfy_table::Table, Vec<Column>) {
    let rows: Vec<&ConfigResult> = result.rows_for(summary).collect();
    let available = table_columns(result, &rows);
    // Each row's cells as (column, value) pairs: a table in any column order takes
    // each value by its column, so no value can land under another's header.
    let cells: Vec<Vec<(Column, String)>> = rows
        .iter()
        .map(|r| {
            available
                .iter()
                .map(|&c| (c, cell(r, c, &result.not_measured)))
                .collect()
        })
        .collect();
    let draw = |shown: &[Column]| {
        let mut table = layout.style.table(shown.iter().map(|c| c.header()).collect());
        for row in &cells {
            table.add_row(shown.iter().map(|s| {
                row.iter()
                    .find(|(c, _)| c == s)
                    .map_or_else(String::new, |(_, v)| v.clone())
            }));
        }
        for (i, c) in shown.iter().enumerate() {
            if c.right_aligned() {
                align_right(&mut table, i..i + 1);
            }
        }
        table
    };
    let shown = match (&layout.columns, layout.width_chars) {
        (Some(picked), _) => picked.iter().copied().filter(|c| available.contains(c)).collect(),
        (None, None) => available.clone(),
        (None, Some(width)) => fitting(&available, &Column::ESSENTIAL, &Column::BY_PRIORITY, width, &draw),
    };
    // Columns left out to fit the width are said; columns not picked are not.
    let hidden = match layout.columns {
        Some(_) => Vec::new(),
        None => available.iter().copied().filter(|c| !shown.contains(c)).collect(),
    };
    let mut table = draw(&shown);
    layout.fit_table(&mut table);
    (table, hidden)
}

/// The line under a table saying which columns it left out; nothing when none were,
/// or when the previous table already said the same.
fn hidden_line(hidden: &[Column], said: &mut Vec<Column>) -> String {
    if hidden.is_empty() || hidden == said.as_slice() {
        return String::new();
    }
    said.clear();
    said.extend_from_slice(hidden);
    let names: Vec<&str> = hidden.iter().map(|c| c.name()).collect();
    format!(
        "columns not shown (to fit the width): {}; --wide shows every column, --columns picks\n",
        names.join(", ")
    )
}

/// The cell of row `r` in column `c`; `-` for a field the client that wrote the
/// result could not measure (`not_measured`, e.g. the boto3 baseline's).
fn cell(r: &ConfigResult, c: Column, not_measured: &[Unmeasured]) -> String {
    let known = |field: Unmeasured, cell: &dyn Fn() -> String| {
        if not_measured.contains(&field) {
            "-".to_string()
        } else {
            cell()
        }
    };
    match c {
        Column::MemoryMb => match r.axes.memory_mb {
            Some(mb) if r.emulated => format!("{mb}*"),
            Some(mb) => mb.to_string(),
            None => "-".to_string(),
        },
        Column::Client => r.axes.s3_client.name().to_string(),
        Column::Workers => r.workers.to_string(),
        Column::Rep => r.repetition.to_string(),
        Column::WallMs => format!("{:.0}", r.wall_ms),
        Column::ObjectsPerS => format!("{:.0}", r.objects_per_s),
        Column::MibPerS => format!("{:.1}", r.mib_per_s),
        Column::TtfbP50Ms => known(Unmeasured::TtfbMs, &|| format!("{:.2}", r.ttfb_ms.p50)),
        Column::TtfbP99Ms => known(Unmeasured::TtfbMs, &|| format!("{:.2}", r.ttfb_ms.p99)),
        Column::PoolWaitP50Ms => known(Unmeasured::PoolWaitMs, &|| format!("{:.2}", r.pool_wait_ms.p50)),
        Column::CpuMsPerGet => format!("{:.3}", r.cpu_ms_per_get),
        Column::Conns => known(Unmeasured::ConnectionsOpened, &|| {
            cold_total(r, |b| b.connections_opened).to_string()
        }),
        Column::TlsP50Ms => known(Unmeasured::TlsHandshakes, &|| {
            tls_p50(r).map_or("-".into(), |ms| format!("{ms:.2}"))
        }),
        Column::Sessions => known(Unmeasured::SessionRequests, &|| {
            cold_total(r, |b| b.session_requests).to_string()
        }),
        Column::InFlight => r
            .client
            .as_ref()
            .map_or("-".into(), |c| format!("{:.1}", c.mean_in_flight)),
        Column::Errors => r.errors.short(),
        Column::WireMibPerS => wire_cell(r),
        Column::Verdict => r.diagnosis.as_ref().map_or("-", |d| d.verdict.name()).to_string(),
        Column::BytesRead => r.bytes.to_string(),
        Column::ObjectBytes => size_cell(r),
    }
}

/// A listed row's object sizes, min/p50/p99/max (`varies` when they differ).
fn size_cell(r: &ConfigResult) -> String {
    r.axes.object_size_bytes.map(|s| s.spread()).map_or("-".into(), |s| {
        let varies = if s.varies() { " (varies)" } else { "" };
        format!("{}/{}/{}/{}{varies}", s.min, s.p50, s.p99, s.max)
    })
}

/// The lines of a `key_prefix` sweep's listing: per bucket the keys and bytes found,
/// the listing's requests and time, which are in no row.
fn render_listing(result: &SweepResult) -> String {
    let mut out = String::new();
    for l in &result.listing {
        let _ = writeln!(
            out,
            "listing: {} keys ({} bytes) under {:?} in {} (of {} asked), {} ListObjectsV2 request(s), {:.1} ms, before the sweep and not in its times",
            l.keys_found, l.bytes_total, l.prefix, l.bucket, l.keys_asked, l.list_requests, l.list_wall_ms
        );
    }
    out
}

/// The line under a bucket's table: best, one worker, the curve's shape from its story
/// (`knee`), failed requests.
fn summary_line(summary: &BucketSummary, knee: &str) -> String {
    let mut out = format!(
        "best: {} workers, {:.0} ms ({:.0} objects/s)",
        summary.best_workers, summary.best_wall_ms, summary.best_objects_per_s
    );
    if let (Some(one), Some(speedup)) = (summary.one_worker_wall_ms, summary.speedup_over_one_worker) {
        let _ = write!(out, "; 1 worker: {one:.0} ms, speedup {speedup:.1}x");
    }
    if !knee.is_empty() {
        let _ = write!(out, "; {knee}");
    }
    if summary.errors_total > 0 {
        let _ = write!(out, "; {} failed requests", summary.errors_total);
    }
    out
}

/// `, client lean, hedge p95` after a bucket's name: the axes the run names but the
/// memory size and object size (the title names those with their own details).
fn client_title(result: &SweepResult, summary: &BucketSummary) -> String {
    let named = result.named_axes().without("memory MB").without("object bytes");
    summary.axes.words(named).iter().map(|w| format!(", {w}")).collect()
}

/// `, 512 MB (emulated: 0.289 cores)` or `, 512 MB (Lambda version 7)` after a memory
/// sweep table's bucket name; nothing outside a memory sweep.
fn memory_title(result: &SweepResult, memory_mb: Option<u32>) -> String {
    let Some(mb) = memory_mb else {
        return String::new();
    };
    let step = result
        .memory
        .as_ref()
        .and_then(|m| m.steps.iter().find(|s| s.memory_mb == mb));
    match step {
        Some(s) if s.cores.is_some() => format!(
            ", {mb} MB emulated (client CPU quota {:.3} cores; * in the memory column)",
            s.cores.unwrap_or_default()
        ),
        Some(s) => format!(", {mb} MB (Lambda version {})", s.version.as_deref().unwrap_or("?")),
        None => format!(", {mb} MB"),
    }
}

/// A count of the configuration's warm-up and timed requests together (the columns
/// `conns` and `sessions`: most connections and sessions are opened by the warm-up).
fn cold_total(r: &ConfigResult, count: impl Fn(&crate::model::Breakdown) -> u64) -> u64 {
    [r.warmup.as_ref(), r.breakdown.as_ref()]
        .into_iter()
        .flatten()
        .map(count)
        .fold(0, u64::saturating_add)
}

/// The median TLS handshake of the configuration: the timed requests' if they did any,
/// else the warm-up's; `None` without handshakes (HTTP, or connections kept from before).
fn tls_p50(r: &ConfigResult) -> Option<f64> {
    [r.breakdown.as_ref(), r.warmup.as_ref()]
        .into_iter()
        .flatten()
        .find(|b| b.tls_handshakes > 0)
        .map(|b| b.tls_handshake_ms.p50)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::test_rows::row;

    #[test]
    fn several_clients_get_a_table_each_with_a_client_column() {
        let mut lean = vec![row("a-bucket", 1, 1, 400.0, 0), row("a-bucket", 8, 1, 100.0, 0)];
        for r in &mut lean {
            r.axes.s3_client = crate::model::Client::Lean;
        }
        let mut rows = vec![row("a-bucket", 1, 1, 1000.0, 0), row("a-bucket", 8, 1, 300.0, 0)];
        rows.extend(lean);
        let mut result = crate::model::test_rows::result(rows);
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
        assert_eq!(result.summary.len(), 2, "a summary per client: {:?}", result.summary);
        let text = render_tables(&result, Style::Markdown);
        assert!(text.contains("### bucket a-bucket, client sdk"), "{text}");
        assert!(text.contains("### bucket a-bucket, client lean"), "{text}");
        assert!(text.contains("| client | workers |"), "{text}");
        assert!(text.contains("|   lean |       8 |"), "{text}");
        // One client: no column, no title part, as before.
        let one = crate::analysis::summarized(vec![row("a-bucket", 1, 1, 1000.0, 0)]);
        let text = render_tables(&one, Style::Markdown);
        assert!(
            text.contains("### bucket a-bucket\n") && !text.contains("| client |"),
            "{text}"
        );
    }

    /// `rows` as measured by a Lambda function (2,048 MB, arm64), on Managed Instances
    /// (a c7gn.large seen, 8 invocations at once) when `lmi`.
    pub(crate) fn from_lambda(rows: Vec<ConfigResult>, lmi: bool) -> SweepResult {
        let mut r = crate::analysis::summarized(rows);
        r.environment.runner = Runner::Lambda;
        r.environment.arch = "aarch64".into();
        r.environment.lambda = Some(crate::model::LambdaEnvironment {
            function_name: Some("s3sweep-lmi".into()),
            function_version: None,
            memory_size_mb: Some(2048),
            cold_start: false,
            architecture: Some(crate::model::Architecture::Arm64),
            region: Some("us-east-1".into()),
            request_id: None,
            remaining_ms_at_start: None,
            safety_margin_ms: 0,
            deployment: None,
            substrate: lmi.then(|| crate::model::SubstrateInfo {
                kind: crate::model::Substrate::ManagedInstances,
                max_concurrency: Some(8),
                instance_type: Some("c7gn.large".into()),
                vcpus: Some(2),
            }),
            init_us: None,
        });
        r
    }

    #[test]
    fn the_substrate_and_the_overlapped_rows_are_in_the_report_and_the_page() {
        let mut rows = vec![row("std-bucket", 1, 1, 1000.0, 0), row("std-bucket", 8, 1, 300.0, 0)];
        rows[0].overlap = Some(crate::model::Overlap {
            other_invocations: 0,
            overlapped_fraction: 0.0,
        });
        rows[1].overlap = Some(crate::model::Overlap {
            other_invocations: 2,
            overlapped_fraction: 0.45,
        });
        let r = from_lambda(rows, true);
        let defaults = crate::analysis::cost::CostOverrides::default();
        let text = super::super::report_text(&r, &Layout::wide(Style::Terminal), defaults);
        for said in [
            "substrate: Lambda Managed Instances on c7gn.large, 2 vCPUs, up to 8 invocations at once",
            "overlap: 1 of 2 rows ran while other invocations",
            "std-bucket 8 workers rep 1 (2 other(s), 45%)",
            "Lambda Managed Instances on c7gn.large: the instance at $0.1248 per hour + 15% management fee",
        ] {
            assert!(text.contains(said), "{said:?} not in\n{text}");
        }
        let page = crate::render::html::report_page(&r, "test", defaults);
        for said in ["substrate: Lambda Managed Instances on c7gn.large", "2 other(s), 45%"] {
            assert!(page.contains(said), "{said:?} not in the page");
        }
        // On Lambda, the substrate says so; a result that recorded neither says nothing.
        let mut plain = from_lambda(vec![row("std-bucket", 1, 1, 1000.0, 0)], false);
        let text = render_tables(&plain, Style::Terminal);
        assert!(!text.contains("substrate:") && !text.contains("overlap:"), "{text}");
        if let Some(l) = plain.environment.lambda.as_mut() {
            l.substrate = Some(crate::model::SubstrateInfo {
                kind: crate::model::Substrate::Lambda,
                max_concurrency: None,
                instance_type: None,
                vcpus: Some(2),
            });
        }
        let text = render_tables(&plain, Style::Terminal);
        assert!(text.contains("substrate: Lambda, 2 vCPUs\n"), "{text}");
    }

    /// A two-bucket result as the demo's: every worker count with a verdict.
    fn analysed(buckets: &[&str]) -> SweepResult {
        let mut rows = Vec::new();
        for b in buckets {
            for (w, ms) in [(1, 20_000.0), (8, 2_600.0), (64, 350.0), (256, 204.0)] {
                rows.push(row(b, w, 1, ms, 0));
            }
        }
        crate::analysis::summarized(rows)
    }

    #[test]
    fn a_fitted_table_keeps_the_verdict_columns_and_says_once_what_it_left_out() {
        let result = analysed(&["standard-like", "express-like--lab1-az1--x-s3"]);
        for width in [60, 80, 100] {
            let text = render_tables_in(&result, &Layout::fitted(Style::Terminal, width, None));
            let long: Vec<&str> = text.lines().filter(|l| line_chars(l) > width).collect();
            assert!(long.is_empty(), "over {width}: {long:#?}\n{text}");
            let header = text.lines().find(|l| l.contains("workers ┆")).expect(&text);
            for kept in ["workers", "rep", "wall ms", "objects/s", "verdict"] {
                assert!(header.contains(kept), "{kept} at {width}: {header}");
            }
            assert_eq!(text.matches("columns not shown").count(), 1, "{text}");
            assert!(!header.contains("sessions"), "{header}");
        }
        // Wide: every column, nothing said hidden.
        let wide = render_tables_in(&result, &Layout::wide(Style::Terminal));
        let header = wide.lines().find(|l| l.contains("workers ┆")).expect(&wide);
        let shown: Vec<&str> = header
            .split(['│', '┆'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let all: Vec<&str> = table_columns(&result, &result.results.iter().collect::<Vec<_>>())
            .iter()
            .map(|c| c.header())
            .collect();
        assert_eq!(shown, all);
        assert_eq!(all.len(), 16);
        assert!(!wide.contains("columns not shown"), "{wide}");
        // Picked: those columns, in that order.
        let picked = Layout::fitted(Style::Terminal, 100, Some(vec![Column::Verdict, Column::TtfbP99Ms]));
        let text = render_tables_in(&result, &picked);
        assert!(text.contains("│ verdict ┆ ttfb p99 ms │"), "{text}");
    }

    #[test]
    fn tables_name_every_bucket() {
        let results = vec![row("a-bucket", 1, 1, 1000.0, 0), row("b-bucket", 1, 1, 500.0, 2)];
        let mut result = crate::analysis::summarized(results);
        result.environment.runner = Runner::Cli;
        let text = render_tables(&result, Style::Terminal);
        assert!(text.contains("bucket a-bucket"));
        assert!(text.contains("bucket b-bucket"));
        assert!(text.contains("not_found=2"));
        let md = render_tables(&result, Style::Markdown);
        assert!(md.contains("### bucket a-bucket\n\n| workers | rep |"), "{md}");
        assert!(md.contains("|---"), "{md}");
        // The lines under a table are list items: a renderer keeps them apart.
        assert!(md.contains("\n- best: 1 workers"), "{md}");
        assert_eq!(as_list("a\n  b\n\nc"), "- a\n  - b\n- c\n");
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["schema"], "s3sweep.result/v1");
        assert!(json["results"][0]["ttfb_ms"]["p99"].is_number());
        let back: SweepResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn warm_up_connections_handshakes_and_sessions_are_shown() {
        let mut rows = vec![
            row("x--az1--x-s3", 4, 1, 1000.0, 0),
            row("x--az1--x-s3", 8, 1, 900.0, 0),
        ];
        let mut warmup = crate::model::Breakdown {
            connections_opened: 4,
            tls_handshakes: 4,
            session_requests: 1,
            ..Default::default()
        };
        warmup.tls_handshake_ms.p50 = 1.25;
        rows[0].warmup = Some(warmup);
        let result = crate::analysis::summarized(rows);
        let md = render_tables(&result, Style::Markdown);
        assert!(md.contains("| tls p50 ms | sessions |"), "{md}");
        let first = md
            .lines()
            .find(|l| l.split('|').nth(1).map(str::trim) == Some("4"))
            .expect(&md);
        let cells: Vec<&str> = first.split('|').map(str::trim).collect();
        assert_eq!(&cells[10..13], ["4", "1.25", "1"], "{first}");
        let second = md
            .lines()
            .find(|l| l.split('|').nth(1).map(str::trim) == Some("8"))
            .expect(&md);
        let cells: Vec<&str> = second.split('|').map(str::trim).collect();
        assert_eq!(&cells[10..13], ["0", "-", "0"], "{second}");
    }

    #[test]
    fn fields_another_client_could_not_measure_show_as_dashes() {
        let mut result = crate::model::test_rows::result(vec![row("a-bucket", 8, 1, 300.0, 0)]);
        result.results[0].ttfb_ms.p50 = 12.345;
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
        let measured = render_tables(&result, Style::Markdown);
        assert!(measured.contains("12.35"), "{measured}");
        result.not_measured = vec![Unmeasured::TtfbMs, Unmeasured::PoolWaitMs];
        let text = render_tables(&result, Style::Markdown);
        assert!(!text.contains("12.35"), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with('|') && l.contains(" 300 "))
            .unwrap_or_default();
        let cells: Vec<&str> = line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        // workers, rep, wall, objects/s, MiB/s, then ttfb p50, ttfb p99, pool wait p50.
        assert_eq!(cells.get(5..8), Some(&["-", "-", "-"][..]), "{line}");
        assert_eq!(cells[2], "300", "{line}");
    }

    /// docs/demo.json, the committed result.
    fn demo() -> SweepResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/demo.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// What the JSON row says for column `c`, formatted as the table does; `None` for
    /// a cell built from several fields (compared with [`cell`] instead).
    fn from_json(row: &serde_json::Value, c: Column) -> Option<String> {
        let f = |p: &str| row.pointer(p).and_then(|v| v.as_f64());
        Some(match c {
            Column::Workers => row["workers"].to_string(),
            Column::Rep => row["repetition"].to_string(),
            Column::WallMs => format!("{:.0}", f("/wall_ms")?),
            Column::ObjectsPerS => format!("{:.0}", f("/objects_per_s")?),
            Column::MibPerS => format!("{:.1}", f("/mib_per_s")?),
            Column::TtfbP50Ms => format!("{:.2}", f("/ttfb_ms/p50")?),
            Column::TtfbP99Ms => format!("{:.2}", f("/ttfb_ms/p99")?),
            Column::PoolWaitP50Ms => format!("{:.2}", f("/pool_wait_ms/p50")?),
            Column::CpuMsPerGet => format!("{:.3}", f("/cpu_ms_per_get")?),
            Column::InFlight => format!("{:.1}", f("/client/mean_in_flight")?),
            Column::BytesRead => row["bytes"].to_string(),
            Column::Verdict => row.pointer("/diagnosis/verdict")?.as_str()?.to_string(),
            _ => return None,
        })
    }

    /// The Markdown tables of `text`: per table, its header and rows of cells.
    fn markdown_tables(text: &str) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
        let cells = |l: &str| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        };
        let mut out: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
        let mut in_table = false;
        for line in text.lines() {
            match (line.starts_with('|'), in_table) {
                (true, false) => {
                    out.push((cells(line), Vec::new()));
                    in_table = true;
                }
                (true, true) if line.starts_with("|--") || line.starts_with("| --") || line.starts_with("|:") => {}
                (true, true) => out.last_mut().unwrap().1.push(cells(line)),
                (false, _) => in_table = false,
            }
        }
        out
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]

        /// Any order and any subset of `--columns`: each header over its own values,
        /// every cell the JSON's (or, for a cell built from several fields, the
        /// column's own cell of that row).
        #[test]
        fn picked_columns_put_every_value_under_its_own_header(
            order in proptest::strategy::Just(Column::ALL.to_vec()).prop_shuffle(),
            take in 1usize..=Column::ALL.len(),
        ) {
            let result = demo();
            let json = serde_json::to_value(&result).unwrap();
            let picked: Vec<Column> = order[..take].to_vec();
            // Only columns this result has none of (memory, client, sizes): no table to read.
            proptest::prop_assume!(picked.iter().any(|c| !matches!(c, Column::MemoryMb | Column::Client | Column::BytesRead | Column::ObjectBytes)));
            let layout = Layout::fitted(Style::Markdown, 200, Some(picked.clone()));
            let text = render_tables_in(&result, &layout);
            let tables = markdown_tables(&text);
            proptest::prop_assert_eq!(tables.len(), result.summary.len(), "{}", text);
            for (summary, (header, rows)) in result.summary.iter().zip(&tables) {
                let mine: Vec<&ConfigResult> = result.rows_for(summary).collect();
                let available = table_columns(&result, &mine);
                let shown: Vec<Column> = picked.iter().copied().filter(|c| available.contains(c)).collect();
                let headers: Vec<&str> = shown.iter().map(|c| c.header()).collect();
                proptest::prop_assert_eq!(header, &headers);
                proptest::prop_assert_eq!(rows.len(), mine.len());
                let rows_json: Vec<&serde_json::Value> = json["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["bucket"] == summary.bucket.as_str())
                    .collect();
                for ((cells, r), rj) in rows.iter().zip(&mine).zip(rows_json) {
                    for (c, got) in shown.iter().zip(cells) {
                        let want = from_json(rj, *c).unwrap_or_else(|| cell(r, *c, &result.not_measured));
                        proptest::prop_assert_eq!(got, &want, "{} of {:?}", c, rj["workers"]);
                    }
                }
            }
        }
    }

    #[test]
    fn the_demo_s_picked_columns_read_as_their_headers_say() {
        let picked = Column::parse_list("verdict,workers,objects_per_s").unwrap();
        let text = render_tables_in(&demo(), &Layout::fitted(Style::Terminal, 100, Some(picked)));
        assert!(text.contains("│ verdict ┆ workers ┆ objects/s │"), "{text}");
        let first = &demo().results[0];
        let row = format!("│ latency ┆ {:>7} ┆ {:>9.0} │", first.workers, first.objects_per_s);
        assert!(text.contains(&row), "{row} in {text}");
        assert!(!text.contains("columns not shown"), "{text}");
    }
}

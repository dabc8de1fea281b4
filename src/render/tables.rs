//! The result tables: one per bucket (workers, wall time, rates, first byte, pool wait,
//! CPU per GET, connections and TLS handshake time, S3 Express sessions, requests in
//! flight, errors, verdict), with the summary and diagnosis lines under each, for the
//! terminal or as Markdown.

use std::fmt::Write as _;

#[cfg(test)]
use crate::model::Runner;
use crate::model::{BucketSummary, ConfigResult, RunKind, SweepResult, Unmeasured};

use crate::analysis::story::Story;

use super::diagnosis::{render_bucket, render_comparisons, render_size_limits};
use super::{align_right, Style};

/// The tables of a result: one per bucket with the lines under it (summary and
/// diagnosis), then the bucket comparisons.
pub fn render_tables(result: &SweepResult, style: Style) -> String {
    let mut out = render_listing(result);
    out.push_str(&render_network(result));
    for summary in &result.summary {
        let table = bucket_table(result, summary, style);
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
        if style == Style::Markdown {
            let _ = writeln!(out, "### {title}\n\n{table}\n");
        } else {
            let _ = writeln!(out, "{title}");
            let _ = writeln!(out, "{table}");
        }
        let under = format!(
            "{}\n{}",
            summary_line(summary, &Story::of_bucket(result, summary).knee_words()),
            render_bucket(result, summary)
        );
        out.push_str(&if style == Style::Markdown {
            as_list(&under)
        } else {
            under
        });
        out.push('\n');
    }
    out.push_str(&render_size_limits(result));
    out.push_str(&render_comparisons(result));
    if result.truncated {
        let _ = writeln!(
            out,
            "truncated: {} configuration(s) skipped ({})",
            result.skipped.len(),
            result.skipped.first().map(|s| s.reason.as_str()).unwrap_or("")
        );
    }
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
        let _ = writeln!(
            out,
            "bandwidth ceiling: {:.1} MiB/s (source: {}{bound})",
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

/// One row per configuration of a bucket (and memory size: a memory sweep's document
/// has a memory column, and a table per bucket and size).
fn bucket_table(result: &SweepResult, summary: &BucketSummary, style: Style) -> comfy_table::Table {
    let sized = result.run_kind() == RunKind::MemorySweep;
    let clients = result.several_clients();
    let mut header = if sized { vec!["memory MB"] } else { Vec::new() };
    if clients {
        header.push("client");
    }
    header.extend([
        "workers",
        "rep",
        "wall ms",
        "objects/s",
        "MiB/s",
        "ttfb p50 ms",
        "ttfb p99 ms",
        "pool wait p50 ms",
        "cpu ms/GET",
        "conns",
        "tls p50 ms",
        "sessions",
        "in flight",
        "errors",
        "wire MiB/s",
        "verdict",
    ]);
    let rows: Vec<&ConfigResult> = result.rows_for(summary).collect();
    let listed = rows
        .iter()
        .any(|r| matches!(r.axes.object_size_bytes, Some(crate::model::ObjectSize::Spread(_))));
    if listed {
        header.extend(["bytes read", "object bytes min/p50/p99/max"]);
    }
    let mut table = style.table(header);
    for r in rows {
        let mut cells = match (sized, r.axes.memory_mb) {
            (true, Some(mb)) if r.emulated => vec![format!("{mb}*")],
            (true, Some(mb)) => vec![mb.to_string()],
            (true, None) => vec!["-".to_string()],
            (false, _) => Vec::new(),
        };
        if clients {
            cells.push(r.axes.s3_client.name().to_string());
        }
        cells.extend(row_cells(r, &result.not_measured));
        if listed {
            cells.extend(size_cells(r));
        }
        table.add_row(cells);
    }
    align_right(&mut table, 0..14 + usize::from(sized) + usize::from(clients));
    table
}

/// The cells of one row, from `workers` to `verdict`; `-` for a field the client that
/// wrote the result could not measure (`not_measured`, e.g. the boto3 baseline's).
fn row_cells(r: &ConfigResult, not_measured: &[Unmeasured]) -> [String; 16] {
    let known = |field: Unmeasured, cell: String| {
        if not_measured.contains(&field) {
            "-".to_string()
        } else {
            cell
        }
    };
    [
        r.workers.to_string(),
        r.repetition.to_string(),
        format!("{:.0}", r.wall_ms),
        format!("{:.0}", r.objects_per_s),
        format!("{:.1}", r.mib_per_s),
        known(Unmeasured::TtfbMs, format!("{:.2}", r.ttfb_ms.p50)),
        known(Unmeasured::TtfbMs, format!("{:.2}", r.ttfb_ms.p99)),
        known(Unmeasured::PoolWaitMs, format!("{:.2}", r.pool_wait_ms.p50)),
        format!("{:.3}", r.cpu_ms_per_get),
        known(
            Unmeasured::ConnectionsOpened,
            cold_total(r, |b| b.connections_opened).to_string(),
        ),
        known(
            Unmeasured::TlsHandshakes,
            tls_p50(r).map_or("-".into(), |ms| format!("{ms:.2}")),
        ),
        known(
            Unmeasured::SessionRequests,
            cold_total(r, |b| b.session_requests).to_string(),
        ),
        r.client
            .as_ref()
            .map_or("-".into(), |c| format!("{:.1}", c.mean_in_flight)),
        r.errors.short(),
        wire_cell(r),
        r.diagnosis.as_ref().map_or("-", |d| d.verdict.name()).to_string(),
    ]
}

/// A listed row's bytes read and the sizes of its objects (`varies` when they differ).
fn size_cells(r: &ConfigResult) -> [String; 2] {
    let sizes = r.axes.object_size_bytes.map(|s| s.spread()).map_or("-".into(), |s| {
        let varies = if s.varies() { " (varies)" } else { "" };
        format!("{}/{}/{}/{}{varies}", s.min, s.p50, s.p99, s.max)
    });
    [r.bytes.to_string(), sizes]
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

/// `, client lean` after a bucket's name when several clients ran; nothing otherwise.
fn client_title(result: &SweepResult, summary: &BucketSummary) -> String {
    if result.several_clients() {
        format!(", client {}", summary.axes.s3_client)
    } else {
        String::new()
    }
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
mod tests {
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
}

//! The result tables: one per bucket (workers, wall time, rates, first byte, pool wait,
//! CPU per GET, connections, requests in flight, errors, verdict), with the summary and
//! diagnosis lines under each, for the terminal or as Markdown.

use std::fmt::Write as _;

use crate::model::SweepResult;

use super::diagnosis::{render_bucket, render_comparisons};
use super::{align_right, Style};

/// The tables of a result: one per bucket with the lines under it (summary and
/// diagnosis), then the bucket comparisons.
pub fn render_tables(result: &SweepResult, style: Style) -> String {
    let mut out = String::new();
    for summary in &result.summary {
        let mut table = style.table(vec![
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
            "in flight",
            "errors",
            "verdict",
        ]);
        for r in result.rows_of(&summary.bucket) {
            table.add_row(vec![
                r.workers.to_string(),
                r.repetition.to_string(),
                format!("{:.0}", r.wall_ms),
                format!("{:.0}", r.objects_per_s),
                format!("{:.1}", r.mib_per_s),
                format!("{:.2}", r.ttfb_ms.p50),
                format!("{:.2}", r.ttfb_ms.p99),
                format!("{:.2}", r.pool_wait_ms.p50),
                format!("{:.3}", r.cpu_ms_per_get),
                r.connections_opened.to_string(),
                r.client
                    .as_ref()
                    .map_or("-".into(), |c| format!("{:.1}", c.mean_in_flight)),
                r.errors.short(),
                r.diagnosis.as_ref().map_or("-", |d| d.verdict.name()).to_string(),
            ]);
        }
        align_right(&mut table, 0..11);
        if style == Style::Markdown {
            let _ = writeln!(out, "### bucket {}\n\n{table}\n", summary.bucket);
        } else {
            let _ = writeln!(out, "bucket {}", summary.bucket);
            let _ = writeln!(out, "{table}");
        }
        let _ = write!(
            out,
            "best: {} workers, {:.0} ms ({:.0} objects/s)",
            summary.best_workers, summary.best_wall_ms, summary.best_objects_per_s
        );
        if let (Some(one), Some(speedup)) = (summary.one_worker_wall_ms, summary.speedup_over_one_worker) {
            let _ = write!(out, "; 1 worker: {one:.0} ms, speedup {speedup:.1}x");
        }
        if let Some(k) = summary.knee_workers {
            let _ = write!(out, "; knee at {k} workers");
        }
        if summary.errors_total > 0 {
            let _ = write!(out, "; {} failed requests", summary.errors_total);
        }
        out.push('\n');
        out.push_str(&render_bucket(result, &summary.bucket));
        out.push('\n');
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;

    #[test]
    fn tables_name_every_bucket() {
        let results = vec![row("a-bucket", 1, 1, 1000.0, 0), row("b-bucket", 1, 1, 500.0, 2)];
        let mut result = crate::analysis::summarized(results);
        result.environment.runner = "cli".into();
        let text = render_tables(&result, Style::Terminal);
        assert!(text.contains("bucket a-bucket"));
        assert!(text.contains("bucket b-bucket"));
        assert!(text.contains("not_found=2"));
        let md = render_tables(&result, Style::Markdown);
        assert!(md.contains("### bucket a-bucket\n\n| workers | rep |"), "{md}");
        assert!(md.contains("|---"), "{md}");
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["schema"], "s3sweep.result/v1");
        assert!(json["results"][0]["ttfb_ms"]["p99"].is_number());
        let back: SweepResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, result);
    }
}

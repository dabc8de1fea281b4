//! The diagnosis in words: the verdict runs of a bucket, the explanation of its first,
//! best and largest configurations with their notes, the model fit and predictions,
//! the recommendation, and the bucket-vs-bucket lines.

use std::fmt::Write as _;

use crate::analysis::forecast::Forecast;
use crate::analysis::story::Story;
use crate::model::{BucketSummary, ConfigResult, ModelFit, Prediction, SweepResult, Verdict, WorkerVerdict};

/// Compact verdict runs: `1-4 latency, 8-256 client_cpu`.
fn verdict_runs(verdicts: &[WorkerVerdict]) -> String {
    let mut runs: Vec<(u32, u32, Verdict)> = Vec::new();
    for &WorkerVerdict { workers: w, verdict: v } in verdicts {
        match runs.last_mut() {
            Some(last) if last.2 == v => last.1 = w,
            _ => runs.push((w, w, v)),
        }
    }
    runs.iter()
        .map(|(a, b, v)| {
            if a == b {
                format!("{a} {}", v.name())
            } else {
                format!("{a}-{b} {}", v.name())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The size axis's notes, one line per bucket: where the binding limit changes with
/// the object size. Nothing without a size axis.
pub(crate) fn render_size_limits(result: &SweepResult) -> String {
    let mut out = String::new();
    for n in result.analysis.iter().flat_map(|a| &a.size_limits) {
        let _ = writeln!(out, "bucket {}{}: {}", n.bucket, client_of(result, n), n.note);
    }
    out
}

/// ` (client lean, hedge p95)` after a size note's bucket: the axes the run names but
/// the object size (the note reads across sizes).
pub(crate) fn client_of(result: &SweepResult, n: &crate::model::SizeLimits) -> String {
    n.axes.label(result.named_axes().without("object bytes"))
}

/// The worker counts whose rows are explained under a table: the first, the best and
/// the last, each once, in that order.
fn shown_counts(rows: &[&ConfigResult], best: u32) -> Vec<u32> {
    let mut shown: Vec<u32> = Vec::new();
    for w in [
        rows.first().map(|r| r.workers),
        Some(best),
        rows.last().map(|r| r.workers),
    ]
    .into_iter()
    .flatten()
    {
        if !shown.contains(&w) && rows.iter().any(|r| r.workers == w) {
            shown.push(w);
        }
    }
    shown
}

/// The lines printed under one bucket's table.
pub(crate) fn render_bucket(result: &SweepResult, summary: &BucketSummary) -> String {
    let mut out = String::new();
    let bucket = &summary.bucket;
    let Some(analysis) = result
        .analysis
        .as_ref()
        .and_then(|a| a.buckets.iter().find(|b| &b.bucket == bucket && b.axes == summary.axes))
    else {
        return out;
    };
    let _ = writeln!(out, "verdicts: {}", verdict_runs(&analysis.verdicts));
    // The explanation of the best configuration and of the largest worker count.
    let rows: Vec<&ConfigResult> = result.rows_for(summary).collect();
    let shown = shown_counts(&rows, summary.best_workers);
    let row_at = |w: u32| rows.iter().find(|r| r.workers == w);
    // A note said under more than one of the rows shown: once, after them, naming them.
    let notes_of = |w: u32| {
        row_at(w)
            .and_then(|r| r.diagnosis.as_ref())
            .map_or(&[][..], |d| &d.notes[..])
    };
    let shared = |note: &String| shown.iter().filter(|&&w| notes_of(w).contains(note)).count() > 1;
    for &w in &shown {
        let Some(row) = row_at(w) else { continue };
        if let Some(d) = &row.diagnosis {
            let _ = writeln!(out, "  {w} workers, {}: {}", d.verdict.name(), d.explanation);
            for note in d.notes.iter().filter(|n| !shared(n)) {
                let _ = writeln!(out, "    note: {note}");
            }
        }
        if let Some(split) = timing_split(row) {
            let _ = writeln!(out, "    {split}");
        }
    }
    let mut said: Vec<&String> = Vec::new();
    for note in shown.iter().flat_map(|&w| notes_of(w)).filter(|n| shared(n)) {
        if !said.contains(&note) {
            said.push(note);
            let at: Vec<String> = shown
                .iter()
                .filter(|&&w| notes_of(w).contains(note))
                .map(u32::to_string)
                .collect();
            let _ = writeln!(out, "  note at {} workers: {note}", at.join(", "));
        }
    }
    let story = Story::of_bucket(result, summary);
    if let Some(f) = &analysis.fit {
        let _ = write!(out, "model: R = {:.2} ms per request", f.latency_ms_per_request);
        if let Some(c) = f.client_cpu_ms_per_request {
            let _ = write!(
                out,
                ", client CPU c = {c:.3} ms per GET on P = {} core(s) (ceiling {:.0} objects/s)",
                // A fraction under a quota or on a small Lambda: 0.25, not 0.
                format!("{:.2}", f.client_cores)
                    .trim_end_matches('0')
                    .trim_end_matches('.'),
                f.client_cpu_ceiling_objects_per_s.unwrap_or(0.0)
            );
        }
        match &story.model_plateau {
            Some(words) => {
                let _ = write!(out, "; {words}");
            }
            None => out.push_str("; no plateau yet"),
        }
        let _ = writeln!(out, " ({})", model_basis(f));
        if let Some(forecast) = &story.forecast {
            let _ = writeln!(out, "predicted: {}", forecast_words(forecast, f.rough));
        }
    }
    let _ = writeln!(out, "recommended: {}", story.recommendation);
    out
}

/// The predictions line: those that agree with the verdict, then why the others are
/// not shown; marked rough when the model's basis is thin.
pub(crate) fn forecast_words(forecast: &Forecast, rough: bool) -> String {
    let preds: Vec<String> = forecast.shown.iter().map(prediction_words).collect();
    let mut line = preds.join("; ");
    if !preds.is_empty() && rough {
        line.push_str(" (rough: the model's basis above is thin)");
    }
    match (&forecast.withheld, line.is_empty()) {
        (Some(why), true) => line = why.clone(),
        (Some(why), false) => {
            let _ = write!(line, "; {why}");
        }
        (None, true) => line = "none".into(),
        (None, false) => {}
    }
    line
}

/// How far to trust the model: its fit error over the counts fitted, and its error on
/// the counts it did not see when fitted on the first ones.
pub(crate) fn model_basis(f: &ModelFit) -> String {
    let mut out = format!("fit error {:.0}%", 100.0 * f.fit_rms_log_error);
    if f.points_fitted > 0 {
        let _ = write!(out, " over {} worker counts", f.points_fitted);
    }
    match &f.held_out {
        Some(h) => {
            let _ = write!(
                out,
                "; fitted on the first {} only, it missed the other {} by up to {:.0}%",
                h.points_fitted,
                h.points_predicted,
                100.0 * h.error_share
            );
        }
        None if f.points_fitted > 0 => out.push_str("; too few counts to check it on counts it did not see"),
        None => {}
    }
    if f.rough {
        out.push_str(": rough");
    }
    out
}

/// One prediction in words; at a measured count, the model's figure beside the
/// measured one (never "as measured": a result written before says "model at").
pub(crate) fn prediction_words(p: &Prediction) -> String {
    if let Some(rest) = p.scenario.strip_prefix("as measured, ") {
        return format!(
            "model at {rest}: {:.0} objects/s ({}), the model's figure, not the measurement",
            p.objects_per_s, p.limit
        );
    }
    match p.measured_objects_per_s {
        Some(m) => format!(
            "{}: {:.0} objects/s ({}) against {m:.0} measured ({:+.0}%)",
            p.scenario,
            p.objects_per_s,
            p.limit,
            100.0 * (p.objects_per_s / m.max(1e-9) - 1.0)
        ),
        None => format!("{}: {:.0} objects/s ({})", p.scenario, p.objects_per_s, p.limit),
    }
}

/// Where a GET's time went, medians of the timed requests: the client's preparation,
/// the wait for a connection inside the HTTP client, first byte at the wire, the
/// body, and the whole GET; connects and retries when there were any. `None` for rows
/// without a breakdown (merged fan-out rows, older results).
pub(crate) fn timing_split(row: &ConfigResult) -> Option<String> {
    let b = row.breakdown.as_ref()?;
    let mut line = format!(
        "per GET, p50 ms: client prep {:.3}, HTTP pool wait {:.3}, first byte at the wire {:.2}, body {:.2}; whole GET {:.2}",
        b.client_prep_ms.p50, b.http_pool_wait_ms.p50, row.ttfb_ms.p50, b.steady_body_ms.p50, row.ttlb_ms.p50
    );
    if b.connections_opened > 0 {
        let _ = write!(
            line,
            "; {} connects (TCP {:.2}, TLS {:.2})",
            b.connections_opened, b.tcp_connect_ms.p50, b.tls_handshake_ms.p50
        );
    }
    if row.retries > 0 {
        let _ = write!(
            line,
            "; {} retries ({}), backoff {:.0} ms in all",
            row.retries,
            row.retries_by_cause.short(),
            b.backoff_ms_total
        );
    }
    Some(line)
}

/// The bucket-vs-bucket lines.
pub(crate) fn render_comparisons(result: &SweepResult) -> String {
    let mut out = String::new();
    if let Some(a) = &result.analysis {
        for c in &a.comparisons {
            let at = c.axes.label(result.named_axes());
            let _ = writeln!(out, "{} vs {}{at}: {}", c.faster_bucket, c.slower_bucket, c.explanation);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timing_split_names_each_part() {
        let mut r = crate::model::test_rows::row("b-1", 4, 1, 100.0, 0);
        assert_eq!(timing_split(&r), None);
        let mut b = crate::model::Breakdown::default();
        b.client_prep_ms.p50 = 0.125;
        b.http_pool_wait_ms.p50 = 0.031;
        b.steady_body_ms.p50 = 0.4;
        b.backoff_ms_total = 75.0;
        r.breakdown = Some(b);
        r.ttfb_ms.p50 = 5.8;
        r.ttlb_ms.p50 = 6.4;
        r.retries = 2;
        r.retries_by_cause.throttled = 2;
        let line = timing_split(&r).unwrap();
        assert_eq!(
            line,
            "per GET, p50 ms: client prep 0.125, HTTP pool wait 0.031, first byte at the wire 5.80, body 0.40; \
             whole GET 6.40; 2 retries (throttled=2), backoff 75 ms in all"
        );
    }

    #[test]
    fn no_prediction_reads_as_measured() {
        let p = |scenario: &str, measured: Option<f64>| Prediction {
            scenario: scenario.into(),
            workers: 64,
            client_cores: 2.0,
            objects_per_s: 8696.0,
            wall_ms: 115.0,
            limit: crate::model::Limit::ClientCpu,
            measured_objects_per_s: measured,
        };
        assert_eq!(
            prediction_words(&p("model at 64 workers", Some(8401.0))),
            "model at 64 workers: 8696 objects/s (client_cpu) against 8401 measured (+4%)"
        );
        // A result written before this labelled the model's figure "as measured".
        let old = prediction_words(&p("as measured, 64 workers", None));
        assert!(!old.contains("as measured"), "{old}");
        assert!(old.starts_with("model at 64 workers: 8696"), "{old}");
    }

    #[test]
    fn verdict_runs_are_compact() {
        let v: Vec<WorkerVerdict> = [
            (1, Verdict::Latency),
            (2, Verdict::Latency),
            (8, Verdict::ClientCpu),
            (16, Verdict::ClientCpu),
            (32, Verdict::Pool),
        ]
        .iter()
        .map(|&(workers, verdict)| WorkerVerdict { workers, verdict })
        .collect();
        assert_eq!(verdict_runs(&v), "1-2 latency, 8-16 client_cpu, 32 pool");
    }

    #[test]
    fn a_note_of_several_rows_is_said_once_naming_them() {
        let mut result = crate::model::test_rows::result(vec![
            crate::model::test_rows::row("b1", 1, 1, 1000.0, 0),
            crate::model::test_rows::row("b1", 8, 1, 200.0, 0),
            crate::model::test_rows::row("b1", 64, 1, 150.0, 0),
        ]);
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
        let shared = "no connection opened in this row: the rows share the connection pool".to_string();
        for r in &mut result.results {
            if let Some(d) = r.diagnosis.as_mut() {
                d.notes.push(shared.clone());
            }
        }
        result.results[0]
            .diagnosis
            .as_mut()
            .unwrap()
            .notes
            .push("its own note".into());
        let text = render_bucket(&result, &result.summary[0]);
        assert_eq!(text.matches(shared.as_str()).count(), 1, "{text}");
        assert!(
            text.contains(&format!("note at 1, 64 workers: {shared}"))
                || text.contains(&format!("note at 1, 8, 64 workers: {shared}")),
            "{text}"
        );
        assert!(text.contains("    note: its own note"), "{text}");
    }
}

//! The diagnosis in words: the verdict runs of a bucket, the explanation of its first,
//! best and largest configurations with their notes, the model fit and predictions,
//! the recommendation, and the bucket-vs-bucket lines.

use std::fmt::Write as _;

use crate::model::{ConfigResult, SweepResult, Verdict, WorkerVerdict};

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

/// The lines printed under one bucket's table.
pub fn render_bucket(result: &SweepResult, bucket: &str, memory_mb: Option<u32>) -> String {
    let mut out = String::new();
    let Some(analysis) = result.analysis.as_ref().and_then(|a| {
        a.buckets
            .iter()
            .find(|b| b.bucket == bucket && b.memory_mb == memory_mb)
    }) else {
        return out;
    };
    let _ = writeln!(out, "verdicts: {}", verdict_runs(&analysis.verdicts));
    // The explanation of the best configuration and of the largest worker count.
    let rows: Vec<&ConfigResult> = result.rows_at(bucket, memory_mb).collect();
    let best = result
        .summary
        .iter()
        .find(|s| s.bucket == bucket && s.memory_mb == memory_mb)
        .map(|s| s.best_workers);
    let mut shown = Vec::new();
    for w in [rows.first().map(|r| r.workers), best, rows.last().map(|r| r.workers)]
        .into_iter()
        .flatten()
    {
        if shown.contains(&w) {
            continue;
        }
        shown.push(w);
        if let Some(d) = rows.iter().find(|r| r.workers == w).and_then(|r| r.diagnosis.as_ref()) {
            let _ = writeln!(out, "  {w} workers, {}: {}", d.verdict.name(), d.explanation);
            for note in &d.notes {
                let _ = writeln!(out, "    note: {note}");
            }
        }
    }
    if let Some(f) = &analysis.fit {
        let _ = write!(out, "model: R = {:.2} ms per request", f.latency_ms_per_request);
        if let Some(c) = f.client_cpu_ms_per_request {
            let _ = write!(
                out,
                ", client CPU c = {c:.3} ms per GET on P = {:.0} core(s) (ceiling {:.0} objects/s)",
                f.client_cores,
                f.client_cpu_ceiling_objects_per_s.unwrap_or(0.0)
            );
        }
        match f.plateau_objects_per_s {
            Some(k) => {
                let _ = write!(
                    out,
                    "; plateau {k:.0} objects/s ({:.3} ms per request), reached with ~{:.0} in flight",
                    f.plateau_ms_per_request.unwrap_or(0.0),
                    f.workers_to_plateau.unwrap_or(0.0)
                );
            }
            None => out.push_str("; no plateau yet"),
        }
        let _ = writeln!(out, " (fit error {:.0}%)", 100.0 * f.fit_rms_log_error);
        let preds: Vec<String> = analysis
            .predictions
            .iter()
            .map(|p| format!("{}: {:.0} objects/s ({})", p.scenario, p.objects_per_s, p.limit))
            .collect();
        let _ = writeln!(out, "predicted: {}", preds.join("; "));
    }
    let _ = writeln!(out, "recommended: {}", analysis.recommendation);
    out
}

/// The bucket-vs-bucket lines.
pub fn render_comparisons(result: &SweepResult) -> String {
    let mut out = String::new();
    if let Some(a) = &result.analysis {
        for c in &a.comparisons {
            let at = c.memory_mb.map(|m| format!(" at {m} MB")).unwrap_or_default();
            let _ = writeln!(out, "{} vs {}{at}: {}", c.faster_bucket, c.slower_bucket, c.explanation);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

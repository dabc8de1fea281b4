//! The rules of contradiction: what no two printed lines of one result may say
//! together, and the figures a line quotes that must equal the document's. Each rule
//! is a small function over what was printed ([`Printed`]): the lines under a
//! bucket's table, its HTML summary row, the plot's subtitle and the cost lines, beside
//! the result they came from. docs/diagnosis.md ("The rules of contradiction") lists
//! them in the same order (a test keeps the two equal). The rules read the text: they
//! re-derive nothing through the code that printed it.

use crate::analysis::cost::CostReport;
use crate::model::stats::median;
use crate::model::{BucketSummary, SweepResult, Verdict};

/// What was printed for one bucket (and axes) of a result.
pub(crate) struct Printed<'a> {
    pub(crate) result: &'a SweepResult,
    pub(crate) summary: &'a BucketSummary,
    /// The lines under its table, from `best:` to `recommended:`.
    pub(crate) lines: Vec<String>,
    /// Its row of the HTML summary, cell by cell.
    pub(crate) summary_cells: Vec<String>,
    /// Its part of the plot's "why it flattens" line.
    pub(crate) subtitle: String,
    /// The bucket-vs-bucket lines (every bucket's).
    pub(crate) comparisons: String,
    /// The cost lines and the report they print.
    pub(crate) cost_text: String,
    pub(crate) cost: &'a CostReport,
}

impl Printed<'_> {
    /// The line starting with `prefix`.
    fn line(&self, prefix: &str) -> Option<&str> {
        self.lines.iter().find_map(|l| l.strip_prefix(prefix))
    }

    /// Every line, the summary's cells and the subtitle.
    fn all_text(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .chain(&self.summary_cells)
            .map(String::as_str)
            .chain([self.subtitle.as_str()])
    }

    /// The verdict of the row at `w` workers (first repetition), from the document.
    fn verdict_at(&self, w: u32) -> Option<Verdict> {
        self.result
            .rows_for(self.summary)
            .find(|r| r.workers == w)
            .and_then(|r| r.diagnosis.as_ref())
            .map(|d| d.verdict)
    }

    /// The verdict at the largest count, from the `verdicts:` line.
    fn printed_binding(&self) -> Option<(u32, Verdict)> {
        let runs = self.line("verdicts: ")?;
        let last = runs.rsplit(", ").next()?;
        let (range, name) = last.split_once(' ')?;
        let w = range.rsplit('-').next()?.parse().ok()?;
        Some((w, Verdict::from_name(name)?))
    }

    /// The best objects/s of the `best:` line.
    fn printed_best(&self) -> Option<f64> {
        number_after(self.line("best: ")?, "ms (")
    }
}

/// The number right after the first `marker` in `text`.
pub(crate) fn number_after(text: &str, marker: &str) -> Option<f64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// Every number right after each `marker` in `text`.
fn numbers_after(text: &str, marker: &str) -> Vec<f64> {
    text.match_indices(marker)
        .filter_map(|(i, _)| number_after(&text[i..], marker))
        .collect()
}

/// One rule: its name (as the docs' table lists it) and its check, which returns what
/// it found wrong.
pub(crate) struct Contradiction {
    pub(crate) name: &'static str,
    pub(crate) check: fn(&Printed) -> Vec<String>,
}

/// The rules of contradiction, in the docs' order.
pub(crate) const CONTRADICTIONS: &[Contradiction] = &[
    Contradiction {
        name: "rising_where_bound",
        check: rising_where_bound,
    },
    Contradiction {
        name: "largest_that_is_not",
        check: largest_that_is_not,
    },
    Contradiction {
        name: "knee_where_still_rising",
        check: knee_where_still_rising,
    },
    Contradiction {
        name: "advice_the_verdict_rules_out",
        check: advice_the_verdict_rules_out,
    },
    Contradiction {
        name: "prediction_against_the_verdict",
        check: prediction_against_the_verdict,
    },
    Contradiction {
        name: "prediction_from_a_poor_model",
        check: prediction_from_a_poor_model,
    },
    Contradiction {
        name: "plateau_under_the_measured",
        check: plateau_under_the_measured,
    },
    Contradiction {
        name: "summary_tells_another_story",
        check: summary_tells_another_story,
    },
    Contradiction {
        name: "subtitle_tells_another_story",
        check: subtitle_tells_another_story,
    },
    Contradiction {
        name: "cheapest_not_cheapest_in_all",
        check: cheapest_not_cheapest_in_all,
    },
    Contradiction {
        name: "judged_from_one_repetition",
        check: judged_from_one_repetition,
    },
    Contradiction {
        name: "comparison_against_the_story",
        check: comparison_against_the_story,
    },
    Contradiction {
        name: "above_a_ceiling",
        check: above_a_ceiling,
    },
    Contradiction {
        name: "figures_differ_from_the_document",
        check: figures_differ_from_the_document,
    },
];

/// `rising_where_bound`: "rising" and "binds" in one line, or "still rising at N"
/// where N's verdict is not `latency`.
fn rising_where_bound(p: &Printed) -> Vec<String> {
    let mut out = Vec::new();
    for line in p.all_text() {
        if line.contains("rising") && (line.contains(" binds") || line.contains(" bound")) {
            out.push(format!("rising and bound in one line: {line}"));
        }
        for n in numbers_after(line, "rising at ") {
            let v = p.verdict_at(n as u32);
            if v != Some(Verdict::Latency) {
                out.push(format!(
                    "still rising at {n} workers, where the verdict is {v:?}: {line}"
                ));
            }
        }
    }
    out
}

/// `largest_that_is_not`: "N workers, the largest tried" where a larger count was
/// tried.
fn largest_that_is_not(p: &Printed) -> Vec<String> {
    let largest = p.result.rows_for(p.summary).map(|r| r.workers).max().unwrap_or(0);
    let mut out = Vec::new();
    for line in p.all_text() {
        for (i, _) in line.match_indices(" workers, the largest tried") {
            let head = &line[..i];
            let n = head
                .rsplit(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u32>().ok());
            if n.is_some_and(|n| n != largest) {
                out.push(format!("{n:?} called the largest tried, of {largest}: {line}"));
            }
        }
    }
    out
}

/// `knee_where_still_rising`: "knee at K" where no larger count was tried without
/// errors, or one gained 10% or more over K; and the document's knee is K.
fn knee_where_still_rising(p: &Printed) -> Vec<String> {
    let clean: Vec<(u32, f64)> = {
        let rows: Vec<_> = p.result.rows_for(p.summary).collect();
        let mut ws: Vec<u32> = rows.iter().map(|r| r.workers).collect();
        ws.sort_unstable();
        ws.dedup();
        ws.into_iter()
            .filter(|w| rows.iter().filter(|r| r.workers == *w).all(|r| r.errors.total == 0))
            .filter_map(|w| {
                let x = median(
                    rows.iter()
                        .filter(|r| r.workers == w)
                        .map(|r| r.objects_per_s)
                        .collect(),
                )?;
                Some((w, x))
            })
            .collect()
    };
    let mut out = Vec::new();
    for line in p.all_text() {
        for k in numbers_after(line, "knee at ") {
            let k = k as u32;
            let Some(at_k) = clean.iter().find(|c| c.0 == k).map(|c| c.1) else {
                out.push(format!("knee at {k}, a count not measured clean: {line}"));
                continue;
            };
            let after: Vec<f64> = clean.iter().filter(|c| c.0 > k).map(|c| c.1).collect();
            if after.is_empty() || after.iter().any(|x| *x > at_k / 0.9 + 1e-6) {
                out.push(format!("knee at {k} but the curve did not flatten there: {line}"));
            }
            if p.summary.knee_workers != Some(k) {
                out.push(format!(
                    "knee at {k} against the document's {:?}",
                    p.summary.knee_workers
                ));
            }
        }
    }
    out
}

/// Advice in words, and the verdicts whose explanation rules it out.
const ADVICE: &[(&str, &[Verdict])] = &[
    (
        "try more workers",
        &[
            Verdict::Plateau,
            Verdict::ClientCpu,
            Verdict::MachineCpu,
            Verdict::Bandwidth,
            Verdict::Pool,
            Verdict::Throttled,
            Verdict::Errors,
        ],
    ),
    (
        "more CPU (",
        &[Verdict::Latency, Verdict::Plateau, Verdict::Pool, Verdict::Bandwidth],
    ),
    ("raise pool_connections", &[Verdict::Latency, Verdict::Plateau]),
    ("spread keys", &[Verdict::Latency, Verdict::Plateau]),
];

/// `advice_the_verdict_rules_out`: the recommendation advises what the verdict at
/// the largest count says will not help.
fn advice_the_verdict_rules_out(p: &Printed) -> Vec<String> {
    let (Some(rec), Some((w, v))) = (p.line("recommended: "), p.printed_binding()) else {
        return Vec::new();
    };
    ADVICE
        .iter()
        .filter(|(words, ruled_out)| rec.contains(words) && ruled_out.contains(&v))
        .map(|(words, _)| format!("\"{words}\" where {} binds at {w}: {rec}", v.name()))
        .collect()
}

/// One printed prediction: its scenario, objects/s and limit.
fn predictions(line: &str) -> Vec<(String, f64, String)> {
    line.split("; ")
        .filter_map(|part| {
            let (scenario, rest) = part.split_once(": ")?;
            let x = number_after(rest, "")?;
            let limit = rest.split_once("objects/s (")?.1.split(')').next()?.to_string();
            Some((scenario.to_string(), x, limit))
        })
        .collect()
}

/// `prediction_against_the_verdict`: a printed prediction for more workers or more
/// CPU that says what the verdict at the largest count rules out.
fn prediction_against_the_verdict(p: &Printed) -> Vec<String> {
    let (Some(line), Some((w, v)), Some(best)) = (p.line("predicted: "), p.printed_binding(), p.printed_best()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (scenario, x, limit) in predictions(line) {
        let gains = x >= 1.1 * best;
        let more_cpu = scenario.contains("vCPUs");
        let wrong = if scenario.starts_with("model at") {
            false
        } else {
            match v {
                Verdict::Latency => !more_cpu && !gains,
                Verdict::ClientCpu | Verdict::MachineCpu if more_cpu => !gains || limit == "plateau",
                Verdict::ClientCpu | Verdict::MachineCpu | Verdict::Bandwidth | Verdict::Plateau => gains,
                Verdict::Pool | Verdict::Throttled | Verdict::Errors => true,
            }
        };
        if wrong {
            out.push(format!(
                "{scenario}: {x:.0} objects/s ({limit}) against {} at {w} (best {best:.0})",
                v.name()
            ));
        }
    }
    out
}

/// `prediction_from_a_poor_model`: predictions printed from a model that missed the
/// counts it did not see (or, without that check, the counts it was fitted to) by more
/// than 25%.
fn prediction_from_a_poor_model(p: &Printed) -> Vec<String> {
    let (Some(model), Some(pred)) = (p.line("model: "), p.line("predicted: ")) else {
        return Vec::new();
    };
    let held_out = number_after(model, "by up to ");
    let fit = number_after(model, "(fit error ");
    match held_out.or(fit) {
        Some(e) if e > 25.0 && !pred.starts_with("none") => {
            vec![format!("the model missed by {e}% and still predicts: {pred}")]
        }
        _ => Vec::new(),
    }
}

/// `plateau_under_the_measured`: the model's "plateau K" under 90% of the best
/// measured, or under the best at all where the best line says the curve still rises.
fn plateau_under_the_measured(p: &Printed) -> Vec<String> {
    let (Some(model), Some(best)) = (p.line("model: "), p.printed_best()) else {
        return Vec::new();
    };
    let rising = p.line("best: ").is_some_and(|b| b.contains("still rising"));
    let floor = if rising { 0.995 } else { 0.9 };
    match number_after(model, "; plateau ") {
        Some(k) if k < floor * best => vec![format!("plateau {k} under the {best} measured: {model}")],
        _ => Vec::new(),
    }
}

/// `summary_tells_another_story`: the HTML summary's knee, verdict or recommendation
/// differs from the lines under the table.
fn summary_tells_another_story(p: &Printed) -> Vec<String> {
    let mut out = Vec::new();
    let cells = &p.summary_cells;
    if cells.len() < 8 {
        return vec![format!("a summary row of {} cells: {cells:?}", cells.len())];
    }
    let best = p.line("best: ").unwrap_or("");
    let knee = best
        .split("; ")
        .find(|s| s.starts_with("knee at ") || s.starts_with("no knee") || s.contains("rising"));
    let agrees = match knee {
        Some(k) => match k.strip_prefix("knee at ") {
            Some(workers) => cells[4] == workers,
            None => cells[4].contains(k),
        },
        None => cells[4].starts_with("none"),
    };
    if !agrees {
        out.push(format!("summary knee {:?} against {knee:?}", cells[4]));
    }
    if let Some((_, v)) = p.printed_binding() {
        if cells[5] != v.name() {
            out.push(format!("summary verdict {:?} against {}", cells[5], v.name()));
        }
    }
    if let Some(rec) = p.line("recommended: ") {
        if cells[6] != rec.replace('|', "/") {
            out.push(format!("summary recommends {:?} against {rec:?}", cells[6]));
        }
    }
    out
}

/// `subtitle_tells_another_story`: the plot's subtitle names a knee the lines do not,
/// or misses the one they name.
fn subtitle_tells_another_story(p: &Printed) -> Vec<String> {
    let best = p.line("best: ").unwrap_or("");
    let knee = number_after(best, "knee at ");
    let sub = knee.map(|k| format!("knee at {k} workers"));
    match sub {
        Some(s) if !p.subtitle.contains(&s) => vec![format!("the subtitle lacks {s:?}: {}", p.subtitle)],
        None if p.subtitle.contains("knee at ") => {
            vec![format!("a knee in the subtitle only: {}", p.subtitle)]
        }
        _ => Vec::new(),
    }
}

/// `cheapest_not_cheapest_in_all`: the configuration called cheapest costs more in
/// all than another without errors, or is ranked per GET sent.
fn cheapest_not_cheapest_in_all(p: &Printed) -> Vec<String> {
    let Some(c) = &p.cost.cheapest else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if !p.cost_text.contains("per 1,000 objects read") {
        out.push(format!("the cheapest is not priced per object read: {}", p.cost_text));
    }
    let total_of = |b: &str, w: u32, hedge| {
        median(
            p.cost
                .rows
                .iter()
                .filter(|r| r.bucket == b && r.workers == w && r.axes.hedge == hedge)
                .map(|r| r.total_usd)
                .collect(),
        )
    };
    let mine = total_of(&c.bucket, c.workers, c.axes.hedge).unwrap_or(f64::MAX);
    for r in p.result.results.iter().filter(|r| r.errors.total == 0) {
        if let Some(t) = total_of(&r.bucket, r.workers, r.axes.hedge).filter(|t| *t < mine * (1.0 - 1e-9)) {
            out.push(format!(
                "cheapest {} at {} ({}) costs {mine} in all, {} at {} ({}) {t}",
                c.bucket, c.workers, c.axes.hedge, r.bucket, r.workers, r.axes.hedge
            ));
        }
    }
    out.truncate(1);
    out
}

/// `judged_from_one_repetition`: a hedging note that calls a change under 25% worth
/// it or not from one repetition on a side.
fn judged_from_one_repetition(p: &Printed) -> Vec<String> {
    p.lines
        .iter()
        .filter(|l| l.contains("note: hedging at"))
        .filter(|l| l.contains(" 1 and ") || l.contains(" and 1 rows"))
        .filter(|l| l.contains("worth it"))
        .filter(|l| number_after(l, "wall time by ").is_some_and(|c| c < 25.0))
        .map(|l| format!("judged from one repetition: {l}"))
        .collect()
}

/// `comparison_against_the_story`: a bucket-vs-bucket line calling this bucket
/// "still latency-bound" (more workers would help) where its verdict at the largest
/// count is another.
fn comparison_against_the_story(p: &Printed) -> Vec<String> {
    let Some((w, v)) = p.printed_binding() else {
        return Vec::new();
    };
    p.comparisons
        .lines()
        .filter(|l| l.contains(&p.summary.bucket) && l.contains("still latency-bound"))
        .filter(|_| v != Verdict::Latency)
        .map(|l| format!("{l} where {} binds at {w}", v.name()))
        .collect()
}

/// `above_a_ceiling`: a row said to run above 100% of a ceiling (the ceiling is
/// revised instead).
fn above_a_ceiling(p: &Printed) -> Vec<String> {
    p.lines
        .iter()
        .filter(|l| l.contains("ceiling"))
        .filter(|l| {
            l.match_indices("% of the ").any(|(i, _)| {
                let head = &l[..i];
                let n = head.rsplit(|c: char| !(c.is_ascii_digit() || c == '.')).next();
                n.and_then(|n| n.parse::<f64>().ok()).is_some_and(|n| n > 100.0)
            })
        })
        .map(|l| format!("above a ceiling: {l}"))
        .collect()
}

/// `figures_differ_from_the_document`: a figure a line quotes (best, the verdict of
/// each count, the measured figure beside the model's, the cheapest's cost) differs
/// from the document's, rounded as printed.
fn figures_differ_from_the_document(p: &Printed) -> Vec<String> {
    let mut out = Vec::new();
    let s = p.summary;
    let best = format!(
        "{} workers, {:.0} ms ({:.0} objects/s)",
        s.best_workers, s.best_wall_ms, s.best_objects_per_s
    );
    if !p.line("best: ").is_some_and(|l| l.starts_with(&best)) {
        out.push(format!("best line {:?} against {best:?}", p.line("best: ")));
    }
    for line in &p.lines {
        let Some((head, _)) = line.trim_start().split_once(": ") else {
            continue;
        };
        if let Some((w, v)) = head.split_once(" workers, ") {
            if let (Ok(w), Some(v)) = (w.parse::<u32>(), Verdict::from_name(v)) {
                if p.verdict_at(w) != Some(v) {
                    out.push(format!("{line:?} against the row's {:?}", p.verdict_at(w)));
                }
            }
        }
    }
    if let Some(pred) = p.line("predicted: ") {
        for part in pred.split("; ").filter(|s| s.starts_with("model at ")) {
            let (Some(w), Some(m)) = (number_after(part, "model at "), number_after(part, "against ")) else {
                continue;
            };
            let rates = p
                .result
                .rows_for(s)
                .filter(|r| r.workers == w as u32 && r.errors.total == 0);
            let measured = median(rates.map(|r| r.objects_per_s).collect()).unwrap_or(f64::NAN);
            if format!("{measured:.0}") != format!("{m:.0}") {
                out.push(format!("{part:?}: measured {measured:.0}"));
            }
        }
    }
    if let Some(c) = &p.cost.cheapest {
        let quoted = format!(
            "{} per 1,000 objects read ({} in all)",
            super::super::cost::usd(c.per_1000_objects_usd),
            super::super::cost::usd(c.total_usd)
        );
        if !p.cost_text.contains(&quoted) {
            out.push(format!("the cost line does not quote {quoted:?}"));
        }
    }
    out
}

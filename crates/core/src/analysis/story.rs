//! One story per bucket: the shape of its curve (flattened at a knee, still rising at
//! the largest count tried, or best there while a limit binds), the verdict that binds
//! where the sweep stopped, the recommendation, the predictions the model may print
//! ([`super::forecast`]), the model's plateau in words and the plot's subtitle,
//! derived here and only here from the rows' verdicts and the fit. The lines under a
//! table, the HTML summary and the plot's subtitle all read a [`Story`]. The recommendation is the first of [`RULES`] that holds, an ordered list
//! of small functions; each says what it advises and at which row ([`Claim`]), and no
//! claim advises what that row's verdict rules out ([`rules_out`]). docs/diagnosis.md
//! lists the rules in the same order (a test keeps the two equal).

use crate::model::stats::median;
use crate::model::{BucketSummary, ConfigResult, ModelFit, Prediction, SweepResult, Verdict, WorkerVerdict};

use super::forecast::{forecast, plateau_credible, plateau_words, Forecast};
use super::summary::knee;

/// What a story line advises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Try more workers (and a pool at least as large).
    MoreWorkers,
    /// Stay at the recommended count: more only queue.
    StayAtKnee,
    /// Raise `pool_connections` to the worker count.
    LargerPool,
    /// More CPU for the client (a larger Lambda) or a cheaper client.
    MoreCpu,
    /// A machine without other load (the embedded server shares it in `local`).
    QuieterMachine,
    /// More network (a larger Lambda, or the work split over functions).
    WiderNetwork,
    /// Spread keys over prefixes, ramp up slowly.
    SpreadKeys,
    /// Fix the failed requests first.
    FixErrors,
    /// Look at what requests wait for beyond the client (the server, the network).
    LookPastTheClient,
}

/// What the verdict of a row rules out: the advice its own explanation says will not
/// help. A story line naming that row never gives it.
pub(crate) fn rules_out(verdict: Verdict, advice: Advice) -> bool {
    use Advice as A;
    match verdict {
        // "the client had CPU to spare": more CPU is not the lever.
        Verdict::Latency => matches!(advice, A::MoreCpu),
        // Client CPU, the pool, errors and throttling were checked and not the cause.
        Verdict::Plateau => matches!(
            advice,
            A::MoreWorkers | A::MoreCpu | A::LargerPool | A::FixErrors | A::SpreadKeys
        ),
        Verdict::ClientCpu | Verdict::MachineCpu | Verdict::Bandwidth | Verdict::Throttled | Verdict::Errors => {
            matches!(advice, A::MoreWorkers)
        }
        // More workers on the same pool only wait longer.
        Verdict::Pool => matches!(advice, A::MoreWorkers | A::MoreCpu),
    }
}

/// The lever of a verdict: what would move a row it binds.
pub(crate) fn lever(verdict: Verdict) -> Advice {
    match verdict {
        Verdict::Latency => Advice::MoreWorkers,
        Verdict::Plateau => Advice::LookPastTheClient,
        Verdict::ClientCpu => Advice::MoreCpu,
        Verdict::MachineCpu => Advice::QuieterMachine,
        Verdict::Bandwidth => Advice::WiderNetwork,
        Verdict::Pool => Advice::LargerPool,
        Verdict::Throttled => Advice::SpreadKeys,
        Verdict::Errors => Advice::FixErrors,
    }
}

/// The advice in words.
fn advice_words(advice: Advice) -> &'static str {
    match advice {
        Advice::MoreWorkers => "try more workers (and a pool at least as large)",
        Advice::StayAtKnee => "more workers only queue",
        Advice::LargerPool => "raise pool_connections to the worker count",
        Advice::MoreCpu => "more CPU (a larger Lambda) or a cheaper client will help, not more workers",
        Advice::QuieterMachine => {
            "a machine without other load will help (in `s3sweep local` the embedded server shares it), not more workers"
        }
        Advice::WiderNetwork => "more network will help (a larger Lambda, or the work split over functions), not more workers",
        Advice::SpreadKeys => "spread keys over prefixes and ramp up slowly, not more workers",
        Advice::FixErrors => "fix the failed requests first",
        Advice::LookPastTheClient => {
            "look at what requests wait for (the server, the network): client CPU, the pool, errors and throttling were checked"
        }
    }
}

/// A limit in the plot's subtitle.
fn limit_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Latency => "latency",
        Verdict::Plateau => "an unmeasured cause",
        Verdict::ClientCpu => "client CPU",
        Verdict::MachineCpu => "machine CPU",
        Verdict::Bandwidth => "bandwidth",
        Verdict::Pool => "connection pool",
        Verdict::Throttled => "throttling",
        Verdict::Errors => "errors",
    }
}

/// The shape of a bucket's curve over its worker counts without errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Every worker count had errors.
    NoCleanRows,
    /// The best (within 10%) is at the largest count without errors.
    StillRising { last: u32 },
    /// A larger count than the knee was tried and gained less than 10% over it.
    Flattened { knee: u32, last: u32 },
}

/// One advice of a story and the worker count whose row it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) workers: u32,
    pub(crate) advice: Advice,
}

/// A bucket's story.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Story {
    pub(crate) shape: Shape,
    /// The verdict at the largest worker count tried.
    pub(crate) binding: Option<WorkerVerdict>,
    pub(crate) recommended_workers: Option<u32>,
    /// The recommendation in words.
    pub(crate) recommendation: String,
    /// What the recommendation advises, row by row.
    pub(crate) claims: Vec<Claim>,
    /// The name of the rule that gave the recommendation.
    pub(crate) rule: &'static str,
    /// (workers, objects/s) of the best count without errors.
    pub(crate) best: Option<(u32, f64)>,
    /// The model's predictions that agree with the verdict, and why others are not
    /// shown; `None` without a fit.
    pub(crate) forecast: Option<Forecast>,
    /// The model line's plateau part (`None` without a fitted plateau).
    pub(crate) model_plateau: Option<String>,
}

/// What the story rules read.
pub(crate) struct Facts<'a> {
    shape: Shape,
    binding: Option<WorkerVerdict>,
    /// (workers, objects/s) of the best count without errors.
    best: Option<(u32, f64)>,
    fit: Option<&'a ModelFit>,
}

/// What a rule that holds tells.
struct Told {
    recommended_workers: Option<u32>,
    recommendation: String,
    claims: Vec<Claim>,
}

/// One story rule: its name (as docs/diagnosis.md lists it) and its check.
pub(crate) struct StoryRule {
    pub(crate) name: &'static str,
    check: fn(&Facts) -> Option<Told>,
}

/// The story rules, checked in this order; the first that holds gives the
/// recommendation (the last always holds).
pub(crate) const RULES: &[StoryRule] = &[
    StoryRule {
        name: "no_clean_rows",
        check: no_clean_rows,
    },
    StoryRule {
        name: "rising_but_bound",
        check: rising_but_bound,
    },
    StoryRule {
        name: "still_rising",
        check: still_rising,
    },
    StoryRule {
        name: "flattened",
        check: flattened,
    },
];

/// `no_clean_rows`: every worker count had errors.
fn no_clean_rows(f: &Facts) -> Option<Told> {
    (f.shape == Shape::NoCleanRows).then(|| Told {
        recommended_workers: None,
        recommendation: format!(
            "no configuration without errors: no recommendation; {}",
            advice_words(Advice::FixErrors)
        ),
        claims: f
            .binding
            .map(|b| Claim {
                workers: b.workers,
                advice: Advice::FixErrors,
            })
            .into_iter()
            .collect(),
    })
}

/// `rising_but_bound`: the best is at the largest count, but the verdict there rules
/// out more workers: its lever, not more workers. The line says the count was the
/// best, never that the curve was rising where a limit binds.
fn rising_but_bound(f: &Facts) -> Option<Told> {
    let Shape::StillRising { last } = f.shape else {
        return None;
    };
    let b = f.binding.filter(|b| rules_out(b.verdict, Advice::MoreWorkers))?;
    let advice = lever(b.verdict);
    // Failed configurations above it: the largest clean count, not the largest tried.
    let which = if b.workers > last {
        "the fastest without errors"
    } else {
        "the largest tried and the fastest"
    };
    Some(Told {
        recommended_workers: Some(last),
        recommendation: format!(
            "{last} workers, {which}; {} binds at {} workers, so {}",
            b.verdict.name(),
            b.workers,
            advice_words(advice)
        ),
        claims: vec![Claim {
            workers: b.workers,
            advice,
        }],
    })
}

/// `still_rising`: the curve still rose at its largest count, bound by latency there.
fn still_rising(f: &Facts) -> Option<Told> {
    let Shape::StillRising { last } = f.shape else {
        return None;
    };
    Some(Told {
        recommended_workers: Some(last),
        recommendation: format!(
            "{last} workers, the largest tried: the curve was still rising there, so {}",
            advice_words(Advice::MoreWorkers)
        ),
        claims: vec![Claim {
            workers: f.binding.map_or(last, |b| b.workers),
            advice: Advice::MoreWorkers,
        }],
    })
}

/// `flattened`: the knee, and past it the lever of what binds at the largest count.
fn flattened(f: &Facts) -> Option<Told> {
    let Shape::Flattened { knee, .. } = f.shape else {
        return None;
    };
    let mut text = format!("{knee} workers: the smallest count within 10% of the best");
    if let Some((w, x)) = f.best {
        text.push_str(&format!(" ({x:.0} objects/s at {w})"));
    }
    if let Some(fit) = f.fit.filter(|fit| plateau_credible(fit, f.best)) {
        text.push_str(&format!(
            "; the plateau needs about {:.0} requests in flight at {:.1} ms each",
            fit.workers_to_plateau.unwrap_or(0.0),
            fit.latency_ms_per_request
        ));
    }
    let mut claims = vec![Claim {
        workers: knee,
        advice: Advice::StayAtKnee,
    }];
    match f.binding.filter(|b| b.verdict != Verdict::Latency) {
        Some(b) => {
            let advice = lever(b.verdict);
            text.push_str(&format!(
                "; more workers only queue: past it {} binds at {} workers, so {}",
                b.verdict.name(),
                b.workers,
                advice_words(advice)
            ));
            claims.push(Claim {
                workers: b.workers,
                advice,
            });
        }
        None => text.push_str("; more workers gained less than 10% past it"),
    }
    Some(Told {
        recommended_workers: Some(knee),
        recommendation: text,
        claims,
    })
}

impl Story {
    /// The story of a curve: `points` are (workers, objects/s) medians of the worker
    /// counts without errors, `verdicts` every count's verdict.
    /// `predictions` are the model's: the story keeps those that agree with the
    /// verdict.
    pub(crate) fn of(
        points: &[(u32, f64)],
        verdicts: &[WorkerVerdict],
        fit: Option<&ModelFit>,
        predictions: &[Prediction],
    ) -> Story {
        let last = points.iter().map(|p| p.0).max();
        let shape = match (knee(points), last) {
            (_, None) => Shape::NoCleanRows,
            (Some(k), Some(l)) if k < l => Shape::Flattened { knee: k, last: l },
            (_, Some(l)) => Shape::StillRising { last: l },
        };
        let best = points.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
        let facts = Facts {
            shape,
            binding: verdicts.iter().copied().max_by_key(|v| v.workers),
            best,
            fit,
        };
        let (rule, told) = RULES
            .iter()
            .find_map(|r| (r.check)(&facts).map(|t| (r.name, t)))
            .expect("the last story rule always holds");
        Story {
            shape,
            binding: facts.binding,
            recommended_workers: told.recommended_workers,
            recommendation: told.recommendation,
            claims: told.claims,
            rule,
            best,
            forecast: forecast(fit, predictions, facts.binding, best.map(|b| b.1)),
            model_plateau: fit.and_then(|f| plateau_words(f, best, matches!(shape, Shape::StillRising { .. }))),
        }
    }

    /// The story of one bucket's rows in a result (the same points the analysis fits).
    pub(crate) fn of_bucket(result: &SweepResult, summary: &BucketSummary) -> Story {
        let rows: Vec<&ConfigResult> = result.rows_for(summary).collect();
        let analysis = result.analysis.as_ref().and_then(|a| {
            a.buckets
                .iter()
                .find(|b| b.bucket == summary.bucket && b.axes == summary.axes)
        });
        let mut workers: Vec<u32> = rows.iter().map(|r| r.workers).collect();
        workers.sort_unstable();
        workers.dedup();
        let points: Vec<(u32, f64)> = workers
            .iter()
            .filter(|&&w| rows.iter().filter(|r| r.workers == w).all(|r| r.errors.total == 0))
            .filter_map(|&w| {
                let rates = rows.iter().filter(|r| r.workers == w).map(|r| r.objects_per_s);
                median(rates.collect()).map(|x| (w, x))
            })
            .collect();
        let verdicts: Vec<WorkerVerdict> = match analysis {
            Some(a) => a.verdicts.clone(),
            None => workers
                .iter()
                .filter_map(|&w| {
                    let d = rows.iter().find(|r| r.workers == w)?.diagnosis.as_ref()?;
                    Some(WorkerVerdict {
                        workers: w,
                        verdict: d.verdict,
                    })
                })
                .collect(),
        };
        let predictions = analysis.map_or(&[][..], |a| &a.predictions[..]);
        let mut story = Story::of(&points, &verdicts, analysis.and_then(|a| a.fit.as_ref()), predictions);
        // What the analysis left out, it said why when it ran.
        if let (Some(f), Some(why)) = (
            story.forecast.as_mut(),
            analysis.and_then(|a| a.predictions_withheld.clone()),
        ) {
            f.withheld = Some(why);
        }
        story
    }

    /// The knee part of the line under a bucket's table: "knee at K workers" only
    /// where the curve flattened.
    pub(crate) fn knee_words(&self) -> String {
        match (self.shape, self.binding) {
            (Shape::NoCleanRows, _) => String::new(),
            (Shape::Flattened { knee, .. }, _) => format!("knee at {knee} workers"),
            (Shape::StillRising { .. }, Some(b)) if rules_out(b.verdict, Advice::MoreWorkers) => {
                format!(
                    "no knee: {} binds at {} workers, the largest tried",
                    b.verdict.name(),
                    b.workers
                )
            }
            (Shape::StillRising { last }, _) => format!("still rising at {last} workers: try more"),
        }
    }

    /// The plot's subtitle part for this bucket.
    pub(crate) fn subtitle(&self) -> String {
        let binds = |b: WorkerVerdict| format!("{} binds", limit_words(b.verdict));
        match (self.shape, self.binding) {
            (Shape::NoCleanRows, _) => "errors at every count".to_string(),
            (Shape::Flattened { knee, last }, b) => {
                let why = match b.map(|b| b.verdict) {
                    Some(Verdict::Latency) | None => "more workers gained under 10%".to_string(),
                    Some(Verdict::Plateau) => "the cause is not among those measured".to_string(),
                    Some(_) => b.map(binds).unwrap_or_default(),
                };
                format!("knee at {knee} workers, flat to {last}: {why}")
            }
            (Shape::StillRising { .. }, _) => self.knee_words(),
        }
    }
}

#[cfg(test)]
#[path = "story_tests.rs"]
mod tests;

//! One matched configuration's repetitions and what they allow us to say: the
//! [`Spread`] of each side, the test of B against A (paired by round, else unpaired)
//! and its [`Significance`] after Holm's correction over a bucket pair's
//! configurations. The statistics themselves are [`crate::analysis::significance`]'s.

use serde::Serialize;

use crate::model::stats::{median, tidy};
use crate::model::ConfigResult;

use crate::analysis::significance::{holm, mann_whitney_p, sign_test_p, Test, ALPHA};

/// Repetitions each side needs before any test is tried.
pub const MIN_REPETITIONS: usize = 3;

/// Repetitions of one configuration, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub repetitions: usize,
    #[serde(serialize_with = "tidy::dec3")]
    pub median_wall_ms: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub min_wall_ms: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub max_wall_ms: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub median_objects_per_s: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub median_ttfb_p50_ms: f64,
    /// The client's own CPU per GET (its process clock), median over repetitions.
    #[serde(serialize_with = "tidy::sig4")]
    pub median_cpu_ms_per_get: f64,
    /// Cost per 1,000 objects read, median over repetitions (priced by [`super::cost`]).
    #[serde(serialize_with = "tidy::sig4")]
    pub median_per_1000_objects_usd: f64,
    pub errors: u64,
}

impl Spread {
    pub(super) fn of(rows: &[&ConfigResult], price: &crate::analysis::cost::Price<'_>) -> Spread {
        let med = |v: Vec<f64>| median(v).unwrap_or(0.0);
        let walls: Vec<f64> = rows.iter().map(|r| r.wall_ms).collect();
        Spread {
            repetitions: rows.len(),
            median_wall_ms: med(walls.clone()),
            min_wall_ms: walls.iter().copied().fold(f64::INFINITY, f64::min),
            max_wall_ms: walls.iter().copied().fold(0.0, f64::max),
            median_objects_per_s: med(rows.iter().map(|r| r.objects_per_s).collect()),
            median_ttfb_p50_ms: med(rows.iter().map(|r| r.ttfb_ms.p50).collect()),
            median_cpu_ms_per_get: med(rows.iter().map(|r| r.cpu_ms_per_get).collect()),
            median_per_1000_objects_usd: med(rows.iter().map(|r| price(r)).collect()),
            errors: rows.iter().map(|r| r.errors.total).sum(),
        }
    }
}

/// What the repetitions allow us to say about one matched configuration (not a
/// diagnosis [`crate::model::Verdict`]: whether B differs from A beyond the noise).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Significance {
    /// B was faster: `p` from the test, `p_adjusted` after Holm's correction for the
    /// worker counts compared, at most 0.05.
    BFaster {
        #[serde(serialize_with = "tidy::sig4")]
        p: f64,
        #[serde(serialize_with = "tidy::sig4")]
        p_adjusted: f64,
    },
    /// B was slower (as `BFaster`).
    BSlower {
        #[serde(serialize_with = "tidy::sig4")]
        p: f64,
        #[serde(serialize_with = "tidy::sig4")]
        p_adjusted: f64,
    },
    /// The test ran and found no difference beyond the runs' own spread.
    NoDifferenceShown {
        #[serde(serialize_with = "tidy::sig4")]
        p_adjusted: f64,
    },
    /// The repetitions cannot reach significance after the correction, whatever the
    /// wall times: `repetitions_needed` (per side, or rounds when paired) could.
    CannotShow {
        #[serde(serialize_with = "tidy::sig4")]
        min_p_adjusted: f64,
        repetitions_needed: usize,
    },
    /// Fewer than [`MIN_REPETITIONS`] on a side: no test.
    TooFewRepetitions,
}

impl Significance {
    pub fn text(&self) -> String {
        match self {
            Significance::BFaster { p, p_adjusted } => format!("B faster (p={p:.3}, Holm {p_adjusted:.3})"),
            Significance::BSlower { p, p_adjusted } => format!("B slower (p={p:.3}, Holm {p_adjusted:.3})"),
            Significance::NoDifferenceShown { p_adjusted } => format!("no difference shown (Holm p={p_adjusted:.2})"),
            Significance::CannotShow { repetitions_needed, .. } => {
                format!("no difference shown (cannot reach p<0.05; {repetitions_needed} reps would)")
            }
            Significance::TooFewRepetitions => "n/a (<3 reps)".into(),
        }
    }
}

/// 2 / C(a + b, a): the chance that a ranges do not overlap by luck.
pub fn non_overlap_p(a: usize, b: usize) -> f64 {
    Test::Unpaired.min_p(a, b)
}

/// The test of one configuration before correction: which, its p, whether B was
/// faster (by the medians, or the pairs), and the smallest p it could give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tested {
    pub(super) test: Test,
    p: f64,
    b_faster: bool,
    min_p: f64,
}

/// Tests B's rows against A's: paired by round when both sides carry rounds in
/// common, else unpaired. `None` below [`MIN_REPETITIONS`].
pub(super) fn test_config(a: &[&ConfigResult], b: &[&ConfigResult]) -> Option<Tested> {
    if a.len() < MIN_REPETITIONS || b.len() < MIN_REPETITIONS {
        return None;
    }
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .filter_map(|x| {
            let round = x.round?;
            b.iter()
                .find(|y| y.round == Some(round))
                .map(|y| (x.wall_ms, y.wall_ms))
        })
        .collect();
    if pairs.len() >= MIN_REPETITIONS {
        let differing: Vec<&(f64, f64)> = pairs.iter().filter(|(x, y)| x != y).collect();
        let below = differing.iter().filter(|(x, y)| y < x).count();
        return Some(Tested {
            test: Test::PairedByRound,
            p: sign_test_p(below, differing.len()),
            b_faster: 2 * below > differing.len(),
            min_p: Test::PairedByRound.min_p(pairs.len(), pairs.len()),
        });
    }
    let wa: Vec<f64> = a.iter().map(|r| r.wall_ms).collect();
    let wb: Vec<f64> = b.iter().map(|r| r.wall_ms).collect();
    Some(Tested {
        test: Test::Unpaired,
        p: mann_whitney_p(&wa, &wb),
        b_faster: median(wb.clone()) < median(wa.clone()),
        min_p: Test::Unpaired.min_p(wa.len(), wb.len()),
    })
}

/// The significance of a pair's configurations, corrected together (Holm).
pub(super) fn significances(tested: &[Option<Tested>]) -> Vec<Significance> {
    let m = tested.iter().flatten().count();
    let ps: Vec<f64> = tested.iter().flatten().map(|t| t.p).collect();
    let mut adjusted = holm(&ps).into_iter();
    tested
        .iter()
        .map(|t| {
            let Some(t) = t else {
                return Significance::TooFewRepetitions;
            };
            let p_adjusted = adjusted.next().unwrap_or(1.0);
            if t.min_p * m as f64 > ALPHA {
                Significance::CannotShow {
                    min_p_adjusted: (t.min_p * m as f64).min(1.0),
                    repetitions_needed: t.test.repetitions_needed(m),
                }
            } else if p_adjusted > ALPHA {
                Significance::NoDifferenceShown { p_adjusted }
            } else if t.b_faster {
                Significance::BFaster { p: t.p, p_adjusted }
            } else {
                Significance::BSlower { p: t.p, p_adjusted }
            }
        })
        .collect()
}

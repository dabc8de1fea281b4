//! The hedge axis in the verdicts. Every hedged row gets a note reading its
//! configuration (bucket, workers, axes, hedge policy) against the same configuration
//! unhedged, over all their rows (an interleaved order runs them side by side, round
//! by round): by how much the median wall time and p99 moved, for how many more GETs,
//! at what price per million objects (the bucket's GET price, [`Prices`]), and whether
//! it paid: a median wall time cut by [`WORTH_IT_CUT`] or more. Medians over rounds,
//! not one round's pair: one round on a busy machine can move by more than the cut,
//! so from one repetition a change under [`ONE_ROUND_NOISE`] is said to be untold.

use crate::model::stats::median;
use crate::model::{Axes, ConfigResult, Hedge, HedgeCounts, Prices, SweepResult};

use super::cost::StorageClass;

/// The cut of the median wall time from which hedging is called worth its extra GETs.
pub(crate) const WORTH_IT_CUT: f64 = 0.10;

/// From one repetition on either side, a change of the median wall time under this
/// share cannot be told from one round's noise (a busy machine moves a row by more
/// than the worth-it cut): the note says so instead of judging.
pub(crate) const ONE_ROUND_NOISE: f64 = 0.25;

/// Under this share of its hedges winning, a configuration's copies mostly lost: the
/// GETs they were sent for were not stalled, only slow.
const MOSTLY_LOST: f64 = 0.15;

/// One configuration over its rows: median wall time and p99, ms; GETs; hedging.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Medians {
    wall_ms: f64,
    ttlb_p99_ms: f64,
    rows: usize,
    requests: u64,
    hedging: HedgeCounts,
}

/// The rows of `row`'s configuration with hedge policy `hedge`, over its rounds.
fn medians(rows: &[ConfigResult], row: &ConfigResult, hedge: Hedge) -> Option<Medians> {
    let axes = Axes {
        hedge,
        ..row.axes.key()
    };
    let like: Vec<&ConfigResult> = rows
        .iter()
        .filter(|r| r.bucket == row.bucket && r.workers == row.workers && r.axes.key() == axes && r.ok > 0)
        .collect();
    Some(Medians {
        wall_ms: median(like.iter().map(|r| r.wall_ms).collect())?,
        ttlb_p99_ms: median(like.iter().map(|r| r.ttlb_ms.p99).collect())?,
        rows: like.len(),
        requests: like.iter().map(|r| r.requests).sum(),
        hedging: like
            .iter()
            .filter_map(|r| r.hedging)
            .fold(HedgeCounts::default(), |mut all, h| {
                all.add(&h);
                all
            }),
    })
}

/// The price of one GET of `bucket`, USD.
fn get_price_usd(prices: &Prices, bucket: &str) -> f64 {
    match prices.class_of(bucket) {
        StorageClass::Standard => prices.s3_standard_get_per_1000_usd / 1000.0,
        StorageClass::Express => prices.s3_express_get_per_1000_usd / 1000.0,
    }
}

/// Adds the hedging note to every hedged row whose configuration ran unhedged too.
pub(crate) fn hedge_notes(result: &mut SweepResult) {
    let prices = result.request.prices.clone();
    let rows = &result.results;
    let found: Vec<(usize, Medians, Medians)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.hedging.is_some() && r.ok > 0)
        .filter_map(|(i, r)| Some((i, medians(rows, r, r.axes.hedge)?, medians(rows, r, Hedge::Off)?)))
        .collect();
    for (i, hedged, off) in found {
        let row = &mut result.results[i];
        let text = note(row.axes.hedge, hedged, off, get_price_usd(&prices, &row.bucket));
        if let Some(d) = row.diagnosis.as_mut() {
            d.notes.push(text);
        }
    }
}

/// The note for a hedged configuration against the same unhedged.
fn note(hedge: Hedge, on: Medians, off: Medians, get_usd: f64) -> String {
    let h = on.hedging;
    let cut = 1.0 - on.wall_ms / off.wall_ms.max(1e-9);
    let extra = h.hedges_sent as f64 / on.requests.max(1) as f64;
    let per_million = extra * 1e6 * get_usd;
    let moved = if cut >= 0.0 {
        format!("cut the median wall time by {:.0}%", cut * 100.0)
    } else {
        format!("lengthened the median wall time by {:.0}%", -cut * 100.0)
    };
    // Copies that mostly lost cannot have cut the wall time: a cut then is the rounds'
    // noise, so that rule comes first.
    let verdict = if (h.hedges_won as f64) < MOSTLY_LOST * h.hedges_sent as f64 {
        format!(
            "not worth it here (the copies mostly lost, {} of {} won: a tail this tight leaves hedging little to cut)",
            h.hedges_won, h.hedges_sent
        )
    } else if on.rows.min(off.rows) < 2 && cut.abs() < ONE_ROUND_NOISE {
        format!(
            "cannot tell from one repetition: a change under {:.0}% is within one round's noise; run --repetitions 3 or more to judge it",
            100.0 * ONE_ROUND_NOISE
        )
    } else if cut >= WORTH_IT_CUT {
        "worth it".to_string()
    } else if h.hedges_refused > 0 {
        format!(
            "not worth it here (the budget refused {} GETs a hedge: a delay this short spends it on GETs merely slow)",
            h.hedges_refused
        )
    } else {
        "not worth it here".to_string()
    };
    format!(
        "hedging at {hedge} {moved} ({:.0} against {:.0} ms unhedged, {} and {} rows; p99 {:.0} against {:.0} ms) \
         for {:.1}% more GETs ({} sent, {} won), ${per_million:.3} per million objects: {verdict}",
        on.wall_ms,
        off.wall_ms,
        on.rows,
        off.rows,
        on.ttlb_p99_ms,
        off.ttlb_p99_ms,
        extra * 100.0,
        h.hedges_sent,
        h.hedges_won
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;
    use crate::model::HedgeCounts;

    fn hedged(wall_ms: f64, round: u32, policy: Hedge) -> ConfigResult {
        let mut r = row("b", 32, round, wall_ms, 0);
        r.round = Some(round);
        r.axes.hedge = policy;
        if !policy.is_off() {
            r.hedging = Some(HedgeCounts {
                hedges_sent: 5,
                hedges_won: 2,
                ..HedgeCounts::default()
            });
        }
        r.diagnosis = Some(crate::model::Diagnosis {
            verdict: crate::model::Verdict::Latency,
            figures: Default::default(),
            explanation: String::new(),
            notes: Vec::new(),
        });
        r
    }

    #[test]
    fn a_hedged_configuration_is_read_against_the_same_unhedged_over_its_rounds() {
        let mut result = crate::model::test_rows::result(vec![
            hedged(1000.0, 1, Hedge::Off),
            hedged(400.0, 1, Hedge::Percentile(95)),
            hedged(2000.0, 2, Hedge::Off),
            hedged(450.0, 2, Hedge::Percentile(95)),
            hedged(1500.0, 3, Hedge::Off),
            hedged(1900.0, 1, Hedge::AfterMs(40)),
        ]);
        result.results[5].hedging.as_mut().unwrap().hedges_refused = 7;
        // A third off the wall time, but 1 copy of 20 won: the cut is not the copies'.
        let mut lost = hedged(1000.0, 3, Hedge::Percentile(90));
        lost.hedging = Some(HedgeCounts {
            hedges_sent: 20,
            hedges_won: 1,
            ..HedgeCounts::default()
        });
        result.results.push(lost);
        hedge_notes(&mut result);
        let notes = |i: usize| result.results[i].diagnosis.as_ref().unwrap().notes.join("");
        let p95 = notes(1);
        assert_eq!(p95, notes(3), "one note per configuration");
        assert!(
            p95.starts_with(
                "hedging at p95 cut the median wall time by 70% (450 against 1500 ms unhedged, 2 and 3 rows"
            ),
            "{p95}"
        );
        // 10 hedges in 200 GETs at S3 Standard's $0.0004 per 1,000: $0.02 per million objects.
        assert!(
            p95.contains("5.0% more GETs (10 sent, 4 won), $0.020 per million objects: worth it"),
            "{p95}"
        );
        let fixed = notes(5);
        assert!(fixed.contains("lengthened the median wall time by 27%"), "{fixed}");
        assert!(
            fixed.contains("not worth it here (the budget refused 7 GETs"),
            "{fixed}"
        );
        assert!(
            notes(6).contains("not worth it here (the copies mostly lost, 1 of 20 won"),
            "{}",
            notes(6)
        );
        assert!(notes(0).is_empty() && notes(2).is_empty());
    }

    #[test]
    fn one_repetition_cannot_tell_a_small_difference() {
        // The 1-worker row: a 10% cut from one round each side.
        let mut result = crate::model::test_rows::result(vec![
            hedged(1000.0, 1, Hedge::Off),
            hedged(900.0, 1, Hedge::Percentile(95)),
        ]);
        hedge_notes(&mut result);
        let note = result.results[1].diagnosis.as_ref().unwrap().notes.join("");
        assert!(note.contains("cut the median wall time by 10%"), "{note}");
        assert!(note.contains("cannot tell from one repetition"), "{note}");
        assert!(!note.contains("worth it"), "{note}");
        // Three rounds each side judge a cut of 15%.
        let mut result = crate::model::test_rows::result(
            (1..=3)
                .flat_map(|i| [hedged(1000.0, i, Hedge::Off), hedged(850.0, i, Hedge::Percentile(95))])
                .collect(),
        );
        hedge_notes(&mut result);
        let note = result.results[1].diagnosis.as_ref().unwrap().notes.join("");
        assert!(note.ends_with(": worth it"), "{note}");
    }
}

//! The hedge axis in the verdicts. Every hedged row gets a note comparing it with the
//! unhedged rows of the same bucket, workers and other axes: the one of its own round
//! when there is one (an interleaved order runs them side by side), else their
//! median. It says by how much the wall time and the p99 moved, for how many more
//! GETs, at what price per million objects (the bucket's GET price, [`Prices`]), and
//! whether it paid: a wall time cut by [`WORTH_IT_CUT`] or more.

use crate::model::stats::median;
use crate::model::{Axes, ConfigResult, Hedge, Prices, SweepResult};

use super::cost::StorageClass;

/// The cut of the wall time from which hedging is called worth its extra GETs.
pub(crate) const WORTH_IT_CUT: f64 = 0.10;

/// What the unhedged rows beside a hedged one took: wall time and p99, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Unhedged {
    wall_ms: f64,
    ttlb_p99_ms: f64,
}

/// The unhedged rows like `row` (same bucket, workers, axes but the hedge), its own
/// round's if there is one, else their medians.
fn unhedged_like(rows: &[ConfigResult], row: &ConfigResult) -> Option<Unhedged> {
    let off = Axes {
        hedge: Hedge::Off,
        ..row.axes.key()
    };
    let like: Vec<&ConfigResult> = rows
        .iter()
        .filter(|r| r.bucket == row.bucket && r.workers == row.workers && r.axes.key() == off && r.ok > 0)
        .collect();
    if let Some(pair) = like.iter().find(|r| row.round.is_some() && r.round == row.round) {
        return Some(Unhedged {
            wall_ms: pair.wall_ms,
            ttlb_p99_ms: pair.ttlb_ms.p99,
        });
    }
    Some(Unhedged {
        wall_ms: median(like.iter().map(|r| r.wall_ms).collect())?,
        ttlb_p99_ms: median(like.iter().map(|r| r.ttlb_ms.p99).collect())?,
    })
}

/// The price of one GET of `bucket`, USD.
fn get_price_usd(prices: &Prices, bucket: &str) -> f64 {
    match prices.class_of(bucket) {
        StorageClass::Standard => prices.s3_standard_get_per_1000_usd / 1000.0,
        StorageClass::Express => prices.s3_express_get_per_1000_usd / 1000.0,
    }
}

/// Adds the hedging note to every hedged row that has unhedged rows beside it.
pub(crate) fn hedge_notes(result: &mut SweepResult) {
    let prices = result.request.prices.clone();
    let found: Vec<(usize, Unhedged)> = result
        .results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.hedging.is_some() && r.ok > 0)
        .filter_map(|(i, r)| unhedged_like(&result.results, r).map(|u| (i, u)))
        .collect();
    for (i, off) in found {
        let row = &mut result.results[i];
        let text = note(row, off, get_price_usd(&prices, &row.bucket));
        if let Some(d) = row.diagnosis.as_mut() {
            d.notes.push(text);
        }
    }
}

/// The note for a hedged row against the unhedged beside it.
fn note(row: &ConfigResult, off: Unhedged, get_usd: f64) -> String {
    let h = row.hedging.unwrap_or_default();
    let cut = 1.0 - row.wall_ms / off.wall_ms.max(1e-9);
    let extra = h.hedges_sent as f64 / row.requests.max(1) as f64;
    let per_million = extra * 1e6 * get_usd;
    let moved = if cut >= 0.0 {
        format!("cut the wall time by {:.0}%", cut * 100.0)
    } else {
        format!("lengthened the wall time by {:.0}%", -cut * 100.0)
    };
    let verdict = if cut >= WORTH_IT_CUT {
        "worth it".to_string()
    } else {
        format!(
            "not worth it here (under a {:.0}% cut: a tail this tight leaves hedging little to cut)",
            WORTH_IT_CUT * 100.0
        )
    };
    format!(
        "hedging at {} {moved} ({:.0} against {:.0} ms unhedged; p99 {:.0} against {:.0} ms) for {:.1}% more GETs \
         ({} sent, {} won), ${per_million:.3} per million objects: {verdict}",
        row.axes.hedge,
        row.wall_ms,
        off.wall_ms,
        row.ttlb_ms.p99,
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
    fn a_hedged_row_is_read_against_its_rounds_unhedged_one() {
        let mut result = crate::model::test_rows::result(vec![
            hedged(1000.0, 1, Hedge::Off),
            hedged(400.0, 1, Hedge::Percentile(95)),
            hedged(2000.0, 2, Hedge::Off),
            hedged(1900.0, 2, Hedge::AfterMs(40)),
        ]);
        hedge_notes(&mut result);
        let notes = |i: usize| result.results[i].diagnosis.as_ref().unwrap().notes.clone();
        let p95 = notes(1).join("");
        assert!(
            p95.starts_with("hedging at p95 cut the wall time by 60% (400 against 1000 ms unhedged"),
            "{p95}"
        );
        // 5 hedges in 100 GETs at S3 Standard's $0.0004 per 1,000: $0.02 per million objects.
        assert!(
            p95.contains("5.0% more GETs (5 sent, 2 won), $0.020 per million objects: worth it"),
            "{p95}"
        );
        let fixed = notes(3).join("");
        assert!(
            fixed.contains("cut the wall time by 5%") && fixed.contains("not worth it"),
            "{fixed}"
        );
        assert!(notes(0).is_empty() && notes(2).is_empty());
    }
}

//! The bandwidth ceiling the verdicts and the model use, and where it came from: the
//! user's (`--bandwidth-mib-s`) wins; else the probe's sustained rate. Rows that moved
//! more than the sustained ceiling allows ran on burst credit and are flagged.

use crate::model::{BandwidthCeiling, CeilingSource, NetworkReport, Order, SweepResult, Thresholds};

/// A row above this multiple of the probe's sustained ceiling ran during a burst.
pub(crate) const BURST_ROW_FACTOR: f64 = 1.15;

/// `thresholds` with the ceiling to use and its source; the result's network block
/// records it.
pub(crate) fn ceiling(result: &mut SweepResult, thresholds: &Thresholds) -> Thresholds {
    let mut t = *thresholds;
    if let Some(user) = t.bandwidth_ceiling_mib_per_s {
        t.bandwidth_ceiling_source = Some(t.bandwidth_ceiling_source.unwrap_or(CeilingSource::User));
        let network = result.network.get_or_insert_with(|| NetworkReport {
            order: result
                .request
                .order
                .unwrap_or(Order::default_for(result.request.repetitions)),
            order_seed: None,
            pool_idle_timeout_ms: result.request.pool_idle_timeout_ms,
            ceiling: None,
            probe: None,
        });
        network.ceiling = Some(BandwidthCeiling {
            mib_per_s: user,
            source: t.bandwidth_ceiling_source.unwrap_or(CeilingSource::User),
            lower_bound: false,
        });
    } else if let Some(c) = result.network.as_ref().and_then(|n| n.ceiling) {
        t.bandwidth_ceiling_mib_per_s = Some(c.mib_per_s);
        t.bandwidth_ceiling_source = Some(c.source);
    }
    t
}

/// Flags the rows that ran faster than the probe's sustained ceiling allows (by
/// [`BURST_ROW_FACTOR`]): they ran on burst credit. Only a probe's ceiling that is not
/// a lower bound says that.
pub(crate) fn flag_bursts(result: &mut SweepResult, thresholds: &Thresholds) {
    let probe_ceiling = result
        .network
        .as_ref()
        .and_then(|n| n.ceiling)
        .filter(|c| c.source == CeilingSource::Probe && !c.lower_bound)
        .filter(|_| thresholds.bandwidth_ceiling_source == Some(CeilingSource::Probe));
    for row in &mut result.results {
        row.in_burst = probe_ceiling.is_some_and(|c| row.mib_per_s > BURST_ROW_FACTOR * c.mib_per_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows;

    fn with_probe(mib_per_s: f64, lower_bound: bool) -> SweepResult {
        let mut r = test_rows::result(vec![
            test_rows::row("b", 1, 1, 100.0, 0),
            test_rows::row("b", 8, 1, 100.0, 0),
        ]);
        r.results[0].mib_per_s = 30.0;
        r.results[1].mib_per_s = 60.0;
        r.network = Some(NetworkReport {
            order: Order::Ascending,
            order_seed: None,
            pool_idle_timeout_ms: 15_000,
            ceiling: Some(BandwidthCeiling {
                mib_per_s,
                source: CeilingSource::Probe,
                lower_bound,
            }),
            probe: None,
        });
        r
    }

    #[test]
    fn the_users_ceiling_wins_and_the_probes_is_used_otherwise() {
        let mut r = with_probe(40.0, false);
        let t = ceiling(&mut r, &Thresholds::default());
        assert_eq!(t.bandwidth_ceiling_mib_per_s, Some(40.0));
        assert_eq!(t.bandwidth_ceiling_source, Some(CeilingSource::Probe));
        let user = Thresholds {
            bandwidth_ceiling_mib_per_s: Some(100.0),
            ..Default::default()
        };
        let t = ceiling(&mut r, &user);
        assert_eq!(t.bandwidth_ceiling_source, Some(CeilingSource::User));
        assert_eq!(r.network.unwrap().ceiling.unwrap().source, CeilingSource::User);
    }

    #[test]
    fn rows_above_the_sustained_ceiling_ran_in_a_burst() {
        let mut r = with_probe(40.0, false);
        let t = ceiling(&mut r, &Thresholds::default());
        flag_bursts(&mut r, &t);
        assert!(!r.results[0].in_burst && r.results[1].in_burst);
        let mut lower = with_probe(40.0, true);
        let t = ceiling(&mut lower, &Thresholds::default());
        flag_bursts(&mut lower, &t);
        assert!(lower.results.iter().all(|r| !r.in_burst), "a lower bound flags nothing");
    }
}

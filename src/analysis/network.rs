//! The bandwidth ceiling the verdicts and the model use, and where it came from: the
//! user's (`--bandwidth-mib-s`) wins; else the probe's sustained rate. Rows that moved
//! more than the sustained ceiling allows ran on burst credit and are flagged. Rows
//! whose interface counters received far more than their requests explain are flagged
//! as counting other traffic ([`flag_other_traffic`]).

use crate::model::{BandwidthCeiling, CeilingSource, ConfigResult, NetworkReport, Order, SweepResult, Thresholds};

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

/// Interface bytes a row's requests can explain, per body byte: headers, TLS records,
/// TCP/IP framing, retransmissions (about 1.03-1.1 measured for 46 KB objects).
pub(crate) const WIRE_PER_BODY_BYTE: f64 = 1.5;

/// Interface bytes a row's requests can explain per request beyond its body (the
/// request itself, on loopback, and the response headers), and per connection opened
/// (a TLS handshake's certificates).
pub(crate) const WIRE_PER_REQUEST_BYTES: u64 = 4096;
pub(crate) const WIRE_PER_CONNECTION_BYTES: u64 = 16_384;

/// Flags each row whose interface counters received more than its own requests can
/// explain ([`WIRE_PER_BODY_BYTE`] x body + [`WIRE_PER_REQUEST_BYTES`] x requests +
/// [`WIRE_PER_CONNECTION_BYTES`] x connections): the counters are the interface's,
/// and other traffic on it is in them. The row says so in a note, and its wire rate is
/// not shown as its own.
pub(crate) fn flag_other_traffic(rows: &mut [ConfigResult]) {
    for r in rows.iter_mut() {
        let explained = WIRE_PER_BODY_BYTE * r.bytes as f64
            + (WIRE_PER_REQUEST_BYTES * r.requests + WIRE_PER_CONNECTION_BYTES * r.connections_opened) as f64;
        let Some(w) = r.wire.as_mut().filter(|w| w.rx_bytes as f64 > explained) else {
            continue;
        };
        w.other_traffic = true;
        let note = format!(
            "the wire counters are the interface's ({}), not this row's: they received {:.1} MiB, {:.0}x what its {} requests can explain, so other traffic on the interface is in them and {:.1} wire MiB/s is not this row's rate (its own is the MiB/s column)",
            w.interfaces.join(", "),
            w.rx_bytes as f64 / (1024.0 * 1024.0),
            w.rx_bytes as f64 / explained.max(1.0),
            r.requests,
            w.rx_mib_per_s
        );
        if let Some(d) = r.diagnosis.as_mut() {
            d.notes.push(note);
        }
    }
}

/// Notes each row that opened no connection in a run whose buckets share one
/// endpoint's pool (a given endpoint is addressed path-style: one host, one pool, for
/// every bucket): its requests used connections that earlier rows or the warm-up
/// opened, whichever bucket's, and connections cannot be counted per bucket.
pub(crate) fn shared_pool_notes(result: &mut SweepResult) {
    let Some(endpoint) = result.environment.endpoint.clone() else {
        return;
    };
    let buckets = crate::model::stats::first_seen(result.results.iter().map(|r| r.bucket.clone()));
    if buckets.len() < 2 {
        return;
    }
    for r in result
        .results
        .iter_mut()
        .filter(|r| r.connections_opened == 0 && r.ok > 0)
    {
        if let Some(d) = r.diagnosis.as_mut() {
            d.notes.push(format!(
                "no connection opened in this row: this run's buckets ({}) share the connection pool of {endpoint} (path-style, one host), so its requests used connections that earlier rows or the warm-up opened, whichever bucket's; connections cannot be counted per bucket here",
                buckets.join(", ")
            ));
        }
    }
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

    #[test]
    fn a_row_whose_counters_hold_other_traffic_says_so() {
        use crate::model::WireCounts;
        let wired = |rx_bytes: u64| {
            let mut r = crate::model::test_rows::row("b", 8, 1, 1000.0, 0);
            r.bytes = 100 * 46_080;
            r.connections_opened = 8;
            r.diagnosis = Some(crate::model::Diagnosis {
                verdict: crate::model::Verdict::Latency,
                figures: Default::default(),
                explanation: String::new(),
                notes: vec![],
            });
            r.wire = Some(WireCounts {
                interfaces: vec!["lo".into()],
                rx_bytes,
                rx_packets: 0,
                rx_mib_per_s: rx_bytes as f64 / (1024.0 * 1024.0),
                wire_to_body_ratio: None,
                other_traffic: false,
            });
            r
        };
        // 1.1x the body, requests and handshakes included: the row's own bytes.
        let mut rows = vec![wired(5_068_800), wired(802 * 4_608_000)];
        flag_other_traffic(&mut rows);
        assert!(!rows[0].wire.as_ref().unwrap().other_traffic, "{:?}", rows[0].wire);
        assert!(rows[0].diagnosis.as_ref().unwrap().notes.is_empty());
        // 802x the body (the emulator row): other traffic, said in a note.
        assert!(rows[1].wire.as_ref().unwrap().other_traffic);
        let note = &rows[1].diagnosis.as_ref().unwrap().notes[0];
        assert!(note.contains("not this row's rate") && note.contains("(lo)"), "{note}");
    }

    #[test]
    fn rows_of_buckets_sharing_an_endpoint_say_they_share_its_pool() {
        let diagnosed = |bucket: &str, conns: u64| {
            let mut r = crate::model::test_rows::row(bucket, 8, 1, 1000.0, 0);
            r.connections_opened = conns;
            r.diagnosis = Some(crate::model::Diagnosis {
                verdict: crate::model::Verdict::Latency,
                figures: Default::default(),
                explanation: String::new(),
                notes: vec![],
            });
            r
        };
        let notes = |r: &SweepResult| -> Vec<usize> {
            r.results
                .iter()
                .map(|r| r.diagnosis.as_ref().unwrap().notes.len())
                .collect()
        };
        let rows = vec![diagnosed("standard-like", 8), diagnosed("express-like--x-s3", 0)];
        let mut shared = crate::model::test_rows::result(rows.clone());
        shared.environment.endpoint = Some("https://127.0.0.1:9000".into());
        shared_pool_notes(&mut shared);
        assert_eq!(notes(&shared), [0, 1]);
        let note = &shared.results[1].diagnosis.as_ref().unwrap().notes[0];
        assert!(
            note.contains("share the connection pool of https://127.0.0.1:9000"),
            "{note}"
        );
        // On AWS each bucket is its own host: nothing to say.
        let mut aws = crate::model::test_rows::result(rows);
        shared_pool_notes(&mut aws);
        assert_eq!(notes(&aws), [0, 0]);
    }
}

//! The bandwidth ceiling the verdicts and the model use, and where it came from: the
//! user's (`--bandwidth-mib-s`) wins; else the probe's sustained rate; else, with no
//! flag, the sweep's own evidence ([`link_evidence`]: MiB/s flat over more requests in
//! flight while each body took longer and the CPU was not used up, the rule of
//! docs/diagnosis.md), with an interval. A ceiling a row beat (not on burst credit) is
//! revised up to that row ([`revise_ceiling`]). Rows that moved
//! more than the sustained ceiling allows ran on burst credit and are flagged. Rows
//! whose interface counters received far more than their requests explain are flagged
//! as counting other traffic ([`flag_other_traffic`]).

use super::link::{BodyEvidence, LinkFacts};
use super::rules::cpu_spare;
use super::verdict::FLAT_GAIN;
use crate::model::stats::{first_seen, median, round3};
use crate::model::{BandwidthCeiling, CeilingSource, ConfigResult, NetworkReport, Order, SweepResult, Thresholds};

/// A row above this multiple of the probe's sustained ceiling ran during a burst.
pub(crate) const BURST_ROW_FACTOR: f64 = 1.15;

/// The result's network block, made when an older result has none.
fn network_block(result: &mut SweepResult) -> &mut NetworkReport {
    result.network.get_or_insert_with(|| NetworkReport {
        order: result
            .request
            .order
            .unwrap_or(Order::default_for(result.request.repetitions)),
        order_seed: None,
        pool_idle_timeout_ms: result.request.pool_idle_timeout_ms,
        ceiling: None,
        probe: None,
    })
}

/// `thresholds` with the ceiling to use and its source; the result's network block
/// records it. A ceiling of source `sweep` in the block (an earlier analysis of the
/// same rows) is dropped: the evidence is read again ([`by_evidence`]).
pub(crate) fn ceiling(result: &mut SweepResult, thresholds: &Thresholds) -> Thresholds {
    let mut t = *thresholds;
    if let Some(n) = result.network.as_mut() {
        if n.ceiling.is_some_and(|c| c.source == CeilingSource::Sweep) {
            n.ceiling = None;
        }
    }
    if let Some(user) = t.bandwidth_ceiling_mib_per_s {
        t.bandwidth_ceiling_source = Some(t.bandwidth_ceiling_source.unwrap_or(CeilingSource::User));
        let network = network_block(result);
        network.ceiling = Some(BandwidthCeiling {
            mib_per_s: user,
            source: t.bandwidth_ceiling_source.unwrap_or(CeilingSource::User),
            lower_bound: false,
            interval_mib_per_s: None,
            revised_from_mib_per_s: None,
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

/// A body must take this many times as long as at the bucket's fewest workers to
/// count as spread over a shared link.
pub(crate) const BODY_GROWTH: f64 = 3.0;

/// ... and at least this share of the request's time to last byte (p50s, steady
/// requests), so a body of a fraction of a millisecond that grew is not evidence.
pub(crate) const BODY_SHARE: f64 = 0.2;

/// The interval's low end: a row can run this much above its link on the credit an
/// idle link gives (the lab's 5 ms, a token bucket's depth).
pub(crate) const IDLE_CREDIT: f64 = 0.05;

/// The interval's high end: the link carries more than the bodies (HTTP headers, TLS
/// records, TCP/IP framing: 1.03-1.1x the body for 46 KB objects), and a row's rate
/// holds its ramp-up and its tail, when the link was not yet or no longer full.
pub(crate) const WIRE_OVERHEAD: f64 = 0.10;

/// What the sweep's rows showed: per row its evidence (in the rows' order), and the
/// ceiling it gives (none without a flat row that showed it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LinkEvidence {
    pub(crate) rows: Vec<Option<BodyEvidence>>,
    pub(crate) ceiling: Option<BandwidthCeiling>,
}

/// A row the evidence can read: answered, no failure or throttling, steady requests,
/// and not shared with another invocation (Lambda Managed Instances: a neighbour's
/// traffic on the same interface slows its bodies, which is no evidence of the link
/// at this row's rate).
fn readable(r: &ConfigResult) -> Option<(f64, f64)> {
    let b = r.breakdown.as_ref().filter(|b| b.steady_requests > 0)?;
    let alone = !r.overlap.as_ref().is_some_and(crate::model::Overlap::shared);
    (alone && r.ok > 0 && r.errors.total == 0 && r.throttled_responses == 0)
        .then_some((b.steady_body_ms.p50, b.steady_ttlb_ms.p50))
}

/// The rule "bandwidth by evidence" (docs/diagnosis.md). A row shows a full link when,
/// against its bucket's fewest workers, its bodies took [`BODY_GROWTH`] times as long
/// and at least [`BODY_SHARE`] of its requests' time, while its client had CPU to spare
/// ([`cpu_spare`]): a shared link spreads each body over the time its share takes,
/// and nothing else measured could have slowed the reading. The ceiling needs at least
/// one such row on a flat segment (MiB/s under [`FLAT_GAIN`] times the best at fewer
/// workers): more in flight bought nothing. The ceiling is the highest MiB/s of the
/// rows that showed it (flat ones, and any at `bandwidth_share` of the flat ones or
/// more), between [`IDLE_CREDIT`] below the lowest flat row and [`WIRE_OVERHEAD`]
/// above it. Every bucket's rows count: the client's link is one.
pub(crate) fn link_evidence(rows: &[ConfigResult], vcpus: u32, t: &Thresholds) -> LinkEvidence {
    let mut shown: Vec<Option<BodyEvidence>> = vec![None; rows.len()];
    for bucket in first_seen(rows.iter().map(|r| r.bucket.as_str())) {
        let mine: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].bucket == bucket && readable(&rows[i]).is_some())
            .collect();
        let Some(base_workers) = mine.iter().map(|&i| rows[i].workers).min() else {
            continue;
        };
        let at = |w: u32| mine.iter().map(|&i| &rows[i]).filter(move |r| r.workers == w);
        let body_p50 = |r: &ConfigResult| readable(r).map_or(0.0, |b| b.0);
        let Some(base_body_ms) = median(at(base_workers).map(body_p50).collect()) else {
            continue;
        };
        let rate = |w: u32| median(at(w).map(|r| r.mib_per_s).collect()).unwrap_or(0.0);
        for &i in &mine {
            let r = &rows[i];
            let (body_ms, ttlb_ms) = readable(r).unwrap_or_default();
            let grew = r.workers > base_workers
                && body_ms >= BODY_GROWTH * base_body_ms
                && body_ms >= BODY_SHARE * ttlb_ms
                && cpu_spare(r, vcpus, t);
            if !grew {
                continue;
            }
            let best_before = first_seen(mine.iter().map(|&j| rows[j].workers))
                .into_iter()
                .filter(|&w| w < r.workers)
                .map(|w| (w, rate(w)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            shown[i] = Some(BodyEvidence {
                body_ms,
                base_body_ms,
                base_workers,
                flat_from: best_before.filter(|&(_, x)| x > 0.0 && rate(r.workers) < FLAT_GAIN * x),
            });
        }
    }
    let flat: Vec<f64> = (0..rows.len())
        .filter(|&i| shown[i].is_some_and(|e| e.flat_from.is_some()))
        .map(|i| rows[i].mib_per_s)
        .collect();
    let Some(top_flat) = flat.iter().copied().reduce(f64::max) else {
        return LinkEvidence {
            rows: vec![None; rows.len()],
            ceiling: None,
        };
    };
    // Rows that showed it off the flat segment count when near it (the knee).
    for (i, e) in shown.iter_mut().enumerate() {
        if e.is_some_and(|e| e.flat_from.is_none()) && rows[i].mib_per_s < t.bandwidth_share * top_flat {
            *e = None;
        }
    }
    let top = (0..rows.len())
        .filter(|&i| shown[i].is_some())
        .map(|i| rows[i].mib_per_s)
        .fold(top_flat, f64::max);
    let lowest_flat = flat.iter().copied().fold(f64::INFINITY, f64::min);
    LinkEvidence {
        rows: shown,
        ceiling: Some(BandwidthCeiling {
            mib_per_s: top,
            source: CeilingSource::Sweep,
            lower_bound: false,
            interval_mib_per_s: Some([
                round3((1.0 - IDLE_CREDIT) * lowest_flat),
                round3((1.0 + WIRE_OVERHEAD) * top),
            ]),
            revised_from_mib_per_s: None,
        }),
    }
}

/// A probed or given ceiling that a row beat, not on burst credit, is revised up to
/// that row's MiB/s (the block records the figure it was revised from): no row is
/// ever said to have run above 100% of a ceiling.
pub(crate) fn revise_ceiling(result: &mut SweepResult, t: &Thresholds) -> Thresholds {
    let Some(ceiling) = t.bandwidth_ceiling_mib_per_s else {
        return *t;
    };
    let fastest = result
        .results
        .iter()
        .filter(|r| !r.in_burst)
        .map(|r| r.mib_per_s)
        .fold(0.0, f64::max);
    if fastest <= ceiling {
        return *t;
    }
    if let Some(c) = network_block(result).ceiling.as_mut() {
        c.revised_from_mib_per_s = Some(c.revised_from_mib_per_s.unwrap_or(c.mib_per_s));
        c.mib_per_s = fastest;
    }
    Thresholds {
        bandwidth_ceiling_mib_per_s: Some(fastest),
        ..*t
    }
}

/// The ceiling the rules use, with what each row showed: with a probed or given
/// ceiling, that one (revised up when a row beat it); else the sweep's evidence
/// ([`link_evidence`]), recorded in the network block with its interval.
pub(crate) fn by_evidence(result: &mut SweepResult, t: &Thresholds) -> (Thresholds, Vec<LinkFacts>) {
    if t.bandwidth_ceiling_mib_per_s.is_some() {
        let t = revise_ceiling(result, t);
        let revised_from = result
            .network
            .as_ref()
            .and_then(|n| n.ceiling)
            .and_then(|c| c.revised_from_mib_per_s);
        let link = LinkFacts {
            revised_from,
            ..LinkFacts::default()
        };
        return (t, vec![link; result.results.len()]);
    }
    let evidence = link_evidence(&result.results, result.environment.vcpus, t);
    let Some(ceiling) = evidence.ceiling else {
        return (*t, vec![LinkFacts::default(); result.results.len()]);
    };
    network_block(result).ceiling = Some(ceiling);
    let t = Thresholds {
        bandwidth_ceiling_mib_per_s: Some(ceiling.mib_per_s),
        bandwidth_ceiling_source: Some(CeilingSource::Sweep),
        ..*t
    };
    let facts = evidence
        .rows
        .into_iter()
        .map(|body| LinkFacts {
            body,
            interval: ceiling.interval_mib_per_s,
            revised_from: None,
        })
        .collect();
    (t, facts)
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
                interval_mib_per_s: None,
                revised_from_mib_per_s: None,
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

    /// A row of `bucket` at `workers` moving `mib` MiB/s, its steady bodies taking
    /// `body_ms` (p50) of `ttlb_ms`, its client with CPU to spare (0.2 of 2 cores).
    fn linked(bucket: &str, workers: u32, mib: f64, body_ms: f64, ttlb_ms: f64) -> ConfigResult {
        use crate::analysis::rules::tests::{healthy, pct};
        let mut r = healthy();
        r.bucket = bucket.into();
        r.workers = workers;
        r.pool_connections = workers;
        r.mib_per_s = mib;
        r.objects_per_s = mib * 1024.0 * 1024.0 / 46_080.0;
        r.breakdown = Some(crate::model::Breakdown {
            steady_requests: 100,
            steady_body_ms: pct(body_ms),
            steady_ttlb_ms: pct(ttlb_ms),
            ..Default::default()
        });
        r
    }

    /// The lab sweep on a 40 MiB/s link as crafted rows: standard-like (18 ms)
    /// reaches the link at 16 workers, express-like (4 ms) at 4; from there each body
    /// is spread over its share of the link.
    fn on_a_full_link() -> Vec<ConfigResult> {
        vec![
            linked("std", 1, 2.4, 0.3, 19.0),
            linked("std", 4, 9.5, 0.3, 19.0),
            linked("std", 16, 37.0, 8.0, 26.0),
            linked("std", 32, 40.0, 22.0, 45.0),
            linked("exp", 1, 9.0, 0.3, 5.0),
            linked("exp", 4, 36.0, 2.0, 6.0),
            linked("exp", 16, 40.0, 12.0, 20.0),
            linked("exp", 32, 39.5, 24.0, 34.0),
        ]
    }

    fn analysed(rows: Vec<ConfigResult>, t: &Thresholds) -> SweepResult {
        let mut r = crate::analysis::summarized(rows);
        crate::analysis::analyse(&mut r, t);
        r
    }

    fn verdicts(r: &SweepResult) -> Vec<(String, u32, crate::model::Verdict)> {
        r.results
            .iter()
            .map(|r| (r.bucket.clone(), r.workers, r.diagnosis.as_ref().unwrap().verdict))
            .collect()
    }

    #[test]
    fn a_flat_curve_whose_bodies_grew_with_cpu_to_spare_is_bandwidth_with_an_interval() {
        use crate::model::Verdict::{Bandwidth, Latency};
        let r = analysed(on_a_full_link(), &Thresholds::default());
        let got: Vec<_> = verdicts(&r).into_iter().map(|v| v.2).collect();
        assert_eq!(
            got,
            [Latency, Latency, Bandwidth, Bandwidth, Latency, Bandwidth, Bandwidth, Bandwidth],
            "{:?}",
            verdicts(&r)
        );
        let c = r.network.as_ref().unwrap().ceiling.unwrap();
        assert_eq!((c.source, c.mib_per_s), (CeilingSource::Sweep, 40.0));
        let [lo, hi] = c.interval_mib_per_s.unwrap();
        // The lowest flat row (39.5) less 5%, the highest (40) plus 10%.
        assert!((lo - 37.525).abs() < 1e-9 && (hi - 44.0).abs() < 1e-9, "{lo} {hi}");
        let d = r.results[3].diagnosis.as_ref().unwrap();
        for said in [
            "the link is full",
            "22.0 ms",
            "0.30 ms at 1 worker",
            "flat: 37.0 MiB/s at 16 workers",
            "between 37.5 and 44.0",
            "source: sweep",
        ] {
            assert!(d.explanation.contains(said), "{said:?} in {}", d.explanation);
        }
        assert_eq!(
            d.figures[crate::model::FigureName::BandwidthCeilingLowMibPerS],
            crate::model::Figure::MibPerS(37.525)
        );
        // The analysis read once more (report, compare) finds the same, from the rows.
        let mut again = r.clone();
        crate::analysis::analyse(&mut again, &Thresholds::default());
        assert_eq!(verdicts(&again), verdicts(&r));
        assert_eq!(again.network, r.network);
    }

    #[test]
    fn bodies_that_did_not_grow_are_no_evidence_and_a_latency_plateau_stays_a_plateau() {
        // The same throughput, but every body took 0.3 ms: the requests waited before
        // their first byte (a server's queue), not for a shared link.
        let rows: Vec<ConfigResult> = on_a_full_link()
            .into_iter()
            .map(|mut r| {
                let b = r.breakdown.as_mut().unwrap();
                b.steady_body_ms = crate::analysis::rules::tests::pct(0.3);
                r
            })
            .collect();
        let r = analysed(rows, &Thresholds::default());
        assert!(r.network.as_ref().and_then(|n| n.ceiling).is_none(), "{:?}", r.network);
        assert!(
            verdicts(&r).iter().all(|v| v.2 != crate::model::Verdict::Bandwidth),
            "{:?}",
            verdicts(&r)
        );
        assert_eq!(verdicts(&r)[3].2, crate::model::Verdict::Plateau);
    }

    #[test]
    fn bodies_that_grew_while_the_client_was_out_of_cpu_are_no_evidence() {
        use crate::analysis::rules::tests::on_two_vcpus;
        // 1.8 of 2 cores busy from 16 workers: the client read the bodies late.
        let rows: Vec<ConfigResult> = on_a_full_link()
            .into_iter()
            .map(|mut r| {
                if r.workers >= 16 {
                    r.cpu_ms = 180.0;
                    r.client = Some(crate::model::ClientSide::of(&r, on_two_vcpus(40, 2)));
                }
                r
            })
            .collect();
        let r = analysed(rows, &Thresholds::default());
        // Express-like at 4 workers still grew with CPU to spare, but is on no flat
        // segment: no ceiling from it alone.
        assert!(r.network.as_ref().and_then(|n| n.ceiling).is_none(), "{:?}", r.network);
        assert_eq!(verdicts(&r)[3].2, crate::model::Verdict::ClientCpu);
    }

    #[test]
    fn a_curve_that_still_rises_gives_no_ceiling() {
        // Bodies grew (a slower path), but more in flight kept buying MiB/s.
        let rows = vec![
            linked("std", 1, 2.4, 0.3, 19.0),
            linked("std", 16, 20.0, 4.0, 30.0),
            linked("std", 32, 35.0, 8.0, 36.0),
        ];
        let r = analysed(rows, &Thresholds::default());
        assert!(r.network.as_ref().and_then(|n| n.ceiling).is_none(), "{:?}", r.network);
        assert!(link_evidence(&r.results, 2, &Thresholds::default())
            .rows
            .iter()
            .all(Option::is_none));
    }

    #[test]
    fn a_row_another_invocation_overlapped_gives_no_ceiling() {
        // Still rising to 16 workers; at 32 the bodies grew and MiB/s stayed flat, but
        // another invocation ran beside that row for 60% of it: its neighbour filled
        // the link, and 21 MiB/s is not the link's ceiling.
        let rows = |overlap: Option<crate::model::Overlap>| {
            let mut rows = vec![
                linked("std", 1, 2.4, 0.3, 19.0),
                linked("std", 16, 20.0, 4.0, 30.0),
                linked("std", 32, 21.0, 12.0, 40.0),
            ];
            rows[2].overlap = overlap;
            rows
        };
        let alone = analysed(rows(None), &Thresholds::default());
        let c = alone.network.as_ref().and_then(|n| n.ceiling);
        assert_eq!(c.map(|c| c.mib_per_s), Some(21.0), "the same row alone counts: {c:?}");
        let shared = crate::model::Overlap {
            other_invocations: 1,
            overlapped_fraction: 0.6,
        };
        let r = analysed(rows(Some(shared)), &Thresholds::default());
        assert!(r.network.as_ref().and_then(|n| n.ceiling).is_none(), "{:?}", r.network);
        assert!(
            verdicts(&r).iter().all(|v| v.2 != crate::model::Verdict::Bandwidth),
            "{:?}",
            verdicts(&r)
        );
    }

    #[test]
    fn a_row_above_the_probes_figure_revises_the_ceiling_and_no_line_says_above_100_percent() {
        // The line was 46 MiB/s against a probe's 40 ("115%"); here 45 (46 is
        // the edge of a burst, 1.15x).
        let mut rows = on_a_full_link();
        rows[3].mib_per_s = 45.0;
        let mut r = crate::analysis::summarized(rows);
        r.network = with_probe(40.0, false).network;
        crate::analysis::analyse(&mut r, &Thresholds::default());
        let c = r.network.as_ref().unwrap().ceiling.unwrap();
        assert_eq!((c.mib_per_s, c.revised_from_mib_per_s), (45.0, Some(40.0)), "{c:?}");
        let d = r.results[3].diagnosis.as_ref().unwrap();
        assert!(
            d.explanation.contains("100% of the 45.0 MiB/s") && d.explanation.contains("revised up from 40.0"),
            "{}",
            d.explanation
        );
        for row in &r.results {
            let text = &row.diagnosis.as_ref().unwrap().explanation;
            for pct in text.split('%').rev().skip(1) {
                let n: String = pct.chars().rev().take_while(char::is_ascii_digit).collect();
                let n: u32 = n.chars().rev().collect::<String>().parse().unwrap_or(0);
                assert!(n <= 100, "{text}");
            }
        }
        // On burst credit (over 1.15x the probe's figure): above it, in words.
        let mut rows = on_a_full_link();
        rows[3].mib_per_s = 50.0;
        let mut r = crate::analysis::summarized(rows);
        r.network = with_probe(40.0, false).network;
        crate::analysis::analyse(&mut r, &Thresholds::default());
        let d = r.results[3].diagnosis.as_ref().unwrap();
        assert!(
            d.explanation.contains("above the") && !d.explanation.contains('%'),
            "{}",
            d.explanation
        );
    }
}

//! What a row's timeline says, in words: an ordered list of rules, each reading the
//! intervals of one configuration and adding a note with its figures when it finds
//! something. In order: a burst then a settled rate, throttling that began at some
//! point, a stall (nothing completing while requests were in flight), a slow start
//! (and what the first requests paid for), and the stragglers (the share of the wall
//! time the last 1% and 5% of GETs held). The rules read a row in intervals of at
//! least 100 ms (`Timeline::coarsened`): a row is drawn in about 50 intervals
//! however short, and the rules were made for, and are tested at, 100 ms.

use crate::model::stats::median;
use crate::model::{
    CeilingSource, ConfigResult, ErrorKind, Figure, FigureName, Thresholds, Timeline, BASE_INTERVAL_MS,
};

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// A burst: its rate at least this many times the settled rate.
const BURST_RATIO: f64 = 1.5;
/// A settled rate: the cumulative curve's residuals (RMS) within this share of what
/// the settled phase moved.
const SETTLED_FIT: f64 = 0.1;
/// A settled phase covers at least this share of the row's full intervals.
const SETTLED_MIN_SHARE: f64 = 0.2;
/// A stall lasts at least this many times the row's median GET (and two intervals).
const STALL_TTLB_FACTOR: f64 = 10.0;
/// A slow start: leading intervals under this share of the steady rate...
const SLOW_START_SHARE: f64 = 0.5;
/// ...for at least this many times the row's median GET (and two intervals).
const SLOW_START_TTLB_FACTOR: f64 = 3.0;
/// Stragglers are said when the last 1% of GETs held at least this share of the wall
/// time (the figures are always set).
const STRAGGLER_NOTE_SHARE: f64 = 0.1;
/// Fewer GETs than this: no straggler figures (1% of them is less than one GET).
const STRAGGLER_MIN_GETS: u64 = 100;

/// What one rule found: a note (empty: figures only) and the figures it rests on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    pub(crate) note: String,
    pub(crate) figures: Vec<(FigureName, Figure)>,
}

/// A rule: the row and its timeline in, a finding or nothing out.
type Rule = fn(&ConfigResult, &Timeline) -> Option<Finding>;

/// The rules, in the order their notes are written.
const RULES: [Rule; 5] = [burst_then_settled, throttling_began, stall, slow_start, stragglers];

/// Every finding of the row's timeline, in the rules' order (none without one).
pub(crate) fn findings(row: &ConfigResult) -> Vec<Finding> {
    let Some(t) = row.timeline.as_ref().filter(|t| !t.is_empty() && t.interval_ms > 0) else {
        return Vec::new();
    };
    let t = t.coarsened(BASE_INTERVAL_MS);
    RULES.iter().filter_map(|rule| rule(row, &t)).collect()
}

/// The settled rate after a burst the row's timeline shows, in body MiB/s (a rate
/// found in wire bytes scaled by the row's body share of them), if it shows one.
pub(crate) fn settled_mib_per_s(row: &ConfigResult) -> Option<f64> {
    let t = row.timeline.as_ref().filter(|t| !t.is_empty() && t.interval_ms > 0)?;
    let t = &*t.coarsened(BASE_INTERVAL_MS);
    let settled = burst_then_settled(row, t)?
        .figures
        .iter()
        .find(|(n, _)| *n == FigureName::SettledMibPerS)
        .map(|(_, f)| f.value())?;
    let wire: u64 = shaped_bytes(t).0.iter().sum();
    let body: u64 = t.body_bytes.iter().sum();
    Some(if wire > 0 && body > 0 {
        settled * body as f64 / wire as f64
    } else {
        settled
    })
}

/// The bytes a network shapes, per interval: the wire bytes the transport read when
/// the timeline has them, else the body bytes; and which, in words.
fn shaped_bytes(t: &Timeline) -> (&[u64], &'static str) {
    if t.wire_bytes.len() == t.len() && t.wire_bytes.iter().any(|&b| b > 0) {
        (&t.wire_bytes, "wire bytes")
    } else {
        (&t.body_bytes, "body bytes")
    }
}

/// The thresholds a row is judged by: with a settled rate of its own after a burst,
/// that rate is its bandwidth ceiling (source `timeline`), whatever the run's; else
/// the run's `thresholds`.
pub(crate) fn row_thresholds(row: &ConfigResult, thresholds: &Thresholds) -> Thresholds {
    match settled_mib_per_s(row) {
        Some(s) => Thresholds {
            bandwidth_ceiling_mib_per_s: Some(s),
            bandwidth_ceiling_source: Some(CeilingSource::Timeline),
            ..*thresholds
        },
        None => *thresholds,
    }
}

/// For each row without a settled phase of its own, the lowest settled rate another
/// row of its bucket showed (MiB/s), if one did.
fn bucket_settled(rows: &[ConfigResult]) -> Vec<Option<f64>> {
    // Each row's own settled rate, fitted once (the fit is quadratic in intervals).
    let own: Vec<Option<f64>> = rows.iter().map(settled_mib_per_s).collect();
    rows.iter()
        .zip(&own)
        .map(|(row, mine)| {
            let lowest = rows
                .iter()
                .zip(&own)
                .filter_map(|(r, s)| s.filter(|_| r.bucket == row.bucket))
                .fold(f64::INFINITY, f64::min);
            (mine.is_none() && lowest.is_finite()).then_some(lowest)
        })
        .collect()
}

/// Rows that moved more than 15% over a settled rate another row of their bucket
/// showed (and no settled phase of their own) ran on burst credit: `in_burst`.
pub(crate) fn flag_bursts(rows: &mut [ConfigResult]) {
    let settled = bucket_settled(rows);
    for (row, lowest) in rows.iter_mut().zip(settled) {
        if lowest.is_some_and(|s| row.mib_per_s > super::network::BURST_ROW_FACTOR * s) {
            row.in_burst = true;
        }
    }
}

/// A note under each row [`flag_bursts`] flagged: the rate it moved at against the
/// settled rate its bucket showed, and what that means.
pub(crate) fn burst_notes(rows: &mut [ConfigResult]) {
    let settled = bucket_settled(rows);
    for (row, lowest) in rows.iter_mut().zip(settled) {
        let Some(settled) = lowest.filter(|s| row.in_burst && row.mib_per_s > super::network::BURST_ROW_FACTOR * s)
        else {
            continue;
        };
        let note = format!(
            "inside a burst: {:.1} MiB in all at {:.1} MiB/s, {:.1}x the settled {settled:.1} MiB/s another row of \
             this bucket showed: it ran on burst credit (left over, or refilled while the link was idle), so its \
             figures flatter the network",
            row.bytes as f64 / MIB,
            row.mib_per_s,
            row.mib_per_s / settled
        );
        if let Some(d) = row.diagnosis.as_mut() {
            d.notes.push(note);
        }
    }
}

/// Adds the row's findings to its diagnosis: notes and figures.
pub(crate) fn annotate(row: &mut ConfigResult) {
    let found = findings(row);
    if let Some(d) = row.diagnosis.as_mut() {
        for f in found {
            for (name, figure) in f.figures {
                d.set_figure(name, figure);
            }
            if !f.note.is_empty() {
                d.notes.push(f.note);
            }
        }
    }
}

/// The intervals that lasted their whole width (the last one may be cut by the end
/// of the row; kept when it is at least 90% of the width).
fn full_intervals(row: &ConfigResult, t: &Timeline) -> usize {
    let width = f64::from(t.interval_ms);
    let last = row.wall_ms - (t.len() - 1) as f64 * width;
    if last >= 0.9 * width {
        t.len()
    } else {
        t.len() - 1
    }
}

/// The cumulative MiB at the end of each full interval, from (0 s, 0 MiB): the curve a
/// burst bends. Lumpy intervals (GETs ending together) barely move it.
fn cumulative_mib(row: &ConfigResult, t: &Timeline) -> Vec<(f64, f64)> {
    let width_s = f64::from(t.interval_ms) / 1000.0;
    let mut total = 0.0;
    let mut points = vec![(0.0, 0.0)];
    for (i, &b) in shaped_bytes(t).0[..full_intervals(row, t)].iter().enumerate() {
        total += b as f64 / MIB;
        points.push(((i + 1) as f64 * width_s, total));
    }
    points
}

/// A fitted line: slope, intercept and the residuals' sum of squares.
type Line = (f64, f64, f64);

/// The least-squares line through `points`.
fn line(points: &[(f64, f64)]) -> Line {
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let intercept = my - slope * mx;
    let sse = points.iter().map(|p| (p.1 - slope * p.0 - intercept).powi(2)).sum();
    (slope, intercept, sse)
}

/// The two lines (split at a shared point, each over at least 3 points) that fit the
/// cumulative curve best.
fn two_lines(points: &[(f64, f64)]) -> Option<(Line, Line, usize)> {
    (2..points.len().checked_sub(3)?)
        .map(|k| (line(&points[..=k]), line(&points[k..]), k))
        .min_by(|a, b| (a.0 .2 + a.1 .2).total_cmp(&(b.0 .2 + b.1 .2)))
}

/// A burst then a settled rate: the cumulative MiB of the full intervals follow one
/// line, then a line at least 1.5 times less steep for the rest (at least a fifth of
/// the row), closely (the second line's residuals within a tenth of what it moved).
/// The burst is what moved where the lines meet. Read in wire bytes when the timeline
/// has them (what a NIC shapes), else in body bytes.
fn burst_then_settled(row: &ConfigResult, t: &Timeline) -> Option<Finding> {
    let points = cumulative_mib(row, t);
    let ((r1, b1, _), (r2, b2, sse2), k) = two_lines(&points)?;
    let end_s = points.last()?.0;
    let settled_s = end_s - points[k].0;
    let moved_after = r2 * settled_s;
    let rms2 = (sse2 / (points.len() - k) as f64).sqrt();
    if r2 <= 0.0 || r1 < BURST_RATIO * r2 || settled_s < SETTLED_MIN_SHARE * end_s || rms2 > SETTLED_FIT * moved_after {
        return None;
    }
    let burst_s = ((b2 - b1) / (r1 - r2)).clamp(0.0, end_s);
    let burst_mib = r1 * burst_s + b1;
    Some(Finding {
        note: format!(
            "burst then settled: {burst_mib:.1} MiB at {r1:.1} MiB/s (the first {:.0} ms), then a settled {r2:.1} MiB/s \
             for the rest ({}): the network gave a burst; a row that moves less than the burst runs inside it \
             and flatters the network",
            burst_s * 1000.0,
            shaped_bytes(t).1
        ),
        figures: vec![
            (FigureName::BurstMib, Figure::Mib(burst_mib)),
            (FigureName::BurstMibPerS, Figure::MibPerS(r1)),
            (FigureName::SettledMibPerS, Figure::MibPerS(r2)),
        ],
    })
}

/// Throttling that began at some interval: the first with a 503/429 answer (retried
/// or not); said with the rate before and after it.
fn throttling_began(row: &ConfigResult, t: &Timeline) -> Option<Finding> {
    let failed = t.errors.iter().find(|k| k.kind == ErrorKind::Throttled);
    let throttled = |i: usize| {
        Timeline::at(&t.throttled_responses, i) + failed.map_or(0, |k| k.counts.0.get(i).copied().unwrap_or(0))
    };
    let first = (0..t.len()).find(|&i| throttled(i) > 0)?;
    let total: u32 = (0..t.len()).map(throttled).sum();
    let at_ms = first as f64 * f64::from(t.interval_ms);
    let per_s = |from: usize, to: usize| {
        let gets: u32 = t.gets[from..to].iter().sum();
        f64::from(gets) / ((to - from).max(1) as f64 * f64::from(t.interval_ms) / 1000.0)
    };
    let end = full_intervals(row, t).max(first + 1);
    let when = if first == 0 {
        "from the first interval".to_string()
    } else {
        format!(
            "at {:.1} s ({:.0} objects/s before, {:.0} after)",
            at_ms / 1000.0,
            per_s(0, first),
            per_s(first, end)
        )
    };
    Some(Finding {
        note: format!("throttling began {when}: {total} 503 SlowDown/429 answers from then on, none before"),
        figures: vec![(FigureName::ThrottlingAtMs, Figure::Ms(at_ms))],
    })
}

/// The row's median GET, ms (at least 1 ms, for the thresholds scaled by it).
fn typical_get_ms(row: &ConfigResult) -> f64 {
    row.ttlb_ms.p50.max(1.0)
}

/// A stall: the longest run of intervals in which nothing completed (ok or failed)
/// while requests were in flight, when it lasted at least two intervals and ten
/// median GETs.
fn stall(row: &ConfigResult, t: &Timeline) -> Option<Finding> {
    let errors = t.errors_total();
    let quiet = |i: usize| t.gets[i] == 0 && errors[i] == 0 && t.in_flight[i] >= 0.5;
    let (mut best, mut run_start, mut run) = ((0, 0), 0, 0);
    for i in 0..t.len() {
        if quiet(i) {
            if run == 0 {
                run_start = i;
            }
            run += 1;
            if run > best.1 {
                best = (run_start, run);
            }
        } else {
            run = 0;
        }
    }
    let width = f64::from(t.interval_ms);
    let stall_ms = best.1 as f64 * width;
    if best.1 < 2 || stall_ms < STALL_TTLB_FACTOR * typical_get_ms(row) {
        return None;
    }
    let at_ms = best.0 as f64 * width;
    let in_flight = median(t.in_flight[best.0..best.0 + best.1].to_vec()).unwrap_or(0.0);
    Some(Finding {
        note: format!(
            "stall: nothing completed for {stall_ms:.0} ms from {:.1} s with {in_flight:.1} requests in flight \
             (connections that stopped sending, or a frozen client)",
            at_ms / 1000.0
        ),
        figures: vec![
            (FigureName::StallMs, Figure::Ms(stall_ms)),
            (FigureName::StallAtMs, Figure::Ms(at_ms)),
        ],
    })
}

/// A slow start: leading intervals under half the steady objects/s (the median of the
/// full intervals), for at least two intervals and three median GETs; said with what
/// the timed requests paid for (connections, handshakes, sessions).
fn slow_start(row: &ConfigResult, t: &Timeline) -> Option<Finding> {
    let full = full_intervals(row, t);
    let rates: Vec<f64> = t.gets[..full].iter().map(|&g| f64::from(g)).collect();
    let steady = median(rates.clone())?;
    let slow = rates.iter().take_while(|&&r| r < SLOW_START_SHARE * steady).count();
    let width = f64::from(t.interval_ms);
    let slow_ms = slow as f64 * width;
    if full < 5 || slow < 2 || slow * 2 > full || slow_ms < SLOW_START_TTLB_FACTOR * typical_get_ms(row) {
        return None;
    }
    let share = rates[..slow].iter().sum::<f64>() / slow as f64 / steady;
    let why = match row.breakdown.as_ref() {
        Some(b) if b.connections_opened > 0 || b.session_requests > 0 => format!(
            "the timed requests opened {} connection(s) ({} TLS handshakes) and sent {} CreateSession",
            b.connections_opened, b.tls_handshakes, b.session_requests
        ),
        _ => "no connection or session was opened in it: the server or the network was slow to start".to_string(),
    };
    Some(Finding {
        note: format!(
            "slow start: the first {slow_ms:.0} ms ran at {:.0}% of the steady {:.0} objects/s; {why}",
            share * 100.0,
            steady * 1000.0 / width
        ),
        figures: vec![
            (FigureName::SlowStartMs, Figure::Ms(slow_ms)),
            (FigureName::SlowStartRateShare, Figure::Ratio(share)),
        ],
    })
}

/// The stragglers: the share of the wall time after 99% (and 95%) of the GETs had
/// ended. Figures for every row of 100 GETs or more; a note when the last 1% held a
/// tenth of the wall time or more.
fn stragglers(row: &ConfigResult, t: &Timeline) -> Option<Finding> {
    let (d95, d99) = (t.done_95pct_ms?, t.done_99pct_ms?);
    if row.requests < STRAGGLER_MIN_GETS || row.wall_ms <= 0.0 {
        return None;
    }
    let share = |done: f64| ((row.wall_ms - done) / row.wall_ms).clamp(0.0, 1.0);
    let (s1, s5) = (share(d99), share(d95));
    let last1 = row.requests.div_ceil(100);
    let last5 = row.requests.div_ceil(20);
    // Most of the wall time the tail's, and not hedged: hedging is what cuts it.
    let try_hedging = if s5 >= 0.5 && row.axes.hedge.is_off() {
        "; the tail holds most of the wall time: hedged GETs (`--hedge p95`, docs/hedging.md) are the change to try"
    } else {
        ""
    };
    let note = if s1 >= STRAGGLER_NOTE_SHARE {
        format!(
            "stragglers: the last 1% of GETs ({last1}) held {:.0}% of the wall time (99% had ended at {d99:.0} ms of \
             {:.0}), the last 5% ({last5}) {:.0}%{try_hedging}",
            s1 * 100.0,
            row.wall_ms,
            s5 * 100.0
        )
    } else {
        String::new()
    };
    Some(Finding {
        note,
        figures: vec![
            (FigureName::StragglersLast1PctShare, Figure::Ratio(s1)),
            (FigureName::StragglersLast5PctShare, Figure::Ratio(s5)),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;

    /// A row of `wall_ms` whose timeline (100 ms intervals) has these GETs of 64 KiB
    /// per interval, with `in_flight` requests throughout.
    fn timed(gets: &[u32], in_flight: f64) -> ConfigResult {
        let wall = gets.len() as f64 * 100.0;
        let mut r = row("b-1", 16, 1, wall, 0);
        r.requests = gets.iter().map(|&g| u64::from(g)).sum();
        r.ttlb_ms.p50 = 5.0;
        r.timeline = Some(Timeline {
            interval_ms: 100,
            gets: gets.to_vec(),
            body_bytes: gets.iter().map(|&g| u64::from(g) * 65_536).collect(),
            ttfb_p50_ms: vec![5.0; gets.len()],
            ttfb_p99_ms: vec![9.0; gets.len()],
            in_flight: vec![in_flight; gets.len()],
            ..Timeline::default()
        });
        r
    }

    fn figure(f: &[Finding], name: FigureName) -> f64 {
        f.iter()
            .flat_map(|f| &f.figures)
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.value())
            .unwrap_or_else(|| panic!("no {name} in {f:?}"))
    }

    #[test]
    fn a_burst_then_a_settled_rate_is_sized_from_the_bytes_moved() {
        // 40 MiB/s (64 GETs of 64 KiB per 100 ms) for 0.5 s, then 10 MiB/s for 1.5 s.
        let mut gets = vec![64; 5];
        gets.extend([16; 15]);
        let f = findings(&timed(&gets, 16.0));
        assert!(
            f[0].note.starts_with("burst then settled: 20.0 MiB at 40.0 MiB/s"),
            "{f:?}"
        );
        assert!((figure(&f, FigureName::SettledMibPerS) - 10.0).abs() < 0.01);
        // A steady row, and one whose tail alone is slow: no burst.
        assert!(findings(&timed(&[32; 20], 16.0))
            .iter()
            .all(|f| !f.note.contains("burst")));
        let mut tail = vec![32; 20];
        tail.extend([4, 2, 1]);
        assert!(findings(&timed(&tail, 16.0)).iter().all(|f| !f.note.contains("burst")));
    }

    #[test]
    fn the_wire_bytes_are_read_when_the_timeline_has_them() {
        // Body bytes steady at 20 MiB/s; the wire bytes a burst of 40 MiB/s for
        // 0.5 s, then 10 MiB/s: the rule reads the wire.
        let mut r = timed(&[32; 20], 16.0);
        let t = r.timeline.as_mut().unwrap();
        let mib_per_interval = |rate: u64| rate * (1 << 20) / 10;
        t.wire_bytes = (0..20).map(|i| mib_per_interval(if i < 5 { 40 } else { 10 })).collect();
        let f = findings(&r);
        assert!(
            f[0].note.starts_with("burst then settled: 20.0 MiB at 40.0 MiB/s"),
            "{f:?}"
        );
        assert!(f[0].note.contains("(wire bytes)"), "{f:?}");
        // The ceiling in body MiB/s: 10 MiB/s scaled by the body's 40 MiB of 35 wire.
        let body_share = 40.0 / 35.0;
        assert!((settled_mib_per_s(&r).unwrap() - 10.0 * body_share).abs() < 0.01);
        // Without them, the body bytes: steady, no burst.
        r.timeline.as_mut().unwrap().wire_bytes.clear();
        assert!(findings(&r).iter().all(|f| !f.note.contains("burst")));
    }

    #[test]
    fn lumpy_intervals_barely_move_the_cumulative_curve() {
        // 32 GETs ending together every 200 ms after the burst (all in flight sharing
        // the settled rate): 0 and 32 in turn, 10 MiB/s over each pair.
        let mut gets = vec![64; 5];
        for _ in 0..8 {
            gets.extend([0, 32]);
        }
        let f = findings(&timed(&gets, 16.0));
        assert!((figure(&f, FigureName::BurstMib) - 20.0).abs() < 1.0, "{f:?}");
        assert!((figure(&f, FigureName::BurstMibPerS) - 40.0).abs() < 1.0, "{f:?}");
        assert!((figure(&f, FigureName::SettledMibPerS) - 10.0).abs() < 0.5, "{f:?}");
    }

    #[test]
    fn a_rows_own_settled_rate_is_its_ceiling_and_a_faster_row_ran_in_the_burst() {
        let mut gets = vec![64; 5];
        gets.extend([16; 15]);
        let outlasting = timed(&gets, 16.0);
        let mut inside = timed(&[64; 4], 16.0);
        inside.mib_per_s = 40.0;
        let mut slow = timed(&[8; 10], 16.0);
        slow.mib_per_s = 5.0;
        let t = row_thresholds(&outlasting, &Thresholds::default());
        assert_eq!(t.bandwidth_ceiling_source, Some(CeilingSource::Timeline));
        assert!((t.bandwidth_ceiling_mib_per_s.unwrap() - 10.0).abs() < 0.01);
        assert_eq!(row_thresholds(&inside, &Thresholds::default()), Thresholds::default());
        let mut rows = vec![outlasting, inside, slow];
        flag_bursts(&mut rows);
        assert_eq!(
            rows.iter().map(|r| r.in_burst).collect::<Vec<_>>(),
            [false, true, false]
        );
        // Judged by that ceiling, the outlasting row is bound by the network.
        let mut result = crate::model::test_rows::result(rows);
        result.results[0].mib_per_s = 17.5;
        crate::analysis::analyse(&mut result, &Thresholds::default());
        let d = result.results[0].diagnosis.as_ref().unwrap();
        assert_eq!(d.verdict, crate::model::Verdict::Bandwidth, "{d:?}");
        assert!(d.explanation.contains("(source: timeline)"), "{}", d.explanation);
        let notes = |i: usize| result.results[i].diagnosis.as_ref().unwrap().notes.clone();
        let inside = notes(1);
        assert!(
            inside
                .iter()
                .any(|n| n.starts_with("inside a burst:") && n.contains("at 40.0 MiB/s, 4.0x the settled 10.0 MiB/s")),
            "{inside:?}"
        );
        assert!(notes(2).iter().all(|n| !n.starts_with("inside a burst")));
    }

    #[test]
    fn a_stall_is_timed_and_placed() {
        let mut gets = vec![30; 10];
        gets.extend([0; 20]);
        gets.extend([30; 10]);
        let f = findings(&timed(&gets, 16.0));
        assert_eq!(figure(&f, FigureName::StallMs), 2000.0);
        assert_eq!(figure(&f, FigureName::StallAtMs), 1000.0);
        assert!(f
            .iter()
            .any(|f| f.note.starts_with("stall: nothing completed for 2000 ms from 1.0 s")));
        // Idle (nothing in flight) is not a stall; one empty interval is not either.
        assert!(findings(&timed(&gets, 0.0))
            .iter()
            .all(|f| !f.note.starts_with("stall")));
        let mut blip = vec![30; 10];
        blip.push(0);
        blip.extend([30; 10]);
        assert!(findings(&timed(&blip, 16.0))
            .iter()
            .all(|f| !f.note.starts_with("stall")));
    }

    #[test]
    fn throttling_is_dated_to_its_first_interval() {
        let mut r = timed(&[30; 20], 16.0);
        let t = r.timeline.as_mut().unwrap();
        t.throttled_responses = vec![0; 20];
        t.throttled_responses[12] = 3;
        t.throttled_responses[15] = 5;
        let f = findings(&r);
        assert_eq!(figure(&f, FigureName::ThrottlingAtMs), 1200.0);
        assert!(
            f.iter()
                .any(|f| f.note.contains("throttling began at 1.2 s") && f.note.contains("8 503 SlowDown")),
            "{f:?}"
        );
    }

    #[test]
    fn a_slow_start_says_what_the_first_requests_paid_for() {
        let mut gets = vec![2, 3, 5];
        gets.extend([30; 12]);
        let mut r = timed(&gets, 16.0);
        r.breakdown = Some(crate::model::Breakdown {
            connections_opened: 16,
            tls_handshakes: 16,
            ..Default::default()
        });
        let f = findings(&r);
        assert_eq!(figure(&f, FigureName::SlowStartMs), 300.0);
        assert!(
            f.iter()
                .any(|f| f.note.contains("opened 16 connection(s) (16 TLS handshakes)")),
            "{f:?}"
        );
    }

    #[test]
    fn stragglers_are_the_wall_time_after_99_and_95_percent() {
        let mut r = timed(&[50; 10], 16.0);
        let t = r.timeline.as_mut().unwrap();
        t.done_99pct_ms = Some(600.0);
        t.done_95pct_ms = Some(500.0);
        let f = findings(&r);
        assert_eq!(figure(&f, FigureName::StragglersLast1PctShare), 0.4);
        assert_eq!(figure(&f, FigureName::StragglersLast5PctShare), 0.5);
        assert!(
            f.iter()
                .any(|f| f.note.starts_with("stragglers: the last 1% of GETs (5) held 40%")),
            "{f:?}"
        );
        // The last 5% held half the wall time: hedging is named, unless the row hedged.
        assert!(f.iter().any(|f| f.note.contains("hedged GETs (`--hedge p95`")), "{f:?}");
        r.axes.hedge = crate::model::Hedge::Percentile(95);
        assert!(!findings(&r).iter().any(|f| f.note.contains("hedged GETs")));
    }
}

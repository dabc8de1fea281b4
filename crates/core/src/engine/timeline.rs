//! The GETs of a configuration as events (when each was sent and ended, relative to
//! the timed phase's start, its bytes, attempts and outcome), recorded by the driver
//! that ran it into its own shard without a lock, and the row's [`Timeline`] built
//! from them once the configuration ends; beside them, the transport's bytes read,
//! sampled (every 1 ms at first, slowing to [`BASE_INTERVAL_MS`]) by a [`WireSampler`] (one task, no lock on the
//! read path: each read adds to one atomic counter).

use std::time::{Duration, Instant};

use super::hedge::{HedgeCopy, HedgeFate};
use crate::model::stats::round3;
use crate::model::timeline::BASE_INTERVAL_MS;
use crate::model::{Bounded, ErrorKind, KindCounts, Timeline};
use crate::s3::get::Outcome;
use crate::transport::Transport;

/// One GET of the timed phase, as the timeline and the request log see it: 40 bytes
/// (times in µs up to 71 minutes, saturating).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GetEvent {
    /// Sent (its pool slot in hand), µs after the timed phase began.
    pub sent_us: u32,
    /// Response headers, µs after it was sent (retries included).
    pub headers_us: u32,
    /// Last body byte (or the failure), µs after it was sent.
    pub done_us: u32,
    /// First byte at the wire of the last attempt, µs.
    pub ttfb_us: u32,
    /// Body bytes (0 for a failure).
    pub bytes: u64,
    /// Attempts made (1 without a retry).
    pub attempts: u16,
    /// 503/429 answers among them.
    pub throttled: u16,
    /// `None` for a success, else what the GET failed with.
    pub error: Option<ErrorKind>,
    /// The connection its last attempt went out on (the transport's number, from 1;
    /// saturating); 0 when it got none.
    pub connection_id: u32,
}

impl GetEvent {
    /// The event of a GET sent `sent` after the timed phase began.
    pub fn of(sent: Duration, outcome: &Outcome) -> GetEvent {
        let us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        let error = outcome.result.as_ref().err().map(|f| f.kind);
        GetEvent {
            sent_us: us(sent),
            headers_us: us(outcome.headers_at),
            done_us: us(outcome.ttlb),
            ttfb_us: us(outcome.ttfb),
            bytes: *outcome.result.as_ref().unwrap_or(&0),
            attempts: u16::try_from(outcome.cold.attempts.max(1)).unwrap_or(u16::MAX),
            throttled: u16::try_from(
                outcome.cold.retry_causes.throttled + u64::from(error == Some(ErrorKind::Throttled)),
            )
            .unwrap_or(u16::MAX),
            error,
            connection_id: outcome
                .cold
                .connection_id
                .map_or(0, |id| u32::try_from(id).unwrap_or(u32::MAX)),
        }
    }

    /// When it ended, µs after the timed phase began.
    pub fn end_us(&self) -> u64 {
        u64::from(self.sent_us) + u64::from(self.done_us)
    }
}

/// One attempt of a GET that was retried, as the transport stamped it (the first
/// [`crate::transport::MAX_STAMPED_ATTEMPTS`] attempts of each): for the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptEvent {
    /// Its GET: the index of the GET's event among the configuration's.
    pub get: u32,
    /// Its number, from 1.
    pub attempt: u16,
    /// Handed over to the transport, µs after the timed phase began.
    pub sent_us: u32,
    /// Its response headers, µs after the timed phase began (`None`: it got none).
    pub headers_us: Option<u32>,
    /// Ended (its headers, or its failure), µs after the timed phase began.
    pub end_us: u32,
    /// The connection it went out on; 0 when it got none.
    pub connection_id: u32,
}

impl AttemptEvent {
    /// The attempts of a GET sent `sent` after the timed phase began whose event is
    /// number `get`: none unless it was retried.
    pub fn of(get: usize, sent: Duration, outcome: &Outcome) -> impl Iterator<Item = AttemptEvent> + '_ {
        let stamps = outcome.cold.attempt_stamps.as_slice();
        let retried = if outcome.cold.attempts > 1 { stamps } else { &[] };
        let at = move |ns: u64| u32::try_from((sent.as_nanos() as u64 + ns) / 1000).unwrap_or(u32::MAX);
        retried.iter().enumerate().map(move |(i, s)| AttemptEvent {
            get: u32::try_from(get).unwrap_or(u32::MAX),
            attempt: u16::try_from(i + 1).unwrap_or(u16::MAX),
            sent_us: at(s.sent_ns),
            headers_us: s.headers_ns.map(at),
            end_us: at(s.end_ns),
            connection_id: u32::try_from(s.connection_id).unwrap_or(u32::MAX),
        })
    }
}

/// A GET's hedge copy, as the request log sees it (times µs after the timed phase
/// began).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgeEvent {
    /// Its GET: the index of the GET's event among the configuration's.
    pub get: u32,
    pub sent_us: u32,
    /// Its response headers (`None`: it failed or was cancelled).
    pub headers_us: Option<u32>,
    pub end_us: u32,
    pub bytes: u64,
    pub attempts: u16,
    /// The connection its last attempt went out on; 0 when not known.
    pub connection_id: u32,
    pub error: Option<ErrorKind>,
    pub fate: HedgeFate,
}

impl HedgeEvent {
    /// The copy of GET number `get`, which was sent `sent` after the timed phase began.
    pub fn of(get: usize, sent: Duration, copy: &HedgeCopy) -> HedgeEvent {
        let us = |d: Duration| u32::try_from((sent + d).as_micros()).unwrap_or(u32::MAX);
        HedgeEvent {
            get: u32::try_from(get).unwrap_or(u32::MAX),
            sent_us: us(copy.sent_at),
            headers_us: copy.headers_at.map(us),
            end_us: us(copy.end_at),
            bytes: copy.bytes,
            attempts: copy.attempts,
            connection_id: copy.connection_id.map_or(0, |id| u32::try_from(id).unwrap_or(u32::MAX)),
            error: copy.error,
            fate: copy.fate,
        }
    }
}

/// The transport's bytes read since the timed phase began, at `at_us` after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WireSample {
    pub(crate) at_us: u64,
    pub(crate) bytes: u64,
}

/// Samples [`Transport::rx_bytes`] from the timed phase's start until
/// [`WireSampler::finish`], which takes a last sample: every 1 ms at first, then every
/// hundredth of the time gone by (at most every [`BASE_INTERVAL_MS`]), so a row of
/// any length has about two samples or more in each of its intervals (a fiftieth of
/// its wall time: [`Timeline::interval_for`]) and a long row not many more.
pub(crate) struct WireSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Vec<WireSample>>,
}

/// The wait before the next sample, `elapsed` into the timed phase.
fn sample_every(elapsed: Duration) -> Duration {
    (elapsed / 100).clamp(
        Duration::from_millis(1),
        Duration::from_millis(u64::from(BASE_INTERVAL_MS)),
    )
}

impl WireSampler {
    /// Starts sampling `transport` (its count at `start` is the zero).
    pub(crate) fn start(transport: &Transport, start: Instant) -> WireSampler {
        let transport = transport.clone();
        let base = transport.rx_bytes();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let next = Instant::now() + sample_every(start.elapsed());
                let last = tokio::select! {
                    biased;
                    _ = &mut stopped => true,
                    _ = tokio::time::sleep_until(next.into()) => false,
                };
                samples.push(WireSample {
                    at_us: start.elapsed().as_micros() as u64,
                    bytes: transport.rx_bytes().saturating_sub(base),
                });
                if last {
                    return samples;
                }
            }
        });
        WireSampler { stop, task }
    }

    /// Stops sampling; the samples, the last one taken now (none if the task failed).
    pub(crate) async fn finish(self) -> Vec<WireSample> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

/// Adds each sample's bytes (those read since the one before) to the interval its
/// span's middle fell in: a sample taken a little after an interval edge still counts
/// in the interval that ended there.
fn wire_per_interval(samples: &[WireSample], n: usize, width_us: u64) -> Vec<u64> {
    let mut out = vec![0u64; n];
    let mut before = WireSample { at_us: 0, bytes: 0 };
    for s in samples {
        let middle = (before.at_us + s.at_us) / 2;
        out[((middle / width_us) as usize).min(n - 1)] += s.bytes.saturating_sub(before.bytes);
        before = *s;
    }
    out
}

/// The timeline of a configuration whose timed phase took `wall` and whose GETs were
/// `events` (in any order), with the transport's bytes read sampled as `wire`:
/// intervals of [`Timeline::interval_for`] the wall time.
pub(crate) fn build(events: &[GetEvent], wall: Duration, wire: &[WireSample]) -> Timeline {
    let wall_ms = wall.as_secs_f64() * 1000.0;
    let width_ms = Timeline::interval_for(wall_ms);
    let width_us = u64::from(width_ms) * 1000;
    // A GET that ended after `wall` (rounding) counts in the last interval.
    let n = ((wall_ms / f64::from(width_ms)).ceil() as usize).clamp(1, crate::model::timeline::MAX_TIMELINE_INTERVALS);
    let bin = |us: u64| ((us / width_us) as usize).min(n - 1);
    let mut gets = vec![0u32; n];
    let mut body = vec![0u64; n];
    let mut throttled = vec![0u32; n];
    let mut retries = vec![0u32; n];
    let mut busy_us = vec![0u64; n];
    let mut ttfb: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut errors: Vec<(ErrorKind, Vec<u32>)> = Vec::new();
    for e in events {
        let at = bin(e.end_us());
        throttled[at] += u32::from(e.throttled);
        retries[at] += u32::from(e.attempts - 1);
        match e.error {
            None => {
                gets[at] += 1;
                body[at] += e.bytes;
                ttfb[at].push(u64::from(e.ttfb_us));
            }
            Some(kind) => {
                let i = errors.iter().position(|k| k.0 == kind).unwrap_or_else(|| {
                    errors.push((kind, vec![0; n]));
                    errors.len() - 1
                });
                errors[i].1[at] += 1;
            }
        }
        add_busy(&mut busy_us, u64::from(e.sent_us), e.end_us(), width_us);
    }
    let (p50, p99): (Vec<f64>, Vec<f64>) = ttfb.iter_mut().map(|v| percentiles_ms(v)).unzip();
    Timeline {
        interval_ms: width_ms,
        gets,
        body_bytes: body,
        wire_bytes: wire_per_interval(wire, n, width_us),
        ttfb_p50_ms: p50,
        ttfb_p99_ms: p99,
        in_flight: busy_us.iter().map(|&b| round1(b as f64 / width_us as f64)).collect(),
        errors: errors
            .into_iter()
            .map(|(kind, counts)| KindCounts {
                kind,
                counts: Bounded(counts),
            })
            .collect(),
        throttled_responses: throttled,
        retries,
        done_95pct_ms: done_at(events, 0.95),
        done_99pct_ms: done_at(events, 0.99),
    }
    .compact()
}

/// When the share `q` of `events` had ended (the end of the GET of rank
/// `ceil(q x n)` in the order they ended), ms after the start; `None` without events.
pub(crate) fn done_at(events: &[GetEvent], q: f64) -> Option<f64> {
    let mut ends: Vec<u64> = events.iter().map(GetEvent::end_us).collect();
    if ends.is_empty() {
        return None;
    }
    let rank = ((q * ends.len() as f64).ceil() as usize).clamp(1, ends.len());
    let (_, nth, _) = ends.select_nth_unstable(rank - 1);
    Some(round3(*nth as f64 / 1000.0))
}

/// Adds the time a request spent in flight (`from_us` to `to_us`) to each interval it
/// overlaps (the last interval takes what runs past the end).
fn add_busy(busy_us: &mut [u64], from_us: u64, to_us: u64, width_us: u64) {
    let n = busy_us.len();
    let mut t = from_us;
    while t < to_us {
        let i = ((t / width_us) as usize).min(n - 1);
        let end = if i == n - 1 { to_us } else { ((i as u64) + 1) * width_us };
        let until = end.min(to_us);
        busy_us[i] += until - t;
        t = until;
    }
}

/// The median and 99th percentile (nearest rank) of `us`, in ms; zeros when empty.
fn percentiles_ms(us: &mut [u64]) -> (f64, f64) {
    if us.is_empty() {
        return (0.0, 0.0);
    }
    us.sort_unstable();
    let rank = |q: f64| us[((q * us.len() as f64).ceil() as usize).clamp(1, us.len()) - 1];
    (round3(rank(0.5) as f64 / 1000.0), round3(rank(0.99) as f64 / 1000.0))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sent_ms: u32, took_ms: u32, ttfb_ms: u32) -> GetEvent {
        GetEvent {
            sent_us: sent_ms * 1000,
            headers_us: ttfb_ms * 1000,
            done_us: took_ms * 1000,
            ttfb_us: ttfb_ms * 1000,
            bytes: 1000,
            attempts: 1,
            throttled: 0,
            error: None,
            connection_id: 1,
        }
    }

    #[test]
    fn an_event_is_small() {
        assert_eq!(std::mem::size_of::<GetEvent>(), 40);
    }

    #[test]
    fn events_fall_in_the_interval_they_ended_in() {
        let mut events = vec![ok(0, 50, 10), ok(0, 150, 20), ok(120, 60, 30), ok(100, 199, 40)];
        events.push(GetEvent {
            attempts: 3,
            throttled: 2,
            error: Some(ErrorKind::Throttled),
            bytes: 0,
            ..ok(200, 50, 1)
        });
        let wire = [(101, 5000), (180, 5500), (240, 6000), (320, 6100)].map(|(ms, bytes)| WireSample {
            at_us: ms * 1000,
            bytes,
        });
        // A 5 s row: 50 intervals of 100 ms, the events in the first three.
        let t = build(&events, Duration::from_secs(5), &wire);
        assert_eq!(t.len(), 50);
        // Spans 0-101 (middle 50), 101-180 (140), 180-240 (210), 240-320 (280 ms).
        assert_eq!(t.wire_bytes[..3], [5000, 500, 600]);
        assert_eq!(t.interval_ms, 100);
        assert_eq!(t.gets[..3], [1, 2, 1]);
        assert_eq!(t.body_bytes[..3], [1000, 2000, 1000]);
        assert_eq!(t.ttfb_p50_ms[..3], [10.0, 20.0, 40.0]);
        assert_eq!(t.ttfb_p99_ms[..3], [10.0, 30.0, 40.0]);
        assert_eq!(t.throttled_responses[..3], [0, 0, 2]);
        assert_eq!(t.retries[..3], [0, 0, 2]);
        assert_eq!(t.errors_total()[..3], [0, 0, 1]);
        assert_eq!(t.errors[0].kind, ErrorKind::Throttled);
        // In flight: [0,50] + [0,100] in the first; [100,150] + [120,180] + [100,200]
        // in the second; [200,299] + [200,250] in the third.
        assert_eq!(t.in_flight[..3], [1.5, 2.1, 1.5]);
        assert_eq!(t.gets.iter().sum::<u32>(), 4);
        // Ends at 50, 150, 180, 250, 299 ms: 95% (rank 5) at 299, as 99%.
        assert_eq!((t.done_95pct_ms, t.done_99pct_ms), (Some(299.0), Some(299.0)));
        let many: Vec<GetEvent> = (0..100).map(|i| ok(0, i + 1, 1)).collect();
        assert_eq!(done_at(&many, 0.95), Some(95.0));
        assert_eq!(done_at(&many, 0.99), Some(99.0));
        assert_eq!(done_at(&[], 0.99), None);
    }

    #[test]
    fn a_row_of_any_length_gets_about_fifty_intervals() {
        let events: Vec<GetEvent> = (0..1000).map(|i| ok(i * 100, 50, 5)).collect();
        let t = build(&events, Duration::from_secs(100), &[]);
        assert_eq!(t.interval_ms, 2_000);
        assert_eq!(t.len(), 50);
        assert_eq!(t.gets.iter().sum::<u32>(), 1000);
        assert!(t.retries.is_empty() && t.errors.is_empty() && t.wire_bytes.is_empty());
        let stray = build(&[ok(5_000, 10, 1)], Duration::from_millis(1), &[]);
        assert_eq!(stray.gets, vec![1], "a GET past the wall time is in the last interval");
        // A short row (the demo's 63 ms at 256 workers): ~50 intervals, not one of 100 ms.
        let short: Vec<GetEvent> = (0..1000).map(|i| ok(i % 60, 3, 1)).collect();
        let t = build(&short, Duration::from_micros(63_400), &[]);
        assert_eq!((t.interval_ms, t.len()), (1, 64));
        assert_eq!(t.gets.iter().sum::<u32>(), 1000);
        assert!(t.gets.iter().filter(|&&g| g > 0).count() >= 50, "{:?}", t.gets);
    }

    #[test]
    fn wire_samples_come_often_enough_for_the_intervals() {
        for wall_ms in [20u64, 63, 400, 5_000, 60_000] {
            let width = Timeline::interval_for(wall_ms as f64);
            let at_end = sample_every(Duration::from_millis(wall_ms));
            assert!(
                at_end.as_secs_f64() * 1000.0 <= f64::from(width) / 2.0 + 0.5,
                "{wall_ms} ms: {at_end:?}"
            );
        }
        assert_eq!(sample_every(Duration::ZERO), Duration::from_millis(1));
        assert_eq!(sample_every(Duration::from_secs(3600)), Duration::from_millis(100));
    }
}

//! Hedged GETs: a GET that has no first byte after its driver's hedge delay (a fixed
//! delay, or the running percentile of the first-byte times that driver has seen, once
//! [`WARM_UP_GETS`] have finished) gets one more copy, through the same client and so
//! on another connection of the same lane; the first copy to finish with its whole
//! body wins and the other is dropped: cancelled where it is, its body not read on (the
//! bytes it had read are counted as discarded). At most one hedge per GET; the budget
//! (`max_hedge_percent`) refuses a hedge that would take the driver's hedges over that
//! share of its GETs started so far, so the configuration's stay within it too (a GET
//! refused asks again every [`RECHECK`] while it still has no first byte, as the
//! budget grows with the GETs started); each hedge
//! takes a slot of its driver's share of the sweep's pool like any GET, so the pool's
//! cap holds (a hedge still waiting for its slot when its GET ends was never sent, and
//! is not counted).
//! A hedge is not a retry, and a losing copy is not an error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::Semaphore;

use crate::model::stats::{histogram_us, micros};
use crate::model::{ErrorKind, Hedge, HedgeCounts};
use crate::s3::get::{Outcome, Progress, Reader};

/// GETs a percentile policy waits for before it hedges (the configuration's warm-up
/// GETs included): the first-byte times it takes its percentile of.
pub(crate) const WARM_UP_GETS: usize = 20;

/// How often a GET the budget refused asks again (at most).
const RECHECK: Duration = Duration::from_millis(20);

/// What became of a hedge copy (the request log's `fate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeFate {
    /// It finished first with its whole body: the GET's result is its.
    Won,
    /// It failed: the GET's result is the primary's.
    Lost,
    /// The primary finished first: the copy was dropped where it was.
    Cancelled,
}

impl HedgeFate {
    pub fn name(self) -> &'static str {
        match self {
            HedgeFate::Won => "won",
            HedgeFate::Lost => "lost",
            HedgeFate::Cancelled => "cancelled",
        }
    }
}

/// A hedge copy that was sent, times from its GET's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgeCopy {
    pub sent_at: Duration,
    /// Its response headers (`None`: it failed or was cancelled).
    pub headers_at: Option<Duration>,
    /// Its last body byte, its failure, or when it was dropped.
    pub end_at: Duration,
    /// Body bytes it read (a cancelled copy's: those read before it was dropped).
    pub bytes: u64,
    /// Its attempts (a cancelled copy's are not known: 1).
    pub attempts: u16,
    /// The connection its last attempt went out on (`None`: not known).
    pub connection_id: Option<u64>,
    /// A failed copy's error.
    pub error: Option<ErrorKind>,
    pub fate: HedgeFate,
}

impl HedgeCopy {
    /// A copy sent `sent_at` after its GET began that ended with `outcome` (its times
    /// from its own send).
    fn ended(sent_at: Duration, outcome: &Outcome, fate: HedgeFate) -> HedgeCopy {
        HedgeCopy {
            sent_at,
            headers_at: outcome.result.is_ok().then_some(sent_at + outcome.headers_at),
            end_at: sent_at + outcome.ttlb,
            bytes: *outcome.result.as_ref().unwrap_or(&0),
            attempts: u16::try_from(outcome.cold.attempts.max(1)).unwrap_or(u16::MAX),
            connection_id: outcome.cold.connection_id,
            error: outcome.result.as_ref().err().map(|f| f.kind),
            fate,
        }
    }
}

/// One driver's hedging: its policy, its budget, what its GETs have seen and what it
/// did. Each driver of a configuration has its own (its lane's GETs, its lane's first
/// bytes), so drivers never wait on each other; the rows add their counts up
/// ([`HedgeCounts::add`]). The first-byte estimate is an hdrhistogram (an O(1) record
/// per GET), its percentile read again every [`REFRESH_EVERY`] GETs into `delay_us`.
#[derive(Debug)]
pub(crate) struct Hedger {
    policy: Hedge,
    max_percent: u32,
    /// GETs started.
    gets: AtomicU64,
    sent: AtomicU64,
    refused: AtomicU64,
    won: AtomicU64,
    discarded_bytes: AtomicU64,
    /// The percentile policy's delay, µs; [`NOT_YET`] while it warms up.
    delay_us: AtomicU64,
    /// First-byte times of the finished GETs, µs (locked by this driver's GETs alone,
    /// one at a time: never contended).
    first_bytes_us: Mutex<Histogram<u64>>,
}

/// How many first bytes a percentile policy learns between two reads of its percentile.
const REFRESH_EVERY: u64 = 16;

/// `delay_us` before a percentile policy has seen [`WARM_UP_GETS`] first bytes.
const NOT_YET: u64 = u64::MAX;

impl Hedger {
    /// The hedger of a driver with `policy` (`None`: off).
    pub(crate) fn new(policy: Hedge, max_percent: u32) -> Option<Hedger> {
        (!policy.is_off()).then(|| Hedger {
            policy,
            max_percent,
            gets: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            won: AtomicU64::new(0),
            discarded_bytes: AtomicU64::new(0),
            delay_us: AtomicU64::new(NOT_YET),
            first_bytes_us: Mutex::new(histogram_us()),
        })
    }

    /// What hedging did so far.
    pub(crate) fn counts(&self) -> HedgeCounts {
        HedgeCounts {
            hedges_sent: self.sent.load(Ordering::Relaxed),
            hedges_won: self.won.load(Ordering::Relaxed),
            hedge_discarded_bytes: self.discarded_bytes.load(Ordering::Relaxed),
            hedges_refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// How long a GET waits for its first byte before it is hedged (`None`: not yet,
    /// a percentile policy still warming up).
    fn delay(&self) -> Option<Duration> {
        match self.policy {
            Hedge::Off => None,
            Hedge::AfterMs(ms) => Some(Duration::from_millis(u64::from(ms))),
            Hedge::Percentile(_) => match self.delay_us.load(Ordering::Relaxed) {
                NOT_YET => None,
                us => Some(Duration::from_micros(us)),
            },
        }
    }

    /// Takes one hedge from the budget (at most `max_percent` of the GETs started), or
    /// counts the GET refused (once: `refused` says whether it was already).
    fn try_spend(&self, refused: &mut bool) -> Option<Reservation<'_>> {
        let gets = self.gets.load(Ordering::Relaxed);
        let budget = u64::from(self.max_percent) * gets;
        let spent = self.sent.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sent| {
            ((sent + 1) * 100 <= budget).then_some(sent + 1)
        });
        if spent.is_ok() {
            return Some(Reservation {
                hedger: self,
                sent: false,
            });
        }
        if !std::mem::replace(refused, true) {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        None
    }

    /// Records a GET's first byte (from the GET's start) for the percentile: the
    /// configuration's untimed warm-up GETs are seen too, so the timed phase can hedge
    /// from its first GET. The percentile is read again at the warm-up's end and every
    /// [`REFRESH_EVERY`] first bytes after.
    pub(crate) fn learn(&self, outcome: &Outcome) {
        let Hedge::Percentile(p) = self.policy else {
            return;
        };
        if outcome.result.is_err() {
            return;
        }
        let mut seen = self.first_bytes_us.lock().unwrap_or_else(|e| e.into_inner());
        let _ = seen.record(micros(outcome.headers_at));
        let n = seen.len();
        if n >= WARM_UP_GETS as u64 && (n - WARM_UP_GETS as u64).is_multiple_of(REFRESH_EVERY) {
            let at = seen.value_at_quantile(f64::from(p) / 100.0);
            self.delay_us.store(at, Ordering::Relaxed);
        }
    }

    /// Records a finished GET's first byte and, when it was hedged, whether the hedge
    /// won and the bytes the loser had read.
    fn finished(&self, outcome: Outcome, hedge_won: bool, discarded_bytes: u64) -> Outcome {
        self.learn(&outcome);
        self.won.fetch_add(u64::from(hedge_won), Ordering::Relaxed);
        self.discarded_bytes.fetch_add(discarded_bytes, Ordering::Relaxed);
        outcome
    }

    /// One GET, hedged by the policy, and its hedge copy when one was sent. The caller
    /// holds the GET's own slot of `pool` (its driver's share of the sweep's pool),
    /// where the hedge takes one too.
    pub(crate) async fn get(
        &self,
        s3: &Reader,
        bucket: &str,
        key: &str,
        limit: Duration,
        pool: &Semaphore,
    ) -> (Outcome, Option<HedgeCopy>) {
        self.gets.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let first = Progress::default();
        let primary = s3.get_watched(bucket, key, limit, &first);
        tokio::pin!(primary);
        let mut refused = false;
        let mut wait_until = start;
        let mut reservation = loop {
            let Some(delay) = self.delay() else {
                return (self.finished(primary.await, false, 0), None);
            };
            wait_until = (wait_until + RECHECK.min(delay)).max(start + delay);
            tokio::select! {
                outcome = &mut primary => return (self.finished(outcome, false, 0), None),
                _ = tokio::time::sleep_until(wait_until.into()) => {}
            }
            if first.has_first_byte() {
                return (self.finished(primary.await, false, 0), None);
            }
            if let Some(r) = self.try_spend(&mut refused) {
                break r;
            }
        };
        let second = Progress::default();
        let copy_sent = OnceLock::new();
        let hedge = async {
            let _slot = super::slot(pool).await;
            reservation.sent = true;
            let sent_at = start.elapsed();
            let _ = copy_sent.set(sent_at);
            Some((s3.get_watched(bucket, key, limit, &second).await, sent_at))
        };
        tokio::pin!(hedge);
        let (outcome, copy) = self.race(primary, hedge, (&first, &second)).await;
        // The primary won while the copy was in flight: the copy was dropped there.
        let cancelled = || {
            Some(HedgeCopy {
                sent_at: *copy_sent.get()?,
                headers_at: None,
                end_at: start.elapsed(),
                bytes: second.body_bytes(),
                attempts: 1,
                connection_id: None,
                error: None,
                fate: HedgeFate::Cancelled,
            })
        };
        (outcome, copy.or_else(cancelled))
    }

    /// The primary against its hedge: the first to finish with its body wins and the
    /// other is dropped; a failed copy waits for the other; both failed: the primary's
    /// failure.
    async fn race(
        &self,
        mut primary: std::pin::Pin<&mut impl std::future::Future<Output = Outcome>>,
        mut hedge: std::pin::Pin<&mut impl std::future::Future<Output = Option<(Outcome, Duration)>>>,
        (first, second): (&Progress, &Progress),
    ) -> (Outcome, Option<HedgeCopy>) {
        let mut primary_failed: Option<Outcome> = None;
        let mut hedge_over = false;
        // A copy that ended (won or lost); `None` while it runs or was never sent.
        let mut ended: Option<HedgeCopy> = None;
        loop {
            tokio::select! {
                outcome = &mut primary, if primary_failed.is_none() => {
                    if outcome.result.is_ok() || hedge_over {
                        let discarded = if hedge_over { 0 } else { second.body_bytes() };
                        return (self.finished(outcome, false, discarded), ended);
                    }
                    primary_failed = Some(outcome);
                }
                copy = &mut hedge, if !hedge_over => {
                    hedge_over = true;
                    match (copy, primary_failed.take()) {
                        (Some((mut outcome, sent_at)), _) if outcome.result.is_ok() => {
                            let won = HedgeCopy::ended(sent_at, &outcome, HedgeFate::Won);
                            outcome.headers_at += sent_at;
                            outcome.ttlb += sent_at;
                            return (self.finished(outcome, true, first.body_bytes()), Some(won));
                        }
                        (copy, failed) => {
                            ended = copy.map(|(o, at)| HedgeCopy::ended(at, &o, HedgeFate::Lost));
                            if let Some(failed) = failed {
                                return (self.finished(failed, false, 0), ended);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A hedge taken from the budget; given back when dropped before it was sent (its GET
/// ended while it waited for a pool slot).
struct Reservation<'a> {
    hedger: &'a Hedger,
    sent: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.hedger.sent.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hedger(policy: Hedge, max_percent: u32) -> Hedger {
        Hedger::new(policy, max_percent).unwrap()
    }

    #[test]
    fn off_is_no_hedger() {
        assert!(Hedger::new(Hedge::Off, 5).is_none());
    }

    #[test]
    fn the_budget_is_a_share_of_the_gets_so_far() {
        let h = hedger(Hedge::AfterMs(1), 5);
        let mut refused = false;
        let spend = |refused: &mut bool| h.try_spend(refused).map(|mut r| r.sent = true).is_some();
        h.gets.store(19, Ordering::Relaxed);
        assert!(!spend(&mut refused), "19 GETs: no 5% hedge yet");
        assert!(!spend(&mut refused), "asked again");
        h.gets.store(20, Ordering::Relaxed);
        assert!(spend(&mut refused));
        let mut other = false;
        assert!(!spend(&mut other), "one per 20 GETs");
        h.gets.store(40, Ordering::Relaxed);
        assert!(spend(&mut other));
        let c = h.counts();
        assert_eq!(
            (c.hedges_sent, c.hedges_refused),
            (2, 2),
            "a GET refused is counted once"
        );
        drop(h.try_spend(&mut other));
        assert_eq!(h.counts().hedges_sent, 2, "not sent: given back");
    }

    #[test]
    fn a_percentile_policy_waits_for_its_warm_up() {
        let h = hedger(Hedge::Percentile(90), 5);
        let first_byte_ms = |ms: u64| Outcome {
            pool_wait: Duration::ZERO,
            ttfb: Duration::from_millis(ms),
            headers_at: Duration::from_millis(ms),
            ttlb: Duration::from_millis(ms),
            result: Ok(0),
            cold: Default::default(),
        };
        for ms in 1..WARM_UP_GETS as u64 {
            h.learn(&first_byte_ms(ms));
        }
        assert_eq!(h.delay(), None, "19 first bytes: still warming up");
        h.learn(&first_byte_ms(WARM_UP_GETS as u64));
        // p90 of 1..=20 ms: the 18th, within the histogram's 3 significant figures.
        let delay = h.delay().unwrap().as_micros();
        assert!((18_000..18_020).contains(&delay), "{delay} µs");
        // Read again only every REFRESH_EVERY first bytes: 15 slow ones change nothing,
        // the 16th moves it.
        for _ in 1..REFRESH_EVERY {
            h.learn(&first_byte_ms(1000));
        }
        assert_eq!(h.delay().unwrap().as_micros(), delay);
        h.learn(&first_byte_ms(1000));
        assert!(h.delay().unwrap() >= Duration::from_millis(999), "{:?}", h.delay());
        assert_eq!(hedger(Hedge::AfterMs(40), 5).delay(), Some(Duration::from_millis(40)));
    }
}

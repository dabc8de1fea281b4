//! Hedged GETs: a GET that has no first byte after the configuration's hedge delay
//! (a fixed delay, or the running percentile of the first-byte times it has seen,
//! once [`WARM_UP_GETS`] have finished) gets one more copy, through the same client
//! and so on another connection; the first copy to finish with its whole body wins
//! and the other is dropped: cancelled where it is, its body not read on (the bytes it
//! had read are counted as discarded). At most one hedge per GET; the budget
//! (`max_hedge_percent`) refuses a hedge that would take the hedges over that share
//! of the GETs started so far (a GET refused asks again every [`RECHECK`] while it
//! still has no first byte, as the budget grows with the GETs started); each hedge
//! takes a slot of its driver's share of the sweep's pool like any GET, so the pool's
//! cap holds (a hedge still waiting for its slot when its GET ends was never sent, and
//! is not counted).
//! A hedge is not a retry, and a losing copy is not an error.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

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

/// One configuration's hedging: its policy, budget, what it has seen and done.
#[derive(Debug)]
pub(crate) struct Hedger {
    policy: Hedge,
    max_percent: u32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// GETs started.
    gets: u64,
    /// First-byte times of the finished GETs, µs, sorted.
    first_bytes_us: Vec<u64>,
    counts: HedgeCounts,
}

impl Hedger {
    /// The hedger of a configuration with `policy` (`None`: off).
    pub(crate) fn new(policy: Hedge, max_percent: u32) -> Option<Hedger> {
        (!policy.is_off()).then(|| Hedger {
            policy,
            max_percent,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What hedging did so far.
    pub(crate) fn counts(&self) -> HedgeCounts {
        self.state().counts
    }

    /// How long a GET waits for its first byte before it is hedged (`None`: not yet,
    /// a percentile policy still warming up).
    fn delay(&self) -> Option<Duration> {
        match self.policy {
            Hedge::Off => None,
            Hedge::AfterMs(ms) => Some(Duration::from_millis(u64::from(ms))),
            Hedge::Percentile(p) => {
                let state = self.state();
                let seen = &state.first_bytes_us;
                (seen.len() >= WARM_UP_GETS).then(|| {
                    let at = (seen.len() - 1) * usize::from(p) / 100;
                    Duration::from_micros(seen[at])
                })
            }
        }
    }

    /// Takes one hedge from the budget, or counts the GET refused (once: `refused`
    /// says whether it was already).
    fn try_spend(&self, refused: &mut bool) -> Option<Reservation<'_>> {
        let mut state = self.state();
        let allowed = (state.counts.hedges_sent + 1) * 100 <= u64::from(self.max_percent) * state.gets;
        if allowed {
            state.counts.hedges_sent += 1;
            return Some(Reservation {
                hedger: self,
                sent: false,
            });
        }
        if !std::mem::replace(refused, true) {
            state.counts.hedges_refused += 1;
        }
        None
    }

    /// Records a GET's first byte (from the GET's start) for the percentile: the
    /// configuration's untimed warm-up GETs are seen too, so the timed phase can hedge
    /// from its first GET.
    pub(crate) fn learn(&self, outcome: &Outcome) {
        if outcome.result.is_ok() {
            let us = outcome.headers_at.as_micros() as u64;
            let mut state = self.state();
            let at = state.first_bytes_us.partition_point(|&x| x <= us);
            state.first_bytes_us.insert(at, us);
        }
    }

    /// Records a finished GET's first byte and, when it was hedged, whether the hedge
    /// won and the bytes the loser had read.
    fn finished(&self, outcome: Outcome, hedge_won: bool, discarded_bytes: u64) -> Outcome {
        self.learn(&outcome);
        let mut state = self.state();
        state.counts.hedges_won += u64::from(hedge_won);
        state.counts.hedge_discarded_bytes += discarded_bytes;
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
        self.state().gets += 1;
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
            let mut state = self.hedger.state();
            state.counts.hedges_sent = state.counts.hedges_sent.saturating_sub(1);
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
        h.state().gets = 19;
        assert!(!spend(&mut refused), "19 GETs: no 5% hedge yet");
        assert!(!spend(&mut refused), "asked again");
        h.state().gets = 20;
        assert!(spend(&mut refused));
        let mut other = false;
        assert!(!spend(&mut other), "one per 20 GETs");
        h.state().gets = 40;
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
        assert_eq!(h.delay(), None);
        h.state().first_bytes_us = (1..=WARM_UP_GETS as u64).map(|i| i * 1000).collect();
        // p90 of 1..=20 ms, the lower of the two around it.
        assert_eq!(h.delay(), Some(Duration::from_millis(18)));
        assert_eq!(hedger(Hedge::AfterMs(40), 5).delay(), Some(Duration::from_millis(40)));
    }
}

//! An invocation's deadline with the safety margin kept free before it: the one place
//! that knows "the deadline less the margin". The Lambda adapter makes one per
//! invocation and passes it on (to the sweep, the fan-out's children, a memory sweep's
//! sizes); nothing else subtracts the margin.

use std::time::{Duration, Instant};

/// A listing before the sweep may use 1/this of the time left before the stop time.
pub(crate) const LISTING_SHARE_DIVISOR: u32 = 2;

/// A deadline and its safety margin. Work stops at [`Deadline::stop_at`] (the deadline
/// less the margin) so the answer can still be serialised and returned in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// The invocation's own deadline.
    at: Instant,
    /// Kept free before `at`.
    margin: Duration,
    /// `at - margin`, or the moment the deadline was made when the margin is longer
    /// than the clock goes back.
    stop_at: Instant,
}

impl Deadline {
    /// The deadline `at` with `margin` kept free before it.
    pub fn new(at: Instant, margin: Duration) -> Self {
        Deadline {
            at,
            margin,
            stop_at: at.checked_sub(margin).unwrap_or_else(Instant::now),
        }
    }

    /// The invocation's own deadline.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// The safety margin kept free before the deadline.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// The deadline less the margin: nothing starts after it, and what runs is cut there.
    pub fn stop_at(&self) -> Instant {
        self.stop_at
    }

    /// Time from `now` to [`Deadline::stop_at`] (zero once it has passed).
    pub fn usable_from(&self, now: Instant) -> Duration {
        self.stop_at.saturating_duration_since(now)
    }

    /// Whether [`Deadline::stop_at`] has come by `now`.
    pub fn passed(&self, now: Instant) -> bool {
        now >= self.stop_at
    }

    /// How long to wait for a call from `now` that itself stops at most `work` later
    /// (a child or a memory size told to finish then): that, plus half the margin for
    /// its answer to arrive; the other half is left for this invocation's own answer.
    pub fn wait_for(&self, now: Instant, work: Duration) -> Duration {
        let ceiling = self.at.saturating_duration_since(now).saturating_sub(self.margin / 2);
        (work + self.margin / 2).min(ceiling)
    }

    /// When a listing that starts `now` must stop: half the time left before
    /// [`Deadline::stop_at`], so whatever it is listed for (the sweep, the children)
    /// keeps the other half. Already past when the stop time is.
    pub fn listing_stop(&self, now: Instant) -> Instant {
        now + self.usable_from(now) / LISTING_SHARE_DIVISOR
    }

    /// The same margin before a deadline no later than `by` (a child's coordinator's
    /// finish time).
    pub fn no_later_than(self, by: Instant) -> Deadline {
        Deadline::new(self.at.min(by), self.margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_is_taken_off_once() {
        let now = Instant::now();
        let d = Deadline::new(now + Duration::from_secs(10), Duration::from_secs(2));
        assert_eq!(d.stop_at(), now + Duration::from_secs(8));
        assert_eq!(d.usable_from(now), Duration::from_secs(8));
        assert_eq!(d.usable_from(now + Duration::from_secs(9)), Duration::ZERO);
        assert!(!d.passed(now));
        assert!(d.passed(now + Duration::from_secs(8)));
        // A child told to use all 8 s is waited for 9 s: half the margin for its answer.
        assert_eq!(d.wait_for(now, Duration::from_secs(8)), Duration::from_secs(9));
        // A shorter piece of work is waited for less.
        assert_eq!(d.wait_for(now, Duration::from_secs(2)), Duration::from_secs(3));
        let earlier = d.no_later_than(now + Duration::from_secs(4));
        assert_eq!(earlier.stop_at(), now + Duration::from_secs(2));
        assert_eq!(earlier.margin(), Duration::from_secs(2));
        assert_eq!(d.no_later_than(now + Duration::from_secs(60)), d);
        // A listing gets half of what is left before the stop time.
        assert_eq!(d.listing_stop(now), now + Duration::from_secs(4));
        assert_eq!(
            d.listing_stop(now + Duration::from_secs(6)),
            now + Duration::from_secs(7)
        );
        let late = now + Duration::from_secs(9);
        assert_eq!(d.listing_stop(late), late, "nothing left: stop at once");
    }

    #[test]
    fn a_margin_longer_than_the_time_left_means_stop_now() {
        let now = Instant::now();
        let d = Deadline::new(now + Duration::from_millis(300), Duration::from_secs(1));
        assert!(d.stop_at() <= now + Duration::from_millis(300));
        assert_eq!(d.usable_from(now + Duration::from_millis(300)), Duration::ZERO);
    }
}

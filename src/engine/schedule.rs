//! When configurations may start: the shared start schedule of sweeps that run side by
//! side, and the deadline rule (no configuration starts that would not finish before
//! the deadline less a safety margin).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::model::{ConfigResult, Role};
use crate::plan::Plan;

/// When each configuration's timed phase may start, for sweeps that run side by side
/// (a fan-out's children): rows of such a sweep also carry their wall-clock window and
/// serialized histograms ([`crate::model::ChildMeasure`]) so they can be merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartSchedule {
    /// Wait until then before the timed phase of the first configuration (with
    /// `slot`: of configuration 0 in plan order).
    pub start_at: Option<SystemTime>,
    /// Configuration k (plan order, skipped ones counted) starts at `start_at + k x slot`.
    pub slot: Option<Duration>,
}

impl StartSchedule {
    /// The options of a child plan (`None` for a coordinator or plain sweep).
    pub fn of(plan: &Plan) -> Option<StartSchedule> {
        (plan.role() == Role::Child).then(|| StartSchedule {
            start_at: plan
                .start_unix_ms()
                .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms))),
            slot: plan.config_slot(),
        })
    }

    /// The options for configuration `index` (plan order): with slots, its own start
    /// time; without, the shared start for the first configuration run, none after.
    pub fn for_configuration(self, index: usize, first_run: bool) -> StartSchedule {
        let start_at = match (self.start_at, self.slot) {
            (Some(at), Some(slot)) => Some(at + slot * index as u32),
            (at, None) if first_run => at,
            _ => None,
        };
        StartSchedule { start_at, ..self }
    }
}

/// How long the next configuration of `bucket` may take: the last one of the same
/// bucket (worker counts usually grow, so this errs long), else the longest so far,
/// else unknown (zero).
pub fn estimate_duration(done: &[ConfigResult], bucket: &str) -> Duration {
    let ms = done
        .iter()
        .rev()
        .find(|r| r.bucket == bucket)
        .map(|r| r.wall_ms)
        .or_else(|| done.iter().map(|r| r.wall_ms).max_by(f64::total_cmp))
        .unwrap_or(0.0);
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// `Some(reason)` when a configuration estimated to take `estimate` must not start.
pub fn deadline_blocks(now: Instant, deadline: Instant, estimate: Duration, margin: Duration) -> Option<String> {
    let left = deadline.saturating_duration_since(now);
    if left < estimate + margin {
        Some(format!(
            "deadline: {} ms left, the configuration needs about {} ms plus a {} ms safety margin",
            left.as_millis(),
            estimate.as_millis(),
            margin.as_millis()
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_logic() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(10);
        assert!(deadline_blocks(now, deadline, Duration::from_secs(5), Duration::from_secs(1)).is_none());
        let reason = deadline_blocks(now, deadline, Duration::from_secs(9), Duration::from_secs(2)).unwrap();
        assert!(reason.contains("deadline"), "{reason}");
        assert!(deadline_blocks(now, now, Duration::from_millis(1), Duration::ZERO).is_some());
    }

    #[test]
    fn estimates_use_the_same_bucket_first() {
        let a = crate::model::test_rows::row("a", 1, 1, 900.0, 0);
        let b = crate::model::test_rows::row("b", 1, 1, 2000.0, 0);
        let done = vec![a, b];
        assert_eq!(estimate_duration(&done, "a"), Duration::from_millis(900));
        assert_eq!(estimate_duration(&done, "c"), Duration::from_millis(2000));
        assert_eq!(estimate_duration(&[], "a"), Duration::ZERO);
    }
}

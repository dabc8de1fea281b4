//! When configurations may start: the shared start schedule of sweeps that run side by
//! side (a fan-out's children), one start for the first configuration or one slot per
//! configuration.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::Role;
use crate::plan::Plan;

/// When each configuration's timed phase may start, for sweeps that run side by side
/// (a fan-out's children): rows of such a sweep also carry their wall-clock window and
/// serialized histograms ([`crate::model::ChildMeasure`]) so they can be merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartSchedule {
    /// Wait until then before the timed phase of the first configuration (with
    /// `slot`: of configuration 0 in plan order).
    pub start_at: Option<SystemTime>,
    /// Configuration k (in the order run, skipped ones counted) starts at
    /// `start_at + k x slot`.
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

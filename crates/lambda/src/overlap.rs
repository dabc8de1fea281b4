//! Which invocations of this process ran at the same time (issue 50). On Lambda
//! Managed Instances one execution environment takes several invocations at once
//! (`AWS_LAMBDA_MAX_CONCURRENCY`); their sweeps then share the CPU, the network
//! interface and the instance. [`Invocations`] keeps each invocation's span;
//! [`OverlapObserver`] measures each row's span and, once the sweep is done, records in
//! the row how many other invocations ran during it and for what part of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::{timeline, Observer};
use crate::model::{ConfigResult, Overlap, SweepResult};

/// One invocation's span: from the handler's start to its end (`None`: running).
#[derive(Debug, Clone, Copy)]
struct Span {
    id: u64,
    start: Instant,
    end: Option<Instant>,
}

/// The invocations of this process, running and recently ended.
#[derive(Debug, Default)]
pub(crate) struct Invocations {
    spans: Mutex<Vec<Span>>,
    next_id: AtomicU64,
}

/// A running invocation; its span ends when this is dropped.
pub(crate) struct Running {
    registry: Arc<Invocations>,
    id: u64,
}

impl Invocations {
    /// Registers an invocation starting now.
    pub(crate) fn begin(self: &Arc<Self>) -> Running {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Span {
            id,
            start: Instant::now(),
            end: None,
        });
        Running {
            registry: self.clone(),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Span>> {
        self.spans.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The other invocations during `[from, to]`, as seen by invocation `id`.
    pub(crate) fn overlap(&self, id: u64, from: Instant, to: Instant) -> Overlap {
        let now = Instant::now();
        let mut parts: Vec<(Instant, Instant)> = self
            .lock()
            .iter()
            .filter(|s| s.id != id)
            .map(|s| (s.start.max(from), s.end.unwrap_or(now).min(to)))
            .filter(|(a, b)| a < b)
            .collect();
        let others = parts.len() as u32;
        parts.sort();
        let mut covered = 0.0;
        let mut reach: Option<Instant> = None;
        for (a, b) in parts {
            let a = reach.map_or(a, |r| a.max(r));
            if b > a {
                covered += (b - a).as_secs_f64();
            }
            reach = Some(reach.map_or(b, |r| r.max(b)));
        }
        let span = (to - from).as_secs_f64();
        Overlap {
            other_invocations: others,
            overlapped_fraction: if span > 0.0 {
                crate::model::stats::round3((covered / span).min(1.0))
            } else {
                0.0
            },
        }
    }

    /// Ends invocation `id`, and forgets the spans no running invocation can overlap
    /// any more (ended before the earliest running one started).
    fn end(&self, id: u64) {
        let now = Instant::now();
        let mut spans = self.lock();
        if let Some(s) = spans.iter_mut().find(|s| s.id == id) {
            s.end = Some(now);
        }
        let earliest = spans.iter().filter(|s| s.end.is_none()).map(|s| s.start).min();
        spans.retain(|s| match (s.end, earliest) {
            (None, _) => true,
            (Some(e), Some(first)) => e >= first,
            (Some(_), None) => false,
        });
    }
}

impl Running {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.registry.end(self.id);
    }
}

/// Passes every event on to `inner`, and measures each row's overlap with the other
/// invocations of this process. A sweep runs its configurations one at a time, so the
/// one that started last is the one that finishes next.
pub(crate) struct OverlapObserver {
    inner: Arc<dyn Observer>,
    registry: Arc<Invocations>,
    id: u64,
    /// When the running configuration started.
    started: Mutex<Option<Instant>>,
    /// Each finished row's overlap by its run index, in the order rows finished.
    finished: Mutex<Vec<(Option<u32>, Overlap)>>,
}

impl OverlapObserver {
    pub(crate) fn new(inner: Arc<dyn Observer>, registry: Arc<Invocations>, id: u64) -> Self {
        OverlapObserver {
            inner,
            registry,
            id,
            started: Mutex::default(),
            finished: Mutex::default(),
        }
    }

    /// Records each row's overlap in `result`: on every row when `always` (Managed
    /// Instances, where overlap is possible), else only on rows another invocation
    /// overlapped.
    pub(crate) fn apply(&self, result: &mut SweepResult, always: bool) {
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        for row in &mut result.results {
            let Some(at) = finished.iter().position(|(index, _)| *index == row.run_index) else {
                continue;
            };
            let (_, overlap) = finished.remove(at);
            if always || overlap.other_invocations > 0 {
                row.overlap = Some(overlap);
            }
        }
    }
}

impl Observer for OverlapObserver {
    fn config_started(&self, name: &str, workers: u32, repetition: u32, requests: u64) {
        *self.started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.inner.config_started(name, workers, repetition, requests);
    }

    fn request_done(&self, ok: bool) {
        self.inner.request_done(ok);
    }

    fn config_finished(&self, row: &ConfigResult) {
        let now = Instant::now();
        let from = self.started.lock().unwrap_or_else(|e| e.into_inner()).take();
        let from = from.unwrap_or_else(|| now - std::time::Duration::from_secs_f64(row.wall_ms.max(0.0) / 1000.0));
        let overlap = self.registry.overlap(self.id, from, now);
        self.finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((row.run_index, overlap));
        self.inner.config_finished(row);
    }

    fn gets_done(
        &self,
        row: &ConfigResult,
        events: &[timeline::GetEvent],
        attempts: &[timeline::AttemptEvent],
        hedges: &[timeline::HedgeEvent],
    ) {
        self.inner.gets_done(row, events, attempts, hedges);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(base: Instant, n: u64) -> Instant {
        base + Duration::from_millis(n)
    }

    /// Spans placed by hand (no clock in the figures): `a` runs 0..1000 ms, `b`
    /// 200..400, `c` 300..600, `d` 2000.. (running).
    #[test]
    fn a_rows_overlap_counts_the_others_and_the_part_they_cover() {
        let registry = Arc::new(Invocations::default());
        let t = Instant::now();
        let span = |id, start, end: Option<u64>| Span {
            id,
            start: ms(t, start),
            end: end.map(|e| ms(t, e)),
        };
        *registry.lock() = vec![
            span(0, 0, Some(1000)),
            span(1, 200, Some(400)),
            span(2, 300, Some(600)),
            span(3, 2000, None),
        ];
        let row = registry.overlap(0, ms(t, 0), ms(t, 1000));
        assert_eq!(row.other_invocations, 2, "{row:?}");
        assert_eq!(row.overlapped_fraction, 0.4, "200..600 of 0..1000: {row:?}");
        assert!(row.shared());
        let alone = registry.overlap(0, ms(t, 600), ms(t, 1000));
        assert_eq!((alone.other_invocations, alone.overlapped_fraction), (0, 0.0));
        assert!(!alone.shared());
        // Ending 0 forgets every span that ended before 3 (the one running) started.
        registry.end(0);
        let ids: Vec<u64> = registry.lock().iter().map(|s| s.id).collect();
        assert_eq!(ids, [3]);
    }

    /// The observer times a row from its configuration's start, whatever name the
    /// progress lines give it (`b-1 lean hedge p95` for a row of bucket `b-1`): another
    /// invocation that ended before the row did still overlapped it.
    #[test]
    fn a_row_is_timed_from_its_configurations_start() {
        let registry = Arc::new(Invocations::default());
        let own = registry.begin();
        let other = registry.begin();
        let observer = OverlapObserver::new(Arc::new(crate::engine::Quiet), registry.clone(), own.id());
        observer.config_started("b-1 lean hedge p95", 4, 1, 10);
        std::thread::sleep(Duration::from_millis(30));
        drop(other);
        std::thread::sleep(Duration::from_millis(5));
        // wall_ms 0: a row timed from its end alone would see no one beside it.
        let mut row = crate::model::test_rows::row("b-1", 4, 1, 0.0, 0);
        row.run_index = Some(0);
        observer.config_finished(&row);
        let mut result = crate::model::test_rows::result(vec![row]);
        observer.apply(&mut result, true);
        let overlap = result.results[0].overlap.clone().expect("the row's overlap");
        assert_eq!(overlap.other_invocations, 1, "{overlap:?}");
    }

    #[test]
    fn a_running_invocation_ends_when_dropped() {
        let registry = Arc::new(Invocations::default());
        let a = registry.begin();
        let b = registry.begin();
        assert_ne!(a.id(), b.id());
        drop(b);
        assert_eq!(registry.lock().iter().filter(|s| s.end.is_none()).count(), 1);
        drop(a);
        assert!(registry.lock().is_empty());
    }
}

//! The function's answer must fit Lambda's synchronous response limit (6 MB; a larger
//! answer is refused as `Function.ResponseSizeTooLarge` and every row is lost). The
//! answer is measured as the bytes it serialises to, and parts that the merged rows do
//! not need are dropped in this order until it fits: error samples, a fan-out's
//! per-child rows, the serialized histograms of a child's rows, every row's timeline
//! (about 1.8 KB a row of ~50 intervals; 1,000 rows like the demo's are 6.2 MB). What
//! was dropped is said in the result's `trimmed` block.

#[cfg(test)]
use crate::model::Outcome;
use crate::model::{Dropped, SweepResult, Trimmed};

/// Lambda's limit on a synchronous response, bytes.
pub(crate) const LAMBDA_RESPONSE_LIMIT_BYTES: u64 = 6 * 1024 * 1024;
/// Kept free under the limit for the runtime's own framing.
pub(crate) const RESPONSE_HEADROOM_BYTES: u64 = 16 * 1024;

/// The answer is larger than the limit even with everything droppable dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the result is {bytes} bytes even without error samples, child rows, histograms and timelines; Lambda answers at most {limit} bytes: run fewer configurations"
)]
pub struct TooLarge {
    pub bytes: u64,
    pub limit: u64,
}

/// A part of the answer that can be dropped: its name and how to drop it.
type Droppable = (Dropped, fn(&mut SweepResult));

fn size(result: &SweepResult) -> u64 {
    serde_json::to_vec(result).map_or(u64::MAX, |v| v.len() as u64)
}

/// Drops what it must, in order, until `result` serialises to at most `limit` bytes.
pub(crate) fn fit(result: &mut SweepResult, limit: u64) -> Result<(), TooLarge> {
    let before = size(result);
    if before <= limit {
        return Ok(());
    }
    let steps: [Droppable; 4] = [
        (Dropped::ErrorSamples, |r| {
            for row in &mut r.results {
                row.error_samples.clear();
            }
            for child in r.fanout.iter_mut().flat_map(|f| f.children.iter_mut()) {
                for row in &mut child.results {
                    row.error_samples.clear();
                }
            }
        }),
        (Dropped::ChildrenRows, |r| {
            for child in r.fanout.iter_mut().flat_map(|f| f.children.iter_mut()) {
                child.results.clear();
            }
        }),
        (Dropped::Histograms, |r| {
            for row in &mut r.results {
                if let Some(c) = &mut row.child {
                    c.histograms = None;
                }
            }
        }),
        (Dropped::Timelines, |r| {
            for row in &mut r.results {
                row.timeline = None;
            }
        }),
    ];
    let mut trimmed = Trimmed {
        limit_bytes: limit,
        bytes_before: before,
        bytes_after: before,
        dropped: Vec::new(),
    };
    for (name, drop_part) in steps {
        drop_part(result);
        trimmed.dropped.push(name);
        result.trimmed = Some(trimmed.clone());
        let now = size(result);
        if now <= limit {
            // The block names its own final size; that number's digits can add a byte or two.
            trimmed.bytes_after = now;
            result.trimmed = Some(trimmed.clone());
            trimmed.bytes_after = size(result);
            result.trimmed = Some(trimmed);
            tracing::warn!(before, after = size(result), limit, dropped = ?result.trimmed.as_ref().map(|t| &t.dropped), "answer trimmed to fit the response limit");
            return Ok(());
        }
    }
    Err(TooLarge {
        bytes: size(result),
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::histogram_us;
    use crate::model::test_rows::{result, row};
    use crate::model::{ChildMeasure, ChildReport, FanoutReport, KeyRange, Split};
    use std::time::{Duration, SystemTime};

    /// A coordinator's answer with `children` x `configurations` child rows, each with
    /// error samples and histograms: far over a small limit.
    fn fanout_result(children: u32, configurations: u32) -> SweepResult {
        let mut h = histogram_us();
        for us in 1..2_000u64 {
            h.record(us * 37 % 90_000 + 500).unwrap();
        }
        let child_row = |w: u32| {
            let mut r = row("b-1", w, 1, 100.0, 0);
            r.error_samples = vec!["x".repeat(300), "y".repeat(300)];
            r.child = Some(ChildMeasure::new(
                SystemTime::now(),
                Duration::from_millis(100),
                [&h, &h, &h],
            ));
            r
        };
        let merged: Vec<_> = (1..=configurations).map(|w| row("b-1", w, 1, 100.0, 0)).collect();
        let mut r = result(merged);
        r.fanout = Some(FanoutReport {
            function_name: "f".into(),
            invocations: children,
            split: Split::Shard,
            start_delay_ms: 0,
            start_unix_ms: 0,
            children_ok: children,
            children_failed: 0,
            configurations: vec![],
            probe: None,
            children: (0..children)
                .map(|i| ChildReport {
                    index: i,
                    key_range: KeyRange { start: i, end: i + 1 },
                    seed: 1,
                    status: Outcome::Ok,
                    invoke_ms: 1.0,
                    cold_start: None,
                    request_id: None,
                    error: None,
                    results: (1..=configurations).map(child_row).collect(),
                    skipped: vec![],
                })
                .collect(),
        });
        r
    }

    #[test]
    fn a_small_answer_is_left_alone() {
        let mut r = fanout_result(2, 3);
        let copy = r.clone();
        fit(&mut r, LAMBDA_RESPONSE_LIMIT_BYTES).unwrap();
        assert_eq!(r, copy);
    }

    #[test]
    fn parts_are_dropped_in_order_until_it_fits() {
        let mut r = fanout_result(20, 50);
        let before = size(&r);
        let merged_rows = r.results.clone();
        // Dropping error samples is not enough for a limit a bit below the whole.
        let limit = before / 2;
        fit(&mut r, limit).unwrap();
        let t = r.trimmed.clone().unwrap();
        assert_eq!(t.dropped, vec![Dropped::ErrorSamples, Dropped::ChildrenRows]);
        assert_eq!(t.bytes_before, before);
        assert!(size(&r) <= limit, "{} > {limit}", size(&r));
        assert_eq!(t.bytes_after, size(&r));
        assert_eq!(r.results, merged_rows, "the merged rows are never touched");
        assert!(r.fanout.as_ref().unwrap().children.iter().all(|c| c.results.is_empty()));
        // A limit the error samples alone make: only they go.
        let mut r = fanout_result(20, 50);
        let without_samples = {
            let mut c = r.clone();
            c.results.iter_mut().for_each(|x| x.error_samples.clear());
            c.fanout
                .as_mut()
                .unwrap()
                .children
                .iter_mut()
                .for_each(|ch| ch.results.iter_mut().for_each(|x| x.error_samples.clear()));
            size(&c)
        };
        fit(&mut r, without_samples + 500).unwrap();
        assert_eq!(r.trimmed.unwrap().dropped, vec![Dropped::ErrorSamples]);
        assert!(!r.fanout.unwrap().children[0].results.is_empty());
    }

    #[test]
    fn a_childs_histograms_go_last_and_an_impossible_limit_is_an_error() {
        let mut h = histogram_us();
        h.record(1_000).unwrap();
        let mut rows = Vec::new();
        for w in 1..=200 {
            let mut r = row("b-1", w, 1, 100.0, 0);
            r.child = Some(ChildMeasure::new(
                SystemTime::now(),
                Duration::from_millis(1),
                [&h, &h, &h],
            ));
            rows.push(r);
        }
        let mut child = result(rows);
        let with = size(&child);
        let mut bare = child.clone();
        bare.results
            .iter_mut()
            .for_each(|r| r.child.as_mut().unwrap().histograms = None);
        fit(&mut child, size(&bare) + 300).unwrap();
        assert_eq!(
            child.trimmed.as_ref().unwrap().dropped,
            vec![Dropped::ErrorSamples, Dropped::ChildrenRows, Dropped::Histograms]
        );
        assert!(with > size(&child));
        let err = fit(&mut bare, 1_000).unwrap_err();
        assert!(err.to_string().contains("fewer configurations"), "{err}");
    }

    /// A sweep at the 1,000-row limit of the committed demo's largest row (a timeline of
    /// ~50 intervals, ~6 KB a row) is about 6.2 MB, at Lambda's limit: past what the other
    /// parts free, its timelines go, last, and the answer fits.
    #[test]
    fn timelines_go_last_and_the_answer_fits() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/demo.json");
        let mut demo: SweepResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let largest = demo
            .results
            .iter()
            .filter(|r| r.timeline.is_some())
            .max_by_key(|r| serde_json::to_vec(r).unwrap().len())
            .expect("the demo's rows have timelines")
            .clone();
        demo.results = vec![largest; 1_000];
        demo.fanout = None;
        let mut bare = demo.clone();
        bare.results.iter_mut().for_each(|r| r.timeline = None);
        let limit = size(&bare) + 4_096;
        assert!(
            size(&demo) > limit + 1_000_000,
            "{} against {}",
            size(&demo),
            size(&bare)
        );
        fit(&mut demo, limit).unwrap();
        assert!(size(&demo) <= limit);
        let dropped = &demo.trimmed.as_ref().unwrap().dropped;
        assert_eq!(dropped.last(), Some(&Dropped::Timelines), "{dropped:?}");
        assert!(demo.results.iter().all(|r| r.timeline.is_none()));
    }
}

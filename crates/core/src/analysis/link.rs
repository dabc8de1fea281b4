//! What the sweep's rows showed of the client's link, as the `bandwidth` rule reads it
//! ([`LinkFacts`]: a row's own evidence of a full link, the ceiling's interval, the
//! figure a ceiling was revised up from; found by [`super::network`]), and the rule's
//! explanations in words: from evidence, or against a probed or given ceiling, never
//! above 100% of it.

use crate::model::{CeilingSource, ConfigResult, Figure, FigureName as N};

/// What one row showed of a full link: its bodies' time against its bucket's at the
/// fewest workers, with the client's CPU to spare, and the flat curve when it is on one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BodyEvidence {
    /// Body time (last byte minus first byte), p50 of the steady requests, ms.
    pub(crate) body_ms: f64,
    /// The same at the bucket's fewest workers.
    pub(crate) base_body_ms: f64,
    /// That worker count.
    pub(crate) base_workers: u32,
    /// When the row is on a flat segment: the worker count with the best MiB/s at fewer
    /// workers, and that MiB/s (median of its rows).
    pub(crate) flat_from: Option<(u32, f64)>,
}

/// What the bandwidth rule knows of the link beyond the thresholds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LinkFacts {
    /// The row's own evidence, when it showed it and the ceiling is the sweep's.
    pub(crate) body: Option<BodyEvidence>,
    /// The ceiling's interval, `[low, high]` MiB/s (source `sweep`).
    pub(crate) interval: Option<[f64; 2]>,
    /// The figure the ceiling was revised up from.
    pub(crate) revised_from: Option<f64>,
}

/// The figures a row's own evidence of a full link gives.
pub(crate) fn body_figures(body: &BodyEvidence) -> Vec<(N, Figure)> {
    vec![
        (N::BodyMsP50, Figure::Ms(body.body_ms)),
        (N::BodyMsP50AtFewestWorkers, Figure::Ms(body.base_body_ms)),
        (N::FewerWorkers, Figure::Count(u64::from(body.base_workers))),
    ]
}

/// A `bandwidth` explanation from the sweep's evidence: what the row showed (with its
/// client's `(cores busy, usable cores)`), and the ceiling with its interval.
pub(crate) fn by_evidence(
    row: &ConfigResult,
    body: &BodyEvidence,
    ceiling: f64,
    interval: Option<[f64; 2]>,
    (cores_busy, cores): (f64, f64),
) -> String {
    let flat = body
        .flat_from
        .map_or(String::new(), |(w, x)| format!(" (flat: {x:.1} MiB/s at {w} workers)"));
    let interval = interval.map_or(String::new(), |[lo, hi]| format!(", between {lo:.1} and {hi:.1}"));
    format!(
        "the link is full: {:.1} MiB/s{flat} while each body took {:.1} ms (p50, last byte minus first byte) against {:.2} ms at {} worker(s), with CPU to spare ({cores_busy:.2} of {cores:.2} usable cores busy): the requests share a link of about {ceiling:.1} MiB/s{interval} (source: sweep); more requests in flight only share it, a faster network (a larger instance, more functions) would help",
        row.mib_per_s, body.body_ms, body.base_body_ms, body.base_workers,
    )
}

/// A `bandwidth` explanation against a probed, given or timeline ceiling: its share of
/// it (never above 100%), or, on burst credit, above it in words.
pub(crate) fn by_ceiling(
    row: &ConfigResult,
    ceiling: f64,
    source: Option<CeilingSource>,
    revised_from: Option<f64>,
) -> String {
    let source = source.map_or("given", |s| s.name());
    let revised = revised_from.map_or(String::new(), |was| {
        format!(", revised up from {was:.1} MiB/s: a row went faster")
    });
    if row.in_burst || row.mib_per_s > ceiling {
        return format!(
            "{:.1} MiB/s, above the {ceiling:.1} MiB/s sustained network ceiling (source: {source}{revised}): this row ran on burst credit, its figures flatter; once the burst is spent more requests in flight only share the same pipe",
            row.mib_per_s
        );
    }
    format!(
        "{:.1} MiB/s is {:.0}% of the {ceiling:.1} MiB/s network ceiling (source: {source}{revised}): more requests in flight only share the same pipe",
        row.mib_per_s,
        100.0 * row.mib_per_s / ceiling
    )
}

//! A row's timeline: what happened inside one configuration, interval by interval
//! (GETs completed, body bytes, first-byte p50/p99 of the GETs completed in it, failed
//! GETs by kind, 503/429 answers, retries, requests in flight, and the bytes the
//! transport read off the wire). Stored as columns (one
//! array per figure, all the same length) so a row stays small and pandas reads it as
//! a frame; arrays that are all zero are left out. Reading one back is bounded: an
//! array longer than [`MAX_TIMELINE_INTERVALS`] is refused at its first extra element,
//! before anything is sized from it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::ErrorKind;

/// Most intervals a timeline holds (a stored one; a row is built with about
/// [`TARGET_INTERVALS`]).
pub const MAX_TIMELINE_INTERVALS: usize = 400;

/// The intervals a row's timeline is cut into, about: its width is the wall time
/// over this, rounded to 1, 2 or 5 ms times a power of ten (at least 1 ms), so a
/// 63 ms row and a 15-minute one both show a shape (63 intervals of 1 ms; 45 of 20 s).
pub(crate) const TARGET_INTERVALS: f64 = 50.0;

/// How often the transport's bytes read are sampled at most (the sampler starts at
/// 1 ms and slows as the row goes on: see the engine's `WireSampler`).
pub const BASE_INTERVAL_MS: u32 = 100;

/// Widest interval a stored timeline may claim: one hour.
const MAX_INTERVAL_MS: u32 = 3_600_000;

/// Failed GETs of one kind, per interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    pub kind: ErrorKind,
    pub counts: Bounded<u32>,
}

/// A configuration's timeline; each array holds one value per interval, the first
/// interval starting at the timed phase's start (a fan-out row: the first child's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "TimelineDoc")]
pub struct Timeline {
    /// Width of every interval, ms.
    pub interval_ms: u32,
    /// GETs that completed (last body byte) in the interval, successfully.
    pub gets: Vec<u32>,
    /// Body bytes of those GETs.
    pub body_bytes: Vec<u64>,
    /// Bytes the transport read from its connections in the interval (responses'
    /// headers, bodies and HTTP framing; under TLS, decrypted), sampled at the
    /// interval edges: what a NIC shapes, as near as the client sees it (absent: not
    /// sampled, as in results written before it was, or nothing read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire_bytes: Vec<u64>,
    /// First byte at the wire, median of the GETs completed in the interval (0 when
    /// none did), ms.
    pub ttfb_p50_ms: Vec<f64>,
    /// The same, 99th percentile, ms.
    pub ttfb_p99_ms: Vec<f64>,
    /// Mean requests in flight over the interval (sent, not yet at their last byte).
    pub in_flight: Vec<f64>,
    /// GETs that failed, by kind (kinds that occurred only; absent: none failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<KindCounts>,
    /// 503 SlowDown / 429 answers (every attempt) of the GETs completed in the
    /// interval (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_responses: Vec<u32>,
    /// Attempts beyond the first of the GETs completed in the interval (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<u32>,
    /// When 95% of the GETs (ok or failed) had ended, ms after the start: the rest
    /// of the wall time went to the last 5% (the stragglers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_95pct_ms: Option<f64>,
    /// When 99% of the GETs had ended, ms after the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_99pct_ms: Option<f64>,
}

impl Timeline {
    /// Intervals in the timeline.
    pub fn len(&self) -> usize {
        self.gets.len()
    }

    /// True without intervals.
    pub fn is_empty(&self) -> bool {
        self.gets.is_empty()
    }

    /// Failed GETs per interval, every kind together.
    pub fn errors_total(&self) -> Vec<u32> {
        let mut total = vec![0; self.len()];
        for k in &self.errors {
            for (t, c) in total.iter_mut().zip(&k.counts.0) {
                *t += c;
            }
        }
        total
    }

    /// The value of an optional array at interval `i` (0 when the array is absent).
    pub fn at(values: &[u32], i: usize) -> u32 {
        values.get(i).copied().unwrap_or(0)
    }

    /// The interval width that cuts `wall_ms` into about [`TARGET_INTERVALS`]
    /// intervals (32 to 80): of 1, 2 and 5 ms times a power of ten, the nearest to
    /// the wall time over 50 (at least 1 ms). Up to 100 ms each divides 100 ms, so
    /// the analysis, which reads intervals of 100 ms ([`Timeline::coarsened`]), sees
    /// a row of up to ~7 s exactly as it did when rows were cut at 100 ms.
    pub fn interval_for(wall_ms: f64) -> u32 {
        let target = (wall_ms.max(0.0) / TARGET_INTERVALS).max(1.0);
        let mut best = 1u32;
        let mut decade = 1u32;
        while decade <= MAX_INTERVAL_MS / 10 {
            for c in [decade, 2 * decade, 5 * decade] {
                if (f64::from(c) / target).ln().abs() < (f64::from(best) / target).ln().abs() {
                    best = c;
                }
            }
            decade *= 10;
        }
        best
    }

    /// The timeline in intervals at least `min_ms` wide: each run of
    /// `ceil(min_ms / interval_ms)` intervals added into one (counts and bytes
    /// summed, requests in flight averaged, the first-byte p50 weighted by GETs and
    /// the p99 the largest). The analysis reads rows at this resolution
    /// ([`BASE_INTERVAL_MS`]), whatever the width they were drawn at. A timeline
    /// already as wide is returned as it is.
    pub fn coarsened(&self, min_ms: u32) -> std::borrow::Cow<'_, Timeline> {
        let k = min_ms.div_ceil(self.interval_ms.max(1)).max(1) as usize;
        if k == 1 {
            return std::borrow::Cow::Borrowed(self);
        }
        let n = self.len().div_ceil(k);
        let sum_u32 = |v: &[u32]| -> Vec<u32> { v.chunks(k).map(|c| c.iter().sum()).collect() };
        let sum_u64 = |v: &[u64]| -> Vec<u64> { v.chunks(k).map(|c| c.iter().sum()).collect() };
        let mut p50 = Vec::with_capacity(n);
        let mut p99 = Vec::with_capacity(n);
        for (i, gets) in self.gets.chunks(k).enumerate() {
            let range = i * k..i * k + gets.len();
            let total: u32 = gets.iter().sum();
            let weighted: f64 = gets
                .iter()
                .zip(&self.ttfb_p50_ms[range.clone()])
                .map(|(&g, &v)| f64::from(g) * v)
                .sum();
            p50.push(if total > 0 { weighted / f64::from(total) } else { 0.0 });
            p99.push(self.ttfb_p99_ms[range].iter().copied().fold(0.0, f64::max));
        }
        std::borrow::Cow::Owned(Timeline {
            interval_ms: self.interval_ms * k as u32,
            gets: sum_u32(&self.gets),
            body_bytes: sum_u64(&self.body_bytes),
            wire_bytes: sum_u64(&self.wire_bytes),
            ttfb_p50_ms: p50,
            ttfb_p99_ms: p99,
            // The mean over the wider interval (a last, shorter chunk: over its own).
            in_flight: self
                .in_flight
                .chunks(k)
                .map(|c| c.iter().sum::<f64>() / c.len() as f64)
                .collect(),
            errors: self
                .errors
                .iter()
                .map(|e| KindCounts {
                    kind: e.kind,
                    counts: Bounded(sum_u32(&e.counts.0)),
                })
                .collect(),
            throttled_responses: sum_u32(&self.throttled_responses),
            retries: sum_u32(&self.retries),
            done_95pct_ms: self.done_95pct_ms,
            done_99pct_ms: self.done_99pct_ms,
        })
    }

    /// Fan-out children's timelines on the coordinator's clock: each `(offset_ms,
    /// timeline)` began `offset_ms` after the first child's timed phase; the merged
    /// intervals cover `window_ms` (at least as wide as the widest child's). Counts
    /// and requests in flight add up; a merged interval's first-byte p50 is the
    /// children's weighted by their GETs, its p99 the largest (the exact percentiles
    /// are the row's, from the merged histograms). `None` without a child timeline.
    pub fn merged(parts: &[(f64, &Timeline)], window_ms: f64) -> Option<Timeline> {
        let widest = parts.iter().map(|p| p.1.interval_ms).max()?;
        let width = Timeline::interval_for(window_ms).max(widest);
        let n = ((window_ms / f64::from(width)).ceil() as usize).clamp(1, MAX_TIMELINE_INTERVALS);
        let mut out = Timeline {
            interval_ms: width,
            gets: vec![0; n],
            body_bytes: vec![0; n],
            wire_bytes: vec![0; n],
            ttfb_p50_ms: vec![0.0; n],
            ttfb_p99_ms: vec![0.0; n],
            in_flight: vec![0.0; n],
            errors: Vec::new(),
            throttled_responses: vec![0; n],
            retries: vec![0; n],
            // Each child's own; the merged row's are not known from them.
            done_95pct_ms: None,
            done_99pct_ms: None,
        };
        for &(offset_ms, t) in parts {
            let scale = f64::from(t.interval_ms) / f64::from(width);
            for j in 0..t.len() {
                let start_ms = offset_ms.max(0.0) + j as f64 * f64::from(t.interval_ms);
                let i = ((start_ms / f64::from(width)) as usize).min(n - 1);
                let g = t.gets[j];
                if g > 0 {
                    let before = f64::from(out.gets[i]);
                    out.ttfb_p50_ms[i] =
                        (out.ttfb_p50_ms[i] * before + t.ttfb_p50_ms[j] * f64::from(g)) / (before + f64::from(g));
                    out.ttfb_p99_ms[i] = out.ttfb_p99_ms[i].max(t.ttfb_p99_ms[j]);
                }
                out.gets[i] += g;
                out.body_bytes[i] += t.body_bytes[j];
                out.wire_bytes[i] += t.wire_bytes.get(j).copied().unwrap_or(0);
                out.in_flight[i] += t.in_flight[j] * scale;
                out.throttled_responses[i] += Timeline::at(&t.throttled_responses, j);
                out.retries[i] += Timeline::at(&t.retries, j);
                for k in &t.errors {
                    let at = out.errors.iter().position(|e| e.kind == k.kind).unwrap_or_else(|| {
                        out.errors.push(KindCounts {
                            kind: k.kind,
                            counts: Bounded(vec![0; n]),
                        });
                        out.errors.len() - 1
                    });
                    out.errors[at].counts.0[i] += k.counts.0.get(j).copied().unwrap_or(0);
                }
            }
        }
        let round = |v: &mut Vec<f64>, scale: f64| v.iter_mut().for_each(|x| *x = (*x * scale).round() / scale);
        round(&mut out.ttfb_p50_ms, 1000.0);
        round(&mut out.in_flight, 10.0);
        Some(out.compact())
    }

    /// Arrays that are all zero become absent (the compact form written).
    pub(crate) fn compact(mut self) -> Timeline {
        for v in [&mut self.throttled_responses, &mut self.retries] {
            if v.iter().all(|&x| x == 0) {
                v.clear();
            }
        }
        if self.wire_bytes.iter().all(|&x| x == 0) {
            self.wire_bytes.clear();
        }
        self.errors.retain(|k| k.counts.0.iter().any(|&c| c > 0));
        self
    }
}

/// A stored array of at most [`MAX_TIMELINE_INTERVALS`] values: reading a longer one
/// fails at its first extra element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Bounded<T>(pub Vec<T>);

impl<T> Default for Bounded<T> {
    fn default() -> Self {
        Bounded(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Bounded<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bound<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Bound<T> {
            type Value = Bounded<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array of at most {MAX_TIMELINE_INTERVALS} values")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_TIMELINE_INTERVALS));
                while let Some(v) = seq.next_element()? {
                    if out.len() == MAX_TIMELINE_INTERVALS {
                        return Err(serde::de::Error::custom(format!(
                            "a timeline holds at most {MAX_TIMELINE_INTERVALS} intervals"
                        )));
                    }
                    out.push(v);
                }
                Ok(Bounded(out))
            }
        }
        d.deserialize_seq(Bound(PhantomData))
    }
}

/// A timeline as stored, every array bounded; checked into a [`Timeline`].
#[derive(Deserialize)]
struct TimelineDoc {
    interval_ms: u32,
    gets: Bounded<u32>,
    body_bytes: Bounded<u64>,
    #[serde(default)]
    wire_bytes: Bounded<u64>,
    ttfb_p50_ms: Bounded<f64>,
    ttfb_p99_ms: Bounded<f64>,
    in_flight: Bounded<f64>,
    #[serde(default)]
    errors: Bounded<KindCounts>,
    #[serde(default)]
    throttled_responses: Bounded<u32>,
    #[serde(default)]
    retries: Bounded<u32>,
    #[serde(default)]
    done_95pct_ms: Option<f64>,
    #[serde(default)]
    done_99pct_ms: Option<f64>,
}

impl TryFrom<TimelineDoc> for Timeline {
    type Error = String;

    /// Every array as long as `gets` (the optional ones: that long or absent), the
    /// interval within 1 ms .. 1 h, the times finite and not negative; an error
    /// naming every field that is not.
    fn try_from(d: TimelineDoc) -> Result<Timeline, String> {
        let n = d.gets.0.len();
        let mut bad = Vec::new();
        if d.interval_ms == 0 || d.interval_ms > MAX_INTERVAL_MS {
            bad.push(format!("interval_ms {} (1 to {MAX_INTERVAL_MS})", d.interval_ms));
        }
        let mut lengths = vec![
            ("body_bytes", d.body_bytes.0.len(), false),
            ("wire_bytes", d.wire_bytes.0.len(), true),
            ("ttfb_p50_ms", d.ttfb_p50_ms.0.len(), false),
            ("ttfb_p99_ms", d.ttfb_p99_ms.0.len(), false),
            ("in_flight", d.in_flight.0.len(), false),
            ("throttled_responses", d.throttled_responses.0.len(), true),
            ("retries", d.retries.0.len(), true),
        ];
        lengths.extend(d.errors.0.iter().map(|k| ("errors.counts", k.counts.0.len(), false)));
        for (name, len, optional) in lengths {
            if len != n && !(optional && len == 0) {
                bad.push(format!("{name} has {len} values, gets {n}"));
            }
        }
        for (name, v) in [
            ("ttfb_p50_ms", &d.ttfb_p50_ms.0),
            ("ttfb_p99_ms", &d.ttfb_p99_ms.0),
            ("in_flight", &d.in_flight.0),
        ] {
            if v.iter().any(|x| !x.is_finite() || *x < 0.0) {
                bad.push(format!("{name} holds a negative or non-finite value"));
            }
        }
        for (name, v) in [("done_95pct_ms", d.done_95pct_ms), ("done_99pct_ms", d.done_99pct_ms)] {
            if v.is_some_and(|x| !x.is_finite() || x < 0.0) {
                bad.push(format!("{name} is negative or not finite"));
            }
        }
        if !bad.is_empty() {
            return Err(format!("timeline: {}", bad.join("; ")));
        }
        Ok(Timeline {
            interval_ms: d.interval_ms,
            gets: d.gets.0,
            body_bytes: d.body_bytes.0,
            wire_bytes: d.wire_bytes.0,
            ttfb_p50_ms: d.ttfb_p50_ms.0,
            ttfb_p99_ms: d.ttfb_p99_ms.0,
            in_flight: d.in_flight.0,
            errors: d.errors.0,
            throttled_responses: d.throttled_responses.0,
            retries: d.retries.0,
            done_95pct_ms: d.done_95pct_ms,
            done_99pct_ms: d.done_99pct_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Timeline {
        Timeline {
            interval_ms: 100,
            gets: vec![3, 0],
            body_bytes: vec![300, 0],
            wire_bytes: vec![400, 20],
            ttfb_p50_ms: vec![5.0, 0.0],
            ttfb_p99_ms: vec![7.5, 0.0],
            in_flight: vec![2.0, 1.5],
            errors: vec![KindCounts {
                kind: ErrorKind::Timeout,
                counts: Bounded(vec![0, 1]),
            }],
            throttled_responses: vec![0, 0],
            retries: vec![1, 0],
            done_95pct_ms: Some(150.0),
            done_99pct_ms: None,
        }
        .compact()
    }

    #[test]
    fn a_timeline_round_trips_compactly() {
        let t = small();
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("throttled_responses"), "{json}");
        assert!(
            json.contains(r#""errors":[{"kind":"timeout","counts":[0,1]}]"#),
            "{json}"
        );
        let back: Timeline = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.errors_total(), vec![0, 1]);
        assert_eq!(Timeline::at(&back.throttled_responses, 1), 0);
    }

    #[test]
    fn children_merge_on_the_coordinators_clock() {
        let a = small();
        let mut b = small();
        b.interval_ms = 200;
        b.gets = vec![1, 1];
        b.ttfb_p50_ms = vec![9.0, 1.0];
        b.ttfb_p99_ms = vec![9.0, 1.0];
        // b began 100 ms after a, with 200 ms intervals: the merge is 200 ms wide.
        let m = Timeline::merged(&[(0.0, &a), (100.0, &b)], 500.0).unwrap();
        assert_eq!(m.interval_ms, 200);
        assert_eq!(m.len(), 3);
        assert_eq!(m.gets, vec![4, 1, 0], "{m:?}");
        assert_eq!(m.ttfb_p50_ms[0], 6.0, "(3 x 5 + 1 x 9) / 4");
        assert_eq!(m.ttfb_p99_ms[0], 9.0);
        // a's 3.5 requests x 100 ms and b's 2 x 200 ms over 200 ms.
        assert_eq!(m.in_flight[..2], [3.8, 1.5], "{m:?}");
        assert_eq!(m.retries, vec![2, 0, 0]);
        // a's 400 + 20 in its first 200 ms, b's 400 there and its 20 in the next.
        assert_eq!(m.wire_bytes, vec![820, 20, 0]);
        assert_eq!(m.errors_total(), vec![1, 1, 0]);
        assert_eq!(Timeline::merged(&[], 100.0), None);
    }

    #[test]
    fn a_fine_timeline_is_read_in_intervals_of_100_ms() {
        let mut t = small();
        t.interval_ms = 40;
        // 40 ms intervals, 3 to a coarse one of 120 ms.
        let c = t.coarsened(100);
        assert_eq!((c.interval_ms, c.len()), (120, 1));
        assert_eq!(c.gets, vec![3]);
        assert_eq!(c.wire_bytes, vec![420]);
        assert_eq!(c.in_flight, vec![1.75]);
        assert_eq!(c.errors_total(), vec![1]);
        assert_eq!((c.ttfb_p50_ms[0], c.ttfb_p99_ms[0]), (5.0, 7.5));
        assert!(c.throttled_responses.is_empty() && c.retries == vec![1]);
        let wide = small();
        assert!(matches!(wide.coarsened(100), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn interval_width_cuts_any_row_into_about_fifty() {
        for wall_ms in [63.0, 99.0, 250.0, 1_000.0, 40_000.0, 40_001.0, 900_000.0] {
            let width = Timeline::interval_for(wall_ms);
            let n = (wall_ms / f64::from(width)).ceil();
            assert!((40.0..=70.0).contains(&n), "{wall_ms} ms: {n} intervals of {width} ms");
        }
        assert_eq!(Timeline::interval_for(99.0), 2);
        assert_eq!(Timeline::interval_for(900_000.0), 20_000);
        assert_eq!(Timeline::interval_for(4_000.0), 100);
        assert_eq!(Timeline::interval_for(1_500.0), 20, "divides 100 ms");
        // Shorter than 50 ms: 1 ms intervals, as many as the row's ms.
        assert_eq!(Timeline::interval_for(20.0), 1);
        assert_eq!(Timeline::interval_for(0.0), 1);
    }

    #[test]
    fn a_crafted_timeline_is_refused_cheaply_and_every_bad_field_named() {
        // Millions of intervals claimed: refused at the first value past the bound,
        // long before the rest of the array is read.
        let huge = format!(
            r#"{{"interval_ms":100,"gets":[{}],"body_bytes":[],"ttfb_p50_ms":[],"ttfb_p99_ms":[],"in_flight":[]}}"#,
            vec!["1"; 3_000_000].join(",")
        );
        let started = std::time::Instant::now();
        let err = serde_json::from_str::<Timeline>(&huge).unwrap_err();
        assert!(err.to_string().contains("at most 400 intervals"), "{err}");
        // Serde stops at the error, 401 values in, not at the end of the text.
        assert!(err.column() < 1_000, "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let bad = r#"{"interval_ms":0,"gets":[1,2],"body_bytes":[1],"ttfb_p50_ms":[1,2],
                      "ttfb_p99_ms":[1,-2],"in_flight":[0,0],"retries":[1]}"#;
        let err = serde_json::from_str::<Timeline>(bad).unwrap_err().to_string();
        for part in [
            "interval_ms 0",
            "body_bytes has 1 values",
            "retries has 1 values",
            "ttfb_p99_ms holds",
        ] {
            assert!(err.contains(part), "{part}: {err}");
        }
    }
}

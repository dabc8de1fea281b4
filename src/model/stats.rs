//! Small numeric helpers of the result document: percentile summaries of
//! hdrhistograms, rounding to what a measurement supports, rates, medians, and the
//! "in the order first seen" listing every table and analysis uses.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// Samples the percentiles are drawn from.
    pub count: u64,
}

impl Percentiles {
    /// Summarises a histogram of microseconds.
    pub fn from_histogram_us(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| round3(us as f64 / 1000.0);
        Percentiles {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            mean: round3(h.mean() / 1000.0),
            count: h.len(),
        }
    }
}

/// A new microsecond histogram: auto-resizing, 3 significant figures. Histograms made
/// here always merge with each other.
pub fn histogram_us() -> Histogram<u64> {
    Histogram::<u64>::new(3).expect("3 significant figures is valid")
}

/// A duration in whole microseconds (saturating), the unit latency histograms record.
pub fn micros(d: std::time::Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Rounds to three decimals (microsecond resolution in milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Successful GETs per second and body MiB per second over `wall_s` seconds, as a
/// result row reports them.
pub fn rates(ok: u64, bytes: u64, wall_s: f64) -> (f64, f64) {
    (
        round3(ok as f64 / wall_s),
        round3(bytes as f64 / wall_s / (1024.0 * 1024.0)),
    )
}

/// CPU milliseconds per request, to the nanosecond.
pub fn cpu_ms_per_get(cpu_ms: f64, requests: u64) -> f64 {
    round3(cpu_ms / requests.max(1) as f64 * 1000.0) / 1000.0
}

/// The median (the upper one of an even count); `None` for no values.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The distinct values of `items`, in the order first seen.
pub fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_microseconds() {
        let mut h = histogram_us();
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let p = Percentiles::from_histogram_us(&h);
        assert!((p.p50 - 500.0).abs() < 1.0, "{p:?}");
        assert!((p.p99 - 990.0).abs() < 2.0, "{p:?}");
        assert!((p.max - 1000.0).abs() < 1.0, "{p:?}");
        assert_eq!(p.count, 1000);
        assert_eq!(Percentiles::from_histogram_us(&histogram_us()), Percentiles::default());
    }

    #[test]
    fn medians_and_first_seen() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(4.0));
        assert_eq!(median(Vec::new()), None);
        assert_eq!(first_seen([3, 1, 3, 2, 1]), vec![3, 1, 2]);
    }
}

//! Small numeric helpers of the result document: percentile summaries of
//! hdrhistograms, rounding to what a measurement supports ([`round3`], [`sig4`], and
//! the [`tidy`] serializers every float field of the document goes through), rates,
//! medians, and the "in the order first seen" listing every table and analysis uses.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    #[serde(serialize_with = "tidy::dec3")]
    pub p50: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub p90: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub p99: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub max: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub mean: f64,
    /// Samples the percentiles are drawn from.
    pub count: u64,
}

impl Percentiles {
    /// `count` values all equal to `value`: every percentile, the max and the mean are
    /// `value` (synthetic rows of the story court and of the analysis tests).
    pub fn all_at(value: f64, count: u64) -> Self {
        Percentiles {
            p50: value,
            p90: value,
            p99: value,
            max: value,
            mean: value,
            count,
        }
    }

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
pub(crate) fn micros(d: std::time::Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Rounds to three decimals (microsecond resolution in milliseconds). The result is
/// the double nearest to a decimal with three places, so it prints as one.
pub fn round3(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    (x * 1000.0).round() / 1000.0
}

/// Rounds to four significant digits (ratios, shares, per-request CPU). The result is
/// the double nearest to that decimal (an integer times or over an exact power of
/// ten), so it prints as one.
pub fn sig4(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let exponent = x.abs().log10().floor() as i32;
    let shift = 3 - exponent;
    if shift >= 0 {
        let scale = 10f64.powi(shift.min(22));
        (x * scale).round() / scale
    } else {
        let scale = 10f64.powi((-shift).min(22));
        (x / scale).round() * scale
    }
}

/// `serialize_with` helpers: every float of the result document is written rounded
/// to what its measurement supports, whatever arithmetic made it. Durations (`_ms`)
/// and rates (`_per_s`) to three decimals ([`dec3`]: a microsecond, a thousandth of
/// an object per second); ratios, shares, cores and per-request CPU to four
/// significant digits ([`sig4`]); a diagnosis's figures by their units
/// ([`super::figures`]).
pub(crate) mod tidy {
    use serde::Serializer;

    use super::{round3, sig4 as four};

    /// Three decimals.
    pub(crate) fn dec3<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(round3(*x))
    }

    /// Three decimals, when present.
    pub(crate) fn dec3_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_some(&round3(*x)),
            None => s.serialize_none(),
        }
    }

    /// Four significant digits.
    pub(crate) fn sig4<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(four(*x))
    }

    /// Four significant digits, when present.
    pub(crate) fn sig4_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_some(&four(*x)),
            None => s.serialize_none(),
        }
    }
}

/// Successful GETs per second and body MiB per second over `wall_s` seconds, as a
/// result row reports them.
pub fn rates(ok: u64, bytes: u64, wall_s: f64) -> (f64, f64) {
    (
        round3(ok as f64 / wall_s),
        round3(bytes as f64 / wall_s / (1024.0 * 1024.0)),
    )
}

/// CPU milliseconds per request, to four significant digits.
pub fn cpu_ms_per_get(cpu_ms: f64, requests: u64) -> f64 {
    sig4(cpu_ms / requests.max(1) as f64)
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
pub(crate) fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
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
    fn rounding_prints_short() {
        // The old cpu_ms_per_get, round3(x * 1000) / 1000, is not a short decimal.
        assert_eq!((round3(134.975) / 1000.0).to_string(), "0.13497499999999998");
        assert_eq!(cpu_ms_per_get(134.975, 1000).to_string(), "0.135");
        for (x, want) in [
            (0.134_974_999_999_999_98, "0.135"),
            (123_456.7, "123500"),
            (1.000_04, "1"),
            (-0.000_123_456, "-0.0001235"),
            (2.675, "2.675"),
            (0.0, "0"),
        ] {
            assert_eq!(sig4(x).to_string(), want, "{x}");
        }
        assert_eq!(round3(20_248.418_499_9).to_string(), "20248.418");
        assert_eq!(round3(0.1 + 0.2).to_string(), "0.3");
        assert!(sig4(f64::NAN).is_nan());
        #[derive(Serialize)]
        struct Row {
            #[serde(serialize_with = "tidy::dec3")]
            wall_ms: f64,
            #[serde(serialize_with = "tidy::sig4_opt")]
            ratio: Option<f64>,
        }
        let text = serde_json::to_string(&Row {
            wall_ms: 0.1 + 0.2,
            ratio: Some(2.0 / 3.0),
        })
        .unwrap();
        assert_eq!(text, r#"{"wall_ms":0.3,"ratio":0.6667}"#);
    }

    #[test]
    fn medians_and_first_seen() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(4.0));
        assert_eq!(median(Vec::new()), None);
        assert_eq!(first_seen([3, 1, 3, 2, 1]), vec![3, 1, 2]);
    }
}

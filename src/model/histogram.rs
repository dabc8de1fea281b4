//! Latency histograms in the result document: hdrhistogram V2 + deflate, base64
//! (standard alphabet), in microseconds. A fan-out child sends its three histograms
//! at full precision ([`super::fanout`]); every row keeps a compact copy of its
//! time-to-last-byte histogram ([`cdf_histogram`], two significant digits: 1% wide
//! buckets, a few hundred bytes) from which the plot draws the latency CDF, every
//! bucket of it ([`cdf_points`]).

use std::io::Cursor;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Significant digits of a row's CDF histogram: buckets 1% wide, finer than a
/// plot's pixel on a log axis, and a few hundred bytes per row.
pub const CDF_SIGNIFICANT_DIGITS: u8 = 2;

/// A histogram that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("histogram {name}: {reason}")]
pub struct HistogramError {
    pub name: &'static str,
    pub reason: String,
}

/// Serializes a histogram (V2 + deflate, base64).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        // Only fails on I/O into a Vec (cannot happen) or a histogram too large to encode.
        Err(e) => {
            tracing::error!(error = ?e, "serializing a histogram");
            String::new()
        }
    }
}

/// Reads a histogram written by [`encode_histogram`].
pub fn decode_histogram(name: &'static str, text: &str) -> Result<Histogram<u64>, HistogramError> {
    let err = |reason: String| HistogramError { name, reason };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| err(format!("not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| err(format!("not an hdrhistogram V2 encoding: {e:?}")))
}

/// The compact copy of `h` a row keeps: every recorded bucket of `h` counted into
/// buckets of [`CDF_SIGNIFICANT_DIGITS`] digits (auto-resizing, so any value fits).
pub fn cdf_histogram(h: &Histogram<u64>) -> Histogram<u64> {
    let mut out = Histogram::<u64>::new(CDF_SIGNIFICANT_DIGITS).expect("2 significant digits is valid");
    for v in h.iter_recorded() {
        // An auto-resizing histogram takes any value; counts only add.
        let _ = out.record_n(v.value_iterated_to(), v.count_at_value());
    }
    out
}

/// The row field: [`cdf_histogram`] of `h`, encoded; `None` for an empty histogram.
pub fn encode_cdf(h: &Histogram<u64>) -> Option<String> {
    (!h.is_empty()).then(|| encode_histogram(&cdf_histogram(h)))
}

/// The CDF of a microsecond histogram, one point per recorded bucket: (the bucket's
/// upper value in ms, the fraction of samples at or below it), ascending; the last
/// point is at 1.
pub fn cdf_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = h.len().max(1) as f64;
    let mut seen = 0u64;
    h.iter_recorded()
        .map(|v| {
            seen += v.count_at_value();
            (
                h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                seen as f64 / total,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::histogram_us;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = histogram_us();
        for &v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn histograms_round_trip() {
        let h = hist(&[100, 250, 250, 4_000, 1_000_000]);
        let back = decode_histogram("ttfb_us", &encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        let err = decode_histogram("ttfb_us", "not base64!").unwrap_err();
        assert!(err.to_string().contains("ttfb_us"), "{err}");
        let err = decode_histogram("ttlb_us", "AAAA").unwrap_err();
        assert!(err.to_string().contains("V2"), "{err}");
    }

    #[test]
    fn the_cdf_copy_keeps_every_sample_within_one_percent_and_is_small() {
        // 1,000 samples spread over 2..50 ms.
        let values: Vec<u64> = (0..1000u64).map(|i| 2_000 + i * i * 48 / 1000).collect();
        let h = hist(&values);
        let copy = cdf_histogram(&h);
        assert_eq!(copy.len(), 1000);
        for q in [0.1, 0.5, 0.9, 0.99, 1.0] {
            let (a, b) = (h.value_at_quantile(q) as f64, copy.value_at_quantile(q) as f64);
            assert!((a - b).abs() / a < 0.01, "q{q}: {a} vs {b}");
        }
        let text = encode_cdf(&h).unwrap();
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(encode_histogram(&h).len() > text.len());
        let back = decode_histogram("ttlb_us", &text).unwrap();
        let points = cdf_points(&back);
        assert!(points.len() > 100, "{} points", points.len());
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(points.last().unwrap().1, 1.0);
        assert!((points[0].0 - 2.0).abs() < 0.05, "{:?}", points[0]);
        assert_eq!(encode_cdf(&histogram_us()), None);
    }
}

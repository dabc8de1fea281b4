//! What a fan-out child adds to each row: the timed phase's wall-clock window and its
//! latency histograms, serialized so the coordinator can merge them (hdrhistogram V2 +
//! deflate, base64). The coordinator's own block is in [`super::result`]; invoking and
//! merging live in `lambda`.

use std::io::Cursor;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::stats::{round3, tidy};

/// Added by a child to each row: when its timed phase ran and its latency histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildMeasure {
    /// Start of the timed phase, ms since the Unix epoch (microsecond resolution).
    #[serde(serialize_with = "tidy::dec3")]
    pub started_unix_ms: f64,
    /// End of the timed phase (last body byte of the last request).
    #[serde(serialize_with = "tidy::dec3")]
    pub finished_unix_ms: f64,
    /// Serialized histograms; the coordinator drops them from the rows it keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<SerializedHistograms>,
}

/// Microsecond histograms as hdrhistogram V2 + deflate, base64 (standard alphabet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SerializedHistograms {
    pub ttfb_us: String,
    pub ttlb_us: String,
    pub pool_wait_us: String,
}

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

fn unix_ms_f64(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| round3(d.as_secs_f64() * 1000.0))
}

impl ChildMeasure {
    /// The measure of a timed phase that began at `started` and took `wall`, with the
    /// ttfb, ttlb and pool-wait histograms (microseconds).
    pub fn new(started: SystemTime, wall: Duration, [ttfb, ttlb, pool_wait]: [&Histogram<u64>; 3]) -> Self {
        ChildMeasure {
            started_unix_ms: unix_ms_f64(started),
            finished_unix_ms: unix_ms_f64(started + wall),
            histograms: Some(SerializedHistograms {
                ttfb_us: encode_histogram(ttfb),
                ttlb_us: encode_histogram(ttlb),
                pool_wait_us: encode_histogram(pool_wait),
            }),
        }
    }
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
}

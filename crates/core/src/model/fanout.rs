//! What a fan-out child adds to each row: the timed phase's wall-clock window and its
//! latency histograms at full precision, serialized so the coordinator can merge them
//! (hdrhistogram V2 + deflate, base64: [`super::histogram`]). The coordinator's own
//! block is in [`super::result`]; invoking and merging live in `lambda`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::histogram::encode_histogram;
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

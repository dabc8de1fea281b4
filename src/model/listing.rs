//! What a `key_prefix` sweep listed before it ran (per bucket: keys found, their
//! bytes, the listing's own requests and time, kept apart from the sweep's), and the
//! size spread of the objects a row read.

use serde::{Deserialize, Serialize};

/// The listing of one bucket's prefix: untimed by the sweep, reported apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyListing {
    pub bucket: String,
    pub prefix: String,
    /// `object_count`.
    pub keys_asked: u32,
    /// Keys the sweep reads (at most `keys_asked`; fewer only with `allow_fewer_keys`).
    pub keys_found: u32,
    /// Sum of the listed sizes of those keys.
    pub bytes_total: u64,
    /// ListObjectsV2 requests (pages) the listing made.
    pub list_requests: u32,
    /// Wall time of the listing, ms.
    pub list_wall_ms: f64,
    /// A fan-out (`split` `shard`): keys each child listed and read after this listing,
    /// in child order (contiguous, disjoint shares of it); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys_per_child: Vec<u32>,
    /// The listing ran out of its time (in Lambda: half the time left before the
    /// deadline less the safety margin) before it found `keys_asked` keys, and
    /// `allow_fewer_keys` let the sweep read the `keys_found` found by then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_time: bool,
}

/// Sizes of the objects a configuration read, bytes (from the listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeSpread {
    pub min: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl SizeSpread {
    /// The spread of `sizes` (nearest-rank percentiles); `None` when empty.
    pub fn of(mut sizes: Vec<u64>) -> Option<SizeSpread> {
        if sizes.is_empty() {
            return None;
        }
        sizes.sort_unstable();
        let rank = |p: f64| sizes[((p * sizes.len() as f64).ceil() as usize).clamp(1, sizes.len()) - 1];
        Some(SizeSpread {
            min: sizes[0],
            p50: rank(0.50),
            p99: rank(0.99),
            max: sizes[sizes.len() - 1],
        })
    }
    /// True when the objects are not all one size.
    pub fn varies(&self) -> bool {
        self.min != self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = SizeSpread::of((1..=100).collect()).unwrap();
        assert_eq!((s.min, s.p50, s.p99, s.max), (1, 50, 99, 100));
        assert!(s.varies());
        assert_eq!(SizeSpread::of(vec![]), None);
        assert!(!SizeSpread::of(vec![7, 7]).unwrap().varies());
    }
}

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

/// A row's `object_size_bytes`: the one size of a size axis's configuration (a
/// number), or the sizes a `key_prefix` sweep's listing found (`{min, p50, p99, max}`).
/// Both shapes load, so results written before the size axis still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ObjectSize {
    /// Every object of the configuration has this many bytes (`object_sizes_bytes`).
    Fixed(u64),
    /// The listed objects' sizes.
    Spread(SizeSpread),
}

impl ObjectSize {
    /// The size of a size axis's row; `None` for a listing's spread.
    pub fn fixed(&self) -> Option<u64> {
        match self {
            ObjectSize::Fixed(n) => Some(*n),
            ObjectSize::Spread(_) => None,
        }
    }
    /// The sizes as a spread (a fixed size: min = max).
    pub fn spread(&self) -> SizeSpread {
        match *self {
            ObjectSize::Fixed(n) => SizeSpread {
                min: n,
                p50: n,
                p99: n,
                max: n,
            },
            ObjectSize::Spread(s) => s,
        }
    }
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

    #[test]
    fn a_row_size_is_a_number_or_a_spread() {
        let fixed: ObjectSize = serde_json::from_str("4096").unwrap();
        assert_eq!(fixed.fixed(), Some(4096));
        assert_eq!(serde_json::to_string(&fixed).unwrap(), "4096");
        let spread: ObjectSize = serde_json::from_str(r#"{"min":1,"p50":2,"p99":3,"max":4}"#).unwrap();
        assert_eq!(spread.fixed(), None);
        assert_eq!(spread.spread().max, 4);
    }
}

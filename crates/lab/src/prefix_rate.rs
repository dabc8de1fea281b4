//! S3's request rate per prefix partition: at most `gets_per_s` reads (GetObject and
//! HeadObject, which S3's published 5,500/s covers together) per partition of a
//! general purpose bucket, each partition a token bucket holding a tenth of a second
//! of requests; a read beyond it is answered `503 SlowDown` ("Please reduce your
//! request rate."), as S3 answers while it has not scaled a prefix, and counted.
//!
//! The partition of a key is its bucket and the key up to its first `/` (a key with
//! no `/` is in the bucket's root partition, with every other such key): the
//! top-level prefix is what S3's guidance spreads load over ("10 prefixes, 55,000
//! reads a second") and what s3sweep's key templates (`test/{i}/vectors`) name first.
//! S3 splits hot prefixes further over minutes; the lab does not, so what it shows
//! is a fresh bucket's rate. Directory buckets (S3 Express One Zone) have no
//! per-prefix limit and are never throttled here. At most
//! [`MAX_PREFIX_PARTITIONS`] partitions are tracked: past it, idle ones (refilled,
//! as a new one would be) are forgotten, and while all are busy a read of a new
//! partition gets `SlowDown`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use serde::Serialize;

use super::caps::MAX_PREFIX_PARTITIONS;
use super::layered::ReadLayer;
use crate::plan::is_directory_bucket;

/// S3 Standard's published rate: 5,500 GET/HEAD per second per partitioned prefix.
pub const S3_GETS_PER_S: f64 = 5_500.0;

/// How much of a second's requests a partition's bucket holds (its burst).
const DEPTH_S: f64 = 0.1;

/// S3's message with `SlowDown`.
const SLOW_DOWN_MESSAGE: &str = "Please reduce your request rate.";

/// The partition a key belongs to: `bucket/` and the key up to its first `/`.
pub(crate) fn partition_of(bucket: &str, key: &str) -> String {
    let prefix = key.split_once('/').map_or("", |(p, _)| p);
    format!("{bucket}/{prefix}")
}

/// What the per-prefix rate did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PrefixRateTally {
    /// The rate per partition, reads per second.
    pub gets_per_s: f64,
    /// Reads let through.
    pub allowed: u64,
    /// Reads answered 503 SlowDown.
    pub throttled: u64,
    /// Partitions seen.
    pub partitions: u64,
}

/// One partition's bucket.
#[derive(Debug)]
struct Tokens {
    tokens: f64,
    at: Instant,
}

/// The per-partition token buckets. The rate may change while the lab runs
/// ([`PrefixRate::set_gets_per_s`]: a prefix's limit reached mid-sweep, in a test).
#[derive(Debug)]
pub(crate) struct PrefixRate {
    /// The rate (reads per second per partition) as `f64` bits.
    gets_per_s_bits: AtomicU64,
    partitions: Mutex<HashMap<String, Tokens>>,
    allowed: AtomicU64,
    throttled: AtomicU64,
}

impl PrefixRate {
    /// A limit of `gets_per_s` reads per partition (checked by the caller: positive).
    pub(crate) fn new(gets_per_s: f64) -> Self {
        PrefixRate {
            gets_per_s_bits: AtomicU64::new(gets_per_s.to_bits()),
            partitions: Mutex::new(HashMap::new()),
            allowed: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
        }
    }

    /// The rate per partition now, reads per second.
    fn gets_per_s(&self) -> f64 {
        f64::from_bits(self.gets_per_s_bits.load(Ordering::Relaxed))
    }

    /// Changes the rate (checked by the caller: positive); each partition's bucket
    /// holds a tenth of a second of the new rate from its next read on.
    pub(crate) fn set_gets_per_s(&self, gets_per_s: f64) {
        self.gets_per_s_bits.store(gets_per_s.to_bits(), Ordering::Relaxed);
    }

    /// Takes a token from the partition of `bucket`/`key`; `false`: over the rate.
    pub(crate) fn admit(&self, bucket: &str, key: &str) -> bool {
        if is_directory_bucket(bucket) {
            return true;
        }
        let now = Instant::now();
        let rate = self.gets_per_s();
        let depth = (rate * DEPTH_S).max(1.0);
        let refilled = |t: &Tokens| (t.tokens + now.saturating_duration_since(t.at).as_secs_f64() * rate).min(depth);
        let ok = {
            let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
            let partition = partition_of(bucket, key);
            if map.len() >= MAX_PREFIX_PARTITIONS && !map.contains_key(&partition) {
                // A partition whose bucket has refilled is as a new one: forget those.
                map.retain(|_, t| refilled(t) < depth);
            }
            if map.len() >= MAX_PREFIX_PARTITIONS && !map.contains_key(&partition) {
                false
            } else {
                let t = map.entry(partition).or_insert(Tokens { tokens: depth, at: now });
                t.tokens = refilled(t);
                t.at = now;
                let ok = t.tokens >= 1.0;
                if ok {
                    t.tokens -= 1.0;
                }
                ok
            }
        };
        let counter = if ok { &self.allowed } else { &self.throttled };
        counter.fetch_add(1, Ordering::Relaxed);
        ok
    }

    /// The tally so far.
    pub(crate) fn tally(&self) -> PrefixRateTally {
        PrefixRateTally {
            gets_per_s: self.gets_per_s(),
            allowed: self.allowed.load(Ordering::Relaxed),
            throttled: self.throttled.load(Ordering::Relaxed),
            partitions: self.partitions.lock().map_or(0, |m| m.len() as u64),
        }
    }
}

/// The read layer: reads over a partition's rate get 503 SlowDown (no limit: all pass).
#[derive(Debug, Clone)]
pub(crate) struct PrefixRateLayer {
    pub(crate) rate: Option<std::sync::Arc<PrefixRate>>,
}

impl PrefixRateLayer {
    fn admit(&self, bucket: &str, key: &str) -> S3Result<()> {
        match &self.rate {
            Some(rate) if !rate.admit(bucket, key) => Err(s3_error!(SlowDown, "{}", SLOW_DOWN_MESSAGE)),
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl ReadLayer for PrefixRateLayer {
    async fn get_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        self.admit(&req.input.bucket, &req.input.key)?;
        inner.get_object(req).await
    }

    async fn head_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        self.admit(&req.input.bucket, &req.input.key)?;
        inner.head_object(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_is_the_top_level_prefix() {
        assert_eq!(partition_of("b", "test/1/vectors"), "b/test");
        assert_eq!(partition_of("b", "p7/x"), "b/p7");
        assert_eq!(partition_of("b", "flat-key"), "b/");
    }

    #[test]
    fn a_partition_holds_a_tenth_of_a_second_then_refuses() {
        let rate = PrefixRate::new(100.0);
        let passed = (0..50).filter(|_| rate.admit("b", "p/x")).count();
        // 10 tokens at once (plus at most one refilled while the loop ran).
        assert!((10..=11).contains(&passed), "{passed}");
        // Another partition has its own bucket; directory buckets are never limited.
        assert!(rate.admit("b", "q/x"));
        assert!((0..50).all(|_| rate.admit("d--az1--x-s3", "p/x")));
        let t = rate.tally();
        assert_eq!(t.throttled as usize, 50 - passed);
        assert_eq!(t.partitions, 2);
    }

    #[test]
    fn partitions_past_the_cap_forget_idle_ones_or_slow_down() {
        // One token per partition, refilled in 1,000 s: every partition stays busy.
        let busy = PrefixRate::new(0.001);
        for i in 0..MAX_PREFIX_PARTITIONS {
            assert!(busy.admit("b", &format!("p{i}/x")));
        }
        assert!(!busy.admit("b", "one-more/x"), "past the cap while all are busy");
        assert_eq!(busy.tally().partitions as usize, MAX_PREFIX_PARTITIONS);
        // Refilled at once: idle partitions are forgotten, new ones let through.
        let idle = PrefixRate::new(1e12);
        for i in 0..MAX_PREFIX_PARTITIONS + 500 {
            assert!(idle.admit("b", &format!("p{i}/x")), "{i}");
        }
        assert!(idle.tally().partitions as usize <= MAX_PREFIX_PARTITIONS);
    }
}

//! Latency profiles for the embedded server, and the wrapper that applies them.
//!
//! [`WithLatency`] wraps any s3s [`S3`] implementation and, for reads (GetObject and
//! HeadObject), sleeps for a delay drawn from the bucket's profile before the inner
//! store answers, so the delay lands before the first byte. Writes are never delayed
//! (seeding stays fast); ListObjectsV2 pages only by the lab-wide listing delay
//! ([`Profiles::set_list_delay`], `serve --list-delay-ms`; 0 by default), to play a
//! slow listing of a huge prefix. Draws come from a seeded generator per bucket,
//! so two runs with the same seed draw the same sequence (their order across
//! concurrent requests still varies).
//!
//! The profiles are modelled on published figures, not measured from AWS:
//! - `none`: no added delay: the client and the loopback stack alone.
//! - `express`: log-normal, median 4 ms, sigma 0.35 (p99 ≈ 9 ms), capped at 50 ms —
//!   single-digit-millisecond first byte, like S3 Express One Zone.
//! - `standard`: log-normal, median 16 ms, sigma 0.5 (p99 ≈ 51 ms), and 1 request in
//!   100 three times slower (a tail near 80-150 ms), capped at 500 ms — tens of
//!   milliseconds with a long tail, like S3 Standard; and a far tail ([`Tail`]):
//!   1 read in 5,000 stalls 1,500 ms more. Published measurements of S3 Standard give
//!   p99 ≈ 75-80 ms for small GETs and a maximum over 10 s in a million 1 KiB GETs;
//!   how often a stall of a second or more comes is not published, so the rate and
//!   length are an assumption, overridden by `serve --tail RATE:MS` (`--tail off`:
//!   none) ([`Profiles::set_tail`]). `express` has no far tail.
//!
//! tokio's timer has millisecond granularity, so each delay can be up to ~1 ms longer
//! than drawn; the sweep measures what the client actually saw.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, S3};

use super::layered::{Layered, ReadLayer};

/// A bucket's latency profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyProfile {
    /// No added delay.
    None,
    /// S3 Express One Zone-like: single-digit ms.
    Express,
    /// S3 Standard-like: tens of ms with a long tail.
    Standard,
}

impl LatencyProfile {
    /// Every profile, for help texts.
    pub const ALL: [LatencyProfile; 3] = [LatencyProfile::None, LatencyProfile::Express, LatencyProfile::Standard];

    /// The profile's name as accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            LatencyProfile::None => "none",
            LatencyProfile::Express => "express",
            LatencyProfile::Standard => "standard",
        }
    }

    /// The median delay, in milliseconds.
    pub fn median_ms(self) -> f64 {
        match self {
            LatencyProfile::None => 0.0,
            LatencyProfile::Express => 4.0,
            LatencyProfile::Standard => 16.0,
        }
    }

    fn params(self) -> Option<(f64, f64, f64, f64)> {
        // (median ms, sigma, probability of a 3x tail draw, cap ms)
        match self {
            LatencyProfile::None => None,
            LatencyProfile::Express => Some((4.0, 0.35, 0.0, 50.0)),
            LatencyProfile::Standard => Some((16.0, 0.5, 0.01, 500.0)),
        }
    }
}

impl fmt::Display for LatencyProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LatencyProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(LatencyProfile::None),
            "express" => Ok(LatencyProfile::Express),
            "standard" => Ok(LatencyProfile::Standard),
            other => Err(format!(
                "unknown latency profile {other:?}: expected none, express or standard"
            )),
        }
    }
}

/// The far tail of a profile: a rare stall of `stall_ms` added to a read's delay,
/// drawn with probability `rate` (`serve --tail RATE:MS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tail {
    /// The share of reads that stall, 0 to 1.
    pub rate: f64,
    /// How much longer a stalled read waits, ms.
    pub stall_ms: u64,
}

impl Tail {
    /// The `standard` profile's far tail (an assumption: see the module's doc).
    pub const STANDARD: Tail = Tail {
        rate: 0.0002,
        stall_ms: 1500,
    };
    /// No far tail.
    pub const OFF: Tail = Tail { rate: 0.0, stall_ms: 0 };
}

impl fmt::Display for Tail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rate <= 0.0 {
            f.write_str("off")
        } else {
            write!(f, "{}:{}", self.rate, self.stall_ms)
        }
    }
}

impl FromStr for Tail {
    type Err = String;
    /// `off`, or `RATE:MS` with RATE a share (0 to 1) or `1/N`, MS up to 600,000.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(Tail::OFF);
        }
        let bad = || format!("--tail: want `off` or RATE:MS (RATE 0 to 1 or 1/N, MS up to 600000), got {s:?}");
        let (rate, ms) = s.split_once(':').ok_or_else(bad)?;
        let rate = match rate.split_once('/') {
            Some((one, n)) => match (one.trim().parse::<f64>(), n.trim().parse::<f64>()) {
                (Ok(a), Ok(b)) if b > 0.0 => a / b,
                _ => return Err(bad()),
            },
            None => rate.trim().parse::<f64>().map_err(|_| bad())?,
        };
        let stall_ms = ms.trim().parse::<u64>().map_err(|_| bad())?;
        if !(rate.is_finite() && (0.0..=1.0).contains(&rate)) || stall_ms > 600_000 {
            return Err(bad());
        }
        Ok(Tail { rate, stall_ms })
    }
}

/// A seeded sampler of one profile's delays.
#[derive(Debug)]
pub(crate) struct LatencyModel {
    profile: LatencyProfile,
    dist: Option<(LogNormal<f64>, f64, f64)>,
    rng: Mutex<StdRng>,
    /// The far tail's own draws, so that a tail leaves the other draws as they were.
    tail_rng: Mutex<StdRng>,
}

impl LatencyModel {
    pub(crate) fn new(profile: LatencyProfile, seed: u64) -> Self {
        let dist = profile.params().map(|(median, sigma, tail_p, cap)| {
            (
                LogNormal::new(median.ln(), sigma).expect("profile parameters are valid"),
                tail_p,
                cap,
            )
        });
        LatencyModel {
            profile,
            dist,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            tail_rng: Mutex::new(StdRng::seed_from_u64(seed ^ 0x7a11_5ea1_u64)),
        }
    }

    /// The far tail this profile has, `over` replacing `standard`'s.
    fn tail(&self, over: Option<Tail>) -> Option<Tail> {
        match self.profile {
            LatencyProfile::Standard => Some(over.unwrap_or(Tail::STANDARD)).filter(|t| t.rate > 0.0),
            LatencyProfile::Express | LatencyProfile::None => None,
        }
    }

    /// The next delay, with the far tail (`over`: the lab's `--tail`, if given).
    pub(crate) fn sample_with(&self, over: Option<Tail>) -> Duration {
        let base = self.sample();
        let Some(tail) = self.tail(over) else {
            return base;
        };
        let mut rng = self.tail_rng.lock().unwrap_or_else(|e| e.into_inner());
        if rng.random_bool(tail.rate) {
            base + Duration::from_millis(tail.stall_ms)
        } else {
            base
        }
    }

    pub(crate) fn profile(&self) -> LatencyProfile {
        self.profile
    }

    /// The next delay, without the far tail.
    pub(crate) fn sample(&self) -> Duration {
        let Some((dist, tail_p, cap)) = &self.dist else {
            return Duration::ZERO;
        };
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let mut ms = dist.sample(&mut *rng);
        if *tail_p > 0.0 && rng.random_bool(*tail_p) {
            ms *= 3.0;
        }
        Duration::from_secs_f64(ms.min(*cap) / 1000.0)
    }
}

/// Latency profiles by bucket name; buckets not named get the default profile.
#[derive(Debug)]
pub struct Profiles {
    seed: u64,
    default: LatencyProfile,
    by_bucket: RwLock<HashMap<String, Arc<LatencyModel>>>,
    /// Added before every ListObjectsV2 page, ms.
    list_delay_ms: AtomicU64,
    /// `--tail`: the far tail of `standard` buckets (`None`: [`Tail::STANDARD`]).
    tail: RwLock<Option<Tail>>,
}

impl Profiles {
    pub fn new(default: LatencyProfile, seed: u64) -> Self {
        Profiles {
            seed,
            default,
            by_bucket: RwLock::new(HashMap::new()),
            list_delay_ms: AtomicU64::new(0),
            tail: RwLock::new(None),
        }
    }

    /// Sets the far tail of `standard` buckets ([`Tail::OFF`]: none; `None`: the
    /// profile's own, [`Tail::STANDARD`]).
    pub fn set_tail(&self, tail: Option<Tail>) {
        *self.tail.write().unwrap_or_else(|e| e.into_inner()) = tail;
    }

    /// The far tail of `standard` buckets.
    pub fn tail(&self) -> Tail {
        self.tail
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(Tail::STANDARD)
    }

    /// Delays every ListObjectsV2 page of every bucket by `delay` (zero: none).
    pub fn set_list_delay(&self, delay: Duration) {
        self.list_delay_ms.store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// The delay before each ListObjectsV2 page.
    pub fn list_delay(&self) -> Duration {
        Duration::from_millis(self.list_delay_ms.load(Ordering::Relaxed))
    }

    /// Sets a bucket's profile.
    pub fn set(&self, bucket: &str, profile: LatencyProfile) {
        let seed = self.seed ^ fnv(bucket.as_bytes());
        self.by_bucket
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(bucket.to_string(), Arc::new(LatencyModel::new(profile, seed)));
    }

    /// The profile a bucket has.
    pub fn profile_of(&self, bucket: &str) -> LatencyProfile {
        self.model(bucket).map_or(self.default, |m| m.profile())
    }

    fn model(&self, bucket: &str) -> Option<Arc<LatencyModel>> {
        self.by_bucket
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(bucket)
            .cloned()
    }

    /// The delay for the next read from `bucket`.
    pub fn delay(&self, bucket: &str) -> Duration {
        let over = *self.tail.read().unwrap_or_else(|e| e.into_inner());
        match self.model(bucket) {
            Some(m) => m.sample_with(over),
            None if self.default == LatencyProfile::None => Duration::ZERO,
            None => {
                self.set(bucket, self.default);
                self.model(bucket).map_or(Duration::ZERO, |m| m.sample_with(over))
            }
        }
    }
}

pub(crate) fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Adds each bucket's read latency (GetObject and HeadObject) in front of a store.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    profiles: Arc<Profiles>,
}

impl Latency {
    async fn wait(&self, bucket: &str) {
        let delay = self.profiles.delay(bucket);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

/// A store with read latency in front.
pub(crate) type WithLatency<S> = Layered<S, Latency>;

impl<S> Layered<S, Latency> {
    pub(crate) fn new(inner: S, profiles: Arc<Profiles>) -> Self {
        Layered {
            inner,
            layer: Latency { profiles },
        }
    }
}

#[async_trait::async_trait]
impl ReadLayer for Latency {
    async fn get_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        self.wait(&req.input.bucket).await;
        inner.get_object(req).await
    }
    async fn head_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        self.wait(&req.input.bucket).await;
        inner.head_object(req).await
    }
    async fn list_objects_v2<S: S3>(
        &self,
        inner: &S,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let delay = self.profiles.list_delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        inner.list_objects_v2(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn median_ms(profile: LatencyProfile) -> f64 {
        let m = LatencyModel::new(profile, 7);
        let mut v: Vec<f64> = (0..4001).map(|_| m.sample().as_secs_f64() * 1000.0).collect();
        v.sort_by(f64::total_cmp);
        v[2000]
    }

    #[test]
    fn profiles_have_their_documented_medians() {
        assert_eq!(median_ms(LatencyProfile::None), 0.0);
        let e = median_ms(LatencyProfile::Express);
        assert!((3.6..4.4).contains(&e), "express median {e}");
        let s = median_ms(LatencyProfile::Standard);
        assert!((14.5..17.5).contains(&s), "standard median {s}");
    }

    #[test]
    fn same_seed_same_draws() {
        let a = LatencyModel::new(LatencyProfile::Standard, 3);
        let b = LatencyModel::new(LatencyProfile::Standard, 3);
        for _ in 0..100 {
            assert_eq!(a.sample(), b.sample());
        }
    }

    #[test]
    fn caps_hold() {
        let m = LatencyModel::new(LatencyProfile::Express, 1);
        assert!((0..10_000).all(|_| m.sample() <= Duration::from_millis(50)));
    }

    #[test]
    fn names_parse() {
        for p in LatencyProfile::ALL {
            assert_eq!(p.name().parse::<LatencyProfile>().unwrap(), p);
        }
        assert!("slow"
            .parse::<LatencyProfile>()
            .unwrap_err()
            .contains("none, express or standard"));
    }

    #[test]
    fn standard_has_a_far_tail_and_express_none() {
        let stalls = |profile, over: Option<Tail>| {
            let m = LatencyModel::new(profile, 5);
            (0..50_000)
                .filter(|_| m.sample_with(over) >= Duration::from_millis(1000))
                .count()
        };
        // 1 in 5,000 of 50,000: about 10.
        let s = stalls(LatencyProfile::Standard, None);
        assert!((3..=25).contains(&s), "standard stalls {s}");
        assert_eq!(stalls(LatencyProfile::Express, None), 0);
        assert_eq!(stalls(LatencyProfile::Standard, Some(Tail::OFF)), 0);
        let heavy = stalls(
            LatencyProfile::Standard,
            Some(Tail {
                rate: 0.02,
                stall_ms: 1000,
            }),
        );
        assert!((700..=1300).contains(&heavy), "1 in 50: {heavy}");
        assert_eq!(
            stalls(LatencyProfile::Standard, Some("1:1000".parse().unwrap())),
            50_000
        );
    }

    #[test]
    fn tails_parse_and_bad_ones_are_named() {
        assert_eq!("off".parse::<Tail>().unwrap(), Tail::OFF);
        assert_eq!(
            "1/50:1000".parse::<Tail>().unwrap(),
            Tail {
                rate: 0.02,
                stall_ms: 1000
            }
        );
        assert_eq!("0.5:20".parse::<Tail>().unwrap().to_string(), "0.5:20");
        for bad in ["", "2:10", "0.1", "x:10", "0.1:-3", "1/0:10"] {
            assert!(bad.parse::<Tail>().unwrap_err().starts_with("--tail"), "{bad}");
        }
    }

    #[test]
    fn unnamed_buckets_get_the_default() {
        let p = Profiles::new(LatencyProfile::None, 1);
        p.set("slow-bucket", LatencyProfile::Standard);
        assert_eq!(p.profile_of("slow-bucket"), LatencyProfile::Standard);
        assert_eq!(p.profile_of("other"), LatencyProfile::None);
        assert_eq!(p.delay("other"), Duration::ZERO);
    }
}

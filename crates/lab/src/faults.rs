//! Fault profiles for the embedded server: per bucket, seeded, each kind with a rate.
//!
//! A bucket's profile is a list of `(kind, rate)`; on every GetObject to the bucket one
//! uniform draw from the bucket's seeded generator picks at most one fault (the rates
//! of a bucket add up to at most 1). Other operations (PUT, HEAD, listings, deletes)
//! are never faulted, so seeding and cleaning stay reliable.
//!
//! Where each kind is made:
//! - S3-level kinds are answered by [`WithFaults`], an s3s [`S3`] wrapper, as real S3
//!   errors: `slow-down` (503 SlowDown), `internal-error` (500 InternalError),
//!   `access-denied` (403 AccessDenied). `late-first-byte` sleeps there for
//!   [`FaultTiming::late_first_byte_ms`] before answering normally.
//! - Connection-level kinds need the HTTP/TCP layer: [`WithFaults`] marks the response
//!   with an [`InjectedFault`] extension (a [`ConnectionFault`]) and [`super::conn`]
//!   acts on it:
//!   `reset-before-headers` (the socket is closed with `SO_LINGER 0`, an RST, before any
//!   byte of the response), `reset-mid-body` (half the body, then an RST),
//!   `stall-body` (half the body, then nothing for [`FaultTiming::stall_ms`]) and
//!   `truncated-body` (the right `Content-Length`, half the body, then a clean close).
//!
//! [`Faults`] counts every fault it injected, by kind ([`FaultTally`]); the server
//! exposes the tally in process ([`super::RunningServer::faults`]), at
//! `GET /_s3sweep/faults` (JSON) and in `s3sweep serve`'s exit line.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};

use serde::Serialize;

use crate::model::closed_set::closed_set;

use super::layered::{Layered, ReadLayer};

closed_set! {
    /// One kind of fault. The list of kinds ([`FaultKind::ALL`]: the counters, the
    /// tally, the flag's choices) comes from this enum itself ([`closed_set!`]), and
    /// every place that carries a kind out matches it exhaustively ([`FaultLayer`] here,
    /// [`ConnectionFault`] in [`super::conn`]): a new kind does not compile until it is
    /// handled everywhere.
    #[derive(PartialOrd, Ord)]
    pub enum FaultKind {
        /// 503 SlowDown.
        SlowDown = "slow-down",
        /// 500 InternalError.
        InternalError = "internal-error",
        /// 403 AccessDenied.
        AccessDenied = "access-denied",
        /// The connection is reset (RST) after the request is read, before any response
        /// byte.
        ResetBeforeHeaders = "reset-before-headers",
        /// Headers and half the body, then the connection is reset.
        ResetMidBody = "reset-mid-body",
        /// Headers and half the body, then nothing for `stall_ms`.
        StallBody = "stall-body",
        /// The response starts `late_first_byte_ms` late (meant to exceed the client's
        /// first-byte timeout).
        LateFirstByte = "late-first-byte",
        /// The full `Content-Length` announced, half the body sent, then a clean close.
        TruncatedBody = "truncated-body",
    }
}

impl FaultKind {
    /// The connection-level fault this kind is, for the HTTP/TCP layer to carry out;
    /// `None` for the kinds answered as S3 errors or delays.
    pub fn connection_level(self) -> Option<ConnectionFault> {
        match self {
            FaultKind::SlowDown | FaultKind::InternalError | FaultKind::AccessDenied | FaultKind::LateFirstByte => None,
            FaultKind::ResetBeforeHeaders => Some(ConnectionFault::ResetBeforeHeaders),
            FaultKind::ResetMidBody => Some(ConnectionFault::ResetMidBody),
            FaultKind::StallBody => Some(ConnectionFault::StallBody),
            FaultKind::TruncatedBody => Some(ConnectionFault::TruncatedBody),
        }
    }

    /// The kind's slot in the counters (its place in declaration order).
    fn slot(self) -> usize {
        self as usize
    }
}

/// The kinds the HTTP/TCP layer ([`super::conn`]) carries out: [`FaultLayer`] marks the
/// response with one ([`InjectedFault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionFault {
    /// An RST before any byte of the response.
    ResetBeforeHeaders,
    /// Half the body, then an RST.
    ResetMidBody,
    /// Half the body, then nothing for [`FaultTiming::stall_ms`], then a close.
    StallBody,
    /// Half the body, then a clean close short of the `Content-Length`.
    TruncatedBody,
}

impl ConnectionFault {
    /// The fault kind, for names and the tally.
    pub fn kind(self) -> FaultKind {
        match self {
            ConnectionFault::ResetBeforeHeaders => FaultKind::ResetBeforeHeaders,
            ConnectionFault::ResetMidBody => FaultKind::ResetMidBody,
            ConnectionFault::StallBody => FaultKind::StallBody,
            ConnectionFault::TruncatedBody => FaultKind::TruncatedBody,
        }
    }
}

impl fmt::Display for ConnectionFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind().name())
    }
}

impl FromStr for FaultKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::from_name(s).ok_or_else(|| {
            let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown fault kind {s:?}: expected one of {}", names.join(", "))
        })
    }
}

/// One fault of a bucket's profile: its kind and the fraction of GETs it hits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// Probability per GetObject, 0.0..=1.0.
    pub rate: f64,
}

/// A bucket's fault, parsed from `BUCKET=KIND:RATE` (the `serve --fault` flag).
#[derive(Debug, Clone, PartialEq)]
pub struct BucketFault {
    pub bucket: String,
    pub spec: FaultSpec,
}

impl FromStr for BucketFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = "expected BUCKET=KIND:RATE, e.g. my-bucket=slow-down:0.1";
        let (bucket, rest) = s.split_once('=').ok_or_else(|| format!("{s:?}: no '=': {usage}"))?;
        let (kind, rate) = rest
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: no ':' before the rate: {usage}"))?;
        let mut problems = Vec::new();
        if let Err(e) = crate::plan::check_bucket_name(bucket) {
            problems.push(e.to_string());
        }
        let kind = kind.parse::<FaultKind>().map_err(|m| problems.push(m)).ok();
        let rate = match rate.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Some(r),
            Ok(r) => {
                problems.push(format!("rate {r} is not between 0 and 1"));
                None
            }
            Err(_) => {
                problems.push(format!("rate {rate:?} is not a number between 0 and 1"));
                None
            }
        };
        match (kind, rate) {
            (Some(kind), Some(rate)) if problems.is_empty() => Ok(BucketFault {
                bucket: bucket.to_string(),
                spec: FaultSpec { kind, rate },
            }),
            _ => Err(format!("{s:?}: {}", problems.join("; "))),
        }
    }
}

/// Why a fault profile was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    #[error("fault rate {rate} of {kind} on {bucket:?} is not between 0 and 1")]
    BadRate { bucket: String, kind: FaultKind, rate: f64 },
    #[error("the fault rates of bucket {bucket:?} add up to {sum}, more than 1")]
    RatesOverOne { bucket: String, sum: f64 },
    #[error("{kind} is listed twice for bucket {bucket:?}")]
    Duplicate { bucket: String, kind: FaultKind },
}

/// How long the timing faults last, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FaultTiming {
    /// How long a `stall-body` response sends nothing after half its body (default
    /// 60,000 ms); the connection is then closed.
    pub stall_ms: u64,
    /// How late a `late-first-byte` response starts (default 15,000 ms, above the
    /// sweep's default 10,000 ms first-byte timeout).
    pub late_first_byte_ms: u64,
}

impl Default for FaultTiming {
    fn default() -> Self {
        FaultTiming {
            stall_ms: 60_000,
            late_first_byte_ms: 15_000,
        }
    }
}

/// Faults injected so far, by kind, and GetObject requests seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FaultTally {
    /// GetObject requests the server received (faulted or not).
    pub get_requests: u64,
    /// Faults injected, by kind (serialized by its name); every kind is present.
    pub injected: BTreeMap<FaultKind, u64>,
    /// Sum of `injected`.
    pub injected_total: u64,
}

impl FaultTally {
    /// Faults of one kind.
    pub fn of(&self, kind: FaultKind) -> u64 {
        self.injected.get(&kind).copied().unwrap_or(0)
    }

    /// The change since an earlier tally.
    pub fn since(&self, earlier: &FaultTally) -> FaultTally {
        let injected: BTreeMap<FaultKind, u64> = self
            .injected
            .iter()
            .map(|(&k, v)| (k, v.saturating_sub(earlier.of(k))))
            .collect();
        FaultTally {
            get_requests: self.get_requests.saturating_sub(earlier.get_requests),
            injected_total: injected.values().sum(),
            injected,
        }
    }

    /// One line: `get_requests=N slow-down=N ...` (kinds with zero left out).
    pub fn line(&self) -> String {
        let mut s = format!(
            "get_requests={} injected_total={}",
            self.get_requests, self.injected_total
        );
        for (k, v) in &self.injected {
            if *v > 0 {
                s.push_str(&format!(" {k}={v}"));
            }
        }
        s
    }
}

struct BucketProfile {
    specs: Vec<FaultSpec>,
    rng: Mutex<StdRng>,
}

/// Fault profiles by bucket, their timing and the injected-fault counters. Shared by
/// the S3 wrapper and the HTTP layer.
pub struct Faults {
    seed: u64,
    timing: RwLock<FaultTiming>,
    by_bucket: RwLock<HashMap<String, Arc<BucketProfile>>>,
    /// Injected faults, one counter per kind ([`FaultKind::slot`]).
    counts: [AtomicU64; FaultKind::ALL.len()],
    get_requests: AtomicU64,
    /// Until when every GetObject waits before it is answered ([`Faults::pause_all`]).
    paused_until: RwLock<Option<std::time::Instant>>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("tally", &self.tally())
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// No faults anywhere; draws will be seeded with `seed` (mixed with the bucket name).
    pub fn new(seed: u64) -> Self {
        Faults {
            seed,
            timing: RwLock::new(FaultTiming::default()),
            by_bucket: RwLock::new(HashMap::new()),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            get_requests: AtomicU64::new(0),
            paused_until: RwLock::new(None),
        }
    }

    /// Stalls the whole server for `pause`, from now: every GetObject that arrives
    /// before its end (every bucket, every connection) waits until then before it is
    /// answered, as if the network or the server froze.
    pub fn pause_all(&self, pause: Duration) {
        *self.paused_until.write().unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now() + pause);
    }

    /// What is left of a pause, if one is on.
    fn pause_left(&self) -> Option<Duration> {
        let until = (*self.paused_until.read().unwrap_or_else(|e| e.into_inner()))?;
        until.checked_duration_since(std::time::Instant::now())
    }

    /// Sets (replaces) a bucket's fault profile; an empty list removes it. The bucket's
    /// generator restarts from its seed.
    pub fn set(&self, bucket: &str, specs: Vec<FaultSpec>) -> Result<(), FaultError> {
        let mut sum = 0.0;
        for (i, s) in specs.iter().enumerate() {
            if !(0.0..=1.0).contains(&s.rate) {
                return Err(FaultError::BadRate {
                    bucket: bucket.into(),
                    kind: s.kind,
                    rate: s.rate,
                });
            }
            if specs[..i].iter().any(|o| o.kind == s.kind) {
                return Err(FaultError::Duplicate {
                    bucket: bucket.into(),
                    kind: s.kind,
                });
            }
            sum += s.rate;
        }
        if sum > 1.0 + 1e-9 {
            return Err(FaultError::RatesOverOne {
                bucket: bucket.into(),
                sum,
            });
        }
        let mut map = self.by_bucket.write().unwrap_or_else(|e| e.into_inner());
        if specs.is_empty() {
            map.remove(bucket);
        } else {
            let seed = self.seed ^ super::latency::fnv(bucket.as_bytes()) ^ 0x5eed_fa17;
            map.insert(
                bucket.to_string(),
                Arc::new(BucketProfile {
                    specs,
                    rng: Mutex::new(StdRng::seed_from_u64(seed)),
                }),
            );
        }
        Ok(())
    }

    /// Sets several buckets' profiles from `BUCKET=KIND:RATE` entries (grouped by bucket).
    pub fn set_all(&self, faults: &[BucketFault]) -> Result<(), FaultError> {
        let mut grouped: BTreeMap<&str, Vec<FaultSpec>> = BTreeMap::new();
        for f in faults {
            grouped.entry(&f.bucket).or_default().push(f.spec);
        }
        for (bucket, specs) in grouped {
            self.set(bucket, specs)?;
        }
        Ok(())
    }

    /// The timing of the timing faults.
    pub fn timing(&self) -> FaultTiming {
        *self.timing.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the timing of the timing faults.
    pub fn set_timing(&self, timing: FaultTiming) {
        *self.timing.write().unwrap_or_else(|e| e.into_inner()) = timing;
    }

    /// Draws the fault (if any) for the next GetObject on `bucket`, and counts it.
    pub fn draw(&self, bucket: &str) -> Option<FaultKind> {
        self.get_requests.fetch_add(1, Ordering::Relaxed);
        let profile = self
            .by_bucket
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(bucket)
            .cloned()?;
        let u: f64 = profile.rng.lock().unwrap_or_else(|e| e.into_inner()).random();
        let mut acc = 0.0;
        for s in &profile.specs {
            acc += s.rate;
            if u < acc {
                self.counts[s.kind.slot()].fetch_add(1, Ordering::Relaxed);
                return Some(s.kind);
            }
        }
        None
    }

    /// What has been injected so far.
    pub fn tally(&self) -> FaultTally {
        let injected: BTreeMap<FaultKind, u64> = FaultKind::ALL
            .iter()
            .map(|&k| (k, self.counts[k.slot()].load(Ordering::Relaxed)))
            .collect();
        FaultTally {
            get_requests: self.get_requests.load(Ordering::Relaxed),
            injected_total: injected.values().sum(),
            injected,
        }
    }
}

/// Marks a response for the HTTP layer to damage (connection-level kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InjectedFault(pub ConnectionFault);

/// Injects each bucket's faults into GetObject in front of a store.
#[derive(Debug, Clone)]
pub(crate) struct FaultLayer {
    faults: Arc<Faults>,
}

/// A store with faults in front of its GETs.
pub(crate) type WithFaults<S> = Layered<S, FaultLayer>;

impl<S> Layered<S, FaultLayer> {
    pub(crate) fn new(inner: S, faults: Arc<Faults>) -> Self {
        Layered {
            inner,
            layer: FaultLayer { faults },
        }
    }
}

#[async_trait::async_trait]
impl ReadLayer for FaultLayer {
    async fn get_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        if let Some(wait) = self.faults.pause_left() {
            tokio::time::sleep(wait).await;
        }
        let Some(kind) = self.faults.draw(&req.input.bucket) else {
            return inner.get_object(req).await;
        };
        match kind {
            FaultKind::SlowDown => Err(s3_error!(SlowDown, "injected fault: slow-down")),
            FaultKind::InternalError => Err(s3_error!(InternalError, "injected fault: internal-error")),
            FaultKind::AccessDenied => Err(s3_error!(AccessDenied, "injected fault: access-denied")),
            FaultKind::LateFirstByte => {
                let ms = self.faults.timing().late_first_byte_ms;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                inner.get_object(req).await
            }
            // Carried out by the HTTP layer, which finds the mark on the response.
            FaultKind::ResetBeforeHeaders
            | FaultKind::ResetMidBody
            | FaultKind::StallBody
            | FaultKind::TruncatedBody => {
                let mut resp = inner.get_object(req).await?;
                if let Some(fault) = kind.connection_level() {
                    resp.extensions.insert(InjectedFault(fault));
                }
                Ok(resp)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_list_the_choices() {
        for (i, &k) in FaultKind::ALL.iter().enumerate() {
            assert_eq!(k.name().parse::<FaultKind>().unwrap(), k);
            assert_eq!(k.slot(), i, "counter slots follow the declaration order");
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                k.name(),
                "the flag's name is the serde name"
            );
            if let Some(c) = k.connection_level() {
                assert_eq!(c.kind(), k);
            }
        }
        let err = "explode".parse::<FaultKind>().unwrap_err();
        assert!(err.contains("slow-down") && err.contains("truncated-body"), "{err}");
    }

    #[test]
    fn bucket_fault_flags() {
        let f: BucketFault = "my-bucket=stall-body:0.25".parse().unwrap();
        assert_eq!(f.bucket, "my-bucket");
        assert_eq!(f.spec.kind, FaultKind::StallBody);
        assert_eq!(f.spec.rate, 0.25);
        let err = "Bad_Bucket=explode:1.5".parse::<BucketFault>().unwrap_err();
        assert!(
            err.contains("Bad_Bucket") && err.contains("explode") && err.contains("1.5"),
            "{err}"
        );
        assert!("b-1=slow-down".parse::<BucketFault>().unwrap_err().contains("':'"));
        assert!("slow-down:0.1".parse::<BucketFault>().unwrap_err().contains("'='"));
        assert!("b-1=slow-down:x"
            .parse::<BucketFault>()
            .unwrap_err()
            .contains("not a number"));
    }

    #[test]
    fn rates_are_checked() {
        let f = Faults::new(1);
        let spec = |kind, rate| FaultSpec { kind, rate };
        assert!(matches!(
            f.set(
                "b-1",
                vec![spec(FaultKind::SlowDown, 0.7), spec(FaultKind::StallBody, 0.4)]
            ),
            Err(FaultError::RatesOverOne { .. })
        ));
        assert!(matches!(
            f.set(
                "b-1",
                vec![spec(FaultKind::SlowDown, 0.1), spec(FaultKind::SlowDown, 0.1)]
            ),
            Err(FaultError::Duplicate { .. })
        ));
        assert!(matches!(
            f.set("b-1", vec![spec(FaultKind::SlowDown, -0.1)]),
            Err(FaultError::BadRate { .. })
        ));
    }

    #[test]
    fn draws_are_seeded_counted_and_near_the_rate() {
        let run = || {
            let f = Faults::new(9);
            f.set(
                "b-1",
                vec![
                    FaultSpec {
                        kind: FaultKind::SlowDown,
                        rate: 0.1,
                    },
                    FaultSpec {
                        kind: FaultKind::TruncatedBody,
                        rate: 0.2,
                    },
                ],
            )
            .unwrap();
            let draws: Vec<Option<FaultKind>> = (0..10_000).map(|_| f.draw("b-1")).collect();
            for _ in 0..5 {
                assert_eq!(f.draw("other"), None);
            }
            (draws, f.tally())
        };
        let (a, tally) = run();
        let (b, _) = run();
        assert_eq!(a, b, "same seed, same draws");
        let slow = a.iter().filter(|d| **d == Some(FaultKind::SlowDown)).count() as u64;
        assert_eq!(tally.of(FaultKind::SlowDown), slow);
        assert_eq!(tally.get_requests, 10_005);
        assert!((800..1200).contains(&slow), "{slow}");
        let trunc = tally.of(FaultKind::TruncatedBody);
        assert!((1700..2300).contains(&trunc), "{trunc}");
        assert_eq!(tally.injected_total, slow + trunc);
        assert!(tally.line().contains("slow-down="), "{}", tally.line());
    }
}

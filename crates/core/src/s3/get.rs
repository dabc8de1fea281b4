//! The measured GET: one request, its response headers timed, the body drained to the
//! end and counted, never kept, all within one time limit. A failure is an [`Outcome`]
//! with its kind, never an error of the caller's.
//!
//! Each GET carries its own [`RequestProbe`], which the transport fills attempt by
//! attempt (connections opened, `CreateSession` calls, client preparation, the wait
//! for a connection inside the HTTP client, first byte at the wire) and
//! [`AttemptClock`] marks the start of every retry, so the backoff is apart.
//!
//! A GET can be watched while in flight ([`Progress`]: has its first byte come, how
//! many body bytes so far), which is what a hedge ([`crate::engine`]) decides by and
//! what a cancelled copy is counted by.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use crate::model::{Client, ErrorKind};
use crate::transport::{current_probe, ColdWork, RequestProbe, REQUEST_PROBE};

use super::errors::{classify_body_error, classify_sdk_error, Failure};
use super::lean::LeanClient;

/// What one GET came to.
pub struct Outcome {
    /// Waiting for a free slot of the sweep's pool before the request was sent.
    pub pool_wait: Duration,
    /// First byte at the wire: the last attempt's connection in hand to its response
    /// headers.
    pub ttfb: Duration,
    /// The call to the response headers (client work, waits and retries included).
    pub headers_at: Duration,
    /// The call to the last body byte (the whole GET as the caller sees it).
    pub ttlb: Duration,
    /// Body bytes, or the failure: its kind, S3's code and a one-line message.
    pub result: Result<u64, Failure>,
    /// What the transport did for this GET and where its time went, attempt by attempt.
    pub cold: ColdWork,
}

/// The client a sweep's GETs go through ([`crate::model::Client`]): the SDK's reading
/// client, or the lean client on the same transport. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Reader {
    Sdk(aws_sdk_s3::Client),
    Lean(LeanClient),
}

/// What a GET in flight has received so far.
#[derive(Debug, Default)]
pub struct Progress {
    first_byte: AtomicBool,
    body_bytes: AtomicU64,
}

impl Progress {
    /// Whether the response headers (the first byte) have come.
    pub fn has_first_byte(&self) -> bool {
        self.first_byte.load(Ordering::Relaxed)
    }

    /// Body bytes received so far.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes.load(Ordering::Relaxed)
    }

    fn headers(&self) {
        self.first_byte.store(true, Ordering::Relaxed);
    }

    fn body(&self, n: usize) {
        self.body_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl Reader {
    /// One measured GET with this client ([`get_one`], [`get_one_lean`]).
    pub async fn get_one(&self, bucket: &str, key: &str, limit: Duration) -> Outcome {
        self.get_watched(bucket, key, limit, &Progress::default()).await
    }

    /// [`Reader::get_one`], its progress kept in `progress` as it goes.
    pub async fn get_watched(&self, bucket: &str, key: &str, limit: Duration, progress: &Progress) -> Outcome {
        match self {
            Reader::Sdk(s3) => get_watched(s3, bucket, key, limit, progress).await,
            Reader::Lean(lean) => get_lean_watched(lean, bucket, key, limit, progress).await,
        }
    }

    /// Which client this is.
    pub fn client(&self) -> Client {
        match self {
            Reader::Sdk(_) => Client::Sdk,
            Reader::Lean(_) => Client::Lean,
        }
    }
}

/// One GET with the lean client, measured as [`get_one`] measures the SDK's.
pub async fn get_one_lean(lean: &LeanClient, bucket: &str, key: &str, limit: Duration) -> Outcome {
    get_lean_watched(lean, bucket, key, limit, &Progress::default()).await
}

async fn get_lean_watched(lean: &LeanClient, bucket: &str, key: &str, limit: Duration, progress: &Progress) -> Outcome {
    let probe = Arc::new(RequestProbe::default());
    let start = Instant::now();
    probe.begin();
    let headers_ns = AtomicU64::new(0);
    let sink = |data: &[u8]| progress.body(data.len());
    let work = Box::pin(REQUEST_PROBE.scope(
        probe.clone(),
        lean.get_timed_watched(bucket, key, &headers_ns, start, sink, || progress.headers()),
    ));
    let result = within(limit, work).await;
    let headers_at = Duration::from_nanos(headers_ns.load(Ordering::Relaxed));
    outcome(start, headers_at, &probe, result)
}

/// `work`, or a timeout failure when it does not end within `limit`.
async fn within(
    limit: Duration,
    work: impl std::future::Future<Output = Result<u64, Failure>>,
) -> Result<u64, Failure> {
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err(Failure::new(
            ErrorKind::Timeout,
            format!("request not finished within {} ms", limit.as_millis()),
        )),
    }
}

/// The outcome of a GET that began at `start`, from its probe.
fn outcome(start: Instant, headers_at: Duration, probe: &RequestProbe, result: Result<u64, Failure>) -> Outcome {
    let ttlb = start.elapsed();
    let cold = probe.take();
    Outcome {
        pool_wait: Duration::ZERO,
        // Without a stamp from the transport (never for s3sweep's own), the call to
        // the headers.
        ttfb: cold.wire_ttfb_ns.map_or(headers_at, Duration::from_nanos),
        headers_at,
        ttlb,
        result,
        cold,
    }
}

/// One GET: headers, then the body drained to the end, all within `limit`.
pub async fn get_one(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, limit: Duration) -> Outcome {
    get_watched(s3, bucket, key, limit, &Progress::default()).await
}

async fn get_watched(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    limit: Duration,
    progress: &Progress,
) -> Outcome {
    let probe = Arc::new(RequestProbe::default());
    let start = Instant::now();
    probe.begin();
    let mut headers_at = Duration::ZERO;
    // Boxed: the SDK's future is several KB, and every move of an unboxed one (into the
    // timeout, into the caller's state) is a copy of all of it.
    let work = Box::pin(REQUEST_PROBE.scope(probe.clone(), async {
        let output = s3
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| classify_sdk_error(&e))?;
        headers_at = start.elapsed();
        progress.headers();
        let expected = output.content_length();
        let mut body = output.body;
        let mut received: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| classify_body_error(&e))?;
            received += chunk.len() as u64;
            progress.body(chunk.len());
        }
        if let Some(expected) = expected {
            if expected >= 0 && received != expected as u64 {
                return Err(Failure::new(
                    ErrorKind::Connection,
                    format!("body ended after {received} of {expected} bytes"),
                ));
            }
        }
        Ok(received)
    }));
    let result = within(limit, work).await;
    outcome(start, headers_at, &probe, result)
}

/// Marks the start of each attempt of a measured GET in its probe, so the retry
/// strategy's backoff sleep is told apart from preparing the retry.
#[derive(Debug, Default)]
pub(crate) struct AttemptClock;

impl Intercept for AttemptClock {
    fn name(&self) -> &'static str {
        "AttemptClock"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(probe) = current_probe() {
            probe.attempt_started();
        }
        Ok(())
    }
}

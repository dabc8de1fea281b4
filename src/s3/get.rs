//! The measured GET: one request, its response headers timed (time to first byte),
//! the body drained to the end and counted, never kept, all within one time limit. A
//! failure is an [`Outcome`] with its kind, never an error of the caller's.

use std::time::{Duration, Instant};

use crate::model::ErrorKind;

use super::errors::{classify_body_error, classify_sdk_error, Failure};

/// What one GET came to.
pub struct Outcome {
    /// Waiting for a free slot of the sweep's pool before the request was sent.
    pub pool_wait: Duration,
    /// The call to the response headers.
    pub ttfb: Duration,
    /// The call to the last body byte.
    pub ttlb: Duration,
    /// Body bytes, or the failure: its kind, S3's code and a one-line message.
    pub result: Result<u64, Failure>,
}

/// One GET: headers, then the body drained to the end, all within `limit`.
pub async fn get_one(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, limit: Duration) -> Outcome {
    let start = Instant::now();
    let mut ttfb = Duration::ZERO;
    // Boxed: the SDK's future is several KB, and every move of an unboxed one (into the
    // timeout, into the caller's state) is a copy of all of it.
    let work = Box::pin(async {
        let output = s3
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| classify_sdk_error(&e))?;
        ttfb = start.elapsed();
        let expected = output.content_length();
        let mut body = output.body;
        let mut received: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| classify_body_error(&e))?;
            received += chunk.len() as u64;
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
    });
    let result = match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err(Failure::new(
            ErrorKind::Timeout,
            format!("request not finished within {} ms", limit.as_millis()),
        )),
    };
    Outcome {
        pool_wait: Duration::ZERO,
        ttfb,
        ttlb: start.elapsed(),
        result,
    }
}

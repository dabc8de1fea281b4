//! The preflight: one read of the first object of every bucket before a sweep, so a
//! sweep that cannot work fails fast with a [`StartError`] that says how to fix it,
//! instead of counting the same failure a million times.

use std::time::Duration;

use crate::model::ErrorKind;
use crate::plan::Plan;
use crate::s3::get::get_one;
use crate::s3::SweepClient;

use super::{request_settings, transport_settings};

/// Why a sweep could not start: the first request to a bucket failed in a way that
/// every later request would too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("no AWS credentials were found: {detail}. Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or run where a role is attached")]
    NoCredentials { detail: String },
    #[error("bucket {bucket:?} does not exist (or is in another region): create it, or fix the name in the request")]
    BucketNotFound { bucket: String },
    #[error("access denied reading {bucket:?}/{key}: grant s3:GetObject on the bucket's objects (and s3express:CreateSession for a directory bucket)")]
    AccessDenied { bucket: String, key: String },
    #[error("object {bucket:?}/{key} does not exist: write the test objects first with `s3sweep seed --bucket {bucket}` (with the same key template and count)")]
    ObjectNotFound { bucket: String, key: String },
    #[error("cannot reach the S3 endpoint for {bucket:?}: {detail}")]
    Unreachable { bucket: String, detail: String },
    #[error("the TLS handshake for {bucket:?} failed, so the endpoint's certificate is not trusted: {detail}. Trust its CA with --ca-file FILE or AWS_CA_BUNDLE=FILE")]
    TlsHandshake { bucket: String, detail: String },
    #[error("the first request to {bucket:?} failed: {detail}")]
    Other { bucket: String, detail: String },
}

impl StartError {
    /// A stable name for the kind of failure (the Lambda's `errorType`).
    pub fn error_type(&self) -> &'static str {
        match self {
            StartError::NoCredentials { .. } => "NoCredentials",
            StartError::BucketNotFound { .. } => "BucketNotFound",
            StartError::AccessDenied { .. } => "AccessDenied",
            StartError::ObjectNotFound { .. } => "ObjectNotFound",
            StartError::Unreachable { .. } => "EndpointUnreachable",
            StartError::TlsHandshake { .. } => "TlsHandshakeFailed",
            StartError::Other { .. } => "StartFailed",
        }
    }
}

/// Tries the preflight gives a bucket whose first read fails in a way that may pass
/// (throttling, 5xx, a timeout, a dropped connection): one bad response on a bad day
/// must not abort a whole sweep.
pub const PREFLIGHT_TRIES: u32 = 3;

/// Reads the first object of every bucket once, so a sweep that cannot work fails
/// fast with a [`StartError`] that says how to fix it, instead of counting the same
/// failure a million times. Transient failures get [`PREFLIGHT_TRIES`] tries.
pub async fn preflight(client: &SweepClient, plan: &Plan) -> Result<(), StartError> {
    client.transport().configure(transport_settings(plan));
    let s3 = client.reader(request_settings(plan));
    for bucket in plan.buckets() {
        let key = plan.keys().key(plan.key_range().start);
        let limit = plan.attempt_timeout() * plan.max_attempts();
        let mut outcome = get_one(&s3, bucket, &key, limit).await;
        for _ in 1..PREFLIGHT_TRIES {
            match &outcome.result {
                Err((kind, _)) if kind.is_transient() => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    outcome = get_one(&s3, bucket, &key, limit).await;
                }
                _ => break,
            }
        }
        if let Err((kind, detail)) = outcome.result {
            let bucket = bucket.clone();
            let lower = detail.to_ascii_lowercase();
            return Err(match kind {
                _ if lower.contains("credentials")
                    && (lower.contains("no credentials") || lower.contains("failed to load")) =>
                {
                    StartError::NoCredentials { detail }
                }
                ErrorKind::NotFound if lower.contains("nosuchbucket") || lower.contains("no such bucket") => {
                    StartError::BucketNotFound { bucket }
                }
                ErrorKind::NotFound => StartError::ObjectNotFound { bucket, key },
                ErrorKind::AccessDenied => StartError::AccessDenied { bucket, key },
                ErrorKind::Connection if detail.contains("TLS handshake with") => {
                    StartError::TlsHandshake { bucket, detail }
                }
                ErrorKind::Connection | ErrorKind::Timeout => StartError::Unreachable { bucket, detail },
                _ => StartError::Other { bucket, detail },
            });
        }
    }
    Ok(())
}

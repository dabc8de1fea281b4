//! The HeadBucket look every preflight check starts from (src/cli/preflight.rs for the
//! sweep's buckets, src/cli/preflight_results.rs for the results bucket): the bucket's
//! region, from the answer or a redirect's `x-amz-bucket-region`, or why it cannot be
//! looked at.

use aws_sdk_s3::error::SdkError;

/// What HeadBucket found.
pub(super) enum BucketState {
    In(String),
    Missing,
    Refused,
    Failed(String),
}

/// HeadBucket: the bucket's region (on success, or from a redirect's
/// `x-amz-bucket-region`), or why it cannot be looked at.
pub(super) async fn head_bucket(s3: &aws_sdk_s3::Client, bucket: &str, region: &str) -> BucketState {
    match s3.head_bucket().bucket(bucket).send().await {
        Ok(out) => BucketState::In(out.bucket_region().unwrap_or(region).to_string()),
        Err(SdkError::ServiceError(e)) => {
            let raw = e.raw();
            if let Some(found) = raw.headers().get("x-amz-bucket-region").filter(|r| *r != region) {
                return BucketState::In(found.to_string());
            }
            match raw.status().as_u16() {
                404 => BucketState::Missing,
                403 => BucketState::Refused,
                status => BucketState::Failed(format!("HeadBucket answered HTTP {status}")),
            }
        }
        Err(e) => BucketState::Failed(crate::s3::errors::chain(&e)),
    }
}

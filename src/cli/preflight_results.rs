//! `s3sweep preflight --results-uri s3://BUCKET/PREFIX`: the results destination looked
//! at before a deploy, so no result is lost without a word: the bucket exists
//! (HeadBucket), is in the stack's region (a bucket elsewhere answers the function's
//! PutObject with a 301 redirect, and every result would be lost), and one test write
//! under the prefix succeeds. The test object has a key of its own
//! (`PREFIX/s3sweep-preflight-MS-PID.json`), is written only if nothing is there
//! (`If-None-Match: *`) and removed by a conditional delete (`If-Match` on the ETag the
//! write returned), so nothing of the user's is replaced or deleted.

use aws_sdk_s3::primitives::ByteStream;

use super::preflight_bucket::{head_bucket, BucketState};
use crate::plan::ResultsUri;

/// The key of this preflight's test object under `prefix`.
fn test_key(prefix: &str) -> String {
    let ms = crate::sys::now_unix_ms();
    let name = format!("s3sweep-preflight-{ms}-{}.json", std::process::id());
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    }
}

/// A problem with the results destination, with its fix.
#[derive(Debug, thiserror::Error)]
pub(super) enum ResultsProblem {
    #[error("--results-uri {uri}: {reason}")]
    BadUri {
        uri: String,
        reason: crate::plan::DestinationError,
    },
    #[error(
        "results bucket {bucket} is in {found}, not the stack's region {region}: S3 answers the function's writes with a 301 redirect and every result is lost; use a results bucket in {region} (make deploy RESULTS_BUCKET=...), or deploy the stack in {found}"
    )]
    OtherRegion {
        bucket: String,
        found: String,
        region: String,
    },
    #[error(
        "results bucket {bucket} does not exist (HeadBucket: 404): every result would be lost; create it in {region}, or fix RESULTS_BUCKET"
    )]
    Missing { bucket: String, region: String },
    #[error(
        "results bucket {bucket}: HeadBucket refused (403): it belongs to another account, or these credentials may not read it"
    )]
    Refused { bucket: String },
    #[error("results bucket {bucket}: could not be looked at: {why}")]
    Unreachable { bucket: String, why: String },
    /// `why`: the SDK error's chain.
    #[error(
        "results bucket {bucket}: a test write to {uri} failed ({why}): the function's result writes would fail the same way (a bucket encrypted with a KMS key also needs kms:GenerateDataKey for the function's role, docs/deploy.md)"
    )]
    WriteFailed { bucket: String, uri: String, why: String },
    #[error(
        "results bucket {bucket}: the test object {uri} was written but not removed ({why}): delete it by hand (aws s3 rm {uri})"
    )]
    NotRemoved { bucket: String, uri: String, why: String },
}

/// The test write and its conditional delete: `Ok(key)` when both worked.
async fn test_write(s3: &aws_sdk_s3::Client, dest: &ResultsUri) -> Result<String, ResultsProblem> {
    let key = test_key(&dest.prefix);
    let uri = format!("s3://{}/{key}", dest.bucket);
    let body = br#"{"s3sweep":"preflight test write, removed at once"}"#.to_vec();
    let put = s3
        .put_object()
        .bucket(&dest.bucket)
        .key(&key)
        .if_none_match("*")
        .content_type("application/json")
        .body(ByteStream::from(body))
        .send()
        .await
        .map_err(|e| ResultsProblem::WriteFailed {
            bucket: dest.bucket.clone(),
            uri: uri.clone(),
            why: crate::s3::errors::chain(&e),
        })?;
    let mut delete = s3.delete_object().bucket(&dest.bucket).key(&key);
    if let Some(etag) = put.e_tag() {
        delete = delete.if_match(etag);
    }
    delete.send().await.map_err(|e| ResultsProblem::NotRemoved {
        bucket: dest.bucket.clone(),
        uri: uri.clone(),
        why: crate::s3::errors::chain(&e),
    })?;
    Ok(key)
}

/// The results destination's line: `Ok` (what was checked) or the problem with its fix.
pub(super) async fn results_line(s3: &aws_sdk_s3::Client, uri: &str, region: &str) -> Result<String, ResultsProblem> {
    let dest = ResultsUri::parse(uri).map_err(|reason| ResultsProblem::BadUri {
        uri: uri.to_string(),
        reason,
    })?;
    let bucket = dest.bucket.clone();
    match head_bucket(s3, &bucket, region).await {
        BucketState::In(found) if found != region => Err(ResultsProblem::OtherRegion {
            bucket,
            found,
            region: region.to_string(),
        }),
        BucketState::In(_) => {
            let key = test_write(s3, &dest).await?;
            Ok(format!(
                "results bucket {bucket} is in {region}; a test write to s3://{bucket}/{key} succeeded and was removed"
            ))
        }
        BucketState::Missing => Err(ResultsProblem::Missing {
            bucket,
            region: region.to_string(),
        }),
        BucketState::Refused => Err(ResultsProblem::Refused { bucket }),
        BucketState::Failed(why) => Err(ResultsProblem::Unreachable { bucket, why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_key_is_under_the_prefix_and_its_own() {
        let key = test_key("runs/canary");
        assert!(key.starts_with("runs/canary/s3sweep-preflight-"), "{key}");
        assert!(key.ends_with(&format!("-{}.json", std::process::id())), "{key}");
        assert!(test_key("").starts_with("s3sweep-preflight-"));
    }
}

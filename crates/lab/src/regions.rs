//! Buckets the lab places in a region other than its own (`serve --bucket-region
//! NAME=REGION`), so a preflight can meet a bucket in the wrong region: HeadBucket
//! answers with the bucket's region in `x-amz-bucket-region`, and a HeadBucket signed
//! for another region is answered as S3 answers it, 301 `PermanentRedirect` carrying
//! that header. Every other bucket is in [`LAB_REGION`]; other operations ignore the
//! region.

use std::collections::BTreeMap;
use std::sync::RwLock;

use s3s::{S3Error, S3ErrorCode};

/// The lab's own region: every bucket not placed elsewhere is in it.
pub const LAB_REGION: &str = "us-east-1";

/// The header S3 names a bucket's region in (HeadBucket, redirects).
pub(crate) const BUCKET_REGION_HEADER: &str = "x-amz-bucket-region";

/// The region of each bucket placed outside [`LAB_REGION`].
#[derive(Debug, Default)]
pub struct BucketRegions {
    placed: RwLock<BTreeMap<String, String>>,
}

impl BucketRegions {
    /// Places `bucket` in `region`.
    pub fn set(&self, bucket: &str, region: &str) {
        self.placed
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(bucket.to_string(), region.to_string());
    }

    /// The region of `bucket`.
    pub fn region_of(&self, bucket: &str) -> String {
        let placed = self.placed.read().unwrap_or_else(|e| e.into_inner());
        placed.get(bucket).cloned().unwrap_or_else(|| LAB_REGION.to_string())
    }

    /// The region of `bucket` for a request signed for `signed` (none: unsigned), or the
    /// 301 `PermanentRedirect` S3 answers when they differ.
    pub fn check(&self, bucket: &str, signed: Option<&str>) -> Result<String, S3Error> {
        let region = self.region_of(bucket);
        match signed {
            Some(signed) if signed != region => Err(redirect(bucket, &region)),
            _ => Ok(region),
        }
    }
}

/// `serve --bucket-region NAME=REGION`: a bucket placed in another region.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketRegion {
    pub bucket: String,
    pub region: String,
}

impl std::str::FromStr for BucketRegion {
    type Err = String;
    /// `NAME=REGION`, REGION a region name (`eu-west-1`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((bucket, region)) = s.split_once('=') else {
            return Err(format!("{s:?}: expected NAME=REGION"));
        };
        let region_ok = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if bucket.is_empty() || !region_ok {
            return Err(format!("{s:?}: expected NAME=REGION, REGION like eu-west-1"));
        }
        Ok(BucketRegion {
            bucket: bucket.to_string(),
            region: region.to_string(),
        })
    }
}

fn redirect(bucket: &str, region: &str) -> S3Error {
    let mut err = S3Error::with_message(
        S3ErrorCode::PermanentRedirect,
        format!("The bucket {bucket} is in {region}: send requests to that region's endpoint."),
    );
    err.set_status_code(http::StatusCode::MOVED_PERMANENTLY);
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(region) {
        headers.insert(BUCKET_REGION_HEADER, value);
    }
    err.set_headers(headers);
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_bucket_redirects_requests_signed_for_another_region() {
        let regions = BucketRegions::default();
        regions.set("far-1", "eu-west-1");
        assert_eq!(regions.check("near-1", Some("us-east-1")).unwrap(), LAB_REGION);
        assert_eq!(regions.check("far-1", Some("eu-west-1")).unwrap(), "eu-west-1");
        let err = regions.check("far-1", Some("us-east-1")).unwrap_err();
        assert_eq!(err.code(), &S3ErrorCode::PermanentRedirect);
        assert_eq!(err.status_code(), Some(http::StatusCode::MOVED_PERMANENTLY));
        assert_eq!(
            err.headers().and_then(|h| h.get(BUCKET_REGION_HEADER)).unwrap(),
            "eu-west-1"
        );
        let placed: BucketRegion = "far-1=eu-west-1".parse().unwrap();
        assert_eq!((placed.bucket.as_str(), placed.region.as_str()), ("far-1", "eu-west-1"));
        assert!("far-1".parse::<BucketRegion>().is_err());
        assert!("far-1=EU West".parse::<BucketRegion>().is_err());
    }
}

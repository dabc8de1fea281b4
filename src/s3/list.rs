//! The listing of a sweep's `key_prefix`: the first N keys under a prefix with their
//! sizes, by ListObjectsV2 pages (continuation tokens followed), in the order the
//! service returns them (byte order for general purpose buckets; whatever order a
//! directory bucket gives). Untimed by the sweep; its own time and requests are kept.

use std::sync::Arc;
use std::time::Instant;

use crate::model::stats::round3;
use crate::plan::{BucketListing, ListedObject};

use super::errors::{classify, Action, BucketError};

/// The listing could not give the sweep its keys.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// ListObjectsV2 failed (permission, missing bucket, network).
    #[error("{0}")]
    Bucket(BucketError),
    /// The prefix holds no key at all.
    #[error("bucket {bucket:?} holds no keys under the prefix {prefix:?}: check the prefix (it matches keys from their first character: `images/`, not `/images/`) and the bucket")]
    NoKeys { bucket: String, prefix: String },
    /// The prefix holds fewer keys than the sweep asks for.
    #[error("bucket {bucket:?} holds {found} keys under the prefix {prefix:?}, fewer than object_count ({asked}): lower object_count to {found}, or set allow_fewer_keys (--allow-fewer) to sweep the {found} keys found")]
    TooFew {
        bucket: String,
        prefix: String,
        found: u32,
        asked: u32,
    },
}

impl ListingError {
    /// The kind, for logs and the Lambda's error type.
    pub fn error_type(&self) -> &'static str {
        match self {
            ListingError::Bucket(e) => e.error_type(),
            ListingError::TooFew { .. } | ListingError::NoKeys { .. } => "TooFewKeys",
        }
    }
}

/// Lists up to `want` keys under `prefix` in `bucket`, page by page (a page holds at
/// most 1,000; the last asks only for what is still wanted). Fewer than `want` is an
/// error unless `allow_fewer`.
pub async fn list_prefix(
    s3: &aws_sdk_s3::Client,
    (bucket, prefix): (&str, &str),
    want: u32,
    allow_fewer: bool,
    endpoint: &str,
) -> Result<BucketListing, ListingError> {
    list_prefix_after(s3, (bucket, prefix, None), want, allow_fewer, endpoint).await
}

/// [`list_prefix`] from the first key after `start_after` (ListObjectsV2 `start-after`,
/// general purpose buckets): one part of a listing someone else made whole, e.g. a
/// fan-out child's share of its coordinator's listing.
pub async fn list_prefix_after(
    s3: &aws_sdk_s3::Client,
    (bucket, prefix, start_after): (&str, &str, Option<&str>),
    want: u32,
    allow_fewer: bool,
    endpoint: &str,
) -> Result<BucketListing, ListingError> {
    let start = Instant::now();
    let mut objects: Vec<ListedObject> = Vec::with_capacity(want as usize);
    let mut token: Option<String> = None;
    let mut requests = 0u32;
    while objects.len() < want as usize {
        let left = (want as usize - objects.len()).min(1000) as i32;
        let page = s3
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .max_keys(left)
            .set_start_after(start_after.map(str::to_string))
            .set_continuation_token(token.take())
            .send()
            .await;
        requests += 1;
        let page = page.map_err(|e| {
            ListingError::Bucket(BucketError::from_failure(
                &classify(&e),
                Action::List,
                bucket,
                prefix,
                endpoint,
            ))
        })?;
        for o in page.contents() {
            if objects.len() < want as usize {
                let key = o.key().unwrap_or_default().to_string();
                let size_bytes = o.size().unwrap_or(0).max(0) as u64;
                objects.push(ListedObject { key, size_bytes });
            }
        }
        token = page.next_continuation_token().map(str::to_string);
        if !page.is_truncated().unwrap_or(false) || token.is_none() {
            break;
        }
    }
    let found = objects.len() as u32;
    if found == 0 {
        return Err(ListingError::NoKeys {
            bucket: bucket.into(),
            prefix: prefix.into(),
        });
    }
    if found < want && !allow_fewer {
        return Err(ListingError::TooFew {
            bucket: bucket.into(),
            prefix: prefix.into(),
            found,
            asked: want,
        });
    }
    Ok(BucketListing {
        bucket: bucket.into(),
        objects: Arc::new(objects),
        requests,
        wall_ms: round3(start.elapsed().as_secs_f64() * 1000.0),
    })
}

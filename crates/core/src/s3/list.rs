//! The listing of a sweep's `key_prefix`: the first N keys under a prefix with their
//! sizes, by ListObjectsV2 pages (continuation tokens followed), in the order the
//! service returns them (byte order for general purpose buckets; whatever order a
//! directory bucket gives). Untimed by the sweep; its own time and requests are kept.
//! A listing can be given a stop time (a Lambda invocation's listing budget): no page
//! is asked for after it and a page still coming at it is abandoned, so a huge prefix
//! or a slow service cannot eat the invocation's deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Error;

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
    /// The listing's stop time came before it found `asked` keys (and the request does
    /// not allow fewer, or it found none).
    #[error("the listing of {prefix:?} in bucket {bucket:?} ran out of its time ({budget_ms} ms: at most half the time left before the invocation's deadline less its safety margin, so the sweep keeps the rest) with {found} of the {asked} keys found, in {requests} ListObjectsV2 request(s): give the function a longer timeout, lower object_count, or set allow_fewer_keys to sweep the keys found in time")]
    OutOfTime {
        bucket: String,
        prefix: String,
        found: u32,
        asked: u32,
        requests: u32,
        budget_ms: u64,
    },
}

impl ListingError {
    /// The kind, for logs and the Lambda's error type.
    pub fn error_type(&self) -> &'static str {
        match self {
            ListingError::Bucket(e) => e.error_type(),
            ListingError::TooFew { .. } | ListingError::NoKeys { .. } => "TooFewKeys",
            ListingError::OutOfTime { .. } => "DeadlineReached",
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
    let limits = ListLimits {
        want,
        allow_fewer,
        stop_at: None,
    };
    list_prefix_after(s3, (bucket, prefix, None), limits, endpoint).await
}

/// How much a listing may find and for how long.
#[derive(Debug, Clone, Copy)]
pub struct ListLimits {
    /// Keys wanted.
    pub want: u32,
    /// Fewer keys than `want` (none excepted) is a listing, not an error.
    pub allow_fewer: bool,
    /// No page is asked for after it, and a page still coming at it is abandoned;
    /// `None`: no limit.
    pub stop_at: Option<Instant>,
}

/// [`list_prefix`] from the first key after `start_after` (ListObjectsV2 `start-after`,
/// general purpose buckets): one part of a listing someone else made whole, e.g. a
/// fan-out child's share of its coordinator's listing. With `limits.stop_at`, no page
/// is asked for after it and a page still coming then is abandoned: the keys found by
/// then, or [`ListingError::OutOfTime`] unless `allow_fewer` (and some were found).
pub async fn list_prefix_after(
    s3: &aws_sdk_s3::Client,
    (bucket, prefix, start_after): (&str, &str, Option<&str>),
    limits: ListLimits,
    endpoint: &str,
) -> Result<BucketListing, ListingError> {
    let start = Instant::now();
    let pages = list_pages(s3, (bucket, prefix, start_after), limits)
        .await
        .map_err(|e| {
            ListingError::Bucket(BucketError::from_failure(
                &classify(&e),
                Action::List,
                bucket,
                prefix,
                endpoint,
            ))
        })?;
    check_found(&pages, (bucket, prefix), limits, start)?;
    Ok(BucketListing {
        bucket: bucket.into(),
        objects: Arc::new(pages.objects),
        requests: pages.requests,
        wall_ms: round3(start.elapsed().as_secs_f64() * 1000.0),
        out_of_time: pages.out_of_time,
    })
}

/// What the pages gave.
struct Pages {
    objects: Vec<ListedObject>,
    requests: u32,
    /// The stop time came before `want` keys or the end of the listing.
    out_of_time: bool,
}

/// Asks for pages until `want` keys, the end of the listing, or the stop time.
async fn list_pages(
    s3: &aws_sdk_s3::Client,
    (bucket, prefix, start_after): (&str, &str, Option<&str>),
    ListLimits { want, stop_at, .. }: ListLimits,
) -> Result<Pages, aws_sdk_s3::error::SdkError<ListObjectsV2Error>> {
    let mut pages = Pages {
        objects: Vec::with_capacity(want as usize),
        requests: 0,
        out_of_time: false,
    };
    let mut token: Option<String> = None;
    while pages.objects.len() < want as usize {
        if stop_at.is_some_and(|s| Instant::now() >= s) {
            pages.out_of_time = true;
            break;
        }
        let left = (want as usize - pages.objects.len()).min(1000) as i32;
        let send = s3
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .max_keys(left)
            .set_start_after(start_after.map(str::to_string))
            .set_continuation_token(token.take())
            .send();
        pages.requests += 1;
        let page = match stop_at {
            Some(s) => match tokio::time::timeout_at(s.into(), send).await {
                Ok(page) => page?,
                Err(_) => {
                    pages.out_of_time = true;
                    break;
                }
            },
            None => send.await?,
        };
        for o in page.contents().iter().take(want as usize - pages.objects.len()) {
            let key = o.key().unwrap_or_default().to_string();
            let size_bytes = o.size().unwrap_or(0).max(0) as u64;
            pages.objects.push(ListedObject { key, size_bytes });
        }
        token = page.next_continuation_token().map(str::to_string);
        if !page.is_truncated().unwrap_or(false) || token.is_none() {
            break;
        }
    }
    Ok(pages)
}

/// The rules on what was found, in order: out of time (unless fewer are allowed and
/// some were found), none at all, fewer than wanted (unless allowed).
fn check_found(
    pages: &Pages,
    (bucket, prefix): (&str, &str),
    ListLimits {
        want,
        allow_fewer,
        stop_at,
    }: ListLimits,
    start: Instant,
) -> Result<(), ListingError> {
    let found = pages.objects.len() as u32;
    if pages.out_of_time && (found == 0 || !allow_fewer) {
        return Err(ListingError::OutOfTime {
            bucket: bucket.into(),
            prefix: prefix.into(),
            found,
            asked: want,
            requests: pages.requests,
            budget_ms: budget_ms(start, stop_at),
        });
    }
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
    Ok(())
}

/// The time the listing had: from its start to its stop time.
fn budget_ms(start: Instant, stop_at: Option<Instant>) -> u64 {
    stop_at
        .map_or(Duration::ZERO, |s| s.saturating_duration_since(start))
        .as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(found: usize, out_of_time: bool) -> Pages {
        Pages {
            objects: (0..found)
                .map(|i| ListedObject {
                    key: format!("p/{i}"),
                    size_bytes: 1,
                })
                .collect(),
            requests: 2,
            out_of_time,
        }
    }

    fn check(found: usize, out_of_time: bool, allow_fewer: bool) -> Result<(), ListingError> {
        let start = Instant::now();
        let limits = ListLimits {
            want: 10,
            allow_fewer,
            stop_at: Some(start + Duration::from_millis(1500)),
        };
        check_found(&pages(found, out_of_time), ("b", "p/"), limits, start)
    }

    #[test]
    fn out_of_time_is_an_error_unless_fewer_are_allowed_and_some_were_found() {
        let err = check(4, true, false).unwrap_err();
        assert!(
            matches!(
                err,
                ListingError::OutOfTime {
                    found: 4,
                    asked: 10,
                    requests: 2,
                    budget_ms: 1500,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.error_type(), "DeadlineReached");
        assert!(err.to_string().contains("with 4 of the 10 keys found"), "{err}");
        assert!(check(4, true, true).is_ok(), "the keys found are swept");
        assert!(matches!(
            check(0, true, true),
            Err(ListingError::OutOfTime { found: 0, .. })
        ));
        // In time: the usual rules.
        assert!(matches!(check(0, false, true), Err(ListingError::NoKeys { .. })));
        assert!(matches!(
            check(4, false, false),
            Err(ListingError::TooFew { found: 4, .. })
        ));
        assert!(check(4, false, true).is_ok());
        assert!(check(10, false, false).is_ok());
    }
}

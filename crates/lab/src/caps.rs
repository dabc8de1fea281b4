//! The lab's caps on what has no byte size to count against `--max-store-bytes`:
//! buckets, S3 Express sessions and prefix partitions (the per-prefix rate's token
//! buckets). Each is a stated number, far above what s3sweep or a test makes, and
//! each refusal is an S3-shaped error, so a client that loops on CreateBucket,
//! CreateSession or reads of made-up prefixes costs the lab at most the cap.
//!
//! | what | cap | past it |
//! |---|---|---|
//! | buckets | [`MAX_BUCKETS`] (S3's default quota of general purpose buckets per account) | 400 `TooManyBuckets` |
//! | sessions held (live, and expired ones kept to answer `ExpiredToken`) | [`MAX_SESSIONS`] | expired ones forgotten first; then 503 `SlowDown` |
//! | prefix partitions tracked | [`MAX_PREFIX_PARTITIONS`] | idle ones (a full token bucket, as a new one) forgotten first; then the read gets 503 `SlowDown` |

use s3s::{s3_error, S3Error};

/// Most buckets the lab holds: S3's default quota of general purpose buckets per
/// account (10,000 since November 2024).
pub const MAX_BUCKETS: usize = 10_000;

/// Most S3 Express sessions the lab holds at once.
pub const MAX_SESSIONS: usize = 10_000;

/// Most prefix partitions the per-prefix rate tracks at once.
pub const MAX_PREFIX_PARTITIONS: usize = 10_000;

/// 400 `TooManyBuckets`, as S3 answers past the account's bucket quota.
pub(crate) fn too_many_buckets() -> S3Error {
    s3_error!(
        TooManyBuckets,
        "You have attempted to create more buckets than allowed: the lab holds at most {MAX_BUCKETS}"
    )
}

/// 503 `SlowDown` for a `CreateSession` past [`MAX_SESSIONS`] live sessions.
pub(crate) fn too_many_sessions() -> S3Error {
    s3_error!(
        SlowDown,
        "Please reduce your request rate: the lab holds at most {MAX_SESSIONS} unexpired sessions"
    )
}

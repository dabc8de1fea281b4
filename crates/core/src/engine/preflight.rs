//! The preflight: one read of the first object of every bucket (of every object size
//! on a size axis) before a sweep, so a sweep that cannot work fails fast with a
//! [`BucketError`] that says how to fix it, instead of counting the same failure a
//! million times.

use std::time::Duration;

use crate::plan::Plan;
use crate::s3::errors::{Action, BucketError};
use crate::s3::get::get_one;
use crate::s3::SweepSession;

/// Tries the preflight gives a bucket whose first read fails in a way that may pass
/// (throttling, 5xx, a timeout, a dropped connection): one bad response on a bad day
/// must not abort a whole sweep.
pub const PREFLIGHT_TRIES: u32 = 3;

/// Reads the first object of every bucket once, so a sweep that cannot work fails
/// fast with a [`BucketError`] (the kind, the bucket or key, the endpoint, and what to
/// do; the type `seed` and `clean` report too) that says how to fix it, instead of counting the same
/// failure a million times. Transient failures get [`PREFLIGHT_TRIES`] tries.
pub async fn preflight(session: &SweepSession, plan: &Plan) -> Result<(), BucketError> {
    let s3 = session.sdk(0);
    // On a size axis, every size's first object: each size is under its own prefix.
    let firsts = plan.buckets().iter().enumerate().flat_map(|(i, bucket)| {
        plan.size_axis()
            .into_iter()
            .map(move |size| (bucket, plan.keys_at(i, size)))
    });
    for (bucket, keys) in firsts {
        if keys.count() == 0 {
            continue; // a `key_prefix` sweep not listed yet: the listing checks the bucket.
        }
        let key = keys.key(plan.key_range().start.min(keys.count() - 1));
        let limit = plan.attempt_timeout() * plan.max_attempts();
        let mut outcome = get_one(s3, bucket, &key, limit).await;
        for _ in 1..PREFLIGHT_TRIES {
            match &outcome.result {
                Err(failure) if failure.kind.is_transient() => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    outcome = get_one(s3, bucket, &key, limit).await;
                }
                _ => break,
            }
        }
        if let Err(failure) = outcome.result {
            return Err(BucketError::from_failure(
                &failure,
                Action::Read,
                bucket,
                &key,
                &session.client().endpoint_name(),
            ));
        }
    }
    Ok(())
}

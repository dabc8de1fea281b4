//! Before a `key_prefix` sweep: list the first `object_count` keys under the prefix in
//! every bucket, once per run (the plan and its clones keep the listing, so every
//! configuration, repetition and memory size reads the same keys), untimed. A fan-out
//! child lists only its share of its coordinator's listing (after a key, so many).
//! With an invocation's deadline the listing has a budget ([`Deadline::listing_stop`]):
//! when it runs out, the keys found so far are swept if `allow_fewer_keys` allows,
//! else the listing is an error saying so, never a function killed at its deadline.

use crate::model::KeyListing;
use crate::plan::Plan;
use crate::s3::list::{list_prefix_after, ListLimits, ListingError};
use crate::s3::SweepSession;

use super::Deadline;

/// Lists the plan's prefix in each of its buckets, unless the plan names no prefix or
/// was already listed. Fewer keys than `object_count` is an error unless the request
/// allows it.
pub async fn list_keys(session: &SweepSession, plan: &Plan) -> Result<(), ListingError> {
    list_keys_within(session, plan, None).await
}

/// [`list_keys`] within `deadline`'s listing budget, taken when it starts (one budget
/// for every bucket); without a deadline, unbounded.
pub async fn list_keys_within(
    session: &SweepSession,
    plan: &Plan,
    deadline: Option<Deadline>,
) -> Result<(), ListingError> {
    let Some(prefix) = plan.key_prefix() else {
        return Ok(());
    };
    if plan.listing().is_some() {
        return Ok(());
    }
    let s3 = session.sdk(0);
    let mut listed = Vec::with_capacity(plan.buckets().len());
    let shares = plan.listed_shares();
    let stop_at = deadline.map(|d| d.listing_stop(std::time::Instant::now()));
    for (i, bucket) in plan.buckets().iter().enumerate() {
        let endpoint = session.client().endpoint_name();
        // A fan-out child lists only its share of its coordinator's listing.
        let (start_after, want) = match shares.get(i) {
            Some(s) => (s.start_after.as_deref(), s.count),
            None => (None, plan.object_count()),
        };
        let limits = ListLimits {
            want,
            allow_fewer: plan.allow_fewer_keys(),
            stop_at,
        };
        let listing = list_prefix_after(s3, (bucket, prefix, start_after), limits, &endpoint).await?;
        tracing::info!(
            bucket,
            prefix,
            keys = listing.objects.len(),
            requests = listing.requests,
            wall_ms = listing.wall_ms,
            out_of_time = listing.out_of_time,
            "listed the keys to sweep"
        );
        listed.push(listing);
    }
    plan.set_listing(listed);
    Ok(())
}

/// The listing's report for the result: per bucket, found, bytes, requests, time.
pub fn reports(plan: &Plan) -> Vec<KeyListing> {
    let (Some(prefix), Some(listing)) = (plan.key_prefix(), plan.listing()) else {
        return Vec::new();
    };
    listing
        .iter()
        .map(|b| KeyListing {
            bucket: b.bucket.clone(),
            prefix: prefix.to_string(),
            keys_asked: plan.object_count(),
            keys_found: b.objects.len() as u32,
            bytes_total: b.objects.iter().map(|o| o.size_bytes).sum(),
            list_requests: b.requests,
            list_wall_ms: b.wall_ms,
            keys_per_child: Vec::new(),
            out_of_time: b.out_of_time,
        })
        .collect()
}

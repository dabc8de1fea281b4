//! The lab of the fault tests (tests/it/faults.rs for the SDK's path,
//! tests/it/lean_client.rs for the lean client's): each bucket holds [`OBJECTS`]
//! objects `f/{i}` of [`SIZE`] bytes, the server's timing faults last longer than the
//! client's limits ([`FIRST_BYTE_MS`], [`ATTEMPT_MS`]), and the plan reads them all
//! once, unshuffled so the tally lines up with the objects.

use std::sync::Arc;
use std::time::{Duration, Instant};

use s3sweep::engine::{self, Quiet};
use s3sweep::model::ConfigResult;
use s3sweep::plan::Plan;
use s3sweep::s3::seed::SeedSpec;
use s3sweep::s3::SweepClient;

use super::lab::{FaultKind, FaultTally, FaultTiming, LatencyProfile, RunningServer};
use super::{options, seed_spec, LabBuilder};

pub(crate) const OBJECTS: u32 = 60;
pub(crate) const SIZE: u64 = 8192;
/// The client's limits; the server's timing faults ([`TIMING`]) last longer.
pub(crate) const FIRST_BYTE_MS: u64 = 1500;
pub(crate) const ATTEMPT_MS: u64 = 3000;
pub(crate) const TIMING: FaultTiming = FaultTiming {
    stall_ms: 12_000,
    late_first_byte_ms: 5_000,
};

/// The lab with `buckets`, each seeded afresh with the fault tests' objects, and the
/// faults' [`TIMING`] (the faults themselves are each test's).
pub(crate) fn lab(buckets: &[&str]) -> LabBuilder {
    buckets
        .iter()
        .fold(LabBuilder::new().fault_timing(TIMING), |lab, bucket| {
            lab.bucket(bucket, LatencyProfile::None).seed_spec(SeedSpec {
                skip_existing: false,
                ..seed_spec(bucket, "f/{i}", OBJECTS, SIZE)
            })
        })
}

/// A row read with retries (`sent` attempts, `injected` by the lab): every attempt
/// beyond a request's first is a retry, each in the GET's own timing with the sleeps
/// between them apart; each retry has its cause, and every 503 and 500 injected was
/// retried or counted as the row's error.
pub(crate) fn retries_add_up(row: &ConfigResult, injected: &FaultTally, sent: u64) {
    assert_eq!(row.retries, sent - row.requests);
    let b = row.breakdown.as_ref().expect("a breakdown");
    assert_eq!(b.attempts, sent, "{b:?}");
    assert!(b.backoff_ms_total > 0.0, "retries sleep first: {b:?}");
    let causes = row.retries_by_cause;
    assert_eq!(causes.total(), row.retries, "{causes:?}");
    assert_eq!(
        causes.throttled + row.errors.throttled,
        injected.of(FaultKind::SlowDown),
        "{causes:?}"
    );
    assert_eq!(
        causes.server_error + row.errors.server_error,
        injected.of(FaultKind::InternalError),
        "{causes:?}"
    );
}

/// The plan that reads `bucket`'s objects once with `workers` (as many connections),
/// no warm-up, `max_attempts`, the client's limits, and `more` JSON fields
/// (`r#", "clients": ["lean"]"#`, or empty).
pub(crate) fn plan(bucket: &str, workers: u32, max_attempts: u32, more: &str) -> Plan {
    Plan::from_json(&format!(
        r#"{{"buckets": ["{bucket}"], "key_template": "f/{{i}}", "object_count": {OBJECTS},
            "workers": [{workers}], "pool_connections": {workers}, "warmup": false, "max_attempts": {max_attempts},
            "timeouts_ms": {{"connect": 1000, "first_byte": {FIRST_BYTE_MS}, "attempt": {ATTEMPT_MS}}}{more}}}"#
    ))
    .unwrap()
}

/// One sweep of `plan`, bounded: one that does not end within `limit` is a hang. Its
/// row, what the lab injected meanwhile, the requests its session sent (warm-up
/// included, from the session's own counters) and how long it took.
pub(crate) async fn sweep(
    server: &RunningServer,
    client: &SweepClient,
    plan: &Plan,
    limit: Duration,
) -> (ConfigResult, FaultTally, u64, Duration) {
    let (before, started) = (server.faults().tally(), Instant::now());
    let session = client.session(plan);
    let result = tokio::time::timeout(limit, engine::run(&session, plan, &options(), Arc::new(Quiet)))
        .await
        .unwrap_or_else(|_| panic!("the sweep hung: not done within {limit:?}"));
    let sent = session.transport().counters().requests_sent;
    let injected = server.faults().tally().since(&before);
    (result.results[0].clone(), injected, sent, started.elapsed())
}

//! The lab of the fault tests (tests/it/faults.rs for the SDK's path,
//! tests/it/lean_client.rs for the lean client's): each bucket holds [`OBJECTS`]
//! objects `f/{i}` of [`SIZE`] bytes, the server's timing faults last longer than the
//! client's limits ([`FIRST_BYTE_MS`], [`ATTEMPT_MS`]), and the plan reads them all
//! once, unshuffled so the tally lines up with the objects.

use s3sweep::plan::Plan;
use s3sweep::s3::seed::SeedSpec;

use super::lab::{FaultTiming, LatencyProfile};
use super::{seed_spec, LabBuilder};

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

//! The memory sweep as strict as AWS: the tests' Lambda API (tests/it/common/lambda_api.rs)
//! authorizes every call against the function's role as SAM expands it with
//! `MemorySweep=enabled`, as Lambda does: the FunctionName as passed, and an
//! unqualified name with a `Qualifier` authorized as the qualified ARN
//! `function:NAME:QUALIFIER` (AWS's rule since 2022-01-24, cited at
//! `common::iam::lambda_call_resource`). Under the role as it was before
//! `ReadVersionsOfItself` (GetFunctionConfiguration on the unqualified function only)
//! every size's version read is refused and nothing is measured; under today's role
//! every call is allowed and every size measured; a call on a version with the
//! unqualified name and `Qualifier` is authorized exactly as the qualified name; a
//! revoked permission leaves the rows returned with the cleanup's failure named beside
//! them; a new account's limits (3,008 MB, 10 concurrent executions) answer as AWS
//! answers.

use std::collections::BTreeSet;

use aws_sdk_lambda::error::ProvideErrorMetadata;
use serde_json::json;

use crate::common::iam::{lambda_resource, sweep_role_without, Enforcer, MEMORY_SWEEP};
use crate::common::lambda_api::{lambda_client, Limits};
use crate::memory_sweep::{assert_as_the_user_left_it, setup, sweep, sweep_event, BUCKET, FUNCTION, ORIGINAL_MB};

/// The statement that lets the role read a version's configuration (`function:NAME:*`).
const READ_VERSIONS: &str = "ReadVersionsOfItself";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_of_the_sweep_is_allowed_and_every_size_measured() {
    let s = setup().await;
    let result = sweep(&s.coordinator, &[512, 1024], &[4]).await.unwrap();
    let calls = s.api.calls();
    eprintln!("a memory sweep's Lambda calls under the expanded role (MemorySweep=enabled):");
    for c in &calls {
        eprintln!("  {c}");
    }
    let iam = s.api.iam().expect("the Lambda API enforces the role by default");
    assert_eq!(iam.denials(), vec![], "every call of the sweep is allowed");
    let steps = result["memory"]["steps"].as_array().unwrap();
    assert!(steps.iter().all(|st| st["status"] == "ok"), "{steps:?}");
    let sizes: BTreeSet<u64> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory_mb"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, BTreeSet::from([512, 1024]), "every size measured");
    assert_eq!(result["memory"]["versions_deleted"], json!(["2", "3"]));
    assert!(result["memory"].get("cleanup_error").is_none(), "{result}");
    assert_as_the_user_left_it(&s.api, "after a sweep under IAM");
    // Every Lambda permission of the role was needed by the sweep.
    let unused: Vec<String> = iam.unused().into_iter().filter(|u| u.contains("lambda:")).collect();
    eprintln!("role statements no call of the memory sweep needed: {:?}", iam.unused());
    assert_eq!(unused, Vec::<String>::new());
}

/// The role before `ReadVersionsOfItself`: GetFunctionConfiguration on the unqualified
/// function only. Lambda checks a version's read against `function:NAME:VERSION`
/// (whether passed as `NAME:VERSION` or as `NAME` with `Qualifier=VERSION`), so every
/// size fails "did not become Active" and nothing is measured: what the sweep did on
/// AWS before the fix, which the emulator's old rule (a Qualifier ignored) hid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_role_without_read_versions_is_denied_every_version_read() {
    let s = setup().await;
    let old_role = sweep_role_without(MEMORY_SWEEP, READ_VERSIONS);
    s.api.enforce(Some(std::sync::Arc::new(Enforcer::new(old_role))));
    let result = sweep(&s.coordinator, &[512, 1024], &[4]).await;
    let calls = s.api.calls();
    eprintln!("a memory sweep's Lambda calls under the role without {READ_VERSIONS}:");
    for c in &calls {
        eprintln!("  {c}");
    }
    let denied: Vec<&String> = calls
        .iter()
        .filter(|c| c.contains("403 AccessDeniedException"))
        .collect();
    let version_arn = |v: &str| format!("lambda:GetFunctionConfiguration on {}:{v})", lambda_resource(FUNCTION));
    assert_eq!(denied.len(), 2, "one refused read per size: {calls:#?}");
    assert!(denied[0].ends_with(&version_arn("2")), "{}", denied[0]);
    assert!(denied[1].ends_with(&version_arn("3")), "{}", denied[1]);
    // Nothing measured: every size a failed step naming the refusal, zero rows.
    let result = result.expect("a failed version read is a failed step, not an error");
    assert_eq!(result["results"], json!([]), "zero rows");
    for step in result["memory"]["steps"].as_array().unwrap() {
        eprintln!("step {} MB: {} {}", step["memory_mb"], step["status"], step["error"]);
        assert_eq!(step["status"], "failed", "{step}");
        assert!(
            step["error"].as_str().unwrap().contains("AccessDeniedException"),
            "{step}"
        );
    }
    assert_as_the_user_left_it(&s.api, "after a denied sweep");
}

/// The same resource for a version's qualified name and for the unqualified name with
/// `Qualifier`: the role allows both on a version, and refuses the unqualified function
/// where it grants only `function:NAME:*`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qualifier_is_authorized_as_the_qualified_name() {
    let s = setup().await;
    let client = lambda_client(&s.api.endpoint());
    let publish = client.publish_version().function_name(FUNCTION).send().await.unwrap();
    let version = publish.version().unwrap().to_string();
    // Allowed: a version's configuration, either way of naming it.
    let read = client
        .get_function_configuration()
        .function_name(FUNCTION)
        .qualifier(&version)
        .send()
        .await;
    assert!(read.is_ok(), "{read:?}");
    // Allowed: deleting the version by the unqualified name and Qualifier (function:NAME:V).
    client
        .delete_function()
        .function_name(FUNCTION)
        .qualifier(&version)
        .send()
        .await
        .expect("DeleteFunction NAME Qualifier=V is authorized on function:NAME:V");
    assert!(!s.api.function().versions.contains_key(&version.parse::<u64>().unwrap()));
    // Refused: the unqualified function itself (the role deletes versions only).
    let err = client
        .delete_function()
        .function_name(FUNCTION)
        .send()
        .await
        .unwrap_err();
    let message = err.message().unwrap_or_default().to_string();
    eprintln!(
        "DeleteFunction FunctionName={FUNCTION}: {}: {message}",
        err.code().unwrap_or_default()
    );
    assert_eq!(err.code(), Some("AccessDeniedException"));
    assert!(
        message.contains(&format!(
            "is not authorized to perform: lambda:DeleteFunction on resource: {} because",
            lambda_resource(FUNCTION)
        )),
        "{message}"
    );
    // Refused under the role without ReadVersionsOfItself: the read with a Qualifier.
    s.api.enforce(Some(std::sync::Arc::new(Enforcer::new(sweep_role_without(
        MEMORY_SWEEP,
        READ_VERSIONS,
    )))));
    let err = client
        .get_function_configuration()
        .function_name(FUNCTION)
        .qualifier("1")
        .send()
        .await
        .unwrap_err();
    let message = err.message().unwrap_or_default().to_string();
    assert!(
        message.contains(&format!("on resource: {}:1 because", lambda_resource(FUNCTION))),
        "{message}"
    );
    assert!(s.api.function().versions.contains_key(&1), "the user's version stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_delete_keeps_the_rows_and_names_the_cleanup_failure() {
    let s = setup().await;
    let revoked = sweep_role_without(MEMORY_SWEEP, "DeleteOnlyVersionsOfItself");
    s.api.enforce(Some(std::sync::Arc::new(Enforcer::new(revoked))));
    let started = std::time::Instant::now();
    let result = sweep(&s.coordinator, &[512, 1024], &[1, 4]).await.unwrap();
    eprintln!(
        "calls with lambda:DeleteFunction revoked:\n  {}",
        s.api.calls().join("\n  ")
    );
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "every row measured is returned: {result}");
    let memory = &result["memory"];
    let cleanup = memory["cleanup_error"]
        .as_str()
        .expect("the cleanup's failure is named");
    eprintln!("memory.cleanup_error: {cleanup}");
    assert!(
        cleanup.contains("CLEANUP FAILED")
            && cleanup.contains("AccessDeniedException")
            && cleanup.contains("lambda:DeleteFunction"),
        "{cleanup}"
    );
    assert_eq!(memory["versions_left"], json!(["2", "3"]));
    assert_eq!(memory["memory_restored"], true, "the restore still ran");
    // The leftover versions are the ones whose description holds the sweep's marker.
    let f = s.api.function();
    assert_eq!(f.memory_mb, ORIGINAL_MB);
    let marked: BTreeSet<u64> = f
        .versions
        .iter()
        .filter(|(_, v)| v.description.starts_with("s3sweep memory sweep "))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(marked, BTreeSet::from([2, 3]));
    assert!(started.elapsed().as_secs() < 20, "bounded: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_account_refuses_10240_mb_with_lambdas_message() {
    let s = setup().await;
    s.api.set_limits(Limits::new_account());
    let client = lambda_client(&s.api.endpoint());
    let err = client
        .update_function_configuration()
        .function_name(FUNCTION)
        .memory_size(10240)
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValueException"));
    assert_eq!(
        err.message(),
        Some("1 validation error detected: Value '10240' at 'memorySize' failed to satisfy constraint: Member must have value less than or equal to 3008")
    );
    let result = sweep(&s.coordinator, &[10240, 3008], &[1]).await.unwrap();
    let steps = result["memory"]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], "failed");
    assert!(
        steps[0]["error"]
            .as_str()
            .unwrap()
            .contains("Value '10240' at 'memorySize' failed to satisfy constraint"),
        "{}",
        steps[0]
    );
    assert_eq!(steps[1]["status"], "ok", "{}", steps[1]);
    assert_as_the_user_left_it(&s.api, "after a sweep on a new account");
}

/// A memory sweep with a fan-out of `children` on a new account (10 concurrent
/// executions), the coordinator counted as one: the peak, and whether any Invoke was
/// throttled.
async fn fan_out_on_a_new_account(children: u32) -> (u32, Vec<String>) {
    let s = setup().await;
    s.api.set_limits(Limits::new_account());
    s.api.hold_executions(1); // the coordinator itself
    let event = json!({
        "buckets": [BUCKET], "object_count": 40, "workers": [2], "memory_mb": [512],
        "fanout": {"invocations": children, "start_delay_ms": 300}
    });
    let _ = sweep_event(&s.coordinator, event).await;
    let throttled = s
        .api
        .calls()
        .into_iter()
        .filter(|c| c.contains("TooManyRequestsException"))
        .collect();
    (s.api.peak_executions(), throttled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_sweep_with_a_fan_out_holds_n_plus_2_executions() {
    // The coordinator, the size's version, and its N children: N + 2.
    let (peak, throttled) = fan_out_on_a_new_account(8).await;
    assert_eq!(
        (peak, throttled.len()),
        (10, 0),
        "a fan-out of 8 fits in 10: {throttled:?}"
    );
    let (peak, throttled) = fan_out_on_a_new_account(9).await;
    eprintln!("fan-out of 9 plus a memory sweep on a new account: peak {peak}, throttled {throttled:?}");
    assert_eq!(peak, 10);
    assert_eq!(throttled.len(), 1, "the 11th execution is throttled: {throttled:?}");
}

/// Issue 49: a lock marker left by a sweep killed before its cleanup expires after the
/// function's timeout (900 s here) plus a minute: the next sweep removes it, runs, and
/// restores the description without it. A marker younger than that still refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marker_older_than_the_functions_timeout_expires() {
    let s = setup().await;
    let fresh_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    s.api.set_description(&format!(
        "the user's description [s3sweep-memory-sweep live-1 {fresh_ms}]"
    ));
    let refused = sweep(&s.coordinator, &[512], &[1]).await.unwrap_err();
    assert_eq!(refused.error_type, "ConcurrentMemorySweep", "{refused:?}");
    let stale_ms = fresh_ms - 961_000;
    s.api.set_description(&format!(
        "the user's description [s3sweep-memory-sweep killed-1 {stale_ms}]"
    ));
    let result = sweep(&s.coordinator, &[512], &[1])
        .await
        .expect("the stale marker expired");
    assert_eq!(result["memory"]["steps"][0]["status"], "ok", "{result}");
    assert_as_the_user_left_it(&s.api, "after a sweep that removed a stale marker");
}

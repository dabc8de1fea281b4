//! The memory sweep's control plane (request `memory_mb`) against a Lambda API server
//! on 127.0.0.1 (tests/it/common/lambda_api.rs) driven by the real aws-sdk-lambda client:
//! the recorded sequence (lock, per size: memory set, `LastUpdateStatus` polled until
//! `Successful`, version published, that version invoked, whose handler runs the
//! child's real sweep against the embedded S3 server; then the versions deleted and
//! the memory restored), checked by reading the function back; a failure injected at
//! every single call of that sequence leaves no published version behind and the
//! original memory and description restored; a second sweep of the same function is
//! refused.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};

use crate::common::lab::{LatencyProfile, RunningServer};
use crate::common::lambda_api::{lambda_client, InvokeHandler, InvokeMeta, LambdaApi};
use s3sweep_lambda::invoke::Invoker;
use s3sweep_lambda::{Function, FunctionSettings, ENDPOINT_ENV};
use s3sweep_lambda::{FUNCTION_ENV, MEMORY_POLL_ENV};

pub(crate) const FUNCTION: &str = "s3sweep-test";
pub(crate) const ORIGINAL_MB: u32 = 1024;
pub(crate) const ORIGINAL_DESCRIPTION: &str = "the user's description";
pub(crate) const BUCKET: &str = "standard-like";

pub(crate) fn settings(endpoint: &str, coordinator: bool) -> FunctionSettings {
    FunctionSettings::from_lookup(|var| match var {
        ENDPOINT_ENV => Some(endpoint.to_string()),
        "S3SWEEP_SAFETY_MARGIN_MS" => Some("500".into()),
        "AWS_REGION" => Some("us-east-1".into()),
        FUNCTION_ENV if coordinator => Some(FUNCTION.into()),
        MEMORY_POLL_ENV => Some("5".into()),
        _ => None,
    })
    .unwrap()
}

/// The Invoke handler: the child's real sweep, in a function built like the
/// coordinator's, its context saying the version and memory invoked. Its Lambda client
/// (for a fan-out within the size) talks to the API at `api` once that is known.
pub(crate) async fn child_handler(endpoint: &str, api: Arc<OnceLock<String>>) -> InvokeHandler {
    let endpoint = endpoint.to_string();
    Arc::new(move |event: Value, meta: InvokeMeta| {
        let (endpoint, api) = (endpoint.clone(), api.clone());
        Box::pin(async move {
            let mut child = Function::new(settings(&endpoint, false)).await.unwrap();
            if let Some(api) = api.get() {
                child = child.with_invoker(Invoker::with_client(lambda_client(api)));
            }
            let mut context = common::lambda_context("child", Some(Duration::from_secs(60)));
            context.invoked_function_arn = format!(
                "arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION}:{}",
                meta.version
            );
            context.env_config = Arc::new(lambda_runtime::Config {
                function_name: FUNCTION.into(),
                memory: meta.memory_mb as i32,
                version: meta.version.clone(),
                log_stream: String::new(),
                log_group: String::new(),
            });
            match child.handle(LambdaEvent::new(event, context)).await {
                Ok(result) => Ok(serde_json::to_value(result).unwrap()),
                Err(e) => {
                    let d = lambda_runtime::Diagnostic::from(e);
                    Err(json!({"errorType": d.error_type, "errorMessage": d.error_message}))
                }
            }
        })
    })
}

pub(crate) struct Setup {
    pub(crate) _lab: RunningServer,
    pub(crate) api: LambdaApi,
    pub(crate) coordinator: Function,
}

pub(crate) async fn setup() -> Setup {
    // The lab with one seeded bucket.
    let lab = common::LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::Express)
        .seed(BUCKET, 40, 1024)
        .server()
        .await;
    let endpoint = lab.endpoint();
    let known = Arc::new(OnceLock::new());
    let handler = child_handler(&endpoint, known.clone()).await;
    let api = LambdaApi::start(FUNCTION, ORIGINAL_MB, ORIGINAL_DESCRIPTION, handler).await;
    known.set(api.endpoint()).unwrap();
    let coordinator = Function::new(settings(&endpoint, true))
        .await
        .unwrap()
        .with_invoker(Invoker::with_client(lambda_client(&api.endpoint())));
    Setup {
        _lab: lab,
        api,
        coordinator,
    }
}

pub(crate) async fn sweep(
    coordinator: &Function,
    memory_mb: &[u32],
    workers: &[u32],
) -> Result<Value, lambda_runtime::Diagnostic> {
    let event = json!({
        "buckets": [BUCKET], "object_count": 40, "workers": workers, "memory_mb": memory_mb,
        "target_wall_ms": 60_000
    });
    sweep_event(coordinator, event).await
}

pub(crate) async fn sweep_event(coordinator: &Function, event: Value) -> Result<Value, lambda_runtime::Diagnostic> {
    let context = common::lambda_context("coordinator-1", Some(Duration::from_secs(120)));
    let handled = tokio::time::timeout(
        Duration::from_secs(60),
        coordinator.handle(LambdaEvent::new(event, context)),
    )
    .await
    .expect("the memory sweep ends within a minute");
    handled
        .map(|r| serde_json::to_value(r).unwrap())
        .map_err(lambda_runtime::Diagnostic::from)
}

/// The function as the user left it: original memory and description, only version 1.
pub(crate) fn assert_as_the_user_left_it(api: &LambdaApi, context: &str) {
    let f = api.function();
    assert_eq!(
        f.memory_mb,
        ORIGINAL_MB,
        "{context}: memory not restored\n{:#?}",
        api.calls()
    );
    assert_eq!(
        f.description,
        ORIGINAL_DESCRIPTION,
        "{context}: description not restored\n{:#?}",
        api.calls()
    );
    assert_eq!(
        f.versions.keys().copied().collect::<Vec<_>>(),
        vec![1],
        "{context}: published versions left behind (or the user's deleted)\n{:#?}",
        api.calls()
    );
}

/// The kind of each call line (its first word).
pub(crate) fn kinds(calls: &[String]) -> Vec<&str> {
    calls.iter().map(|c| c.split_whitespace().next().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_publish_invoke_delete_restore_in_that_order() {
    let s = setup().await;
    let result = sweep(&s.coordinator, &[512, 1769, 3538], &[1, 8]).await.unwrap();
    let calls = s.api.calls();
    eprintln!("control-plane calls of a memory sweep of 512, 1769 and 3538 MB:");
    for c in &calls {
        eprintln!("  {c}");
    }
    assert_as_the_user_left_it(&s.api, "after a clean sweep");
    the_calls_lock_then_set_publish_invoke_then_delete_restore(&calls);
    the_document_tags_every_row_with_its_size_and_cost(&result);
}

/// The control-plane calls of a memory sweep of 512, 1769 and 3538 MB: the lock first
/// (a compare-and-set on the revision), then per size: set, poll until Successful,
/// publish, invoke that version once Active; then delete the versions, restore.
fn the_calls_lock_then_set_publish_invoke_then_delete_restore(calls: &[String]) {
    assert!(
        calls[0].starts_with("GetFunctionConfiguration -> 1024 MB"),
        "{calls:#?}"
    );
    assert!(
        calls[1].contains("[s3sweep-memory-sweep coordinator-1") && calls[1].contains("RevisionId=rev-1"),
        "{calls:#?}"
    );
    let mut want: Vec<&str> = vec![
        "GetFunctionConfiguration",
        "UpdateFunctionConfiguration",
        "GetFunctionConfiguration",
        "GetFunctionConfiguration",
    ];
    for _ in 0..3 {
        want.extend([
            "UpdateFunctionConfiguration",
            "GetFunctionConfiguration",
            "GetFunctionConfiguration",
            "PublishVersion",
            "GetFunctionConfiguration",
            "GetFunctionConfiguration",
            "GetFunctionConfiguration",
            "Invoke",
        ]);
    }
    want.extend([
        "DeleteFunction",
        "DeleteFunction",
        "DeleteFunction",
        "UpdateFunctionConfiguration",
        "GetFunctionConfiguration",
        "GetFunctionConfiguration",
    ]);
    assert_eq!(kinds(calls), want, "{calls:#?}");
    for (i, (mb, version)) in [(512, 2), (1769, 3), (3538, 4)].into_iter().enumerate() {
        let at = 4 + i * 8;
        assert!(calls[at].contains(&format!("MemorySize={mb}")), "{}", calls[at]);
        assert!(
            calls[at + 1].ends_with("InProgress"),
            "the poll waits: {}",
            calls[at + 1]
        );
        assert!(
            calls[at + 2].ends_with(&format!("{mb} MB, Successful")),
            "{}",
            calls[at + 2]
        );
        assert_eq!(calls[at + 3], format!("PublishVersion -> version {version} ({mb} MB)"));
        // The version is Pending after it is published: invoked once Active.
        for (n, state) in [(4, "Pending"), (5, "Pending"), (6, "Active")] {
            assert_eq!(
                calls[at + n],
                format!("GetFunctionConfiguration Qualifier={version} -> {state}")
            );
        }
        assert_eq!(calls[at + 7], format!("Invoke Qualifier={version} ({mb} MB)"));
    }
    assert!(calls[28..31].iter().all(|c| ["2", "3", "4"]
        .iter()
        .any(|v| c == &format!("DeleteFunction FunctionName={FUNCTION}:{v} -> version {v}"))));
    assert!(
        calls[31].contains("MemorySize=1024") && calls[31].contains(&format!("Description={ORIGINAL_DESCRIPTION:?}"))
    );
}

/// The document: every row tagged with its memory size, the steps, the cleanup, the
/// choices, each configuration's cost at its own size, a summary per size.
fn the_document_tags_every_row_with_its_size_and_cost(result: &Value) {
    let rows = result["results"].as_array().unwrap();
    let tagged: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r["memory_mb"].as_u64().unwrap(), r["workers"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        tagged,
        vec![(512, 1), (512, 8), (1769, 1), (1769, 8), (3538, 1), (3538, 8)]
    );
    assert!(
        rows.iter().all(|r| r.get("emulated").is_none()),
        "measured on Lambda, not emulated"
    );
    let memory = &result["memory"];
    assert_eq!(memory["mode"], "lambda");
    assert_eq!(memory["original_memory_mb"], 1024);
    assert_eq!(memory["memory_restored"], true);
    assert_eq!(memory["versions_deleted"], json!(["2", "3", "4"]));
    let steps = memory["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for s in steps {
        assert_eq!(s["status"], "ok", "{s}");
        assert_eq!(s["configurations"], 2);
    }
    let choice = &memory["choices"][0];
    assert_eq!(choice["bucket"], BUCKET);
    assert!(choice["fastest"]["memory_mb"].is_u64(), "{choice}");
    assert!(choice["cheapest"]["memory_mb"].is_u64(), "{choice}");
    assert_eq!(choice["target_wall_ms"], 60_000);
    // Every configuration's cost, its GB-seconds at its own memory size.
    let costs = memory["costs"].as_array().unwrap();
    assert_eq!(costs.len(), 6);
    for (cost, row) in costs.iter().zip(rows) {
        let mb = row["memory_mb"].as_f64().unwrap();
        let want = mb / 1024.0 * row["wall_ms"].as_f64().unwrap() / 1000.0;
        let got = cost["lambda_gb_s"].as_f64().unwrap();
        assert!((got - want).abs() <= want * 1e-3, "{cost} vs {row}");
        assert_eq!(cost["memory_mb"], row["memory_mb"]);
    }
    // Summaries per bucket and size.
    let sizes: Vec<u64> = result["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["memory_mb"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![512, 1769, 3538]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_at_any_call_leaves_no_version_and_the_memory_restored() {
    // The clean sequence of a two-size sweep, then the same sweep with the Nth call of
    // each kind failing, for every call in it.
    let clean = setup().await;
    sweep(&clean.coordinator, &[512, 1024 + 512], &[4]).await.unwrap();
    let mut per_kind: BTreeMap<&'static str, u32> = BTreeMap::new();
    for call in clean.api.calls() {
        let kind = common::lambda_api::KINDS
            .iter()
            .find(|k| call.starts_with(**k))
            .copied()
            .unwrap();
        *per_kind.entry(kind).or_default() += 1;
        if kind == "UpdateFunctionConfiguration" {
            *per_kind.entry("LastUpdateStatus").or_default() += 1;
        }
    }
    eprintln!("calls per kind in a clean two-size sweep: {per_kind:?}");
    let mut cases = 0;
    for (kind, count) in per_kind {
        for nth in 1..=count {
            let s = setup().await;
            s.api.fail_at(kind, nth);
            let outcome = sweep(&s.coordinator, &[512, 1536], &[4]).await;
            let what = format!("failure at {kind} #{nth}");
            assert_as_the_user_left_it(&s.api, &what);
            let said = match &outcome {
                Ok(r) => {
                    let failed: Vec<&Value> = r["memory"]["steps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|s| s["status"] == "failed")
                        .collect();
                    if kind == "Invoke" {
                        // A failed invocation is data: its step says so, the other size ran.
                        assert_eq!(failed.len(), 1, "{what}: {r}");
                        assert!(failed[0]["error"].as_str().unwrap().contains("Invoke"), "{what}");
                        assert_eq!(r["results"].as_array().unwrap().len(), 1, "{what}");
                    }
                    format!("result, {} step(s) failed", failed.len())
                }
                Err(d) => {
                    assert!(
                        ["MemorySweepFailed", "MemoryNotRestored"].contains(&d.error_type.as_str()),
                        "{what}: {d:?}"
                    );
                    assert_ne!(kind, "Invoke", "{what}: an Invoke failure is data, not an error: {d:?}");
                    format!("{}: {}", d.error_type, d.error_message)
                }
            };
            // A cleanup call that failed once is tried again; nothing else is retried.
            eprintln!("{what}: {said}");
            cases += 1;
        }
    }
    assert!(cases >= 20, "{cases} cases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sweep_of_the_same_function_is_refused() {
    let s = setup().await;
    // Another sweep's marker in the description: refused before anything changes.
    // (Taken now: a marker older than the function's timeout would have expired.)
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let held = format!("{ORIGINAL_DESCRIPTION} [s3sweep-memory-sweep other-request {now_ms}]");
    s.api.set_description(&held);
    let d = sweep(&s.coordinator, &[512], &[1]).await.unwrap_err();
    assert_eq!(d.error_type, "ConcurrentMemorySweep", "{d:?}");
    assert!(d.error_message.contains("other-request"), "{}", d.error_message);
    assert_eq!(kinds(&s.api.calls()), vec!["GetFunctionConfiguration"]);
    assert_eq!(s.api.function().description, held);
    assert_eq!(s.api.function().memory_mb, ORIGINAL_MB);
    s.api.set_description(ORIGINAL_DESCRIPTION);

    // Two at once: one runs, the other is refused, and the function ends as it was.
    let second = Function::new(settings(&s._lab.endpoint(), true))
        .await
        .unwrap()
        .with_invoker(Invoker::with_client(lambda_client(&s.api.endpoint())));
    let (a, b) = tokio::join!(sweep(&s.coordinator, &[512, 1024, 2048], &[1, 4]), async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        sweep(&second, &[768], &[1]).await
    });
    assert!(a.is_ok(), "{a:?}");
    let b = b.unwrap_err();
    assert_eq!(b.error_type, "ConcurrentMemorySweep", "{b:?}");
    assert_as_the_user_left_it(&s.api, "after two sweeps at once");
    assert!(
        !s.api.calls().iter().any(|c| c.contains("MemorySize=768")),
        "the refused sweep changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_runs_within_each_size_on_that_sizes_version() {
    let s = setup().await;
    let event = json!({
        "buckets": [BUCKET], "object_count": 40, "workers": [4], "memory_mb": [512, 1024],
        "fanout": {"invocations": 2, "start_delay_ms": 300}
    });
    let result = sweep_event(&s.coordinator, event).await.unwrap();
    let calls = s.api.calls();
    let invokes: Vec<&String> = calls.iter().filter(|c| c.starts_with("Invoke")).collect();
    // Per size: the version invoked once by the memory sweep, then twice by that
    // version for its children, all at the size's version.
    assert_eq!(
        invokes,
        vec![
            "Invoke Qualifier=2 (512 MB)",
            "Invoke Qualifier=2 (512 MB)",
            "Invoke Qualifier=2 (512 MB)",
            "Invoke Qualifier=3 (1024 MB)",
            "Invoke Qualifier=3 (1024 MB)",
            "Invoke Qualifier=3 (1024 MB)",
        ],
        "{calls:#?}"
    );
    let rows = result["results"].as_array().unwrap();
    let merged: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r["memory_mb"].as_u64().unwrap(), r["requests"].as_u64().unwrap()))
        .collect();
    // One merged row per size: the two children's shards, 40 objects in all.
    assert_eq!(merged, vec![(512, 40), (1024, 40)]);
    assert_as_the_user_left_it(&s.api, "after a memory sweep with a fan-out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_size_in_the_middle_keeps_the_rows_of_the_other_sizes() {
    // A new account's limit: Lambda refuses 3,009 MB and more.
    let s = setup().await;
    s.api.refuse_memory_above(3008);
    let result = sweep(&s.coordinator, &[512, 3538, 1769], &[1, 4]).await.unwrap();
    let calls = s.api.calls();
    eprintln!("control-plane calls of a memory sweep of 512, 3538 (refused) and 1769 MB:");
    for c in &calls {
        eprintln!("  {c}");
    }
    assert_as_the_user_left_it(&s.api, "after a sweep with a refused size");
    let tagged: Vec<(u64, u64)> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["memory_mb"].as_u64().unwrap(), r["workers"].as_u64().unwrap()))
        .collect();
    assert_eq!(tagged, vec![(512, 1), (512, 4), (1769, 1), (1769, 4)], "{result}");
    let steps = result["memory"]["steps"].as_array().unwrap();
    let summary: Vec<(u64, &str)> = steps
        .iter()
        .map(|s| (s["memory_mb"].as_u64().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(summary, vec![(512, "ok"), (3538, "failed"), (1769, "ok")]);
    let reason = steps[1]["error"].as_str().unwrap();
    assert!(
        reason.contains("3538 MB refused")
            && reason.contains("InvalidParameterValueException")
            && reason.contains("3008"),
        "{reason}"
    );
    assert_eq!(result["memory"]["versions_deleted"], json!(["2", "3"]));
    assert_eq!(result["memory"]["memory_restored"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_stopped_by_a_failed_call_still_returns_what_it_measured() {
    let s = setup().await;
    // The second size's version cannot be published: the sweep stops there.
    s.api.fail_at("PublishVersion", 2);
    let result = sweep(&s.coordinator, &[512, 1024, 1536], &[4]).await.unwrap();
    assert_as_the_user_left_it(&s.api, "after a stopped sweep");
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{result}");
    assert_eq!(rows[0]["memory_mb"], 512);
    let steps = result["memory"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{result}");
    assert!(
        steps[1]["error"].as_str().unwrap().contains("PublishVersion"),
        "{}",
        steps[1]
    );
    assert!(steps[2]["error"].as_str().unwrap().contains("not run"), "{}", steps[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_size_starts_in_the_time_kept_for_the_cleanup() {
    // 7 s to the deadline, 0.5 s margin: less than the cleanup reserve of two sizes
    // (5 s + 1 s per version): no size starts; the lock is taken and given back.
    let s = setup().await;
    let event = json!({
        "buckets": [BUCKET], "object_count": 40, "workers": [1], "memory_mb": [512, 1024],
    });
    let context = common::lambda_context("coordinator-1", Some(Duration::from_secs(7)));
    let handled = tokio::time::timeout(
        Duration::from_secs(30),
        s.coordinator.handle(LambdaEvent::new(event, context)),
    )
    .await
    .expect("bounded");
    let result = serde_json::to_value(handled.unwrap()).unwrap();
    assert_as_the_user_left_it(&s.api, "after a sweep with no time");
    let calls = s.api.calls();
    assert!(
        !calls
            .iter()
            .any(|c| c.contains("MemorySize=512") || c.starts_with("PublishVersion")),
        "{calls:#?}"
    );
    let steps = result["memory"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for step in steps {
        assert!(
            step["error"].as_str().unwrap().contains("kept for the cleanup"),
            "{step}"
        );
    }
}

//! Issue 49: the canary and the memory sweep. A memory sweep changes `$LATEST`'s memory
//! while it runs, and the canary's schedule invokes the unqualified function, so a
//! canary firing mid-sweep would run at the sweep's current size and be recorded as
//! the canary's. The canary's event carries `expect_memory_mb` (the stack's
//! `MemorySize`, template.yaml's schedule Input): an invocation at another size
//! measures nothing and its result says why (every configuration skipped, the reason
//! naming both sizes). Shown through the tests' Lambda API during a real memory sweep.

use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use serde_json::{json, Value};

use crate::common::lambda_api::lambda_client;
use crate::memory_sweep::{setup, sweep, BUCKET, FUNCTION, ORIGINAL_MB};

fn canary_event() -> Value {
    json!({"buckets": [BUCKET], "object_count": 8, "workers": [2], "expect_memory_mb": ORIGINAL_MB})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_during_a_memory_sweep_is_refused_with_a_record() {
    let s = setup().await;
    let client = lambda_client(&s.api.endpoint());
    let invoke = |event: Value| {
        let client = client.clone();
        async move {
            let out = client
                .invoke()
                .function_name(FUNCTION)
                .payload(Blob::new(event.to_string()))
                .send()
                .await
                .unwrap();
            assert_eq!(out.function_error(), None, "{out:?}");
            serde_json::from_slice::<Value>(out.payload().unwrap().as_ref()).unwrap()
        }
    };
    // Before the sweep: the canary runs at its own size and measures.
    let before = invoke(canary_event()).await;
    assert_eq!(before["results"].as_array().unwrap().len(), 1, "{before}");

    // During the sweep: $LATEST is at one of the sweep's sizes.
    let coordinator = s.coordinator;
    let running = tokio::spawn(async move { sweep(&coordinator, &[512, 2048], &[4]).await });
    let started = Instant::now();
    while s.api.function().memory_mb == ORIGINAL_MB {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the sweep never resized $LATEST"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let during = invoke(canary_event()).await;
    let result = running.await.unwrap().expect("the memory sweep");
    let calls = s.api.calls();
    let canary_call = calls
        .iter()
        .filter(|c| c.starts_with("Invoke Qualifier=$LATEST"))
        .nth(1)
        .cloned();
    eprintln!("the canary's Invoke during the sweep: {canary_call:?}");
    eprintln!(
        "its result: {} rows, skipped: {}",
        during["results"].as_array().unwrap().len(),
        during["skipped"][0]["reason"]
    );
    assert_eq!(
        during["results"],
        json!([]),
        "nothing measured at the sweep's size: {during}"
    );
    let reason = during["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not run: the function runs at ")
            && reason.contains(&format!("not the {ORIGINAL_MB} MB this request expects")),
        "{reason}"
    );
    assert_eq!(during["truncated"], true);
    // The sweep itself measured every size.
    assert!(
        result["memory"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "ok"),
        "{result}"
    );

    // After the sweep: back at its own size, the canary measures again.
    let after = invoke(canary_event()).await;
    assert_eq!(after["results"].as_array().unwrap().len(), 1, "{after}");
}

//! The fan-out fields through the Lambda handler (called with a `LambdaEvent`, against
//! the embedded server on 127.0.0.1:0): a child reads only its shard, waits for the
//! shared start before its first timed phase, serializes its histograms, and stops by
//! `finish_by_unix_ms` (fields of the `from_coordinator` envelope only a coordinator
//! writes); a coordinator that cannot invoke its function says so with a stable
//! `errorType`; the CLI refuses a fan-out event. The coordinator itself runs under `cargo lambda watch` in
//! tests/it/lambda_emulator.rs.

use std::time::{SystemTime, UNIX_EPOCH};

use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{json, Value};

use crate::common::lab::LatencyProfile;
use s3sweep::model::decode_histogram;
use s3sweep_lambda::{Function, FunctionSettings, ENDPOINT_ENV};

use crate::common;

/// The lab with `fanout-bucket`, `objects` objects of 1 KiB in it.
fn lab(objects: u32) -> common::LabBuilder {
    common::LabBuilder::new()
        .bucket("fanout-bucket", LatencyProfile::None)
        .seed("fanout-bucket", objects, 1024)
}

fn settings(endpoint: &str, margin_ms: u64, function_name: Option<&str>) -> FunctionSettings {
    let margin = margin_ms.to_string();
    let name = function_name.map(str::to_string);
    FunctionSettings::from_lookup(|var| match var {
        ENDPOINT_ENV => Some(endpoint.to_string()),
        "S3SWEEP_SAFETY_MARGIN_MS" => Some(margin.clone()),
        "AWS_REGION" => Some("us-east-1".into()),
        "AWS_LAMBDA_FUNCTION_NAME" => name.clone(),
        _ => None,
    })
    .unwrap()
}

fn event(payload: Value) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, common::lambda_context("fanout-test", None))
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_reads_its_shard_after_the_shared_start_and_serializes_its_histograms() {
    let server = lab(30).server().await;
    let f = Function::new(settings(&server.endpoint(), 0, None)).await.unwrap();

    let start = now_ms() + 800;
    let payload = json!({
        "buckets": ["fanout-bucket"], "object_count": 30, "workers": [1, 4], "pool_connections": 4,
        "from_coordinator": {"role": "child", "key_range": {"start": 10, "end": 20}, "start_unix_ms": start}
    });
    let result = f.handle(event(payload)).await.unwrap();
    assert_eq!(result.results.len(), 2);
    let first = result.results[0]
        .child
        .as_ref()
        .expect("a child's rows carry its window");
    assert!(
        first.started_unix_ms >= start as f64,
        "the first timed phase waited for the shared start: {} < {start}",
        first.started_unix_ms
    );
    for row in &result.results {
        assert_eq!(row.requests, 10, "only the shard 10..20");
        assert_eq!(row.ok, 10);
        let c = row.child.as_ref().unwrap();
        assert!(c.finished_unix_ms >= c.started_unix_ms);
        assert!((c.finished_unix_ms - c.started_unix_ms - row.wall_ms).abs() < 0.01);
        let h = c.histograms.as_ref().expect("histograms for the coordinator");
        let ttfb = decode_histogram("ttfb_us", &h.ttfb_us).unwrap();
        assert_eq!(ttfb.len(), 10);
        assert_eq!(decode_histogram("ttlb_us", &h.ttlb_us).unwrap().len(), 10);
        assert_eq!(decode_histogram("pool_wait_us", &h.pool_wait_us).unwrap().len(), 10);
    }
    // The second configuration does not wait again.
    let second = result.results[1].child.as_ref().unwrap();
    assert!(second.started_unix_ms >= first.finished_unix_ms);
    // The echoed request says what the child was asked.
    assert_eq!(result.request.from_coordinator.unwrap().key_range.unwrap().start, 10);

    // A plain sweep carries no child measures.
    let plain = f
        .handle(event(
            json!({"buckets": ["fanout-bucket"], "object_count": 5, "workers": [2]}),
        ))
        .await
        .unwrap();
    assert!(plain.results[0].child.is_none());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_stops_by_its_coordinators_finish_time() {
    let server = lab(5).server().await;
    // A 1 s safety margin and a finish time 300 ms away: nothing may start.
    let f = Function::new(settings(&server.endpoint(), 1_000, None)).await.unwrap();
    let payload = json!({
        "buckets": ["fanout-bucket"], "object_count": 5, "workers": [1, 2],
        "from_coordinator": {"role": "child", "finish_by_unix_ms": now_ms() + 300}
    });
    let result = f.handle(event(payload)).await.unwrap();
    assert!(result.truncated);
    assert_eq!(result.results.len(), 0);
    assert_eq!(result.skipped.len(), 2);
    assert!(result.skipped[0].reason.contains("deadline"), "{:?}", result.skipped);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_that_cannot_invoke_says_so() {
    let server = lab(5).server().await;
    let payload = json!({"buckets": ["fanout-bucket"], "object_count": 5, "fanout": {"invocations": 2}});
    // No AWS_LAMBDA_FUNCTION_NAME (nor S3SWEEP_FANOUT_FUNCTION).
    let f = Function::new(settings(&server.endpoint(), 0, None)).await.unwrap();
    let err = f.handle(event(payload.clone())).await.unwrap_err();
    let d = Diagnostic::from(err);
    assert_eq!(d.error_type, "FanoutUnavailable");
    assert!(
        d.error_message.contains("AWS_LAMBDA_FUNCTION_NAME"),
        "{}",
        d.error_message
    );
    // A function built without a Lambda client (as tests build it).
    let client = f.client().clone();
    let bare = Function::with_client(client, settings(&server.endpoint(), 0, Some("s3sweep")));
    let d = Diagnostic::from(bare.handle(event(payload)).await.unwrap_err());
    assert_eq!(d.error_type, "FanoutUnavailable");
    // Over the default FanoutMax (10): an invalid event naming the field.
    let d = Diagnostic::from(
        f.handle(event(
            json!({"buckets": ["fanout-bucket"], "object_count": 50, "fanout": {"invocations": 11}}),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(d.error_type, "InvalidEvent");
    assert!(d.error_message.contains("`fanout.invocations`"), "{}", d.error_message);
    assert!(d.error_message.contains("S3SWEEP_FANOUT_MAX"), "{}", d.error_message);
    server.shutdown().await;
}

#[test]
fn the_cli_refuses_a_fan_out_event() {
    let event = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/fanout.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_s3sweep"))
        .args(["run", "--event"])
        .arg(&event)
        .args(["--endpoint", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`fanout` needs the Lambda function"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

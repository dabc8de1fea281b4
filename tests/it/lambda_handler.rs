//! The Lambda handler called directly with a `LambdaEvent` and a `Context`, against the
//! embedded server on 127.0.0.1:0: results, cold start, errors as `Diagnostic`s, the
//! endpoint that only the function's environment can set, and the deadline (no
//! deadline, one too close for anything, one that leaves room for exactly one
//! configuration). Plus: every file in events/ is a valid request, and the request log
//! the function writes in S3 (`requests_log_uri`).

use std::time::Duration;

use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use serde_json::{json, Value};

use crate::common::lab::{self, LatencyProfile};
use crate::common::LabBuilder;
use s3sweep_lambda::{validate_event, Function, FunctionSettings, InvocationError, ENDPOINT_ENV};

use crate::common;

/// The function as `main` builds it, from an environment pointing at `endpoint`.
async fn function(endpoint: &str, safety_margin_ms: u64) -> Function {
    let margin = safety_margin_ms.to_string();
    let settings = FunctionSettings::from_lookup(|name| match name {
        ENDPOINT_ENV => Some(endpoint.to_string()),
        "S3SWEEP_SAFETY_MARGIN_MS" => Some(margin.clone()),
        "AWS_REGION" => Some("us-east-1".into()),
        _ => None,
    })
    .unwrap();
    Function::new(settings).await.unwrap()
}

fn context(deadline_in: Option<Duration>) -> Context {
    common::lambda_context("test-request", deadline_in)
}

fn event(payload: Value, deadline_in: Option<Duration>) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, context(deadline_in))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_event_returns_the_result_document() {
    let server = LabBuilder::new()
        .bucket("handler-bucket", LatencyProfile::None)
        .seed("handler-bucket", 40, 1024)
        .server()
        .await;
    let f = function(&server.endpoint(), 5_000).await;

    let payload = json!({"buckets": ["handler-bucket"], "object_count": 40, "workers": [1, 4], "pool_connections": 4});
    let result = f.handle(event(payload.clone(), None)).await.unwrap();
    assert_eq!(result.results.len(), 2);
    for (row, w) in result.results.iter().zip([1, 4]) {
        assert_eq!(row.workers, w);
        assert_eq!(row.ok, 40);
        assert_eq!(row.bytes, 40 * 1024);
        assert_eq!(row.errors.total, 0);
    }
    assert!(!result.truncated);
    assert_eq!(result.environment.runner, s3sweep::model::Runner::Lambda);
    assert_eq!(result.environment.endpoint.as_deref(), Some(server.endpoint().as_str()));
    let lambda = result.environment.lambda.as_ref().unwrap();
    assert_eq!(lambda.function_name.as_deref(), Some("s3sweep-test"));
    assert_eq!(lambda.function_version.as_deref(), Some("$LATEST"));
    assert_eq!(lambda.memory_size_mb, Some(2048));
    assert_eq!(lambda.region.as_deref(), Some("us-east-1"));
    assert_eq!(lambda.request_id.as_deref(), Some("test-request"));
    assert!(lambda.cold_start);
    assert_eq!(lambda.remaining_ms_at_start, None, "a 1970 deadline is not a deadline");
    assert_eq!(lambda.safety_margin_ms, 5_000);

    // The same execution environment again: warm, the one client reused; each
    // invocation reads through a session of its own, never the client's transport.
    let before = f.client().transport().counters().requests_sent;
    let again = f.handle(event(payload, Some(Duration::from_secs(600)))).await.unwrap();
    let lambda = again.environment.lambda.as_ref().unwrap();
    assert!(!lambda.cold_start);
    let left = lambda.remaining_ms_at_start.expect("a real deadline is read");
    assert!((590_000..=600_000).contains(&left), "{left}");
    assert_eq!(f.client().transport().counters().requests_sent, before);
    assert_eq!(again.results.iter().map(|r| r.ok).sum::<u64>(), 80);
    assert!(!again.truncated);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_events_name_every_bad_field_and_cannot_set_the_endpoint() {
    // The endpoint here is unreachable: a valid event would fail to start, so an
    // InvalidEvent proves validation comes first and touches no network.
    let f = function("http://127.0.0.1:9", 5_000).await;
    let err = f
        .handle(event(
            json!({
                "buckets": ["Bad_Name"],
                "workers": [0],
                "object_count": "lots",
                "endpoint": "http://169.254.169.254",
                "endpoint_url": "http://attacker.example",
            }),
            Some(Duration::from_secs(60)),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, InvocationError::InvalidEvent(_)));
    let d = Diagnostic::from(err);
    assert_eq!(d.error_type, "InvalidEvent");
    for field in ["buckets[0]", "workers[0]", "object_count", "`endpoint`", "endpoint_url"] {
        assert!(
            d.error_message.contains(field),
            "{field} not named in {}",
            d.error_message
        );
    }
    assert_eq!(f.client().transport().counters().requests_sent, 0);

    for (payload, needle) in [
        (json!("just a string"), "must be a JSON object"),
        (json!(null), "must be a JSON object"),
        (json!({}), "buckets"),
    ] {
        let d = Diagnostic::from(f.handle(event(payload, None)).await.unwrap_err());
        assert_eq!(d.error_type, "InvalidEvent");
        assert!(d.error_message.contains(needle), "{}", d.error_message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_that_cannot_start_says_why_and_how_to_fix_it() {
    let server = LabBuilder::new()
        .bucket("empty-bucket", LatencyProfile::None)
        .server()
        .await;
    let f = function(&server.endpoint(), 5_000).await;
    let d = Diagnostic::from(
        f.handle(event(json!({"buckets": ["empty-bucket"], "object_count": 3}), None))
            .await
            .unwrap_err(),
    );
    assert_eq!(d.error_type, "ObjectNotFound");
    assert!(d.error_message.contains("s3sweep seed"), "{}", d.error_message);

    let d = Diagnostic::from(
        f.handle(event(json!({"buckets": ["no-such-bucket"], "object_count": 3}), None))
            .await
            .unwrap_err(),
    );
    assert_eq!(d.error_type, "BucketNotFound");
    server.shutdown().await;

    let f = function("http://127.0.0.1:9", 5_000).await;
    let d = Diagnostic::from(
        f.handle(event(
            json!({"buckets": ["any-bucket"], "object_count": 3, "timeouts_ms": {"connect": 500}}),
            None,
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(d.error_type, "EndpointUnreachable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_too_close_for_anything_skips_every_configuration() {
    let server = LabBuilder::new()
        .bucket("deadline-bucket", LatencyProfile::None)
        .seed("deadline-bucket", 10, 1024)
        .server()
        .await;
    // 2 s left, a 3 s margin: not even the first configuration may start.
    let f = function(&server.endpoint(), 3_000).await;
    let result = f
        .handle(event(
            json!({"buckets": ["deadline-bucket"], "object_count": 10, "workers": [1, 2, 4]}),
            Some(Duration::from_secs(2)),
        ))
        .await
        .unwrap();
    assert!(result.truncated);
    assert!(result.results.is_empty());
    let skipped: Vec<u32> = result.skipped.iter().map(|s| s.workers).collect();
    assert_eq!(skipped, vec![1, 2, 4]);
    assert!(
        result.skipped[0].reason.contains("deadline"),
        "{}",
        result.skipped[0].reason
    );
    let lambda = result.environment.lambda.unwrap();
    assert!(lambda.remaining_ms_at_start.unwrap() <= 2_000);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preflight_that_outlasts_the_deadline_is_stopped_in_time() {
    // Every GET's first byte comes 15 s late; the preflight would wait 10 s (the
    // first-byte timeout) three times. With 3 s left and a 1 s margin the handler must
    // give up at 2 s with a clear error, not be killed at the deadline.
    let server = LabBuilder::new()
        .bucket("late-bucket", LatencyProfile::None)
        .seed("late-bucket", 4, 1024)
        .server()
        .await;
    let f = function(&server.endpoint(), 1_000).await;
    server
        .faults()
        .set_all(&["late-bucket=late-first-byte:1.0".parse::<lab::BucketFault>().unwrap()])
        .unwrap();
    let started = std::time::Instant::now();
    let err = f
        .handle(event(
            json!({"buckets": ["late-bucket"], "object_count": 4, "workers": [1]}),
            Some(Duration::from_secs(3)),
        ))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2_600), "gave up after {took:?}");
    let d = Diagnostic::from(err);
    assert_eq!(d.error_type, "DeadlineReached");
    assert!(d.error_message.contains("safety margin"), "{}", d.error_message);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_deadline_cuts_the_configuration_that_would_overrun() {
    // Standard-like latency (median 16 ms): 40 sequential GETs take ~0.7 s. With 10 s
    // left and a 9.6 s margin the sweep must stop 0.4 s in: the first configuration is
    // cut short with the GETs it finished, the others are skipped, and the handler
    // answers right after the cut.
    let server = LabBuilder::new()
        .bucket("short-bucket", LatencyProfile::Standard)
        .seed("short-bucket", 40, 1024)
        .server()
        .await;
    let f = function(&server.endpoint(), 9_600).await;
    let started = std::time::Instant::now();
    let result = f
        .handle(event(
            json!({"buckets": ["short-bucket"], "object_count": 40, "workers": [1, 2, 4], "warmup": false}),
            Some(Duration::from_secs(10)),
        ))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(900), "answered after {took:?}");
    assert_eq!(result.results.len(), 1, "{:?}", result.skipped);
    let row = &result.results[0];
    assert_eq!(row.workers, 1);
    assert!(row.cut_short);
    assert!(row.ok > 0 && row.ok < 40, "{} ok", row.ok);
    assert_eq!(row.ok + row.requests_not_done, 40);
    assert_eq!(row.errors.total, 0, "a GET cancelled by the deadline is not a failure");
    assert!(result.truncated);
    let skipped: Vec<u32> = result.skipped.iter().map(|s| s.workers).collect();
    assert_eq!(skipped, vec![2, 4]);
    assert!(
        result.skipped[0].reason.contains("safety margin"),
        "{}",
        result.skipped[0].reason
    );
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["truncated"], true);
    assert_eq!(json["results"][0]["cut_short"], true);
    assert_eq!(json["skipped"][0]["workers"], 2);
    server.shutdown().await;
}

#[test]
fn every_file_in_events_is_a_valid_request() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // `make events` writes filled copies (git-ignored) to events/filled/.
        if name == "filled" && path.is_dir() {
            continue;
        }
        assert!(name.ends_with(".json"), "events/ holds only .json events, found {name}");
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
        let plan = validate_event(value).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(plan.total_requests() > 0);
        names.push((name, plan));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let find = |n: &str| {
        &names
            .iter()
            .find(|(name, _)| name == n)
            .unwrap_or_else(|| panic!("{n} missing"))
            .1
    };

    // seed.json is the original experiment: both buckets, 1,000 objects, its workers.
    let seed = find("seed.json");
    assert_eq!(seed.buckets().len(), 2);
    assert!(seed.buckets().iter().any(|b| s3sweep::plan::is_directory_bucket(b)));
    assert!(seed.buckets().iter().any(|b| !s3sweep::plan::is_directory_bucket(b)));
    assert_eq!(seed.object_count(), 1000);
    assert_eq!(seed.keys().as_template(), "test/{i}/vectors");
    assert_eq!(seed.workers(), &[1, 2, 4, 8, 16, 17, 18, 19, 20]);
    assert_eq!(seed.pool_connections(), 20);

    // smoke.json: a few objects, two worker counts, the same buckets.
    let smoke = find("smoke.json");
    assert_eq!(smoke.buckets(), seed.buckets());
    assert!(smoke.object_count() <= 50);
    assert_eq!(smoke.workers().len(), 2);

    // local.json: the embedded server's buckets (as the emulator test and docs/lambda.md
    // use), the Express-like one a directory bucket (read through S3 Express sessions).
    let local = find("local.json");
    assert_eq!(
        local.buckets(),
        &[common::STANDARD_BUCKET.to_string(), common::EXPRESS_BUCKET.to_string()]
    );
    assert!(s3sweep::plan::is_directory_bucket(&local.buckets()[1]));
}

/// An event with `key_prefix`: the function lists the prefix before its preflight,
/// sweeps the listed keys (nothing beside the prefix), reports the listing apart, and
/// answers `TooFewKeys` naming both numbers when the prefix holds too few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_prefix_event_sweeps_the_listed_keys() {
    let bucket = "handler-prefix";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    let f = function(&server.endpoint(), 5_000).await;
    for i in 0..12u64 {
        let size = [100, 2_000, 30_000][i as usize % 3];
        server
            .store()
            .insert(bucket, &format!("lp/{i:02}"), bytes::Bytes::from(vec![b'a'; size]));
    }
    server
        .store()
        .insert(bucket, "lp2/x", bytes::Bytes::from_static(b"beside"));
    let payload =
        json!({"buckets": [bucket], "key_prefix": "lp/", "object_count": 12, "workers": [1, 4], "pool_connections": 4});
    let result = f.handle(event(payload, None)).await.unwrap();
    assert_eq!(result.listing.len(), 1);
    assert_eq!(
        (result.listing[0].keys_found, result.listing[0].bytes_total),
        (12, 4 * 32_100)
    );
    for row in &result.results {
        assert_eq!((row.ok, row.bytes), (12, 4 * 32_100), "{row:?}");
    }
    let few = json!({"buckets": [bucket], "key_prefix": "lp/", "object_count": 20, "workers": [1]});
    let d = Diagnostic::from(f.handle(event(few, None)).await.unwrap_err());
    assert_eq!(d.error_type, "TooFewKeys");
    assert!(
        d.error_message.contains("holds 12 keys") && d.error_message.contains("(20)"),
        "{}",
        d.error_message
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_result_is_kept_in_s3_and_a_failed_write_is_data() {
    let server = results_lab().server().await;
    let f = function(&server.endpoint(), 5_000).await;
    let sweep =
        |uri: &str| json!({"buckets": ["handler-bucket"], "object_count": 20, "workers": [1, 4], "results_uri": uri});

    // Two configurations, then the end: three writes of one object named by the request id.
    let result = f.handle(event(sweep("s3://results-bucket/runs"), None)).await.unwrap();
    let uri = "s3://results-bucket/runs/test-request.json";
    assert_eq!(result.results_uri.as_deref(), Some(uri));
    let writes = result.results_writes.clone().unwrap();
    assert_eq!(
        (writes.written, writes.failed, writes.complete),
        (3, 0, true),
        "{writes:?}"
    );
    let kept = kept_result(&f, uri).await;
    assert_eq!(kept.results, result.results);
    assert_eq!(kept.summary, result.summary);
    assert_eq!(kept.results_writes.unwrap().written, 2, "the writes before the last");

    // A run_id names the object, and the result records it.
    let mut named = sweep("s3://results-bucket/runs");
    named["run_id"] = json!("nightly-1");
    let result = f.handle(event(named, None)).await.unwrap();
    let uri = "s3://results-bucket/runs/nightly-1.json";
    assert_eq!(result.results_uri.as_deref(), Some(uri));
    let kept = kept_result(&f, uri).await;
    assert_eq!(kept.request.run_id.as_deref(), Some("nightly-1"));

    the_page_is_written_beside_the_result(&f, sweep("s3://results-bucket/runs")).await;

    // A destination that cannot be written: the sweep still answers, the failures counted.
    let result = f.handle(event(sweep("s3://no-such-bucket/runs"), None)).await.unwrap();
    assert_eq!(result.results.len(), 2);
    let writes = result.results_writes.unwrap();
    assert_eq!((writes.written, writes.failed), (0, 3), "{writes:?}");
    assert!(writes.errors[0].contains("NoSuchBucket"), "{:?}", writes.errors);
    assert_eq!(
        writes.status,
        s3sweep::model::WritesStatus::Failed,
        "the answer says so"
    );

    // A bad destination is a bad field, named.
    let err = f.handle(event(sweep("results-bucket/runs"), None)).await.unwrap_err();
    let d = Diagnostic::from(err);
    assert_eq!(d.error_type, "InvalidEvent");
    assert!(d.error_message.contains("`results_uri`"), "{}", d.error_message);
    server.shutdown().await;
}

/// The lab with `handler-bucket` (20 objects of 1 KiB) and an empty `results-bucket`.
fn results_lab() -> LabBuilder {
    LabBuilder::new()
        .bucket("handler-bucket", LatencyProfile::None)
        .bucket("results-bucket", LatencyProfile::None)
        .seed("handler-bucket", 20, 1024)
}

/// The result document kept at `uri`, read back through `f`'s client.
async fn kept_result(f: &Function, uri: &str) -> s3sweep::model::SweepResult {
    let bytes = s3sweep::s3::results::read_object(f.client(), &s3sweep::plan::ObjectUri::parse(uri).unwrap(), 1 << 20)
        .await
        .unwrap();
    s3sweep::model::SweepResult::from_json(std::str::from_utf8(&bytes).unwrap()).unwrap()
}

/// `request` with `results_html` (run `paged-1`): the report page of this run beside
/// the result, counted as a write.
async fn the_page_is_written_beside_the_result(f: &Function, request: serde_json::Value) {
    let mut paged = request;
    paged["run_id"] = json!("paged-1");
    paged["results_html"] = json!(true);
    let result = f.handle(event(paged, None)).await.unwrap();
    let writes = result.results_writes.clone().unwrap();
    assert_eq!(
        (writes.written, writes.failed),
        (4, 0),
        "3 of the result, 1 page: {writes:?}"
    );
    assert_eq!(writes.status, s3sweep::model::WritesStatus::Written);
    let page_uri = s3sweep::plan::ObjectUri::parse("s3://results-bucket/runs/paged-1.html").unwrap();
    let page = s3sweep::s3::results::read_object(f.client(), &page_uri, 8 << 20)
        .await
        .unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..page.len().min(200)]);
    assert!(
        page.contains("Content-Security-Policy") && page.contains("handler-bucket") && page.contains("<svg"),
        "the report page of this run"
    );
}

/// `requests_log_uri`: the function writes the request log (gzipped CSV) in S3, a line
/// per GET of each configuration; with the stack's results location set
/// (`S3SWEEP_RESULTS_URI`), a place outside it is refused, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_is_written_in_s3_under_the_results_location() {
    use std::io::Read;
    let server = results_lab().server().await;
    let endpoint = server.endpoint();
    let settings = FunctionSettings::from_lookup(|name| match name {
        ENDPOINT_ENV => Some(endpoint.to_string()),
        "S3SWEEP_RESULTS_URI" => Some("s3://results-bucket/stack".into()),
        "AWS_REGION" => Some("us-east-1".into()),
        _ => None,
    })
    .unwrap();
    let f = Function::new(settings).await.unwrap();
    let sweep = |uri: &str| json!({"buckets": ["handler-bucket"], "object_count": 20, "workers": [1, 4], "requests_log_uri": uri});
    let result = f
        .handle(event(sweep("s3://results-bucket/stack/logs"), None))
        .await
        .unwrap();
    let uri = "s3://results-bucket/stack/logs/test-request.requests.csv.gz";
    let object = s3sweep::plan::ObjectUri::parse(uri).unwrap();
    let gz = s3sweep::s3::results::read_object(f.client(), &object, 1 << 20)
        .await
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("bucket,workers,repetition,get,"), "{}", lines[0]);
    assert_eq!(result.results.len(), 2);
    for row in &result.results {
        let of_row = lines[1..]
            .iter()
            .filter(|l| l.starts_with(&format!("handler-bucket,{},{},", row.workers, row.repetition)))
            .count() as u64;
        assert_eq!(of_row, row.requests + row.retries, "{} workers", row.workers);
    }
    assert_eq!(lines.len() - 1, 40, "a line per GET");
    // Outside the stack's results location: refused, the field named.
    let err = f
        .handle(event(sweep("s3://results-bucket/elsewhere"), None))
        .await
        .unwrap_err();
    let d = Diagnostic::from(err);
    assert_eq!(d.error_type, "InvalidEvent");
    assert!(d.error_message.contains("`requests_log_uri`"), "{}", d.error_message);
    server.shutdown().await;
}

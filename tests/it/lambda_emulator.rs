//! The real `s3sweep-lambda` under the Lambda emulator (`cargo lambda watch`), invoked
//! with `cargo lambda invoke --data-file`, against `s3sweep serve` on a free loopback
//! port: events/local.json's result is checked row by row, then a malformed event
//! and an event whose objects are missing must come back as `InvalidEvent` and
//! `ObjectNotFound`, and the function's JSON logs must hold one line per configuration.
//! Then, on the same emulator, a `key_prefix` event (events/prefix.json pointed at a
//! mixed-size prefix with keys beside it) must read exactly the prefix's keys.
//! That lab serves HTTPS (the function trusts its CA through `AWS_CA_BUNDLE`) and
//! events/local.json's Express-like bucket is a directory bucket: the lab's tally must
//! show the function's one ReadOnly S3 Express session, reused across invocations.
//!
//! cargo-lambda comes from the project's own `.venv` (`make tools`, which `make test`
//! runs first), `$CARGO_LAMBDA`, or `PATH`. Without it this test fails with a message
//! saying how to install it; `S3SWEEP_SKIP_EMULATOR=1` skips it explicitly (and loudly).
//!
//! Everything it starts runs in its own process group and is killed at the end, on
//! failure too. Every wait is bounded.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use s3sweep::model::{ConfigResult, KeyRange, SweepRequest, SweepResult};
use serde_json::Value;

use crate::common::{cargo_lambda_for, run_within, Serve, EXPRESS_BUCKET, STANDARD_BUCKET};
use crate::emulator::*;

/// The result document `cargo lambda invoke` printed, read into the model's types.
fn result_of(out: &Output) -> SweepResult {
    let text = String::from_utf8_lossy(&out.stdout);
    SweepResult::from_json(&text)
        .unwrap_or_else(|e| panic!("cargo lambda invoke did not print a result document ({e}):\n{text}"))
}

/// A field as the result's JSON spells it: the same text whether the model holds a
/// string or an enum.
fn json_of<T: serde::Serialize>(field: &T) -> Value {
    serde_json::to_value(field).unwrap()
}

#[test]
fn the_function_under_cargo_lambda_watch() {
    let test_start = Instant::now();
    let Some(cargo_lambda) = cargo_lambda_for("the Lambda emulator test") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("s3sweep-lambda-emulator-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();

    // The event exactly as shipped: it names the buckets; the endpoint comes from the
    // function's environment.
    let event_path = Path::new(MANIFEST_DIR).join("events/local.json");
    let event: SweepRequest = serde_json::from_str(&std::fs::read_to_string(&event_path).unwrap()).unwrap();
    let server = seeded_lab_over_https(&event, &tmp);
    let endpoint = server.endpoint.clone();
    let ca_file = server.ca_file.clone().unwrap();
    let seeded = test_start.elapsed();

    let mut emulator = Emulator::start(&cargo_lambda, &endpoint, &tmp.join("watch.log"), Some(&ca_file));
    let ready = test_start.elapsed();

    // 1. The local event: the result document, row by row.
    let invoke_start = Instant::now();
    let out = emulator.invoke(&event_path, FIRST_INVOKE_LIMIT);
    let first_invoke = invoke_start.elapsed();
    assert!(
        out.status.success(),
        "invoking events/local.json failed:\n{}\nemulator log:\n{}",
        error_text(&out),
        emulator.log()
    );
    let result = result_of(&out);
    let lambda = the_environment_is_the_functions(&result, &endpoint);
    the_request_is_echoed(&result, &event);
    let expected = the_rows_read_every_object(&result, &event);

    the_malformed_event_is_invalid(&mut emulator, &tmp);
    missing_objects_say_how_to_seed(&mut emulator, &tmp);
    let deadline = one_log_line_per_configuration(&emulator, &expected);

    // 4b. A `key_prefix` event, on the same emulator (no second cold start).
    let prefix_invoke = Instant::now();
    a_key_prefix_event(&mut emulator, &endpoint, &ca_file, &tmp);
    let prefix_invoke = prefix_invoke.elapsed();

    // 4c. CloudWatch metrics in embedded metric format, on the same emulator.
    metrics_are_the_rows(&mut emulator, &event_path, &tmp);

    // 5. The lab's tally: seeding's (ReadWrite) session, and the function's one ReadOnly
    // session, kept for its life across the three invocations; one TLS handshake per
    // connection, none failed.
    drop(emulator);
    one_session_and_no_failed_handshake(server);
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "emulator test: server+seed {} ms, emulator ready {} ms, first invocation {} ms, \
         key_prefix seed+invocation {} ms, total {} ms; \
         deadline sent by cargo lambda watch: {:?} (remaining_ms_at_start {:?})",
        seeded.as_millis(),
        (ready - seeded).as_millis(),
        first_invoke.as_millis(),
        prefix_invoke.as_millis(),
        test_start.elapsed().as_millis(),
        deadline,
        lambda.remaining_ms_at_start
    );
}

/// `s3sweep serve --tls` with events/local.json's two buckets (Standard-like and
/// Express-like), each seeded with the event's objects.
fn seeded_lab_over_https(event: &SweepRequest, tmp: &Path) -> Serve {
    assert_eq!(
        &event.buckets,
        &[STANDARD_BUCKET, EXPRESS_BUCKET],
        "events/local.json changed: update this test"
    );
    let server = Serve::start(
        &[
            &format!("{STANDARD_BUCKET}=standard"),
            &format!("{EXPRESS_BUCKET}=express"),
        ],
        &["--tls"],
    );
    assert!(server.endpoint.starts_with("https://"), "{}", server.endpoint);
    for bucket in &event.buckets {
        let manifest = tmp.join(format!("manifest-{bucket}.json"));
        server.seed(bucket, u64::from(event.object_count), OBJECT_SIZE_BYTES, &manifest);
    }
    server
}

/// Step 1 of [`the_function_under_cargo_lambda_watch`]: the result's environment is the
/// function's (runner, endpoint from its environment, a cold first invocation, its
/// init time); its Lambda block is returned.
fn the_environment_is_the_functions<'r>(
    result: &'r SweepResult,
    endpoint: &str,
) -> &'r s3sweep::model::LambdaEnvironment {
    assert_eq!(result.schema, "s3sweep.result/v1");
    let env = &result.environment;
    assert_eq!(json_of(&env.runner), "lambda");
    assert_eq!(
        env.endpoint.as_deref(),
        Some(endpoint),
        "the endpoint is the function's, from its environment"
    );
    let lambda = env.lambda.as_ref().expect("a Lambda block in the environment");
    assert_eq!(lambda.function_name.as_deref(), Some("s3sweep-lambda"));
    assert!(lambda.cold_start, "first invocation of this instance");
    assert!(lambda.memory_size_mb.unwrap() > 0);
    let architecture = json_of(&lambda.architecture);
    assert!(architecture == "x86_64" || architecture == "arm64", "{architecture}");
    assert!(lambda.request_id.as_deref().is_some_and(|id| !id.is_empty()));
    // The binary timed its own init (main to ready: logging, settings, the S3 client).
    let init_us = lambda.init_us.expect("the function's init time");
    assert!((100..10_000_000).contains(&init_us), "init {init_us} us");
    lambda
}

/// Step 1: the request is echoed as the event gave it.
fn the_request_is_echoed(result: &SweepResult, event: &SweepRequest) {
    let (buckets, workers) = (&event.buckets, &event.workers);
    let request = &result.request;
    assert_eq!(&request.buckets, buckets, "request.buckets is echoed");
    assert_eq!(
        request.object_count, event.object_count,
        "request.object_count is echoed"
    );
    assert_eq!(&request.workers, workers, "request.workers is echoed");
    assert_eq!(
        request.pool_connections, event.pool_connections,
        "request.pool_connections is echoed"
    );
    assert_eq!(
        request.key_template, event.key_template,
        "request.key_template is echoed"
    );
}

/// Step 1: one row per bucket and worker count, in order, each reading every object
/// once without an error; Standard-like first bytes slower than Express-like ones; a
/// summary per bucket. Returns the (bucket, workers) of each row.
fn the_rows_read_every_object(result: &SweepResult, event: &SweepRequest) -> Vec<(String, u32)> {
    let (buckets, workers) = (&event.buckets, &event.workers);
    assert!(!result.truncated);
    assert_eq!(result.skipped.len(), 0);
    let rows = &result.results;
    assert_eq!(
        rows.len(),
        buckets.len() * workers.len(),
        "one row per bucket x worker count"
    );
    let mut expected = Vec::new();
    for b in buckets {
        for w in workers {
            expected.push((b.clone(), *w));
        }
    }
    for (row, (bucket, w)) in rows.iter().zip(&expected) {
        let at = format!("row {bucket} x {w}");
        assert_eq!(&row.bucket, bucket, "{at}");
        assert_eq!(row.workers, *w, "{at}");
        a_row_reads_every_object(row, &at, event);
    }
    // The two latency profiles are visible through the function: Standard-like first
    // bytes (median 16 ms) are slower than Express-like ones (median 4 ms).
    let p50 = |bucket: &str| {
        rows.iter()
            .find(|r| r.bucket == bucket && r.workers == 1)
            .map(|r| r.ttfb_ms.p50)
            .unwrap()
    };
    assert!(p50(STANDARD_BUCKET) > p50(EXPRESS_BUCKET), "{result:?}");
    let summary = &result.summary;
    assert_eq!(summary.len(), buckets.len());
    for (s, bucket) in summary.iter().zip(buckets) {
        assert_eq!(&s.bucket, bucket);
        assert!(workers.contains(&s.best_workers));
        assert_eq!(s.errors_total, 0);
    }
    expected
}

/// One row of step 1 (`at` names it): every object read once, whole, no error, and
/// figures that agree with each other.
fn a_row_reads_every_object(row: &ConfigResult, at: &str, event: &SweepRequest) {
    let object_count = u64::from(event.object_count);
    assert_eq!(row.repetition, 1, "{at}");
    assert_eq!(row.pool_connections, event.pool_connections, "{at}");
    assert_eq!(row.requests, object_count, "{at}");
    assert_eq!(row.ok, object_count, "{at}: {row:?}");
    assert_eq!(row.errors.total, 0, "{at}: {row:?}");
    assert_eq!(row.bytes, object_count * OBJECT_SIZE_BYTES, "{at}");
    let wall_ms = row.wall_ms;
    assert!(wall_ms > 0.0, "{at}");
    let rate = row.objects_per_s;
    assert!(
        approx(rate, object_count as f64 / (wall_ms / 1000.0), 0.01),
        "{at}: objects_per_s {rate} vs wall {wall_ms} ms"
    );
    let ttfb = &row.ttfb_ms;
    assert_eq!(ttfb.count, object_count, "{at}");
    assert!(ttfb.p50 > 0.0, "{at}");
    assert!(ttfb.p50 <= ttfb.p99, "{at}");
    assert!(ttfb.p99 <= ttfb.max, "{at}");
    assert!(row.ttlb_ms.p50 >= ttfb.p50, "{at}");
    assert!(row.cpu_ms_per_get > 0.0, "{at}");
}

/// Step 2: a malformed event, which also tries to choose the endpoint, fails as
/// `InvalidEvent` naming every bad field.
fn the_malformed_event_is_invalid(emulator: &mut Emulator, tmp: &Path) {
    let bad = tmp.join("bad-event.json");
    std::fs::write(
        &bad,
        r#"{"buckets": ["Not_A_Bucket"], "workers": [0, 4], "object_count": "many", "endpoint": "http://169.254.169.254"}"#,
    )
    .unwrap();
    let out = emulator.invoke(&bad, INVOKE_LIMIT);
    let text = error_text(&out);
    assert!(!out.status.success(), "a malformed event must fail: {text}");
    assert!(text.contains("Error: InvalidEvent"), "{text}");
    for field in ["`buckets[0]`", "`workers[0]`", "`object_count`", "`endpoint`"] {
        assert!(text.contains(field), "{field} not named in: {text}");
    }
}

/// Step 3: objects that do not exist: the sweep cannot start, and says how to fix it.
fn missing_objects_say_how_to_seed(emulator: &mut Emulator, tmp: &Path) {
    let missing = tmp.join("missing-event.json");
    std::fs::write(
        &missing,
        serde_json::json!({"buckets": [EXPRESS_BUCKET], "key_template": "absent/{i}", "object_count": 5}).to_string(),
    )
    .unwrap();
    let out = emulator.invoke(&missing, INVOKE_LIMIT);
    let text = error_text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("Error: ObjectNotFound"), "{text}");
    assert!(text.contains("s3sweep seed"), "{text}");
}

/// Step 4: the function's JSON logs: one line per finished configuration (`expected`,
/// in order), and the invalid event logged. Returns the deadline the sweep started with.
fn one_log_line_per_configuration(emulator: &Emulator, expected: &[(String, u32)]) -> Option<Value> {
    let logs = emulator.json_logs();
    let finished: Vec<&Value> = logs
        .iter()
        .filter(|l| l["fields"]["message"] == "configuration finished")
        .collect();
    assert_eq!(
        finished.len(),
        expected.len(),
        "one log line per configuration; log:\n{}",
        emulator.log()
    );
    for (line, (bucket, w)) in finished.iter().zip(expected) {
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["fields"]["bucket"], bucket.as_str());
        assert_eq!(line["fields"]["workers"].as_u64(), Some(u64::from(*w)));
    }
    assert!(
        logs.iter().any(|l| l["fields"]["error_type"] == "InvalidEvent"),
        "the invalid event is logged"
    );
    logs.iter()
        .find(|l| l["fields"]["message"] == "sweep starting")
        .map(|l| l["fields"]["deadline_unix_ms"].clone())
}

/// Step 5: the lab's tally once stopped: seeding's (ReadWrite) session and the
/// function's one ReadOnly session; no TLS handshake failed.
fn one_session_and_no_failed_handshake(server: Serve) {
    let stopped = server.stop();
    let sessions = stopped.stderr_line("S3 Express sessions:");
    assert!(sessions.contains("created ReadOnly=1 ReadWrite=1"), "{sessions}");
    assert!(
        sessions.contains("refused expired=0 invalid=0 signature=0"),
        "{sessions}"
    );
    let handshakes = stopped.stderr_line("TLS handshakes:");
    assert!(handshakes.ends_with(" 0 failed"), "{handshakes}");
}

/// Issue 38: events/local.json at 2 and 4 workers with `metrics_namespace` makes the
/// function log one embedded-metric-format line per configuration: each valid EMF
/// (tests/emf/schema.json and validate.py, with the project's .venv Python, which has
/// cfn-lint's jsonschema), in that namespace, under the row's bucket, workers and the
/// function's memory, with the row's figures (the lines kept in the file
/// `S3SWEEP_KEEP_EMF` names, when set).
fn metrics_are_the_rows(emulator: &mut Emulator, event_path: &Path, tmp: &Path) {
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(event_path).unwrap()).unwrap();
    event["workers"] = serde_json::json!([2, 4]);
    event["object_count"] = serde_json::json!(40);
    event["metrics_namespace"] = serde_json::json!("s3sweep/test");
    let path = tmp.join("metrics-event.json");
    std::fs::write(&path, event.to_string()).unwrap();
    let out = emulator.invoke(&path, INVOKE_LIMIT);
    assert!(out.status.success(), "{}\n{}", error_text(&out), emulator.log());
    let result = result_of(&out);
    let lines: Vec<Value> = emulator
        .json_logs()
        .into_iter()
        .filter(|l| l.get("_aws").is_some())
        .collect();
    assert_eq!(
        lines.len(),
        result.results.len(),
        "one EMF line per row:\n{}",
        emulator.log()
    );
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    if let Ok(keep) = std::env::var("S3SWEEP_KEEP_EMF") {
        std::fs::write(keep, text.join("\n")).unwrap();
    }
    let checked = validate_emf(&text.join("\n"));
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stdout));
    let memory = result
        .environment
        .lambda
        .as_ref()
        .and_then(|l| l.memory_size_mb)
        .unwrap();
    for (line, row) in lines.iter().zip(&result.results) {
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "s3sweep/test");
        assert_eq!(
            directive["Dimensions"],
            serde_json::json!([["Bucket", "Workers", "MemoryMB"]])
        );
        assert_eq!(line["Bucket"], row.bucket.as_str());
        assert_eq!(line["Workers"], row.workers.to_string().as_str());
        assert_eq!(line["MemoryMB"], memory.to_string().as_str());
        let figures = [
            ("ObjectsPerSecond", row.objects_per_s),
            ("FirstByteP50", row.ttfb_ms.p50),
            ("FirstByteP99", row.ttfb_ms.p99),
            ("Errors", row.errors.total as f64),
            ("Requests", row.requests as f64),
            ("BodyBytesPerSecond", row.bytes as f64 * 1000.0 / row.wall_ms),
        ];
        for (name, want) in figures {
            let got = line[name].as_f64().unwrap_or_else(|| panic!("{name} in {line}"));
            assert!(approx(got, want, 1e-9), "{name}: {got} in the line, {want} in the row");
        }
    }
}

/// tests/emf/validate.py over `lines`, with the project's .venv Python
/// (`$S3SWEEP_SAM_PYTHON`, as `make test` sets it).
fn validate_emf(lines: &str) -> Output {
    use std::io::Write;
    let python = std::env::var_os("S3SWEEP_SAM_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(MANIFEST_DIR).join(".venv/bin/python"));
    assert!(python.is_file(), "no {} (make tools installs it)", python.display());
    let mut child = Command::new(python)
        .arg(Path::new(MANIFEST_DIR).join("tests/emf/validate.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `s3sweep seed` into the Standard-like bucket of the lab at `endpoint` (its CA
/// `ca_file`): `count` objects `template` of `sizes` (cycled), its manifest under `tmp`.
fn seed_sizes(endpoint: &str, ca_file: &Path, tmp: &Path, template: &str, count: u64, sizes: &str) {
    let out = run_within(
        "s3sweep seed",
        Command::new(S3SWEEP)
            .args(["seed", "--endpoint", endpoint, "--bucket", STANDARD_BUCKET])
            .args(["--key-template", template, "--count", &count.to_string()])
            .args(["--sizes", sizes])
            .arg("--ca-file")
            .arg(ca_file)
            .arg("--manifest")
            .arg(tmp.join(format!("manifest-{}.json", template.replace(['/', '{', '}'], "_")))),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "seed: {}", String::from_utf8_lossy(&out.stderr));
}

/// events/prefix.json pointed at the lab: `mixed/` in the Standard-like bucket holds
/// 30 objects of three sizes (`seed --sizes`), with keys of 7 bytes beside it on both
/// sides in the listing's order (`mixed-{i}`, sharing its first characters, and the
/// sibling prefix `mixed2/`). Every row must read exactly the prefix's keys (its
/// exact bytes, its size percentiles), listed once (one ListObjectsV2 page), and the
/// function must log the listing.
fn a_key_prefix_event(emulator: &mut Emulator, endpoint: &str, ca_file: &Path, tmp: &Path) {
    const SIZES: [u64; 3] = [1000, 46_080, 200_000];
    const COUNT: u64 = 30;
    let seed = |template: &str, count: u64, sizes: &str| seed_sizes(endpoint, ca_file, tmp, template, count, sizes);
    seed("mixed/{i}", COUNT, "1000,46080,200000");
    seed("mixed-{i}", 2, "7");
    seed("mixed2/{i}", 2, "7");

    let shipped = Path::new(MANIFEST_DIR).join("events/prefix.json");
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&shipped).unwrap()).unwrap();
    assert!(event["key_prefix"].is_string(), "events/prefix.json changed: {event}");
    event["buckets"] = serde_json::json!([STANDARD_BUCKET]);
    event["key_prefix"] = serde_json::json!("mixed/");
    event["object_count"] = serde_json::json!(COUNT);
    event["workers"] = serde_json::json!([1, 4]);
    event["pool_connections"] = serde_json::json!(4);
    let path = tmp.join("prefix-event.json");
    std::fs::write(&path, event.to_string()).unwrap();
    let out = emulator.invoke(&path, INVOKE_LIMIT);
    assert!(
        out.status.success(),
        "invoking the key_prefix event failed:\n{}\nemulator log:\n{}",
        error_text(&out),
        emulator.log()
    );
    let result = result_of(&out);

    let bytes: u64 = (0..COUNT).map(|i| SIZES[i as usize % 3]).sum();
    assert_eq!(result.request.key_prefix.as_deref(), Some("mixed/"));
    assert!(!result.truncated);
    assert_eq!(result.listing.len(), 1);
    let l = &result.listing[0];
    assert_eq!(l.bucket, STANDARD_BUCKET);
    assert_eq!((l.keys_asked, l.keys_found), (COUNT as u32, COUNT as u32), "{l:?}");
    assert_eq!(l.bytes_total, bytes, "{l:?}");
    assert_eq!(l.list_requests, 1, "listed once for both configurations: {l:?}");
    assert!(!l.out_of_time);
    assert_eq!(result.results.len(), 2);
    for (row, workers) in result.results.iter().zip([1u32, 4]) {
        let at = format!("key_prefix row, {workers} workers");
        assert_eq!(row.workers, workers, "{at}");
        assert_eq!(
            (row.requests, row.ok, row.errors.total),
            (COUNT, COUNT, 0),
            "{at}: {row:?}"
        );
        assert_eq!(row.bytes, bytes, "{at}: exactly the prefix's bytes, nothing beside it");
        let spread = row
            .axes
            .object_size_bytes
            .expect("a listed sweep reports its sizes")
            .spread();
        assert_eq!(
            (spread.min, spread.p50, spread.p99, spread.max),
            (1000, 46_080, 200_000, 200_000),
            "{at}"
        );
    }
    let logs = emulator.json_logs();
    let listed = logs
        .iter()
        .find(|l| l["fields"]["message"] == "listed the keys to sweep")
        .unwrap_or_else(|| panic!("no listing log line; log:\n{}", emulator.log()));
    assert_eq!(listed["fields"]["keys"].as_u64(), Some(COUNT), "{listed}");
    assert_eq!(listed["fields"]["requests"].as_u64(), Some(1), "{listed}");
    assert_eq!(listed["fields"]["prefix"], "mixed/", "{listed}");
}

/// The fan-out under the emulator: a coordinator with N=3 invokes its own function
/// through the emulator's Invoke API (`AWS_ENDPOINT_URL_LAMBDA`); the merged counts
/// must equal the sum of the children's. A second emulator breaks child 1's event
/// (test-only `S3SWEEP_FANOUT_TEST_BREAK_CHILD`), so that invocation really fails with
/// `InvalidEvent`: the result names it and still merges the other two. A child event
/// asking to fan out again, and more invocations than `FanoutMax`, are rejected.
#[test]
fn fan_out_under_cargo_lambda_watch() {
    let test_start = Instant::now();
    let Some(cargo_lambda) = cargo_lambda_for("the fan-out emulator test") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("s3sweep-fanout-emulator-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let server = Serve::start(&["express-like=express"], &[]);
    let endpoint = server.endpoint.clone();
    server.seed(
        "express-like",
        FAN_OBJECTS,
        OBJECT_SIZE_BYTES,
        &tmp.join("manifest.json"),
    );

    let (mut emulator, mut broken) = fan_out_emulators(&cargo_lambda, &endpoint, &tmp);

    let event_path = tmp.join("fanout.json");
    let event = serde_json::json!({
        "buckets": ["express-like"],
        "object_count": FAN_OBJECTS,
        "workers": [1, 4],
        "pool_connections": 4,
        "fanout": {"invocations": FAN_N, "start_delay_ms": 1500, "split": "shard"}
    });
    std::fs::write(&event_path, event.to_string()).unwrap();
    let invoke = |emulator: &mut Emulator, limit: Duration| -> SweepResult {
        let out = emulator.invoke(&event_path, limit);
        assert!(
            out.status.success(),
            "fan-out failed:\n{}\nemulator log:\n{}",
            error_text(&out),
            emulator.log()
        );
        result_of(&out)
    };

    // 1. N=3, all children well: exact merged counts.
    let result = invoke(&mut emulator, FIRST_INVOKE_LIMIT);
    every_child_reads_its_shard(&result);
    for (k, row) in result.results.iter().enumerate() {
        a_merged_row_adds_up_its_childrens(&result, k, row);
    }

    a_nested_or_oversized_fan_out_is_refused(&mut emulator, &tmp);

    // 4. Child 1's invocation fails: named, and the other two still merged. This run
    // also gives every configuration a 1 s slot, so children start each one together.
    const SLOT_MS: f64 = 1000.0;
    let mut slotted = event.clone();
    slotted["fanout"]["slot_ms"] = serde_json::json!(SLOT_MS as u64);
    std::fs::write(&event_path, slotted.to_string()).unwrap();
    let result = invoke(&mut broken, FIRST_INVOKE_LIMIT);
    a_failed_child_is_named_and_the_rest_merged(&result, SLOT_MS);
    std::fs::write(
        tmp.join("../s3sweep-fanout-last.json"),
        serde_json::to_string(&result).unwrap(),
    )
    .ok();

    drop(emulator);
    drop(broken);
    drop(server);
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("fan-out emulator test: {} ms", test_start.elapsed().as_millis());
}

/// The fan-out test's two emulators: one that fans out to at most 3, and one whose
/// child 1 fails (the function's test hook).
fn fan_out_emulators(cargo_lambda: &Path, endpoint: &str, tmp: &Path) -> (Emulator, Emulator) {
    let vars: &[(&str, &str)] = &[
        ("S3SWEEP_FANOUT_FUNCTION", "s3sweep-lambda"),
        ("S3SWEEP_FANOUT_MAX", "3"),
    ];
    let emulator = Emulator::start_with(cargo_lambda, endpoint, &tmp.join("watch.log"), Some(4), vars);
    let broken_vars: &[(&str, &str)] = &[
        ("S3SWEEP_FANOUT_FUNCTION", "s3sweep-lambda"),
        ("S3SWEEP_FANOUT_TEST_BREAK_CHILD", "1"),
    ];
    let broken = Emulator::start_with(
        cargo_lambda,
        endpoint,
        &tmp.join("watch-broken.log"),
        Some(4),
        broken_vars,
    );
    (emulator, broken)
}

/// The fan-out tests' objects and invocations.
const FAN_OBJECTS: u64 = 60;
const FAN_N: u32 = 3;

/// Step 1 of [`fan_out_under_cargo_lambda_watch`]: every child well, each cold, each
/// reading its contiguous shard of the keys, one merged row per configuration.
fn every_child_reads_its_shard(result: &SweepResult) {
    assert_eq!(result.schema, "s3sweep.result/v1");
    let fanout = result.fanout.as_ref().expect("a fan-out block");
    assert_eq!(fanout.function_name, "s3sweep-lambda");
    assert_eq!(fanout.invocations, FAN_N);
    assert_eq!(fanout.children_ok, FAN_N, "{fanout:?}");
    assert_eq!(fanout.children_failed, 0);
    let children = &fanout.children;
    assert_eq!(children.len(), FAN_N as usize);
    let mut covered = Vec::new();
    for (i, c) in children.iter().enumerate() {
        assert_eq!(c.index as usize, i);
        assert_eq!(json_of(&c.status), "ok");
        assert_eq!(
            c.cold_start,
            Some(true),
            "each child is the first invocation of its instance: {c:?}"
        );
        covered.push(c.key_range);
    }
    assert_eq!(
        covered,
        [(0, 20), (20, 40), (40, 60)].map(|(start, end)| KeyRange { start, end }),
        "contiguous shards of the keys"
    );
    assert_eq!(result.results.len(), 2, "one merged row per configuration");
}

/// Step 1: merged row `k` adds up its children's rows (each object once, histograms
/// merged), spans their common window, and its first configuration began at the shared
/// start.
fn a_merged_row_adds_up_its_childrens(result: &SweepResult, k: usize, row: &ConfigResult) {
    let fanout = result.fanout.as_ref().expect("a fan-out block");
    let children = &fanout.children;
    let workers = [1u32, 4][k];
    let start_unix_ms = fanout.start_unix_ms as f64;
    let at = format!("merged row {workers} workers");
    assert_eq!(row.workers, workers, "{at}");
    let child_rows: Vec<&ConfigResult> = children.iter().map(|c| &c.results[k]).collect();
    let sum = |f: fn(&ConfigResult) -> u64| child_rows.iter().copied().map(f).sum::<u64>();
    assert_eq!(row.requests, sum(|r| r.requests), "{at}");
    assert_eq!(row.requests, FAN_OBJECTS, "{at}: each object once");
    assert_eq!(row.ok, FAN_OBJECTS, "{at}: {row:?}");
    assert_eq!(row.ok, sum(|r| r.ok), "{at}");
    assert_eq!(row.bytes, sum(|r| r.bytes), "{at}");
    assert_eq!(row.bytes, FAN_OBJECTS * OBJECT_SIZE_BYTES, "{at}");
    assert_eq!(row.errors.total, 0, "{at}");
    assert_eq!(row.ttfb_ms.count, sum(|r| r.ttfb_ms.count), "{at}: histograms merged");
    assert!(row.child.is_none(), "{at}: no serialized histograms in merged rows");
    // The common window spans every child's own window.
    let measures: Vec<_> = child_rows
        .iter()
        .map(|r| r.child.as_ref().expect("a child's row has its measure"))
        .collect();
    let starts: Vec<f64> = measures.iter().map(|m| m.started_unix_ms).collect();
    let ends: Vec<f64> = measures.iter().map(|m| m.finished_unix_ms).collect();
    let window = ends.iter().cloned().fold(f64::MIN, f64::max) - starts.iter().cloned().fold(f64::MAX, f64::min);
    let wall = row.wall_ms;
    assert!(approx(wall, window, 0.001), "{at}: wall {wall} vs window {window}");
    for (r, m) in child_rows.iter().zip(&measures) {
        assert!(r.wall_ms <= wall + 0.01, "{at}");
        assert!(m.histograms.is_none(), "{at}: kept rows drop histograms");
    }
    let rate = row.objects_per_s;
    assert!(approx(rate, FAN_OBJECTS as f64 / (wall / 1000.0), 0.01), "{at}: {rate}");
    let config = &fanout.configurations[k];
    assert_eq!(config.children, FAN_N, "{at}");
    assert_eq!(config.workers_total, FAN_N * workers, "{at}");
    if k == 0 {
        // Everyone waited for the shared start before the first timed phase.
        for s in &starts {
            assert!(
                *s >= start_unix_ms - 1.0,
                "{at}: a child started at {s}, before {start_unix_ms}"
            );
        }
        assert!(config.start_spread_ms < 1000.0, "{at}: {config:?}");
    }
}

/// Steps 2 and 3: a child event asking to fan out again, and more invocations than
/// FanoutMax (3 here), are refused as `InvalidEvent`.
fn a_nested_or_oversized_fan_out_is_refused(emulator: &mut Emulator, tmp: &Path) {
    // 2. A child event asking to fan out again is rejected.
    let nested = tmp.join("nested.json");
    std::fs::write(
        &nested,
        r#"{"buckets": ["express-like"], "object_count": 6, "from_coordinator": {"role": "child"}, "fanout": {"invocations": 2}}"#,
    )
    .unwrap();
    let out = emulator.invoke(&nested, INVOKE_LIMIT);
    let text = error_text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("Error: InvalidEvent"), "{text}");
    assert!(
        text.contains("`fanout`") && text.contains("never fans out again"),
        "{text}"
    );

    // 3. More invocations than FanoutMax (3 here).
    let over = tmp.join("over.json");
    std::fs::write(
        &over,
        r#"{"buckets": ["express-like"], "object_count": 6, "fanout": {"invocations": 4}}"#,
    )
    .unwrap();
    let out = emulator.invoke(&over, INVOKE_LIMIT);
    let text = error_text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("`fanout.invocations`") && text.contains("FanoutMax"),
        "{text}"
    );
}

/// Step 4: child 1's invocation failed: named with its error, the other two merged, and
/// each configuration started in its slot of `slot_ms`.
fn a_failed_child_is_named_and_the_rest_merged(result: &SweepResult, slot_ms: f64) {
    let fanout = result.fanout.as_ref().expect("a fan-out block");
    assert_eq!(fanout.children_ok, 2, "{fanout:?}");
    assert_eq!(fanout.children_failed, 1);
    let failed = &fanout.children[1];
    assert_eq!(json_of(&failed.status), "failed");
    let error = failed.error.as_ref().unwrap_or_else(|| panic!("no error: {failed:?}"));
    assert_eq!(json_of(&error.kind), "function_error", "{failed:?}");
    assert_eq!(error.error_type.as_deref(), Some("InvalidEvent"), "{failed:?}");
    assert!(error.message.contains("broken_by_test_hook"), "{failed:?}");
    let survivors = FAN_OBJECTS - FAN_OBJECTS / u64::from(FAN_N);
    for row in &result.results {
        assert_eq!(row.requests, survivors, "{row:?}");
        assert_eq!(row.ok, survivors, "{row:?}");
    }
    let start_unix_ms = fanout.start_unix_ms as f64;
    for (k, config) in fanout.configurations.iter().enumerate() {
        assert_eq!(config.children, 2);
        let slot_start = start_unix_ms + k as f64 * slot_ms;
        let first = config.first_start_unix_ms;
        assert!(
            first >= slot_start - 1.0,
            "configuration {k} started at {first}, before its slot {slot_start}"
        );
        assert!(config.start_spread_ms < 500.0, "configuration {k}: {config:?}");
    }
}

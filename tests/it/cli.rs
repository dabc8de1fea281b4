//! The `s3sweep` binary as a user runs it: `serve`, `seed`, `run`, `local`, and bad
//! input. Each test starts its own server on a free loopback port and kills it after.

use std::process::Command;

use crate::common::{run_bounded, Serve, BIN, EXPRESS_BUCKET, STANDARD_BUCKET};

fn serve(buckets: &[&str]) -> Serve {
    let serve = Serve::start(buckets, &[]);
    let creds = serve.next_line();
    assert!(creds.contains("s3sweep-local-secret"), "{creds}");
    serve
}

fn run(args: &[&str]) -> std::process::Output {
    run_bounded(Command::new(BIN).args(args))
}

#[test]
fn seed_then_run_prints_the_result_json() {
    let server = serve(&["cli-bucket=express"]);
    let out = run(&[
        "seed",
        "--bucket",
        "cli-bucket",
        "--count",
        "30",
        "--size",
        "2048",
        "--endpoint",
        &server.endpoint,
        "--manifest",
        &std::env::temp_dir()
            .join(format!("s3sweep-cli-{}.json", std::process::id()))
            .display()
            .to_string(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote 30 objects"));

    // A second seed skips every key: nothing is overwritten.
    let out = run(&[
        "seed",
        "--bucket",
        "cli-bucket",
        "--count",
        "30",
        "--size",
        "2048",
        "--endpoint",
        &server.endpoint,
        "--manifest",
        &std::env::temp_dir()
            .join(format!("s3sweep-cli-{}.json", std::process::id()))
            .display()
            .to_string(),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("wrote 0 objects"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let event = std::env::temp_dir().join(format!("s3sweep-cli-event-{}.json", std::process::id()));
    std::fs::write(
        &event,
        r#"{"buckets": ["cli-bucket"], "object_count": 30, "workers": [1, 8]}"#,
    )
    .unwrap();
    let out = run(&[
        "run",
        "--event",
        &event.display().to_string(),
        "--endpoint",
        &server.endpoint,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is the result JSON");
    assert_eq!(result["schema"], "s3sweep.result/v1");
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["ok"], 30);
        assert_eq!(row["bytes"], 30 * 2048);
        assert_eq!(row["errors"]["total"], 0);
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("bucket cli-bucket"));
    let _ = std::fs::remove_file(event);
}

#[test]
fn bad_event_names_every_bad_field() {
    let event = std::env::temp_dir().join(format!("s3sweep-bad-event-{}.json", std::process::id()));
    std::fs::write(
        &event,
        r#"{"buckets": ["UPPER"], "workers": [0], "object_count": "many", "extra": 1}"#,
    )
    .unwrap();
    let out = run(&[
        "run",
        "--event",
        &event.display().to_string(),
        "--endpoint",
        "http://127.0.0.1:9",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for field in ["buckets[0]", "workers[0]", "object_count", "extra"] {
        assert!(err.contains(field), "{field} not named in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_file(event);
}

#[test]
fn run_against_a_missing_bucket_fails_with_advice() {
    let server = serve(&[]);
    let event = std::env::temp_dir().join(format!("s3sweep-missing-{}.json", std::process::id()));
    std::fs::write(
        &event,
        r#"{"buckets": ["no-such-bucket"], "object_count": 3, "workers": [1]}"#,
    )
    .unwrap();
    let out = run(&[
        "run",
        "--event",
        &event.display().to_string(),
        "--endpoint",
        &server.endpoint,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BucketNotFound"), "{err}");
    let _ = std::fs::remove_file(event);
}

#[test]
fn advice_after_an_empty_bucket_carries_the_endpoint_given() {
    let server = serve(&["my-bucket=standard"]);
    let out = run(&[
        "run",
        "--bucket",
        "my-bucket",
        "--objects",
        "3",
        "--workers",
        "1",
        "--endpoint",
        &server.endpoint,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Run as written, the suggested seed writes to the same endpoint, not to AWS.
    let seed = format!("`s3sweep seed --bucket my-bucket --endpoint {}`", server.endpoint);
    assert!(err.contains(&seed), "{err}");
}

/// The closing line's GET count is every GET the sweeps' sessions sent: each row's timed
/// requests, retries and warm-up attempts (the line once counted the client's own
/// transport, which sends none since sweeps send through sessions: "0 GETs", and the
/// whole server CPU divided by it).
fn assert_server_cpu_counts_every_get(tables: &str, rows: &[serde_json::Value]) {
    let line = tables.lines().find(|l| l.starts_with("embedded server CPU:")).unwrap();
    let count = |l: &str| -> Option<u64> { l.split_once(" GETs incl")?.0.rsplit_once('(')?.1.parse().ok() };
    let gets = count(line).unwrap_or_else(|| panic!("no GET count in {line:?}"));
    let sent: u64 = rows
        .iter()
        .map(|r| {
            let n = |v: &serde_json::Value| v.as_u64().unwrap();
            n(&r["requests"]) + n(&r["retries"]) + n(&r["warmup"]["attempts"])
        })
        .sum();
    assert_eq!(gets, sent, "{line}");
    let ms_per_get: f64 = line
        .split_once("CPU: ")
        .unwrap()
        .1
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms_per_get < 20.0, "{line}");
}

/// The demo's directory bucket (`local`'s Express-like bucket).

#[test]
fn local_runs_the_demo_end_to_end_over_https() {
    let json = std::env::temp_dir().join(format!("s3sweep-local-{}.json", std::process::id()));
    let out = run(&[
        "local",
        "--tls",
        "--objects",
        "40",
        "--workers",
        "1,8",
        "--size",
        "4096",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tables = String::from_utf8_lossy(&out.stdout);
    assert!(tables.contains("bucket standard-like"), "{tables}");
    assert!(tables.contains("bucket express-like"), "{tables}");
    assert!(tables.contains("embedded server CPU"), "{tables}");
    assert!(tables.contains("TLS handshakes (one per connection)"), "{tables}");
    assert!(tables.contains("CreateSession: 1 ReadOnly"), "{tables}");
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["environment"]["runner"], "local");
    assert!(result["environment"]["endpoint"]
        .as_str()
        .unwrap()
        .starts_with("https://127.0.0.1:"));
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r["ok"] == 40 && r["bytes"] == 40 * 4096));
    assert_server_cpu_counts_every_get(&tables, rows);
    // The directory bucket's first warm-up created the sweep's one (ReadOnly) session.
    let express = rows.iter().find(|r| r["bucket"] == EXPRESS_BUCKET).unwrap();
    assert_eq!(express["warmup"]["session_requests"], 1, "{express}");
    // The first configuration's warm-up opened the connections, each with its TLS
    // handshake (the next configurations reuse them).
    let first = &rows[0];
    assert_eq!(
        first["warmup"]["tls_handshakes"], first["warmup"]["connections_opened"],
        "{first}"
    );
    assert!(first["warmup"]["tls_handshakes"].as_u64().unwrap() > 0, "{first}");
    assert!(
        first["warmup"]["tls_handshake_ms"]["p50"].as_f64().unwrap() > 0.0,
        "{first}"
    );
    // Express-like is the faster bucket at one worker.
    let wall = |bucket: &str, w: u64| {
        rows.iter()
            .find(|r| r["bucket"] == bucket && r["workers"] == w)
            .unwrap()["wall_ms"]
            .as_f64()
            .unwrap()
    };
    assert!(wall(EXPRESS_BUCKET, 1) < wall(STANDARD_BUCKET, 1));
    let _ = std::fs::remove_file(json);
}

#[test]
fn bad_serve_flags_are_errors() {
    let out = run(&[
        "serve",
        "--port",
        "0",
        "--bucket",
        "Bad_Name=express",
        "--bucket",
        "fine-name=slow",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Bad_Name"), "{err}");
    assert!(err.contains("slow"), "{err}");
}

#[test]
fn local_prints_verdicts_recommendations_and_the_comparison() {
    let json = std::env::temp_dir().join(format!("s3sweep-diagnose-{}.json", std::process::id()));
    let out = run(&[
        "local",
        "--runtime-threads",
        "1",
        "--objects",
        "40",
        "--workers",
        "1,8",
        "--size",
        "4096",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tables = String::from_utf8_lossy(&out.stdout);
    let comparison = format!("{EXPRESS_BUCKET} vs {STANDARD_BUCKET}");
    for needle in [
        "verdict",
        "in flight",
        "verdicts: ",
        "model: R = ",
        "predicted: ",
        "recommended: ",
        &comparison,
    ] {
        assert!(tables.contains(needle), "{needle:?} missing in\n{tables}");
    }
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["environment"]["runtime_worker_threads"], 1);
    for row in result["results"].as_array().unwrap() {
        assert!(row["diagnosis"]["verdict"].is_string(), "{row}");
        assert_eq!(row["client"]["runtime_worker_threads"], 1, "{row}");
    }
    let comparison = &result["analysis"]["comparisons"][0];
    assert_eq!(comparison["faster_bucket"], EXPRESS_BUCKET);
    assert!(comparison["one_worker_speedup"].as_f64().unwrap() > 1.5, "{comparison}");
    let _ = std::fs::remove_file(json);
}

#[test]
fn bad_diagnosis_flags_are_all_named() {
    let out = run(&["local", "--runtime-threads", "0", "--bandwidth-mib-s=-5"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--runtime-threads"), "{err}");
    assert!(err.contains("--bandwidth-mib-s"), "{err}");
}

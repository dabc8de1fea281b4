//! An independent client reads the lab's directory bucket over HTTPS: boto3 (the
//! baseline of `make bench`, `bench-py/boto3_baseline.py`), trusting the lab's CA through
//! `verify=`, creates its own S3 Express session (botocore's, ReadWrite) and signs its
//! GETs with it. The lab's tally, printed when `serve` stops, must show that session
//! and every GET accepted with a session, and every TLS handshake completed.
//!
//! boto3 comes from the project's own `.venv-bench` (`make bench-venv`, which `make test`
//! runs first) or `$S3SWEEP_BENCH_PYTHON`. Without it this test fails saying how to
//! install it; `S3SWEEP_SKIP_BOTO3=1` skips it explicitly (and loudly).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{run_bounded, Serve, BIN};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const BUCKET: &str = "boto3-test--lab1-az1--x-s3";
const OBJECTS: u64 = 20;

#[test]
fn boto3_reads_the_https_directory_bucket_with_its_own_session() {
    let Some(python) = crate::common::bench_python("the boto3 test") else {
        return;
    };
    let server = Serve::start(&[&format!("{BUCKET}=none")], &["--tls"]);
    let ca = server.ca_file.clone().unwrap();
    let manifest = std::env::temp_dir().join(format!("s3sweep-boto3-{}.json", std::process::id()));
    let out = run_bounded(
        Command::new(BIN)
            .args(["seed", "--endpoint", &server.endpoint, "--bucket", BUCKET])
            .args(["--count", &OBJECTS.to_string(), "--size", "1000"])
            .arg("--ca-file")
            .arg(&ca)
            .arg("--manifest")
            .arg(&manifest),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let started = Instant::now();
    let out = run_bounded(
        Command::new(&python)
            .arg(Path::new(MANIFEST_DIR).join("bench-py/boto3_baseline.py"))
            .args(["--endpoint", &server.endpoint, "--bucket", BUCKET])
            .args(["--objects", &OBJECTS.to_string(), "--workers", "1,4"])
            .arg("--ca-file")
            .arg(&ca)
            .env_remove("AWS_CA_BUNDLE")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null"),
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        out.status.success(),
        "boto3 failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["client"].as_str().unwrap().starts_with("boto3 "), "{doc}");
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{doc}");
    for row in rows {
        assert_eq!(row["ok"].as_u64(), Some(OBJECTS), "{row}");
        assert_eq!(row["bytes"].as_u64(), Some(OBJECTS * 1000), "{row}");
    }

    // Stop the lab (SIGTERM) and read its tally.
    let stopped = server.stop();
    let sessions = stopped.stderr_line("S3 Express sessions:");
    // One ReadWrite session for seeding (aws-sdk-s3's), one for boto3 (botocore's).
    assert!(sessions.contains("created ReadOnly=0 ReadWrite=2"), "{sessions}");
    let accepted: u64 = sessions
        .split("accepted ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{sessions}"));
    // Seeding's requests, and boto3's 2 x 20 timed GETs plus its 1 + 4 warm-up GETs.
    assert!(accepted >= 2 * OBJECTS + 5 + OBJECTS, "{sessions}");
    assert!(
        sessions.contains("refused expired=0 invalid=0 signature=0"),
        "{sessions}"
    );
    let handshakes = stopped.stderr_line("TLS handshakes:");
    assert!(handshakes.ends_with(" 0 failed"), "{handshakes}");
    let _ = std::fs::remove_file(manifest);
}

//! The CLI's everyday flags, as a user runs them: `run` built from flags (and its
//! `--print-event`, replayed with `--event`), credentials that follow the endpoint
//! (the lab's keys for `s3sweep serve`, the AWS chain elsewhere, `--credentials` to
//! force), and the completions and man page generated from the clap definitions.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use crate::common::{run_bounded, Serve, BIN};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("s3sweep-flags-{}-{name}", std::process::id()))
}

/// The binary with `args` and no AWS settings from this environment.
fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_LOG")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE");
    c
}

fn ok(out: Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    (stdout, stderr)
}

fn seed(endpoint: &str, bucket: &str, count: &str) {
    let manifest = tmp(&format!("{bucket}-manifest.json"));
    ok(run_bounded(&mut cmd(&[
        "seed",
        "--bucket",
        bucket,
        "--count",
        count,
        "--size",
        "256",
        "--endpoint",
        endpoint,
        "--manifest",
        &manifest.display().to_string(),
    ])));
    let _ = std::fs::remove_file(manifest);
}

#[test]
fn print_event_replayed_with_event_is_the_same_request() {
    let flags = [
        "run",
        "--bucket",
        "first-bucket",
        "--bucket",
        "second-bucket",
        "--objects",
        "30",
        "--workers",
        "1,8,64",
        "--repetitions",
        "2",
        "--key-template",
        "data/{i}.bin",
        "--print-event",
    ];
    let (printed, stderr) = ok(run_bounded(&mut cmd(&flags)));
    assert_eq!(stderr, "", "--print-event only prints the event");
    let event: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(event["buckets"], serde_json::json!(["first-bucket", "second-bucket"]));
    assert_eq!(event["workers"], serde_json::json!([1, 8, 64]));
    assert_eq!(
        event["pool_connections"], 64,
        "the pool follows the largest worker count"
    );
    assert_eq!(event["object_count"], 30);
    assert_eq!(event["repetitions"], 2);
    assert_eq!(event["key_template"], "data/{i}.bin");
    // The event, given back, is the same request (and so the same plan) ...
    let file = tmp("printed.json");
    std::fs::write(&file, &printed).unwrap();
    let f = file.display().to_string();
    let (again, _) = ok(run_bounded(&mut cmd(&["run", "--event", &f, "--print-event"])));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&again).unwrap(), event);
    // ... and the Lambda's own validation takes it as it is.
    let plan = s3sweep_lambda::validate_event(event.clone()).expect("the Lambda accepts the printed event");
    assert_eq!(serde_json::to_value(plan.request()).unwrap(), event);
    // Flags replace the file's fields.
    let (changed, _) = ok(run_bounded(&mut cmd(&[
        "run",
        "--event",
        &f,
        "--workers",
        "4",
        "--pool",
        "4",
        "--print-event",
    ])));
    let changed: serde_json::Value = serde_json::from_str(&changed).unwrap();
    assert_eq!(changed["workers"], serde_json::json!([4]));
    assert_eq!(changed["buckets"], event["buckets"]);
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_flag_built_run_sweeps_the_lab_with_its_keys() {
    let server = Serve::start(&["flag-bucket=none"], &[]);
    seed(&server.endpoint, "flag-bucket", "20");
    let json = tmp("flag-result.json");
    // Wrong keys in the environment do not matter: the endpoint is the lab.
    let (stdout, stderr) = ok(run_bounded(
        cmd(&[
            "run",
            "--bucket",
            "flag-bucket",
            "--objects",
            "20",
            "--workers",
            "1,4",
            "--endpoint",
            &server.endpoint,
            "--quiet",
            "--json",
            &json.display().to_string(),
        ])
        .env("AWS_ACCESS_KEY_ID", "AKIAWRONGFORLAB")
        .env("AWS_SECRET_ACCESS_KEY", "wrong"),
    ));
    assert!(stderr.contains("(credentials: lab)"), "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["environment"]["credentials"], "lab");
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["ok"] == 20), "{rows:?}");
    assert_eq!(result["request"]["pool_connections"], 4);
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(written["environment"]["credentials"], "lab");
    let _ = std::fs::remove_file(json);
}

/// A server that is not the lab: it answers 404 to everything and keeps each
/// request's first line and `Authorization` header.
fn not_the_lab() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push(line.trim_end().to_string());
            }
            let auth = head
                .iter()
                .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                .cloned()
                .unwrap_or_default();
            log.lock()
                .unwrap()
                .push(format!("{} | {auth}", head.first().cloned().unwrap_or_default()));
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (endpoint, seen)
}

#[test]
fn elsewhere_the_aws_chain_signs_and_the_result_says_so() {
    let (endpoint, seen) = not_the_lab();
    let json = tmp("chain-result.json");
    let out = run_bounded(
        cmd(&[
            "run",
            "--bucket",
            "their-bucket",
            "--objects",
            "3",
            "--workers",
            "1",
            "--endpoint",
            &endpoint,
            "--no-preflight",
            "--quiet",
            "--json",
            &json.display().to_string(),
        ])
        .env("AWS_ACCESS_KEY_ID", "AKIAFROMTHEENVIRONMENT")
        .env("AWS_SECRET_ACCESS_KEY", "a-wrong-secret-from-the-environment"),
    );
    let (stdout, stderr) = ok(out);
    assert!(stderr.contains("(credentials: chain)"), "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["environment"]["credentials"], "chain");
    assert_eq!(result["results"][0]["errors"]["not_found"], 3, "{result}");
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests[0].starts_with("GET /_s3sweep/hello "),
        "the probe comes first: {requests:?}"
    );
    let signed: Vec<&String> = requests.iter().filter(|r| r.contains("Credential=")).collect();
    assert!(signed.len() >= 3, "{requests:?}");
    for r in &signed {
        assert!(
            r.contains("Credential=AKIAFROMTHEENVIRONMENT/"),
            "not the environment's key: {r}"
        );
        assert!(!r.contains("Credential=s3sweep/"), "the lab's key sent elsewhere: {r}");
    }
    // With the preflight, the missing object is the one-line error.
    let out = run_bounded(
        cmd(&["run", "--bucket", "their-bucket", "--endpoint", &endpoint])
            .env("AWS_ACCESS_KEY_ID", "AKIAFROMTHEENVIRONMENT")
            .env("AWS_SECRET_ACCESS_KEY", "a-wrong-secret-from-the-environment"),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: ObjectNotFound: "), "{err}");

    credentials_lab_forces_the_labs_keys(&endpoint, &seen);
    let _ = std::fs::remove_file(json);
}

/// `--credentials lab` forces the lab's keys against `endpoint` (no probe, as `seen`
/// records); the deprecated `--aws-credentials` still means chain, so the two together
/// are refused.
fn credentials_lab_forces_the_labs_keys(endpoint: &str, seen: &Mutex<Vec<String>>) {
    seen.lock().unwrap().clear();
    let out = run_bounded(&mut cmd(&[
        "run",
        "--bucket",
        "their-bucket",
        "--objects",
        "1",
        "--workers",
        "1",
        "--endpoint",
        endpoint,
        "--no-preflight",
        "--quiet",
        "--credentials",
        "lab",
    ]));
    let (stdout, _) = ok(out);
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["environment"]["credentials"], "lab");
    let requests = seen.lock().unwrap().clone();
    assert!(requests.iter().all(|r| !r.contains("/_s3sweep/hello")), "{requests:?}");
    assert!(
        requests.iter().any(|r| r.contains("Credential=s3sweep/")),
        "{requests:?}"
    );
    let out = run_bounded(&mut cmd(&[
        "run",
        "--bucket",
        "b-1",
        "--endpoint",
        endpoint,
        "--aws-credentials",
        "--credentials",
        "lab",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn completions_and_man_pages_come_from_the_clap_definitions() {
    let commands = ["local", "run", "seed", "serve", "clean", "report", "compare", "history"];
    for shell in ["bash", "zsh", "fish"] {
        let (script, _) = ok(run_bounded(&mut cmd(&["completions", shell])));
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for c in commands {
            assert!(script.contains(c), "{shell} completion lacks {c}");
        }
        assert!(script.contains("print-event"), "{shell} completion lacks run's flags");
    }
    let (page, _) = ok(run_bounded(&mut cmd(&["man"])));
    assert!(page.contains(".TH s3sweep 1"), "{}", &page[..200.min(page.len())]);
    for c in commands {
        assert!(page.contains(c), "man page lacks {c}");
    }
    let (page, _) = ok(run_bounded(&mut cmd(&["man", "run"])));
    assert!(
        page.contains("s3sweep\\-run") && page.contains("\\-\\-credentials"),
        "{page}"
    );
    let out = run_bounded(&mut cmd(&["completions", "tcsh"]));
    assert_eq!(out.status.code(), Some(2));
}

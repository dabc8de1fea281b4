//! No secret in any log at any level (issue 27): `seed`, `run` and `clean` at `-vvv`
//! (every crate's trace lines: the SDK and hyper print request headers there) against
//! the lab over HTTPS with a directory bucket, so S3 Express sessions are made and
//! their tokens sent in `x-amz-s3session-token` on every request. Canary values (a
//! password in the endpoint URL, a session token in the environment's credentials)
//! and every session token the lab issued must appear nowhere in what the commands
//! write: stdout, stderr, the manifest, the result file.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{run_bounded, Serve, BIN};

const BUCKET: &str = "canary--lab1-az1--x-s3";
const URL_PASSWORD: &str = "CANARYURLPASSWORD1";
const SESSION_TOKEN: &str = "CANARYSESSIONTOKEN2";

/// The value after each `name:`/`name=` (any case) that is not redacted.
fn unredacted(text: &str, name: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = lower[pos..].find(name) {
        let after = pos + i + name.len();
        pos = after;
        let rest = &text[after..];
        let sep = rest
            .find(|c: char| !matches!(c, '"' | '\'' | ':' | '=' | ' ' | '\\' | '>'))
            .unwrap_or(rest.len());
        if sep == 0 || !rest[..sep].contains([':', '=', '>']) {
            continue;
        }
        let value: String = rest[sep..]
            .chars()
            .take_while(|c| !matches!(c, '"' | '\'' | '&' | ',' | '<' | '\r' | '\n' | ' ' | '}' | '\\'))
            .collect();
        if !value.is_empty() && !value.starts_with("***") && value != "Sensitive" {
            out.push(value);
        }
    }
    out
}

#[test]
fn vvv_with_canary_secrets_shows_none_of_them() {
    let server = Serve::start(&[&format!("{BUCKET}=none")], &["--tls"]);
    let dir = std::env::temp_dir().join(format!("s3sweep-log-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (manifest, result) = (dir.join("m.json"), dir.join("r.json"));
    let (m, r) = (manifest.display().to_string(), result.display().to_string());
    let steps: [&[&str]; 3] = [
        &[
            "seed",
            "--bucket",
            BUCKET,
            "--count",
            "4",
            "--size",
            "100",
            "--credentials",
            "chain",
            "--manifest",
            &m,
        ],
        &[
            "run",
            "--bucket",
            BUCKET,
            "--objects",
            "4",
            "--workers",
            "1,2",
            "--credentials",
            "chain",
            "--json",
            &r,
        ],
        &["clean", "--credentials", "chain", "--manifest", &m],
    ];
    let mut written = String::new();
    for step in steps {
        written.push_str(&at_vvv_with_canaries(&server, step));
    }
    for file in [&manifest, &result] {
        written.push_str(&std::fs::read_to_string(file).unwrap());
    }
    let session_headers = written.to_ascii_lowercase().matches("x-amz-s3session-token").count();
    eprintln!(
        "{} bytes written; x-amz-s3session-token named {session_headers} times",
        written.len()
    );
    assert!(
        session_headers > 0,
        "no S3 Express session was used: the test sees nothing"
    );
    for canary in [URL_PASSWORD, SESSION_TOKEN, crate::common::lab::LOCAL_SECRET_KEY] {
        let n = written.matches(canary).count();
        assert_eq!(n, 0, "{canary} appears {n} times");
    }
    for name in [
        "x-amz-s3session-token",
        "x-amz-security-token",
        "sessiontoken",
        "authorization",
    ] {
        let leaks = unredacted(&written, name);
        assert!(
            leaks.is_empty(),
            "{name}: {} values shown, e.g. {:?}",
            leaks.len(),
            leaks.first()
        );
    }
    let _ = std::fs::remove_dir_all(PathBuf::from(&dir));
}

/// `s3sweep STEP -vvv` against `server` with the canaries (a password in the endpoint
/// URL; chain credentials: the lab's keys with a canary session token); it must
/// succeed. What it wrote on stdout and stderr; the canaries reach the server (the
/// token is sent, the logs are long) except in `clean`'s short run.
fn at_vvv_with_canaries(server: &Serve, step: &[&str]) -> String {
    let endpoint = server
        .endpoint
        .replacen("https://", &format!("https://canary-user:{URL_PASSWORD}@"), 1);
    let mut cmd = Command::new(BIN);
    cmd.args(step)
        .args(["-vvv", "--endpoint", &endpoint, "--ca-file"])
        .arg(server.ca_file.as_ref().unwrap())
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .env("AWS_ACCESS_KEY_ID", crate::common::lab::LOCAL_ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", crate::common::lab::LOCAL_SECRET_KEY)
        .env("AWS_SESSION_TOKEN", SESSION_TOKEN);
    let out = run_bounded(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{step:?}: {}",
        stderr.lines().last().unwrap_or("")
    );
    if step[0] != "clean" {
        assert!(stderr.len() > 100_000, "{step:?}: only {} bytes of trace", stderr.len());
    }
    format!("{}{stderr}", String::from_utf8_lossy(&out.stdout))
}

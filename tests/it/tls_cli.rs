//! The command line over HTTPS: `serve --tls` writes its CA and prints where, `seed` and
//! `run` trust it through `--ca-file` or `AWS_CA_BUNDLE`, a CA that did not sign the
//! server's certificate fails with one line naming the CA file that was used, and bad
//! TLS and session flags are named. Each test starts its own server on a free loopback
//! port and kills it after; every command is bounded in time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{run_bounded, Serve, BIN};

const BUCKET: &str = "tls-cli--lab1-az1--x-s3";

fn serve_tls() -> Serve {
    Serve::start(&[&format!("{BUCKET}=none")], &["--tls"])
}

/// `s3sweep ARGS` with no CA bundle from this environment unless `ca_bundle` is given,
/// and no backtraces (so an error is the one line a user sees).
fn s3sweep(args: &[&str], ca_bundle: Option<&Path>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("RUST_BACKTRACE", "0").env_remove("AWS_CA_BUNDLE");
    if let Some(path) = ca_bundle {
        cmd.env("AWS_CA_BUNDLE", path);
    }
    run_bounded(&mut cmd)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("s3sweep-tls-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A CA certificate that did not sign the lab's certificate.
fn other_ca() -> PathBuf {
    let path = temp("other-ca.pem");
    std::fs::write(&path, crate::common::lab::tls::generate().unwrap().ca_pem).unwrap();
    path
}

#[test]
fn the_lab_ca_is_trusted_through_the_flag_or_the_environment_and_a_wrong_one_is_named() {
    let server = serve_tls();
    assert!(server.endpoint.starts_with("https://127.0.0.1:"), "{}", server.endpoint);
    let ca = server.ca_file.clone().expect("serve --tls prints its CA file");
    let pem = std::fs::read_to_string(&ca).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");

    let manifest = temp("manifest.json");
    let out = s3sweep(
        &[
            "seed",
            "--endpoint",
            &server.endpoint,
            "--bucket",
            BUCKET,
            "--count",
            "5",
            "--size",
            "100",
            "--ca-file",
            ca.to_str().unwrap(),
            "--manifest",
            manifest.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let event = temp("event.json");
    std::fs::write(
        &event,
        format!(r#"{{"buckets": ["{BUCKET}"], "object_count": 5, "workers": [2]}}"#),
    )
    .unwrap();
    let run = [
        "run",
        "--event",
        event.to_str().unwrap(),
        "--endpoint",
        &server.endpoint,
        "--quiet",
    ];
    // AWS_CA_BUNDLE, as the AWS CLI and SDKs read it.
    let out = s3sweep(&run, Some(&ca));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["results"][0]["ok"], 5, "{result}");

    // Neither: only the webpki roots, which never signed the lab's CA.
    let out = s3sweep(&run, None);
    let err = one_line_error(&out);
    assert!(
        err.contains("TlsHandshakeFailed") && err.contains("trusted: the webpki roots."),
        "{err}"
    );

    // A CA that did not sign the server's certificate, by flag and by environment: one
    // line, naming the CA file that was used.
    let wrong = other_ca();
    let mut with_flag = run.to_vec();
    with_flag.extend(["--ca-file", wrong.to_str().unwrap()]);
    for out in [s3sweep(&with_flag, None), s3sweep(&run, Some(&wrong))] {
        let err = one_line_error(&out);
        assert!(err.starts_with("error: TlsHandshakeFailed: "), "{err}");
        assert!(err.contains(&format!("the CA file {}", wrong.display())), "{err}");
        assert!(err.contains("invalid peer certificate"), "{err}");
        assert!(err.contains("--ca-file") && err.contains("AWS_CA_BUNDLE"), "{err}");
    }

    // A CA file that is not one.
    let garbage = temp("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let mut with_garbage = run.to_vec();
    with_garbage.extend(["--ca-file", garbage.to_str().unwrap()]);
    let err = one_line_error(&s3sweep(&with_garbage, None));
    assert!(err.contains(&format!("CA file {}", garbage.display())), "{err}");
    assert!(err.contains("no PEM certificate"), "{err}");
}

/// The failed command's stderr, which must be exactly one line.
fn one_line_error(out: &Output) -> String {
    assert!(!out.status.success(), "the command should have failed");
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(err.lines().count(), 1, "one line expected:\n{err}");
    err
}

#[test]
fn bad_tls_and_session_flags_are_named() {
    let out = s3sweep(&["serve", "--port", "0", "--session-ttl-s", "0"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--session-ttl-s") && err.contains("between 1 and"),
        "{err}"
    );
    let out = s3sweep(&["serve", "--port", "0", "--ca-out", "x.pem"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls"), "--ca-out needs --tls: {err}");
    let out = s3sweep(&["local", "--session-ttl-s", "999999"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--session-ttl-s"));
}

#[test]
fn a_stopped_lab_leaves_no_ca_folder_behind() {
    // The tests stop their labs as a user would (SIGTERM first): `serve` then removes
    // its CA file and its private folder. A SIGKILL alone left one folder per lab.
    let serve = serve_tls();
    let ca = serve.ca_file.clone().expect("serve --tls prints its CA file");
    let dir = ca.parent().unwrap().to_path_buf();
    assert!(ca.exists() && dir.exists(), "{}", ca.display());
    drop(serve);
    assert!(!ca.exists(), "{} is left", ca.display());
    assert!(!dir.exists(), "{} is left", dir.display());
}

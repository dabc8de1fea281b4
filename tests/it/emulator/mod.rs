//! The Lambda emulator tests' machinery: `cargo lambda watch` with the function's
//! environment, `cargo lambda invoke`, every process in its own group killed at the
//! end, and every wait bounded. The lab they invoke against is `common::Serve`.
//! `tests/it/lambda_emulator.rs`, `memory_emulator.rs` and `idle_emulator.rs` use it.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{run_within, Group};

use serde_json::Value;

pub(crate) const S3SWEEP: &str = env!("CARGO_BIN_EXE_s3sweep");
pub(crate) const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
/// First invocation: `cargo lambda watch` runs `cargo run -p s3sweep-lambda`, which
/// is up to date after `cargo test` built it, but allow for a rebuild on a slow machine.
pub(crate) const FIRST_INVOKE_LIMIT: Duration = Duration::from_secs(600);
pub(crate) const INVOKE_LIMIT: Duration = Duration::from_secs(120);
pub(crate) const OBJECT_SIZE_BYTES: u64 = 46_080;

/// Removes the variables `cargo test` sets for this test process. Inherited by the
/// `cargo run` that `cargo lambda watch` starts, some (`CARGO_MANIFEST_DIR`, which
/// ring's build script watches) would make it rebuild half the dependency tree.
pub(crate) fn without_cargo_test_env(cmd: &mut Command) {
    const SET_BY_CARGO_TEST: &[&str] = &[
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_PKG_",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_BIN_EXE_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
        // Not cargo test's, but the harness's: docs/testing.md's per-test timing recipe
        // sets it for `--report-time`. Cargo counts it in every unit's fingerprint, so
        // passed on it would rebuild the whole tree under `cargo lambda watch` (about
        // 120 s of a 2-core machine, every emulator test's start).
        "RUSTC_BOOTSTRAP",
    ];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if SET_BY_CARGO_TEST
            .iter()
            .any(|p| name == *p || (p.ends_with('_') && name.starts_with(p)))
        {
            cmd.env_remove(&name);
        }
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(crate) struct Emulator {
    pub group: Group,
    pub port: u16,
    pub log: PathBuf,
    pub cargo_lambda: PathBuf,
}

impl Emulator {
    /// `cargo lambda watch` for the `s3sweep-lambda` binary, JSON logs into a file,
    /// trusting `ca_file` (`AWS_CA_BUNDLE`) when given.
    pub(crate) fn start(cargo_lambda: &Path, endpoint: &str, log: &Path, ca_file: Option<&Path>) -> Emulator {
        let bundle = ca_file.map(|p| p.display().to_string());
        let vars: Vec<(&str, &str)> = bundle.as_deref().map(|b| ("AWS_CA_BUNDLE", b)).into_iter().collect();
        Emulator::start_with(cargo_lambda, endpoint, log, None, &vars)
    }

    /// With `fanout`: up to that many instances, the function's Lambda client pointed
    /// at the emulator's own Invoke API (`AWS_ENDPOINT_URL_LAMBDA`, dummy credentials).
    /// `vars`: more environment variables of the function.
    pub(crate) fn start_with(
        cargo_lambda: &Path,
        endpoint: &str,
        log: &Path,
        fanout: Option<u32>,
        vars: &[(&str, &str)],
    ) -> Emulator {
        Emulator::start_full(cargo_lambda, endpoint, log, fanout, None, vars)
    }

    /// [`Emulator::start_with`], and with `concurrency`: that many instances without
    /// pointing the function's Lambda client at the emulator (a memory sweep's test
    /// points it at its own control-plane API through `vars`).
    pub(crate) fn start_full(
        cargo_lambda: &Path,
        endpoint: &str,
        log: &Path,
        fanout: Option<u32>,
        concurrency: Option<u32>,
        vars: &[(&str, &str)],
    ) -> Emulator {
        for _ in 0..3 {
            let port = free_port();
            let file = std::fs::File::create(log).unwrap();
            let mut cmd = Command::new(cargo_lambda);
            without_cargo_test_env(&mut cmd);
            cmd.current_dir(MANIFEST_DIR)
                .args([
                    "lambda",
                    "watch",
                    "--ignore-changes",
                    "-p",
                    "s3sweep-lambda",
                    "--bin",
                    "s3sweep-lambda",
                ])
                .args(["--invoke-address", "127.0.0.1", "--invoke-port", &port.to_string()])
                .args(["--env-var", &format!("S3SWEEP_ENDPOINT_URL={endpoint}")])
                .args(["--env-var", "AWS_LAMBDA_LOG_FORMAT=JSON"])
                .args(["--env-var", "AWS_LAMBDA_LOG_LEVEL=INFO"]);
            if let Some(concurrency) = fanout {
                cmd.args(["--concurrency", &concurrency.to_string()])
                    .args(["--env-var", &format!("AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:{port}")])
                    .args(["--env-var", "AWS_REGION=us-east-1"])
                    .args(["--env-var", "AWS_ACCESS_KEY_ID=emulator"])
                    .args(["--env-var", "AWS_SECRET_ACCESS_KEY=emulator"]);
            }
            if let Some(concurrency) = concurrency {
                cmd.args(["--concurrency", &concurrency.to_string()]);
            }
            for (name, value) in vars {
                cmd.args(["--env-var", &format!("{name}={value}")]);
            }
            cmd.stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file);
            let mut group = Group::spawn("cargo lambda watch", &mut cmd);
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if group.exited().is_some() {
                    break;
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Emulator {
                        group,
                        port,
                        log: log.to_path_buf(),
                        cargo_lambda: cargo_lambda.to_path_buf(),
                    };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!(
                "cargo lambda watch did not listen on port {port} (it may have been taken); log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        panic!("cargo lambda watch did not start");
    }

    pub(crate) fn invoke(&mut self, data_file: &Path, limit: Duration) -> Output {
        assert!(
            self.group.exited().is_none(),
            "cargo lambda watch exited:\n{}",
            self.log()
        );
        let mut cmd = Command::new(&self.cargo_lambda);
        cmd.current_dir(MANIFEST_DIR)
            .args(["lambda", "invoke", "--invoke-address", "127.0.0.1"])
            .args(["--invoke-port", &self.port.to_string()])
            .arg("--data-file")
            .arg(data_file)
            .arg("s3sweep-lambda")
            .env("NO_COLOR", "1");
        run_within("cargo lambda invoke", &mut cmd, limit)
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The function's JSON log lines (the emulator's own lines are not JSON).
    pub(crate) fn json_logs(&self) -> Vec<Value> {
        self.log()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
            .filter(|v| v.is_object())
            .collect()
    }
}

/// cargo-lambda prints a function error as `Error: TYPE` and the message wrapped in a
/// box; this joins it back into one line.
pub(crate) fn error_text(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.replace(['│', '×', '╰', '─', '╭'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn approx(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

//! Helpers the integration tests share: the embedded server on 127.0.0.1:0 ([`LabBuilder`],
//! and the lab types tests use, in [`lab`]), seeding a
//! bucket through the SDK, the sweep options every test uses, and the `s3sweep` binary
//! (`serve` as a child process: [`Serve`]; commands bounded in time: [`run_bounded`]),
//! the directory bucket's name, [`isolated`] for a test that must be alone in its
//! process, the tools some tests need (boto3's Python, cargo-lambda) and the error kind
//! each injected fault is counted under. Each module uses only
//! some, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use s3sweep::engine::SweepOptions;

pub(crate) mod chunked;
pub(crate) mod faulted;
pub(crate) mod iam;
pub(crate) mod lab;
pub(crate) mod lambda_api;
mod process;
pub(crate) mod runtime;
mod serve;
pub(crate) use lab::LabBuilder;
use lab::RunningServer;
pub(crate) use process::{
    baseline_rss_kib, run_bounded, run_measured, run_within, s3sweep_said, stop_gently, vm_hwm_kib, Group,
};
use s3sweep::plan::KeyTemplate;
use s3sweep::s3::seed::{seed, SeedManifest, SeedSpec};
use s3sweep::s3::{RequestSettings, SweepClient};

/// A file under the temporary directory, `s3sweep-TAG-PID-NAME`, removed when dropped.
pub(crate) struct TempFile(pub(crate) PathBuf);

impl TempFile {
    pub(crate) fn new(tag: &str, name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("s3sweep-{tag}-{}-{name}", std::process::id())))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
pub(crate) use serve::Serve;

/// A client of `server` (its CA trusted when it serves HTTPS).
pub(crate) async fn client_of(server: &RunningServer) -> SweepClient {
    s3sweep::sweep_client(lab::client_options_for(server))
        .await
        .expect("the client builds")
}

/// What a test seeds with: `count` objects of `size_bytes` under `template`,
/// 16 at a time, keys that exist already left alone.
pub(crate) fn seed_spec(bucket: &str, template: &str, count: u32, size_bytes: u64) -> SeedSpec {
    SeedSpec {
        bucket: bucket.into(),
        keys: KeyTemplate::parse(template, count).unwrap(),
        object_count: count,
        object_size_bytes: size_bytes,
        size_cycle_bytes: Vec::new(),
        object_sizes_bytes: Vec::new(),
        concurrency: 16,
        skip_existing: true,
    }
}

/// Request settings for seeding and cleaning: one attempt, generous timeouts.
pub(crate) fn seed_settings() -> RequestSettings {
    RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(5),
        attempt_timeout: Duration::from_secs(10),
    }
}

/// Seeds `spec` through `client` with [`seed_settings`].
pub(crate) async fn seed_with(client: &SweepClient, spec: &SeedSpec) -> SeedManifest {
    let s3 = client.s3(seed_settings());
    seed(&s3, client.endpoint(), spec).await.expect("seeding works")
}

/// Seeds `count` fresh objects `test/{i}/vectors` of `size_bytes` and checks all were written.
pub(crate) async fn seed_bucket(client: &SweepClient, bucket: &str, count: u32, size_bytes: u64) {
    let manifest = seed_with(client, &seed_spec(bucket, "test/{i}/vectors", count, size_bytes)).await;
    assert_eq!(manifest.written.len() as u32, count);
}

/// Sweep options for tests: the default engine, runner `local` (the default).
pub(crate) fn options() -> SweepOptions {
    SweepOptions::default()
}

/// The `s3sweep` binary cargo built for these tests.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_s3sweep");

/// The function's binary `s3sweep-lambda`, built as it ships and as `cargo lambda
/// watch` builds it: its package alone (`cargo build -p s3sweep-lambda`, no SSO, no
/// lab), beside [`BIN`]. Built once per test process; up to date after `make test`'s
/// build, so this costs a second at most.
pub(crate) fn lambda_bin() -> &'static str {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        crate::emulator::without_cargo_test_env(&mut cmd);
        let status = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["build", "--quiet", "-p", "s3sweep-lambda", "--bin", "s3sweep-lambda"])
            .status()
            .expect("running cargo build -p s3sweep-lambda");
        assert!(status.success(), "cargo build -p s3sweep-lambda failed: {status}");
        let bin = Path::new(BIN).with_file_name(format!("s3sweep-lambda{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin.to_string_lossy().into_owned()
    })
}

/// A Lambda context as the runtime makes one (function `s3sweep-test`, 2,048 MB), with
/// the deadline `deadline_in` from now (`None`: the 1970 deadline `cargo lambda watch`
/// sends).
pub(crate) fn lambda_context(request_id: &str, deadline_in: Option<Duration>) -> lambda_runtime::Context {
    let mut ctx = lambda_runtime::Context::default();
    ctx.request_id = request_id.into();
    ctx.deadline = match deadline_in {
        Some(d) => (std::time::SystemTime::now() + d)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64,
        None => 600_000,
    };
    ctx.env_config = std::sync::Arc::new(lambda_runtime::Config {
        function_name: "s3sweep-test".into(),
        memory: 2048,
        version: "$LATEST".into(),
        log_stream: String::new(),
        log_group: String::new(),
    });
    ctx
}

/// The Express-like directory bucket of `s3sweep local` (and of events/local.json), as
/// users see it in tables, plots and comparisons.
pub(crate) const EXPRESS_BUCKET: &str = "express-like--lab1-az1--x-s3";

/// The Standard-like bucket of `s3sweep local`.
pub(crate) const STANDARD_BUCKET: &str = "standard-like";

/// The lock of [`one_at_a_time`].
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// For the tests whose thresholds are times or rates on this machine (first byte to the
/// millisecond, throughput under a CPU quota) and the tests that keep its CPU busy
/// (which would skew those): each holds this for its whole run, so no two of them
/// overlap, as when each file was a binary of its own. The other tests mostly wait on
/// the lab's latency and run beside them. From a plain `#[test]`; an async test calls
/// [`one_at_a_time_async`].
pub(crate) fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.blocking_lock()
}

/// [`one_at_a_time`] from an async test.
pub(crate) async fn one_at_a_time_async() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().await
}

/// The variable that tells a test it runs in the process [`isolated`] started for it;
/// its value is the test's name.
const ISOLATED_ENV: &str = "S3SWEEP_ISOLATED_TEST";

/// For a test that measures its whole process (CPU time, peak RSS, open file
/// descriptors), which the other tests of this binary would skew: runs `test` (its full
/// name, `module::function`) alone in a process of its own, this test binary filtered to
/// that one test, and says whether the caller is that process.
///
/// In the test's own process: `true`, the caller goes on with its body. In any other:
/// waits for the child (at most `limit`, then kills it) holding [`one_at_a_time`],
/// fails unless it ran exactly that one test and it passed, prints its output, and
/// returns `false`: the caller returns. So
/// `if !common::isolated("load::load_reduced", limit) { return; }`.
pub(crate) fn isolated(test: &str, limit: Duration) -> bool {
    if std::env::var(ISOLATED_ENV).as_deref() == Ok(test) {
        return true;
    }
    let _one = one_at_a_time();
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_ENV, test)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary starts again");
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    eprintln!("{test}, alone in process {}:\n{stdout}{stderr}", child.id());
    let status = status.unwrap_or_else(|| panic!("{test} did not finish within {limit:?} in its own process"));
    assert!(status.success(), "{test} failed in its own process ({status})");
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{test}: its own process did not run exactly that test"
    );
    false
}

/// The Python with boto3 the tests run (the baseline's, `bench-py/requirements.txt`):
/// `$S3SWEEP_BENCH_PYTHON`, else the project's `.venv-bench` (`make bench-venv`, which
/// `make test` runs first). Without one, `test` fails saying how to install it, unless
/// `S3SWEEP_SKIP_BOTO3=1` skips it explicitly (and loudly): then `None`.
pub(crate) fn bench_python(test: &str) -> Option<std::path::PathBuf> {
    bench_python_importing(test, "boto3")
}

/// As [`bench_python`], for a Python that can import every module of `imports`
/// (`"boto3, awscli"`).
pub(crate) fn bench_python_importing(test: &str, imports: &str) -> Option<std::path::PathBuf> {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let candidate = std::env::var_os("S3SWEEP_BENCH_PYTHON")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(manifest).join(".venv-bench/bin/python"));
    let works = Command::new(&candidate)
        .args(["-c", &format!("import {imports}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if works {
        return Some(candidate);
    }
    if std::env::var("S3SWEEP_SKIP_BOTO3").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: S3SWEEP_SKIP_BOTO3=1 and no Python that imports {imports}");
        return None;
    }
    panic!(
        "no Python that imports {imports} (looked at $S3SWEEP_BENCH_PYTHON and {manifest}/.venv-bench/bin/python). \
         Install the pinned baseline with `make bench-venv` (`make test` does it first); \
         S3SWEEP_SKIP_BOTO3=1 skips {test}"
    );
}

/// `$CARGO_LAMBDA`, else the project's `.venv` (`make tools`), else `cargo-lambda` on
/// `PATH`.
pub(crate) fn cargo_lambda() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CARGO_LAMBDA").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "CARGO_LAMBDA={} is not a file", path.display());
        return Some(path);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/cargo-lambda");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("cargo-lambda"))
            .find(|p| p.is_file())
    })
}

/// [`cargo_lambda`] for `test` (`"the idle emulator test"`). Without one, `test` fails
/// saying how to install it, unless `S3SWEEP_SKIP_EMULATOR=1` skips it explicitly (and
/// loudly): then `None`.
pub(crate) fn cargo_lambda_for(test: &str) -> Option<PathBuf> {
    if let Some(path) = cargo_lambda() {
        return Some(path);
    }
    if std::env::var("S3SWEEP_SKIP_EMULATOR").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: S3SWEEP_SKIP_EMULATOR=1 and cargo-lambda is not installed");
        return None;
    }
    panic!(
        "cargo-lambda not found (looked at $CARGO_LAMBDA, {}/.venv/bin/cargo-lambda and PATH). \
         Install the project's pinned tools with `make tools` (`make test` does it first), or set \
         CARGO_LAMBDA=/path/to/cargo-lambda; S3SWEEP_SKIP_EMULATOR=1 skips {test}",
        env!("CARGO_MANIFEST_DIR")
    );
}

/// The error kind an injected fault must be counted under (on the SDK's path and the
/// lean client's alike).
pub(crate) fn expected_kind(kind: lab::FaultKind) -> s3sweep::model::ErrorKind {
    use lab::FaultKind;
    use s3sweep::model::ErrorKind;
    match kind {
        FaultKind::SlowDown => ErrorKind::Throttled,
        FaultKind::InternalError => ErrorKind::ServerError,
        FaultKind::AccessDenied => ErrorKind::AccessDenied,
        FaultKind::ResetBeforeHeaders | FaultKind::ResetMidBody | FaultKind::TruncatedBody => ErrorKind::Connection,
        FaultKind::StallBody | FaultKind::LateFirstByte => ErrorKind::Timeout,
    }
}

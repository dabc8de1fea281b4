//! The Lambda emulator tests' machinery: the `s3sweep serve` lab as a child process
//! (HTTP or HTTPS, its tallies read when it stops), `cargo lambda watch` with the
//! function's environment, `cargo lambda invoke`, every process in its own group killed
//! at the end, and every wait bounded. `tests/it/lambda_emulator.rs` and
//! `tests/it/memory_emulator.rs` use it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const S3SWEEP: &str = env!("CARGO_BIN_EXE_s3sweep");
pub const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
/// First invocation: `cargo lambda watch` runs `cargo run --bin s3sweep-lambda`, which
/// is up to date after `cargo test` built it, but allow for a rebuild on a slow machine.
pub const FIRST_INVOKE_LIMIT: Duration = Duration::from_secs(600);
pub const INVOKE_LIMIT: Duration = Duration::from_secs(120);
pub const OBJECT_SIZE_BYTES: u64 = 46_080;

/// A child process in its own process group; the whole group is killed on drop.
pub struct Group {
    pub child: Child,
    pub name: &'static str,
}

impl Group {
    pub fn spawn(name: &'static str, cmd: &mut Command) -> Group {
        cmd.process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("starting {name} ({cmd:?}): {e}"));
        Group { child, name }
    }

    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Group {
    /// The leader gets SIGTERM first (up to 2 s), so a `serve --tls` dropped on a
    /// failing assert still removes its CA folder; then the whole group SIGKILL.
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        crate::common::stop_gently(&mut self.child, Duration::from_secs(2));
        // SAFETY: signals only the process group this test created (pgid = child pid).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("stopped {} (process group {pid})", self.name);
    }
}

pub fn cargo_lambda() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CARGO_LAMBDA").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "CARGO_LAMBDA={} is not a file", path.display());
        return Some(path);
    }
    let venv = Path::new(MANIFEST_DIR).join(".venv/bin/cargo-lambda");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("cargo-lambda"))
            .find(|p| p.is_file())
    })
}

/// Removes the variables `cargo test` sets for this test process. Inherited by the
/// `cargo run` that `cargo lambda watch` starts, some (`CARGO_MANIFEST_DIR`, which
/// ring's build script watches) would make it rebuild half the dependency tree.
pub fn without_cargo_test_env(cmd: &mut Command) {
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

/// Runs `cmd` to completion within `limit`, killing its process group if it overruns.
pub fn run_bounded(what: &str, cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut group = Group::spawn("a bounded command", cmd);
    let mut stdout = group.child.stdout.take().unwrap();
    let mut stderr = group.child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = group.exited() {
            break status;
        }
        assert!(
            start.elapsed() < limit,
            "{what} did not finish within {} s",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(group);
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn start_server(buckets: &[(&str, &str)]) -> (Group, String) {
    let lab = Lab::start(buckets, false);
    (lab.group, lab.endpoint)
}

/// `s3sweep serve` as a child: its endpoint, its CA file with `--tls`, and its stderr
/// (where it prints its tallies when it stops).
pub struct Lab {
    pub group: Group,
    pub endpoint: String,
    pub ca_file: Option<PathBuf>,
    pub stderr: std::thread::JoinHandle<String>,
}

impl Lab {
    pub fn start(buckets: &[(&str, &str)], tls: bool) -> Lab {
        Lab::start_with_args(buckets, tls, &[])
    }

    /// [`Lab::start`] with more `serve` flags (`--idle-timeout-s 3`, `--prefix-rate`).
    pub fn start_with_args(buckets: &[(&str, &str)], tls: bool, extra: &[&str]) -> Lab {
        let mut cmd = Command::new(S3SWEEP);
        cmd.args(["serve", "--port", "0"]).args(extra);
        if tls {
            cmd.arg("--tls");
        }
        for (bucket, profile) in buckets {
            cmd.args(["--bucket", &format!("{bucket}={profile}")]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut group = Group::spawn("s3sweep serve", &mut cmd);
        let stdout = group.child.stdout.take().unwrap();
        let mut stderr = group.child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("s3sweep serve prints its address within 30 s");
        let endpoint = first
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:") || w.starts_with("https://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_string();
        let ca_file = tls.then(|| {
            let line = rx
                .recv_timeout(Duration::from_secs(5))
                .expect("serve --tls prints its CA file");
            PathBuf::from(
                line.strip_prefix("ca-file: ")
                    .unwrap_or_else(|| panic!("no CA file in {line:?}")),
            )
        });
        // Keep draining its stdout.
        std::thread::spawn(move || while rx.recv().is_ok() {});
        Lab {
            group,
            endpoint,
            ca_file,
            stderr,
        }
    }

    /// One of the lab's JSON tallies (`/_s3sweep/faults`, `/_s3sweep/network`) over
    /// plain HTTP, within 5 s.
    pub fn tally(&self, path: &str) -> Value {
        use std::io::Write;
        let addr = self
            .endpoint
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("tallies are read over HTTP, not {}", self.endpoint));
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no body in {text:?}"));
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body:?}"))
    }

    /// Stops the lab with SIGTERM (as a user's Ctrl-C) and returns what it printed on
    /// stderr, its tallies included.
    pub fn stop(mut self) -> String {
        // SAFETY: signals only the `serve` child this test started.
        unsafe {
            libc::kill(self.group.child.id() as i32, libc::SIGTERM);
        }
        let start = Instant::now();
        while self.group.exited().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(self.group);
        self.stderr.join().unwrap()
    }
}

pub struct Emulator {
    pub group: Group,
    pub port: u16,
    pub log: PathBuf,
    pub cargo_lambda: PathBuf,
}

impl Emulator {
    /// `cargo lambda watch` for the `s3sweep-lambda` binary, JSON logs into a file,
    /// trusting `ca_file` (`AWS_CA_BUNDLE`) when given.
    pub fn start(cargo_lambda: &Path, endpoint: &str, log: &Path, ca_file: Option<&Path>) -> Emulator {
        let bundle = ca_file.map(|p| p.display().to_string());
        let vars: Vec<(&str, &str)> = bundle.as_deref().map(|b| ("AWS_CA_BUNDLE", b)).into_iter().collect();
        Emulator::start_with(cargo_lambda, endpoint, log, None, &vars)
    }

    /// With `fanout`: up to that many instances, the function's Lambda client pointed
    /// at the emulator's own Invoke API (`AWS_ENDPOINT_URL_LAMBDA`, dummy credentials).
    /// `vars`: more environment variables of the function.
    pub fn start_with(
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
    pub fn start_full(
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
                .args(["lambda", "watch", "--ignore-changes", "--bin", "s3sweep-lambda"])
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

    pub fn invoke(&mut self, data_file: &Path, limit: Duration) -> Output {
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
        run_bounded("cargo lambda invoke", &mut cmd, limit)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The function's JSON log lines (the emulator's own lines are not JSON).
    pub fn json_logs(&self) -> Vec<Value> {
        self.log()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
            .filter(|v| v.is_object())
            .collect()
    }
}

/// cargo-lambda prints a function error as `Error: TYPE` and the message wrapped in a
/// box; this joins it back into one line.
pub fn error_text(out: &Output) -> String {
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

pub fn approx(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

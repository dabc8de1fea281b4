//! `make bench MODE=clients` (bench-py/clients.py) at a tiny size: 200 GETs per client, 16
//! in flight, HTTP, at most two rounds, wrk for one second. It must print a row for every
//! client on every server (s3sweep's lean path, the bare SDK, s3sweep's SDK path and the
//! CRT reference (awscrt, from the suite's bench Python) on nginx and on the lab, wrk on
//! nginx) with every GET answered, every target's ratio
//! with its interval and PASS, MISS or UNSURE, and stop adding rounds at its limit
//! (a precision no two rounds reach). The figures themselves are not checked (debug
//! builds, a loaded machine): the bench's targets are for release builds, read from its
//! table. The interval's arithmetic has its own unit tests (bench-py/test_intervals.py),
//! run here too. The transfer manager's reference (bench-tm/) is not built by the suite:
//! its first build takes longer than the whole suite may (docs/performance.md), so only
//! `make bench MODE=clients` runs it.
//!
//! Needs wrk, nginx and openssl (`make bench-tools`, which `make test` runs) and the
//! debug build of examples/bare_sdk.rs next to the `s3sweep` binary (`make test` builds
//! it: `cargo test --test it` does not build examples). Without them the test skips,
//! saying why, unless CI=true, where it fails. The Python with awscrt is the suite's
//! bench Python (`common::bench_python_importing`: `.venv-bench`, which `make test`
//! installs from bench-py/requirements.txt), which fails the test when it is missing. Also: without the tools the bench
//! refuses, saying which are missing and how to install them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{one_at_a_time, BIN};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/bench-py/clients.py");

fn present(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The debug build of examples/bare_sdk.rs, next to the `s3sweep` binary.
fn bench_client() -> PathBuf {
    Path::new(BIN).parent().unwrap().join("examples").join("bare_sdk")
}

/// Why this test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let tools: Vec<&str> = ["wrk", "nginx", "openssl", "python3"]
        .into_iter()
        .filter(|t| !present(t))
        .collect();
    if !tools.is_empty() {
        return Some(format!(
            "{} not installed (`make bench-tools` installs wrk and nginx, as root)",
            tools.join(", ")
        ));
    }
    let client = bench_client();
    (!client.exists()).then(|| format!("no {} (`cargo build --example bare_sdk`)", client.display()))
}

/// Runs `cmd`, killed after `limit`.
fn run_limited(cmd: &mut Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    // Its own process group, so a timeout stops the servers it started too (they
    // would hold the output pipes open, and the test would wait on them).
    let mut child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            // SAFETY: kill(2) with a negative pid signals the child's own group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The cells of the table rows that start with `prefix`.
fn rows<'a>(stdout: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

#[test]
fn the_clients_bench_prints_every_client_and_every_target() {
    if let Some(why) = missing() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "under CI: {why}");
        eprintln!("SKIPPED: {why}");
        return;
    }
    let Some(crt_python) = crate::common::bench_python_importing("the clients bench", "awscrt") else {
        return;
    };
    let _alone = one_at_a_time();
    let out = run_limited(
        Command::new("python3").arg(SCRIPT).args([
            "--s3sweep",
            BIN,
            "--bench-client",
            bench_client().to_str().unwrap(),
            "--objects",
            "200",
            "--workers",
            "16",
            "--schemes",
            "http",
            "--rounds",
            "1",
            "--max-rounds",
            "2",
            "--precision",
            "0.0001",
            "--wrk-seconds",
            "1",
            "--crt-python",
            crt_python.to_str().unwrap(),
        ]),
        Duration::from_secs(180),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the bench failed:\n{stdout}\n{stderr}");

    every_client_reads_every_object(&stdout, &stderr);
    every_target_is_a_ratio_with_a_verdict(&stdout);
    assert!(
        stdout.contains("rounds: 2 (the limit of 2 rounds reached before every interval was within +/-0.01%"),
        "two rounds, then the limit:\n{stdout}"
    );
    assert!(
        stdout.contains("machine: ") && stdout.contains("clocksource") && stdout.contains("load average"),
        "the machine beside the figures:\n{stdout}"
    );
}

/// A row per client on each server (the static one and the lab), its figures positive,
/// no GET failed, every object read once (but by wrk, which reads as it can).
fn every_client_reads_every_object(stdout: &str, stderr: &str) {
    let clients = [
        ("static", "s3sweep lean path"),
        ("static", "bare aws-sdk-s3"),
        ("static", "s3sweep SDK path"),
        ("static", "wrk (unsigned)"),
        ("static", "CRT (awscrt)"),
        ("lab", "s3sweep lean path"),
        ("lab", "bare aws-sdk-s3"),
        ("lab", "s3sweep SDK path"),
        ("lab", "CRT (awscrt)"),
    ];
    for (server, client) in clients {
        let found = rows(stdout, &format!("| http | {server} | {client} | 16 |"));
        assert_eq!(found.len(), 1, "one row of {client} on {server}:\n{stdout}");
        let cells = &found[0];
        // wall ms, wall ms/GET, CPU ms/GET, GETs (over the two rounds), errors
        let figures: Vec<f64> = cells[4..9].iter().map(|c| c.parse().unwrap()).collect();
        assert!(figures[..4].iter().all(|&f| f > 0.0), "{client} on {server}: {cells:?}");
        assert_eq!(
            figures[4], 0.0,
            "{client} on {server}: failed GETs: {cells:?}\n{stderr}"
        );
        if !client.starts_with("wrk") {
            assert_eq!(
                figures[3], 400.0,
                "{client} on {server} read every object once: {cells:?}"
            );
        }
    }
}

/// A row per target: its ratio at 16 workers inside its interval and a verdict; no
/// other target rows.
fn every_target_is_a_ratio_with_a_verdict(stdout: &str) {
    let targets = [
        ("| lean CPU/GET <= 0.5x bare SDK | http | static |", 1),
        ("| lean CPU/GET <= 0.5x bare SDK | http | lab |", 1),
        ("| lean CPU/GET <= 2x wrk (unsigned) | http | static |", 1),
        ("| s3sweep SDK path CPU/GET <= 1.05x bare SDK | http | static |", 1),
        ("| s3sweep SDK path CPU/GET <= 1.05x bare SDK | http | lab |", 1),
        ("| lean CPU/GET <= best outside client (bare, crt) | http | static |", 1),
        ("| lean CPU/GET <= best outside client (bare, crt) | http | lab |", 1),
    ];
    for (prefix, n) in targets {
        let found = rows(stdout, prefix);
        assert_eq!(found.len(), n, "{prefix}:\n{stdout}");
        let cells = &found[0];
        let (median, lo, hi) = interval(cells[3]).unwrap_or_else(|| panic!("{prefix}: {cells:?}"));
        assert!(
            0.0 < lo && lo <= median && median <= hi,
            "{prefix}: a ratio at 16 inside its interval: {cells:?}"
        );
        assert!(matches!(cells[4], "PASS" | "MISS" | "UNSURE"), "{prefix}: {cells:?}");
    }
    assert_eq!(
        stdout
            .lines()
            .filter(|l| ["| PASS |", "| MISS |", "| UNSURE |"].iter().any(|v| l.ends_with(v)))
            .count(),
        targets.len(),
        "no other target rows:\n{stdout}"
    );
}

/// "1.034x [0.981-1.100]": the median and the interval's ends.
fn interval(cell: &str) -> Option<(f64, f64, f64)> {
    let (median, rest) = cell.split_once("x [")?;
    let (lo, hi) = rest.strip_suffix(']')?.split_once('-')?;
    Some((median.parse().ok()?, lo.parse().ok()?, hi.parse().ok()?))
}

#[test]
fn the_benchs_interval_covers_the_median_as_often_as_it_says() {
    let out = run_limited(
        Command::new("python3")
            .args(["-m", "unittest", "-v", "test_intervals"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/bench-py")),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench-py/test_intervals.py:\n{stderr}");
    assert!(stderr.contains("Ran 5 tests"), "{stderr}");
}

#[test]
fn the_clients_bench_refuses_without_wrk_and_nginx() {
    // The interpreter itself (python3 may be a shim that needs PATH), then no PATH:
    // none of the tools is found, whatever is installed.
    let Ok(found) = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
    else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "under CI: no python3");
        eprintln!("SKIPPED: no python3");
        return;
    };
    let python = String::from_utf8(found.stdout).unwrap().trim().to_string();
    // A client it does not know, or only one, is refused before anything starts.
    // A reference named without its program is refused too.
    for (clients, said) in [
        ("bare,boto", "boto"),
        ("bare", "fewer than two"),
        ("bare,crt", "crt named without --crt-python"),
        ("lean,tm-prefix", "tm-prefix named without --tm-client"),
    ] {
        let out = run_limited(
            Command::new(&python).arg(SCRIPT).args([
                "--s3sweep",
                BIN,
                "--bench-client",
                "bare_sdk",
                "--clients",
                clients,
            ]),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--clients {clients}: {stderr}");
        assert!(stderr.contains("--clients"), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
    }
    let out = run_limited(
        Command::new(python)
            .arg(SCRIPT)
            .args(["--s3sweep", BIN, "--bench-client", "bare_sdk"])
            .env("PATH", "/nonexistent"),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for said in ["wrk", "nginx", "openssl", "make bench-tools"] {
        assert!(stderr.contains(said), "the refusal names {said}: {stderr}");
    }
    assert!(out.stdout.is_empty(), "nothing measured");
}

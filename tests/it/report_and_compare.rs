//! The commands for people, as a user runs them: `local --plot`, `report` (tables,
//! Markdown, cost, plots) and `compare` on results from `local` and `run`, and the
//! progress output when stderr is not a terminal. Each test starts its own servers on
//! free loopback ports and removes its files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{run_bounded, Serve, BIN, EXPRESS_BUCKET, STANDARD_BUCKET};

fn run(args: &[&str]) -> Output {
    run_bounded(Command::new(BIN).args(args))
}

fn ok(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    (stdout, stderr)
}

/// Every float of a result document (outside the echoed inputs: `request` and the
/// analysis's `thresholds`) has at most three decimals or at most four significant
/// digits: no `0.13497499999999998`. Returns how many floats were checked.
fn assert_tidy(doc: &serde_json::Value) -> usize {
    fn ok(text: &str) -> bool {
        let (mantissa, exp) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i32>().unwrap()),
            None => (text, 0),
        };
        let mantissa = mantissa.trim_start_matches('-');
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let frac = frac.trim_end_matches('0');
        let decimals = frac.len() as i32 - exp;
        let digits = format!("{int}{frac}");
        let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
        decimals <= 3 || significant <= 4
    }
    fn walk(v: &serde_json::Value, path: &str, bad: &mut Vec<String>, n: &mut usize) {
        match v {
            serde_json::Value::Number(x) if x.is_f64() => {
                *n += 1;
                if !ok(&x.to_string()) {
                    bad.push(format!("{path} = {x}"));
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(v, &format!("{path}[{i}]"), bad, n);
                }
            }
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    if (path.is_empty() && k == "request") || (path == ".analysis" && k == "thresholds") {
                        continue;
                    }
                    walk(v, &format!("{path}.{k}"), bad, n);
                }
            }
            _ => {}
        }
    }
    let (mut bad, mut n) = (Vec::new(), 0);
    walk(doc, "", &mut bad, &mut n);
    assert!(bad.is_empty(), "untidy floats:\n{}", bad.join("\n"));
    n
}

#[test]
fn the_tidiness_check_catches_float_noise() {
    let noisy = serde_json::json!({"results": [{"cpu_ms_per_get": 0.13497499999999998}]});
    assert!(std::panic::catch_unwind(|| assert_tidy(&noisy)).is_err());
    let fine = serde_json::json!({"a": 0.135, "b": 20248.418, "c": 0.0001235, "d": 1e-7, "e": 123457.0,
                                  "request": {"prices": {"x": 0.0000166667}}});
    assert_eq!(assert_tidy(&fine), 5);
    assert!(std::panic::catch_unwind(|| assert_tidy(&serde_json::json!({"f": 1.23456e-7}))).is_err());
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("s3sweep-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small `local` run: both buckets, two worker counts, `reps` repetitions.
fn local(dir: &TempDir, name: &str, reps: &str, extra: &[&str]) -> (String, String, String) {
    let json = dir.path(name);
    let mut args = vec![
        "local",
        "--objects",
        "40",
        "--size",
        "1024",
        "--workers",
        "1,8",
        "--repetitions",
        reps,
        "--in-process",
        "--json",
        &json,
    ];
    args.extend_from_slice(extra);
    let (stdout, stderr) = ok(&run(&args));
    (json, stdout, stderr)
}

#[test]
fn local_then_report_tables_markdown_cost_and_plots() {
    let dir = TempDir::new("people-report");
    let png = dir.path("local.png");
    let (json, stdout, stderr) = local(&dir, "a.json", "1", &["--plot", &png, "--target-wall-ms", "100000"]);
    // stderr is a pipe, not a terminal: one plain line per configuration, no bar.
    assert_eq!(
        stderr.matches("rep 1:").count(),
        4,
        "one line per configuration expected:\n{stderr}"
    );
    assert!(!stderr.contains("[="), "{stderr}");
    assert!(stdout.contains("bucket standard-like") && stdout.contains("bucket express-like"));
    assert!(stdout.contains("cheapest within the 100000 ms target"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("express-like") && l.contains("┆ express ")),
        "express-like is priced as Express:\n{stdout}"
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 20_000, "{} bytes", bytes.len());
    // Numbers rounded to what the measurement supports, everywhere in the document:
    // rows, breakdowns, client blocks, figures, the model fit and predictions.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["analysis"]["buckets"][0]["fit"].is_object(), "{doc}");
    assert!(assert_tidy(&doc) > 100);

    // report: the human tables and cost.
    let (text, _) = ok(&run(&["report", &json]));
    assert!(text.contains("a.json: local on linux"), "{text}");
    assert!(text.contains("bucket standard-like"), "{text}");
    assert!(text.contains("$ per 1k GETs"), "{text}");
    assert!(text.contains("assumed: not run in Lambda"), "{text}");
    assert!(text.contains("cheapest within the 100000 ms target"), "{text}");
    // Overrides: memory and target.
    let (text, _) = ok(&run(&[
        "report",
        &json,
        "--lambda-memory-mb",
        "1769",
        "--target-wall-ms",
        "1",
    ]));
    assert!(text.contains("Lambda at 1769 MB"), "{text}");
    assert!(
        text.contains("no configuration without errors met the 1 ms target"),
        "{text}"
    );

    // Markdown.
    let (md, _) = ok(&run(&["report", &json, "--markdown"]));
    assert!(
        md.contains(&format!("### bucket {EXPRESS_BUCKET}\n\n| workers | rep |")),
        "{md}"
    );
    assert!(md.contains("assumed: not run in Lambda):\n\n| bucket "), "{md}");
    // JSON: the document itself.
    let (doc, _) = ok(&run(&["report", &json, "--json"]));
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let orig: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc, orig);

    // Plots by extension.
    let svg = dir.path("r.svg");
    let (_, err) = ok(&run(&["report", &json, "--plot", &svg]));
    assert!(err.contains("plot written"), "{err}");
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.contains("express-like"));
    let out = run(&["report", &json, "--plot", &dir.path("r.bmpx")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(".svg or .png"));
}

#[test]
fn compare_two_local_runs_and_two_buckets_of_one() {
    let dir = TempDir::new("people-compare");
    let (a, _, _) = local(&dir, "a.json", "3", &["--quiet"]);
    let (b, _, stderr) = local(&dir, "b.json", "3", &["--quiet"]);
    assert!(!stderr.contains("rep 1:"), "--quiet prints no progress:\n{stderr}");

    let (text, _) = ok(&run(&["compare", &a, &b]));
    assert!(
        text.contains("A standard-like vs B standard-like (matched by same name)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("A {EXPRESS_BUCKET} vs B {EXPRESS_BUCKET}")),
        "{text}"
    );
    assert!(text.contains("B/A wall"), "{text}");
    assert!(!text.contains("no significance claimed"), "{text}");

    // Standard vs Express inside one run: Express is clearly faster at 1 worker.
    let (text, _) = ok(&run(&[
        "compare",
        &a,
        "--bucket-a",
        STANDARD_BUCKET,
        "--bucket-b",
        EXPRESS_BUCKET,
    ]));
    let one = text
        .lines()
        .find(|l| l.trim_start_matches(['│', ' ']).starts_with("1 "))
        .unwrap_or_else(|| panic!("no 1-worker row:\n{text}"));
    // 3 rounds each at several worker counts: no test can reach 0.05 after the
    // correction for the worker counts compared, and the line says how many would.
    assert!(
        one.contains("no difference shown (cannot reach p<0.05;"),
        "{one}\n{text}"
    );

    let (json, _) = ok(&run(&["compare", &a, &b, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["pairs"].as_array().unwrap().len(), 2);
    assert!(v["pairs"][0]["configs"][0]["wall_ratio"].is_number());
    assert!(assert_tidy(&v) > 10);

    let out = run(&["compare", &a, &b, "--bucket-a", "nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("standard-like, express-like"), "{err}");
    let out = run(&["compare", &dir.path("missing.json"), &b]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"));
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn run_output_feeds_report_and_compare_with_request_prices() {
    let dir = TempDir::new("people-run");
    let server = Serve::start(&["people-bucket=none"], &[]);
    server.seed("people-bucket", 20, 512, Path::new(&dir.path("manifest.json")));
    let event = dir.0.join("event.json");
    write(
        &event,
        r#"{"buckets": ["people-bucket"], "object_count": 20, "workers": [1, 4],
            "prices": {"s3_standard_get_per_1000_usd": 1.0, "lambda_memory_mb": 128, "lambda_architecture": "arm64",
                       "lambda_arm64_gb_s_usd": 0},
            "target_wall_ms": 60000}"#,
    );
    let out = run(&[
        "run",
        "--event",
        &event.display().to_string(),
        "--endpoint",
        &server.endpoint,
    ]);
    let (stdout, stderr) = ok(&out);
    assert!(stderr.contains("cheapest within the 60000 ms target"), "{stderr}");
    let result = dir.path("run.json");
    write(Path::new(&result), &stdout);
    let (text, _) = ok(&run(&["report", &result]));
    // 20 GETs at $1 per 1,000 = $0.02 per configuration, Lambda free: $1 per 1,000 GETs.
    assert!(text.contains("$0.0200"), "{text}");
    assert!(text.contains("$1.0000"), "{text}");
    assert!(text.contains("Lambda at 128 MB arm64"), "{text}");
    let (text, _) = ok(&run(&["compare", &result, &result]));
    assert!(text.contains("no significance claimed"), "{text}");
    assert!(text.contains("1.00"), "{text}");

    // A bad price is named with the other bad fields, before anything runs.
    write(
        &event,
        r#"{"buckets": ["people-bucket"], "workers": [0], "prices": {"lambda_memory_mb": 1, "s3_express_get_per_1000_usd": -1}}"#,
    );
    let out = run(&[
        "run",
        "--event",
        &event.display().to_string(),
        "--endpoint",
        &server.endpoint,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for f in [
        "workers[0]",
        "prices.lambda_memory_mb",
        "prices.s3_express_get_per_1000_usd",
    ] {
        assert!(err.contains(f), "{f} not named in {err}");
    }
}

/// A pseudo-terminal pair, sized 160 x 40.
fn pty() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut master = 0;
    let mut slave = 0;
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors, which we then own.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size) };
    assert_eq!(rc, 0, "openpty failed");
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

#[test]
fn progress_bars_on_a_terminal() {
    use std::io::Read;
    let (mut master, slave) = pty();
    let dir = TempDir::new("people-tty");
    let json = dir.path("tty.json");
    let mut child = Command::new(BIN)
        .args([
            "local",
            "--objects",
            "60",
            "--size",
            "1024",
            "--workers",
            "1,4",
            "--in-process",
            "--json",
            &json,
        ])
        .env("TERM", "xterm")
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Read the terminal until the child is gone (reads then fail with EIO).
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&text).to_string()
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "local did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let screen = reader.join().unwrap();
    // The live bar: position of the total, a rate, the error count.
    assert!(screen.contains("/60"), "no bar position on the terminal:\n{screen}");
    assert!(screen.contains("objects"), "{screen}");
    assert!(screen.contains("errors 0"), "{screen}");
    assert!(screen.contains("standard-like workers 1 rep 1"), "{screen}");
    // Each bar ends as the configuration's result line.
    assert_eq!(screen.matches(" rep 1: ").count(), 4, "{screen}");
}

#[test]
fn run_writes_its_result_to_s3_and_report_and_compare_read_it_back() {
    let dir = TempDir::new("people-s3");
    let server = Serve::start(&["people-bucket=none", "results-bucket=none"], &[]);
    let e = server.endpoint.as_str();
    server.seed("people-bucket", 20, 512, Path::new(&dir.path("manifest.json")));
    let sweep = [
        "run",
        "--bucket",
        "people-bucket",
        "--objects",
        "20",
        "--workers",
        "1,4",
        "--endpoint",
        e,
    ];
    fn with<'a>(sweep: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [sweep, extra].concat()
    }
    let (stdout, stderr) = ok(&run(&with(&sweep, &["--results-uri", "s3://results-bucket/runs/"])));
    // Two configurations and the end: three writes, none failed.
    let line = stderr
        .lines()
        .find(|l| l.starts_with("result written to "))
        .expect(&stderr);
    assert!(line.contains("(3 writes, 0 failed)"), "{line}");
    let uri = line.split_whitespace().nth(3).unwrap().to_string();
    assert!(
        uri.starts_with("s3://results-bucket/runs/cli-") && uri.ends_with(".json"),
        "{uri}"
    );
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["results_uri"], uri.as_str());
    let file = dir.path("run.json");
    write(Path::new(&file), &stdout);

    report_and_compare_read_the_object_as_the_file(&uri, &file, e);
    a_missing_object_or_a_uri_without_one_is_a_clear_error(&file, e);
    // A bad destination is refused before anything runs, named by its flag.
    let out = run(&with(&sweep, &["--results-uri", "results-bucket/runs"]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--results-uri"));
    // A destination that cannot be written: the result is printed whole, says so
    // (`results_writes.status` failed), and the run fails (issue 49: no result lost
    // without a word).
    a_result_s3_does_not_hold_fails_the_run_and_says_so(&run(&with(
        &sweep,
        &["--results-uri", "s3://no-such-bucket/runs"],
    )));
}

/// `report` reads the result object `uri` as it reads its copy `file`: the same tables,
/// its first paragraph naming the source; its JSON keeps the rows and the writes;
/// `compare` reads it too.
fn report_and_compare_read_the_object_as_the_file(uri: &str, file: &str, e: &str) {
    let (from_s3, _) = ok(&run(&["report", uri, "--endpoint", e]));
    let (from_file, _) = ok(&run(&["report", file]));
    // The first paragraph names the source (wrapped at the width: one line or two).
    let body = |t: &str| t.split_once("\n\n").map_or(String::new(), |(_, b)| b.to_string());
    assert!(from_s3.starts_with(uri), "{from_s3}");
    assert!(from_s3.contains("people-bucket"), "{from_s3}");
    assert_eq!(body(&from_s3), body(&from_file));
    let (json, _) = ok(&run(&["report", uri, "--endpoint", e, "--json"]));
    let kept: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(kept["results"].as_array().unwrap().len(), 2);
    assert_eq!(kept["results_writes"]["complete"], true);
    assert_eq!(kept["results_writes"]["written"], 2, "the writes before the last");
    let (text, _) = ok(&run(&["compare", uri, file, "--endpoint", e]));
    assert!(text.contains("1.00"), "{text}");
}

/// An object that is not there, and a URI that names no object: clear errors.
fn a_missing_object_or_a_uri_without_one_is_a_clear_error(file: &str, e: &str) {
    let out = run(&["report", "s3://results-bucket/runs/nothing.json", "--endpoint", e]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("s3://results-bucket/runs/nothing.json") && err.contains("NoSuchKey"),
        "{err}"
    );
    let out = run(&["compare", "s3://results-bucket/", file, "--endpoint", e]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no object"));
}

/// A run whose result could not be written (`out`): it failed, printed the result
/// whole with `results_writes.status` failed, and said S3 does not hold it.
fn a_result_s3_does_not_hold_fails_the_run_and_says_so(out: &std::process::Output) {
    assert!(!out.status.success(), "a lost result fails the run");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let writes = &answer["results_writes"];
    assert_eq!(writes["status"], "failed", "{writes}");
    assert!(
        stderr.contains("run: 3 of 3 writes of the result to s3://no-such-bucket/runs/")
            && stderr.contains("S3 does not hold it"),
        "{stderr}"
    );
    assert_eq!(
        (writes["written"].as_u64(), writes["failed"].as_u64()),
        (Some(0), Some(3)),
        "{writes}"
    );
    assert!(
        writes["errors"][0].as_str().unwrap().contains("NoSuchBucket"),
        "{writes}"
    );
    assert!(stderr.contains("3 failed"), "{stderr}");
    assert_eq!(answer["results"].as_array().unwrap().len(), 2);
}

/// `report` of the committed demo at a width: stdout, stderr and the exit status.
fn report_at(columns: &str, extra: &[&str]) -> Output {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/demo.json");
    run_bounded(
        Command::new(BIN)
            .arg("report")
            .arg(demo)
            .args(extra)
            .env("COLUMNS", columns),
    )
}

#[test]
fn report_fits_the_terminal_width_and_wide_keeps_every_column() {
    for width in [100, 72] {
        let (text, _) = ok(&report_at(&width.to_string(), &[]));
        let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
        assert!(long.is_empty(), "lines over {width} characters: {long:#?}\n{text}");
        assert!(text.contains("columns not shown (to fit the width)"), "{text}");
        assert!(
            text.contains("verdicts: 1-16 latency, 20 plateau, 32-128 latency"),
            "{text}"
        );
    }
    let headers = [
        "workers",
        "rep",
        "wall ms",
        "objects/s",
        "MiB/s",
        "ttfb p50 ms",
        "ttfb p99 ms",
        "pool wait p50 ms",
        "cpu ms/GET",
        "conns",
        "tls p50 ms",
        "sessions",
        "in flight",
        "errors",
        "wire MiB/s",
        "verdict",
    ];
    let (wide, _) = ok(&report_at("100", &["--wide"]));
    let header = wide.lines().find(|l| l.contains("│ workers ┆")).expect(&wide);
    let cells: Vec<&str> = header
        .split(['│', '┆'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cells, headers, "{header}");
    assert!(!wide.contains("columns not shown"), "{wide}");
    assert!(wide.lines().any(|l| l.chars().count() > 200), "--wide does not wrap");
    let (picked, _) = ok(&report_at("100", &["--columns", "workers,ttfb_p99_ms,verdict"]));
    assert!(picked.contains("│ workers ┆ ttfb p99 ms ┆ verdict │"), "{picked}");
    let bad = report_at("100", &["--columns", "workers,wal_ms,nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("\"wal_ms\", \"nope\"") && err.contains("wall_ms"), "{err}");
}

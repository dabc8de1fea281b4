//! A reader that stops early (`s3sweep report r.json | head -1`) ends every command
//! quietly: stdout closed before the command writes a byte, the process exits 0 or is
//! ended by SIGPIPE (status 141 in a shell), never a panic, a backtrace or status 101.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::BIN;

/// Runs `s3sweep args` with its stdout already closed by the reader; what went wrong,
/// if anything.
fn closed_stdout_problem(args: &[&str]) -> Option<String> {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone before the first write
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            return Some(format!("{args:?}: still running after 90 s with stdout closed"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let quiet = !stderr.contains("panicked") && !stderr.contains("Broken pipe") && !stderr.contains("backtrace");
    let usual = status.success() || status.signal() == Some(libc::SIGPIPE);
    (!(quiet && usual)).then(|| format!("{args:?}: {status:?}, stderr:\n{stderr}"))
}

#[test]
fn every_command_ends_quietly_when_stdout_closes() {
    let commands: &[&[&str]] = &[
        &["report", "docs/demo.json"],
        &["report", "docs/demo.json", "--markdown"],
        &["report", "docs/demo.json", "--json"],
        &[
            "compare",
            "docs/demo.json",
            "--bucket-a",
            "standard-like",
            "--bucket-b",
            "express-like--lab1-az1--x-s3",
        ],
        &["man"],
        &["completions", "bash"],
        &["run", "--bucket", "my-bucket", "--print-event"],
        &["serve", "--port", "0"],
        &["local", "--objects", "20", "--workers", "1,2"],
    ];
    let problems: Vec<String> = commands.iter().filter_map(|args| closed_stdout_problem(args)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

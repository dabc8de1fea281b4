//! Files written safely and read within bounds (issue 53): the request log is written
//! to a new temporary file and put in place at the end, so a symlink planted at its
//! name is replaced, never written through, and a file already there is refused
//! unless `--force`; `history` skips anything under its directory that is not a
//! regular file (a FIFO named `*.json` hung it), budgets by the bytes it reads (20
//! links to one result were budgeted at the links' own few bytes and all read), and
//! saturates its arithmetic (`--max-total-mib 17592186044416` overflowed to a budget
//! of 0 and printed nothing, exit 0).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use s3sweep::engine::requests_log::RequestsLog;
use s3sweep::engine::Quiet;

use crate::common::{run_within, BIN};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/demo.json");

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-written-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_request_log_never_writes_through_a_link_nor_overwrites_unasked() {
    let d = dir("log");
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "the user's file").unwrap();
    let log = d.join("requests.csv");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    // Without --force: refused, nothing written anywhere.
    let err = RequestsLog::create(&log, 1 << 20, Arc::new(Quiet), false)
        .err()
        .unwrap();
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file");
    // With --force: the link is replaced by the log; its target is untouched.
    let written = RequestsLog::create(&log, 1 << 20, Arc::new(Quiet), true).unwrap();
    written.finish().unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file");
    assert!(!std::fs::symlink_metadata(&log).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("bucket,workers"));
    // A plain file there: refused without --force, through the binary too.
    let out = run_within(
        "run --requests-log onto an existing file",
        Command::new(BIN)
            .args([
                "run",
                "--bucket",
                "b-1",
                "--endpoint",
                "http://127.0.0.1:9",
                "--requests-log",
            ])
            .arg(&log),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a file is there already") && stderr.contains("--force"),
        "{stderr}"
    );
    // A log dropped unfinished (a failed run) leaves no temporary file behind.
    let other = d.join("other.jsonl");
    drop(RequestsLog::create(&other, 1 << 20, Arc::new(Quiet), false).unwrap());
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let _ = std::fs::remove_dir_all(&d);
}

fn history(args: &[&str]) -> (std::process::Output, String) {
    let out = run_within(
        "s3sweep history",
        Command::new(BIN).arg("history").args(args),
        Duration::from_secs(60),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn history_reads_regular_files_by_the_bytes_it_reads_and_saturates() {
    let d = dir("history");
    let one = std::fs::read_to_string(DEMO).unwrap();
    let target = d.join("big-result.data");
    std::fs::write(&target, &one).unwrap();
    // 20 links to one result, and a FIFO named like a result (newest by name).
    for i in 1..=20 {
        std::os::unix::fs::symlink(&target, d.join(format!("run-{i:02}.json"))).unwrap();
    }
    fifo(&d.join("run-99.json"));
    let source = d.display().to_string();
    // A budget of 1 MiB holds 1 MiB / the result's size of them, not all 20.
    let fits = (1usize << 20) / one.len();
    assert!(fits < 20, "the result is too small for the test: {} bytes", one.len());
    let (out, text) = history(&[&source, "--max-total-mib", "1"]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{fits} results read from")),
        "want {fits}: {text}"
    );
    // The largest budget clap takes is no budget: all 20, not 0 (it was 2^64 bytes).
    for mib in ["17592186044416", "18446744073709551615"] {
        let (out, text) = history(&[&source, "--max-total-mib", mib]);
        assert!(out.status.success(), "{mib}: {text}");
        assert!(text.contains("20 results read from"), "{mib}: {text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

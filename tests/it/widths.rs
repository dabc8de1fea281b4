//! Every command's output fits the terminal: `local` (its tables, the lines under
//! them, the progress lines and the closing lines), `report`, `compare` and
//! `history`, at COLUMNS=80 and 100, on docs/demo.json and on a multi-axis result
//! (two clients x two hedge policies, made here with `local`). No line is longer
//! than COLUMNS; what a table leaves out to fit is said.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{run_within, BIN};

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/demo.json")
}

/// `s3sweep ARGS` at `COLUMNS=width`, bounded; it must succeed.
fn at(width: usize, args: &[&str]) -> (String, String) {
    let out: Output = run_within(
        "s3sweep",
        Command::new(BIN).args(args).env("COLUMNS", width.to_string()),
        Duration::from_secs(180),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The lines of `text` longer than `width` characters.
fn long_lines(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > width)
        .map(str::to_string)
        .collect()
}

/// A directory of its own under the temporary folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("s3sweep-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_command_fits_80_and_100_columns() {
    let dir = Scratch::new("widths");
    let multi = dir.path("multi.json");
    // The multi-axis run, at 80 columns: its progress lines (stderr is not a terminal
    // here: one line per configuration) and everything it prints.
    let (stdout, stderr) = at(
        80,
        &[
            "local",
            "--objects",
            "40",
            "--workers",
            "1,4",
            "--clients",
            "sdk,lean",
            "--hedge",
            "off,p95",
            "--json",
            &multi,
        ],
    );
    for (what, text) in [("local's stdout", &stdout), ("local's stderr", &stderr)] {
        let long = long_lines(text, 80);
        assert!(long.is_empty(), "{what} over 80: {long:#?}");
    }
    assert!(
        stderr.contains("express-like--lab1-az1--x-s3 lean hedge p95 workers"),
        "{stderr}"
    );
    assert!(stdout.contains("cold path:"), "{stdout}");
    // A history of three runs: the demo twice (ten minutes apart) and the multi-axis run.
    let history = Scratch::new("widths-history");
    let mut later: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(demo()).unwrap()).unwrap();
    later["started_unix_ms"] = (later["started_unix_ms"].as_u64().unwrap() + 600_000).into();
    std::fs::copy(demo(), history.0.join("a.json")).unwrap();
    std::fs::write(history.0.join("b.json"), later.to_string()).unwrap();
    std::fs::copy(&multi, history.0.join("c.json")).unwrap();
    let demo = demo().display().to_string();
    let history_dir = history.0.display().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", &demo],
        vec!["report", &multi],
        vec!["compare", &demo, &demo],
        vec!["compare", &multi, &multi],
        vec!["history", &history_dir],
    ];
    for width in [80, 100] {
        for args in &commands {
            let (stdout, stderr) = at(width, args);
            let long = long_lines(&stdout, width);
            assert!(long.is_empty(), "{args:?} at {width}: {long:#?}\n{stdout}");
            assert!(long_lines(&stderr, width).is_empty(), "{args:?} at {width}: {stderr}");
            let dropped = stdout.lines().find(|l| l.contains("not shown (to fit the width)"));
            if let Some(line) = dropped {
                assert!(
                    !line.contains("cpu_ms_per_get") && !line.contains("cpu ms/GET"),
                    "{args:?}: {line}"
                );
            }
        }
    }
    // History: one line per configuration that did not change.
    let (text, _) = at(100, &["history", &history_dir]);
    assert!(text.contains("no change beyond the runs' own spread"), "{text}");
    assert!(!Path::new(&multi).with_extension("none").exists());
}

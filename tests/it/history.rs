//! Issue 38: `s3sweep history SOURCE`. Results are generated from docs/demo.json (its
//! first rows, one run per file, a minute apart, objects/s wobbling by a few percent):
//! with objects/s halved and first-byte p50 doubled from run 11 on, every
//! configuration's change is found at run 11 and nowhere else; a flat series finds
//! none; runs of another configuration (memory) are another series, not a
//! change; of 10,000 files only the newest `--limit` are read (the older ones are not
//! results, so reading any of them would fail the command), and past the byte
//! budget the oldest are left out; an `s3://` source on the
//! lab reads the same way; an empty directory and files that are not results get an
//! error naming what is wrong.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::{run_within, Serve, BIN};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/demo.json");
/// docs/demo.json rows kept per generated result (workers 1 and 2 of each bucket).
const ROWS_WORKERS: [u64; 2] = [1, 2];
const RUNS: usize = 20;
/// The first run after the injected change (1-based).
const CHANGE_AT: usize = 11;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("s3sweep-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Result `run` (1-based) of a series: objects/s times `factor` (first-byte p50
/// divided by it), with a wobble of a few percent that interleaves the runs' ranks.
fn result(run: usize, factor: f64) -> String {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(DEMO).unwrap()).unwrap();
    let wobble = 1.0 + ((run * 7) % 5) as f64 * 0.01;
    v["started_unix_ms"] = Value::from(1_796_000_000_000u64 + run as u64 * 60_000);
    v["request"]["run_id"] = Value::from(format!("run-{run:02}"));
    let rows = v["results"].as_array_mut().unwrap();
    rows.retain(|r| ROWS_WORKERS.contains(&r["workers"].as_u64().unwrap()));
    for r in rows.iter_mut() {
        r.as_object_mut().unwrap().remove("timeline");
        let ops = r["objects_per_s"].as_f64().unwrap();
        r["objects_per_s"] = Value::from(ops * factor * wobble);
        let p50 = r["ttfb_ms"]["p50"].as_f64().unwrap();
        r["ttfb_ms"]["p50"] = Value::from(p50 / factor * wobble);
    }
    v.to_string()
}

/// `RUNS` results, the change from `CHANGE_AT` on when `step`, as (name, JSON).
fn series(step: bool) -> Vec<(String, String)> {
    (1..=RUNS)
        .map(|run| {
            let factor = if step && run >= CHANGE_AT { 0.5 } else { 1.0 };
            (format!("2026/11/{:02}/run-{run:02}.json", run), result(run, factor))
        })
        .collect()
}

fn write_all(dir: &Path, files: &[(String, String)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn history(args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("history").args(args);
    run_within("history", &mut cmd, Duration::from_secs(120))
}

fn ok_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "history failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every (series heading, change run, measure) of a history document.
fn changes(h: &Value) -> Vec<(String, u64, String)> {
    h["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let name = format!("{} w{}", s["bucket"], s["workers"]);
            s["changes"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |c| (name.clone(), c["run"].as_u64().unwrap(), c["measure"].to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_step_halfway_is_found_at_run_11_and_nowhere_else() {
    let dir = Dir::new("step");
    write_all(&dir.0, &series(true));
    let plot = dir.0.join("trend.svg");
    let html = dir.0.join("history.html");
    let h = ok_json(&history(&[
        dir.0.to_str().unwrap(),
        "--json",
        "--plot",
        plot.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]));
    assert_eq!(h["runs"], RUNS);
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), 4, "two buckets x workers 1 and 2: {series:?}");
    let found = changes(&h);
    // Each configuration: objects/s and first-byte p50, both at run 11.
    assert_eq!(found.len(), 8, "{found:?}");
    assert!(found.iter().all(|(_, run, _)| *run == CHANGE_AT as u64), "{found:?}");
    let c = &series[0]["changes"][0];
    let ratio = c["ratio"].as_f64().unwrap();
    assert!((0.45..0.55).contains(&ratio) || (1.8..2.2).contains(&ratio), "{c}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("<svg") && svg.contains("polyline"), "{svg}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("change at run 11"), "{page}");
    // The text for people says the same.
    let out = history(&[dir.0.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches("change at run 11 ").count(), 8, "{text}");
    assert!(!text.contains("no change beyond"), "{text}");
}

#[test]
fn a_flat_series_has_no_change() {
    let dir = Dir::new("flat");
    write_all(&dir.0, &series(false));
    let h = ok_json(&history(&[dir.0.to_str().unwrap(), "--json"]));
    assert_eq!(h["runs"], RUNS);
    assert_eq!(changes(&h), vec![]);
}

#[test]
fn runs_of_other_configurations_are_other_series_not_a_change() {
    let dir = Dir::new("grouped");
    // Runs 11 to 20 are slower, and measured at another memory size: another
    // configuration, not a change of this one.
    let files: Vec<(String, String)> = series(true)
        .into_iter()
        .enumerate()
        .map(|(i, (name, text))| {
            if i + 1 < CHANGE_AT {
                return (name, text);
            }
            let mut v: Value = serde_json::from_str(&text).unwrap();
            for r in v["results"].as_array_mut().unwrap() {
                r["memory_mb"] = Value::from(1024);
            }
            (name, v.to_string())
        })
        .collect();
    write_all(&dir.0, &files);
    let h = ok_json(&history(&[dir.0.to_str().unwrap(), "--json"]));
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), 8, "{series:?}");
    assert!(series.iter().all(|s| s["points"].as_array().unwrap().len() == 10));
    assert_eq!(changes(&h), vec![]);
}

#[test]
fn of_10000_files_only_the_newest_limit_are_read() {
    let dir = Dir::new("many");
    // 9,980 older files that are not results: reading any one fails the command.
    for i in 0..9_980 {
        let sub = dir.0.join(format!("2026/10/{:02}", 1 + i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(sub.join(format!("old-{i:05}.json")), "not a result").unwrap();
    }
    write_all(&dir.0, &series(true));
    let h = ok_json(&history(&[dir.0.to_str().unwrap(), "--json", "--limit", "20"]));
    assert_eq!(h["runs"], RUNS);
    assert!(changes(&h).iter().all(|(_, run, _)| *run == CHANGE_AT as u64));
    // One more and the newest old file is read, and named.
    let out = history(&[dir.0.to_str().unwrap(), "--json", "--limit", "21"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("old-09979.json"), "{err}");
    assert!(err.contains("1 of the 21 newest files are not results"), "{err}");
}

#[test]
fn a_byte_budget_leaves_the_oldest_out_and_says_so() {
    let dir = Dir::new("budget");
    let demo: Value = serde_json::from_str(&std::fs::read_to_string(DEMO).unwrap()).unwrap();
    let mut size = 0;
    for run in 1..=RUNS {
        let mut v = demo.clone();
        v["started_unix_ms"] = Value::from(1_796_000_000_000u64 + run as u64 * 60_000);
        let text = v.to_string();
        size = text.len();
        std::fs::write(dir.0.join(format!("run-{run:02}.json")), text).unwrap();
    }
    let out = history(&[dir.0.to_str().unwrap(), "--json", "--max-total-mib", "1"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let kept = ok_json(&out)["runs"].as_u64().unwrap() as usize;
    assert_eq!(kept, (1 << 20) / size, "{err}");
    assert!(
        err.contains(&format!("{} older results left out", RUNS - kept)),
        "{err}"
    );
}

#[test]
fn bad_sources_get_an_error_naming_what_is_wrong() {
    let dir = Dir::new("bad");
    let out = history(&[dir.0.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no result files (*.json) there"),
        "{err}"
    );
    std::fs::write(dir.0.join("notes.json"), "{\"hello\": 1}").unwrap();
    let out = history(&[dir.0.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("notes.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let missing = dir.0.join("missing");
    let out = history(&[missing.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not a directory"), "{err}");
    let out = history(&[dir.0.to_str().unwrap(), "--limit", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--limit"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_source_on_the_lab_reads_the_newest_results() {
    let server = Serve::start(&["results-bucket=none"], &[]);
    let client = s3sweep::sweep_client(crate::common::lab::client_options(&server.endpoint))
        .await
        .unwrap();
    let s3 = client.s3(crate::common::seed_settings());
    let old = (0..5).map(|i| (format!("2026/10/01/old-{i}.json"), "not a result".to_string()));
    let other = std::iter::once(("elsewhere/run.json".to_string(), "not a result".to_string()));
    for (name, text) in series(true).into_iter().chain(old).chain(other) {
        let key = if name.starts_with("elsewhere") {
            name
        } else {
            format!("canary/{name}")
        };
        s3.put_object()
            .bucket("results-bucket")
            .key(key)
            .body(text.into_bytes().into())
            .send()
            .await
            .unwrap();
    }
    let e = server.endpoint.clone();
    let out = tokio::task::spawn_blocking(move || {
        history(&[
            "s3://results-bucket/canary/",
            "--json",
            "--limit",
            "20",
            "--endpoint",
            &e,
        ])
    })
    .await
    .unwrap();
    let h = ok_json(&out);
    assert_eq!(h["runs"], RUNS);
    let found = changes(&h);
    assert_eq!(found.len(), 8, "{found:?}");
    assert!(found.iter().all(|(_, run, _)| *run == CHANGE_AT as u64), "{found:?}");
    let e = server.endpoint.clone();
    let out = tokio::task::spawn_blocking(move || history(&["s3://results-bucket/canary/", "--endpoint", &e]))
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("5 of the 25 newest files are not results"),
        "{err}"
    );
    assert!(
        err.contains("s3://results-bucket/canary/2026/10/01/old-0.json"),
        "{err}"
    );
    // A prefix with nothing under it: said, naming it.
    let e = server.endpoint.clone();
    let out = tokio::task::spawn_blocking(move || history(&["s3://results-bucket/nothing/", "--endpoint", &e]))
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("listing s3://results-bucket/nothing/"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// `history --html` opened in headless Chromium (as `report --html` is in
/// html_report.rs): no console message, the trend plot drawn (a line per
/// configuration), and every row `history --markdown` prints is a row of the page.
#[test]
fn the_history_page_in_a_headless_browser() {
    use crate::html_report::{browse, chromium_or_skip, console, dom_rows, markdown_rows};
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let dir = Dir::new("browser");
    let runs = dir.0.join("runs");
    write_all(&runs, &series(true));
    let page = dir.0.join("history.html");
    let made = history(&[runs.to_str().unwrap(), "--html", page.to_str().unwrap(), "--markdown"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let markdown = String::from_utf8_lossy(&made.stdout).into_owned();
    let (dom, stderr) = browse(&chromium, &page, "--dump-dom", &dir.0.join("profile"));
    assert_eq!(console(&stderr), Vec::<&str>::new(), "{stderr}");
    let svg = dom.split("<svg").nth(1).expect("an SVG in the page");
    assert!(svg.matches("<polyline").count() >= 4, "a line per configuration");
    let rows = dom_rows(&dom);
    let wanted = markdown_rows(&markdown);
    assert_eq!(wanted.len(), 4 * (RUNS + 1), "{markdown}");
    for row in &wanted {
        assert!(rows.contains(row), "the page lacks the row {row:?}");
    }
}

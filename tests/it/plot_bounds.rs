//! `report --plot` on hostile numbers, as anyone can write a result file: each
//! numeric field a figure or a table computes from, in one row of a real result
//! (docs/demo.json, a four-panel figure; docs/memory-demo.json, a memory sweep), set
//! to each extreme value JSON can carry, and the built binary run with a bound per
//! run. Before the values were bounded (`render::sane`), a throughput of -1e308 or a
//! first-byte p50 of 1e-308 hung the renderer (59 s at 11 GB and over 400 s in a
//! release build; a debug build panicked on an overflow in plotters).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{run_within, BIN};

/// Each run's bound: generous for a busy 2-core machine (a run takes about 50 ms).
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// The extremes: huge, negative huge, tiny, subnormal, negative, zero, the largest
/// u64, and a number past f64 (a parse error, said as one). JSON has no NaN or
/// infinity.
const EXTREMES: [&str; 8] = [
    "1e308",
    "-1e308",
    "1e-308",
    "5e-324",
    "-1",
    "0",
    "18446744073709551615",
    "1e309",
];

/// The fields of the first row the figures and tables compute from, as JSON
/// pointers under `/results/0`.
const ROW_FIELDS: [&str; 26] = [
    "/workers",
    "/repetition",
    "/pool_connections",
    "/requests",
    "/ok",
    "/retries",
    "/bytes",
    "/wall_ms",
    "/objects_per_s",
    "/mib_per_s",
    "/ttfb_ms/p50",
    "/ttfb_ms/p90",
    "/ttfb_ms/p99",
    "/ttfb_ms/max",
    "/ttfb_ms/mean",
    "/ttfb_ms/count",
    "/ttlb_ms/p50",
    "/ttlb_ms/p90",
    "/ttlb_ms/p99",
    "/ttlb_ms/max",
    "/ttlb_ms/count",
    "/cpu_ms",
    "/cpu_ms_per_get",
    "/connections_opened",
    "/breakdown/connections_opened",
    "/errors/total",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The JSON pointers to try in `doc`: the row fields present in it, the memory size
/// of a memory sweep's row and every number of the request's prices.
fn pointers(doc: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = ROW_FIELDS
        .iter()
        .map(|f| format!("/results/0{f}"))
        .chain(["/results/0/axes/memory_mb".to_string()])
        .filter(|p| doc.pointer(p).is_some_and(|v| v.is_number()))
        .collect();
    if let Some(prices) = doc.pointer("/request/prices").and_then(|p| p.as_object()) {
        let numbers = prices.iter().filter(|(_, v)| v.is_number());
        out.extend(numbers.map(|(k, _)| format!("/request/prices/{k}")));
    }
    out
}

/// `doc` with the number at `pointer` written as `literal` (verbatim, so 1e309 and
/// 5e-324 reach the parser as typed).
fn with_value(doc: &serde_json::Value, pointer: &str, literal: &str) -> String {
    let mut doc = doc.clone();
    *doc.pointer_mut(pointer).unwrap() = serde_json::Value::String("@EXTREME@".into());
    serde_json::to_string(&doc).unwrap().replace("\"@EXTREME@\"", literal)
}

/// Runs `report FILE --plot OUT` and checks it ended within the bound, without a
/// panic: a plot written (what was left out said), or a clear error. Returns the
/// time it took.
fn report_plot(file: &Path, out: &Path, case: &str) -> Duration {
    let start = Instant::now();
    let run = run_within(
        case,
        Command::new(BIN).arg("report").arg(file).arg("--plot").arg(out),
        RUN_LIMIT,
    );
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!stderr.contains("panicked"), "{case}: a panic\n{stderr}");
    if run.status.success() {
        assert!(out.exists(), "{case}: no plot\n{stderr}");
    } else {
        assert_eq!(run.status.code(), Some(1), "{case}: not a clear error\n{stderr}");
        assert!(stderr.contains("error"), "{case}: {stderr}");
    }
    took
}

fn every_field_at_every_extreme(example: &str) {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs").join(example)).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("s3sweep-plot-bounds-{}-{example}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut slowest, mut cases) = (Duration::ZERO, 0);
    for pointer in pointers(&doc) {
        for literal in EXTREMES {
            let file = dir.join("result.json");
            std::fs::write(&file, with_value(&doc, &pointer, literal)).unwrap();
            let took = report_plot(
                &file,
                &dir.join("plot.svg"),
                &format!("{example} {pointer} = {literal}"),
            );
            slowest = slowest.max(took);
            cases += 1;
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(cases > 150, "{cases} cases");
    eprintln!("{example}: {cases} runs of report --plot, slowest {slowest:?}");
}

#[test]
fn every_plotted_field_at_every_extreme_finishes_in_time() {
    every_field_at_every_extreme("demo.json");
}

#[test]
fn a_memory_sweep_at_every_extreme_finishes_in_time() {
    every_field_at_every_extreme("memory-demo.json");
}

/// The two reproductions, as PNG (the pixel buffer and its encoding): each
/// finishes, says what it left out, and leaves a PNG.
#[test]
fn the_reproductions_plot_and_say_what_was_left_out() {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/demo.json")).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("s3sweep-plot-bounds-{}-png", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (pointer, literal, field) in [
        ("/results/0/objects_per_s", "-1e308", "objects_per_s"),
        ("/results/0/ttfb_ms/p50", "1e-308", "ttfb_ms"),
    ] {
        let file = dir.join("result.json");
        std::fs::write(&file, with_value(&doc, pointer, literal)).unwrap();
        let out = dir.join("plot.png");
        let run = run_within(
            pointer,
            Command::new(BIN).arg("report").arg(&file).arg("--plot").arg(&out),
            RUN_LIMIT,
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{pointer}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "left out 1 row(s) and 0 latency histogram(s) with values out of the plottable range ({field})"
            )),
            "{stderr}"
        );
        let png = std::fs::read(&out).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_file(&out).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The timeline picture (`report --timeline W --plot`) on a row whose timeline holds
/// an extreme value: it finishes in time without a panic, the timeline left out and
/// said (or, for a value past a field's type, a clear error). Before its values were
/// bounded, a 99%-done mark of 1e308 panicked inside plotters (an overflowing add).
#[test]
fn a_timeline_at_every_extreme_finishes_in_time() {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/demo.json")).unwrap()).unwrap();
    doc["results"][0]["timeline"] = serde_json::json!({
        "interval_ms": 100, "gets": [10, 12, 9], "body_bytes": [460800, 552960, 414720],
        "ttfb_p50_ms": [17.5, 17.9, 18.1], "ttfb_p99_ms": [40.0, 52.0, 48.0],
        "in_flight": [1.0, 1.0, 1.0], "done_95pct_ms": 250.0, "done_99pct_ms": 280.0
    });
    let workers = doc["results"][0]["workers"].to_string();
    let dir = std::env::temp_dir().join(format!("s3sweep-plot-bounds-{}-timeline", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fields = [
        "/interval_ms",
        "/gets/0",
        "/body_bytes/0",
        "/ttfb_p50_ms/0",
        "/ttfb_p99_ms/0",
        "/in_flight/0",
        "/done_95pct_ms",
        "/done_99pct_ms",
    ];
    let mut left_out = 0;
    for field in fields {
        for literal in EXTREMES {
            let file = dir.join("result.json");
            let pointer = format!("/results/0/timeline{field}");
            std::fs::write(&file, with_value(&doc, &pointer, literal)).unwrap();
            let case = format!("timeline {field} = {literal}");
            let out = dir.join("timeline.svg");
            let run = run_within(
                &case,
                Command::new(BIN)
                    .arg("report")
                    .arg(&file)
                    .args(["--timeline", &workers, "--plot"])
                    .arg(&out),
                RUN_LIMIT,
            );
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(!stderr.contains("panicked"), "{case}: a panic\n{stderr}");
            assert!(
                run.status.success() || matches!(run.status.code(), Some(1 | 2)) && stderr.contains("error"),
                "{case}: not a clear error\n{stderr}"
            );
            // The row's only timeline left out: said as such, or (nothing left to draw)
            // the refusal that names it.
            left_out += usize::from(
                stderr.contains("1 timeline(s) with values out of the plottable range")
                    || stderr.contains("a timeline with values out of range is not drawn"),
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(left_out >= 10, "only {left_out} runs said the timeline was left out");
}

//! Bad input: the corpus in tests/bad-requests/ (each file a malformed request, with
//! the exact fields its error must name in expected.json), plus generated cases too
//! large to keep as files, checked through the library (`Plan::from_json`, which the
//! Lambda's `Plan::from_value` shares) and through `s3sweep run --event`. Every one must
//! be a clear error naming the field: never a panic, never a huge echo of the input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use s3sweep::plan::Plan;

use crate::common::BIN;
/// Longest acceptable error text: a clear message, not an echo of a 10 MB input.
const MAX_ERROR_BYTES: usize = 8 * 1024;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-requests")
}

/// (file name, request text, expected fields): the files, then the generated cases.
fn corpus() -> Vec<(String, String, BTreeSet<String>)> {
    let dir = corpus_dir();
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let cases = expected["cases"].as_object().unwrap();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name == "expected.json" || !name.ends_with(".json") {
            continue;
        }
        let fields = cases
            .get(&name)
            .unwrap_or_else(|| panic!("{name} has no entry in expected.json"))
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect();
        out.push((name.clone(), std::fs::read_to_string(dir.join(&name)).unwrap(), fields));
    }
    assert_eq!(out.len(), cases.len(), "every expected.json entry has its file");
    // 2 MB: two of them stay under the 6 MB cap on a whole request (Lambda's payload
    // limit).
    let big = "x".repeat(2 << 20);
    let set = |fields: &[&str]| fields.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    out.push((
        "generated: a 10 MB request, over the 6 MB cap".into(),
        serde_json::json!({"buckets": ["b-1"], "key_template": "x".repeat(10 << 20)}).to_string(),
        set(&["(request)"]),
    ));
    out.push((
        "generated: a key given twice".into(),
        r#"{"buckets": ["b-1"], "workers": [1], "workers": [2]}"#.into(),
        set(&["workers"]),
    ));
    out.push((
        "generated: 2 MB strings".into(),
        serde_json::json!({"buckets": [big.clone()], "key_template": big.clone()}).to_string(),
        set(&["buckets[0]", "key_template"]),
    ));
    out.push((
        "generated: 2 MB unknown field name".into(),
        format!("{{\"buckets\": [\"b-1\"], \"{big}\": 1}}"),
        set(&[&format!("{:?}... ({} bytes)", "x".repeat(60), big.len())]),
    ));
    out.push((
        "generated: 100,000-deep nesting".into(),
        format!("{{\"buckets\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000)),
        set(&["(request)"]),
    ));
    out.push((
        "generated: 100-deep nesting in a field".into(),
        format!("{{\"buckets\": {}\"b-1\"{}}}", "[".repeat(100), "]".repeat(100)),
        set(&["buckets"]),
    ));
    out
}

#[test]
fn the_library_names_exactly_the_bad_fields() {
    let corpus = corpus();
    assert!(corpus.len() >= 30, "{} cases", corpus.len());
    for (name, text, expected) in corpus {
        let err = Plan::from_json(&text).expect_err(&name);
        let fields: BTreeSet<String> = err.fields().into_iter().map(str::to_string).collect();
        assert_eq!(fields, expected, "{name}: {err}");
        let shown = err.to_string();
        assert!(shown.len() < MAX_ERROR_BYTES, "{name}: error of {} bytes", shown.len());
        for p in &err.problems {
            assert!(!p.message.is_empty(), "{name}: empty message for {}", p.field);
            assert!(shown.contains(&format!("`{}`", p.field)), "{name}: {shown}");
        }
    }
}

#[test]
fn the_cli_names_the_bad_fields_and_exits_non_zero() {
    let dir = std::env::temp_dir().join(format!("s3sweep-bad-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Start every case at once (each is a short-lived process), then check them.
    let mut running = Vec::new();
    for (i, (name, text, expected)) in corpus().into_iter().enumerate() {
        let event = dir.join(format!("case-{i}.json"));
        std::fs::write(&event, &text).unwrap();
        // Nothing listens on port 9: validation must fail before any request.
        let child = Command::new(BIN)
            .args(["run", "--event"])
            .arg(&event)
            .args(["--endpoint", "http://127.0.0.1:9"])
            // A user error never prints a backtrace, whatever RUST_BACKTRACE says.
            .env("RUST_BACKTRACE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        running.push((name, expected, child));
    }
    for (name, expected, child) in running {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // 2: bad input (as for a bad flag); one line.
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: no result on stdout");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(
            stderr.len() < MAX_ERROR_BYTES,
            "{name}: {} bytes on stderr",
            stderr.len()
        );
        assert!(stderr.contains("invalid request"), "{name}: {stderr}");
        for field in &expected {
            assert!(
                stderr.contains(&format!("`{field}`")),
                "{name}: {field} not named in {stderr}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The Lambda's side: the runtime hands the handler the event parsed as an
/// `EventJson` (which keeps its duplicate keys), so every case that is JSON at all goes
/// through `lambda::validate_event` and must come back as an `InvalidEvent` naming
/// exactly the same fields. (Text that is not JSON, or nested past serde_json's limit,
/// is refused by the Lambda runtime before the handler runs; more than 6 MB by the
/// Lambda service.)
#[test]
fn the_lambda_names_exactly_the_bad_fields() {
    let mut checked = 0;
    for (name, text, expected) in corpus() {
        if text.len() > s3sweep::plan::json::MAX_EVENT_BYTES {
            continue;
        }
        let Ok(value) = serde_json::from_str::<s3sweep::plan::json::EventJson>(&text) else {
            continue;
        };
        let err = s3sweep_lambda::validate_event(value).expect_err(&name);
        let invocation = s3sweep_lambda::InvocationError::InvalidEvent(err.clone());
        assert_eq!(invocation.error_type(), "InvalidEvent", "{name}");
        let fields: BTreeSet<String> = err.fields().into_iter().map(str::to_string).collect();
        assert_eq!(fields, expected, "{name}: {err}");
        assert!(invocation.to_string().len() < MAX_ERROR_BYTES, "{name}");
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} cases reached the handler's validation");
}

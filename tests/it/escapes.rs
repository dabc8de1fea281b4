//! Text stays text (issue 53): a result whose every string field carries terminal
//! escapes (ESC sequences, OSC 8 links and the window title, BEL, CR, an 8-bit CSI),
//! bidi controls and Markdown links, images and autolinks is shown by every printer
//! (`report`, `report --markdown`, `compare`, `history`, their `--json`) with none of
//! those characters on stdout or stderr, and by every page (`report --html`,
//! `compare --html`, `history --html`) with no link, image or autolink and none of
//! them either. The strings are filled through serde_json: each string of the demo
//! results that can hold the payload and still parse as a result gets it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{run_within, BIN};

/// What a hostile result puts in every string it can.
const PAYLOAD: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[H\r\u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{9b}31m\u{202e}gnp.exe\u{2066}x\u{2069}\n| forged | line |\n[x](javascript:alert(1)) ![i](https://evil.example/i.png) <https://evil.example/auto>";

/// Characters none of the outputs may hold.
fn obeyed(c: char) -> bool {
    matches!(
        c,
        '\u{1b}' | '\u{7}' | '\r' | '\u{9b}' | '\u{202e}' | '\u{2066}' | '\u{2069}'
    )
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-escapes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every string of `value` given the payload where the result still parses; the
/// number of strings that took it.
fn fill(doc: &mut Value) -> usize {
    let mut paths = Vec::new();
    strings(doc, &mut Vec::new(), &mut paths);
    let mut filled = 0;
    for path in paths {
        let leaf = at(doc, &path);
        let old = leaf.as_str().unwrap().to_string();
        *leaf = Value::String(format!("{old}{PAYLOAD}"));
        if s3sweep::model::SweepResult::from_json(&doc.to_string()).is_ok() {
            filled += 1;
        } else {
            *at(doc, &path) = Value::String(old);
        }
    }
    filled
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn strings(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::String(_) => out.push(here.clone()),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, x)| {
            here.push(Step::Index(i));
            strings(x, here, out);
            here.pop();
        }),
        Value::Object(map) => map.iter().for_each(|(k, x)| {
            here.push(Step::Key(k.clone()));
            strings(x, here, out);
            here.pop();
        }),
        _ => {}
    }
}

fn at<'a>(mut v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    for step in path {
        v = match step {
            Step::Key(k) => &mut v[k.as_str()],
            Step::Index(i) => &mut v[*i],
        };
    }
    v
}

fn run(args: &[&str]) -> String {
    let out = run_within(
        "s3sweep on a hostile result",
        Command::new(BIN).args(args).env("COLUMNS", "400"),
        Duration::from_secs(120),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{args:?}: {text}");
    text
}

fn check_page(path: &Path) {
    let page = std::fs::read_to_string(path).unwrap();
    for tag in ["<a ", "<img", "href=", "src=\"http", "javascript:alert(1)\""] {
        assert!(!page.contains(tag), "{tag:?} in {}", path.display());
    }
    assert!(page.contains("Content-Security-Policy"), "{}", path.display());
    assert!(
        !page.chars().any(obeyed),
        "a control or bidi character in {}",
        path.display()
    );
    // The payload is shown, not dropped.
    assert!(page.contains("[x](javascript:alert(1))"), "{}", path.display());
    assert!(page.contains("\\u{202e}gnp.exe"), "{}", path.display());
}

#[test]
fn no_string_of_a_result_reaches_a_terminal_or_a_page_as_code() {
    let d = dir();
    let mut total = 0;
    let mut files = Vec::new();
    for (n, demo) in ["demo.json", "timeline-burst.json", "memory-demo.json"]
        .iter()
        .enumerate()
    {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(demo)).unwrap();
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        total += fill(&mut doc);
        let file = d.join(format!("runs/{n}.json"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, doc.to_string()).unwrap();
        files.push(file.display().to_string());
    }
    eprintln!("{total} strings carry the payload");
    assert!(total > 100, "only {total} strings took the payload");
    let runs = d.join("runs").display().to_string();
    let html = |name: &str| d.join(name).display().to_string();
    let (a, b) = (files[0].as_str(), files[1].as_str());
    let outputs = [
        run(&["report", a]),
        run(&["report", a, "--markdown", "--wide"]),
        run(&["report", b, "--wide"]),
        run(&["report", &files[2], "--wide"]),
        run(&["report", a, "--json"]),
        run(&["report", a, "--html", &html("report.html")]),
        run(&["compare", a, a]),
        run(&["compare", a, a, "--json", "--html", &html("compare.html")]),
        run(&["history", &runs]),
        run(&["history", &runs, "--json", "--html", &html("history.html")]),
    ];
    for (i, text) in outputs.iter().enumerate() {
        let bad: Vec<String> = text
            .chars()
            .filter(|&c| obeyed(c))
            .map(|c| c.escape_unicode().to_string())
            .collect();
        assert!(
            bad.is_empty(),
            "output {i} holds {} of {:?}",
            bad.len(),
            &bad[..bad.len().min(8)]
        );
    }
    // The payload was shown (made visible), not silently dropped.
    assert!(
        outputs[0].contains("\\u{1b}]0;owned"),
        "{}",
        &outputs[0][..2000.min(outputs[0].len())]
    );
    for page in ["report.html", "compare.html", "history.html"] {
        check_page(&d.join(page));
    }
    let _ = std::fs::remove_dir_all(&d);
}

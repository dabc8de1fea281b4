//! The figures README.md's prose quotes from the committed demo run
//! (docs/demo.json): objects/s, first byte, cores busy, runtime busy, the verdicts
//! and the worker counts where they change, each read from the sentence that says it
//! and checked against the result, so a regenerated docs/demo.json (`make
//! docs-figures`) fails here until the prose says what it shows. (The console
//! examples themselves are run by `doc_examples`.)

use std::fs;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md's "What the demo shows" section as one line of prose: code blocks out,
/// bold marks out, whitespace collapsed.
fn demo_section_prose() -> String {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## What the demo shows")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README.md has a section `What the demo shows`");
    let mut prose = String::new();
    let mut in_code = false;
    for line in section.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            prose.push_str(line);
            prose.push(' ');
        }
    }
    prose.replace("**", "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The words `{}` stands for (each one word) in the first place `prose` reads as
/// `template`; panics naming the sentence when the README no longer says it.
fn capture(prose: &str, template: &str) -> Vec<String> {
    let pieces: Vec<&str> = template.split("{}").collect();
    let at = |start: usize| -> Option<Vec<String>> {
        let mut rest = &prose[start + pieces[0].len()..];
        let mut found = Vec::new();
        for piece in &pieces[1..] {
            let end = if piece.is_empty() {
                rest.find([' ', ',', ')']).unwrap_or(rest.len())
            } else {
                rest.find(piece)?
            };
            let word = rest[..end].trim_matches('`');
            if word.is_empty() || word.contains(char::is_whitespace) {
                return None;
            }
            found.push(word.to_string());
            rest = &rest[end + piece.len()..];
        }
        Some(found)
    };
    prose
        .match_indices(pieces[0])
        .find_map(|(start, _)| at(start))
        .unwrap_or_else(|| panic!("README.md no longer says \"{template}\": rewrite the sentence and its check here"))
}

/// The committed result's rows of the bucket whose name contains `part`, by workers.
fn demo_rows(demo: &serde_json::Value, part: &str) -> Vec<serde_json::Value> {
    let mut rows: Vec<serde_json::Value> = demo["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["bucket"].as_str().is_some_and(|b| b.contains(part)))
        .cloned()
        .collect();
    rows.sort_by_key(|r| r["workers"].as_u64());
    rows
}

/// A number as the prose writes it (`1,234`); NaN if it is none.
fn num(s: &str) -> f64 {
    s.replace(',', "").parse::<f64>().unwrap_or(f64::NAN)
}

/// A number of the result at a JSON pointer; NaN if it is absent.
fn field(r: &serde_json::Value, p: &str) -> f64 {
    r.pointer(p).and_then(|v| v.as_f64()).unwrap_or(f64::NAN)
}

/// A row's verdict name.
fn verdict(r: &serde_json::Value) -> String {
    r.pointer("/diagnosis/verdict")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string()
}

/// The row of `workers` workers.
fn at(rows: &[serde_json::Value], workers: f64) -> Option<serde_json::Value> {
    rows.iter().find(|r| field(r, "/workers") == workers).cloned()
}

/// The failed claims, each with what the result says.
#[derive(Default)]
struct Claims(Vec<String>);

impl Claims {
    fn check(&mut self, ok: bool, what: String) {
        if !ok {
            self.0.push(what);
        }
    }
}

/// What README.md's prose claims about docs/demo.json, checked against it; each
/// entry a failure, with what the result says.
fn readme_claim_failures(prose: &str, demo: &serde_json::Value) -> Vec<String> {
    let mut claims = Claims::default();
    let express = demo_rows(demo, "--x-s3");
    let standard = demo_rows(demo, "standard");
    one_worker_claims(&mut claims, prose, demo, &express);
    busiest_claims(&mut claims, prose, &express);
    standard_claims(&mut claims, prose, &standard);
    claims.0
}

/// The defaults, the one-worker row and the directory bucket's verdicts.
fn one_worker_claims(claims: &mut Claims, prose: &str, demo: &serde_json::Value, express: &[serde_json::Value]) {
    let c = capture(prose, "on a quiet 2-vCPU machine: {} objects, up to {} workers)");
    let max_workers = express.iter().map(|r| field(r, "/workers")).fold(0.0, f64::max);
    claims.check(
        num(&c[0]) == field(demo, "/request/object_count") && num(&c[1]) == max_workers,
        format!(
            "defaults {c:?}: the result has {} objects, up to {max_workers} workers",
            field(demo, "/request/object_count")
        ),
    );
    let c = capture(
        prose,
        "One request in flight reads {} objects/s, each waiting ~{} ms for its first byte ({}:",
    );
    let one = &express[0];
    claims.check(
        format!("{:.0}", field(one, "/objects_per_s")) == c[0].replace(',', ""),
        format!(
            "1 worker: {} objects/s quoted, {:.1} in the result",
            c[0],
            field(one, "/objects_per_s")
        ),
    );
    claims.check(
        format!("{:.0}", field(one, "/ttfb_ms/p50")) == c[1],
        format!(
            "1 worker: first byte ~{} ms quoted, p50 {:.2} in the result",
            c[1],
            field(one, "/ttfb_ms/p50")
        ),
    );
    claims.check(
        verdict(one) == c[2],
        format!("1 worker: `{}` quoted, `{}` in the result", c[2], verdict(one)),
    );
    let c = capture(prose, "the verdict stays {} at every count up to {} workers");
    let verdicts: Vec<String> = express.iter().map(verdict).collect();
    claims.check(
        verdicts.iter().all(|v| *v == c[0]) && num(&c[1]) == max_workers,
        format!(
            "`{}` at every count up to {} quoted; the result: {verdicts:?}",
            c[0], c[1]
        ),
    );
}

/// The directory bucket's busiest row: its rate, the cores busy, its CPU per GET.
fn busiest_claims(claims: &mut Claims, prose: &str, express: &[serde_json::Value]) {
    let c = capture(
        prose,
        "At {} workers the curve reaches {} objects/s with {} of the {} usable cores busy in the client ({} of the machine's {} cores busy",
    );
    let row = at(express, num(&c[0])).unwrap_or_default();
    claims.check(
        format!("{:.0}", field(&row, "/objects_per_s")) == c[1].replace(',', ""),
        format!(
            "{} workers: {} objects/s quoted, {:.1} in the result",
            c[0],
            c[1],
            field(&row, "/objects_per_s")
        ),
    );
    claims.check(
        format!("{:.2}", field(&row, "/client/cores_busy")) == c[2]
            && format!("{:.2}", field(&row, "/client/usable_cores")) == c[3],
        format!(
            "{} workers: {} of {} usable cores quoted, {} of {} in the result",
            c[0],
            c[2],
            c[3],
            field(&row, "/client/cores_busy"),
            field(&row, "/client/usable_cores")
        ),
    );
    claims.check(
        format!("{:.2}", field(&row, "/client/machine_cores_busy")) == c[4]
            && field(&row, "/client/vcpus") == num(&c[5]),
        format!(
            "machine cores busy {} of {} quoted, {} of {} in the result",
            c[4],
            c[5],
            field(&row, "/client/machine_cores_busy"),
            field(&row, "/client/vcpus")
        ),
    );
    let c = capture(prose, "same machine), at {} ms of client CPU per GET");
    claims.check(
        format!("{:.3}", field(&row, "/cpu_ms_per_get")) == c[0],
        format!(
            "CPU per GET {} ms quoted, {} in the result",
            c[0],
            field(&row, "/cpu_ms_per_get")
        ),
    );
}

/// The Standard-like bucket's verdicts: one but one row alike, and that row's.
fn standard_claims(claims: &mut Claims, prose: &str, standard: &[serde_json::Value]) {
    let c = capture(
        prose,
        "table of the same run is {} at every count but one: at {} workers one request",
    );
    let odd: Vec<f64> = standard
        .iter()
        .filter(|r| verdict(r) != c[0])
        .map(|r| field(r, "/workers"))
        .collect();
    claims.check(
        odd == vec![num(&c[1])],
        format!(
            "standard-like `{}` but at {} quoted; the other rows: {odd:?}",
            c[0], c[1]
        ),
    );
    let c2 = capture(prose, "and that row is a {} (throughput");
    let end = at(standard, num(&c[1])).map(|r| verdict(&r));
    claims.check(
        end.as_deref() == Some(c2[0].as_str()),
        format!("standard-like at {} is `{}` quoted; the result: {end:?}", c[1], c2[0]),
    );
}

/// Every figure README.md's demo section quotes from docs/demo.json (objects/s, first
/// byte, cores busy, runtime busy, verdicts and where they change) is the committed
/// result's: a regenerated docs/demo.json (`make docs-figures`) fails here until the
/// prose says what it shows.
#[test]
fn the_readme_quotes_the_committed_result() {
    let demo: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root().join("docs/demo.json")).unwrap()).unwrap();
    let prose = demo_section_prose();
    let bad = readme_claim_failures(&prose, &demo);
    assert!(bad.is_empty(), "README.md against docs/demo.json:\n{}", bad.join("\n"));
    // A figure the result does not hold is caught (the 1.15 cores busy, said as 1.20).
    let wrong = prose.replace("1.15 of the 2.00 usable", "1.20 of the 2.00 usable");
    assert_eq!(readme_claim_failures(&wrong, &demo).len(), 1);
}

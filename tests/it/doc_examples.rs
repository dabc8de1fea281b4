//! The examples in README.md and docs/*.md, run or checked against the binary, so a
//! page that stops saying what `s3sweep` does fails a test.
//!
//! - ```` ```console ```` blocks (trycmd's Markdown format): each `$ s3sweep ARGS` line
//!   runs the binary from the repository's root (arguments split at spaces); a `? N`
//!   or `? failed` line right after it gives the expected exit status (else 0); the
//!   lines up to the next `$` are the expected stdout then stderr, where `[..]` stands
//!   for any text within a line and a line `...` for any number of lines.
//! - `sh` blocks, which need AWS or a server: every `s3sweep ...` line must parse with
//!   the real command line (clap); a synopsis line (with `[`, `|` or `...`) must name
//!   only flags its command has. `make T` names existing Makefile targets, and `aws
//!   lambda invoke` takes its payload as `fileb://` (AWS CLI v2 reads `file://` as
//!   base64).
//! - `json` blocks: valid JSON; a request (an object with `buckets`) passes the real
//!   request validator.
//! - The closed sets the docs list: every verdict in README.md and docs/usage.md and
//!   in the "what to change" table, every error kind in the `errors` row, every request
//!   field in the request table, from the enums and `REQUEST_FIELDS` themselves.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{CommandFactory, Parser};

use crate::common::{run_bounded, BIN};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn name(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// A fenced code block: its info string, first line number (1-based) and lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (n, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        let fence = marker.len() >= 3;
        match open.take() {
            Some((m, block)) if fence && marker.starts_with(&m) && trimmed[marker.len()..].trim().is_empty() => {
                out.push(block)
            }
            Some((m, mut block)) => {
                block.lines.push(line.to_string());
                open = Some((m, block));
            }
            None if fence => {
                let info = trimmed[marker.len()..].trim().to_string();
                open = Some((
                    marker,
                    Block {
                        info,
                        line: n + 2,
                        lines: Vec::new(),
                    },
                ));
            }
            None => {}
        }
    }
    out
}

/// One line of output against one line of pattern (`[..]`: any text).
fn line_matches(pattern: &str, actual: &str) -> bool {
    let (pattern, actual) = (pattern.trim_end(), actual.trim_end());
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

/// Pattern lines against output lines; a pattern line `...` matches any number of lines.
fn lines_match(pattern: &[&str], actual: &[&str]) -> bool {
    match pattern.split_first() {
        None => actual.is_empty(),
        Some((p, rest)) if p.trim() == "..." => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((p, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(p, a) && lines_match(rest, more)),
    }
}

/// One `$ s3sweep ...` example of a console block.
struct Example {
    args: Vec<String>,
    status: Option<i32>,
    expected: Vec<String>,
}

fn examples(block: &Block) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for line in &block.lines {
        if let Some(command) = line.strip_prefix("$ ") {
            let words: Vec<String> = command.split_whitespace().map(String::from).collect();
            assert_eq!(
                words.first().map(String::as_str),
                Some("s3sweep"),
                "console example runs s3sweep: {line}"
            );
            out.push(Example {
                args: words[1..].to_vec(),
                status: Some(0),
                expected: Vec::new(),
            });
        } else if let Some(example) = out.last_mut() {
            match line.strip_prefix("? ") {
                Some("failed") if example.expected.is_empty() => example.status = None,
                Some(code) if example.expected.is_empty() && code.parse::<i32>().is_ok() => {
                    example.status = Some(code.parse().unwrap())
                }
                _ => example.expected.push(line.clone()),
            }
        }
    }
    out
}

/// Runs an example at the width the pages assume (100 columns, what `report` uses
/// when stdout is no terminal); `None` when it did what the page says, else what
/// differed.
fn check_example(example: &Example) -> Option<String> {
    let out = run_bounded(
        Command::new(BIN)
            .args(&example.args)
            .env("COLUMNS", "100")
            .current_dir(root()),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let actual: Vec<&str> = text.lines().collect();
    let pattern: Vec<&str> = example.expected.iter().map(String::as_str).collect();
    let status_ok = match example.status {
        Some(code) => out.status.code() == Some(code),
        None => !out.status.success(),
    };
    if status_ok && lines_match(&pattern, &actual) {
        return None;
    }
    Some(format!(
        "`s3sweep {}`: status {:?} (page: {}), output:\n{text}\n--- the page expects:\n{}",
        example.args.join(" "),
        out.status.code(),
        example.status.map_or("failed".to_string(), |c| c.to_string()),
        pattern.join("\n")
    ))
}

/// Every console example of every page, run; the failures, one paragraph each.
fn console_failures(pages: &[(String, String)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (page, text) in pages {
        for block in blocks(text).iter().filter(|b| b.info == "console") {
            for example in examples(block) {
                if let Some(why) = check_example(&example) {
                    failures.push(format!("{page}:{}: {why}", block.line));
                }
            }
        }
    }
    failures
}

fn read_pages() -> Vec<(String, String)> {
    pages()
        .iter()
        .map(|p| (name(p), fs::read_to_string(p).unwrap()))
        .collect()
}

#[test]
fn console_examples_print_what_the_pages_show() {
    let pages = read_pages();
    let count: usize = pages
        .iter()
        .flat_map(|(_, t)| blocks(t))
        .filter(|b| b.info == "console")
        .map(|b| examples(&b).len())
        .sum();
    assert!(
        count >= 5,
        "only {count} console examples: the pages lost their checked examples"
    );
    let failures = console_failures(&pages);
    assert!(failures.is_empty(), "stale examples:\n\n{}", failures.join("\n\n"));
}

/// The check fails on a stale example: the demo's 128-worker Express row as an older
/// page showed it (168 ms, `client_cpu`), and an exit status that is not the binary's.
#[test]
fn a_stale_console_example_fails() {
    let stale = "```console\n$ s3sweep report docs/demo.json\n...\n\
                 │     128 ┆   1 ┆     168 ┆[..]┆ client_cpu  │\n...\n```\n";
    let failures = console_failures(&[("stale.md".into(), stale.into())]);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("client_cpu"), "{}", failures[0]);
    let wrong_status = "```console\n$ s3sweep run --buckt b\n...\n```\n";
    assert_eq!(console_failures(&[("stale.md".into(), wrong_status.into())]).len(), 1);
    let right = "```console\n$ s3sweep run --buckt b\n? 2\nerror: unexpected argument '--buckt'[..]\n```\n";
    assert!(console_failures(&[("ok.md".into(), right.into())]).is_empty());
}

#[test]
fn the_matcher_takes_wildcards_and_nothing_else() {
    assert!(line_matches("a [..] c", "a bbb c"));
    assert!(line_matches("a[..]c[..]e", "abcde"));
    assert!(!line_matches("a [..] c", "a bbb d"));
    assert!(!line_matches("abc", "abd"));
    assert!(!line_matches("ab[..]ba", "aba"));
    assert!(lines_match(&["...", "x", "..."], &["a", "x", "b"]));
    assert!(!lines_match(&["...", "x"], &["a", "x", "b"]));
    assert!(lines_match(&["a", "...", "c"], &["a", "c"]));
}

/// `s3sweep ...` with what a shell would add (`&`, `>`, `|`, comments) cut off.
fn command_words(line: &str) -> Option<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    if !line.starts_with("s3sweep ") && line != "s3sweep" {
        return None;
    }
    let mut words = Vec::new();
    for word in line.split_whitespace() {
        if ["#", "&", "|", ">", "2>", "&&", ";"].contains(&word) || word.starts_with('>') {
            break;
        }
        words.push(word.trim_matches('`').to_string());
    }
    Some(words)
}

/// The long flags a subcommand takes (its own and the global ones).
fn long_flags(sub: &str) -> Option<Vec<String>> {
    let cli = s3sweep::cli::Cli::command();
    let command = cli.find_subcommand(sub)?;
    Some(
        command
            .get_arguments()
            .chain(cli.get_arguments())
            .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
            .map(|l| format!("--{l}"))
            .chain(["--help".to_string()])
            .collect(),
    )
}

/// What is wrong with one `s3sweep` line of a shell block, if anything.
fn shell_line_problem(words: &[String], raw: &str) -> Option<String> {
    let synopsis = raw.contains('[') || raw.contains("...") || raw.contains('|') && !raw.contains("| ");
    if synopsis {
        let sub = words.get(1)?;
        let Some(flags) = long_flags(sub) else {
            return Some(format!("no command `s3sweep {sub}`"));
        };
        let unknown: Vec<String> = raw
            .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|' || c == '=')
            .filter(|w| w.starts_with("--"))
            .map(|w| w.trim_end_matches("...").trim_end_matches(',').to_string())
            .filter(|w| !flags.contains(w))
            .collect();
        return (!unknown.is_empty()).then(|| format!("`s3sweep {sub}` has no {}", unknown.join(", ")));
    }
    match s3sweep::cli::Cli::try_parse_from(words) {
        Ok(_) => None,
        Err(e) => Some(e.to_string().lines().next().unwrap_or("").to_string()),
    }
}

/// The problems of every `sh` block of one page.
/// A block's lines as the shell reads them: a line ending in `\` continues on the
/// next, each logical line numbered by the line it starts on.
fn logical_lines(lines: &[String]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in lines.iter().enumerate() {
        let (text, continues) = match line.trim_end().strip_suffix('\\') {
            Some(head) => (head.to_string(), true),
            None => (line.clone(), false),
        };
        match out.last_mut() {
            Some((_, joined)) if open => joined.push_str(&text),
            _ => out.push((i, text)),
        }
        open = continues;
    }
    out
}

/// `text` split into words as a shell would: quotes group (`SCHEDULE='rate(1 day)'` is
/// one word); no expansion.
fn shell_split(text: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut quoted) = (Vec::new(), String::new(), None, false);
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => (quote, quoted) = (Some(c), true),
            None if c.is_whitespace() => {
                if quoted || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    quoted = false;
                }
            }
            None => word.push(c),
        }
    }
    if quoted || !word.is_empty() {
        words.push(word);
    }
    words
}

fn shell_problems(page: &str, text: &str, makefile: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks(text)
        .iter()
        .filter(|b| ["sh", "bash", "shell"].contains(&b.info.as_str()))
    {
        for (i, raw) in logical_lines(&block.lines) {
            let raw = raw.as_str();
            let at = format!("{page}:{}", block.line + i);
            if let Some(words) = command_words(raw) {
                if let Some(why) = shell_line_problem(&words, raw) {
                    problems.push(format!("{at}: {why}: {}", raw.trim()));
                }
            }
            let line = raw.trim();
            if line.starts_with("aws lambda invoke") && line.contains(" file://") {
                problems.push(format!(
                    "{at}: `--payload file://` is read as base64 by AWS CLI v2: use fileb://"
                ));
            }
            if let Some(rest) = line.strip_prefix("make ") {
                for target in shell_split(rest).iter().take_while(|w| !w.starts_with('#')) {
                    if !target.contains('=') && !makefile.lines().any(|l| l.starts_with(&format!("{target}:"))) {
                        problems.push(format!("{at}: no Makefile target `{target}`"));
                    }
                }
            }
        }
    }
    problems
}

#[test]
fn shell_examples_name_real_commands_flags_and_targets() {
    let makefile = fs::read_to_string(root().join("Makefile")).unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (page, text) in read_pages() {
        checked += blocks(&text).iter().filter(|b| b.info == "sh").count();
        problems.extend(shell_problems(&page, &text, &makefile));
    }
    assert!(checked >= 5, "only {checked} sh blocks found");
    assert!(
        problems.is_empty(),
        "shell examples that would fail:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_stale_shell_example_fails() {
    let makefile = fs::read_to_string(root().join("Makefile")).unwrap();
    let stale = "```sh\ns3sweep plot result.json\ns3sweep run --bucket b --wrokers 1,8\n\
                 s3sweep local [--tls] [--no-such-flag N]\nmake demo no-such-target\n\
                 aws lambda invoke --function-name f --payload file://event.json out.json\n```\n";
    let problems = shell_problems("stale.md", stale, &makefile);
    assert_eq!(problems.len(), 5, "{problems:#?}");
    let fine = "```sh\ns3sweep run --bucket b --workers 1,8 > r.json   # note\n\
                s3sweep local [--tls] [--objects N]\nmake demo HTTP=1\nmake deploy SCHEDULE='rate(1 day)' A=\"b c\"\n\
                aws lambda invoke --function-name f --payload fileb://event.json out.json\n```\n";
    assert!(shell_problems("ok.md", fine, &makefile).is_empty());
}

/// The problems of every `json` block of one page.
fn json_problems(page: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks(text).iter().filter(|b| b.info == "json") {
        let body = block.lines.join("\n");
        let at = format!("{page}:{}", block.line);
        match serde_json::from_str::<serde_json::Value>(&body) {
            Err(e) => problems.push(format!("{at}: not JSON: {e}")),
            Ok(value) if value.get("buckets").is_some() => {
                if let Err(e) = s3sweep::plan::Plan::from_json(&body) {
                    problems.push(format!("{at}: the request validator refuses it: {e}"));
                }
            }
            Ok(_) => {}
        }
    }
    problems
}

#[test]
fn json_examples_parse_and_requests_validate() {
    let mut problems = Vec::new();
    for (page, text) in read_pages() {
        problems.extend(json_problems(&page, &text));
    }
    assert!(problems.is_empty(), "JSON examples:\n{}", problems.join("\n"));
    let stale = "```json\n{\"buckets\": [\"b\"], \"pool\": 20}\n```\n```json\n{\"a\": 1,}\n```\n";
    assert_eq!(json_problems("stale.md", stale).len(), 2);
}

/// The first column of the Markdown table whose header row starts with `header`.
fn table_first_column(text: &str, header: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header)).skip(2);
    let mut out = Vec::new();
    for line in lines.by_ref().take_while(|l| l.starts_with('|')) {
        out.push(line.split('|').nth(1).unwrap_or("").trim().to_string());
    }
    out
}

fn ticked(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("`{n}`")).collect()
}

#[test]
fn every_verdict_is_listed_and_has_a_what_to_change_row() {
    use s3sweep::model::Verdict;
    let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.name()).collect();
    for page in ["README.md", "docs/usage.md", "docs/diagnosis.md"] {
        let text = fs::read_to_string(root().join(page)).unwrap();
        let missing: Vec<&&str> = names.iter().filter(|n| !text.contains(&format!("`{n}`"))).collect();
        assert!(missing.is_empty(), "{page} does not list the verdicts {missing:?}");
    }
    let why = fs::read_to_string(root().join("docs/why-curves-flatten.md")).unwrap();
    let rows = table_first_column(&why, "| verdict | what it means | what to change |");
    assert_eq!(
        rows,
        ticked(&names),
        "docs/why-curves-flatten.md: the what-to-change rows, in the rules' order"
    );
}

#[test]
fn the_errors_row_lists_every_error_kind() {
    use s3sweep::model::ErrorKind;
    let usage = fs::read_to_string(root().join("docs/usage.md")).unwrap();
    let row = usage
        .lines()
        .find(|l| l.starts_with("| errors |"))
        .expect("usage.md has an errors row");
    let listed: Vec<&str> = row
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(listed, kinds, "docs/usage.md's errors row against ErrorKind::ALL");
}

#[test]
fn the_request_table_lists_every_request_field() {
    let usage = fs::read_to_string(root().join("docs/usage.md")).unwrap();
    let section = &usage[usage.find("## The request").expect("usage.md has The request")..];
    let rows = table_first_column(section, "| field | default | meaning |");
    let mut top: Vec<String> = rows
        .iter()
        .map(|r| r.trim_matches('`').split('.').next().unwrap().to_string())
        .collect();
    top.dedup();
    assert_eq!(
        top,
        s3sweep::plan::REQUEST_FIELDS,
        "docs/usage.md's request table against the validator's fields"
    );
}

/// The row size docs/usage.md quotes ("a row of `docs/demo.json` is X to Y bytes")
/// brackets the committed result's rows, serialized compactly, within 10%.
#[test]
fn the_quoted_row_size_is_the_committed_results() {
    let usage = fs::read_to_string(root().join("docs/usage.md"))
        .unwrap()
        .replace('\n', " ");
    let after = usage
        .split("a row of `docs/demo.json` is ")
        .nth(1)
        .expect("usage.md quotes the row size");
    let numbers: Vec<f64> = after
        .split_whitespace()
        .take(3)
        .filter_map(|w| w.replace(',', "").parse().ok())
        .collect();
    let (low, high) = (numbers[0], numbers[1]);
    let demo: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root().join("docs/demo.json")).unwrap()).unwrap();
    let sizes: Vec<f64> = demo["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| serde_json::to_string(row).unwrap().len() as f64)
        .collect();
    let (min, max) = sizes.iter().fold((f64::MAX, 0f64), |(a, b), &s| (a.min(s), b.max(s)));
    assert!(
        low <= min && max <= high && low >= 0.9 * min && high <= 1.1 * max,
        "usage.md says {low}-{high} bytes a row; docs/demo.json's rows are {min}-{max}"
    );
}

/// The events the docs tell users to invoke with (events/*.json) pass the real request
/// validator, as the function would run them.
#[test]
fn every_documented_event_file_validates() {
    let mut checked = 0;
    for entry in fs::read_dir(root().join("events")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = fs::read_to_string(&path).unwrap();
            if let Err(e) = s3sweep::plan::Plan::from_json(&text) {
                panic!("{}: the request validator refuses it: {e}", name(&path));
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} event files");
}

/// docs/memory-sweep.md shows `events/memory.json` itself: the request a user publishes
/// to the console is the one the page explains.
#[test]
fn the_memory_sweep_page_shows_the_memory_event() {
    let page = fs::read_to_string(root().join("docs/memory-sweep.md")).unwrap();
    let event: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root().join("events/memory.json")).unwrap()).unwrap();
    let shown = blocks(&page)
        .into_iter()
        .filter(|b| b.info == "json")
        .filter_map(|b| serde_json::from_str::<serde_json::Value>(&b.lines.join("\n")).ok())
        .any(|v| v == event);
    assert!(
        shown,
        "docs/memory-sweep.md has no JSON block equal to events/memory.json"
    );
}

//! The documentation as a user meets it: README.md is a short front door (at most
//! 20 KiB, naming `make demo` and `make test`), every relative link or image in
//! README.md and docs/*.md points at a file that exists, no file refers to notes
//! outside the repository, and docs/architecture.md's module table has one row for
//! every file under src/ and none for a file that is gone, and every test the table of
//! limits in docs/reliability.md names exists. Std only: reads files under
//! CARGO_MANIFEST_DIR.

use std::fs;
use std::path::{Path, PathBuf};

/// README.md may not grow past this (20 KiB); details belong in docs/.
const README_MAX_BYTES: u64 = 20 * 1024;

/// Strings that point outside the repository, at notes users never have.
const FORBIDDEN: &[&str] = &["../shared", "/work/shared", "CONTEXT.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("readable docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds no Markdown files");
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The text of a Markdown document with fenced code blocks and inline code spans
/// removed (replaced by spaces), so that `[x](y)` inside code is not taken for a link.
fn without_code(markdown: &str) -> String {
    let mut prose = String::new();
    let mut fence: Option<String> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        let is_fence = marker.len() >= 3 && marker.chars().all(|c| c == marker.chars().next().unwrap());
        match &fence {
            Some(open) => {
                if is_fence && marker.starts_with(open.as_str()) && trimmed[marker.len()..].trim().is_empty() {
                    fence = None;
                }
                prose.push('\n');
            }
            None if is_fence => {
                fence = Some(marker);
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    // Code spans may wrap within a paragraph, so strip them paragraph by paragraph:
    // a run of n backticks opens a span closed by the next run of exactly n; an
    // unmatched run is literal text (CommonMark).
    prose
        .split("\n\n")
        .map(strip_code_spans)
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn strip_code_spans(paragraph: &str) -> String {
    let chars: Vec<char> = paragraph.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|&&c| c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.extend(std::iter::repeat_n(' ', end - i));
                i = end;
            }
            None => {
                out.extend(std::iter::repeat_n('`', n));
                i += n;
            }
        }
    }
    out
}

/// Targets of inline links and images (`[text](target)`, `![alt](target "title")`,
/// `[text](<target>)`) and of reference definitions (`[label]: target`).
fn link_targets(markdown: &str) -> Vec<String> {
    let prose = without_code(markdown);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = rest[at + 2..].trim_start();
        let target = if let Some(angled) = after.strip_prefix('<') {
            angled.split('>').next().unwrap_or("").to_string()
        } else {
            let mut depth = 0usize;
            after
                .chars()
                .take_while(|&c| {
                    if c == '(' {
                        depth += 1;
                    } else if c == ')' {
                        if depth == 0 {
                            return false;
                        }
                        depth -= 1;
                    }
                    !c.is_whitespace()
                })
                .collect()
        };
        targets.push(target);
        rest = &rest[at + 2..];
    }
    for line in prose.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') && !trimmed.starts_with("[^") {
            // `[label]: target`: the first `]` closes the label and a `:` follows it.
            if let Some(close) = trimmed.find("]") {
                if trimmed[close..].starts_with("]:") {
                    if let Some(target) = trimmed[close + 2..].split_whitespace().next() {
                        targets.push(target.trim_start_matches('<').trim_end_matches('>').to_string());
                    }
                }
            }
        }
    }
    targets
}

/// The relative targets in `markdown` (a file at `file`) that name no existing file,
/// as "target (resolved path)".
fn broken_links(file: &Path, markdown: &str) -> Vec<String> {
    let dir = file.parent().expect("a file has a directory");
    link_targets(markdown)
        .into_iter()
        .filter(|target| {
            let lower = target.to_ascii_lowercase();
            !(lower.starts_with("http://")
                || lower.starts_with("https://")
                || lower.starts_with("mailto:")
                || target.starts_with('#'))
        })
        .filter_map(|target| {
            let path = target.split(['#', '?']).next().unwrap_or("");
            let resolved = dir.join(path);
            if path.is_empty() || !resolved.exists() {
                Some(format!("{target} ({})", resolved.display()))
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn readme_is_a_short_front_door_with_the_two_commands() {
    let readme = root().join("README.md");
    let size = fs::metadata(&readme).expect("README.md exists").len();
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, over {README_MAX_BYTES}: move details into docs/ and link them"
    );
    let text = read(&readme);
    for command in ["make demo", "make test"] {
        assert!(text.contains(command), "README.md does not mention `{command}`");
    }
}

#[test]
fn relative_links_and_images_resolve() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        for link in broken_links(&file, &read(&file)) {
            broken.push(format!(
                "{}: {link}",
                file.strip_prefix(root()).unwrap_or(&file).display()
            ));
        }
    }
    assert!(broken.is_empty(), "links to missing files:\n{}", broken.join("\n"));
}

#[test]
fn no_references_to_notes_outside_the_repository() {
    let mut found = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        for (n, line) in text.lines().enumerate() {
            for needle in FORBIDDEN {
                if line.contains(needle) {
                    let name = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
                    found.push(format!("{name}:{}: {needle}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "references to files users do not have:\n{}",
        found.join("\n")
    );
}

/// The checks above must be able to fail: the extractor sees links and images, skips
/// code and external or anchor-only targets, and a missing file is reported.
#[test]
fn the_link_check_catches_a_broken_link() {
    let sample = "See [usage](docs/usage.md#the-request), ![plot](docs/demo.svg \"plot\"),\n\
                  [site](https://example.com), [mail](mailto:a@b.c), [top](#s3sweep),\n\
                  `[in code](nowhere.md)` and [gone](docs/no-such-file.md#x).\n\n\
                  ```\n[fenced](also-nowhere.md)\n```\n\n\
                  [ref]: docs/missing-reference.md\n";
    assert_eq!(
        link_targets(sample),
        [
            "docs/usage.md#the-request",
            "docs/demo.svg",
            "https://example.com",
            "mailto:a@b.c",
            "#s3sweep",
            "docs/no-such-file.md#x",
            "docs/missing-reference.md",
        ]
    );
    let broken = broken_links(&root().join("README.md"), sample);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].starts_with("docs/no-such-file.md#x"), "{broken:?}");
    assert!(broken[1].starts_with("docs/missing-reference.md"), "{broken:?}");
    // Relative to the linking file's directory: from docs/, `usage.md` exists and
    // `docs/usage.md` does not.
    let from_docs = root().join("docs").join("x.md");
    assert!(broken_links(&from_docs, "[u](usage.md) [r](../README.md) [i](demo.svg)").is_empty());
    assert_eq!(broken_links(&from_docs, "[u](docs/usage.md)").len(), 1);
}

/// The paths the module table of docs/architecture.md names: the first cell of each
/// row under `## Modules, one line each`, one path in the repository in backticks.
fn module_table(architecture: &str) -> Vec<String> {
    let section = architecture
        .split("\n## ")
        .find(|s| s.starts_with("Modules, one line each"))
        .expect("docs/architecture.md has a `## Modules, one line each` section");
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| line.split('`').nth(1).unwrap_or_default().to_string())
        .collect()
}

/// Every `.rs` file under `dir`, as its path relative to `base`, `/`-separated.
fn rust_files(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.expect("readable src/ entry").path();
        if path.is_dir() {
            rust_files(base, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let rel = path.strip_prefix(base).unwrap();
            out.push(
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
    }
}

/// What is wrong with a module table naming `rows` for the files `files`: a file with
/// no row, a row naming a file that is not there, a file with two rows.
fn table_problems(rows: &[String], files: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for file in files {
        match rows.iter().filter(|r| *r == file).count() {
            0 => problems.push(format!("{file} has no row")),
            1 => {}
            n => problems.push(format!("{file} has {n} rows")),
        }
    }
    for row in rows {
        if !files.contains(row) {
            problems.push(format!("the row `{row}` names no file of the crates"));
        }
    }
    problems
}

#[test]
fn the_module_table_names_every_src_file() {
    let root = root();
    let rows = module_table(&read(&root.join("docs/architecture.md")));
    let mut files = Vec::new();
    for dir in CRATE_SOURCES {
        rust_files(&root, &root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 50, "the crates hold only {} files", files.len());
    let problems = table_problems(&rows, &files);
    assert!(
        problems.is_empty(),
        "docs/architecture.md's module table (`## Modules, one line each`, one row per \
         file, keyed by its path in the repository) is out of date:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_module_table_check_catches_a_missing_and_a_gone_file() {
    let table = "# A\n\n## Modules, one line each\n\n| file | what |\n|---|---|\n\
                 | `src/lib.rs` | map |\n| `src/old.rs` | gone |\n\n## Next\n\n| `x.rs` | other table |\n";
    let rows = module_table(table);
    assert_eq!(rows, ["src/lib.rs", "src/old.rs"]);
    let files = ["src/lib.rs".to_string(), "crates/lab/src/new.rs".to_string()];
    assert_eq!(
        table_problems(&rows, &files),
        [
            "crates/lab/src/new.rs has no row",
            "the row `src/old.rs` names no file of the crates"
        ]
    );
}

/// The tests docs/reliability.md's table of limits names in its last column: every
/// backticked `a::b::name` of a row under the header `| where | limit | past it |
/// checked by |`.
fn limits_table_tests(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .skip_while(|l| !l.starts_with("| where | limit | past it | checked by |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.trim_end_matches('|').rsplit('|').next())
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|name| name.contains("::"))
        .collect()
}

/// The five crates' source folders: the CLI at the root, the core, s3sweep-aws, the lab, the function.
const CRATE_SOURCES: [&str; 5] = [
    "src",
    "crates/core/src",
    "crates/aws/src",
    "crates/lab/src",
    "crates/lambda/src",
];

/// Where a unit test's module path lives: `lab::x` and `lambda::x` in their crates
/// (`x` under its `src/`), `cli::x` under the root's `src/`, the rest in the core.
fn module_file(root: &Path, path: &[&str]) -> PathBuf {
    let (dir, rest) = match path.first() {
        Some(&top @ ("aws" | "lab" | "lambda")) => (format!("crates/{top}/src"), &path[1..]),
        Some(&"cli") => ("src".to_string(), path),
        _ => ("crates/core/src".to_string(), path),
    };
    let base = root.join(dir);
    if rest.is_empty() {
        return base.join("lib.rs");
    }
    let file = base.join(format!("{}.rs", rest.join("/")));
    if file.exists() {
        file
    } else {
        base.join(rest.join("/")).join("mod.rs")
    }
}

/// The file a test name points at (`module::name`: tests/it/module.rs; a unit
/// test's module path: its file in its crate), when it holds `fn name(`; else why not.
fn test_problem(root: &Path, name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split("::").collect();
    let (module, function) = (&parts[..parts.len() - 1], parts[parts.len() - 1]);
    let it = root.join("tests/it").join(format!("{}.rs", module[0]));
    let file = if module.len() == 1 && it.exists() {
        it
    } else {
        let path: Vec<&str> = module.iter().copied().filter(|m| *m != "tests").collect();
        module_file(root, &path)
    };
    let text = fs::read_to_string(&file).unwrap_or_default();
    (!text.contains(&format!("fn {function}("))).then(|| format!("{name}: no fn {function} in {}", file.display()))
}

#[test]
fn every_test_the_limits_table_names_exists() {
    let root = root();
    let names = limits_table_tests(&read(&root.join("docs/reliability.md")));
    assert!(names.len() >= 20, "the limits table names {} tests", names.len());
    let problems: Vec<String> = names.iter().filter_map(|n| test_problem(&root, n)).collect();
    assert!(
        problems.is_empty(),
        "docs/reliability.md's limits table:\n{}",
        problems.join("\n")
    );
    // The check catches a test that is not there.
    assert!(test_problem(&root, "read_limits::no_such_test").is_some());
    assert!(test_problem(&root, "lab::prefix_rate::tests::no_such_test").is_some());
}

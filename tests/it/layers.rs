//! The layers of the workspace stay one-way: each module imports only modules below it,
//! no import goes round in a circle, and no crate reaches a crate it must not. Read
//! from the source text: every `crate::a::...` path (and `super::x` between sibling
//! files, and `s3sweep_core::a::...` between crates) outside comments is an import of
//! the module it names. The checker is tested on small made-up sources first, so a
//! broken checker cannot pass the real tree by finding nothing. The crates' manifests
//! and the function's dependency tree (`cargo tree`) are checked too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first. A module may import modules of a lower rank only (and
/// anything inside its own top-level module).
const RANKS: &[(&str, u32)] = &[
    ("model", 0),
    // Reads the machine and reports in the contract's terms (`CpuSource`).
    ("sys", 1),
    ("plan", 2),
    ("transport", 3),
    ("s3", 4),
    ("engine", 5),
    ("analysis", 6),
    ("render", 7),
    // The core's S3 client with aws-config's shared configuration.
    ("aws", 8),
    ("lab", 8),
    ("lambda", 9),
    ("cli", 10),
];

/// The crates, as (crate, folder of its sources, its top-level modules); a module of
/// the core crate is named as is, the others' under `aws`, `lab` and `lambda`.
const CRATES: &[(&str, &str, &[&str])] = &[
    (
        "s3sweep-core",
        "crates/core/src",
        &[
            "model",
            "sys",
            "plan",
            "transport",
            "s3",
            "engine",
            "analysis",
            "render",
        ],
    ),
    ("s3sweep-aws", "crates/aws/src", &["aws"]),
    ("s3sweep-lab", "crates/lab/src", &["lab"]),
    ("s3sweep-lambda", "crates/lambda/src", &["lambda"]),
    ("s3sweep", "src", &["cli"]),
];

/// Which crate may import which (besides itself). The function never reaches the lab,
/// nor the core anything above it.
const CRATE_DEPS: &[(&str, &[&str])] = &[
    ("s3sweep-core", &[]),
    ("s3sweep-aws", &["s3sweep-core"]),
    ("s3sweep-lab", &["s3sweep-core"]),
    ("s3sweep-lambda", &["s3sweep-core", "s3sweep-aws"]),
    ("s3sweep", &["s3sweep-core", "s3sweep-aws", "s3sweep-lab"]),
];

fn crate_of(module: &str) -> &'static str {
    CRATES
        .iter()
        .find(|(_, _, tops)| tops.contains(&top(module)))
        .map(|(c, _, _)| *c)
        .unwrap_or("?")
}

/// The whole workspace: every crate's modules, in one tree.
fn read_workspace(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, dir, tops) in CRATES {
        let prefix = if *name == "s3sweep-core" || *name == "s3sweep" {
            ""
        } else {
            tops[0]
        };
        let tree = read_tree(&root.join(dir));
        let skip = ["main", "lib"];
        for (module, text) in tree {
            if *name != "s3sweep-core" && *name != "s3sweep" && module == "lib" {
                out.insert(prefix.to_string(), text);
            } else if !skip.contains(&module.as_str()) {
                let m = if prefix.is_empty() {
                    module
                } else {
                    format!("{prefix}::{module}")
                };
                out.insert(m, text);
            }
        }
    }
    out
}

/// Module path (`engine::config`, `engine` for engine/mod.rs) -> source text, for
/// every `.rs` file under `src/` except `lib.rs` and the binaries.
fn read_tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    walk(&path, root, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                if parts.last().is_some_and(|p| p == "mod") {
                    parts.pop();
                }
                out.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The source without comments (line comments and doc comments), so paths in prose
/// and intra-doc links are not counted as imports.
fn code_only(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after `prefix` in `code` (`crate::a::b::{c, d}` gives `a::b`).
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `mycrate::` or `super::super::`-like suffixes
        }
        let segs: Vec<&str> = rest
            .split("::")
            .map(|s| {
                s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
            })
            .take_while(|s| !s.is_empty() && s.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .collect();
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The deepest module of `modules` that `segs` names, if any.
fn resolve(modules: &BTreeSet<String>, segs: &[&str]) -> Option<String> {
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| modules.contains(m))
}

/// Import edges between modules (self-edges left out).
fn edges(tree: &BTreeMap<String, String>) -> BTreeSet<(String, String)> {
    let modules: BTreeSet<String> = tree.keys().cloned().collect();
    let mut out = BTreeSet::new();
    for (module, text) in tree {
        let code = code_only(text);
        let parent: Vec<&str> = {
            let mut p: Vec<&str> = module.split("::").collect();
            p.pop();
            p
        };
        let mut targets = Vec::new();
        // Inside the lab's, the function's and s3sweep-aws's crates, `crate::x` is theirs first
        // (`lab::x`), else a core module that their root imports.
        let own: Vec<&str> = match top(module) {
            t @ ("aws" | "lab" | "lambda") => vec![t],
            _ => vec![],
        };
        for segs in paths_after(&code, "crate::") {
            let mine: Vec<&str> = own.iter().copied().chain(segs.iter().copied()).collect();
            // A module of their own below the root; the root itself (`lab` for
            // `crate::model`) only names their crate, so the path is the core's.
            let theirs = resolve(&modules, &mine).filter(|m| own.first().is_some_and(|o| m != o));
            targets.extend(theirs.or_else(|| resolve(&modules, &segs)));
        }
        for (krate, named) in [
            ("s3sweep_core::", ""),
            ("s3sweep_aws::", "aws"),
            ("s3sweep_lab::", "lab"),
            ("s3sweep_lambda::", "lambda"),
        ] {
            for segs in paths_after(&code, krate) {
                let full: Vec<&str> = [named]
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .chain(segs.iter().copied())
                    .collect();
                targets.extend(resolve(&modules, &full));
            }
            // `use s3sweep_lab as lab;`, `s3sweep_lambda::{..}`: the crate itself.
            if !named.is_empty() && code.contains(krate.trim_end_matches("::")) {
                targets.push(named.to_string());
            }
        }
        for segs in paths_after(&code, "super::") {
            let full: Vec<&str> = parent.iter().copied().chain(segs.iter().copied()).collect();
            targets.extend(resolve(&modules, &full));
        }
        for t in targets {
            if &t != module {
                out.insert((module.clone(), t));
            }
        }
    }
    out
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

/// Imports that go to a module of the same or a higher layer.
fn upward(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let rank = |m: &str| RANKS.iter().find(|(n, _)| *n == top(m)).map(|(_, r)| *r);
    let mut bad = Vec::new();
    for (from, to) in edges {
        if top(from) == top(to) {
            continue;
        }
        match (rank(from), rank(to)) {
            (Some(a), Some(b)) if b < a => {}
            (None, _) | (_, None) => bad.push(format!("{from} -> {to}: a top-level module without a layer in RANKS")),
            _ => bad.push(format!(
                "{from} -> {to}: imports a module of the same or a higher layer"
            )),
        }
    }
    bad
}

/// Imports from one crate into another that `CRATE_DEPS` does not allow.
fn across_crates(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let allowed = |a: &str, b: &str| CRATE_DEPS.iter().any(|(c, deps)| *c == a && deps.contains(&b));
    edges
        .iter()
        .filter(|(from, to)| crate_of(from) != crate_of(to) && !allowed(crate_of(from), crate_of(to)))
        .map(|(from, to)| {
            format!(
                "{from} -> {to}: crate {} may not depend on crate {}",
                crate_of(from),
                crate_of(to)
            )
        })
        .collect()
}

/// One cycle in the graph, if there is one (depth-first search).
fn cycle(nodes: &BTreeSet<String>, edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeSet<(String, String)>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for (_, to) in edges.iter().filter(|(f, _)| f == n) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == to).unwrap();
                    let mut c = stack[start..].to_vec();
                    c.push(to.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// Every problem of a tree: upward imports, a cycle between top-level modules, and a
/// cycle between the files of one top-level module (its `mod.rs`, the facade that
/// declares and re-exports its children, left out).
fn problems(tree: &BTreeMap<String, String>) -> Vec<String> {
    let e = edges(tree);
    let mut out = upward(&e);
    out.extend(across_crates(&e));
    let tops: BTreeSet<String> = tree.keys().map(|m| top(m).to_string()).collect();
    let top_edges: BTreeSet<(String, String)> = e
        .iter()
        .filter(|(a, b)| top(a) != top(b))
        .map(|(a, b)| (top(a).to_string(), top(b).to_string()))
        .collect();
    if let Some(c) = cycle(&tops, &top_edges) {
        out.push(format!("cycle between modules: {}", c.join(" -> ")));
    }
    let files: BTreeSet<String> = tree.keys().filter(|m| m.contains("::")).cloned().collect();
    let file_edges: BTreeSet<(String, String)> = e
        .iter()
        .filter(|(a, b)| files.contains(a) && files.contains(b) && top(a) == top(b))
        .cloned()
        .collect();
    if let Some(c) = cycle(&files, &file_edges) {
        out.push(format!("cycle between files: {}", c.join(" -> ")));
    }
    out
}

fn tree_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files.iter().map(|(m, t)| (m.to_string(), t.to_string())).collect()
}

#[test]
fn the_checker_finds_cycles_and_upward_imports() {
    // A clean made-up tree: no problems.
    let clean = tree_of(&[
        ("model", "pub mod a;"),
        ("model::a", "pub struct A;"),
        ("engine", "use crate::model::a::A; // crate::cli::x in a comment"),
        ("engine::run", "use super::helper; use crate::model::A;"),
        ("engine::helper", "pub fn h() {}"),
        ("cli", "use crate::engine::run; /// [`crate::lambda`] in a doc"),
    ]);
    assert_eq!(problems(&clean), Vec::<String>::new());
    // An upward import (model -> engine) is also a cycle.
    let mut up = clean.clone();
    up.insert("model::a".into(), "use crate::engine::run::go;".into());
    let found = problems(&up);
    assert!(found.iter().any(|p| p.contains("model::a -> engine::run")), "{found:?}");
    assert!(
        found.iter().any(|p| p.starts_with("cycle between modules")),
        "{found:?}"
    );
    // A cycle between two files of one module.
    let mut files = clean.clone();
    files.insert("engine::helper".into(), "use super::run::x;".into());
    let found = problems(&files);
    assert!(found.iter().any(|p| p.starts_with("cycle between files")), "{found:?}");
    // The function reaching the lab: allowed by rank (both above the core), not by crate.
    let mut lab = clean.clone();
    lab.insert("lab".into(), "use crate::model::A;".into());
    lab.insert("lambda".into(), "use crate::engine::run; use crate::model::A;".into());
    assert_eq!(problems(&lab), Vec::<String>::new());
    // In the lab's crate `crate::model` is the core's model (the root imports it), and
    // `crate::conn` the lab's own module.
    lab.insert("lab::conn".into(), "pub fn c() {}".into());
    lab.insert(
        "lab::store".into(),
        "use crate::model::a::A; use crate::conn::c;".into(),
    );
    let e = edges(&lab);
    for to in ["model::a", "lab::conn"] {
        assert!(e.contains(&("lab::store".to_string(), to.to_string())), "{e:?}");
    }
    lab.insert("lambda::settings".into(), "use s3sweep_lab::credentials;".into());
    let found = problems(&lab);
    assert!(
        found
            .iter()
            .any(|p| p.contains("lambda::settings -> lab: crate s3sweep-lambda may not depend on crate s3sweep-lab")),
        "{found:?}"
    );
    // ...nor the core the lab.
    lab.insert("engine::helper".into(), "use s3sweep_lab::start;".into());
    assert!(problems(&lab)
        .iter()
        .any(|p| p.contains("engine::helper -> lab: crate s3sweep-core")));
    // A module that is not in the layer table.
    let mut unknown = clean;
    unknown.insert("stray".into(), "use crate::model::A;".into());
    assert!(problems(&unknown).iter().any(|p| p.contains("without a layer")));
}

#[test]
fn workspace_layers_are_one_way() {
    let tree = read_workspace(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(tree.len() > 30, "read {} modules", tree.len());
    let e = edges(&tree);
    assert!(e.len() > 50, "found only {} imports: the reader is broken", e.len());
    let found = problems(&tree);
    assert!(found.is_empty(), "layering problems:\n{}", found.join("\n"));
}

/// Prints the import graph between top-level modules (`cargo test --test it --
/// --nocapture --exact layers::graph`), for the architecture notes.
#[test]
fn graph() {
    let tree = read_workspace(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut by_top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in edges(&tree) {
        if top(&a) != top(&b) {
            by_top
                .entry(top(&a).to_string())
                .or_default()
                .insert(top(&b).to_string());
        }
    }
    for (a, bs) in by_top {
        println!("{a} -> {}", bs.into_iter().collect::<Vec<_>>().join(", "));
    }
}

/// The `s3sweep-*` crates a manifest's `[dependencies]` names (not its dev-dependencies:
/// the tests may use every crate).
fn manifest_deps(manifest: &str) -> BTreeSet<String> {
    let mut in_deps = false;
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && line.starts_with("s3sweep") {
            out.insert(line.split(['.', ' ', '=']).next().unwrap().to_string());
        }
    }
    out
}

#[test]
fn each_crate_depends_only_on_the_crates_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The reader on a made-up manifest first.
    let made_up = "[dependencies]\ns3sweep-core.workspace = true\ns3sweep-lab = { workspace = true }\n\n[dev-dependencies]\ns3sweep-lambda.workspace = true\n";
    assert_eq!(
        manifest_deps(made_up),
        ["s3sweep-core", "s3sweep-lab"].map(String::from).into()
    );
    for (name, dir, _) in CRATES {
        let manifest_dir = root.join(dir).parent().unwrap().to_path_buf();
        let text = std::fs::read_to_string(manifest_dir.join("Cargo.toml")).unwrap();
        let allowed: BTreeSet<String> = CRATE_DEPS
            .iter()
            .find(|(c, _)| c == name)
            .unwrap()
            .1
            .iter()
            .map(|s| s.to_string())
            .collect();
        let deps = manifest_deps(&text);
        let extra: Vec<&String> = deps.difference(&allowed).collect();
        assert!(
            extra.is_empty(),
            "{name} depends on {extra:?}; it may depend on {allowed:?} only"
        );
    }
}

/// The crates the function's build compiles: `cargo tree` of its package, normal
/// dependencies only, as `cargo build -p s3sweep-lambda` and `cargo lambda build`
/// resolve them (its own features, not the CLI's).
fn function_tree() -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            "s3sweep-lambda",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn the_function_builds_without_the_lab_the_cli_or_sso() {
    let tree = function_tree();
    assert!(
        ["s3sweep-core", "aws-sdk-s3", "aws-config", "lambda_runtime"]
            .iter()
            .all(|c| tree.contains(*c)),
        "the reader is broken: {tree:?}"
    );
    // The lab and its server, the CLI's parsers and tables, the SSO providers of
    // aws-config's `sso` feature (the CLI's `aws sso login` profiles).
    let carried: Vec<&str> = [
        "s3sweep-lab",
        "s3s",
        "rcgen",
        "clap",
        "aws-sdk-sso",
        "aws-sdk-ssooidc",
        "quick-xml",
    ]
    .into_iter()
    .filter(|c| tree.contains(*c))
    .collect();
    assert!(carried.is_empty(), "the function's build carries {carried:?}");
}

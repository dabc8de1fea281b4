//! The layers of `src/` stay one-way: each module imports only modules below it, and
//! no import goes round in a circle. Read from the source text: every `crate::a::...`
//! path (and `super::x` between sibling files) outside comments is an import of the
//! module it names. The checker is tested on small made-up sources first, so a broken
//! checker cannot pass the real tree by finding nothing.

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
    ("lab", 5),
    ("analysis", 6),
    ("render", 7),
    ("lambda", 8),
    ("cli", 9),
];

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
                if parts == ["lib"] {
                    continue;
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
        for segs in paths_after(&code, "crate::") {
            targets.extend(resolve(&modules, &segs));
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
    // A module that is not in the layer table.
    let mut unknown = clean;
    unknown.insert("stray".into(), "use crate::model::A;".into());
    assert!(problems(&unknown).iter().any(|p| p.contains("without a layer")));
}

#[test]
fn src_layers_are_one_way() {
    let tree = read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
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
    let tree = read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
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

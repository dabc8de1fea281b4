//! The story court's cases: every truth of [`super::generator`] over many seeds,
//! through the real analysis and [`super::hear`]; and the docs' table of the rules.

use std::collections::BTreeMap;

use crate::analysis::analyse;
use crate::model::{SweepResult, Thresholds};

use super::contradictions::CONTRADICTIONS;
use super::generator::{Case, Truth};
use super::hear;

/// Sweeps drawn per truth.
const SEEDS: u64 = 30;

/// The verdict of the largest worker count of the first summary's rows.
fn binding_verdict(result: &SweepResult) -> Option<crate::model::Verdict> {
    let s = result.summary.first()?;
    let rows: Vec<_> = result.rows_for(s).collect();
    let w = rows.iter().map(|r| r.workers).max()?;
    rows.iter()
        .find(|r| r.workers == w)?
        .diagnosis
        .as_ref()
        .map(|d| d.verdict)
}

/// The tally of one truth: cases, verdicts right, complaints.
#[derive(Debug, Default)]
struct Tally {
    cases: u32,
    right: u32,
    wrong: Vec<String>,
    complaints: Vec<String>,
}

/// Tries every case of `truths` and returns the tally per truth.
fn court(truths: &[Truth]) -> BTreeMap<String, Tally> {
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for &truth in truths {
        let tally = tallies.entry(truth.name()).or_default();
        for seed in 0..SEEDS {
            let case = Case::draw(truth, seed);
            let mut result = case.sweep();
            analyse(&mut result, &Thresholds::default());
            tally.cases += 1;
            let v = binding_verdict(&result);
            if v == Some(truth.verdict()) {
                tally.right += 1;
            } else {
                tally.wrong.push(format!("seed {seed}: {v:?} ({case:?})"));
            }
            for (rule, complaint) in hear(&result) {
                tally.complaints.push(format!("seed {seed}, {rule}: {complaint}"));
            }
        }
    }
    tallies
}

/// Prints the tally and fails on any wrong verdict or complaint.
fn judge(tallies: &BTreeMap<String, Tally>) {
    let mut failed = Vec::new();
    for (truth, t) in tallies {
        println!(
            "{truth}: {} cases, verdict right in {} ({:.0}%), {} complaints",
            t.cases,
            t.right,
            100.0 * f64::from(t.right) / f64::from(t.cases.max(1)),
            t.complaints.len()
        );
        failed.extend(t.wrong.iter().take(3).map(|w| format!("{truth}: wrong verdict {w}")));
        failed.extend(t.complaints.iter().take(3).map(|c| format!("{truth}: {c}")));
    }
    assert!(failed.is_empty(), "the court found:\n{}", failed.join("\n"));
}

#[test]
fn the_court_hears_every_truth() {
    let tallies = court(&Truth::ALL);
    assert_eq!(tallies.values().map(|t| t.cases).sum::<u32>(), 12 * SEEDS as u32);
    judge(&tallies);
}

/// The names of the contradiction table in docs/diagnosis.md, in order.
fn documented(docs: &str) -> Vec<String> {
    let start = docs
        .find("The rules of contradiction, checked")
        .expect("the docs' table of contradictions");
    docs[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('`').nth(1).map(str::to_string))
        .collect()
}

#[test]
fn the_docs_list_every_rule_of_contradiction_and_no_other() {
    let coded: Vec<String> = CONTRADICTIONS.iter().map(|c| c.name.to_string()).collect();
    let docs = include_str!("../../../../../docs/diagnosis.md");
    assert_eq!(documented(docs), coded);
    let renamed = docs.replace("| `rising_where_bound` |", "| `rising_where_bound2` |");
    assert_ne!(documented(&renamed), coded);
}

#[test]
fn the_same_seed_draws_the_same_sweep() {
    for truth in Truth::ALL {
        let a = serde_json::to_string(&Case::draw(truth, 7).sweep()).unwrap();
        let b = serde_json::to_string(&Case::draw(truth, 7).sweep()).unwrap();
        assert_eq!(a, b, "{}", truth.name());
    }
}

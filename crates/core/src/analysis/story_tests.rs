//! The story's rules against the docs, and a property test over generated curves:
//! no story line advises what its row's verdict rules out, and "knee" appears only
//! where the curve flattened.

use super::*;
use crate::analysis::analyse;
use crate::analysis::rules::tests::{documented_names, healthy, on_two_vcpus, pct};
use crate::model::{ClientSide, ErrorKind, Thresholds};
use proptest::prelude::*;

/// The story rule names of the table in docs/diagnosis.md, in order.
fn documented_rules(docs: &str) -> Vec<String> {
    documented_names(docs, "The story rules, checked in this order")
}

#[test]
fn the_docs_list_the_story_rules_in_their_order() {
    let coded: Vec<String> = RULES.iter().map(|r| r.name.to_string()).collect();
    let docs = include_str!("../../../../docs/diagnosis.md");
    assert_eq!(documented_rules(docs), coded);
    let swapped = docs.replace("| `still_rising` |", "| `still_rising2` |");
    assert_ne!(documented_rules(&swapped), coded);
}

/// The kinds of curve the property test draws.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Rising,
    Flat,
    CpuBound,
    Throttled,
    Errors,
}

/// One row of a generated curve: `x` objects/s at `w` workers over 1,000 requests.
fn curve_row(w: u32, x: f64, kind: Kind, past_knee: bool) -> ConfigResult {
    let mut r = healthy();
    r.bucket = "b".into();
    r.workers = w;
    r.pool_connections = w;
    r.requests = 1000;
    r.ok = 1000;
    r.objects_per_s = x;
    r.wall_ms = 1000.0 / x * 1000.0;
    r.ttlb_ms = pct(f64::from(w) / x * 1000.0);
    r.ttfb_ms = pct(0.9 * f64::from(w) / x * 1000.0);
    r.cpu_ms = 0.1 * r.wall_ms;
    r.cpu_ms_per_get = r.cpu_ms / 1000.0;
    match kind {
        Kind::CpuBound if past_knee => r.cpu_ms = 1.8 * r.wall_ms,
        Kind::Throttled if past_knee => r.throttled_responses = 50,
        Kind::Errors if past_knee => {
            r.errors.add(ErrorKind::Timeout, 30);
            r.ok = 970;
        }
        _ => {}
    }
    let busy_ms = (r.wall_ms * 0.1) as u64;
    r.client = Some(ClientSide::of(&r, on_two_vcpus(busy_ms, 2)));
    r
}

/// A generated curve: rising at `per_worker` objects/s per worker up to `ceiling`
/// (none for `Rising`), with noise, at the counts picked.
fn generated(kind: Kind, counts: &[u32], per_worker: f64, ceiling: f64, noise: &[f64]) -> SweepResult {
    let rows = counts
        .iter()
        .zip(noise.iter().cycle())
        .map(|(&w, &n)| {
            let line = f64::from(w) * per_worker;
            let x = match kind {
                Kind::Rising => line,
                _ => line.min(ceiling),
            };
            curve_row(w, (x * n).max(1.0), kind, line >= ceiling)
        })
        .collect();
    let mut result = crate::model::test_rows::result(rows);
    analyse(&mut result, &Thresholds::default());
    result
}

/// Advice words each story line may carry, for checking the text against its claims.
const ADVICE_WORDS: &[(Advice, &str)] = &[
    (Advice::MoreWorkers, "try more"),
    (Advice::MoreCpu, "more CPU"),
    (Advice::LargerPool, "raise pool_connections"),
    (Advice::SpreadKeys, "spread keys"),
    (Advice::QuieterMachine, "without other load"),
    (Advice::WiderNetwork, "more network"),
];

/// Checks one bucket's story against its rows: claims against verdicts, words
/// against claims, and "knee" against the curve.
fn check_story(result: &SweepResult) -> Result<(), TestCaseError> {
    let summary = &result.summary[0];
    let story = Story::of_bucket(result, summary);
    let verdict_at = |w: u32| {
        result
            .results
            .iter()
            .find(|r| r.workers == w)
            .and_then(|r| r.diagnosis.as_ref())
            .map(|d| d.verdict)
    };
    for c in &story.claims {
        let v = verdict_at(c.workers).expect("a claim names a measured row");
        prop_assert!(!rules_out(v, c.advice), "{c:?} against {v:?}: {story:?}");
    }
    let lines = [story.recommendation.clone(), story.knee_words(), story.subtitle()];
    for line in &lines {
        for (advice, words) in ADVICE_WORDS {
            if line.contains(words) && !line.contains(&format!("{words} will help, not")) {
                let named = story.claims.iter().find(|c| c.advice == *advice);
                // Words without a claim are advice nobody checked; the knee line's
                // "try more" is the binding row's.
                let ok = named.is_some()
                    || (*advice == Advice::MoreWorkers
                        && story
                            .binding
                            .is_some_and(|b| !rules_out(b.verdict, Advice::MoreWorkers)));
                prop_assert!(ok, "{line:?} advises {advice:?} without a claim: {story:?}");
            }
        }
    }
    // "knee at K" only where a larger count was tried and gained less than 10% over K.
    let clean: Vec<(u32, f64)> = result
        .results
        .iter()
        .filter(|r| r.errors.total == 0)
        .map(|r| (r.workers, r.objects_per_s))
        .collect();
    // The summary's knee is the plot legend's and the compare table's.
    let summary_knee = summary.knee_workers.map(|k| format!("knee at {k} workers"));
    let analysis_line = &result.analysis.as_ref().unwrap().buckets[0].recommendation;
    for line in lines.iter().chain([analysis_line]).chain(summary_knee.as_ref()) {
        if let Some(rest) = line.split("knee at ").nth(1) {
            let k: u32 = rest.split(' ').next().unwrap().parse().unwrap();
            let at_k = clean.iter().find(|p| p.0 == k).map(|p| p.1).unwrap();
            let after: Vec<f64> = clean.iter().filter(|p| p.0 > k).map(|p| p.1).collect();
            prop_assert!(!after.is_empty(), "knee at the largest count: {line}");
            let best_after = after.iter().copied().fold(0.0, f64::max);
            prop_assert!(best_after <= at_k / 0.9 + 1e-6, "rose past the knee: {line} {clean:?}");
        }
    }
    prop_assert_eq!(
        summary.knee_workers,
        result.analysis.as_ref().unwrap().buckets[0].knee_workers
    );
    Ok(())
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Rising),
        Just(Kind::Flat),
        Just(Kind::CpuBound),
        Just(Kind::Throttled),
        Just(Kind::Errors)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_story_line_contradicts_its_rows(
        kind in kind(),
        counts in prop::sample::subsequence(vec![1u32, 2, 4, 8, 16, 32, 64, 128, 256], 1..=9),
        per_worker in 20.0f64..200.0,
        ceiling_workers in 1.0f64..300.0,
        noise in prop::collection::vec(0.93f64..1.07, 1..9),
    ) {
        let result = generated(kind, &counts, per_worker, per_worker * ceiling_workers, &noise);
        check_story(&result)?;
    }
}

#[test]
fn the_issues_express_curve_does_not_advise_more_workers_at_a_client_cpu_row() {
    // Still rising at 256 workers, where client_cpu binds (the demo's Express table).
    let verdicts: Vec<WorkerVerdict> = [
        (64, Verdict::Latency),
        (128, Verdict::Latency),
        (256, Verdict::ClientCpu),
    ]
    .iter()
    .map(|&(workers, verdict)| WorkerVerdict { workers, verdict })
    .collect();
    let s = Story::of(&[(64, 5000.0), (128, 7000.0), (256, 9700.0)], &verdicts, None, &[]);
    assert_eq!(s.rule, "rising_but_bound");
    assert!(!s.recommendation.contains("try more"), "{}", s.recommendation);
    assert!(
        s.recommendation.contains("client_cpu binds at 256"),
        "{}",
        s.recommendation
    );
    // "Rising" and "binds" never describe the same count.
    assert_eq!(
        s.knee_words(),
        "no knee: client_cpu binds at 256 workers, the largest tried"
    );
    assert_eq!(s.subtitle(), s.knee_words());
    assert!(!s.recommendation.contains("rising") && !s.recommendation.contains("rose"));
    // The same curve bound by latency: try more.
    let latency: Vec<WorkerVerdict> = verdicts
        .iter()
        .map(|v| WorkerVerdict {
            verdict: Verdict::Latency,
            ..*v
        })
        .collect();
    let s = Story::of(&[(64, 5000.0), (128, 7000.0), (256, 9700.0)], &latency, None, &[]);
    assert_eq!(s.rule, "still_rising");
    assert_eq!(s.knee_words(), "still rising at 256 workers: try more");
}

#[test]
fn a_flat_curve_has_a_knee_and_the_plateau_says_what_was_checked() {
    let verdicts: Vec<WorkerVerdict> = [(64, Verdict::Latency), (128, Verdict::Latency), (256, Verdict::Plateau)]
        .iter()
        .map(|&(workers, verdict)| WorkerVerdict { workers, verdict })
        .collect();
    let s = Story::of(&[(64, 2864.0), (128, 4748.0), (256, 4898.0)], &verdicts, None, &[]);
    assert_eq!(s.rule, "flattened");
    assert_eq!(s.recommended_workers, Some(128));
    assert_eq!(s.knee_words(), "knee at 128 workers");
    assert!(
        s.subtitle() == "knee at 128 workers, flat to 256: the cause is not among those measured",
        "{}",
        s.subtitle()
    );
    assert!(!s.subtitle().contains("bound by plateau"));
}

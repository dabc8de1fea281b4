//! The story court on the lab: six small sweeps of `s3sweep local` whose truth the lab
//! sets (plain latency, a CPU quota, a per-prefix rate answering 503 SlowDown, a small
//! pool, missing keys, a NIC), each read back from its JSON and heard by
//! `s3sweep::render::court::hear` (the unit tests' rules of contradiction over what
//! `report` prints), and the verdict at the largest count checked against the truth.
//! Bounded: a few hundred GETs per sweep, each run within `run_bounded`'s limit.

use std::process::Command;

use crate::common::{self, run_bounded, BIN};
use s3sweep::model::{SweepResult, Verdict};

/// `s3sweep local` with `args`, its stdout and its result read back.
fn local(name: &str, args: &[&str]) -> Option<(String, SweepResult)> {
    let json = std::env::temp_dir().join(format!("s3sweep-court-{}-{name}.json", std::process::id()));
    let path = json.display().to_string();
    let mut all = vec!["local", "--quiet", "--json", &path];
    all.extend_from_slice(args);
    let out = run_bounded(Command::new(BIN).args(&all));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if stderr.contains("cannot set a CPU quota here") {
        // Only where this machine refuses cgroups (not root); CI runs as root.
        eprintln!("SKIPPED: {stderr}");
        return None;
    }
    assert!(out.status.success(), "{name}: {stderr}");
    let text = std::fs::read_to_string(&json).expect("the result file");
    let _ = std::fs::remove_file(&json);
    let result = SweepResult::from_json(&text).expect("a result");
    Some((String::from_utf8_lossy(&out.stdout).to_string(), result))
}

/// The verdict of each bucket's largest worker count.
fn binding(result: &SweepResult) -> Vec<(String, Verdict)> {
    result
        .summary
        .iter()
        .filter_map(|s| {
            let rows: Vec<_> = result.rows_for(s).collect();
            let w = rows.iter().map(|r| r.workers).max()?;
            let d = rows.iter().find(|r| r.workers == w)?.diagnosis.as_ref()?;
            Some((s.bucket.clone(), d.verdict))
        })
        .collect()
}

/// Runs a case: every bucket's verdict at the largest count is `truth` (or, for
/// `only`, that bucket's), and the court finds nothing.
fn case(name: &str, args: &[&str], truth: Verdict, only: Option<&str>) {
    case_under_load(name, args, truth, only, &[]);
}

/// As [`case`], but a bucket may end on one of `under_load` (a rule's own exception on
/// a busy machine) so long as one bucket ends on `truth`.
fn case_under_load(name: &str, args: &[&str], truth: Verdict, only: Option<&str>, under_load: &[Verdict]) {
    let _one = common::one_at_a_time();
    let Some((stdout, result)) = local(name, args) else {
        return;
    };
    let verdicts = binding(&result);
    eprintln!("{name}: {verdicts:?}");
    for (bucket, v) in &verdicts {
        if only.is_none_or(|o| o == bucket) && !under_load.contains(v) {
            assert_eq!(*v, truth, "{name}: {bucket}\n{stdout}");
        }
    }
    assert!(
        verdicts.iter().any(|(_, v)| *v == truth),
        "{name}: {verdicts:?}\n{stdout}"
    );
    let found = s3sweep::render::court::hear(&result);
    assert!(found.is_empty(), "{name}: the court found {found:#?}\n{stdout}");
}

#[test]
fn plain_latency() {
    case(
        "latency",
        &["--objects", "48", "--workers", "1,2,4"],
        Verdict::Latency,
        None,
    );
}

#[test]
fn a_cpu_quota() {
    case(
        "quota",
        &["--objects", "300", "--workers", "4,64", "--cpu-quota", "0.25"],
        Verdict::ClientCpu,
        None,
    );
}

#[test]
fn a_per_prefix_rate_answering_slow_down() {
    // Every key under one prefix (`test/`), 100 GETs a second allowed: 32 workers on
    // the standard-like bucket ask for far more. (The directory bucket beside it is
    // not held to the rate here: its verdict is not checked.)
    case(
        "prefix-rate",
        &["--objects", "300", "--workers", "1,32", "--prefix-rate", "100"],
        Verdict::Throttled,
        Some("standard-like"),
    );
}

#[test]
fn a_small_pool() {
    case(
        "pool",
        &["--objects", "256", "--workers", "2,32", "--pool", "2"],
        Verdict::Pool,
        None,
    );
}

/// The NIC of `evidence_network`'s test (128 KiB objects: 320 GETs a second, which
/// the debug client and lab serve with CPU to spare); a bucket whose largest count
/// used the machine's CPU up is `machine_cpu` by the rules (its body time is no
/// evidence), so long as the other is `bandwidth`.
#[test]
fn a_nic() {
    case_under_load(
        "nic",
        &[
            "--objects",
            "256",
            "--size",
            "131072",
            "--workers",
            "1,8,32,64",
            "--nic",
            "40",
        ],
        Verdict::Bandwidth,
        None,
        &[Verdict::MachineCpu, Verdict::ClientCpu],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_keys() {
    use crate::common::lab::LatencyProfile;
    use s3sweep::engine::{self, Quiet};
    // Half the keys asked for were never written: errors at every count.
    let (_server, client) = common::LabBuilder::new()
        .bucket("holey-court", LatencyProfile::None)
        .seed("holey-court", 20, 100)
        .start()
        .await;
    let plan = s3sweep::plan::Plan::from_json(r#"{"buckets": ["holey-court"], "object_count": 40, "workers": [1, 4]}"#)
        .unwrap();
    let mut result = engine::run(
        &client.session(&plan),
        &plan,
        &common::options(),
        std::sync::Arc::new(Quiet),
    )
    .await;
    s3sweep::analysis::analyse(&mut result, &s3sweep::model::Thresholds::default());
    assert_eq!(binding(&result), vec![("holey-court".to_string(), Verdict::Errors)]);
    let found = s3sweep::render::court::hear(&result);
    assert!(found.is_empty(), "the court found {found:#?}");
}

//! Issue 49: `s3sweep preflight --results-uri` looks at the results destination
//! against the lab (`s3sweep serve`, a bucket placed in another region with
//! `--bucket-region`, a role without `s3:PutObject` through `--iam-policy`): a missing
//! results bucket, one in another region and one that refuses the write are each one
//! line with its fix, and the command fails; a right one takes a test write under the
//! prefix that is removed at once (nothing is left under the prefix).

use crate::common::{s3sweep_said as s3sweep, Serve};

const HERE: &str = "res-here";
const RESULTS: &str = "res-results";
const FAR: &str = "res-far";

fn preflight(server: &Serve, more: &[&str]) -> (bool, String) {
    let mut args = vec![
        "preflight",
        "--endpoint",
        &server.endpoint,
        "--region",
        "us-east-1",
        "--bucket",
        HERE,
    ];
    args.extend(more);
    s3sweep(&args)
}

#[test]
fn preflight_names_a_missing_results_bucket_one_in_another_region_and_a_refused_write() {
    let server = Serve::start(&[HERE, RESULTS, FAR], &["--bucket-region", &format!("{FAR}=eu-west-1")]);

    // Right: the test write goes under the prefix and is removed.
    let uri = format!("s3://{RESULTS}/runs");
    let (ok, text) = preflight(&server, &["--results-uri", &uri]);
    println!("{text}");
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "ok: results bucket {RESULTS} is in us-east-1; a test write to s3://{RESULTS}/runs/s3sweep-preflight-"
        )) && text.contains("succeeded and was removed"),
        "{text}"
    );
    // Nothing is left under the prefix: a listing of it finds no key.
    let dir = std::env::temp_dir().join(format!("s3sweep-preflight-results-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let event = dir.join("listing.json");
    std::fs::write(
        &event,
        serde_json::json!({"buckets": [RESULTS], "key_prefix": "runs/"}).to_string(),
    )
    .unwrap();
    let (ok, text) = preflight(&server, &["--event", &event.display().to_string()]);
    assert!(!ok && text.contains("no key under key_prefix \"runs/\""), "{text}");

    // Missing, and in another region: one line each.
    let (ok, text) = preflight(&server, &["--results-uri", "s3://res-missing/runs"]);
    println!("{text}");
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "PROBLEM: results bucket res-missing does not exist (HeadBucket: 404): every result would be lost"
        ),
        "{text}"
    );
    let (ok, text) = preflight(&server, &["--results-uri", &format!("s3://{FAR}/runs")]);
    println!("{text}");
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("PROBLEM: results bucket {FAR} is in eu-west-1, not the stack's region us-east-1: S3 answers the function's writes with a 301 redirect")),
        "{text}"
    );
    drop(server);

    // A role that may not write under the prefix: the test write is refused.
    let policy = dir.join("no-put.json");
    let doc = serde_json::json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"], "Resource": "*"}
    ]});
    std::fs::write(&policy, doc.to_string()).unwrap();
    let server = Serve::start(&[HERE, RESULTS], &["--iam-policy", &policy.display().to_string()]);
    let (ok, text) = preflight(&server, &["--results-uri", &uri]);
    println!("{text}");
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "PROBLEM: results bucket {RESULTS}: a test write to s3://{RESULTS}/runs/s3sweep-preflight-"
        )) && text.contains("AccessDenied"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 49: every event is looked at, not only the first naming a bucket: a bucket
/// holding 10 objects passes an event reading 5 and fails one reading 20, named.
#[test]
fn preflight_looks_at_every_events_objects() {
    let server = Serve::start(&[HERE], &[]);
    let dir = std::env::temp_dir().join(format!("s3sweep-preflight-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    server.seed(HERE, 10, 64, &dir.join("manifest.json"));
    let small = dir.join("canary.json");
    let large = dir.join("seed.json");
    std::fs::write(
        &small,
        serde_json::json!({"buckets": [HERE], "object_count": 5}).to_string(),
    )
    .unwrap();
    std::fs::write(
        &large,
        serde_json::json!({"buckets": [HERE], "object_count": 20}).to_string(),
    )
    .unwrap();
    let (small, large) = (small.display().to_string(), large.display().to_string());
    let (ok, text) = preflight(&server, &["--event", &small, "--event", &large]);
    println!("{text}");
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "PROBLEM: bucket {HERE}: no object test/19/vectors, which {large} reads"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "ok: bucket {HERE} is in us-east-1, holds test/0/vectors and test/4/vectors"
        )),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

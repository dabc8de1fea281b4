//! Issue 33: `s3sweep preflight` looks at the buckets an event names before a deploy,
//! against the lab (`s3sweep serve`, a bucket placed in another region with
//! `--bucket-region`): a missing bucket, a bucket in another region than the stack's,
//! a missing object and a directory bucket outside the subnets' zones are each one
//! line with its fix, and the command fails; buckets that are right are named ok.

use crate::common::{s3sweep_said as s3sweep, Serve};

const HERE: &str = "pre-here";
const FAR: &str = "pre-far";
const DIRECTORY: &str = "pre--lab1-az1--x-s3";

fn serve() -> Serve {
    Serve::start(
        &[HERE, FAR, &format!("{DIRECTORY}=express")],
        &["--bucket-region", &format!("{FAR}=eu-west-1")],
    )
}

fn seed(server: &Serve, bucket: &str, dir: &std::path::Path) {
    let manifest = dir.join(format!("manifest-{bucket}.json"));
    let (ok, text) = s3sweep(&[
        "seed",
        "--bucket",
        bucket,
        "--count",
        "10",
        "--size",
        "64",
        "--endpoint",
        &server.endpoint,
        "--manifest",
        &manifest.display().to_string(),
    ]);
    assert!(ok, "{text}");
}

#[test]
fn preflight_names_a_missing_bucket_a_wrong_region_and_missing_objects() {
    let server = serve();
    let dir = std::env::temp_dir().join(format!("s3sweep-preflight-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    seed(&server, HERE, &dir);
    seed(&server, DIRECTORY, &dir);
    let event = dir.join("event.json");
    let write = |buckets: &[&str], count: u32| {
        let doc = serde_json::json!({"buckets": buckets, "object_count": count});
        std::fs::write(&event, doc.to_string()).unwrap();
    };
    let preflight = |more: &[&str]| {
        let mut args = vec![
            "preflight",
            "--endpoint",
            &server.endpoint,
            "--region",
            "us-east-1",
            "--event",
        ];
        let path = event.display().to_string();
        args.push(&path);
        args.extend(more);
        s3sweep(&args)
    };

    // Both right: ok lines, success.
    write(&[HERE, DIRECTORY], 10);
    let (ok, text) = preflight(&[]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "ok: bucket {HERE} is in us-east-1, holds test/0/vectors and test/9/vectors"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("ok: bucket {DIRECTORY} is in us-east-1")),
        "{text}"
    );

    // A missing bucket and one in another region: one line each, with the fix.
    write(&[HERE, "pre-missing", FAR], 10);
    let (ok, text) = preflight(&[]);
    println!("{text}");
    assert!(!ok, "{text}");
    assert!(
        text.contains("PROBLEM: bucket pre-missing does not exist (HeadBucket: 404)")
            && text.contains("create it in us-east-1"),
        "{text}"
    );
    assert!(
        text.contains(&format!("PROBLEM: bucket {FAR} is in eu-west-1, not the stack's region us-east-1: deploy the stack in eu-west-1 (make deploy REGION=eu-west-1)")),
        "{text}"
    );
    assert!(text.contains("2 problem(s)"), "{text}");

    // The event reads more objects than were written; the directory bucket is in
    // another zone than the subnets.
    write(&[HERE, DIRECTORY], 20);
    let (ok, text) = preflight(&["--subnet-zone-ids", "lab1-az2"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("PROBLEM: bucket {HERE}: no object test/19/vectors")),
        "{text}"
    );
    // The suggested seed repeats the target flags given.
    let seed_advice = format!(
        "`s3sweep seed --bucket {HERE} --endpoint {} --region us-east-1`",
        server.endpoint
    );
    assert!(text.contains(&seed_advice), "{text}");
    assert!(
        text.contains(&format!(
            "directory bucket {DIRECTORY} is in zone lab1-az1, the function's subnets in lab1-az2"
        )),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! Issue 50: the real `s3sweep-lambda` under the project's Runtime API emulator
//! (tests/it/common/runtime.rs) as Lambda Managed Instances runs it: one process with
//! `AWS_LAMBDA_MAX_CONCURRENCY=2`, which Lambda sets there ("set by Lambda when a
//! function is configured to use Managed Instances", aws-lambda-go PR 600; the variable
//! `lambda_runtime::run_concurrent` reads), takes two invocations at once. Each answers
//! for its own bucket, and each row records the other invocation that ran beside it.
//! Without the variable (Lambda) the same process takes them one at a time.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::lab::{LatencyProfile, RunningServer};
use crate::common::runtime::Runtime;
use crate::common::LabBuilder;
use crate::runtime_api::answered;

const OBJECTS: u64 = 240;

/// Two events at once, each for its own bucket; their answers, in the order sent.
async fn two_at_once(rt: &Runtime) -> [Value; 2] {
    let event = |bucket: &str| {
        let e = json!({"buckets": [bucket], "object_count": OBJECTS, "workers": [4], "warmup": false});
        serde_json::to_vec(&e).unwrap()
    };
    let timeout = Duration::from_secs(60);
    let (a, b) = tokio::join!(rt.invoke(event("lmi-a"), timeout), rt.invoke(event("lmi-b"), timeout));
    [answered(a.1).0, answered(b.1).0]
}

/// Starts a lab with the two buckets (standard-like: ~17 ms a GET, so a sweep of 240
/// GETs at 4 workers takes about a second) and one function process with `env`.
async fn one_process(env: Vec<(&'static str, String)>) -> (RunningServer, Runtime) {
    let server = LabBuilder::new()
        .bucket("lmi-a", LatencyProfile::Standard)
        .bucket("lmi-b", LatencyProfile::Standard)
        .seed("lmi-a", OBJECTS as u32, 1024)
        .seed("lmi-b", OBJECTS as u32, 1024)
        .server()
        .await;
    let rt = Runtime::start().await;
    let mut all = env;
    all.push(("S3SWEEP_ENDPOINT_URL", server.endpoint()));
    rt.spawn_functions(crate::common::lambda_bin(), 1, &all);
    (server, rt)
}

fn summary(result: &Value) -> String {
    let row = &result["results"][0];
    format!(
        "bucket {} ok {} errors {} wall_ms {} overlap {} substrate {}",
        row["bucket"],
        row["ok"],
        row["errors"]["total"],
        row["wall_ms"],
        row["overlap"],
        result["environment"]["lambda"]["substrate"]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_invocations_at_once_on_managed_instances_both_answer_and_record_the_overlap() {
    let (server, rt) = one_process(vec![("AWS_LAMBDA_MAX_CONCURRENCY", "2".into())]).await;
    let answers = two_at_once(&rt).await;
    for (result, bucket) in answers.iter().zip(["lmi-a", "lmi-b"]) {
        println!("managed instances: {}", summary(result));
        let substrate = &result["environment"]["lambda"]["substrate"];
        assert_eq!(substrate["kind"], "managed_instances", "{substrate}");
        assert_eq!(substrate["max_concurrency"], 2, "{substrate}");
        let rows = result["results"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{result}");
        let row = &rows[0];
        assert_eq!(row["bucket"], bucket, "each invocation answers for its own event");
        assert_eq!(row["ok"], OBJECTS, "{row}");
        assert_eq!(row["errors"]["total"], 0, "{row}");
        assert_eq!(row["overlap"]["other_invocations"], 1, "{}", summary(result));
        let fraction = row["overlap"]["overlapped_fraction"].as_f64().unwrap();
        assert!(fraction > 0.0, "{}", summary(result));
    }
    // The later of the two ran beside the other for most of its row at least.
    let most = answers
        .iter()
        .map(|r| r["results"][0]["overlap"]["overlapped_fraction"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(most >= 0.5, "the two sweeps did not run side by side: {most}");
    assert!(!rt.killed());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_lambda_the_same_process_takes_them_one_at_a_time() {
    let (server, rt) = one_process(vec![]).await;
    let answers = two_at_once(&rt).await;
    for result in &answers {
        println!("lambda: {}", summary(result));
        assert_eq!(result["environment"]["lambda"]["substrate"]["kind"], "lambda");
        let row = &result["results"][0];
        assert_eq!(row["ok"], OBJECTS, "{row}");
        assert!(row["overlap"].is_null(), "one at a time, nothing beside it: {row}");
    }
    server.shutdown().await;
}

//! Issue 50 item 4, checked without an AWS account: `make compare-lmi` against a fake
//! `aws` on PATH that answers each function's invoke with a canned result (the Lambda
//! function's, and its twin's on Lambda Managed Instances).

use super::baseline_vpc::fake_lambda;
use super::first_deploy::{calls, make, path_with};
use super::*;

/// docs/demo.json as the function `name` of 2,048 MB would have answered it; on
/// Managed Instances (a c7gn.large, 8 invocations at once) when `lmi`.
fn answered_by(name: &str, lmi: bool) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&read("docs/demo.json")).unwrap();
    doc["environment"]["runner"] = "lambda".into();
    let mut lambda = serde_json::json!({
        "function_name": name, "function_version": "$LATEST", "memory_size_mb": 2048,
        "cold_start": false, "architecture": "arm64", "region": "us-east-1"
    });
    if lmi {
        lambda["substrate"] = serde_json::json!({
            "kind": "managed_instances", "max_concurrency": 8,
            "instance_type": "c7gn.large", "vcpus": 2
        });
    }
    doc["environment"]["lambda"] = lambda;
    doc.to_string()
}

/// `make compare-lmi` invokes the Lambda function, then its twin on Managed Instances,
/// with the same event, one attempt each, and compares them with Lambda as A: the B
/// side names its substrate and both sides' cost per 1,000 objects is shown. Without
/// the twin, or when an invoke fails, it says so and compares nothing.
#[test]
fn make_compare_lmi_invokes_both_with_one_event_and_compares_their_cost() {
    let aws = fake_lambda(&[
        ("s3sweep", answered_by("s3sweep", false)),
        ("s3sweep-lmi", answered_by("s3sweep-lmi", true)),
    ]);
    let event = aws.path().join("event.json");
    fs::write(&event, "{\"buckets\": [\"b\"]}").unwrap();
    let run = |lmi_function: &str| {
        let vars = [
            format!("EVENT={}", event.display()),
            "FUNCTION=s3sweep".into(),
            format!("LMI_FUNCTION={lmi_function}"),
            format!("RESULT={}", aws.path().join("lambda.json").display()),
            format!("LMI_RESULT={}", aws.path().join("lmi.json").display()),
            format!("S3SWEEP={}", crate::common::BIN),
        ];
        let mut args = vec!["compare-lmi"];
        args.extend(vars.iter().map(String::as_str));
        let _ = fs::remove_file(aws.path().join("calls.log"));
        // Wide enough for every column (a pipe is fitted to 100 characters).
        make(&args, &[path_with(&aws), ("COLUMNS", "250".into())])
    };
    let text = run("s3sweep-lmi");
    let log = calls(&aws);
    let invokes: Vec<&str> = log.lines().filter(|l| l.starts_with("aws lambda invoke")).collect();
    assert_eq!(invokes.len(), 2, "{log}\n{text}");
    assert!(invokes[0].contains("--function-name s3sweep "), "{log}");
    assert!(invokes[1].contains("--function-name s3sweep-lmi "), "{log}");
    let payload = format!("--payload fileb://{}", event.display());
    assert!(
        invokes.iter().all(|l| l.contains(&payload)),
        "not the same event: {log}"
    );
    assert!(text.contains("AWS_MAX_ATTEMPTS=1 aws lambda invoke"), "{text}");
    for said in [
        "A: lambda on linux",
        "B: lambda on linux",
        "Lambda 2048 MB on Lambda Managed Instances on c7gn.large, 2 vCPUs",
        "A $/1k objects",
        "B $/1k objects",
    ] {
        assert!(text.contains(said), "{said:?} not in\n{text}");
    }
    // The same rows priced two ways (Lambda's GB-seconds on A, the instance on B): the
    // two cost cells of a row differ.
    let header = text.lines().find(|l| l.contains("A $/1k objects")).unwrap();
    let cells = |l: &str| -> Vec<String> {
        l.split('┆')
            .map(|c| c.trim().trim_matches('│').trim().to_string())
            .collect()
    };
    let at = |name: &str| cells(header).iter().position(|c| c == name).unwrap();
    let (a, b) = (at("A $/1k objects"), at("B $/1k objects"));
    let rows: Vec<Vec<String>> = text.lines().filter(|l| l.contains("$0.")).map(cells).collect();
    assert!(!rows.is_empty(), "{text}");
    assert!(rows.iter().all(|r| r[a] != r[b] && r[b].starts_with('$')), "{rows:?}");

    // No twin deployed: said, nothing invoked.
    let text = run("");
    assert!(text.contains("has no function on Lambda Managed Instances"), "{text}");
    assert!(calls(&aws).is_empty(), "invoked without a twin: {}", calls(&aws));
    // The twin fails: its error is shown and nothing is compared.
    let text = run("broken");
    assert!(text.contains("FunctionError") && text.contains("boom"), "{text}");
    assert!(
        !text.contains("B $/1k objects"),
        "compared after a failed invoke: {text}"
    );
}

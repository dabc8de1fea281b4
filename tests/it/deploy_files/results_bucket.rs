//! Issue 24, results that outlive the invocation, checked without an account: the role
//! may write results (s3:PutObject under the prefix only) only when `ResultsBucket` is
//! set, the function is told where (`S3SWEEP_RESULTS_URI`), lint and checkov see the
//! template both ways, and `make invoke-async` starts an asynchronous invocation (run
//! against a fake `aws` on PATH) and says where the result will be.

use super::first_deploy::{calls, make, path_with, TempDir};
use super::*;

#[test]
fn results_permissions_only_when_the_bucket_is_set() {
    let t = template();
    let param = path(&t, &["Parameters", "ResultsBucket"]).body;
    assert_eq!(child(&param, "Default").unwrap().inline, "", "{param}");
    assert_eq!(
        path(&t, &["Conditions", "ResultsEnabled"]).inline,
        "!Not [!Equals [!Ref ResultsBucket, \"\"]]"
    );
    let always = actions_of(&statements_if(None));
    assert!(
        !always
            .iter()
            .any(|a| a.starts_with("s3:Put") || a.starts_with("s3:Delete")),
        "S3 writes granted without ResultsBucket: {always:?}"
    );
    let results = statements_if(Some("ResultsEnabled"));
    assert_eq!(actions_of(&results), vec!["s3:PutObject"]);
    let resource = child(&results[0], "Resource").unwrap().inline;
    assert_eq!(
        resource, "!Sub arn:${AWS::Partition}:s3:::${ResultsBucket}/${ResultsPrefix}/*",
        "only keys under the prefix"
    );
    let env = path(
        &function_properties(),
        &["Environment", "Variables", "S3SWEEP_RESULTS_URI"],
    )
    .inline;
    assert_eq!(
        env,
        "!If [ResultsEnabled, !Sub \"s3://${ResultsBucket}/${ResultsPrefix}\", !Ref AWS::NoValue]"
    );
    let retries = path(&function_properties(), &["EventInvokeConfig", "MaximumRetryAttempts"]).inline;
    assert_eq!(retries, "0", "an asynchronous sweep is never run twice");
    // The Makefile passes the parameters; lint and checkov check the variant with it on.
    let mk = read("Makefile");
    assert!(mk.contains("$(call param,ResultsBucket,$(RESULTS_BUCKET),)"));
    let mk = read("Makefile");
    assert!(
        mk.contains("TEMPLATE_SET_all-on = MemorySweep=enabled ResultsBucket=my-results-bucket"),
        "the all-on set has the results bucket"
    );
    assert!(target("lint-templates").1.contains("$(EXPANDED_TEMPLATES)"));
    assert!(target("checkov").1.contains("$(addprefix -f ,$(EXPANDED_TEMPLATES))"));
    let docs = read("docs/deploy.md");
    for needle in ["RESULTS_BUCKET=", "WriteResultsUnderThePrefixOnly", "make invoke-async"] {
        assert!(docs.contains(needle), "docs/deploy.md does not mention {needle}");
    }
}

#[test]
fn make_template_variants_turns_the_results_bucket_on_in_the_all_on_variant() {
    let Some(python) = super::baseline_vpc::tool("S3SWEEP_SAM_PYTHON", ".venv/bin/python", "make tools") else {
        return;
    };
    let dir = TempDir::new();
    let out = make(
        &[
            "template-variants",
            &format!("OUT={}", dir.path().display()),
            &format!("SAM_PYTHON={}", python.display()),
        ],
        &[],
    );
    let variant = dir.path().join("template-all-on.json");
    let text = std::fs::read_to_string(&variant).unwrap_or_else(|_| panic!("{out}"));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let env = &doc["Resources"]["SweepFunction"]["Properties"]["Environment"]["Variables"];
    assert_eq!(env["S3SWEEP_RESULTS_URI"], "s3://my-results-bucket/s3sweep-results");
}

/// A fake `aws` answering `describe-stacks` with the stack's ResultsUri `uri` and
/// `lambda invoke` with 202, logging each call and the payload it was sent.
fn fake_async_aws(uri: &str) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new();
    let script = format!(
        r#"#!/bin/sh
echo "aws $*" >> {d}/calls.log
case "$2" in
describe-stacks) echo "{uri}";;
invoke) for a in "$@"; do case "$a" in fileb://*) cat "${{a#fileb://}}" > {d}/payload.json;; esac; done
  echo '{{"StatusCode": 202}}';;
*) exit 255;;
esac
"#,
        d = dir.path().display()
    );
    let aws = dir.path().join("aws");
    std::fs::write(&aws, script).unwrap();
    std::fs::set_permissions(&aws, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `make invoke-async` with `event` against `aws` (extra make arguments `more`).
fn invoke_async(aws: &TempDir, event: &str, more: &[&str]) -> String {
    let file = aws.path().join("event.json");
    std::fs::write(&file, event).unwrap();
    let mut args = vec![
        "invoke-async".to_string(),
        format!("EVENT={}", file.display()),
        format!("RESULT={}", aws.path().join("r.json").display()),
        "FUNCTION=f-1".to_string(),
        "REGION=eu-west-1".to_string(),
    ];
    args.extend(more.iter().map(|m| m.to_string()));
    make(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[path_with(aws)])
}

/// Issues 24 and 33: an asynchronous invocation whose result can be found: the event
/// sent carries a run_id (the async invoke returns no request id), the exact `report
/// s3://...` command for RUN_ID.json under the stack's results prefix is printed, and
/// a results_uri the role cannot write (outside the prefix, or no results bucket at
/// all), or a requests_log_uri outside the prefix, is refused before anything is sent.
#[test]
fn invoke_async_starts_one_event_invocation_and_says_where_the_result_goes() {
    let aws = fake_async_aws("s3://r-1/s3sweep-results");
    let out = invoke_async(&aws, r#"{"buckets": ["s-1"], "object_count": 10}"#, &[]);
    let log = calls(&aws);
    let invoke = log.lines().find(|l| l.starts_with("aws lambda invoke")).expect(&log);
    for part in [
        "--function-name f-1",
        "--invocation-type Event",
        "--region eu-west-1",
        "--payload fileb://",
    ] {
        assert!(invoke.contains(part), "{part} not in {invoke}");
    }
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(aws.path().join("payload.json")).unwrap()).unwrap();
    assert_eq!(sent["object_count"], 10, "the event itself is sent: {sent}");
    let run_id = sent["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run_id sent: {sent}"));
    assert!(run_id.len() >= 8, "{run_id}");
    let report = format!("s3sweep -- report s3://r-1/s3sweep-results/{run_id}.json");
    assert!(out.contains(&report), "{report} not in:\n{out}");
    assert!(
        !aws.path().join("r.json.async-event.json").exists(),
        "the sent copy is removed"
    );

    // A run_id the caller chose (RUN_ID=) names the object; a results_uri under the
    // prefix is kept.
    let aws = fake_async_aws("s3://r-1/s3sweep-results");
    let event = r#"{"buckets": ["s-1"], "results_uri": "s3://r-1/s3sweep-results/mine"}"#;
    let out = invoke_async(&aws, event, &["RUN_ID=night-1"]);
    assert!(
        out.contains("report s3://r-1/s3sweep-results/mine/night-1.json"),
        "{out}"
    );

    // Outside the stack's prefix (another bucket, or a prefix that only starts alike):
    // refused, nothing sent.
    for uri in [
        "s3://other/s3sweep-results",
        "s3://r-1/s3sweep-results-x",
        "s3://r-1/elsewhere",
    ] {
        let aws = fake_async_aws("s3://r-1/s3sweep-results");
        let out = invoke_async(&aws, &format!(r#"{{"buckets": ["s-1"], "results_uri": "{uri}"}}"#), &[]);
        assert!(
            out.contains("is outside the stack's results prefix s3://r-1/s3sweep-results/"),
            "{uri}: {out}"
        );
        assert!(!calls(&aws).contains("lambda invoke"), "{uri}: {}", calls(&aws));
        // The request log's place too (the function refuses it as well).
        let aws = fake_async_aws("s3://r-1/s3sweep-results");
        let out = invoke_async(
            &aws,
            &format!(r#"{{"buckets": ["s-1"], "requests_log_uri": "{uri}"}}"#),
            &[],
        );
        assert!(
            out.contains("requests_log_uri") && out.contains("is outside the stack's results prefix"),
            "{uri}: {out}"
        );
        assert!(!calls(&aws).contains("lambda invoke"), "{uri}: {}", calls(&aws));
    }

    // A stack that writes no results: refused even with a results_uri in the event
    // (its role may write nowhere), nothing sent.
    for event in [
        r#"{"buckets": ["s-1"]}"#,
        r#"{"buckets": ["s-1"], "results_uri": "s3://r-1/x"}"#,
    ] {
        let none = fake_async_aws("none");
        let out = invoke_async(&none, event, &[]);
        assert!(out.contains("the stack writes no results"), "{out}");
        assert!(!calls(&none).contains("lambda invoke"), "{}", calls(&none));
    }
}

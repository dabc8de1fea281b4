//! Issue 24, results that outlive the invocation, checked without an account: the role
//! may write results (s3:PutObject under the prefix only) only when `ResultsBucket` is
//! set, the function is told where (`S3SWEEP_RESULTS_URI`), lint and checkov see the
//! template both ways, and `make invoke-async` starts an asynchronous invocation (run
//! against a fake `aws` on PATH) and says where the result will be.

use super::first_deploy::{calls, fake_aws, make, path_with, TempDir};
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
    assert!(mk.contains("$(if $(RESULTS_BUCKET),ResultsBucket=$(RESULTS_BUCKET))"));
    let (_, variants) = target("template-variants");
    assert!(variants.contains("> $(TEMPLATE_ALL_ON)"), "{variants}");
    assert!(target("lint-templates").1.contains("$(TEMPLATE_ALL_ON)"));
    assert!(target("checkov").1.contains("-f $(TEMPLATE_ALL_ON)"));
    let docs = read("docs/deploy.md");
    for needle in ["RESULTS_BUCKET=", "WriteResultsUnderThePrefixOnly", "make invoke-async"] {
        assert!(docs.contains(needle), "docs/deploy.md does not mention {needle}");
    }
}

#[test]
fn make_template_variants_turns_the_results_bucket_on_in_the_all_on_variant() {
    let out = make(&["template-variants", "OUT=target/h24-variants"], &[]);
    let variant = root().join("target/h24-variants/template-all-on.yaml");
    let text = std::fs::read_to_string(&variant).unwrap_or_else(|_| panic!("{out}"));
    let param = path(&text, &["Parameters", "ResultsBucket"]).body;
    assert_eq!(child(&param, "Default").unwrap().inline, "my-results-bucket");
    let _ = std::fs::remove_dir_all(root().join("target/h24-variants"));
}

#[test]
fn invoke_async_starts_one_event_invocation_and_says_where_the_result_goes() {
    let dir = TempDir::new();
    let event = dir.path().join("event.json");
    std::fs::write(&event, r#"{"buckets": ["s-1"], "object_count": 10}"#).unwrap();
    let args = |fake: &TempDir| {
        vec![
            "invoke-async".to_string(),
            format!("EVENT={}", event.display()),
            format!("RESULT={}", fake.path().join("r.json").display()),
            "FUNCTION=f-1".to_string(),
            "REGION=eu-west-1".to_string(),
        ]
    };
    let aws = fake_aws(&[
        ("describe-stacks", "s3://r-1/s3sweep-results\n"),
        ("invoke", "{\"StatusCode\": 202}\n"),
    ]);
    let a = args(&aws);
    let out = make(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[path_with(&aws)]);
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
    assert!(out.contains("aws s3 ls s3://r-1/s3sweep-results/"), "{out}");
    assert!(out.contains("s3sweep -- report s3://"), "{out}");

    // A stack that writes no results and an event without results_uri: refused, nothing sent.
    let none = fake_aws(&[("describe-stacks", "none\n")]);
    let a = args(&none);
    let out = make(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[path_with(&none)]);
    assert!(out.contains("the result would be lost"), "{out}");
    assert!(!calls(&none).contains("lambda invoke"), "{}", calls(&none));
}

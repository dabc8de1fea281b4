//! Issue 38, a canary on a schedule and metrics in CloudWatch, checked on template.yaml
//! as SAM expands it (tests/deploy/sam_expand.py, which also checks the template's
//! Rules as CloudFormation does before it creates anything): `Schedule` off by default;
//! on, the expanded template gains exactly its EventBridge rule and the permission for
//! EventBridge to invoke the function, nothing else; the rule's event is
//! events/canary.json for the stack's buckets and `CanaryWorkers`, and passes the
//! request validator; a schedule without `ResultsBucket` is refused as CloudFormation
//! would refuse it; `MetricsNamespace` reaches the function as
//! `S3SWEEP_METRICS_NAMESPACE` and adds no permission.

use super::expanded::{expand, python, resources_of, try_expand, EXPRESS, RESULTS, STANDARD};
use super::*;
use serde_json::Value;

const SCHEDULE: (&str, &str) = ("Schedule", "rate(1 day)");

fn names(doc: &Value) -> std::collections::BTreeSet<String> {
    doc["Resources"].as_object().unwrap().keys().cloned().collect()
}

#[test]
fn the_schedule_is_off_by_default_and_adds_only_its_rule_and_permission() {
    let Some(python) = python() else { return };
    let defaults = expand(&python, &[]);
    assert!(resources_of(&defaults, "AWS::Events::Rule").is_empty());
    assert!(resources_of(&defaults, "AWS::Lambda::Permission").is_empty());
    let results = [("ResultsBucket", RESULTS)];
    let off = expand(&python, &results);
    let on = expand(&python, &[results[0], SCHEDULE]);
    let added: Vec<String> = names(&on).difference(&names(&off)).cloned().collect();
    assert_eq!(added, ["CanarySchedule", "CanarySchedulePermission"], "new resources");
    assert!(names(&off).is_subset(&names(&on)));
    for name in names(&off) {
        assert_eq!(
            on["Resources"][&name], off["Resources"][&name],
            "{name} changed with the schedule on"
        );
    }
    let rule = &on["Resources"]["CanarySchedule"]["Properties"];
    assert_eq!(rule["ScheduleExpression"], "rate(1 day)");
    assert_eq!(rule["State"], "ENABLED");
    let targets = rule["Targets"].as_array().unwrap();
    assert_eq!(targets.len(), 1, "{rule}");
    assert_eq!(
        targets[0]["Arn"],
        serde_json::json!({"Fn::GetAtt": ["SweepFunction", "Arn"]})
    );
    let permission = &on["Resources"]["CanarySchedulePermission"]["Properties"];
    assert_eq!(permission["Action"], "lambda:InvokeFunction");
    assert_eq!(permission["Principal"], "events.amazonaws.com");
    assert_eq!(permission["FunctionName"], serde_json::json!({"Ref": "SweepFunction"}));
    assert_eq!(
        permission["SourceArn"],
        serde_json::json!({"Fn::GetAtt": ["CanarySchedule", "Arn"]}),
        "only this rule may invoke it"
    );
    assert!(permission["SourceAccount"].is_string(), "{permission}");
}

#[test]
fn the_canary_event_is_events_canary_json_for_the_stacks_buckets() {
    let Some(python) = python() else { return };
    let on = expand(
        &python,
        &[("ResultsBucket", RESULTS), SCHEDULE, ("CanaryWorkers", "64,256")],
    );
    let input = on["Resources"]["CanarySchedule"]["Properties"]["Targets"][0]["Input"]
        .as_str()
        .expect("the target's Input is a string")
        .to_string();
    let sent: Value = serde_json::from_str(&input).unwrap_or_else(|e| panic!("{e}: {input}"));
    s3sweep::plan::Plan::from_value(sent.clone()).unwrap_or_else(|e| panic!("the validator refuses it: {e}"));
    let text = fs::read_to_string(root().join("events/canary.json")).unwrap();
    let mut canary: Value = serde_json::from_str(&text).unwrap();
    canary["buckets"] = serde_json::json!([STANDARD, EXPRESS]);
    canary["workers"] = serde_json::json!([64, 256]);
    canary["results_uri"] = serde_json::json!(format!("s3://{RESULTS}/s3sweep-results/canary"));
    // Issue 49: the schedule's event expects the stack's MemorySize (default 3008): a
    // canary firing while a memory sweep resizes $LATEST measures nothing, and says so.
    canary["expect_memory_mb"] = serde_json::json!(3008);
    assert_eq!(sent, canary, "the scheduled event is events/canary.json for this stack");
    assert_eq!(sent["results_by_date"], true, "results listed by day");
}

#[test]
fn a_schedule_without_a_results_bucket_is_refused_as_cloudformation_would() {
    let Some(python) = python() else { return };
    let refused = try_expand(&python, &[SCHEDULE]).expect_err("a schedule with nowhere to keep results");
    assert!(
        refused.contains("rule ScheduleNeedsResultsBucket") && refused.contains("needs ResultsBucket"),
        "{refused}"
    );
    let bad = try_expand(&python, &[("ResultsBucket", RESULTS), ("Schedule", "every day")])
        .expect_err("not a schedule expression");
    assert!(bad.contains("AllowedPattern"), "{bad}");
}

#[test]
fn the_metrics_namespace_reaches_the_function_and_grants_nothing() {
    let Some(python) = python() else { return };
    let env = |doc: &Value| {
        let (_, function) = resources_of(doc, "AWS::Lambda::Function")
            .into_iter()
            .find(|(name, _)| name == "SweepFunction")
            .unwrap();
        function["Environment"]["Variables"]["S3SWEEP_METRICS_NAMESPACE"].clone()
    };
    let off = expand(&python, &[]);
    assert_eq!(env(&off), "", "off by default (empty is unset to the function)");
    let on = expand(&python, &[("MetricsNamespace", "s3sweep/canary")]);
    assert_eq!(env(&on), "s3sweep/canary");
    assert_eq!(
        resources_of(&on, "AWS::IAM::Role"),
        resources_of(&off, "AWS::IAM::Role"),
        "EMF lines need only the function's own logs"
    );
    let bad = try_expand(&python, &[("MetricsNamespace", "has space")]).expect_err("a bad namespace");
    assert!(bad.contains("AllowedPattern"), "{bad}");
}

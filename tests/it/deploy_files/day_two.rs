//! Issue 49, the second deploy: `make preflight` checks the results bucket
//! (`--results-uri`) and the subnets (`--subnet-ids`) when the deploy names them; each
//! optional parameter is cleared with `none`; the Rule on subnets and security groups;
//! the retry hint's leftover log group; no second release build for the preflight. The
//! Makefile runs with `make -n` (or against a fake `aws`).

use super::defaults::dry_run_lines;

const BUCKETS: [&str; 2] = ["STANDARD_BUCKET=std-1", "EXPRESS_BUCKET=exp--use1-az4--x-s3"];

#[test]
fn preflight_checks_the_results_bucket_under_its_prefix() {
    let line = dry_run_lines(
        &[&["preflight", "RESULTS_BUCKET=my-results"], &BUCKETS[..]].concat(),
        " preflight ",
    );
    assert!(
        line.iter()
            .any(|l| l.contains("--results-uri s3://my-results/s3sweep-results")),
        "{line:?}"
    );
    let line = dry_run_lines(
        &[
            &["preflight", "RESULTS_BUCKET=my-results", "RESULTS_PREFIX=runs/x"],
            &BUCKETS[..],
        ]
        .concat(),
        " preflight ",
    );
    assert!(
        line.iter().any(|l| l.contains("--results-uri s3://my-results/runs/x")),
        "{line:?}"
    );
    let line = dry_run_lines(&[&["preflight"], &BUCKETS[..]].concat(), " preflight ");
    assert!(line.iter().all(|l| !l.contains("--results-uri")), "{line:?}");
    // The subnets go to EC2's look (zones, endpoints); `none` is no subnet at all.
    let line = dry_run_lines(
        &[&["preflight", "SUBNET_IDS=subnet-1,subnet-2"], &BUCKETS[..]].concat(),
        " preflight ",
    );
    assert!(
        line.iter().any(|l| l.contains("--subnet-ids subnet-1,subnet-2")),
        "{line:?}"
    );
    let line = dry_run_lines(
        &[&["preflight", "SUBNET_IDS=none", "RESULTS_BUCKET=none"], &BUCKETS[..]].concat(),
        " preflight ",
    );
    assert!(
        line.iter()
            .all(|l| !l.contains("--subnet-ids") && !l.contains("--results-uri")),
        "{line:?}"
    );
}

/// `make -n deploy` with `ARGS`: the sam deploy line.
fn deploy_line(args: &[&str]) -> String {
    dry_run_lines(&[&["deploy"], &BUCKETS[..], args].concat(), "sam deploy").join("\n")
}

/// Each optional parameter is cleared with `none`: the template's default, an empty
/// value where that is none (SAM reads `'Schedule=""'` as the empty string); empty
/// leaves it out (SAM keeps the stack's value); any other value is passed.
#[test]
fn every_optional_parameter_is_cleared_with_none() {
    let plain = deploy_line(&[]);
    assert!(!plain.contains("Schedule="), "{plain}");
    let cleared = deploy_line(&["SCHEDULE=none"]);
    println!("make -n deploy SCHEDULE=none:\n{cleared}");
    assert!(cleared.contains("'Schedule=\"\"'"), "{cleared}");
    let set = deploy_line(&["SCHEDULE=rate(1 day)"]);
    assert!(set.contains("'Schedule=\"rate(1 day)\"'"), "{set}");
    // Every `$(call param,NAME,$(VAR),DEFAULT)` of the Makefile: none gives the default,
    // which is the template's own.
    let mk = super::read("Makefile");
    let template = super::template();
    let mut seen = 0;
    for call in mk.split("$(call param,").skip(1) {
        // Up to the `)` that closes the call (the variable's own parentheses nest).
        let mut depth = 1;
        let end = call
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map(|(i, _)| i)
            .unwrap();
        let inner = &call[..end];
        let parts: Vec<&str> = inner.splitn(3, ',').collect();
        if parts.len() != 3 || !parts[1].starts_with("$(") {
            continue;
        }
        let (name, var, default) = (
            parts[0],
            parts[1].trim_start_matches("$(").trim_end_matches(')'),
            parts[2],
        );
        let declared = super::path(&template, &["Parameters", name, "Default"]).inline;
        let declared = declared.trim_matches('"');
        assert_eq!(
            default, declared,
            "{name}: the Makefile's default against template.yaml's"
        );
        let line = deploy_line(&[&format!("{var}=none")]);
        let want = if default.is_empty() {
            format!("'{name}=\"\"'")
        } else {
            format!("'{name}={default}'")
        };
        assert!(line.contains(&want), "{var}=none: {want} not in {line}");
        seen += 1;
    }
    assert!(seen >= 15, "{seen} optional parameters");
}

/// A subnet list without a security group: CloudFormation's Rule refuses the stack
/// before anything is created (Lambda would refuse the VpcConfig mid-create).
#[test]
fn subnet_ids_need_security_group_ids() {
    if let Some(python) = super::expanded::python() {
        let refused = super::expanded::try_expand(&python, &[("SubnetIds", "subnet-1,subnet-2")])
            .expect_err("subnets without a security group");
        assert!(
            refused.contains("rule SubnetIdsNeedSecurityGroupIds: SubnetIds needs SecurityGroupIds"),
            "{refused}"
        );
        super::expanded::try_expand(&python, &[("SubnetIds", "subnet-1"), ("SecurityGroupIds", "sg-1")])
            .expect("subnets with a group");
        super::expanded::try_expand(&python, &[]).expect("no VPC at all");
    }
    let rule = super::path(&super::template(), &["Rules", "SubnetIdsNeedSecurityGroupIds"]);
    let text = rule.body;
    assert!(
        text.contains("RuleCondition: !Not [{\"Fn::EachMemberEquals\": [!Ref SubnetIds, \"\"]}]")
            && text.contains("Assert: !Not [{\"Fn::EachMemberEquals\": [!Ref SecurityGroupIds, \"\"]}]"),
        "{text}"
    );
}

/// A leftover `/aws/lambda/NAME` log group blocks the stack's create (the template
/// creates it): the retry hint names it, with the command that removes it.
#[test]
fn the_retry_hint_names_a_leftover_log_group_and_its_fix() {
    use super::first_deploy::{fake_aws, make, path_with};
    let aws = fake_aws(&[
        ("describe-stacks", "ROLLBACK_COMPLETE\n"),
        (
            "describe-stack-events",
            "SweepFunctionLogGroup\t/aws/lambda/my-sweep already exists\n",
        ),
        ("delete-stack", ""),
        ("wait", ""),
    ]);
    let out = make(
        &[
            "stack-retry",
            "STACK=s3sweep-t",
            "REGION=eu-west-1",
            "FUNCTION_NAME=my-sweep",
        ],
        &[path_with(&aws)],
    );
    assert!(
        out.contains("log group /aws/lambda/my-sweep already exists")
            && out.contains("aws logs delete-log-group --region eu-west-1 --log-group-name /aws/lambda/my-sweep"),
        "{out}"
    );
}

/// The preflight runs an s3sweep already built, or a debug build: never a second
/// release build beside sam build's. The deploy guide no longer asks for python3.12 or
/// for BASELINE=enabled on every deploy.
#[test]
fn preflight_builds_no_second_release_and_the_guide_is_current() {
    let line = dry_run_lines(&[&["preflight"], &BUCKETS[..]].concat(), " preflight --bucket").join("\n");
    assert!(!line.contains("run --release"), "{line}");
    let docs = super::read("docs/deploy.md");
    assert!(!docs.contains("needs `python3.12` on PATH"), "stale: python3.12");
    assert!(
        !docs.contains("on every deploy of a stack that has the baseline"),
        "stale: BASELINE=enabled on every deploy"
    );
}

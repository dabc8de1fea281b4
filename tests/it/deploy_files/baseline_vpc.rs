//! Issue 24, checked without an AWS account: the optional boto3 baseline function
//! (parameter `Baseline`) with its own read-only role, the placement parameters
//! (`SubnetIds`, `SecurityGroupIds`, `SubnetZoneIds`) whose VPC permissions exist only
//! when subnets are given, cfn-lint and checkov clean on every template variant, and
//! `make compare-baseline` against a fake `aws` on PATH.

use super::first_deploy::{calls, make, path_with, TempDir};
use super::*;

const VPC_POLICY: &str = "!Sub arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole";

/// Issue 24: the role gains the VPC permissions only when subnets are given: the
/// managed policy is in a policy item under the condition InVpc (SubnetIds not empty,
/// default empty), never unconditional, on both functions; so are VpcConfig and the
/// recorded network path.
#[test]
fn vpc_permissions_only_when_subnets_are_given() {
    let t = template();
    for param in ["SubnetIds", "SecurityGroupIds"] {
        let p = path(&t, &["Parameters", param]).body;
        assert_eq!(child(&p, "Type").unwrap().inline, "CommaDelimitedList", "{param}");
        assert_eq!(
            child(&p, "Default").unwrap().inline,
            "",
            "{param} must default to empty (no VPC)"
        );
    }
    assert_eq!(
        path(&t, &["Conditions", "InVpc"]).inline,
        "!Not [!Equals [!Join [\",\", !Ref SubnetIds], \"\"]]"
    );
    for function in ["SweepFunction", "BaselineFunction"] {
        its_vpc_is_conditional(&t, function);
    }
    let resources: String = path(&t, &["Resources"])
        .body
        .lines()
        .filter(|l| is_content(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        resources.matches("AWSLambdaVPCAccessExecutionRole").count(),
        2,
        "the managed policy only in the two conditional items"
    );
    assert!(
        !resources.contains("ec2:"),
        "no EC2 action outside the conditional managed policy"
    );
    docs_and_make_deploy_pass_the_vpc();
}

/// `function`'s VPC: its own role, whose VPC policy is one `!If [InVpc, policy,
/// AWS::NoValue]` item of its ManagedPolicyArns; no EC2 action inline; its VpcConfig
/// and network variables conditional on InVpc.
fn its_vpc_is_conditional(t: &str, function: &str) {
    // The role is written out (SAM would add the policy whenever VpcConfig is
    // present, tests/it/deploy_files/expanded.rs checks what it deploys): the VPC
    // policy is one !If [InVpc, policy, AWS::NoValue] item of its ManagedPolicyArns.
    let role = format!("{function}Role");
    assert_eq!(
        path(&properties_of(function), &["Role"]).inline,
        format!("!GetAtt {role}.Arn"),
        "{function}: its own role, not SAM's"
    );
    let arns = path(t, &["Resources", &role, "Properties", "ManagedPolicyArns"]);
    let vpc: Vec<String> = items(&arns.body)
        .into_iter()
        .filter(|i| i.contains("AWSLambdaVPCAccessExecutionRole"))
        .collect();
    assert_eq!(vpc.len(), 1, "{function}: one VPC policy: {vpc:?}");
    let lines: Vec<String> = vpc[0]
        .lines()
        .filter(|l| is_content(l))
        .map(|l| unquote(l.trim().trim_start_matches("- ")))
        .collect();
    assert_eq!(
        lines,
        ["!If", "InVpc", VPC_POLICY, "!Ref AWS::NoValue"],
        "{function}: VPC permissions without subnets"
    );
    assert!(
        policies_of(function).iter().all(|(_, p)| !p.contains("ec2:")),
        "{function}: no EC2 action in its inline policies"
    );
    let props = properties_of(function);
    let config = path(&props, &["VpcConfig"]);
    let lines: Vec<&str> = config.body.lines().filter(|l| is_content(l)).map(str::trim).collect();
    assert_eq!(config.inline, "!If", "{function}: VpcConfig must be conditional");
    assert_eq!(lines.first(), Some(&"- InVpc"), "{function}: {lines:?}");
    assert_eq!(lines.last(), Some(&"- !Ref AWS::NoValue"), "{function}: {lines:?}");
    let vars = path(&props, &["Environment", "Variables"]).body;
    assert_eq!(
        child(&vars, "S3SWEEP_NETWORK_PATH").unwrap().inline,
        "!If [InVpc, vpc, default]"
    );
    assert_eq!(
        child(&vars, "S3SWEEP_SUBNET_ZONE_IDS").unwrap().inline,
        "!If [InVpc, !Ref SubnetZoneIds, \"\"]"
    );
}

/// docs/deploy.md explains the VPC settings and `make deploy` passes them.
fn docs_and_make_deploy_pass_the_vpc() {
    let docs = read("docs/deploy.md");
    for needle in [
        "SUBNET_IDS=",
        "SECURITY_GROUP_IDS=",
        "SUBNET_ZONE_IDS=",
        "gateway endpoint",
        "interface endpoint",
    ] {
        assert!(docs.contains(needle), "docs/deploy.md does not explain {needle}");
    }
    let mk = read("Makefile");
    for needle in [
        "$(call param,SubnetIds,$(SUBNET_IDS),)",
        "$(call param,SecurityGroupIds,$(SECURITY_GROUP_IDS),)",
        "$(call param,SubnetZoneIds,$(SUBNET_ZONE_IDS),)",
        "$(call param,Baseline,$(BASELINE),disabled)",
    ] {
        assert!(mk.contains(needle), "make deploy does not pass {needle}");
    }
}

/// Issue 24: the baseline function exists only with Baseline=enabled (default
/// disabled), runs the project's own handler on the pinned Python and boto3 with the
/// main function's architecture, and its role only reads the test objects and opens
/// read-only sessions; docs/deploy.md lists its statements.
#[test]
fn the_baseline_function_is_optional_and_read_only() {
    let t = template();
    let param = path(&t, &["Parameters", "Baseline"]).body;
    assert_eq!(child(&param, "Default").unwrap().inline, "disabled");
    assert_eq!(
        path(&t, &["Conditions", "BaselineEnabled"]).inline,
        "!Equals [!Ref Baseline, enabled]"
    );
    for resource in ["BaselineFunction", "BaselineFunctionLogGroup"] {
        let r = path(&t, &["Resources", resource]).body;
        assert_eq!(child(&r, "Condition").unwrap().inline, "BaselineEnabled", "{resource}");
    }
    let props = properties_of("BaselineFunction");
    assert_eq!(child(&props, "Runtime").unwrap().inline, "python3.12");
    assert_eq!(child(&props, "Handler").unwrap().inline, "handler.handler");
    assert_eq!(child(&props, "CodeUri").unwrap().inline, "baseline/");
    assert_eq!(
        values(&child(&props, "Architectures").unwrap()),
        vec!["!Ref Architecture"]
    );
    assert!(read("baseline/handler.py").contains("def handler(event, context):"));
    let pin = |file: &str| {
        read(file)
            .lines()
            .find(|l| l.starts_with("boto3=="))
            .unwrap_or_else(|| panic!("{file} does not pin boto3"))
            .to_string()
    };
    assert_eq!(pin("baseline/requirements.txt"), pin("bench-py/requirements.txt"));

    let policies = policies_of("BaselineFunction");
    let statements: Vec<String> = policies
        .iter()
        .filter(|(c, _)| c.is_none())
        .filter_map(|(_, p)| child(p, "Statement"))
        .flat_map(|s| items(&s.body))
        .collect();
    let mut actions = actions_of(&statements);
    actions.sort();
    // s3:ListBucket on the Standard bucket: a missing key is 404 for the baseline as for
    // the function (without it S3 answers 403).
    assert_eq!(
        actions,
        vec!["s3:GetObject", "s3:ListBucket", "s3express:CreateSession"]
    );
    for st in &statements {
        assert_eq!(child(st, "Effect").unwrap().inline, "Allow");
        let resource = values(&child(st, "Resource").unwrap());
        assert!(
            resource == ["!Sub arn:${AWS::Partition}:s3:::${StandardBucketName}/*"]
                || resource == ["!Sub arn:${AWS::Partition}:s3:::${StandardBucketName}"]
                || resource == ["!Sub arn:${AWS::Partition}:s3express:${AWS::Region}:${AWS::AccountId}:bucket/${ExpressBucketName}"],
            "{resource:?}"
        );
        if actions_of(std::slice::from_ref(st)) == ["s3express:CreateSession"] {
            assert_eq!(
                path(st, &["Condition", "StringEquals", "s3express:SessionMode"]).inline,
                "ReadOnly"
            );
        }
    }
    let docs = read("docs/deploy.md");
    for sid in statements.iter().map(|s| child(s, "Sid").unwrap().inline) {
        assert!(docs.contains(&sid), "docs/deploy.md does not list the statement {sid}");
    }
    assert!(docs.contains("make compare-baseline"), "docs: how to compare");
}

/// A tool the template checks need: `$VAR`, else `fallback` under the repository.
pub(super) fn tool(var: &str, fallback: &str, install: &str) -> Option<PathBuf> {
    let p = std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(fallback));
    if p.is_file() {
        return Some(p);
    }
    if std::env::var("S3SWEEP_SKIP_TEMPLATE_TOOLS").as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED the template checks: no {} and S3SWEEP_SKIP_TEMPLATE_TOOLS=1",
            p.display()
        );
        return None;
    }
    panic!(
        "no {} (${var}): install it with {install}; S3SWEEP_SKIP_TEMPLATE_TOOLS=1 skips",
        p.display()
    );
}

/// Issues 24 and 33: `make template-variants` writes template.yaml as SAM expands it for
/// each parameter set (tests/deploy/sam_expand.py), and cfn-lint and checkov pass on
/// template.yaml and on every expanded document (parameters off and on).
#[test]
fn cfn_lint_and_checkov_pass_on_every_variant() {
    let Some(cfn_lint) = tool("S3SWEEP_CFN_LINT", ".venv/bin/cfn-lint", "make tools") else {
        return;
    };
    let Some(checkov) = tool("S3SWEEP_CHECKOV", ".venv-checkov/bin/checkov", "make checkov") else {
        return;
    };
    let Some(python) = tool("S3SWEEP_SAM_PYTHON", ".venv/bin/python", "make tools") else {
        return;
    };
    let out = TempDir::new();
    let made = make(
        &[
            "template-variants",
            &format!("OUT={}", out.path().display()),
            &format!("SAM_PYTHON={}", python.display()),
        ],
        &[],
    );
    let all_on = out.path().join("template-all-on.json");
    let text = fs::read_to_string(&all_on).unwrap_or_else(|e| panic!("{e}: {made}"));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for (param, on) in [
        ("MemorySweep", "enabled"),
        ("ResultsBucket", "my-results-bucket"),
        ("Baseline", "enabled"),
        ("SubnetIds", "subnet-0123456789abcdef0"),
        ("SecurityGroupIds", "sg-0123456789abcdef0"),
        ("SubnetZoneIds", "use1-az4"),
    ] {
        assert_eq!(
            doc["Metadata"]["SamExpand"]["Parameters"][param], on,
            "{param} is not on in the all-on set"
        );
    }
    let mut files = vec![root().join("template.yaml")];
    let mut expanded: Vec<PathBuf> = fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().path()).collect();
    expanded.sort();
    let names: Vec<String> = expanded.iter().map(|p| name(p)).collect();
    let sets: Vec<String> = super::expanded::parameter_sets()
        .iter()
        .map(|(set, _)| format!("template-{set}.json"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, sets, "one expanded document per parameter set");
    files.extend(expanded);
    let lint = std::process::Command::new(cfn_lint).args(&files).output().unwrap();
    assert!(
        lint.status.success(),
        "cfn-lint:\n{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let mut cmd = std::process::Command::new(checkov);
    cmd.args([
        "--skip-download",
        "--quiet",
        "--compact",
        "--framework",
        "cloudformation",
    ]);
    for f in &files {
        cmd.arg("-f").arg(f);
    }
    let check = cmd.output().unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && report.contains("Failed checks: 0"),
        "checkov:\n{report}"
    );
}

/// A fake `aws` whose `lambda invoke` writes the document `doc-FUNCTION.json` of the
/// function named to the output file, or a function error for `error-FUNCTION`.
pub(super) fn fake_lambda(docs: &[(&str, String)]) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new();
    let script = format!(
        r#"#!/bin/sh
echo "aws $*" >> {d}/calls.log
fn=""; prev=""; last=""
for a in "$@"; do [ "$prev" = --function-name ] && fn="$a"; prev="$a"; last="$a"; done
if [ -f "{d}/doc-$fn.json" ]; then cp "{d}/doc-$fn.json" "$last"; echo '{{"StatusCode": 200}}'; exit 0; fi
echo '{{"errorMessage": "boom"}}' > "$last"; echo '{{"StatusCode": 200, "FunctionError": "Unhandled"}}'
"#,
        d = dir.path().display()
    );
    let aws = dir.path().join("aws");
    fs::write(&aws, script).unwrap();
    fs::set_permissions(&aws, fs::Permissions::from_mode(0o755)).unwrap();
    for (name, doc) in docs {
        fs::write(dir.path().join(format!("doc-{name}.json")), doc).unwrap();
    }
    dir
}

/// Issue 24: `make compare-baseline` invokes the baseline, then s3sweep, with the same
/// event, one attempt each, and prints `s3sweep compare BASELINE_RESULT RESULT`; a
/// failed invoke stops it before the comparison.
#[test]
fn make_compare_baseline_invokes_both_with_one_event_and_compares() {
    let s3sweep = read("docs/demo.json");
    let mut baseline: serde_json::Value = serde_json::from_str(&s3sweep).unwrap();
    baseline["tool"]["client"] = "boto3 1.43.11 (test)".into();
    baseline["not_measured"] = serde_json::json!(["ttfb_ms", "pool_wait_ms"]);
    let aws = fake_lambda(&[("s3sweep-baseline", baseline.to_string()), ("s3sweep", s3sweep)]);
    let event = aws.path().join("event.json");
    fs::write(&event, "{\"buckets\": [\"b\"]}").unwrap();
    let vars = |function: &str| {
        vec![
            format!("EVENT={}", event.display()),
            format!("FUNCTION={function}"),
            "BASELINE_FUNCTION=s3sweep-baseline".into(),
            format!("RESULT={}", aws.path().join("s3sweep.json").display()),
            format!("BASELINE_RESULT={}", aws.path().join("baseline.json").display()),
            format!("S3SWEEP={}", crate::common::BIN),
        ]
    };
    let mut args = vec!["compare-baseline".to_string()];
    args.extend(vars("s3sweep"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = make(&args, &[path_with(&aws)]);
    let log = calls(&aws);
    let invokes: Vec<&str> = log.lines().filter(|l| l.starts_with("aws lambda invoke")).collect();
    assert_eq!(invokes.len(), 2, "{log}\n{text}");
    assert!(invokes[0].contains("--function-name s3sweep-baseline"), "{log}");
    assert!(invokes[1].contains("--function-name s3sweep "), "{log}");
    let payload = format!("--payload fileb://{}", event.display());
    assert!(
        invokes.iter().all(|l| l.contains(&payload)),
        "not the same event: {log}"
    );
    assert!(text.contains("AWS_MAX_ATTEMPTS=1 aws lambda invoke"), "{text}");
    assert!(text.contains("compare"), "{text}");
    assert!(
        text.contains("A: ") && text.contains("client boto3 1.43.11 (test)"),
        "{text}"
    );
    assert!(text.contains("A did not measure ttfb_ms, pool_wait_ms"), "{text}");
    assert!(text.contains("A cpu ms/GET"), "{text}");

    // The s3sweep function fails: its error is shown and nothing is compared.
    let _ = fs::remove_file(aws.path().join("calls.log"));
    let mut args = vec!["compare-baseline".to_string()];
    args.extend(vars("broken"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = make(&args, &[path_with(&aws)]);
    assert!(text.contains("FunctionError") && text.contains("boom"), "{text}");
    assert!(!text.contains("A cpu ms/GET"), "compared after a failed invoke: {text}");
}

//! The deploy path, checked without an AWS account: template.yaml (reserved concurrency,
//! logging, log group, IAM), the Makefile's deploy and invoke targets, the events and
//! the deploy documentation. Each check names the desk-review finding it guards, so a
//! revert of the fix fails here. std and serde_json only: the few YAML lines needed are
//! read as indented text (no YAML crate in Cargo.lock).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---- a minimal reader for block-style YAML, enough for template.yaml ----

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim_start();
    !t.is_empty() && !t.starts_with('#')
}

/// The node under `key:` at the shallowest indentation of `block`: its inline value
/// (after `key:`, comments and quotes removed) and the deeper lines below it.
#[derive(Debug, Clone)]
struct Node {
    inline: String,
    body: String,
}

/// A scalar without its comment and quotes; a tag (`!Sub "x"`) keeps its name: `!Sub x`.
fn unquote(s: &str) -> String {
    let s = match s.find(" #") {
        Some(i) => &s[..i],
        None => s,
    };
    let bare = |v: &str| v.trim().trim_matches('"').trim_matches('\'').to_string();
    let s = s.trim();
    match s.split_once(' ') {
        Some((tag, rest)) if tag.starts_with('!') && !rest.starts_with('[') => format!("{tag} {}", bare(rest)),
        _ => bare(s),
    }
}

fn child(block: &str, key: &str) -> Option<Node> {
    let lines: Vec<&str> = block.lines().collect();
    let base = lines.iter().filter(|l| is_content(l)).map(|l| indent(l)).min()?;
    let prefix = format!("{key}:");
    let start = lines.iter().position(|l| {
        indent(l) == base && is_content(l) && {
            let t = l.trim_start();
            t == prefix || t.starts_with(&format!("{prefix} "))
        }
    })?;
    let inline = unquote(&lines[start].trim_start()[prefix.len()..]);
    let body: Vec<&str> = lines[start + 1..]
        .iter()
        .take_while(|l| !is_content(l) || indent(l) > base)
        .copied()
        .collect();
    Some(Node {
        inline,
        body: body.join("\n"),
    })
}

fn path(block: &str, keys: &[&str]) -> Node {
    let mut node = Node {
        inline: String::new(),
        body: block.to_string(),
    };
    for (i, key) in keys.iter().enumerate() {
        node = child(&node.body, key).unwrap_or_else(|| panic!("template.yaml: no {}", keys[..=i].join(".")));
    }
    node
}

/// The items of a block-style list (`- a` lines at the shallowest indentation), each as
/// a block whose first line has the dash replaced by a space, so its keys line up.
fn items(block: &str) -> Vec<String> {
    let lines: Vec<&str> = block.lines().filter(|l| is_content(l)).collect();
    let Some(base) = lines.iter().map(|l| indent(l)).min() else {
        return vec![];
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for l in lines {
        if indent(l) == base && l.trim_start().starts_with("- ") {
            out.push(vec![l.replacen("- ", "  ", 1)]);
        } else if let Some(item) = out.last_mut() {
            item.push(l.to_string());
        }
    }
    out.into_iter().map(|i| i.join("\n")).collect()
}

/// A value given inline (`Action: x`, `[a, b]`) or as a block list, as strings.
fn values(node: &Node) -> Vec<String> {
    if !node.inline.is_empty() {
        let v = node.inline.trim_start_matches('[').trim_end_matches(']');
        return v.split(',').map(unquote).collect();
    }
    items(&node.body).iter().map(|i| unquote(i.trim())).collect()
}

fn template() -> String {
    read("template.yaml")
}

fn function_properties() -> String {
    properties_of("SweepFunction")
}

/// The properties of the template's resource `function`.
fn properties_of(function: &str) -> String {
    path(&template(), &["Resources", function, "Properties"]).body
}

/// The inline policies of the function's role (`FunctionRole`, written out in the
/// template), each as its policy document with its condition: an item
/// `!If [Condition, policy, !Ref AWS::NoValue]` gives `(Some(Condition), document)`.
fn policies() -> Vec<(Option<String>, String)> {
    policies_of("SweepFunction")
}

/// As [`policies`], for the template's function `function`.
fn policies_of(function: &str) -> Vec<(Option<String>, String)> {
    let role = format!("{function}Role");
    let policies = path(&template(), &["Resources", &role, "Properties", "Policies"]);
    let document = |p: &str| path(p, &["PolicyDocument"]).body;
    items(&policies.body)
        .into_iter()
        .map(|p| {
            let mut lines = p.lines().filter(|l| is_content(l));
            if lines.next().map(str::trim) != Some("!If") {
                return (None, document(&p));
            }
            let parts = items(&lines.collect::<Vec<_>>().join("\n"));
            assert_eq!(parts.len(), 3, "!If [condition, policy, else]: {p}");
            assert_eq!(unquote(parts[2].trim()), "!Ref AWS::NoValue", "{p}");
            (Some(unquote(parts[0].trim())), document(&parts[1]))
        })
        .collect()
}

/// The statements of the policies under `condition` (None: unconditional).
fn statements_if(condition: Option<&str>) -> Vec<String> {
    policies()
        .iter()
        .filter(|(c, _)| c.as_deref() == condition)
        .filter_map(|(_, p)| child(p, "Statement"))
        .flat_map(|s| items(&s.body))
        .collect()
}

/// Every statement of the function's inline policies, conditional or not.
fn statements() -> Vec<String> {
    policies()
        .iter()
        .filter_map(|(_, p)| child(p, "Statement"))
        .flat_map(|s| items(&s.body))
        .collect()
}

fn actions_of(statements: &[String]) -> Vec<String> {
    statements
        .iter()
        .filter_map(|s| child(s, "Action"))
        .flat_map(|a| values(&a))
        .collect()
}

fn statement_with_action(action: &str) -> String {
    let found: Vec<String> = statements()
        .into_iter()
        .filter(|s| {
            child(s, "Action")
                .map(|a| values(&a).iter().any(|v| v == action))
                .unwrap_or(false)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one statement should allow {action}: {found:#?}"
    );
    found[0].clone()
}

// ---- template.yaml ----

/// Desk review: `ReservedConcurrentExecutions: 10` always set fails on accounts with a
/// low concurrency quota. It must be set only through a condition on a parameter whose
/// default is 0 (0 = not set).
#[test]
fn reserved_concurrency_is_optional_and_off_by_default() {
    let t = template();
    let rce = path(&function_properties(), &["ReservedConcurrentExecutions"]).inline;
    let args = rce
        .strip_prefix("!If [")
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or_else(|| {
            panic!("ReservedConcurrentExecutions must be !If [condition, !Ref param, !Ref AWS::NoValue], not {rce}")
        });
    let args: Vec<&str> = args.split(',').map(str::trim).collect();
    assert_eq!(args.len(), 3, "{rce}");
    assert_eq!(
        args[2], "!Ref AWS::NoValue",
        "without the condition the property must be absent: {rce}"
    );
    let param = args[1].strip_prefix("!Ref ").unwrap_or_else(|| panic!("{rce}"));
    let default = path(&t, &["Parameters", param, "Default"]).inline;
    assert_eq!(default, "0", "{param} must default to 0 (no reservation)");
    let min = path(&t, &["Parameters", param, "MinValue"]).inline;
    assert_eq!(min, "0", "{param} must accept 0");
    let condition = path(&t, &["Conditions", args[0]]).inline;
    assert_eq!(
        condition,
        format!("!Not [!Equals [!Ref {param}, 0]]"),
        "condition {}",
        args[0]
    );
    // FanoutMax's default must fit the smallest unreserved pool (10) with the coordinator.
    let fanout_max: u32 = path(&t, &["Parameters", "FanoutMax", "Default"])
        .inline
        .parse()
        .unwrap();
    assert!(
        fanout_max < 10,
        "FanoutMax default {fanout_max}: a fan-out of N needs N+1 executions"
    );
}

/// Desk review: `SystemLogLevel: WARN` drops the platform's START and REPORT lines
/// (Duration, Max Memory Used, Init Duration).
#[test]
fn platform_report_lines_are_logged() {
    let level = path(&function_properties(), &["LoggingConfig", "SystemLogLevel"]).inline;
    assert!(
        level == "INFO" || level == "DEBUG",
        "SystemLogLevel {level} drops the REPORT lines"
    );
    let app = path(&function_properties(), &["LoggingConfig", "ApplicationLogLevel"]).inline;
    assert!(
        app == "INFO" || app == "DEBUG",
        "ApplicationLogLevel {app} drops the per-configuration lines"
    );
}

/// Desk review: the logs outlived `sam delete`. The stack owns a log group named like
/// Lambda's own, with a retention, and the function logs to it.
#[test]
fn the_stack_owns_the_log_group_with_a_retention() {
    let t = template();
    let group = path(&function_properties(), &["LoggingConfig", "LogGroup"]).inline;
    let logical = group
        .strip_prefix("!Ref ")
        .unwrap_or_else(|| panic!("LoggingConfig.LogGroup: {group}"));
    let resource = path(&t, &["Resources", logical]).body;
    assert_eq!(child(&resource, "Type").unwrap().inline, "AWS::Logs::LogGroup");
    let props = child(&resource, "Properties").expect("log group properties").body;
    assert_eq!(
        child(&props, "LogGroupName").expect("LogGroupName").inline,
        "!Sub /aws/lambda/${FunctionName}"
    );
    assert_eq!(
        path(&function_properties(), &["FunctionName"]).inline,
        "!Ref FunctionName"
    );
    let retention = child(&props, "RetentionInDays").expect("RetentionInDays").inline;
    let days = match retention.strip_prefix("!Ref ") {
        Some(param) => path(&t, &["Parameters", param, "Default"]).inline,
        None => retention.clone(),
    };
    let days: u32 = days.parse().unwrap_or_else(|_| panic!("RetentionInDays {retention}"));
    assert!((1..=3653).contains(&days), "RetentionInDays {days}");
    if let Some(policy) = child(&resource, "DeletionPolicy") {
        assert_eq!(policy.inline, "Delete", "the log group must go with the stack");
    }
}

/// Desk review: CreateSession without a SessionMode condition lets the "read-only" role
/// open ReadWrite sessions (PutObject, DeleteObject) on the directory bucket.
#[test]
fn directory_bucket_sessions_are_read_only() {
    let st = statement_with_action("s3express:CreateSession");
    assert_eq!(child(&st, "Effect").unwrap().inline, "Allow");
    let mode = child(&st, "Condition")
        .and_then(|c| child(&c.body, "StringEquals"))
        .and_then(|c| child(&c.body, "s3express:SessionMode"))
        .unwrap_or_else(|| panic!("CreateSession without Condition.StringEquals.s3express:SessionMode:\n{st}"));
    assert_eq!(values(&mode), vec!["ReadOnly".to_string()]);
    let resource = child(&st, "Resource").unwrap().inline;
    assert!(resource.ends_with(":bucket/${ExpressBucketName}"), "{resource}");
}

/// Desk review: fan-out invokes the function itself; IAM allows exactly the function,
/// unqualified and qualified (version or alias: the coordinator invokes its own
/// qualified ARN), and nothing else.
#[test]
fn fan_out_may_invoke_only_the_function_itself() {
    let st = statement_with_action("lambda:InvokeFunction");
    assert_eq!(child(&st, "Effect").unwrap().inline, "Allow");
    let mut resources = values(&child(&st, "Resource").unwrap());
    resources.sort();
    let arn = "!Sub arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${FunctionName}";
    assert_eq!(resources, vec![arn.to_string(), format!("{arn}:*")]);
    assert!(!template().contains("function:*"), "no wildcard over other functions");
}

/// Issue 15: a memory sweep changes the function itself and nothing else: read and
/// update its configuration and publish versions on the unqualified function only;
/// delete only qualified ARNs (versions), never the function; invoke its versions
/// through the fan-out statement. No wildcard action, no other function.
#[test]
fn the_memory_sweep_may_change_only_the_function_itself() {
    let arn = "!Sub arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${FunctionName}";
    let st = statement_with_action("lambda:UpdateFunctionConfiguration");
    assert_eq!(child(&st, "Effect").unwrap().inline, "Allow");
    let mut actions = values(&child(&st, "Action").unwrap());
    actions.sort();
    assert_eq!(
        actions,
        vec![
            "lambda:GetFunctionConfiguration",
            "lambda:PublishVersion",
            "lambda:UpdateFunctionConfiguration"
        ]
    );
    assert_eq!(values(&child(&st, "Resource").unwrap()), vec![arn.to_string()]);
    let st = statement_with_action("lambda:DeleteFunction");
    assert_eq!(values(&child(&st, "Action").unwrap()), vec!["lambda:DeleteFunction"]);
    assert_eq!(
        values(&child(&st, "Resource").unwrap()),
        vec![format!("{arn}:*")],
        "versions only: the unqualified function must not be deletable"
    );
    // The versions are invoked through the fan-out statement (qualified ARNs).
    let invoke = values(&child(&statement_with_action("lambda:InvokeFunction"), "Resource").unwrap());
    assert!(invoke.contains(&format!("{arn}:*")), "{invoke:?}");
    let t = template();
    assert!(
        !t.contains("lambda:*") && !t.contains("\"*\""),
        "no wildcard action or resource"
    );
    // The README says what these permissions allow and why.
    let readme = read("README.md");
    for needle in [
        "lambda:UpdateFunctionConfiguration",
        "lambda:PublishVersion",
        "lambda:DeleteFunction",
    ] {
        assert!(readme.contains(needle), "README.md does not explain {needle}");
    }
}

// ---- Makefile ----

/// The recipe of a Makefile target: its prerequisites line and its recipe lines.
fn target(name: &str) -> (String, String) {
    let mk = read("Makefile");
    let lines: Vec<&str> = mk.lines().collect();
    let head = format!("{name}:");
    let i = lines
        .iter()
        .position(|l| l.starts_with(&head) && !l.starts_with(&format!("{head}=")))
        .unwrap_or_else(|| panic!("Makefile: no target {name}"));
    let recipe: Vec<&str> = lines[i + 1..]
        .iter()
        .take_while(|l| l.starts_with('\t'))
        .copied()
        .collect();
    (lines[i][head.len()..].trim().to_string(), recipe.join("\n"))
}

/// Desk review: `make deploy` always passed --guided, whose Architecture prompt could
/// disagree with ARCH (exec format error on the first invoke). Deploy is non-guided with
/// the same ARCH as the build; the guided deploy is its own target.
#[test]
fn deploy_is_not_guided_and_builds_and_deploys_one_arch() {
    let mk = read("Makefile");
    assert!(mk
        .contains("SAM_BUILD = $(LAMBDA_PATH) sam build --beta-features --parameter-overrides Architecture=$(ARCH)\n"));
    assert!(
        mk.contains("PARAMETERS = Architecture=$(ARCH) "),
        "sam deploy gets Architecture=$(ARCH)"
    );
    let (_, deploy) = target("deploy");
    assert!(!deploy.contains("--guided"), "make deploy must not prompt:\n{deploy}");
    assert!(
        deploy.contains("sam deploy") && deploy.contains("--parameter-overrides $(PARAMETERS)"),
        "{deploy}"
    );
    assert!(
        deploy.contains("deployed-arch"),
        "deploy checks the deployed architecture:\n{deploy}"
    );
    let (_, guided) = target("deploy-guided");
    assert!(
        guided.contains("--guided") && guided.contains("deployed-arch"),
        "{guided}"
    );
    for (name, recipe) in [
        ("deploy", &deploy),
        ("deploy-guided", &guided),
        ("sam-build", &target("sam-build").1),
    ] {
        // Issue 49: the deploy builds with SAM_BUILD_DEPLOYED, which is $(SAM_BUILD)
        // when the baseline is deployed (the Rust function alone otherwise).
        assert!(
            recipe.contains("$(SAM_BUILD)") || recipe.contains("$(SAM_BUILD_DEPLOYED)"),
            "make {name} builds with $(SAM_BUILD)"
        );
    }
    assert!(
        read("Makefile").contains("then $(SAM_BUILD); else"),
        "SAM_BUILD_DEPLOYED uses $(SAM_BUILD)"
    );
}

/// Desk review: SAM CLI ignores AWS_REGION; the Makefile passes --region when REGION
/// (default AWS_REGION) is set.
#[test]
fn sam_gets_the_region_explicitly() {
    let mk = read("Makefile");
    assert!(mk.contains("REGION_FLAG = $(if $(REGION),--region $(REGION))"));
    assert!(mk.contains("REGION ?= $(or $(AWS_REGION),$(AWS_DEFAULT_REGION))"));
    for name in ["deploy", "deploy-guided", "console-events", "invoke"] {
        assert!(
            target(name).1.contains("$(REGION_FLAG)"),
            "make {name} without $(REGION_FLAG)"
        );
    }
}

/// Desk review: the AWS CLI retries a synchronous invoke that timed out, which could run
/// a sweep twice.
#[test]
fn invoke_makes_one_attempt() {
    let (_, invoke) = target("invoke");
    let call = invoke
        .lines()
        .find(|l| l.contains("aws lambda invoke"))
        .expect("aws lambda invoke");
    assert!(call.contains("AWS_MAX_ATTEMPTS=1"), "{call}");
    assert!(
        invoke.contains("--cli-read-timeout 0") && invoke.contains("--cli-connect-timeout"),
        "{invoke}"
    );
}

/// `make test` runs the audit (and whatever else the deploy work added to it): test
/// needs test-ready, whose tools lane (test-tools) runs it.
#[test]
fn make_test_runs_the_audit() {
    let (deps, _) = target("test");
    assert!(deps.split_whitespace().any(|d| d == "test-ready"), "make test: {deps}");
    assert!(target("test-ready")
        .1
        .contains("$(MAKE) --no-print-directory test-tools"));
    let (_, tools) = target("test-tools");
    assert!(
        tools.split_whitespace().any(|d| d == "audit"),
        "make test-tools: {tools}"
    );
}

// ---- events ----

fn event_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(root().join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    files
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().to_string()
}

/// Every event is a JSON object (what the function and the console's test events take).
#[test]
fn every_event_is_a_json_object() {
    for file in event_files() {
        let text = fs::read_to_string(&file).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
        assert!(v.is_object(), "{}: not a JSON object", file.display());
        assert!(v["buckets"].is_array(), "{}: no buckets", file.display());
    }
}

/// Desk review: the documented `sed` skipped events/fanout.json. `make events` fills
/// every event but local.json; so every other event may name only the placeholders that
/// target replaces.
#[test]
fn make_events_fills_every_aws_event() {
    let mk = read("Makefile");
    let placeholder = |var: &str| {
        let line = mk
            .lines()
            .find(|l| l.starts_with(&format!("{var} := ")))
            .unwrap_or_else(|| panic!("{var}"));
        line.split(":= ").nth(1).unwrap().trim().to_string()
    };
    let (standard, express) = (placeholder("PLACEHOLDER_STANDARD"), placeholder("PLACEHOLDER_EXPRESS"));
    assert!(mk.contains("AWS_EVENTS = $(filter-out events/local.json,$(wildcard events/*.json))"));
    let (_, events) = target("events");
    assert!(events.contains("$(AWS_EVENTS)"), "{events}");
    assert!(
        events.contains("s/$(PLACEHOLDER_STANDARD)/$(STANDARD_BUCKET)/g"),
        "{events}"
    );
    assert!(
        events.contains("s/$(PLACEHOLDER_EXPRESS)/$(EXPRESS_BUCKET)/g"),
        "{events}"
    );
    for file in event_files().iter().filter(|f| name(f) != "local.json") {
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
        for b in v["buckets"].as_array().unwrap() {
            let b = b.as_str().unwrap();
            assert!(
                b == standard || b == express,
                "{}: bucket {b} is not a placeholder make events fills",
                name(file)
            );
        }
    }
    let (deps, publish) = target("console-events");
    assert!(
        deps.split_whitespace().any(|d| d == "events"),
        "console-events publishes the filled copies"
    );
    assert!(
        publish.contains("sam remote test-event put SweepFunction --stack-name $(STACK)"),
        "{publish}"
    );
}

// ---- documentation ----

/// Desk review: the documented directory bucket `s3sweep--use1-az4--x-s3` collides for a
/// second user (names are unique per zone). The example carries the account id, and the
/// docs show how to get it; SAM's region variable is exported too.
#[test]
fn deploy_docs_name_the_directory_bucket_with_the_account_id() {
    let docs = read("docs/deploy.md");
    let mut all = docs.clone();
    for extra in ["README.md", "docs/lambda.md"] {
        if root().join(extra).exists() {
            all.push_str(&read(extra));
        }
    }
    assert!(
        !all.contains("s3sweep--use1-az4--x-s3"),
        "the colliding example name is back"
    );
    assert!(
        docs.contains("aws sts get-caller-identity --query Account --output text"),
        "how to get the account id"
    );
    let examples: Vec<&str> = all
        .lines()
        .filter(|l| l.contains("EXPRESS_BUCKET=") && l.contains("--x-s3"))
        .collect();
    assert!(!examples.is_empty(), "docs: no EXPRESS_BUCKET=...--x-s3 example");
    for line in &examples {
        let value = line
            .split("EXPRESS_BUCKET=")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap_or("");
        let lower = value.to_lowercase();
        assert!(
            lower.contains("$account") || lower.contains("<account-id>") || lower.contains("get-caller-identity"),
            "directory bucket example without the account id: {line}"
        );
    }
    assert!(
        docs.contains("AWS_DEFAULT_REGION"),
        "SAM CLI reads AWS_DEFAULT_REGION, not AWS_REGION"
    );
    for needle in [
        "make events",
        "make console-events",
        "make deploy-guided",
        "AWS_MAX_ATTEMPTS=1",
    ] {
        assert!(docs.contains(needle), "docs/deploy.md does not mention {needle}");
    }
}

mod baseline_vpc;
mod compare_lmi;
mod day_two;
mod defaults;
mod expanded;
mod first_deploy;
mod results_bucket;
mod schedule;

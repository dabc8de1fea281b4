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
    path(&template(), &["Resources", "SweepFunction", "Properties"]).body
}

/// The function's inline policies, each with its condition: an item
/// `!If [Condition, policy, !Ref AWS::NoValue]` gives `(Some(Condition), policy)`.
fn policies() -> Vec<(Option<String>, String)> {
    let policies = path(&function_properties(), &["Policies"]);
    items(&policies.body)
        .into_iter()
        .map(|p| {
            let mut lines = p.lines().filter(|l| is_content(l));
            if lines.next().map(str::trim) != Some("!If") {
                return (None, p);
            }
            let parts = items(&lines.collect::<Vec<_>>().join("\n"));
            assert_eq!(parts.len(), 3, "!If [condition, policy, else]: {p}");
            assert_eq!(unquote(parts[2].trim()), "!Ref AWS::NoValue", "{p}");
            (Some(unquote(parts[0].trim())), parts[1].clone())
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
        assert!(recipe.contains("$(SAM_BUILD)"), "make {name} builds with $(SAM_BUILD)");
    }
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

/// `make test` runs the audit (and whatever else the deploy work added to it).
#[test]
fn make_test_runs_the_audit() {
    let (deps, _) = target("test");
    assert!(deps.split_whitespace().any(|d| d == "audit"), "make test: {deps}");
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

// ---- issue 23: least privilege by default, retries, preflight, destroy ----

/// Issue 23: the role could always rewrite its own configuration. The memory sweep's
/// self-update and version statements are only in a policy under the condition
/// MemorySweepEnabled, which needs the parameter MemorySweep=enabled (default disabled).
#[test]
fn memory_sweep_permissions_only_when_the_parameter_enables_them() {
    let t = template();
    let param = path(&t, &["Parameters", "MemorySweep"]).body;
    assert_eq!(child(&param, "Default").unwrap().inline, "disabled", "{param}");
    assert_eq!(
        values(&child(&param, "AllowedValues").unwrap()),
        vec!["enabled", "disabled"]
    );
    assert_eq!(
        path(&t, &["Conditions", "MemorySweepEnabled"]).inline,
        "!Equals [!Ref MemorySweep, enabled]"
    );
    let always = actions_of(&statements_if(None));
    let sweep = actions_of(&statements_if(Some("MemorySweepEnabled")));
    for action in [
        "lambda:GetFunctionConfiguration",
        "lambda:UpdateFunctionConfiguration",
        "lambda:PublishVersion",
        "lambda:DeleteFunction",
    ] {
        assert!(
            !always.contains(&action.to_string()),
            "{action} is granted without the parameter: {always:?}"
        );
        assert!(
            sweep.contains(&action.to_string()),
            "{action} missing with MemorySweep=enabled: {sweep:?}"
        );
    }
    assert_eq!(
        always.iter().filter(|a| a.starts_with("lambda:")).collect::<Vec<_>>(),
        vec!["lambda:InvokeFunction"],
        "without the memory sweep the role may only invoke itself on Lambda"
    );
    // The Makefile passes the parameter, and docs/deploy.md lists every statement.
    assert!(read("Makefile").contains("$(if $(MEMORY_SWEEP),MemorySweep=$(MEMORY_SWEEP))"));
    let docs = read("docs/deploy.md");
    for sid in statements().iter().map(|s| child(s, "Sid").unwrap().inline) {
        assert!(docs.contains(&sid), "docs/deploy.md does not list the statement {sid}");
    }
    assert!(
        docs.contains("MEMORY_SWEEP=enabled"),
        "docs: how to enable the memory sweep"
    );
}

/// Issue 23: `make console-events` published the memory event to everyone's Test tab;
/// now only when the stack says MemorySweep is enabled (its output).
#[test]
fn the_memory_event_is_published_only_with_the_memory_sweep() {
    let outputs = path(&template(), &["Outputs", "MemorySweep"]).body;
    assert_eq!(child(&outputs, "Value").unwrap().inline, "!Ref MemorySweep");
    let (_, publish) = target("console-events");
    assert!(
        publish.contains(r#"if [ "$$name" = memory ] && [ "$$sweep" != enabled ]"#),
        "{publish}"
    );
    assert!(publish.contains("sweep=$(STACK_MEMORY_SWEEP)"), "{publish}");
}

/// Issue 23: events/memory.json asked for 3,538 and 5,307 MB, which a new account
/// refuses; docs/memory-sweep.md says how to ask for more.
#[test]
fn the_memory_event_fits_a_new_account() {
    let v: serde_json::Value = serde_json::from_str(&read("events/memory.json")).unwrap();
    let sizes: Vec<u64> = v["memory_mb"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_u64().unwrap())
        .collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert!(sizes.iter().all(|&m| (128..=3008).contains(&m)), "{sizes:?}");
    let docs = read("docs/memory-sweep.md");
    assert!(
        docs.contains("3,008 MB") && docs.contains("Service Quotas"),
        "docs/memory-sweep.md: how to ask for more memory"
    );
    assert!(
        read("docs/deploy.md").contains("events/filled/memory.json"),
        "docs/deploy.md documents the memory event"
    );
}

/// Issue 23: `make seed-aws` seeded through the profile's region, not REGION.
#[test]
fn seed_aws_honours_the_region() {
    let (_, seed) = target("seed-aws");
    let seeds: Vec<&str> = seed.lines().filter(|l| l.contains(" seed --bucket")).collect();
    assert_eq!(seeds.len(), 2, "{seed}");
    for line in seeds {
        assert!(line.contains("$(S3SWEEP_REGION)"), "{line}");
    }
    let mk = read("Makefile");
    assert!(mk.contains("S3SWEEP_REGION = $(if $(REGION),--region $(REGION))"));
    let dry = make(
        &[
            "-n",
            "seed-aws",
            "STANDARD_BUCKET=s-1",
            "EXPRESS_BUCKET=e--use1-az4--x-s3",
            "REGION=eu-west-1",
        ],
        &[],
    );
    assert_eq!(dry.matches("--region eu-west-1").count(), 2, "{dry}");
}

/// Issue 23: `make invoke` printed megabytes through json.tool; now its size, the
/// error when there is one, and how to read it with `s3sweep report`.
#[test]
fn invoke_prints_no_megabytes_and_points_at_the_report() {
    let (_, invoke) = target("invoke");
    assert!(!invoke.contains("json.tool"), "{invoke}");
    assert!(invoke.contains("s3sweep -- report $(RESULT)"), "{invoke}");
    assert!(invoke.contains("head -c 4000 $(RESULT)"), "{invoke}");
    assert!(
        read("docs/deploy.md").contains("s3sweep report"),
        "docs/deploy.md: s3sweep report"
    );
}

/// Issue 23: the zone command listed every zone; no API says which support directory
/// buckets, so the docs say where to look and how a wrong zone fails.
#[test]
fn the_zone_list_is_honest_about_directory_buckets() {
    let docs = read("docs/deploy.md");
    assert!(!docs.contains(r#"--query "AvailabilityZones[].[ZoneName,ZoneId]" --output table`."#));
    assert!(
        docs.contains("S3 Express One Zone Availability Zones and Regions"),
        "docs: where the supported zones are listed"
    );
}

// -- the Makefile's AWS logic against a fake `aws` on PATH --

/// A directory of its own under the temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("s3sweep-fake-aws-{}-{n}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A temp dir with a fake `aws` that appends each call to calls.log and answers from
/// the files the test writes (`answer-<subcommand>`; none: exit 255 like an error).
fn fake_aws(answers: &[(&str, &str)]) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new();
    let script = format!(
        "#!/bin/sh\necho \"aws $*\" >> {log}\nf={dir}/answer-$2\nif [ -f \"$f\" ]; then cat \"$f\"; else exit 255; fi\n",
        log = dir.path().join("calls.log").display(),
        dir = dir.path().display()
    );
    let aws = dir.path().join("aws");
    fs::write(&aws, script).unwrap();
    fs::set_permissions(&aws, fs::Permissions::from_mode(0o755)).unwrap();
    for (sub, answer) in answers {
        fs::write(dir.path().join(format!("answer-{sub}")), answer).unwrap();
    }
    dir
}

fn calls(dir: &TempDir) -> String {
    fs::read_to_string(dir.path().join("calls.log")).unwrap_or_default()
}

/// `make ARGS` in the repository with `fake` (if any) first on PATH; stdout and stderr.
fn make(args: &[&str], env: &[(&str, String)]) -> String {
    let mut cmd = std::process::Command::new("make");
    cmd.current_dir(root()).arg("--no-print-directory").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("make runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn path_with(dir: &TempDir) -> (&'static str, String) {
    (
        "PATH",
        format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap()),
    )
}

/// Issue 23: the deploy says before deploying what the account will refuse.
#[test]
fn preflight_warns_about_what_the_account_refuses() {
    // A new account: 10 concurrent executions, 10 unreserved.
    let aws = fake_aws(&[("get-account-settings", "10\t10\n")]);
    let out = make(
        &[
            "preflight",
            "RESERVED_CONCURRENCY=5",
            "FANOUT_MAX=20",
            "MEMORY_MB=3538",
            "REGION=eu-west-1",
        ],
        &[path_with(&aws)],
    );
    assert!(out.contains("account concurrency limit 10, unreserved 10"), "{out}");
    assert!(out.contains("RESERVED_CONCURRENCY=5 would leave 5 unreserved"), "{out}");
    assert!(
        out.contains("FANOUT_MAX=20 needs 21 executions at once, more than the 5 available"),
        "{out}"
    );
    assert!(
        out.contains("MemorySize 3538 MB") && out.contains("MEMORY_MB=3008"),
        "{out}"
    );
    assert!(
        calls(&aws).contains("aws lambda get-account-settings --region eu-west-1 --query"),
        "{}",
        calls(&aws)
    );
    // What fits says nothing (the template's default memory still warns: it is above
    // what a new account allows).
    let out = make(&["preflight", "FANOUT_MAX=9", "MEMORY_MB=3008"], &[path_with(&aws)]);
    assert!(!out.contains("WARNING"), "{out}");
    let out = make(&["preflight"], &[path_with(&aws)]);
    assert!(out.contains("MemorySize 10240 MB"), "{out}");
    // Without an answer it says the limits were not checked, and does not fail.
    let none = fake_aws(&[]);
    let out = make(&["preflight"], &[path_with(&none)]);
    assert!(out.contains("the account's limits were not checked"), "{out}");
    let (deps, deploy) = target("deploy");
    assert!(deps.contains("tools"));
    assert!(deploy.contains("$(MAKE) --no-print-directory preflight"), "{deploy}");
}

/// Issue 23: a failed first create leaves ROLLBACK_COMPLETE, which SAM cannot update:
/// the stack is deleted, saying why and what to change; other states are left alone.
#[test]
fn a_stack_left_in_rollback_complete_is_deleted_for_the_retry() {
    let aws = fake_aws(&[
        ("describe-stacks", "ROLLBACK_COMPLETE\n"),
        (
            "describe-stack-events",
            "SweepFunction\t'MemorySize' value failed to satisfy constraint\n",
        ),
        ("delete-stack", ""),
        ("wait", ""),
    ]);
    let out = make(
        &["stack-retry", "STACK=s3sweep-t", "REGION=eu-west-1"],
        &[path_with(&aws)],
    );
    let log = calls(&aws);
    assert!(
        out.contains("ROLLBACK_COMPLETE") && out.contains("MEMORY_MB=3008"),
        "{out}"
    );
    assert!(out.contains("'MemorySize' value failed"), "the reason is shown: {out}");
    assert!(
        log.contains("aws cloudformation delete-stack --region eu-west-1 --stack-name s3sweep-t"),
        "{log}"
    );
    assert!(
        log.contains("aws cloudformation wait stack-delete-complete --region eu-west-1 --stack-name s3sweep-t"),
        "{log}"
    );
    for status in ["UPDATE_ROLLBACK_COMPLETE", "CREATE_COMPLETE"] {
        let aws = fake_aws(&[("describe-stacks", status), ("delete-stack", "")]);
        make(&["stack-retry"], &[path_with(&aws)]);
        assert!(!calls(&aws).contains("delete-stack"), "{status}: {}", calls(&aws));
    }
    // No stack at all: nothing deleted, no failure.
    let aws = fake_aws(&[]);
    let out = make(&["stack-retry"], &[path_with(&aws)]);
    assert!(!calls(&aws).contains("delete-stack") && !out.contains("Error"), "{out}");
    let (_, deploy) = target("deploy");
    assert!(
        deploy.contains("|| \\\n\t\t{ $(STACK_RETRY); exit 1; }"),
        "after a failed deploy: {deploy}"
    );
    // A failed deploy stays failed after the check, whatever the stack's state.
    assert!(!read("Makefile").contains("STACK_RETRY = status=$$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query 'Stacks[0].StackStatus' --output text 2>/dev/null) ||"));
    // make -n deploy prints, and calls neither aws nor sam (a $(MAKE) in the sam
    // deploy line would make -n run it).
    let fake = fake_aws(&[("describe-stacks", "ROLLBACK_COMPLETE")]);
    std::fs::copy(fake.path().join("aws"), fake.path().join("sam")).unwrap();
    let dry = make(
        &[
            "-n",
            "deploy",
            "STANDARD_BUCKET=s-1",
            "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        ],
        &[path_with(&fake)],
    );
    assert!(dry.contains("sam deploy --stack-name s3sweep"), "{dry}");
    assert_eq!(calls(&fake), "", "make -n deploy called aws or sam:\n{dry}");
}

/// Issue 23: `make destroy` removes what the deploy made, cleans the seeded keys from
/// the manifests, deletes the buckets only when asked and empty, and says what it left.
#[test]
fn destroy_removes_what_the_deploy_made_and_says_what_it_left() {
    let args = [
        "-n",
        "destroy",
        "STANDARD_BUCKET=s-1",
        "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        "REGION=eu-west-1",
    ];
    let dry = make(&args, &[]);
    assert!(
        dry.contains("aws cloudformation delete-stack --region eu-west-1 --stack-name s3sweep\n"),
        "{dry}"
    );
    assert!(
        dry.contains("aws cloudformation wait stack-delete-complete --region eu-west-1 --stack-name s3sweep\n"),
        "{dry}"
    );
    assert!(
        dry.contains("for name in fanout memory seed smoke; do"),
        "every test event: {dry}"
    );
    assert!(
        dry.contains("sam remote test-event delete SweepFunction --stack-name s3sweep --region eu-west-1 --name $name"),
        "{dry}"
    );
    assert!(dry.contains("for b in s-1 e-1--use1-az4--x-s3; do"), "{dry}");
    assert!(
        dry.contains("s3sweep -- clean --manifest $m --credentials chain --region eu-west-1"),
        "{dry}"
    );
    assert!(
        !dry.contains("delete-bucket --region eu-west-1 --bucket $b &&") || dry.contains("for b in ; do"),
        "{dry}"
    );
    assert!(
        dry.contains("make destroy DELETE_BUCKETS=yes") && dry.contains("aws-sam-cli-managed-default"),
        "{dry}"
    );
    let mut asked = args.to_vec();
    asked.push("DELETE_BUCKETS=yes");
    let dry = make(&asked, &[]);
    let loop_line = dry
        .lines()
        .filter(|l| l.starts_with("for b in s-1 e-1--use1-az4--x-s3"))
        .count();
    assert_eq!(loop_line, 2, "clean and delete both buckets: {dry}");
    assert!(
        dry.contains("list-objects-v2 --region eu-west-1 --bucket $b --max-keys 1"),
        "{dry}"
    );
    assert!(
        dry.contains(r#"if [ "$n" = 0 ]; then aws s3api delete-bucket"#),
        "only an empty bucket: {dry}"
    );
    // Run for real against the fake aws: no manifests here, nothing cleaned; a bucket
    // holding objects is kept.
    let aws = fake_aws(&[("delete-stack", ""), ("wait", ""), ("list-objects-v2", "3\n")]);
    let out = make(
        &[
            "destroy",
            "STANDARD_BUCKET=s3sweep-test-none-1",
            "EXPRESS_BUCKET=",
            "DELETE_BUCKETS=yes",
            "VENV=/nonexistent",
        ],
        &[path_with(&aws)],
    );
    let log = calls(&aws);
    assert!(
        log.contains("aws cloudformation delete-stack --stack-name s3sweep"),
        "{log}"
    );
    assert!(
        !log.contains("delete-bucket"),
        "a bucket with objects is never deleted: {log}"
    );
    assert!(out.contains("bucket s3sweep-test-none-1 kept"), "{out}");
    assert!(out.contains("no s3sweep-manifest-s3sweep-test-none-1.json"), "{out}");
    assert!(
        read("docs/deploy.md").contains("make destroy"),
        "docs/deploy.md: teardown"
    );
}

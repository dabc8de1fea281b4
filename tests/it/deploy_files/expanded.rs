//! Issue 33: template.yaml as AWS sees it. SAM's own translator (samtranslator, pinned
//! in requirements-dev.txt) expands the template and tests/deploy/sam_expand.py resolves
//! it for each parameter set users deploy, as `make template-variants` does; the checks
//! read the expanded resources, not the YAML as written: no managed policy twice, VPC
//! permissions only with subnets, a default memory a new account accepts, derived names
//! that fit, one reservation, and the role table of docs/deploy.md equal to the
//! expanded roles.

use super::baseline_vpc::tool;
use super::*;
use serde_json::Value;
use std::collections::BTreeSet;

pub(super) const STANDARD: &str = "std-bucket-1";
pub(super) const EXPRESS: &str = "exp-bucket--use1-az4--x-s3";
pub(super) const RESULTS: &str = "results-bucket-1";
const REGION: &str = "eu-west-1";
const ACCOUNT: &str = "210987654321";
const VPC: [(&str, &str); 3] = [
    ("SubnetIds", "subnet-0123456789abcdef0"),
    ("SecurityGroupIds", "sg-0123456789abcdef0"),
    ("SubnetZoneIds", "use1-az4"),
];

/// The parameter sets users deploy, as `make template-variants` names them.
pub(super) fn parameter_sets() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let all: Vec<(&str, &str)> = [
        ("MemorySweep", "enabled"),
        ("ResultsBucket", RESULTS),
        ("Baseline", "enabled"),
        ("Schedule", "rate(1 day)"),
        ("MetricsNamespace", "s3sweep/canary"),
        ("ManagedInstances", "enabled"),
    ]
    .into_iter()
    .chain(VPC)
    .collect();
    vec![
        ("defaults", vec![]),
        ("memory-sweep", vec![("MemorySweep", "enabled")]),
        ("results-bucket", vec![("ResultsBucket", RESULTS)]),
        ("baseline", vec![("Baseline", "enabled")]),
        ("subnets", VPC.to_vec()),
        (
            "schedule",
            vec![("ResultsBucket", RESULTS), ("Schedule", "rate(1 day)")],
        ),
        (
            "managed-instances",
            [("ManagedInstances", "enabled")].into_iter().chain(VPC).collect(),
        ),
        ("all-on", all),
    ]
}

/// The expander's python: `$S3SWEEP_SAM_PYTHON` (TEST_ENV), else .venv's.
pub(super) fn python() -> Option<PathBuf> {
    tool("S3SWEEP_SAM_PYTHON", ".venv/bin/python", "make tools")
}

/// template.yaml expanded and resolved for the buckets above and `params`; Err: the
/// expander's message (a parameter refused, a template SAM cannot translate). Each
/// parameter set is expanded once per test process and shared: three tests here read
/// all seven sets and schedule.rs reads some again, and each run of the expander costs
/// about 0.75 s of CPU (most of it importing samtranslator).
pub(super) fn try_expand(python: &Path, params: &[(&str, &str)]) -> Result<Value, String> {
    type Key = (PathBuf, Vec<(String, String)>);
    type Cell = std::sync::Arc<std::sync::OnceLock<Result<Value, String>>>;
    static EXPANDED: std::sync::Mutex<std::collections::BTreeMap<Key, Cell>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let key = (
        python.to_path_buf(),
        params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    );
    let cell = EXPANDED.lock().unwrap().entry(key).or_default().clone();
    cell.get_or_init(|| run_expander(python, params)).clone()
}

fn run_expander(python: &Path, params: &[(&str, &str)]) -> Result<Value, String> {
    let mut cmd = std::process::Command::new(python);
    cmd.current_dir(root())
        .args(["tests/deploy/sam_expand.py", "template.yaml"])
        .args(["--region", REGION, "--account", ACCOUNT]);
    let buckets = [("StandardBucketName", STANDARD), ("ExpressBucketName", EXPRESS)];
    for (k, v) in buckets.iter().chain(params) {
        cmd.arg("--param").arg(format!("{k}={v}"));
    }
    let out = cmd.output().expect("the expander runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).expect("the expander writes JSON"))
}

pub(super) fn expand(python: &Path, params: &[(&str, &str)]) -> Value {
    try_expand(python, params).unwrap_or_else(|e| panic!("sam_expand {params:?}: {e}"))
}

/// The resources of `kind` (e.g. AWS::IAM::Role): (logical id, properties).
pub(super) fn resources_of(doc: &Value, kind: &str) -> Vec<(String, Value)> {
    doc["Resources"]
        .as_object()
        .expect("Resources")
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .map(|(name, r)| (name.clone(), r["Properties"].clone()))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Null => vec![],
        other => vec![other.to_string()],
    }
}

/// A role's managed policies by name (the ARN's last part).
fn managed(role: &Value) -> Vec<String> {
    strings(&role["ManagedPolicyArns"])
        .iter()
        .map(|arn| arn.rsplit('/').next().unwrap().to_string())
        .collect()
}

/// A role's inline statements: (Sid, sorted actions, sorted resources).
type Statement = (String, Vec<String>, Vec<String>);

fn statements(role: &Value) -> Vec<Statement> {
    let mut out = vec![];
    for policy in role["Policies"].as_array().into_iter().flatten() {
        for st in policy["PolicyDocument"]["Statement"].as_array().into_iter().flatten() {
            assert_eq!(st["Effect"], "Allow", "{st}");
            let mut actions = strings(&st["Action"]);
            let mut resources = strings(&st["Resource"]);
            actions.sort();
            resources.sort();
            out.push((st["Sid"].as_str().unwrap_or("").to_string(), actions, resources));
        }
    }
    out
}

/// Which role a logical id is, in docs/deploy.md's words.
fn role_kind(logical_id: &str) -> &'static str {
    if logical_id.starts_with("Baseline") {
        "baseline"
    } else if logical_id.starts_with("ManagedInstancesFunction") {
        "lmi"
    } else if logical_id.starts_with("ManagedInstancesOperator") {
        "operator"
    } else {
        "function"
    }
}

/// Issue 33: with SAM's own expansion no role lists a managed policy twice (CloudFormation
/// refuses the role), and the VPC permissions (AWSLambdaVPCAccessExecutionRole, any ec2
/// action) exist exactly when subnets are given, on every role of a function with a
/// VpcConfig. Issue 50: the function on a capacity provider has no VpcConfig (SAM
/// refuses both) and its role no VPC permission, in the subnets or not; its provider's
/// operator role holds the EC2 permissions (AWSLambdaManagedEC2ResourceOperator).
#[test]
fn expanded_roles_list_each_managed_policy_once_and_vpc_only_with_subnets() {
    let Some(python) = python() else { return };
    for (set, params) in parameter_sets() {
        let doc = expand(&python, &params);
        let in_vpc = params.iter().any(|(k, _)| *k == "SubnetIds");
        let roles = resources_of(&doc, "AWS::IAM::Role");
        assert!(!roles.is_empty(), "{set}: no role");
        for (name, role) in &roles {
            let policies = managed(role);
            let unique: BTreeSet<&String> = policies.iter().collect();
            assert_eq!(
                unique.len(),
                policies.len(),
                "{set}: {name} lists a managed policy twice: {policies:?}"
            );
            let vpc = policies.iter().any(|p| p == "AWSLambdaVPCAccessExecutionRole")
                || statements(role)
                    .iter()
                    .any(|(_, actions, _)| actions.iter().any(|a| a.starts_with("ec2:")));
            let expected = match role_kind(name) {
                "lmi" => false,
                "operator" => {
                    assert_eq!(policies, ["AWSLambdaManagedEC2ResourceOperator"], "{set}: {name}");
                    continue;
                }
                _ => in_vpc,
            };
            assert_eq!(
                vpc, expected,
                "{set}: {name}: VPC permissions {vpc}, subnets given {in_vpc}: {policies:?}"
            );
        }
        for (name, function) in resources_of(&doc, "AWS::Lambda::Function") {
            let on_provider = !function["CapacityProviderConfig"].is_null();
            assert_eq!(
                !function["VpcConfig"].is_null(),
                in_vpc && !on_provider,
                "{set}: {name}'s VpcConfig"
            );
        }
    }
}

/// Issue 33: a first `make deploy` with the defaults must pass a new account, which
/// refuses more than 3,008 MB ("Member must have value less than or equal to 3008").
#[test]
fn the_default_memory_fits_a_new_account() {
    let Some(python) = python() else { return };
    for (set, params) in parameter_sets() {
        for (name, function) in resources_of(&expand(&python, &params), "AWS::Lambda::Function") {
            let mb: u64 = function["MemorySize"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| {
                    function["MemorySize"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("{name}: {}", function["MemorySize"]))
                });
            assert!(
                mb <= 3008,
                "{set}: {name} defaults to {mb} MB; a new account stops at 3,008"
            );
        }
    }
    assert!(
        read("docs/deploy.md").contains("MEMORY_MB=10240"),
        "docs: how to raise it"
    );
}

/// Issue 33: every name derived from FunctionName fits Lambda's 64 characters at the
/// longest FunctionName the template accepts, and one character more is refused.
#[test]
fn every_derived_function_name_fits_at_the_longest_function_name() {
    let Some(python) = python() else { return };
    let longest = path(&template(), &["Parameters", "FunctionName", "MaxLength"]).inline;
    let longest: usize = longest.parse().expect("FunctionName has a MaxLength");
    let name = "f".repeat(longest);
    let doc = expand(&python, &[("FunctionName", name.as_str()), ("Baseline", "enabled")]);
    let functions = resources_of(&doc, "AWS::Lambda::Function");
    assert_eq!(functions.len(), 2);
    for (id, function) in functions {
        let fname = function["FunctionName"].as_str().unwrap_or_else(|| panic!("{id}"));
        assert!(fname.len() <= 64, "{id}: {fname} is {} characters", fname.len());
    }
    let long = "f".repeat(longest + 1);
    let refused = try_expand(&python, &[("FunctionName", long.as_str())]);
    assert!(refused.is_err(), "a {}-character FunctionName is accepted", longest + 1);
}

/// Issue 33: ReservedConcurrency is taken once, by the main function: the baseline
/// beside it reserves nothing (2N would be taken where the preflight counts N).
#[test]
fn the_reservation_is_taken_once_with_the_baseline() {
    let Some(python) = python() else { return };
    let doc = expand(&python, &[("ReservedConcurrency", "10"), ("Baseline", "enabled")]);
    let reserved: Vec<(String, String)> = resources_of(&doc, "AWS::Lambda::Function")
        .into_iter()
        .filter(|(_, f)| !f["ReservedConcurrentExecutions"].is_null())
        .map(|(id, f)| (id, f["ReservedConcurrentExecutions"].to_string()))
        .collect();
    assert_eq!(reserved, vec![("SweepFunction".to_string(), "\"10\"".to_string())]);
}

/// One row of docs/deploy.md's role table.
struct DocRow {
    role: String,
    statement: String,
    actions: Vec<String>,
    resources: Vec<String>,
    only_with: String,
}

/// The role table of docs/deploy.md (`| function | ... |` and `| baseline | ... |`
/// rows), with the placeholders replaced by the expansion's values.
fn doc_rows() -> Vec<DocRow> {
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let fill = |s: &str| {
        s.replace("STANDARD_BUCKET", STANDARD)
            .replace("EXPRESS_BUCKET", EXPRESS)
            .replace("RESULTS_BUCKET", RESULTS)
            .replace("RESULTS_PREFIX", "s3sweep-results")
            .replace("REGION", REGION)
            .replace("ACCOUNT", ACCOUNT)
    };
    read("docs/deploy.md")
        .lines()
        .filter(|l| {
            ["function", "baseline", "lmi", "operator"]
                .iter()
                .any(|r| l.starts_with(&format!("| {r} |")))
        })
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 5, "docs/deploy.md role table row: {l}");
            let mut resources: Vec<String> = ticked(cells[3]).iter().map(|r| fill(r)).collect();
            resources.sort();
            let mut actions: Vec<String> = ticked(cells[2]).into_iter().filter(|a| a.contains(':')).collect();
            actions.sort();
            DocRow {
                role: cells[0].to_string(),
                statement: cells[1].replace('`', ""),
                actions,
                resources,
                only_with: cells[4].replace('`', ""),
            }
        })
        .collect()
}

/// Whether a row's "Only with" holds for a parameter set.
fn holds(only_with: &str, params: &[(&str, &str)]) -> bool {
    let on = |k: &str| params.iter().any(|(p, _)| *p == k);
    match only_with {
        "" => true,
        "MEMORY_SWEEP=enabled" => on("MemorySweep"),
        "RESULTS_BUCKET" => on("ResultsBucket"),
        "SUBNET_IDS" => on("SubnetIds"),
        other => panic!("docs/deploy.md role table: unknown condition {other}"),
    }
}

/// Issue 33: the statements docs/deploy.md prints are the expanded roles' own, for each
/// parameter set: the same Sids with the same actions and resources, the same managed
/// policies, nothing more on either side.
#[test]
fn the_documented_role_statements_are_the_expanded_ones() {
    let Some(python) = python() else { return };
    let rows = doc_rows();
    assert!(rows.len() >= 8, "docs/deploy.md: no role table");
    for (set, params) in parameter_sets() {
        let doc = expand(&python, &params);
        let mut expanded: Vec<String> = vec![];
        for (id, role) in resources_of(&doc, "AWS::IAM::Role") {
            let kind = role_kind(&id);
            for (sid, actions, resources) in statements(&role) {
                expanded.push(format!("{kind} {sid} {actions:?} {resources:?}"));
            }
            for policy in managed(&role) {
                expanded.push(format!("{kind} managed {policy}"));
            }
        }
        let on = |p: (&str, &str)| params.contains(&p);
        let shown = |role: &str| match role {
            "baseline" => on(("Baseline", "enabled")),
            "lmi" | "operator" => on(("ManagedInstances", "enabled")),
            _ => true,
        };
        let mut documented: Vec<String> = rows
            .iter()
            .filter(|r| holds(&r.only_with, &params) && shown(&r.role))
            .map(|r| match r.statement.strip_prefix("managed ") {
                Some(policy) => format!("{} managed {policy}", r.role),
                None => format!("{} {} {:?} {:?}", r.role, r.statement, r.actions, r.resources),
            })
            .collect();
        expanded.sort();
        documented.sort();
        assert_eq!(
            documented, expanded,
            "{set}: docs/deploy.md's role table (left) against the expanded roles (right)"
        );
    }
}

/// Issue 50: ManagedInstances=enabled adds FunctionName-lmi on a capacity provider of
/// network-optimized instances (the `n` families) of the function's architecture, its
/// CapacityProviderConfig naming that provider and no VpcConfig of its own
/// (samtranslator 1.115 refuses CapacityProviderConfig with VpcConfig or
/// ProvisionedConcurrencyConfig); without subnets the template's rule refuses it before
/// anything is created (a capacity provider's VpcConfig is required).
#[test]
fn managed_instances_run_the_function_on_network_optimized_instances_in_the_subnets() {
    let Some(python) = python() else { return };
    let on: Vec<(&str, &str)> = [("ManagedInstances", "enabled")].into_iter().chain(VPC).collect();
    let doc = expand(&python, &on);
    let providers = resources_of(&doc, "AWS::Lambda::CapacityProvider");
    assert_eq!(providers.len(), 1, "{providers:?}");
    let (_, provider) = &providers[0];
    let types = strings(&provider["InstanceRequirements"]["AllowedInstanceTypes"]);
    assert!(!types.is_empty(), "{provider}");
    for t in &types {
        let family = t.split('.').next().unwrap();
        assert!(family.ends_with('n'), "{t} is not a network-optimized type");
    }
    assert_eq!(strings(&provider["InstanceRequirements"]["Architectures"]), ["arm64"]);
    assert_eq!(strings(&provider["VpcConfig"]["SubnetIds"]), [VPC[0].1]);
    let functions = resources_of(&doc, "AWS::Lambda::Function");
    let (_, lmi) = functions
        .iter()
        .find(|(id, _)| id == "ManagedInstancesFunction")
        .expect("FunctionName-lmi");
    assert_eq!(lmi["FunctionName"], "s3sweep-lmi");
    let config = &lmi["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"];
    assert_eq!(
        config["CapacityProviderArn"],
        format!("arn:aws:lambda:{REGION}:{ACCOUNT}:capacity-provider:s3sweep-lmi"),
        "{lmi}"
    );
    assert!(lmi["VpcConfig"].is_null(), "{lmi}");
    let x86 = expand(&python, &[on.clone(), vec![("Architecture", "x86_64")]].concat());
    let (_, provider) = &resources_of(&x86, "AWS::Lambda::CapacityProvider")[0];
    assert!(strings(&provider["InstanceRequirements"]["AllowedInstanceTypes"])
        .iter()
        .all(|t| t.starts_with("c6in.")));
    let refused = try_expand(&python, &[("ManagedInstances", "enabled")]).unwrap_err();
    assert!(
        refused.contains("ManagedInstances=enabled needs SubnetIds"),
        "{refused}"
    );
}

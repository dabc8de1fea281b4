//! The role the tests enforce, as AWS would: template.yaml expanded by SAM's own
//! translator (`tests/deploy/sam_expand.py`, with the tool venv's Python, `make
//! tools`) for one parameter set, and the function's role taken from the expansion
//! (`Resources.*` of type `AWS::IAM::Role`, its inline policies' statements). The
//! evaluator is the library's (`s3sweep::lab::iam`), the same the lab's `serve
//! --iam-policy` uses. Also Lambda's resource for a call: the FunctionName as passed,
//! completed to a full ARN, with a `Qualifier` parameter appended to an unqualified
//! name ([`lambda_call_resource`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

pub(crate) use super::lab::{Enforcer, Policy};

pub(crate) const ACCOUNT: &str = "123456789012";
pub(crate) const REGION: &str = "us-east-1";
/// The function name the tests deploy (`FunctionName`).
pub(crate) const FUNCTION: &str = "s3sweep-test";
/// The buckets of the parameter sets (the lab's bucket names in the tests).
pub(crate) const STANDARD_BUCKET: &str = "standard-like";
pub(crate) const EXPRESS_BUCKET: &str = super::EXPRESS_BUCKET;
pub(crate) const RESULTS_BUCKET: &str = "results";

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The Python with samtranslator: `$S3SWEEP_SAM_PYTHON`, else the tool venv's.
fn python() -> PathBuf {
    std::env::var_os("S3SWEEP_SAM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(MANIFEST_DIR).join(".venv/bin/python"))
}

/// The parameters every set passes (the buckets and the function's name), then `extra`.
fn parameters(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut params: BTreeMap<String, String> = [
        ("FunctionName", FUNCTION),
        ("StandardBucketName", STANDARD_BUCKET),
        ("ExpressBucketName", EXPRESS_BUCKET),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        params.insert(k.to_string(), v.to_string());
    }
    params.into_iter().collect()
}

/// The expansions made in this process, by parameter set.
type Expansions = BTreeMap<Vec<(String, String)>, Arc<Value>>;

/// template.yaml as samtranslator expands it for `extra` parameters (over the
/// defaults), resolved; expanded once per parameter set in this process.
pub(crate) fn expanded(extra: &[(&str, &str)]) -> Arc<Value> {
    static CACHE: OnceLock<Mutex<Expansions>> = OnceLock::new();
    let params = parameters(extra);
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = cache.get(&params) {
        return v.clone();
    }
    let value = Arc::new(expand_cached(&params));
    cache.insert(params, value.clone());
    value
}

/// The expansion from a file under the target's temporary folder, named by a hash of
/// the template, the script and the parameters; made by [`expand`] when missing.
fn expand_cached(params: &[(String, String)]) -> Value {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in ["template.yaml", "tests/deploy/sam_expand.py"] {
        std::fs::read(PathBuf::from(MANIFEST_DIR).join(file))
            .expect("template.yaml and sam_expand.py")
            .hash(&mut hasher);
    }
    params.hash(&mut hasher);
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sam-expand-{:016x}.json", hasher.finish()));
    if let Some(v) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
        return v;
    }
    let value = expand(params);
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&tmp, value.to_string()).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
    value
}

/// Runs sam_expand.py for `params`.
fn expand(params: &[(String, String)]) -> Value {
    let mut cmd = Command::new(python());
    cmd.current_dir(MANIFEST_DIR)
        .arg("tests/deploy/sam_expand.py")
        .arg("template.yaml")
        .args(["--account", ACCOUNT, "--region", REGION]);
    for (k, v) in params {
        cmd.arg("--param").arg(format!("{k}={v}"));
    }
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "running {} tests/deploy/sam_expand.py: {e} (make tools makes the venv; or set S3SWEEP_SAM_PYTHON)",
            python().display()
        )
    });
    assert!(
        out.status.success(),
        "sam_expand.py {params:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).expect("sam_expand.py prints JSON")
}

/// The statements of the role `role` (e.g. `SweepFunctionRole`) in an expansion.
pub(crate) fn role_statements(template: &Value, role: &str) -> Vec<Value> {
    let resource = &template["Resources"][role];
    assert_eq!(resource["Type"], "AWS::IAM::Role", "{role} in the expansion");
    resource["Properties"]["Policies"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| match &p["PolicyDocument"]["Statement"] {
            Value::Array(s) => s.clone(),
            other => vec![other.clone()],
        })
        .collect()
}

/// The expanded role of the function for the parameter set `extra` (over the defaults).
pub(crate) fn sweep_role(extra: &[(&str, &str)]) -> Policy {
    let statements = role_statements(&expanded(extra), "SweepFunctionRole");
    Policy::from_value(&Value::Array(statements)).expect("the expanded role is a policy the evaluator reads")
}

/// The baseline function's expanded role (`Baseline=enabled`).
pub(crate) fn baseline_role() -> Policy {
    let statements = role_statements(&expanded(&[("Baseline", "enabled")]), "BaselineFunctionRole");
    Policy::from_value(&Value::Array(statements)).expect("the baseline's expanded role is a policy")
}

/// The expanded role for `extra` less the statement `sid` (a permission revoked).
pub(crate) fn sweep_role_without(extra: &[(&str, &str)], sid: &str) -> Policy {
    let statements: Vec<Value> = role_statements(&expanded(extra), "SweepFunctionRole")
        .into_iter()
        .filter(|s| s["Sid"] != sid)
        .collect();
    Policy::from_value(&Value::Array(statements)).expect("the role less one statement")
}

/// An enforcer of the function's expanded role for `extra`.
pub(crate) fn sweep_enforcer(extra: &[(&str, &str)]) -> Arc<Enforcer> {
    Arc::new(Enforcer::new(sweep_role(extra)))
}

/// The parameter set a memory sweep is deployed with.
pub(crate) const MEMORY_SWEEP: &[(&str, &str)] = &[("MemorySweep", "enabled")];

/// Lambda's resource for a call: the FunctionName as passed (a name, `NAME:QUALIFIER`,
/// a partial ARN `ACCOUNT:function:NAME[:Q]` or a full ARN), completed to a full ARN.
pub(crate) fn lambda_resource(function_name: &str) -> String {
    if function_name.starts_with("arn:") {
        return function_name.to_string();
    }
    let prefix = format!("arn:aws:lambda:{REGION}:");
    if function_name.contains(":function:") {
        return format!("{prefix}{function_name}");
    }
    format!("{prefix}{ACCOUNT}:function:{function_name}")
}

/// The resource Lambda authorizes a call against: [`lambda_resource`] of the
/// FunctionName as passed, and when that name is unqualified and the call carries a
/// `Qualifier` parameter, the qualified ARN `function:NAME:QUALIFIER`, exactly as if
/// `NAME:QUALIFIER` had been passed.
///
/// AWS's rule since 2022-01-24, from its notice to customers ("starting January 24,
/// 2022, Lambda requires IAM or VPC endpoint policies to specify the fully qualified ARN
/// in the Resource element when authorizing API calls that use an unqualified ARN with
/// a qualifier parameter"; quoted in juanjoDiaz/serverless-plugin-warmup#304,
/// 2022-02-07, and #308, 2022-03-10; aws/aws-cdk#19273, 2022-03-07, and #19318,
/// 2022-03-09, which then grants `[ARN, ARN:*]`). Seen on AWS in
/// alexcasalboni/aws-lambda-power-tuning#260 (2024-10-01): `GetFunctionConfiguration`
/// with `Qualifier=$LATEST` "not authorized ... on resource: ...:function:X:$LATEST".
pub(crate) fn lambda_call_resource(function_name: &str, qualifier: Option<&str>) -> String {
    let resource = lambda_resource(function_name);
    let qualified = resource
        .split(":function:")
        .nth(1)
        .is_some_and(|tail| tail.contains(':'));
    match qualifier {
        Some(q) if !qualified && !q.is_empty() => format!("{resource}:{q}"),
        _ => resource,
    }
}

#[test]
fn a_qualifier_makes_the_resource_the_qualified_arn() {
    let full = format!("arn:aws:lambda:{REGION}:{ACCOUNT}:function:f");
    assert_eq!(lambda_call_resource("f", None), full);
    assert_eq!(lambda_call_resource("f", Some("3")), format!("{full}:3"));
    assert_eq!(lambda_call_resource("f", Some("$LATEST")), format!("{full}:$LATEST"));
    assert_eq!(lambda_call_resource(&full, Some("3")), format!("{full}:3"));
    assert_eq!(lambda_call_resource("f:3", Some("3")), format!("{full}:3"));
}

#[test]
fn lambda_completes_names_and_partial_arns() {
    let full = format!("arn:aws:lambda:{REGION}:{ACCOUNT}:function:f");
    assert_eq!(lambda_resource("f"), full);
    assert_eq!(lambda_resource("f:3"), format!("{full}:3"));
    assert_eq!(lambda_resource(&format!("{ACCOUNT}:function:f:3")), format!("{full}:3"));
    assert_eq!(lambda_resource(&format!("{full}:$LATEST")), format!("{full}:$LATEST"));
}

#[test]
fn the_memory_sweep_role_allows_versions_only_qualified() {
    let e = Enforcer::new(sweep_role(MEMORY_SWEEP));
    let f = lambda_resource(FUNCTION);
    assert!(e.authorize("lambda:DeleteFunction", &format!("{f}:2"), &[]).is_ok());
    assert!(e.authorize("lambda:DeleteFunction", &f, &[]).is_err());
    assert!(e.authorize("lambda:PublishVersion", &f, &[]).is_ok());
    // Without MemorySweep=enabled the role may not change the function.
    let plain = Enforcer::new(sweep_role(&[]));
    assert!(plain.authorize("lambda:UpdateFunctionConfiguration", &f, &[]).is_err());
    assert!(plain.authorize("lambda:InvokeFunction", &format!("{f}:2"), &[]).is_ok());
}

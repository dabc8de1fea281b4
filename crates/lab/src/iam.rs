//! IAM policy evaluation, as AWS evaluates an identity-based policy: a request
//! (action, resource, condition keys) is allowed when a statement allows it and none
//! denies it, with IAM's wildcards (`*`, `?`; actions case-insensitive, resources
//! case-sensitive), `Action`/`NotAction`, `Resource`/`NotResource` and the string
//! condition operators. [`Enforcer`] applies one policy to every call of a server (the
//! lab's `serve --iam-policy FILE`, [`super::iam_s3`], and the tests' Lambda API), answers
//! a refusal with the message AWS gives, and records which statements' actions were
//! used, so a permission no call needed can be reported.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::Value;

/// Most bytes of a policy file read (`serve --iam-policy`): IAM's largest managed
/// policy is 6,144 characters ("IAM and AWS STS quotas"); a file of many statements
/// stays far under this.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;
/// The principal named in refusals: the function's role, as AWS names an assumed role.
pub const DEFAULT_PRINCIPAL: &str = "arn:aws:sts::123456789012:assumed-role/s3sweep-function-role/s3sweep";

/// A policy that cannot be read; every bad field is named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("IAM policy: {}", .0.join("; "))]
pub struct PolicyError(pub Vec<String>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Allow,
    Deny,
}

/// `Action` or `NotAction` (and the same for resources): the patterns listed, or
/// every name but those.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Names {
    Only(Vec<String>),
    Not(Vec<String>),
}

/// The string condition operators (an `IfExists` suffix is accepted), named as IAM names them.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    StringEquals,
    StringNotEquals,
    StringEqualsIgnoreCase,
    StringLike,
    StringNotLike,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    operator: Operator,
    if_exists: bool,
    key: String,
    values: Vec<String>,
}

/// One statement of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The `Sid`, or `#N` (its position) without one.
    pub sid: String,
    effect: Effect,
    actions: Names,
    resources: Names,
    conditions: Vec<Condition>,
}

/// A policy: its statements, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub statements: Vec<Statement>,
}

/// One call to authorize: `lambda:DeleteFunction` on an ARN, with its condition keys.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub action: &'a str,
    pub resource: &'a str,
    pub context: &'a [(&'a str, &'a str)],
}

/// IAM's answer: allowed (by which statement and action pattern), or denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed { by: Vec<(usize, usize)> },
    ExplicitDeny { by: usize },
    ImplicitDeny,
}

/// `*` any run of characters, `?` any one; `fold`: compare case-insensitively.
pub fn matches(pattern: &str, text: &str, fold: bool) -> bool {
    let norm = |s: &str| -> Vec<char> {
        if fold {
            s.to_lowercase().chars().collect()
        } else {
            s.chars().collect()
        }
    };
    let (p, t) = (norm(pattern), norm(text));
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A string or a list of strings.
fn strings(value: &Value, field: &str, errors: &mut Vec<String>) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
        }
        _ => {
            errors.push(format!("{field}: must be a string or a list of strings"));
            Vec::new()
        }
    }
}

fn names(statement: &Value, yes: &str, not: &str, at: &str, errors: &mut Vec<String>) -> Names {
    match (statement.get(yes), statement.get(not)) {
        (Some(v), None) => Names::Only(strings(v, &format!("{at}.{yes}"), errors)),
        (None, Some(v)) => Names::Not(strings(v, &format!("{at}.{not}"), errors)),
        (Some(_), Some(_)) => {
            errors.push(format!("{at}: both {yes} and {not}"));
            Names::Only(Vec::new())
        }
        (None, None) => {
            errors.push(format!("{at}: neither {yes} nor {not}"));
            Names::Only(Vec::new())
        }
    }
}

fn operator(name: &str) -> Option<(Operator, bool)> {
    let (base, if_exists) = match name.strip_suffix("IfExists") {
        Some(base) => (base, true),
        None => (name, false),
    };
    let op = match base {
        "StringEquals" => Operator::StringEquals,
        "StringNotEquals" => Operator::StringNotEquals,
        "StringEqualsIgnoreCase" => Operator::StringEqualsIgnoreCase,
        "StringLike" => Operator::StringLike,
        "StringNotLike" => Operator::StringNotLike,
        _ => return None,
    };
    Some((op, if_exists))
}

fn conditions(statement: &Value, at: &str, errors: &mut Vec<String>) -> Vec<Condition> {
    let Some(block) = statement.get("Condition") else {
        return Vec::new();
    };
    let Some(block) = block.as_object() else {
        errors.push(format!("{at}.Condition: must be an object"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, keys) in block {
        let Some((op, if_exists)) = operator(name) else {
            errors.push(format!("{at}.Condition.{name}: operator not supported (String* only)"));
            continue;
        };
        let Some(keys) = keys.as_object() else {
            errors.push(format!("{at}.Condition.{name}: must be an object of keys"));
            continue;
        };
        for (key, values) in keys {
            out.push(Condition {
                operator: op,
                if_exists,
                key: key.clone(),
                values: strings(values, &format!("{at}.Condition.{name}.{key}"), errors),
            });
        }
    }
    out
}

fn statement(value: &Value, index: usize, errors: &mut Vec<String>) -> Statement {
    let at = format!("Statement[{index}]");
    let effect = match value.get("Effect").and_then(Value::as_str) {
        Some("Allow") => Effect::Allow,
        Some("Deny") => Effect::Deny,
        _ => {
            errors.push(format!("{at}.Effect: must be Allow or Deny"));
            Effect::Deny
        }
    };
    Statement {
        sid: value
            .get("Sid")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{index}"), str::to_string),
        effect,
        actions: names(value, "Action", "NotAction", &at, errors),
        resources: names(value, "Resource", "NotResource", &at, errors),
        conditions: conditions(value, &at, errors),
    }
}

impl Policy {
    /// A policy document (`{"Statement": [...]}`), a list of documents (a role's
    /// policies) or of statements, or one statement.
    pub fn from_value(value: &Value) -> Result<Policy, PolicyError> {
        let mut raw = Vec::new();
        collect(value, &mut raw);
        let mut errors = Vec::new();
        if raw.is_empty() {
            errors.push("no statement found".to_string());
        }
        let statements = raw
            .iter()
            .enumerate()
            .map(|(i, s)| statement(s, i, &mut errors))
            .collect();
        if errors.is_empty() {
            Ok(Policy { statements })
        } else {
            Err(PolicyError(errors))
        }
    }

    /// [`Policy::from_value`] of a JSON text.
    pub fn from_json(text: &str) -> Result<Policy, PolicyError> {
        let value: Value = serde_json::from_str(text).map_err(|e| PolicyError(vec![format!("not JSON: {e}")]))?;
        Policy::from_value(&value)
    }

    /// What IAM answers `request`: any matching Deny wins, then any matching Allow.
    pub fn evaluate(&self, request: &Request<'_>) -> Decision {
        let mut by = Vec::new();
        for (i, s) in self.statements.iter().enumerate() {
            let Some(action_at) = s.action_match(request.action) else {
                continue;
            };
            if !s.resource_matches(request.resource) || !s.conditions_hold(request.context) {
                continue;
            }
            match s.effect {
                Effect::Deny => return Decision::ExplicitDeny { by: i },
                Effect::Allow => by.push((i, action_at)),
            }
        }
        if by.is_empty() {
            Decision::ImplicitDeny
        } else {
            Decision::Allowed { by }
        }
    }
}

/// The statements in `value`, in order.
fn collect<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        Value::Object(map) => match map.get("Statement") {
            Some(inner) => collect(inner, out),
            None => out.push(value),
        },
        _ => {}
    }
}

impl Statement {
    /// The index of the action pattern that matches (`usize::MAX` for `NotAction`).
    fn action_match(&self, action: &str) -> Option<usize> {
        match &self.actions {
            Names::Only(p) => p.iter().position(|p| matches(p, action, true)),
            Names::Not(p) => (!p.iter().any(|p| matches(p, action, true))).then_some(usize::MAX),
        }
    }

    fn resource_matches(&self, resource: &str) -> bool {
        match &self.resources {
            Names::Only(p) => p.iter().any(|p| matches(p, resource, false)),
            Names::Not(p) => !p.iter().any(|p| matches(p, resource, false)),
        }
    }

    fn conditions_hold(&self, context: &[(&str, &str)]) -> bool {
        self.conditions.iter().all(|c| {
            let value = context
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&c.key))
                .map(|(_, v)| *v);
            let Some(value) = value else {
                // A missing key: the negated operators and IfExists hold, the others not.
                return c.if_exists || matches!(c.operator, Operator::StringNotEquals | Operator::StringNotLike);
            };
            let any = |f: &dyn Fn(&str) -> bool| c.values.iter().any(|v| f(v));
            match c.operator {
                Operator::StringEquals => any(&|v| v == value),
                Operator::StringNotEquals => !any(&|v| v == value),
                Operator::StringEqualsIgnoreCase => any(&|v| v.eq_ignore_ascii_case(value)),
                Operator::StringLike => any(&|v| matches(v, value, false)),
                Operator::StringNotLike => !any(&|v| matches(v, value, false)),
            }
        })
    }

    /// The action patterns of an `Action` statement (none for `NotAction`).
    fn action_patterns(&self) -> &[String] {
        match &self.actions {
            Names::Only(p) => p,
            Names::Not(_) => &[],
        }
    }
}

/// A refused call, worded as AWS words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub principal: String,
    pub action: String,
    pub resource: String,
    /// A Deny statement matched (its Sid).
    pub denied_by: Option<String>,
}

impl Denial {
    /// AWS's message; `quoted`: the resource in quotes, as S3 writes it (Lambda does not).
    pub fn message(&self, quoted: bool) -> String {
        let resource = if quoted {
            format!("\"{}\"", self.resource)
        } else {
            self.resource.clone()
        };
        let why = match &self.denied_by {
            Some(_) => "with an explicit deny in an identity-based policy".to_string(),
            None => format!("because no identity-based policy allows the {} action", self.action),
        };
        format!(
            "User: {} is not authorized to perform: {} on resource: {resource} {why}",
            self.principal, self.action
        )
    }
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(false))
    }
}

/// One policy applied to every call of a server: what was allowed by which statement,
/// and every refusal, recorded.
#[derive(Debug)]
pub struct Enforcer {
    policy: Policy,
    principal: String,
    used: Mutex<BTreeSet<(usize, usize)>>,
    denials: Mutex<Vec<Denial>>,
}

impl Enforcer {
    pub fn new(policy: Policy) -> Enforcer {
        Enforcer {
            policy,
            principal: DEFAULT_PRINCIPAL.to_string(),
            used: Mutex::new(BTreeSet::new()),
            denials: Mutex::new(Vec::new()),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Allowed, or the refusal (recorded).
    pub fn authorize(&self, action: &str, resource: &str, context: &[(&str, &str)]) -> Result<(), Denial> {
        let request = Request {
            action,
            resource,
            context,
        };
        let denied_by = match self.policy.evaluate(&request) {
            Decision::Allowed { by } => {
                self.used.lock().unwrap_or_else(|e| e.into_inner()).extend(by);
                return Ok(());
            }
            Decision::ExplicitDeny { by } => Some(self.policy.statements[by].sid.clone()),
            Decision::ImplicitDeny => None,
        };
        let denial = Denial {
            principal: self.principal.clone(),
            action: action.to_string(),
            resource: resource.to_string(),
            denied_by,
        };
        self.denials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(denial.clone());
        Err(denial)
    }

    /// The calls refused so far, in order.
    pub fn denials(&self) -> Vec<Denial> {
        self.denials.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Each Allow statement's actions that no call has used so far: `Sid: action`.
    pub fn unused(&self) -> Vec<String> {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (i, s) in self.policy.statements.iter().enumerate() {
            if s.effect != Effect::Allow {
                continue;
            }
            for (a, pattern) in s.action_patterns().iter().enumerate() {
                if !used.contains(&(i, a)) {
                    out.push(format!("{}: {pattern}", s.sid));
                }
            }
        }
        out
    }

    /// [`Enforcer::unused`] of several enforcers over the same policy: what none used.
    pub fn unused_by_all(enforcers: &[&Enforcer]) -> Vec<String> {
        let Some(first) = enforcers.first() else {
            return Vec::new();
        };
        first
            .unused()
            .into_iter()
            .filter(|u| enforcers.iter().all(|e| e.unused().contains(u)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FN: &str = "arn:aws:lambda:us-east-1:123456789012:function:s3sweep";

    fn role() -> Policy {
        Policy::from_value(&json!([
            {"Version": "2012-10-17", "Statement": [
                {"Sid": "Get", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"},
                {"Sid": "Session", "Effect": "Allow", "Action": ["s3express:CreateSession"],
                 "Resource": "arn:aws:s3express:us-east-1:123456789012:bucket/d--use1-az4--x-s3",
                 "Condition": {"StringEquals": {"s3express:SessionMode": "ReadOnly"}}}
            ]},
            {"Statement": {"Sid": "Delete", "Effect": "Allow", "Action": "lambda:DeleteFunction", "Resource": format!("{FN}:*")}}
        ]))
        .unwrap()
    }

    fn allowed(p: &Policy, action: &str, resource: &str, context: &[(&str, &str)]) -> bool {
        matches!(
            p.evaluate(&Request {
                action,
                resource,
                context
            }),
            Decision::Allowed { .. }
        )
    }

    #[test]
    fn wildcards_match_as_iam_matches() {
        assert!(matches("arn:aws:s3:::b/*", "arn:aws:s3:::b/a/b/c", false));
        assert!(matches("*", "", false));
        assert!(matches("a?c", "abc", false));
        assert!(!matches("a?c", "ac", false));
        assert!(matches("s3:Get*", "s3:getobject", true));
        assert!(!matches("s3:Get*", "s3:getobject", false));
        assert!(matches("a*b*c", "aXXbYYbc", false));
        assert!(!matches("a*b*c", "aXXbYYb", false));
        assert!(!matches("arn:aws:s3:::b", "arn:aws:s3:::b/k", false));
    }

    #[test]
    fn a_version_is_not_the_unqualified_function() {
        let p = role();
        assert!(allowed(&p, "lambda:DeleteFunction", &format!("{FN}:3"), &[]));
        // The unqualified function (no version, no Qualifier): refused.
        assert!(!allowed(&p, "lambda:DeleteFunction", FN, &[]));
        assert!(!allowed(&p, "lambda:InvokeFunction", &format!("{FN}:3"), &[]));
        // Actions are case-insensitive, resources are not.
        assert!(allowed(&p, "LAMBDA:deletefunction", &format!("{FN}:3"), &[]));
        assert!(!allowed(
            &p,
            "lambda:DeleteFunction",
            &format!("{}:3", FN.to_uppercase()),
            &[]
        ));
    }

    #[test]
    fn conditions_are_checked_and_a_missing_key_fails_string_equals() {
        let p = role();
        let bucket = "arn:aws:s3express:us-east-1:123456789012:bucket/d--use1-az4--x-s3";
        let ro = [("s3express:SessionMode", "ReadOnly")];
        let rw = [("s3express:SessionMode", "ReadWrite")];
        assert!(allowed(&p, "s3express:CreateSession", bucket, &ro));
        assert!(!allowed(&p, "s3express:CreateSession", bucket, &rw));
        assert!(!allowed(&p, "s3express:CreateSession", bucket, &[]));
    }

    #[test]
    fn deny_wins_and_not_action_and_not_resource_invert() {
        let p = Policy::from_json(
            r#"{"Statement": [
                {"Effect": "Allow", "NotAction": "s3:Delete*", "Resource": "*"},
                {"Sid": "NoSecret", "Effect": "Deny", "Action": "*", "Resource": "arn:aws:s3:::b/secret*"},
                {"Effect": "Allow", "Action": "s3:DeleteObject", "NotResource": "arn:aws:s3:::b/keep/*"}
            ]}"#,
        )
        .unwrap();
        assert!(allowed(&p, "s3:GetObject", "arn:aws:s3:::b/k", &[]));
        assert!(!allowed(&p, "s3:GetObject", "arn:aws:s3:::b/secret-1", &[]));
        assert!(allowed(&p, "s3:DeleteObject", "arn:aws:s3:::b/tmp/1", &[]));
        assert!(!allowed(&p, "s3:DeleteObject", "arn:aws:s3:::b/keep/1", &[]));
        let e = Enforcer::new(p);
        let d = e.authorize("s3:GetObject", "arn:aws:s3:::b/secret-1", &[]).unwrap_err();
        assert_eq!(d.denied_by.as_deref(), Some("NoSecret"));
        assert!(d.message(true).contains("with an explicit deny"), "{}", d.message(true));
    }

    #[test]
    fn a_refusal_names_action_and_resource_and_unused_permissions_are_reported() {
        let e = Enforcer::new(role());
        e.authorize("lambda:DeleteFunction", &format!("{FN}:2"), &[]).unwrap();
        let d = e.authorize("lambda:DeleteFunction", FN, &[]).unwrap_err();
        assert_eq!(
            d.message(false),
            format!("User: {DEFAULT_PRINCIPAL} is not authorized to perform: lambda:DeleteFunction on resource: {FN} because no identity-based policy allows the lambda:DeleteFunction action")
        );
        assert_eq!(e.denials(), vec![d]);
        assert_eq!(
            e.unused(),
            vec!["Get: s3:GetObject", "Session: s3express:CreateSession"]
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        let err = Policy::from_value(&json!({"Statement": [
            {"Effect": "Maybe", "Action": 3, "Resource": "*"},
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*", "NotResource": "*"},
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*", "Condition": {"NumericLessThan": {"k": "1"}}}
        ]}))
        .unwrap_err()
        .to_string();
        for want in [
            "Statement[0].Effect",
            "Statement[0].Action",
            "Statement[1]: both Resource and NotResource",
            "Statement[2].Condition.NumericLessThan",
        ] {
            assert!(err.contains(want), "{want} in {err}");
        }
        assert!(Policy::from_json("[]").is_err());
    }
}

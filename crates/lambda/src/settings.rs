//! Every setting of the function, read once from its environment at start-up: the S3
//! endpoint and credentials, the deadline's safety margin, and the fan-out limits. A
//! bad variable is named with what it should be; nothing is read from the environment
//! anywhere else in the function.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::{Deployment, NetworkPath, Substrate, SubstrateInfo};
use crate::s3::lab_client;

use super::control::PollSettings;
use crate::plan::{FieldProblem, Plan, MAX_INVOCATIONS};
use crate::s3::{ClientOptions, CredentialSource};

/// `S3SWEEP_CREDENTIALS`: which keys sign requests to an overridden endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credentials {
    /// The embedded server's fixed keys (`lab`, as the CLI's `--credentials lab` and
    /// the result's `"credentials": "lab"`; `local` is an alias; the default with an
    /// endpoint).
    Lab,
    /// The function's role or the standard chain (`chain`).
    Chain,
}

/// Environment variable: S3 endpoint URL overriding AWS's own (e.g. the embedded server).
pub const ENDPOINT_ENV: &str = "S3SWEEP_ENDPOINT_URL";
/// Environment variable: `lab` (the embedded server's fixed credentials, the default
/// with an endpoint override; `local` is accepted as an alias) or `chain` (the
/// function's role / standard chain), the names of the CLI's `--credentials`.
pub const CREDENTIALS_ENV: &str = "S3SWEEP_CREDENTIALS";
/// Environment variable: a PEM file of CA certificates the S3 client trusts besides
/// the webpki roots (the name the AWS CLI and SDKs use).
pub const CA_BUNDLE_ENV: &str = "AWS_CA_BUNDLE";
/// Environment variable: where every invocation's result is written
/// (`s3://bucket/prefix`, template parameter `ResultsBucket`) when its event gives no
/// `results_uri`.
pub const RESULTS_URI_ENV: &str = "S3SWEEP_RESULTS_URI";
/// Environment variable: the CloudWatch namespace of the metrics the function logs in
/// embedded metric format when its event gives no `metrics_namespace` (template
/// parameter `MetricsNamespace`); unset or empty: none.
pub(crate) const METRICS_NAMESPACE_ENV: &str = "S3SWEEP_METRICS_NAMESPACE";
/// Environment variable: safety margin before the deadline, in milliseconds.
pub const SAFETY_MARGIN_ENV: &str = "S3SWEEP_SAFETY_MARGIN_MS";

/// Default time kept free before the invocation's deadline: the result still has to
/// be serialised and returned.
pub(crate) const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_secs(5);
/// Largest accepted `S3SWEEP_SAFETY_MARGIN_MS` (10 minutes).
pub(crate) const MAX_SAFETY_MARGIN_MS: u64 = 600_000;
/// Longest remaining time a real invocation can have: Lambda's 900 s timeout plus a
/// little clock skew. A deadline further away (or already past) is not a real one
/// (`cargo lambda watch` sends such deadlines) and is treated as unknown.
pub(crate) const MAX_PLAUSIBLE_REMAINING: Duration = Duration::from_secs(905);

/// Environment variable: most invocations one fan-out may ask for (template
/// parameter `FanoutMax`). Default [`DEFAULT_FANOUT_MAX`].
pub(crate) const FANOUT_MAX_ENV: &str = "S3SWEEP_FANOUT_MAX";
/// Environment variable: the function the coordinator invokes, instead of its own
/// `AWS_LAMBDA_FUNCTION_NAME` (for the emulator, whose function name is the binary's).
pub const FUNCTION_ENV: &str = "S3SWEEP_FANOUT_FUNCTION";
/// Environment variable, tests only: the child with this index gets an event with an
/// unknown field, so its invocation really fails (`InvalidEvent`) through the Invoke
/// API. Read by debug builds only (the tests run the binaries `cargo test` and `cargo
/// lambda watch` build); a release build, as deployed, has no such switch.
#[cfg(debug_assertions)]
pub(crate) const TEST_BREAK_CHILD_ENV: &str = "S3SWEEP_FANOUT_TEST_BREAK_CHILD";
/// Environment variable: how often a memory sweep reads the function's
/// `LastUpdateStatus` while an update runs, ms (default 1,000; at most 10,000). The
/// wait is bounded at two minutes whatever the interval.
pub const MEMORY_POLL_ENV: &str = "S3SWEEP_MEMORY_POLL_MS";
/// Environment variable: how the template deployed the function, `default` or `vpc`
/// (template parameter `SubnetIds`), recorded as `environment.lambda.deployment`.
pub(crate) const NETWORK_PATH_ENV: &str = "S3SWEEP_NETWORK_PATH";
/// Environment variable: the zone ids of the function's subnets, comma-separated
/// (template parameter `SubnetZoneIds`; the template cannot look them up itself).
pub(crate) const SUBNET_ZONE_IDS_ENV: &str = "S3SWEEP_SUBNET_ZONE_IDS";
/// Default of [`FANOUT_MAX_ENV`].
pub(crate) const DEFAULT_FANOUT_MAX: u32 = 10;
/// Wait for an invocation when the coordinator has no deadline (the emulator): Lambda's
/// 900 s limit plus a little.
pub(crate) const NO_DEADLINE_INVOKE_LIMIT: Duration = Duration::from_secs(930);

/// The function's settings, read once from its environment at start-up.
#[derive(Debug, Clone)]
pub struct FunctionSettings {
    /// How to build the one S3 client.
    pub client: ClientOptions,
    /// Kept free before the deadline. Default [`DEFAULT_SAFETY_MARGIN`].
    pub safety_margin: Duration,
    /// `AWS_REGION` of the function, recorded in the result.
    pub region: Option<String>,
    /// Fan-out: the most invocations, the function to invoke.
    pub fanout: FanoutSettings,
    /// A memory sweep's wait for each configuration update ([`MEMORY_POLL_ENV`]).
    pub memory_poll: PollSettings,
    /// Where results are written when the event says nothing ([`RESULTS_URI_ENV`]).
    pub results_uri: Option<crate::plan::ResultsUri>,
    /// The namespace of the metrics logged when the event names none
    /// ([`METRICS_NAMESPACE_ENV`]).
    pub metrics_namespace: Option<String>,
    /// The network path the template deployed the function with
    /// ([`NETWORK_PATH_ENV`], [`SUBNET_ZONE_IDS_ENV`]); `None` when it did not say.
    pub deployment: Option<Deployment>,
    /// Lambda or Lambda Managed Instances ([`MAX_CONCURRENCY_ENV`]), and the instance
    /// when the machine names it.
    pub substrate: SubstrateInfo,
}

/// Set by Lambda on Lambda Managed Instances only ([`crate::sys::cpu::MAX_CONCURRENCY_ENV`]).
pub(crate) use crate::sys::cpu::MAX_CONCURRENCY_ENV;
/// The EC2 instance type on a Nitro instance (DMI product name), when not hidden.
const INSTANCE_TYPE_FILE: &str = "/sys/devices/virtual/dmi/id/product_name";

/// The substrate from [`MAX_CONCURRENCY_ENV`] (set: Managed Instances), the DMI
/// product name (kept only when it looks like an instance type, `family.size`) and
/// the vCPUs the process can run on.
pub(crate) fn substrate_of(max_concurrency: Option<String>, product: Option<String>, vcpus: u32) -> SubstrateInfo {
    let kind = if max_concurrency.is_some() {
        Substrate::ManagedInstances
    } else {
        Substrate::Lambda
    };
    let looks_like_type = |t: &String| {
        let mut parts = t.split('.');
        let (family, size) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        parts.next().is_none()
            && family.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && !size.is_empty()
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    };
    SubstrateInfo {
        kind,
        max_concurrency: max_concurrency.and_then(|v| v.trim().parse().ok()),
        instance_type: product.map(|p| p.trim().to_string()).filter(looks_like_type),
        vcpus: Some(vcpus),
    }
}

/// A function environment that cannot work. Every bad variable is named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid function environment: {}", .problems.join("; "))]
pub struct SettingsError {
    pub problems: Vec<String>,
}

impl FunctionSettings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a map in tests).
    /// Empty values count as unset, so a template can pass an empty parameter.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION"));
        let client = client_options(&get, region.clone(), &mut problems);
        let safety_margin = safety_margin(get(SAFETY_MARGIN_ENV), &mut problems);
        let memory_poll = memory_poll(get(MEMORY_POLL_ENV), &mut problems);
        let results_uri = get(RESULTS_URI_ENV).and_then(|text| {
            crate::plan::ResultsUri::parse(&text)
                .map_err(|e| problems.push(format!("{RESULTS_URI_ENV}: {e}")))
                .ok()
        });
        let metrics_namespace = get(METRICS_NAMESPACE_ENV).and_then(|text| {
            crate::plan::check_metrics_namespace(&text)
                .map_err(|e| problems.push(format!("{METRICS_NAMESPACE_ENV}: {e}")))
                .ok()
                .map(|()| text)
        });
        let deployment = deployment(get(NETWORK_PATH_ENV), get(SUBNET_ZONE_IDS_ENV), &mut problems);
        let vcpus = crate::sys::usage::vcpus() as u32;
        let product = std::fs::read_to_string(INSTANCE_TYPE_FILE).ok();
        let substrate = substrate_of(get(MAX_CONCURRENCY_ENV), product, vcpus);
        let fanout = FanoutSettings::from_lookup(get, &mut problems);
        if problems.is_empty() {
            Ok(FunctionSettings {
                client,
                safety_margin,
                region,
                fanout,
                memory_poll,
                results_uri,
                metrics_namespace,
                deployment,
                substrate,
            })
        } else {
            Err(SettingsError { problems })
        }
    }
}

/// The S3 client's options from the environment: the endpoint (a lab, or AWS), the
/// credentials (the lab's fixed keys, or the function's role) and the CA bundle;
/// what is wrong with them goes into `problems`.
fn client_options(
    get: &impl Fn(&str) -> Option<String>,
    region: Option<String>,
    problems: &mut Vec<String>,
) -> ClientOptions {
    let endpoint = get(ENDPOINT_ENV);
    let credentials = match get(CREDENTIALS_ENV).as_deref() {
        None => None,
        Some("chain") => Some(Credentials::Chain),
        Some("lab" | "local") => Some(Credentials::Lab),
        Some(other) => {
            problems.push(format!(
                "{CREDENTIALS_ENV}={other:?}: must be \"lab\" (the embedded server's fixed credentials; \"local\" is an alias) or \"chain\" (the function's role)"
            ));
            None
        }
    };
    let client = match endpoint {
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                problems.push(format!(
                    "{ENDPOINT_ENV}={url:?}: must be an http:// or https:// URL, e.g. http://127.0.0.1:9000"
                ));
            }
            match credentials.unwrap_or(Credentials::Lab) {
                Credentials::Lab => lab_client::client_options(url),
                Credentials::Chain => ClientOptions::for_endpoint(Some(url), region, CredentialSource::Chain),
            }
        }
        None => {
            if credentials == Some(Credentials::Lab) {
                problems.push(format!(
                    "{CREDENTIALS_ENV}=lab: the lab's fixed credentials only work with {ENDPOINT_ENV} pointing at an s3sweep server; unset it to use the function's role"
                ));
            }
            ClientOptions::aws()
        }
    };
    let ca_file = get(CA_BUNDLE_ENV).map(std::path::PathBuf::from);
    if let Some(path) = ca_file.as_ref().filter(|p| !p.is_file()) {
        problems.push(format!(
            "{CA_BUNDLE_ENV}={}: no such file (a PEM file of CA certificates to trust)",
            path.display()
        ));
    }
    client.with_ca_file(ca_file)
}

/// [`SAFETY_MARGIN_ENV`]'s value, or [`DEFAULT_SAFETY_MARGIN`] (also when it is bad:
/// reported in `problems`).
fn safety_margin(text: Option<String>, problems: &mut Vec<String>) -> Duration {
    let Some(text) = text else {
        return DEFAULT_SAFETY_MARGIN;
    };
    match text.parse::<u64>() {
        Ok(ms) if ms <= MAX_SAFETY_MARGIN_MS => Duration::from_millis(ms),
        _ => {
            problems.push(format!(
                "{SAFETY_MARGIN_ENV}={text:?}: must be a whole number of milliseconds from 0 to {MAX_SAFETY_MARGIN_MS}"
            ));
            DEFAULT_SAFETY_MARGIN
        }
    }
}

/// The deployment's network path: [`NETWORK_PATH_ENV`] (`default` or `vpc`) with the
/// zone ids of [`SUBNET_ZONE_IDS_ENV`] (only with `vpc`); `None` when unset.
fn deployment(path: Option<String>, zones: Option<String>, problems: &mut Vec<String>) -> Option<Deployment> {
    let subnet_zone_ids: Vec<String> = zones
        .iter()
        .flat_map(|z| z.split(','))
        .map(|z| z.trim().to_string())
        .filter(|z| !z.is_empty())
        .collect();
    let network_path = match path.as_deref().map(NetworkPath::from_name) {
        None if subnet_zone_ids.is_empty() => return None,
        None => {
            problems.push(format!(
                "{SUBNET_ZONE_IDS_ENV} is set but {NETWORK_PATH_ENV} is not: set it to \"vpc\""
            ));
            return None;
        }
        Some(None) => {
            problems.push(format!(
                "{NETWORK_PATH_ENV}={:?}: must be \"default\" or \"vpc\"",
                path.unwrap_or_default()
            ));
            return None;
        }
        Some(Some(p)) => p,
    };
    if network_path == NetworkPath::Default && !subnet_zone_ids.is_empty() {
        problems.push(format!(
            "{SUBNET_ZONE_IDS_ENV}={:?}: zone ids belong to subnets, but {NETWORK_PATH_ENV} is \"default\"",
            subnet_zone_ids.join(",")
        ));
    }
    Some(Deployment {
        network_path,
        subnet_zone_ids,
    })
}

/// The memory sweep's polling, with [`MEMORY_POLL_ENV`]'s interval when set and good.
fn memory_poll(text: Option<String>, problems: &mut Vec<String>) -> PollSettings {
    let mut poll = PollSettings::default();
    if let Some(text) = text {
        match text.parse::<u64>() {
            Ok(ms) if (1..=10_000).contains(&ms) => poll.interval = Duration::from_millis(ms),
            _ => problems.push(format!(
                "{MEMORY_POLL_ENV}={text:?}: must be a whole number of milliseconds from 1 to 10000"
            )),
        }
    }
    poll
}

/// The fan-out settings of the function, from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanoutSettings {
    /// Most invocations per fan-out ([`FANOUT_MAX_ENV`], default [`DEFAULT_FANOUT_MAX`]).
    pub max_invocations: u32,
    /// [`FUNCTION_ENV`]: the function to invoke instead of this one (the emulator,
    /// whose function is named after its binary and has no real ARN).
    pub function_override: Option<String>,
    /// `AWS_LAMBDA_FUNCTION_NAME`.
    pub function_name: Option<String>,
    /// `AWS_LAMBDA_FUNCTION_VERSION`: the version running (`$LATEST` or a number).
    pub function_version: Option<String>,
    /// Tests only, debug builds only ([`TEST_BREAK_CHILD_ENV`]).
    #[cfg(debug_assertions)]
    pub break_child: Option<u32>,
}

impl Default for FanoutSettings {
    fn default() -> Self {
        FanoutSettings {
            max_invocations: DEFAULT_FANOUT_MAX,
            function_override: None,
            function_name: None,
            function_version: None,
            #[cfg(debug_assertions)]
            break_child: None,
        }
    }
}

impl FanoutSettings {
    /// Reads the settings through `get` (empty values already removed), adding a
    /// message per bad variable to `problems`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> Self {
        let mut settings = FanoutSettings {
            function_override: get(FUNCTION_ENV),
            function_name: get("AWS_LAMBDA_FUNCTION_NAME"),
            function_version: get("AWS_LAMBDA_FUNCTION_VERSION"),
            ..FanoutSettings::default()
        };
        if let Some(text) = get(FANOUT_MAX_ENV) {
            match text.parse::<u32>() {
                Ok(n) if (1..=MAX_INVOCATIONS).contains(&n) => settings.max_invocations = n,
                _ => problems.push(format!(
                    "{FANOUT_MAX_ENV}={text:?}: must be a whole number from 1 to {MAX_INVOCATIONS} (template parameter FanoutMax)"
                )),
            }
        }
        #[cfg(debug_assertions)]
        if let Some(text) = get(TEST_BREAK_CHILD_ENV) {
            match text.parse::<u32>() {
                Ok(n) => settings.break_child = Some(n),
                Err(_) => problems.push(format!("{TEST_BREAK_CHILD_ENV}={text:?}: must be a child index")),
            }
        }
        settings
    }

    /// The function the children run: [`FUNCTION_ENV`] when set; else this function's
    /// own ARN (`invoked_function_arn` of the invocation) qualified with the version
    /// running, so children run exactly the coordinator's code even when it was
    /// invoked through an alias or a version (an unqualified name would run
    /// `$LATEST`); else its name. `None` when none is known.
    pub fn target(&self, invoked_function_arn: &str) -> Option<String> {
        if let Some(f) = &self.function_override {
            return Some(f.clone());
        }
        // arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]
        let parts: Vec<&str> = invoked_function_arn.split(':').collect();
        if parts.len() >= 7 && parts[0] == "arn" && parts[2] == "lambda" && parts[5] == "function" {
            let unqualified = parts[..7].join(":");
            let qualifier = self.function_version.as_deref().or(parts.get(7).copied());
            return Some(match qualifier {
                Some(q) => format!("{unqualified}:{q}"),
                None => unqualified,
            });
        }
        self.function_name.clone()
    }

    /// The function whose configuration a memory sweep changes: [`FUNCTION_ENV`] when
    /// set, else this function's unqualified ARN (from `invoked_function_arn`), else
    /// its name. `None` when none is known.
    pub fn unqualified(&self, invoked_function_arn: &str) -> Option<String> {
        if let Some(f) = &self.function_override {
            return Some(f.clone());
        }
        let parts: Vec<&str> = invoked_function_arn.split(':').collect();
        if parts.len() >= 7 && parts[0] == "arn" && parts[2] == "lambda" && parts[5] == "function" {
            return Some(parts[..7].join(":"));
        }
        self.function_name.clone()
    }

    /// The one limit only the function knows: `fanout.invocations` against `FanoutMax`.
    pub fn check(&self, plan: &Plan) -> Option<FieldProblem> {
        let f = plan.fanout()?;
        (f.invocations > self.max_invocations).then(|| FieldProblem {
            field: "fanout.invocations".into(),
            message: format!(
                "{} invocations asked for; this function allows at most {} ({FANOUT_MAX_ENV}, template parameter FanoutMax): ask for fewer, or redeploy with a larger FanoutMax (and enough reserved or account concurrency)",
                f.invocations, self.max_invocations
            ),
        })
    }
}

/// Time left before `deadline_unix_ms` (the invocation context's deadline), or `None`
/// when that deadline is not one a real invocation can have: already past, or more
/// than [`MAX_PLAUSIBLE_REMAINING`] away. `None` means "run without a deadline".
pub fn remaining_time(deadline_unix_ms: u64, now: SystemTime) -> Option<Duration> {
    let deadline = UNIX_EPOCH.checked_add(Duration::from_millis(deadline_unix_ms))?;
    let left = deadline.duration_since(now).ok()?;
    (!left.is_zero() && left <= MAX_PLAUSIBLE_REMAINING).then_some(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<FunctionSettings, SettingsError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        FunctionSettings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn without_an_override_the_function_talks_to_aws_with_its_role() {
        let s = settings(&[("AWS_REGION", "eu-west-1")]).unwrap();
        assert_eq!(s.client.endpoint, None);
        assert_eq!(s.client.credentials, CredentialSource::Chain);
        assert_eq!(s.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.safety_margin, DEFAULT_SAFETY_MARGIN);
        // An empty override (a template parameter left blank) is no override.
        let s = settings(&[(ENDPOINT_ENV, " ")]).unwrap();
        assert_eq!(s.client.endpoint, None);
    }

    #[test]
    fn the_network_path_is_read_and_bad_values_are_named() {
        assert_eq!(settings(&[]).unwrap().deployment, None);
        let s = settings(&[(NETWORK_PATH_ENV, "vpc"), (SUBNET_ZONE_IDS_ENV, "use1-az4, use1-az6")]).unwrap();
        let d = s.deployment.unwrap();
        assert_eq!(d.network_path, NetworkPath::Vpc);
        assert_eq!(d.subnet_zone_ids, ["use1-az4", "use1-az6"]);
        let d = settings(&[(NETWORK_PATH_ENV, "default")]).unwrap().deployment.unwrap();
        assert_eq!(d.network_path, NetworkPath::Default);
        let e = settings(&[(NETWORK_PATH_ENV, "nat")]).unwrap_err().to_string();
        assert!(e.contains("S3SWEEP_NETWORK_PATH=\"nat\""), "{e}");
        let e = settings(&[(SUBNET_ZONE_IDS_ENV, "use1-az4")]).unwrap_err().to_string();
        assert!(e.contains("S3SWEEP_NETWORK_PATH is not"), "{e}");
        let e = settings(&[(NETWORK_PATH_ENV, "default"), (SUBNET_ZONE_IDS_ENV, "use1-az4")]).unwrap_err();
        assert!(e.to_string().contains("S3SWEEP_SUBNET_ZONE_IDS"), "{e}");
    }

    #[test]
    fn the_override_uses_local_credentials_unless_chain_is_asked_for() {
        let s = settings(&[(ENDPOINT_ENV, "http://127.0.0.1:9000")]).unwrap();
        assert_eq!(s.client.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(s.client.credentials, lab_client::credentials());
        assert_eq!(s.client.ca_file, None);
        let ca = std::env::temp_dir().join(format!("s3sweep-settings-ca-{}.pem", std::process::id()));
        std::fs::write(&ca, "").unwrap();
        let s = settings(&[
            (ENDPOINT_ENV, "https://127.0.0.1:9000"),
            (CA_BUNDLE_ENV, ca.to_str().unwrap()),
        ])
        .unwrap();
        assert_eq!(s.client.ca_file.as_deref(), Some(ca.as_path()));
        std::fs::remove_file(&ca).unwrap();
        let s = settings(&[
            (ENDPOINT_ENV, "https://s3.example.test"),
            (CREDENTIALS_ENV, "chain"),
            ("AWS_REGION", "us-west-2"),
            (SAFETY_MARGIN_ENV, "250"),
        ])
        .unwrap();
        assert_eq!(s.client.credentials, CredentialSource::Chain);
        assert_eq!(s.client.region.as_deref(), Some("us-west-2"));
        assert_eq!(s.safety_margin, Duration::from_millis(250));
    }

    #[test]
    fn every_bad_variable_is_named() {
        let err = settings(&[
            (ENDPOINT_ENV, "127.0.0.1:9000"),
            (CREDENTIALS_ENV, "root"),
            (SAFETY_MARGIN_ENV, "-1"),
            (CA_BUNDLE_ENV, "/no/such/ca.pem"),
            (RESULTS_URI_ENV, "my-results/runs"),
        ])
        .unwrap_err();
        let text = err.to_string();
        for name in [
            ENDPOINT_ENV,
            CREDENTIALS_ENV,
            SAFETY_MARGIN_ENV,
            CA_BUNDLE_ENV,
            RESULTS_URI_ENV,
        ] {
            assert!(text.contains(name), "{name} not named in {text}");
        }
        assert!(text.contains("/no/such/ca.pem"), "{text}");
        assert_eq!(err.problems.len(), 5);
        let ok = settings(&[(RESULTS_URI_ENV, "s3://my-results/runs/")]).unwrap();
        assert_eq!(
            ok.results_uri.map(|u| u.object("r-1").to_string()).as_deref(),
            Some("s3://my-results/runs/r-1.json")
        );
        // `lab` is the name the CLI and the result use; `local` stays an alias.
        for name in ["lab", "local"] {
            let err = settings(&[(CREDENTIALS_ENV, name)]).unwrap_err();
            assert!(err.to_string().contains(ENDPOINT_ENV), "{err}");
            let ok = settings(&[(CREDENTIALS_ENV, name), (ENDPOINT_ENV, "http://127.0.0.1:9000")]);
            assert!(ok.is_ok(), "{name}: {ok:?}");
        }
        let err = settings(&[(SAFETY_MARGIN_ENV, "600001")]).unwrap_err();
        assert!(err.to_string().contains(SAFETY_MARGIN_ENV), "{err}");
    }

    #[test]
    fn only_plausible_deadlines_count() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert_eq!(
            remaining_time(ms(now + Duration::from_secs(60)), now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            remaining_time(ms(now + Duration::from_secs(900)), now),
            Some(Duration::from_secs(900))
        );
        // Past, now, zero, and further than any Lambda timeout: unknown.
        assert_eq!(remaining_time(ms(now - Duration::from_secs(1)), now), None);
        assert_eq!(remaining_time(ms(now), now), None);
        assert_eq!(remaining_time(0, now), None);
        assert_eq!(remaining_time(ms(now + Duration::from_secs(906)), now), None);
        assert_eq!(remaining_time(ms(now + Duration::from_secs(86_400 * 365)), now), None);
        assert_eq!(remaining_time(u64::MAX, now), None);
    }

    #[test]
    fn settings_cap_the_invocations() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let mut problems = Vec::new();
        let s = FanoutSettings::from_lookup(
            env(&[(FANOUT_MAX_ENV, "2"), ("AWS_LAMBDA_FUNCTION_NAME", "s3sweep-fn")]),
            &mut problems,
        );
        assert!(problems.is_empty());
        assert_eq!(s.function_name.as_deref(), Some("s3sweep-fn"));
        assert_eq!(s.target(""), Some("s3sweep-fn".into()), "no ARN: the name");
        let p = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 3}})).unwrap();
        let problem = s.check(&p).unwrap();
        assert_eq!(problem.field, "fanout.invocations");
        assert!(problem.message.contains("FanoutMax"), "{}", problem.message);
        let s = FanoutSettings::from_lookup(env(&[(FANOUT_MAX_ENV, "0"), (FUNCTION_ENV, "other")]), &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains(FANOUT_MAX_ENV));
        assert_eq!(
            s.target("arn:aws:lambda:us-east-1:123:function:f:7"),
            Some("other".into())
        );
    }

    #[cfg(debug_assertions)]
    #[test]
    fn the_test_switch_is_read_in_debug_builds() {
        let mut problems = Vec::new();
        let s = FanoutSettings::from_lookup(|n: &str| (n == TEST_BREAK_CHILD_ENV).then(|| "1".into()), &mut problems);
        assert_eq!(s.break_child, Some(1));
        FanoutSettings::from_lookup(|n: &str| (n == TEST_BREAK_CHILD_ENV).then(|| "x".into()), &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains(TEST_BREAK_CHILD_ENV));
    }

    #[test]
    fn children_run_the_coordinators_own_version() {
        let arn = "arn:aws:lambda:eu-west-1:123456789012:function:s3sweep";
        let mut problems = Vec::new();
        let running = |version: &'static str| {
            let v = [
                ("AWS_LAMBDA_FUNCTION_NAME", "s3sweep"),
                ("AWS_LAMBDA_FUNCTION_VERSION", version),
            ];
            move |name: &str| v.iter().find(|(k, _)| *k == name).map(|(_, x)| x.to_string())
        };
        let s = FanoutSettings::from_lookup(running("7"), &mut problems);
        // Invoked through an alias: the children run version 7, not the alias (which
        // may route elsewhere) and not $LATEST.
        assert_eq!(s.target(&format!("{arn}:live")), Some(format!("{arn}:7")));
        assert_eq!(s.target(arn), Some(format!("{arn}:7")));
        let s = FanoutSettings::from_lookup(running("$LATEST"), &mut problems);
        assert_eq!(s.target(arn), Some(format!("{arn}:$LATEST")));
        // No version in the environment: the ARN as invoked.
        let s = FanoutSettings::from_lookup(
            |n: &str| (n == "AWS_LAMBDA_FUNCTION_NAME").then(|| "s3sweep".into()),
            &mut problems,
        );
        assert_eq!(s.target(&format!("{arn}:3")), Some(format!("{arn}:3")));
        assert_eq!(s.target("not-an-arn"), Some("s3sweep".into()));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(FanoutSettings::default().target(""), None);
    }
}

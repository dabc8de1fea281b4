//! Where a Lambda invocation ran and what ran beside it: the function's facts
//! (`environment.lambda`: name, memory, cold start, init time, ...), the substrate
//! (Lambda, or Lambda Managed Instances, whose execution environments take several
//! invocations at once), the instance when the function can see it, and for each row
//! how many other invocations of the same process overlapped it (issue 50).

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;
use super::request::Architecture;
use super::stats::tidy;

/// Facts of the Lambda function that ran the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LambdaEnvironment {
    pub function_name: Option<String>,
    pub function_version: Option<String>,
    pub memory_size_mb: Option<u32>,
    /// True for the first invocation of this execution environment.
    pub cold_start: bool,
    #[serde(default)]
    pub architecture: Option<Architecture>,
    /// `AWS_REGION` of the function.
    #[serde(default)]
    pub region: Option<String>,
    /// The invocation's request id.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Time left before the invocation's deadline when the handler started; `None`
    /// when the deadline was not plausible (e.g. under `cargo lambda watch`) and the
    /// sweep ran without one.
    #[serde(default)]
    pub remaining_ms_at_start: Option<u64>,
    /// Kept free before the deadline: no configuration starts unless it is expected
    /// to finish this long before the deadline.
    #[serde(default)]
    pub safety_margin_ms: u64,
    /// The network path the function was deployed with (absent when the template did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<super::Deployment>,
    /// Lambda or Lambda Managed Instances, and the instance when visible (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substrate: Option<SubstrateInfo>,
    /// This execution environment's init, as the function measured it: from its `main`
    /// to ready for its first event (logging, settings and the S3 client built). The
    /// same on every invocation of the environment; absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_us: Option<u64>,
}

closed_set! {
    /// What the function ran on (`environment.lambda.substrate.kind`).
    #[derive(Default)]
    pub enum Substrate {
        /// Lambda (default): one invocation at a time per execution environment, CPU in
        /// proportion to memory.
        #[default]
        Lambda = "lambda",
        /// Lambda Managed Instances: EC2 instances of a capacity provider; Lambda sets
        /// `AWS_LAMBDA_MAX_CONCURRENCY` and sends up to that many invocations to one
        /// execution environment at once.
        ManagedInstances = "managed_instances",
    }
}

/// The substrate of the invocation, with what the function could see of its machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubstrateInfo {
    pub kind: Substrate,
    /// `AWS_LAMBDA_MAX_CONCURRENCY`: invocations the execution environment takes at
    /// once (Managed Instances only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// The EC2 instance type (e.g. `c7gn.large`), when the machine names it
    /// (`/sys/devices/virtual/dmi/id/product_name` on Nitro); `None` where it is hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    /// vCPUs the process can run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpus: Option<u32>,
}

impl SubstrateInfo {
    /// In words: `Lambda Managed Instances on c7gn.large, 2 vCPUs, up to 8 invocations
    /// at once` (what is not known is left out).
    pub fn describe(&self) -> String {
        let mut s = match self.kind {
            Substrate::Lambda => "Lambda".to_string(),
            Substrate::ManagedInstances => "Lambda Managed Instances".to_string(),
        };
        if let Some(t) = &self.instance_type {
            s.push_str(&format!(" on {t}"));
        }
        if let Some(v) = self.vcpus {
            s.push_str(&format!(", {v} vCPUs"));
        }
        if let Some(c) = self.max_concurrency {
            s.push_str(&format!(", up to {c} invocations at once per execution environment"));
        }
        s
    }
}

/// Other invocations of the same process that ran while a row was measured (they
/// shared its CPU, its network interface and its connections' machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overlap {
    /// Other invocations that ran during any part of the row's wall time.
    pub other_invocations: u32,
    /// The part of the row's wall time during which at least one other invocation
    /// ran, 0 to 1.
    #[serde(serialize_with = "tidy::dec3")]
    pub overlapped_fraction: f64,
}

impl Overlap {
    /// True when another invocation ran for at least a tenth of the row: its figures
    /// are the two together, not this sweep's alone.
    pub fn shared(&self) -> bool {
        self.other_invocations > 0 && self.overlapped_fraction >= 0.1
    }
}

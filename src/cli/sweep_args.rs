//! The flags that are request fields: [`SweepArgs`], the ones `run` and `local` share
//! (flattened into both), and [`RunFieldArgs`], the ones only `run` has. Each struct is
//! both the clap flags and the request's fields: a field's Rust name is the request
//! field's (so it is the clap id and the serde name at once) and its `long` is the
//! flag. Serialized, a struct is the request fields its given flags set
//! ([`request_fields`]); a flag's name for an error is read back from clap
//! ([`flag_of`]). No mapping between flags and fields is written by hand. The CPU
//! quota's flags ([`QuotaArgs`]) are here too: its memory sizes are `memory_mb`.

use clap::{Args, Command};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::plan::Plan;
use crate::sys::cpu::{LAMBDA_MAX_VCPUS, LAMBDA_MB_PER_VCPU};
use crate::sys::quota::CpuQuota;

use super::client_args::ClientNetworkArgs;
use super::CliError;

/// The sweep's own flags, shared by `run` and `local` (`local` gives some of them
/// defaults of its own: [`super::args::LocalArgs`]).
#[derive(Args, Clone, Default, Serialize)]
pub struct SweepArgs {
    /// Objects read per configuration, per bucket (request `object_count`; `run`'s
    /// default: the event's, else 1000).
    #[arg(long = "objects", value_name = "N", value_parser = super::counts::count)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_count: Option<u32>,
    /// Worker counts, comma separated: `--workers 1,8,64` (request `workers`).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...", value_parser = super::counts::count)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<Vec<u32>>,
    /// Most connections per endpoint (request `pool_connections`; default: the
    /// largest --workers count when --workers is given and an event sets no pool, as
    /// `local` always does; else 20, the request's default, as for an event file and
    /// the Lambda).
    #[arg(long = "pool", value_name = "N", value_parser = super::counts::count)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_connections: Option<u32>,
    /// Repetitions of each configuration (request `repetitions`; `run`'s default: the
    /// event's, else 1).
    #[arg(long, value_name = "N", value_parser = super::counts::count)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// Read the first --objects keys listed under this prefix instead of numbered keys
    /// (request `key_prefix`; not with --key-template). The listing runs once per
    /// bucket before the sweep, untimed, and is reported apart; `local` writes its
    /// objects as PREFIX0, PREFIX1, ... first.
    #[arg(long = "prefix", value_name = "PREFIX")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_prefix: Option<String>,
    /// A size axis, bytes, comma separated (request `object_sizes_bytes`): size S is
    /// read at `s{S}/` + the key template (as `seed --object-sizes` writes it, and
    /// `local` seeds it); a table and a plot panel per size, e.g. `--object-sizes
    /// 4096,46080,1048576`. Not with --prefix (nor `local`'s --size or --sizes).
    #[arg(long = "object-sizes", value_delimiter = ',', value_name = "BYTES,...", value_parser = super::counts::bytes)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_sizes_bytes: Option<Vec<u64>>,
    /// Name the cheapest configuration whose median wall time is within this many ms
    /// in the cost summary (request `target_wall_ms`).
    #[arg(long, value_name = "MS", value_parser = super::counts::ms)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_wall_ms: Option<u64>,
    #[command(flatten)]
    #[serde(flatten)]
    pub client_net: ClientNetworkArgs,
}

impl SweepArgs {
    /// The pool a sweep of these flags gets when neither the flags nor an event name
    /// one: the largest --workers count (none without --workers). Serialized, for
    /// [`request_fields`].
    pub(crate) fn pool_default(&self) -> SweepArgs {
        let most = self
            .workers
            .as_ref()
            .map(|w| w.iter().copied().max().unwrap_or(1).max(1));
        SweepArgs {
            pool_connections: self.pool_connections.is_none().then_some(most).flatten(),
            ..SweepArgs::default()
        }
    }
}

/// The request flags only `run` has: the buckets (`local` has its own two) and where
/// keys and results are.
#[derive(Args, Clone, Default, Serialize)]
pub struct RunFieldArgs {
    /// A bucket to sweep; repeatable, swept in the order given (request `buckets`).
    #[arg(long = "bucket", value_name = "NAME")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<String>,
    /// Object key; `{i}` becomes 0..objects (request `key_template`; default
    /// `test/{i}/vectors`).
    #[arg(long, value_name = "TEMPLATE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_template: Option<String>,
    /// With --prefix: sweep the keys found when the prefix holds fewer than --objects
    /// (request `allow_fewer_keys`; without it that is an error naming both numbers).
    #[arg(long = "allow-fewer")]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_fewer_keys: bool,
    /// Write the result to S3 under this prefix (`s3://bucket/prefix`, request
    /// `results_uri`), at `<prefix>/<run id>.json`, after every configuration and at
    /// the end, through the same endpoint and keys as the sweep.
    #[arg(long, value_name = "S3_URI")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results_uri: Option<String>,
    /// Name the result written to S3 `<prefix>/<RUN_ID>.json` (request `run_id`: 1 to
    /// 64 letters, digits, `.`, `_` or `-`; default `cli-<ms>-<pid>`).
    #[arg(long, value_name = "RUN_ID")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// A CPU quota for the measuring client, to try a Lambda's CPU share on this machine.
/// Serialized, the memory sizes are the request's `memory_mb` ([`super::sweep_args`]).
#[derive(Args, Clone, Serialize)]
pub struct QuotaArgs {
    /// Run the client under a CPU quota of this many cores (a cgroup; needs permission
    /// to create one). The embedded server of `local` stays outside it.
    #[arg(long, value_name = "CORES", conflicts_with = "memory_mb", value_parser = super::counts::rate)]
    #[serde(skip)]
    pub cpu_quota: Option<f64>,
    /// The quota a Lambda function of this memory gets: MB / 1,769 cores (at most 6,
    /// and at most this machine's cores). Several sizes, comma separated
    /// (`512,1769,3538`), run the sweep once per size: an emulated memory sweep
    /// (request `memory_mb`).
    #[arg(long = "lambda-memory-mb", value_name = "MB,MB,...", value_delimiter = ',', value_parser = super::counts::memory_mb)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_mb: Vec<u32>,
}

/// One quota the client runs under: a memory size's share of CPU, or `--cpu-quota`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaStep {
    /// The Lambda memory size emulated (`None`: `--cpu-quota`).
    pub memory_mb: Option<u32>,
    /// Cores' worth of CPU time per second.
    pub cores: f64,
    /// The cores the size would get on Lambda, when this machine has fewer.
    pub capped_from: Option<f64>,
}

impl QuotaStep {
    /// Enters the quota; the client runs under it while the returned guard lives.
    pub fn enter(&self) -> Result<CpuQuota, CliError> {
        let flag = if self.memory_mb.is_some() {
            "--lambda-memory-mb"
        } else {
            "--cpu-quota"
        };
        let quota = CpuQuota::enter(self.cores).map_err(|e| CliError::flag(flag, e))?;
        match (self.memory_mb, self.capped_from) {
            (Some(mb), Some(wanted)) => eprintln!(
                "client CPU quota: {:.3} cores for {mb} MB (Lambda gives {wanted:.3}; this machine has only {:.0})",
                self.cores, self.cores
            ),
            (Some(mb), None) => eprintln!("client CPU quota: {:.3} cores for {mb} MB ({flag})", self.cores),
            (None, _) => eprintln!("client CPU quota: {:.3} cores ({flag})", self.cores),
        }
        Ok(quota)
    }
}

impl QuotaArgs {
    /// The quotas to run `plan` under: one per memory size of the plan (from
    /// --lambda-memory-mb or the request's `memory_mb`, checked when the plan was
    /// validated), or the one `--cpu-quota` (checked here), or none.
    pub fn steps(&self, plan: &Plan) -> Result<Vec<QuotaStep>, CliError> {
        if self.cpu_quota.is_none() && !plan.memory_mb().is_empty() {
            let machine = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            return Ok(plan
                .memory_mb()
                .iter()
                .map(|&mb| {
                    let wanted = (f64::from(mb) / LAMBDA_MB_PER_VCPU).min(LAMBDA_MAX_VCPUS);
                    QuotaStep {
                        memory_mb: Some(mb),
                        cores: wanted.min(machine),
                        capped_from: (wanted > machine).then_some(wanted),
                    }
                })
                .collect());
        }
        if let Some(cores) = self.cpu_quota {
            CpuQuota::check(cores).map_err(|e| CliError::flag("--cpu-quota", e))?;
        }
        Ok(self
            .cpu_quota
            .map(|cores| QuotaStep {
                memory_mb: None,
                cores,
                capped_from: None,
            })
            .into_iter()
            .collect())
    }
}

/// The request fields the flags given in `flags` set, by the request's own names.
pub(crate) fn request_fields<T: Serialize>(flags: &T) -> Map<String, Value> {
    match serde_json::to_value(flags) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Every flag that sets a request field, in one clap command: the structs above, the
/// client's network flags (inside [`SweepArgs`]) and the quota's memory sizes.
fn field_flags() -> Command {
    let cmd = Command::new("request-flags");
    QuotaArgs::augment_args(RunFieldArgs::augment_args(SweepArgs::augment_args(cmd)))
}

/// The flag that sets request field `field` (`--pool` for `pool_connections`): the
/// long of the clap argument whose id, the field's Rust name, is the field.
pub(crate) fn flag_of(field: &str) -> Option<String> {
    field_flags()
        .get_arguments()
        .find(|a| a.get_id() == field)
        .and_then(|a| a.get_long().map(|l| format!("--{l}")))
}

#[cfg(test)]
#[path = "sweep_args_tests.rs"]
mod tests;

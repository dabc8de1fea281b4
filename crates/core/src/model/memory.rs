//! The memory sweep's block of the result document (request field `memory_mb`): which
//! sizes ran and how (`lambda`: a published version per size; `emulated`: a local CPU
//! quota per size), every control-plane step and what was cleaned up afterwards, and
//! per bucket the fastest configuration and the cheapest memory x workers meeting
//! `target_wall_ms`. Contract only; the analysis fills `choices`.

use serde::{Deserialize, Serialize};

use super::closed_set::{closed_set, Outcome};
use super::stats::tidy;

closed_set! {
    /// How the memory sizes were run.
    pub enum MemoryMode {
        /// The function's memory set and a version published per size.
        Lambda = "lambda",
        /// Locally: the client under a CPU quota of `memory_mb` / 1,769 cores.
        Emulated = "emulated",
    }
}

/// `memory` of a result: one entry per memory size, the cleanup, the choices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySweepReport {
    pub mode: MemoryMode,
    /// The function whose memory was swept (`lambda` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_name: Option<String>,
    /// Its memory before the sweep, restored at the end (`lambda` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_memory_mb: Option<u32>,
    /// One per size, in the order run.
    pub steps: Vec<MemoryStep>,
    /// The versions this sweep published and then deleted (`lambda` mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions_deleted: Vec<String>,
    /// True when the original memory (and description) was put back (`lambda` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_restored: Option<bool>,
    /// The cleanup's failure (`lambda` mode), when a version could not be deleted or
    /// the function not put back: the rows measured are returned all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_error: Option<String>,
    /// Versions this sweep published and could not delete (`lambda` mode); their
    /// description holds the sweep's marker (docs/memory-sweep.md: removing them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions_left: Vec<String>,
    /// Per bucket: the fastest configuration and the cheapest meeting the target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<MemoryChoice>,
    /// What every (bucket, memory, workers) cost, at its own memory size (medians over
    /// repetitions), in the order run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<MemoryCost>,
}

/// The cost of one (bucket, memory, workers) configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCost {
    pub bucket: String,
    pub memory_mb: u32,
    pub workers: u32,
    /// Lambda GB-seconds: `memory_mb` / 1,024 x wall time, median over repetitions.
    #[serde(serialize_with = "tidy::sig4")]
    pub lambda_gb_s: f64,
    /// S3 requests plus those GB-seconds, per 1,000 GETs, median over repetitions.
    pub per_1000_gets_usd: f64,
    /// False when a repetition had failed requests (never chosen).
    pub clean: bool,
}

/// What happened at one memory size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryStep {
    pub memory_mb: u32,
    /// `emulated` mode: the CPU quota the client ran under, cores.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "tidy::sig4_opt")]
    pub cores: Option<f64>,
    /// `lambda` mode: the version published for this size and invoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub status: Outcome,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Configurations measured at this size.
    pub configurations: u32,
    /// The step's wall time (setting the memory, publishing, invoking), ms.
    #[serde(serialize_with = "tidy::dec3")]
    pub wall_ms: f64,
}

/// One (memory, workers) configuration of a bucket, medians over repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryConfig {
    pub memory_mb: u32,
    pub workers: u32,
    #[serde(serialize_with = "tidy::dec3")]
    pub wall_ms: f64,
    #[serde(serialize_with = "tidy::dec3")]
    pub objects_per_s: f64,
    /// S3 GETs plus the Lambda GB-seconds at `memory_mb`, per 1,000 GETs.
    pub per_1000_gets_usd: f64,
    /// The same per 1,000 objects read: what the cheapest is chosen by (0 in results
    /// written before it; those are read per GET).
    #[serde(default, skip_serializing_if = "unknown")]
    pub per_1000_objects_usd: f64,
}

/// A cost not in the document (results written before it): not written back.
fn unknown(usd: &f64) -> bool {
    *usd == 0.0
}

impl MemoryConfig {
    /// What ranks: the cost per 1,000 objects read (per GET in older results).
    pub fn ranking_usd(&self) -> f64 {
        if self.per_1000_objects_usd > 0.0 {
            self.per_1000_objects_usd
        } else {
            self.per_1000_gets_usd
        }
    }
}

/// A bucket's answer to "which memory and how many workers".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryChoice {
    pub bucket: String,
    /// Lowest median wall time (configurations without failed requests).
    pub fastest: Option<MemoryConfig>,
    /// The target the cheapest had to meet (`target_wall_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_wall_ms: Option<u64>,
    /// Lowest cost per 1,000 objects read among those meeting the target (without a
    /// target: among all); `None` when none meets it.
    pub cheapest: Option<MemoryConfig>,
    /// The axes of the rows chosen from, less the memory size (which is the
    /// choice): one answer per client; `sdk` (the default) is not written.
    #[serde(flatten)]
    pub axes: super::Axes,
}

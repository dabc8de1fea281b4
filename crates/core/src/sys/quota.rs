//! A CPU quota for this process, to try a Lambda's CPU share on a laptop: a cgroup of
//! our own with `cores` x 100 ms of CPU time per 100 ms period (cgroup v1
//! `cpu.cfs_quota_us`, or v2 `cpu.max`), which this process (all its threads) joins.
//! Processes started before joining (the embedded server of `s3sweep local`) stay
//! outside. Leaving the quota (dropping [`CpuQuota`]) moves the process back and
//! removes the cgroup. Needs permission to create cgroups (root, or a delegated
//! subtree); where there is none the error says so.

use std::path::{Path, PathBuf};

/// The scheduler period the quota is a share of, microseconds.
const PERIOD_US: u64 = 100_000;
/// Smallest quota accepted, cores (the kernel's minimum is 1 ms per period).
pub(crate) const MIN_QUOTA_CORES: f64 = 0.01;

/// Why a quota could not be set.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    #[error("must be a number of cores between {MIN_QUOTA_CORES} and {max}, got {got}")]
    OutOfRange { got: f64, max: f64 },
    #[error("cannot set a CPU quota here: {reasons}. It needs cgroups with the cpu controller and permission to create one (root, or a delegated cgroup); leave the quota out, or run where that is allowed")]
    Unavailable { reasons: String },
}

/// This process inside a cgroup of its own with a CPU quota.
#[derive(Debug)]
pub struct CpuQuota {
    dir: PathBuf,
    /// The cgroup the process came from (its `cgroup.procs`), to go back to.
    back_to: PathBuf,
}

impl CpuQuota {
    /// `cores` is a quota this machine can give: from `MIN_QUOTA_CORES` to its core
    /// count. Checked before any work starts, and again by [`CpuQuota::enter`].
    pub fn check(cores: f64) -> Result<(), QuotaError> {
        let max = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        if cores.is_finite() && (MIN_QUOTA_CORES..=max).contains(&cores) {
            Ok(())
        } else {
            Err(QuotaError::OutOfRange { got: cores, max })
        }
    }

    /// Puts this process under a quota of `cores`.
    pub fn enter(cores: f64) -> Result<CpuQuota, QuotaError> {
        CpuQuota::check(cores)?;
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let quota_us = (cores * PERIOD_US as f64).round() as u64;
        let mut reasons = Vec::new();
        let root = Path::new("/sys/fs/cgroup");
        // cgroup v1: the cpu controller's hierarchy.
        if let Some(path) = controller_path(&proc_cgroup, Some("cpu")) {
            let parent = root.join("cpu").join(path.trim_start_matches('/'));
            match join(
                &parent,
                &[
                    ("cpu.cfs_period_us", PERIOD_US.to_string()),
                    ("cpu.cfs_quota_us", quota_us.to_string()),
                ],
            ) {
                Ok(dir) => return Ok(CpuQuota { dir, back_to: parent }),
                Err(e) => reasons.push(format!("cgroup v1 {}: {e}", parent.display())),
            }
        } else {
            reasons.push("no cgroup v1 cpu controller".into());
        }
        // cgroup v2: the unified hierarchy, where it has the cpu controller.
        if let Some(path) = controller_path(&proc_cgroup, None) {
            for mount in [root.to_path_buf(), root.join("unified")] {
                let parent = mount.join(path.trim_start_matches('/'));
                let controllers = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
                if !controllers.split_whitespace().any(|c| c == "cpu") {
                    continue;
                }
                match join(&parent, &[("cpu.max", format!("{quota_us} {PERIOD_US}"))]) {
                    Ok(dir) => return Ok(CpuQuota { dir, back_to: parent }),
                    Err(e) => reasons.push(format!("cgroup v2 {}: {e}", parent.display())),
                }
            }
        }
        if reasons.len() == 1 {
            reasons.push("no cgroup v2 hierarchy with the cpu controller".into());
        }
        Err(QuotaError::Unavailable {
            reasons: reasons.join("; "),
        })
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        let _ = std::fs::write(self.back_to.join("cgroup.procs"), std::process::id().to_string());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The cgroup path of this process for `controller` (`None`: the v2 entry `0::`).
fn controller_path(proc_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let ok = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        ok.then(|| path.to_string())
    })
}

/// Creates `parent/s3sweep-quota-PID`, writes `settings` into it, and moves this
/// process in. On failure nothing is left behind.
fn join(parent: &Path, settings: &[(&str, String)]) -> std::io::Result<PathBuf> {
    let dir = parent.join(format!("s3sweep-quota-{}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let result = (|| {
        for (file, value) in settings {
            std::fs::write(dir.join(file), value)?;
        }
        std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
    })();
    match result {
        Ok(()) => Ok(dir),
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            Err(e)
        }
    }
}

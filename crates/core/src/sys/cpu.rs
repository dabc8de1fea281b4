//! The CPU this process may really use, and where that figure comes from. A Lambda
//! function shows 2 vCPUs from 128 MB to 3,008 MB but gets CPU time in proportion to
//! its memory (1,769 MB is one vCPU's worth, 6 vCPUs at most); a container gets what its
//! CPU quota allows (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`);
//! a process pinned to some cores gets those. The smallest of these is the usable CPU,
//! in cores, with its source named.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Lambda memory that buys one vCPU's worth of CPU time, MB.
pub const LAMBDA_MB_PER_VCPU: f64 = 1_769.0;
/// The most vCPUs a Lambda function gets.
pub const LAMBDA_MAX_VCPUS: f64 = 6.0;
/// Set by Lambda on Lambda Managed Instances only: the invocations one execution
/// environment takes at once (lambda_runtime 1.5's `run_concurrent` reads it; AWS's Go
/// runtime, aws-lambda-go PR 600: "set by Lambda when a function is configured to use
/// Managed Instances").
pub const MAX_CONCURRENCY_ENV: &str = "AWS_LAMBDA_MAX_CONCURRENCY";

/// Where the usable CPU figure comes from: a closed set of the result contract.
pub(crate) use crate::model::CpuSource;

/// The CPU this process may use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct UsableCpu {
    /// Cores' worth of CPU time per second (fractional under a quota).
    pub cores: f64,
    pub source: CpuSource,
}

/// What the figure is read from; [`UsableCpu::read`] fills it from this machine.
#[derive(Debug, Clone, Default)]
pub(crate) struct CpuFacts {
    /// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, in a Lambda function.
    pub lambda_memory_mb: Option<u32>,
    /// The tightest cgroup quota on the way from this process's cgroup to the root,
    /// in cores, and whether it came from cgroup v2.
    pub quota: Option<(f64, bool)>,
    /// CPUs in the affinity mask.
    pub affinity: Option<usize>,
    /// The machine's cores.
    pub cores: usize,
}

impl UsableCpu {
    /// The usable CPU of this process now.
    pub(crate) fn read() -> UsableCpu {
        UsableCpu::from_facts(&CpuFacts::read())
    }

    /// The smallest of the limits, with its source (ties go to the more specific).
    pub(crate) fn from_facts(f: &CpuFacts) -> UsableCpu {
        let cores = f.cores.max(1) as f64;
        let mut best = UsableCpu {
            cores,
            source: CpuSource::Cores,
        };
        let mut consider = |c: f64, source: CpuSource| {
            if c > 0.0 && c.is_finite() && c <= best.cores {
                best = UsableCpu { cores: c, source };
            }
        };
        if let Some(a) = f.affinity {
            consider(a as f64, CpuSource::Affinity);
        }
        if let Some((q, v2)) = f.quota {
            consider(q, if v2 { CpuSource::CgroupV2 } else { CpuSource::CgroupV1 });
        }
        if let Some(mb) = f.lambda_memory_mb {
            consider(
                (f64::from(mb) / LAMBDA_MB_PER_VCPU).min(LAMBDA_MAX_VCPUS),
                CpuSource::LambdaMemory,
            );
        }
        best
    }
}

impl CpuFacts {
    /// Reads the facts of this process.
    pub(crate) fn read() -> CpuFacts {
        // On Lambda Managed Instances (Lambda sets AWS_LAMBDA_MAX_CONCURRENCY there
        // only) the memory table does not apply: the execution environment gets the
        // vCPUs of its memory-to-vCPU ratio on the instance, which its cgroup, affinity
        // and cores show.
        let in_lambda = memory_table_applies(
            std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some(),
            std::env::var_os(MAX_CONCURRENCY_ENV).is_some(),
        );
        CpuFacts {
            lambda_memory_mb: in_lambda
                .then(|| {
                    std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
                        .ok()?
                        .trim()
                        .parse()
                        .ok()
                })
                .flatten(),
            quota: cgroup_quota(
                Path::new("/sys/fs/cgroup"),
                &read("/proc/self/cgroup").unwrap_or_default(),
            ),
            affinity: affinity_count(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Whether Lambda's memory table (1,769 MB per vCPU) sets the CPU share: in a Lambda
/// function, not on Lambda Managed Instances.
pub(crate) fn memory_table_applies(in_function: bool, on_managed_instances: bool) -> bool {
    in_function && !on_managed_instances
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The cgroup of this process for `controller` (`""` for v2) from `/proc/self/cgroup`.
fn cgroup_path(proc_cgroup: &str, controller: &str) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        matches.then(|| path.to_string())
    })
}

/// Every directory from `leaf` up to `mount`.
fn ancestors(mount: &Path, cgroup: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = mount.join(cgroup.trim_start_matches('/'));
    loop {
        out.push(dir.clone());
        if dir == mount || !dir.pop() || !dir.starts_with(mount) {
            break;
        }
    }
    out
}

/// The tightest CPU quota on the way up from this process's cgroup, in cores, and
/// whether it is cgroup v2's. `root` is where cgroups are mounted (`/sys/fs/cgroup`).
pub(crate) fn cgroup_quota(root: &Path, proc_cgroup: &str) -> Option<(f64, bool)> {
    let mut best: Option<(f64, bool)> = None;
    let mut take = |q: f64, v2: bool| {
        if q > 0.0 && best.is_none_or(|b| q < b.0) {
            best = Some((q, v2));
        }
    };
    // cgroup v2: the unified hierarchy at the root, or at root/unified beside v1.
    if let Some(path) = cgroup_path(proc_cgroup, "") {
        for mount in [root.to_path_buf(), root.join("unified")] {
            for dir in ancestors(&mount, &path) {
                if let Some(text) = read(dir.join("cpu.max")) {
                    let mut f = text.split_whitespace();
                    if let (Some(q), Some(p)) = (f.next(), f.next()) {
                        if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                            take(q / p, true);
                        }
                    }
                }
            }
        }
    }
    // cgroup v1: the cpu controller.
    if let Some(path) = cgroup_path(proc_cgroup, "cpu") {
        for mount in [root.join("cpu"), root.join("cpu,cpuacct")] {
            for dir in ancestors(&mount, &path) {
                let q = read(dir.join("cpu.cfs_quota_us")).and_then(|t| t.trim().parse::<f64>().ok());
                let p = read(dir.join("cpu.cfs_period_us")).and_then(|t| t.trim().parse::<f64>().ok());
                if let (Some(q), Some(p)) = (q, p) {
                    if q > 0.0 && p > 0.0 {
                        take(q / p, false);
                    }
                }
            }
        }
    }
    best
}

/// CPUs in this process's affinity mask.
fn affinity_count() -> Option<usize> {
    // SAFETY: sched_getaffinity only writes into the set we pass, of the size we give.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(libc::CPU_COUNT(&set) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(lambda: Option<u32>, quota: Option<(f64, bool)>, affinity: Option<usize>, cores: usize) -> CpuFacts {
        CpuFacts {
            lambda_memory_mb: lambda,
            quota,
            affinity,
            cores,
        }
    }

    #[test]
    fn lambda_memory_buys_cpu_time() {
        let at = |mb| UsableCpu::from_facts(&facts(Some(mb), None, Some(2), 2));
        let small = at(512);
        assert_eq!(small.source, CpuSource::LambdaMemory);
        assert!((small.cores - 512.0 / 1769.0).abs() < 1e-9, "{small:?}");
        assert!((at(1769).cores - 1.0).abs() < 1e-9);
        // Above 2 vCPUs' worth the two cores shown bind.
        assert_eq!(at(10_240).cores, 2.0);
        assert_ne!(at(10_240).source, CpuSource::LambdaMemory);
        let big = UsableCpu::from_facts(&facts(Some(10_240), None, Some(6), 6));
        assert!((big.cores - 10_240.0 / 1769.0).abs() < 1e-9, "{big:?}");
    }

    /// Issue 50: on Lambda Managed Instances the CPU share follows the instance (its
    /// cgroup, affinity, cores), not the memory table.
    #[test]
    fn the_memory_table_is_lambdas_only() {
        assert!(memory_table_applies(true, false));
        assert!(!memory_table_applies(true, true), "Managed Instances");
        assert!(!memory_table_applies(false, false), "not in a function");
    }

    #[test]
    fn the_tightest_limit_wins() {
        let q = UsableCpu::from_facts(&facts(None, Some((0.25, false)), Some(2), 2));
        assert_eq!((q.cores, q.source), (0.25, CpuSource::CgroupV1));
        let a = UsableCpu::from_facts(&facts(None, Some((3.0, true)), Some(1), 4));
        assert_eq!((a.cores, a.source), (1.0, CpuSource::Affinity));
        let c = UsableCpu::from_facts(&facts(None, None, None, 2));
        assert_eq!((c.cores, c.source), (2.0, CpuSource::Cores));
    }

    #[test]
    fn cgroup_files_are_read_up_the_hierarchy() {
        let root = std::env::temp_dir().join(format!("s3sweep-cgroup-{}", std::process::id()));
        let v1 = root.join("cpu/outer/inner");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(root.join("cpu/outer/cpu.cfs_quota_us"), "50000\n").unwrap();
        std::fs::write(root.join("cpu/outer/cpu.cfs_period_us"), "100000\n").unwrap();
        std::fs::write(v1.join("cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(v1.join("cpu.cfs_period_us"), "100000\n").unwrap();
        let proc_cgroup = "3:cpuset:/\n1:cpu:/outer/inner\n0::/\n";
        assert_eq!(cgroup_quota(&root, proc_cgroup), Some((0.5, false)));
        let v2 = root.join("unified/svc");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(v2.join("cpu.max"), "25000 100000\n").unwrap();
        std::fs::write(root.join("unified/cpu.max"), "max 100000\n").unwrap();
        let proc_cgroup = "1:cpu:/outer/inner\n0::/svc\n";
        assert_eq!(cgroup_quota(&root, proc_cgroup), Some((0.25, true)));
        assert_eq!(cgroup_quota(&root, "0::/none\n"), None);
        let _ = std::fs::remove_dir_all(root);
    }
}

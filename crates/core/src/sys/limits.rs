//! The file-descriptor budget of a sweep.
//!
//! Every connection in the pool is a socket, so a sweep at 1,024 connections needs
//! more than the common default soft limit of 1,024 descriptors (and, with the
//! embedded server in the same process, twice that). [`raise_nofile`] lifts the soft
//! `RLIMIT_NOFILE` to the hard limit, which any process may do; [`check_budget`] then
//! says clearly, before the first request, when the plan needs more than allowed,
//! instead of failing mid-sweep with `EMFILE` counted as connection errors.

/// Descriptors kept for everything that is not a pooled connection: the runtime,
/// stdio, the listener, files, DNS.
pub const FD_RESERVE: u64 = 64;

/// Largest soft limit asked for when the hard limit is unlimited.
const UNLIMITED_CAP: u64 = 1 << 20;

/// The process's descriptor limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FdLimits {
    /// Soft limit in force (after raising).
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
    /// The soft limit before [`raise_nofile`] raised it, if it did.
    pub raised_from: Option<u64>,
}

/// Why a sweep cannot run within the descriptor limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error(
        "not enough file descriptors: the sweep may hold {needed} ({connections} pooled connections + {FD_RESERVE} reserve) \
         but this process may open only {soft} (hard limit {hard}). Lower `pool_connections` (and the worker counts), \
         or raise the hard limit (`ulimit -Hn`, systemd LimitNOFILE, docker --ulimit nofile)"
    )]
    TooFewDescriptors {
        needed: u64,
        connections: u64,
        soft: u64,
        hard: u64,
    },
}

fn current() -> Option<(u64, u64)> {
    // SAFETY: getrlimit only writes into the struct we pass.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    Some((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// The limits now, without changing them.
pub fn nofile() -> FdLimits {
    let (soft, hard) = current().unwrap_or((1024, 1024));
    FdLimits {
        soft,
        hard,
        raised_from: None,
    }
}

/// Raises the soft descriptor limit to the hard limit (capped at 2^20 when the hard
/// limit is unlimited). Never fails: when it cannot, the limits stay as they were.
pub fn raise_nofile() -> FdLimits {
    let Some((soft, hard)) = current() else {
        return nofile();
    };
    let target = if hard == libc::RLIM_INFINITY {
        UNLIMITED_CAP
    } else {
        hard
    };
    if soft >= target {
        return FdLimits {
            soft,
            hard,
            raised_from: None,
        };
    }
    let lim = libc::rlimit {
        rlim_cur: target as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit only reads the struct we pass; raising the soft limit up to
    // the hard limit needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
        FdLimits {
            soft: target,
            hard,
            raised_from: Some(soft),
        }
    } else {
        FdLimits {
            soft,
            hard,
            raised_from: None,
        }
    }
}

/// Descriptors a sweep may hold at once: `pool_connections` per bucket endpoint (an
/// earlier bucket's idle connections may still be open), doubled when the embedded
/// server runs in the same process (its end of every connection), plus [`FD_RESERVE`].
pub fn fds_needed(pool_connections: u32, buckets: usize, in_process_server: bool) -> (u64, u64) {
    let mut connections = u64::from(pool_connections) * buckets.max(1) as u64;
    if in_process_server {
        connections *= 2;
    }
    (connections + FD_RESERVE, connections)
}

/// Checks that a sweep fits in the soft limit.
pub fn check_budget(
    limits: &FdLimits,
    pool_connections: u32,
    buckets: usize,
    in_process_server: bool,
) -> Result<(), LimitError> {
    let (needed, connections) = fds_needed(pool_connections, buckets, in_process_server);
    if needed > limits.soft {
        return Err(LimitError::TooFewDescriptors {
            needed,
            connections,
            soft: limits.soft,
            hard: limits.hard,
        });
    }
    Ok(())
}

/// Descriptors open in this process now (Linux; `None` elsewhere).
pub fn open_fds() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_counts_connections_and_the_reserve() {
        assert_eq!(fds_needed(1024, 1, false), (1024 + FD_RESERVE, 1024));
        assert_eq!(fds_needed(1024, 2, true), (4096 + FD_RESERVE, 4096));
        let small = FdLimits {
            soft: 1024,
            hard: 1024,
            raised_from: None,
        };
        assert!(check_budget(&small, 512, 1, false).is_ok());
        let err = check_budget(&small, 1024, 1, false).unwrap_err().to_string();
        assert!(
            err.contains("pool_connections") && err.contains("1088") && err.contains("1024"),
            "{err}"
        );
    }

    #[test]
    fn raising_never_lowers() {
        let before = nofile();
        let after = raise_nofile();
        assert!(after.soft >= before.soft);
        assert_eq!(after.hard, before.hard);
        assert!(open_fds().unwrap_or(1) > 0);
    }
}

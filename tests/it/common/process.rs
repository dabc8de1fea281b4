//! Child processes a test starts: [`Group`] (a process group killed whole on drop),
//! [`run_within`] and [`run_bounded`] (a command to its end, killed if it overruns),
//! [`stop_gently`] (SIGTERM, then SIGKILL after a grace period), [`run_measured`] (a
//! command to its end with its peak RSS) and [`vm_hwm_kib`] (a running child's).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// How long [`run_bounded`] gives a command.
pub(super) const RUN_LIMIT: Duration = Duration::from_secs(120);

/// A child process in its own process group; the whole group is killed on drop.
pub(crate) struct Group {
    pub child: Child,
    pub name: &'static str,
}

impl Group {
    pub(crate) fn spawn(name: &'static str, cmd: &mut Command) -> Group {
        cmd.process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("starting {name} ({cmd:?}): {e}"));
        Group { child, name }
    }

    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Group {
    /// The leader gets SIGTERM first (up to 2 s); then the whole group SIGKILL.
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        stop_gently(&mut self.child, Duration::from_secs(2));
        // SAFETY: signals only the process group this test created (pgid = child pid).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("stopped {} (process group {pid})", self.name);
    }
}

/// Sends `child` SIGTERM and waits for it up to `grace`, then kills it.
pub(crate) fn stop_gently(child: &mut Child, grace: Duration) {
    if matches!(child.try_wait(), Ok(None)) {
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let start = Instant::now();
        while matches!(child.try_wait(), Ok(None)) && start.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `cmd` to the end (stdin closed, stdout and stderr read) within [`RUN_LIMIT`].
pub(crate) fn run_bounded(cmd: &mut Command) -> Output {
    run_within("the command", cmd, RUN_LIMIT)
}

/// `s3sweep ARGS` run to the end with [`run_bounded`]: whether it succeeded, and what
/// it printed (stdout, then stderr).
pub(crate) fn s3sweep_said(args: &[&str]) -> (bool, String) {
    let out = run_bounded(Command::new(super::BIN).args(args));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `cmd` (`what`, in a failure's message) to the end within `limit`: stdin
/// closed, stdout and stderr read; past `limit` its process group is killed and the
/// test fails.
pub(crate) fn run_within(what: &str, cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut group = Group::spawn("a bounded command", cmd);
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = read(Box::new(group.child.stdout.take().unwrap()));
    let stderr = read(Box::new(group.child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = group.exited() {
            break status;
        }
        assert!(
            start.elapsed() < limit,
            "{what} did not finish within {} s: {cmd:?}",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(group);
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs `cmd` to its end (at most `limit`), returning its output and its peak resident
/// memory in KiB (`wait4`'s `ru_maxrss`).
// The child is reaped by `wait4` (which also gives its usage), not `Child::wait`.
#[allow(clippy::zombie_processes)]
pub(crate) fn run_measured(cmd: &mut Command, limit: Duration) -> (std::process::Output, u64) {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let stdout = child.stdout.unwrap();
    let stderr = child.stderr.unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let started = Instant::now();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child, with valid pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if started.elapsed() > limit {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the child ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = std::process::Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, usage.ru_maxrss as u64)
}

/// Peak RSS of a command that does nothing but fail on a bad flag: the baseline.
pub(crate) fn baseline_rss_kib() -> u64 {
    let (_, rss) = run_measured(
        Command::new(super::BIN).args(["report", "/nonexistent.json"]),
        Duration::from_secs(60),
    );
    rss
}

/// The peak resident memory of running process `pid` so far, KiB (`VmHWM` of
/// /proc/PID/status).
pub(crate) fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

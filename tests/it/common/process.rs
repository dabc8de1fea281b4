//! Child processes a test starts: [`Group`] (a process group killed whole on drop),
//! [`run_within`] and [`run_bounded`] (a command to its end, killed if it overruns),
//! [`stop_gently`] (SIGTERM, then SIGKILL after a grace period).

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

//! The lab as a child process: `s3sweep serve --port 0` started from this executable,
//! its address read from its first line (and, with `--tls`, its CA file from the
//! `ca-file: ` line: [`Banner`]), killed with this process (parent-death signal) or
//! when dropped. `s3sweep local` runs the server this way by default so the server's
//! CPU is not counted as the client's, and reads the child's CPU time apart. The
//! integration tests start `serve` with the same [`serve_command`] and [`Banner`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::{LatencyProfile, RunningServer};
use crate::sys::usage;

/// Why the lab could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("starting the embedded server: {0}")]
    Spawn(std::io::Error),
    #[error("the embedded server did not print its address within 30 s")]
    Slow,
    #[error("the embedded server exited before printing its address")]
    Exited,
    #[error("the embedded server serves HTTPS but printed no `ca-file: ` line")]
    NoCaFile,
}

/// What `serve` prints before the path of its CA file, alone on a line.
pub const CA_FILE_PREFIX: &str = "ca-file: ";

/// How to start the child: HTTPS or not, how long its S3 Express sessions last, and
/// more `serve` flags (the network's: `cli::lab_network`).
#[derive(Debug, Clone)]
pub struct ChildOptions {
    pub tls: bool,
    pub session_ttl: Duration,
    pub serve_args: Vec<String>,
}

impl Default for ChildOptions {
    fn default() -> Self {
        ChildOptions {
            tls: false,
            session_ttl: super::DEFAULT_SESSION_TTL,
            serve_args: Vec::new(),
        }
    }
}

/// The lab, in this process or as a child.
pub enum LabProcess {
    InProcess(RunningServer),
    Child {
        child: tokio::process::Child,
        endpoint: String,
        ca_file: Option<ChildCa>,
    },
}

/// The CA file a child lab printed. The child removes it when it stops; if it was
/// killed first, dropping this removes the file, and its folder when that is the
/// lab's own private folder and now empty.
#[derive(Debug)]
pub struct ChildCa(PathBuf);

impl Drop for ChildCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let own_dir = self.0.parent().filter(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("s3sweep-lab-"))
        });
        if let Some(dir) = own_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The `s3sweep serve` command [`LabProcess::spawn`] runs (tests run it too, with the
/// binary cargo built): `exe serve --port 0`, the session TTL, `--tls`, the other
/// `serve_args`, then `buckets`; stdout piped (its first lines are a [`Banner`]),
/// stderr inherited, stdin closed, and killed when the thread that starts it ends
/// (parent-death signal).
pub fn serve_command(
    exe: &Path,
    buckets: &[(String, LatencyProfile)],
    options: &ChildOptions,
) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("serve").arg("--port").arg("0");
    cmd.arg("--session-ttl-s")
        .arg(options.session_ttl.as_secs().to_string());
    if options.tls {
        cmd.arg("--tls");
    }
    cmd.args(&options.serve_args);
    for (b, p) in buckets {
        cmd.arg("--bucket").arg(format!("{b}={p}"));
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).stdin(Stdio::null());
    // SAFETY: prctl in the child before exec only sets its parent-death signal.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// What `serve` prints first, read a line at a time: the line with its URL, and after
/// an `https://` one the `ca-file: ` line ([`CA_FILE_PREFIX`]). Lines before the URL
/// are passed over.
#[derive(Debug, Default)]
pub struct Banner {
    https_endpoint: Option<String>,
}

/// The address and CA file a [`Banner`] announced.
#[derive(Debug)]
pub struct Announced {
    /// `http://127.0.0.1:PORT`, or `https://` with `--tls`.
    pub endpoint: String,
    /// With `--tls`: the CA file clients must trust.
    pub ca_file: Option<PathBuf>,
}

impl Banner {
    /// Reads one more line: `Some` once the banner is whole (or cannot be), `None`
    /// while it needs the next line.
    pub fn read(&mut self, line: &str) -> Option<Result<Announced, LabError>> {
        if let Some(endpoint) = self.https_endpoint.take() {
            let ca_file = line.strip_prefix(CA_FILE_PREFIX).map(PathBuf::from);
            return Some(match ca_file {
                Some(path) => Ok(Announced {
                    endpoint,
                    ca_file: Some(path),
                }),
                None => Err(LabError::NoCaFile),
            });
        }
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))?;
        if url.starts_with("https://") {
            self.https_endpoint = Some(url.to_string());
            return None;
        }
        Some(Ok(Announced {
            endpoint: url.to_string(),
            ca_file: None,
        }))
    }
}

impl LabProcess {
    /// Starts `s3sweep serve` (this executable) with `buckets` on a free port.
    pub async fn spawn(buckets: &[(String, LatencyProfile)], options: ChildOptions) -> Result<Self, LabError> {
        let exe = std::env::current_exe().map_err(LabError::Spawn)?;
        let mut cmd = tokio::process::Command::from(serve_command(&exe, buckets, &options));
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().map_err(LabError::Spawn)?;
        let stdout = child.stdout.take().ok_or(LabError::Exited)?;
        let mut lines = BufReader::new(stdout).lines();
        let announced = tokio::time::timeout(Duration::from_secs(30), async {
            let mut banner = Banner::default();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(done) = banner.read(&line) {
                    return done;
                }
            }
            Err(LabError::Exited)
        })
        .await
        .map_err(|_| LabError::Slow)??;
        // Keep draining its stdout so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(LabProcess::Child {
            child,
            endpoint: announced.endpoint,
            ca_file: announced.ca_file.map(ChildCa),
        })
    }

    /// The CA file clients must trust, when the lab serves HTTPS.
    pub fn ca_file(&self) -> Option<&Path> {
        match self {
            LabProcess::InProcess(s) => s.ca_file(),
            LabProcess::Child { ca_file, .. } => ca_file.as_ref().map(|c| c.0.as_path()),
        }
    }

    /// The endpoint URL clients use.
    pub fn endpoint(&self) -> String {
        match self {
            LabProcess::InProcess(s) => s.endpoint(),
            LabProcess::Child { endpoint, .. } => endpoint.clone(),
        }
    }

    /// Where the server runs, in words.
    pub fn describe(&self) -> String {
        match self {
            LabProcess::InProcess(_) => "in this process".into(),
            LabProcess::Child { child, .. } => format!("child process {}", child.id().unwrap_or(0)),
        }
    }

    /// CPU time the child has used so far (`None` in process, where it is the client's).
    pub fn cpu_time(&self) -> Option<Duration> {
        match self {
            LabProcess::InProcess(_) => None,
            LabProcess::Child { child, .. } => child.id().and_then(usage::child_cpu_time),
        }
    }

    /// Stops the server.
    pub async fn stop(self) {
        match self {
            LabProcess::InProcess(s) => s.shutdown().await,
            LabProcess::Child { mut child, .. } => {
                // SIGTERM first: the child stops serving and removes its CA file.
                if let Some(pid) = child.id() {
                    // SAFETY: kill(2) with our own child's pid and a signal number.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
                    if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_ok() {
                        return;
                    }
                }
                let _ = child.kill().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(lines: &[&str]) -> Option<Result<Announced, LabError>> {
        let mut banner = Banner::default();
        lines.iter().find_map(|line| banner.read(line))
    }

    #[test]
    fn an_http_banner_is_its_first_url() {
        let done = read_all(&["s3sweep serve: listening on http://127.0.0.1:4567", "credentials: ..."]);
        let announced = done.unwrap().unwrap();
        assert_eq!(announced.endpoint, "http://127.0.0.1:4567");
        assert!(announced.ca_file.is_none());
    }

    #[test]
    fn an_https_banner_ends_with_the_ca_file_line() {
        let lines = [
            "s3sweep serve: listening on https://127.0.0.1:4567",
            "ca-file: /tmp/s3sweep-lab-1/ca.pem",
        ];
        let announced = read_all(&lines).unwrap().unwrap();
        assert_eq!(announced.endpoint, "https://127.0.0.1:4567");
        assert_eq!(announced.ca_file, Some(PathBuf::from("/tmp/s3sweep-lab-1/ca.pem")));
        assert!(read_all(&lines[..1]).is_none(), "the URL alone is not the whole banner");
    }

    #[test]
    fn an_https_banner_without_its_ca_file_is_an_error() {
        let done = read_all(&["listening on https://127.0.0.1:4567", "credentials: ..."]);
        assert!(matches!(done, Some(Err(LabError::NoCaFile))), "{done:?}");
    }
}

//! `s3sweep serve` as a child of a test: [`Serve`], the one handle every module starts
//! the lab with. The command and the banner (address, CA file) are the product's own
//! (`lab::child::serve_command`, `lab::child::Banner`), as `s3sweep local` starts it;
//! this adds what tests need: the rest of its output kept, its JSON tallies read,
//! `seed` run against it, and a gentle stop (SIGTERM, then SIGKILL after a grace
//! period).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::lab::child::{self, Banner, ChildOptions};
use serde_json::Value;

use super::{run_within, stop_gently, BIN};

/// How long `serve` has to print its banner.
const BANNER_LIMIT: Duration = Duration::from_secs(30);
/// How long `serve` has to exit after SIGTERM in [`Serve::stop`].
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// How long [`Drop`] waits after SIGTERM before SIGKILL.
const DROP_GRACE: Duration = Duration::from_secs(5);

/// A `s3sweep serve` child on a free loopback port; stopped gently when dropped (SIGTERM
/// first, as a user's Ctrl-C, so `serve --tls` removes its CA folder; SIGKILL after 5 s).
pub(crate) struct Serve {
    pub child: Child,
    /// `http://127.0.0.1:PORT` (`https://` with `--tls`), from the banner.
    pub endpoint: String,
    /// With `--tls`: the CA file, from the banner's `ca-file: ` line.
    pub ca_file: Option<PathBuf>,
    /// The lines of stdout after the banner, as they come.
    lines: mpsc::Receiver<String>,
    stdout: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
}

/// What a stopped `serve` printed after its banner (its tallies among it).
pub(crate) struct Printed {
    pub stdout: String,
    pub stderr: String,
}

impl Printed {
    /// The line of stderr holding `label` (`"S3 Express sessions:"`, a tally's).
    pub(crate) fn stderr_line(&self, label: &str) -> &str {
        self.stderr
            .lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{}", self.stderr))
    }
}

impl Serve {
    /// `s3sweep serve` with `buckets` (`NAME=PROFILE` each, as `--bucket`) and more
    /// `args` (`--tls`, `--fault ...`, `--idle-timeout-s 3`).
    pub(crate) fn start(buckets: &[&str], args: &[&str]) -> Serve {
        Serve::spawn(&mut Serve::command(buckets, args))
    }

    /// The command [`Serve::start`] runs.
    fn command(buckets: &[&str], args: &[&str]) -> Command {
        let serve_args = buckets
            .iter()
            .flat_map(|b| ["--bucket", b])
            .chain(args.iter().copied())
            .map(str::to_string)
            .collect();
        let options = ChildOptions {
            serve_args,
            ..ChildOptions::default()
        };
        child::serve_command(Path::new(BIN), &[], &options)
    }

    /// Spawns `cmd` (a `serve` command) with its output piped, and reads its banner
    /// within 30 s.
    fn spawn(cmd: &mut Command) -> Serve {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        let stdout_pipe = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = std::thread::spawn(move || {
            for line in BufReader::new(stdout_pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut serve = Serve {
            child,
            endpoint: String::new(),
            ca_file: None,
            lines,
            stdout: Some(stdout),
            stderr: Some(stderr),
        };
        let announced = serve.read_banner();
        serve.endpoint = announced.endpoint;
        serve.ca_file = announced.ca_file;
        serve
    }

    fn read_banner(&mut self) -> child::Announced {
        let start = Instant::now();
        let mut banner = Banner::default();
        loop {
            let left = BANNER_LIMIT.saturating_sub(start.elapsed());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "s3sweep serve printed no address within {} s:\n{}",
                    BANNER_LIMIT.as_secs(),
                    self.stderr_after_kill()
                )
            });
            if let Some(done) = banner.read(&line) {
                return done.unwrap_or_else(|e| panic!("{e} (at {line:?})"));
            }
        }
    }

    /// What it printed on stderr, once killed (for a failure's message).
    fn stderr_after_kill(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// The next line of stdout after the banner, within 5 s.
    pub(crate) fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(5))
            .expect("s3sweep serve prints another line within 5 s")
    }

    /// `127.0.0.1:PORT`, the address of an HTTP lab.
    pub(crate) fn addr(&self) -> &str {
        self.endpoint
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("tallies are read over HTTP, not {}", self.endpoint))
    }

    /// One of the lab's JSON tallies (`/_s3sweep/faults`, `/_s3sweep/network`) over
    /// plain HTTP, within 5 s.
    pub(crate) fn tally(&self, path: &str) -> Value {
        let mut s = TcpStream::connect(self.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no body in {text:?}"));
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body:?}"))
    }

    /// `s3sweep seed`: `count` objects of `size_bytes` into `bucket` (the lab's CA
    /// trusted), the manifest at `manifest`; it must succeed within 60 s.
    pub(crate) fn seed(&self, bucket: &str, count: u64, size_bytes: u64, manifest: &Path) {
        let mut cmd = Command::new(BIN);
        cmd.args(["seed", "--endpoint", &self.endpoint, "--bucket", bucket])
            .args(["--count", &count.to_string(), "--size", &size_bytes.to_string()])
            .arg("--manifest")
            .arg(manifest);
        if let Some(ca) = &self.ca_file {
            cmd.arg("--ca-file").arg(ca);
        }
        let out = run_within("s3sweep seed", &mut cmd, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "seed {bucket}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops it with SIGTERM (as a user's Ctrl-C); it must exit within 10 s. Returns
    /// what it printed after its banner.
    pub(crate) fn stop(mut self) -> Printed {
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < STOP_LIMIT, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(stdout) = self.stdout.take() {
            let _ = stdout.join();
        }
        Printed {
            stdout: self.lines.try_iter().collect::<Vec<_>>().join("\n"),
            stderr: self.stderr.take().map(|h| h.join().unwrap()).unwrap_or_default(),
        }
    }
}

impl Drop for Serve {
    /// SIGTERM, SIGKILL after 5 s; on a failing test, what it printed on stderr.
    fn drop(&mut self) {
        stop_gently(&mut self.child, DROP_GRACE);
        if std::thread::panicking() {
            if let Some(stderr) = self.stderr.take().and_then(|h| h.join().ok()) {
                eprintln!("s3sweep serve at {} printed on stderr:\n{stderr}", self.endpoint);
            }
        }
    }
}

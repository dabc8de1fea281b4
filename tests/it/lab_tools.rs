//! The tools users point at the lab work against it, over HTTP and HTTPS, against
//! `s3sweep serve` children on 127.0.0.1 (issue 28):
//! - boto3 (`tests/lab-tools/boto3_conformance.py`): paginated listings (v1 and v2)
//!   with a delimiter and MaxKeys 3 give every key once; conditional PUT, GET, HEAD
//!   and DELETE give 412 / 304 where S3 does; ETags are the MD5 of the body;
//! - the AWS CLI (v1 from PyPI, `bench-py/requirements.txt`, in `.venv-bench`):
//!   `aws s3 cp --recursive` up and down, `aws s3 ls` one level and `--recursive`,
//!   `aws s3 sync` twice (the second copies nothing): no errors, exact bytes;
//! - rclone (the Debian package, which `make test` installs when it runs as root):
//!   `rclone copy` up and down, `rclone lsf` (one level, ListObjects v1 pages of 5,
//!   and `-R`), `rclone check` (MD5 against the ETag): no errors, no differences.
//!   Without rclone its test says so and skips.
//!
//! The Python is `$S3SWEEP_BENCH_PYTHON` or `.venv-bench/bin/python` (`make
//! bench-venv`); without it these tests fail saying how to install it, unless
//! `S3SWEEP_SKIP_BOTO3=1` (then they skip, loudly).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::Serve;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const BUCKET: &str = "tools";

/// The Python with boto3 and the AWS CLI, `None` to skip (said why), or a panic
/// saying how to install it.
fn python() -> Option<PathBuf> {
    crate::common::bench_python_importing("lab_tools", "boto3, awscli")
}

/// Runs `cmd` with a deadline, killing it past it; its output.
fn run_limited(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} took more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// `serve` with one bucket, over HTTPS or not.
fn serve(tls: bool) -> Serve {
    let tls: &[&str] = if tls { &["--tls"] } else { &[] };
    Serve::start(&[&format!("{BUCKET}=none")], tls)
}

/// A fresh folder under the temporary folder.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("s3sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a small tree of files (nested folders, sizes from 0 to 40 kB, bytes that
/// differ per file) and returns relative path -> bytes.
fn make_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let names = [
        "a.txt",
        "empty.bin",
        "dir1/b.bin",
        "dir1/c.txt",
        "dir1/sub/d.bin",
        "dir1/sub/e.bin",
        "dir2/f.bin",
        "dir2/g with space.txt",
        "dir3/deep/er/h.bin",
    ];
    for (i, name) in names.iter().enumerate() {
        let len = if *name == "empty.bin" { 0 } else { 1000 + i * 4500 };
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        files.insert(name.to_string(), bytes);
    }
    files
}

/// Every file under `root`: relative path -> bytes.
fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn boto3_pages_listings_and_gets_412_and_304_over_http_and_https() {
    let Some(python) = python() else { return };
    for tls in [false, true] {
        let server = serve(tls);
        let mut cmd = Command::new(&python);
        cmd.arg(Path::new(MANIFEST_DIR).join("tests/lab-tools/boto3_conformance.py"))
            .args(["--endpoint", &server.endpoint, "--bucket", BUCKET])
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env_remove("AWS_CA_BUNDLE");
        if let Some(ca) = &server.ca_file {
            cmd.arg("--ca").arg(ca);
        }
        let out = run_limited(&mut cmd, Duration::from_secs(90));
        assert!(
            out.status.success(),
            "boto3 against {}:\n{}",
            server.endpoint,
            text(&out)
        );
        println!(
            "boto3 ({}): {}",
            server.endpoint,
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
}

/// The AWS CLI, configured for the lab only.
fn aws(python: &Path, server: &Serve, args: &[&str]) -> Output {
    let mut cmd = Command::new(python);
    cmd.args(["-m", "awscli"]).args(args);
    if matches!(args.get(1), Some(&"cp") | Some(&"sync")) {
        cmd.arg("--no-progress");
    }
    cmd.args(["--endpoint-url", &server.endpoint])
        .env("AWS_ACCESS_KEY_ID", crate::common::lab::LOCAL_ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", crate::common::lab::LOCAL_SECRET_KEY)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env_remove("AWS_PROFILE");
    match &server.ca_file {
        Some(ca) => cmd.env("AWS_CA_BUNDLE", ca),
        None => cmd.env_remove("AWS_CA_BUNDLE"),
    };
    let out = run_limited(&mut cmd, Duration::from_secs(90));
    assert!(out.status.success(), "aws {}:\n{}", args.join(" "), text(&out));
    out
}

fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_aws_cli_copies_lists_and_syncs_exact_bytes_over_http_and_https() {
    let Some(python) = python() else { return };
    for tls in [false, true] {
        let server = serve(tls);
        let root = scratch(if tls { "awscli-https" } else { "awscli-http" });
        let src = root.join("src");
        let files = make_tree(&src);
        let s3_up = format!("s3://{BUCKET}/up/");

        let out = aws(
            &python,
            &server,
            &["s3", "cp", "--recursive", src.to_str().unwrap(), &s3_up],
        );
        let uploads = stdout_lines(&out).iter().filter(|l| l.starts_with("upload:")).count();
        assert_eq!(uploads, files.len(), "{}", text(&out));

        let out = aws(&python, &server, &["s3", "ls", &s3_up]);
        let mut level: Vec<String> = stdout_lines(&out)
            .iter()
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
            .collect();
        level.sort();
        // `aws s3 ls` prints the last word of a key; "g with space.txt" is in dir2/.
        assert_eq!(
            level,
            ["a.txt", "dir1/", "dir2/", "dir3/", "empty.bin"],
            "{}",
            text(&out)
        );

        let out = aws(&python, &server, &["s3", "ls", "--recursive", &s3_up]);
        let mut listed: Vec<(String, usize)> = stdout_lines(&out)
            .iter()
            .map(|l| {
                // DATE TIME SIZE KEY (the key may hold spaces)
                let size = l.split_whitespace().nth(2).unwrap().parse().unwrap();
                let key = l[l.find(" up/").unwrap() + 1..].to_string();
                (key, size)
            })
            .collect();
        listed.sort();
        let expected: Vec<(String, usize)> = files.iter().map(|(k, v)| (format!("up/{k}"), v.len())).collect();
        assert_eq!(listed, expected, "{}", text(&out));

        let down = root.join("down");
        aws(
            &python,
            &server,
            &["s3", "cp", "--recursive", &s3_up, down.to_str().unwrap()],
        );
        assert!(
            read_tree(&down) == files,
            "aws s3 cp --recursive down: the bytes differ"
        );

        let first = sync_up_twice_then_down(&python, &server, &src, &root, &files);
        println!(
            "aws cli ({}): cp --recursive up {} files, ls one level {:?}, ls --recursive {} keys, \
             cp --recursive down exact, sync {} then 0, sync down exact",
            server.endpoint,
            uploads,
            level,
            listed.len(),
            first
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// `aws s3 sync` of `src` up (every file), up again (nothing), and down into `root`:
/// the bytes of `files`. How many the first sync uploaded.
fn sync_up_twice_then_down(
    python: &Path,
    server: &Serve,
    src: &Path,
    root: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> usize {
    let s3_sync = format!("s3://{BUCKET}/sync/");
    let out = aws(python, server, &["s3", "sync", src.to_str().unwrap(), &s3_sync]);
    let first = stdout_lines(&out).iter().filter(|l| l.starts_with("upload:")).count();
    assert_eq!(first, files.len(), "{}", text(&out));
    let out = aws(python, server, &["s3", "sync", src.to_str().unwrap(), &s3_sync]);
    assert!(
        stdout_lines(&out).is_empty(),
        "the second sync copies nothing: {}",
        text(&out)
    );
    let back = root.join("back");
    aws(python, server, &["s3", "sync", &s3_sync, back.to_str().unwrap()]);
    assert!(read_tree(&back) == *files, "aws s3 sync down: the bytes differ");
    first
}

/// rclone, configured for the lab only (remote `lab:`), or `None` when not installed.
fn rclone_present() -> bool {
    Command::new("rclone")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn rclone(server: &Serve, config: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("rclone");
    cmd.args(args)
        .args(["--retries", "1", "--low-level-retries", "1", "--s3-list-chunk", "5"])
        .env("RCLONE_CONFIG", config)
        .env("RCLONE_CONFIG_LAB_TYPE", "s3")
        .env("RCLONE_CONFIG_LAB_PROVIDER", "Other")
        .env("RCLONE_CONFIG_LAB_ACCESS_KEY_ID", crate::common::lab::LOCAL_ACCESS_KEY)
        .env(
            "RCLONE_CONFIG_LAB_SECRET_ACCESS_KEY",
            crate::common::lab::LOCAL_SECRET_KEY,
        )
        .env("RCLONE_CONFIG_LAB_ENDPOINT", &server.endpoint)
        .env("RCLONE_CONFIG_LAB_REGION", "us-east-1")
        .env("RCLONE_CONFIG_LAB_FORCE_PATH_STYLE", "true")
        // rclone hands AWS_CA_BUNDLE to the SDK, which refuses it with rclone's transport.
        .env_remove("AWS_CA_BUNDLE");
    if let Some(ca) = &server.ca_file {
        cmd.arg("--ca-cert").arg(ca);
    }
    let out = run_limited(&mut cmd, Duration::from_secs(90));
    assert!(out.status.success(), "rclone {}:\n{}", args.join(" "), text(&out));
    out
}

#[test]
fn rclone_copies_lists_and_checks_md5_against_etags_over_http_and_https() {
    if !rclone_present() {
        eprintln!(
            "SKIPPED: rclone is not installed (Debian: apt-get install rclone; `make test` installs it when run as root)"
        );
        return;
    }
    for tls in [false, true] {
        let server = serve(tls);
        let root = scratch(if tls { "rclone-https" } else { "rclone-http" });
        let config = root.join("rclone.conf");
        std::fs::write(&config, "").unwrap();
        let src = root.join("src");
        let files = make_tree(&src);
        let remote = format!("lab:{BUCKET}/rc");

        rclone(&server, &config, &["copy", src.to_str().unwrap(), &remote]);
        let out = rclone(&server, &config, &["lsf", &remote]);
        let mut level = stdout_lines(&out);
        level.sort();
        assert_eq!(
            level,
            ["a.txt", "dir1/", "dir2/", "dir3/", "empty.bin"],
            "{}",
            text(&out)
        );
        let out = rclone(&server, &config, &["lsf", "-R", "--files-only", &remote]);
        let mut all = stdout_lines(&out);
        all.sort();
        let expected: Vec<&String> = files.keys().collect();
        assert_eq!(all.iter().collect::<Vec<_>>(), expected, "{}", text(&out));
        let out = rclone(&server, &config, &["check", src.to_str().unwrap(), &remote]);
        let summary = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(summary.contains("0 differences found"), "{}", text(&out));
        assert!(
            summary.contains(&format!("{} matching files", files.len())),
            "rclone check compared every file's MD5 with its ETag: {}",
            text(&out)
        );
        let down = root.join("down");
        rclone(&server, &config, &["copy", &remote, down.to_str().unwrap()]);
        assert!(read_tree(&down) == files, "rclone copy down: the bytes differ");
        println!(
            "rclone ({}): copy up, lsf {:?}, lsf -R {} files, check: {}, copy down exact",
            server.endpoint,
            level,
            all.len(),
            summary
                .lines()
                .filter(|l| l.contains("differences") || l.contains("matching"))
                .collect::<Vec<_>>()
                .join(" / ")
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}

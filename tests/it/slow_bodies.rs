//! Every read bounded in time as well as bytes (issue 53): a result object read from
//! `s3://` (`report`) and a listing of results (`history`) against a server that sends
//! its chunked body at one byte a second end with a clear error at their deadline,
//! never a hang. The deadline is [`s3sweep::s3::results::READ_DEADLINE`]; the test
//! shortens it to 2 s with the debug builds' hook (`S3SWEEP_TEST_READ_DEADLINE_MS`).
//! Before the deadline, both were still hung after 150 s (the 60 s request timeout
//! does not cover a streamed body).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::chunked::{Answer, Chunked};
use crate::common::run_within;
use crate::common::BIN;

/// A server answering every request 200 with a chunked body of one byte a second (at
/// most 10 minutes of it: the test's process ends long before).
async fn trickle() -> String {
    let answer = Answer {
        status: "200 OK",
        content_type: "application/json",
        chunk: b" ".to_vec(),
        chunks: 600,
        pause: Duration::from_secs(1),
    };
    Chunked::start(answer).await.endpoint
}

async fn s3sweep(args: Vec<String>) -> (std::process::Output, Duration) {
    tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let out = run_within(
            "s3sweep against a 1 byte/s server",
            Command::new(BIN)
                .args(&args)
                .env("S3SWEEP_TEST_READ_DEADLINE_MS", "2000"),
            Duration::from_secs(40),
        );
        (out, start.elapsed())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_and_history_end_at_the_read_deadline_against_a_byte_a_second() {
    let endpoint = trickle().await;
    let target = |mut v: Vec<String>| {
        v.extend([
            "--endpoint".into(),
            endpoint.clone(),
            "--credentials".into(),
            "lab".into(),
        ]);
        v
    };
    let cases = [
        (
            target(vec!["report".into(), "s3://results/run.json".into()]),
            "not read whole within 2.0 s",
        ),
        (
            target(vec!["history".into(), "s3://results/runs/".into()]),
            "not listed within 2.0 s",
        ),
    ];
    for (args, needle) in cases {
        let (out, took) = s3sweep(args.clone()).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{args:?}: {:.1} s: {stderr}", took.as_secs_f64());
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
    }
}

/// A FIFO at `path` (no writer ever opens it: a read of it would wait forever).
fn fifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// Every file the CLI reads is read from a regular file only: a device that never
/// ends (`/dev/zero`: 3.6 GB in 3 s before) and a FIFO nobody writes (a hang before)
/// are refused at once, naming the file.
#[test]
fn devices_and_fifos_are_refused_at_once_by_every_file_flag() {
    let d = std::env::temp_dir().join(format!("s3sweep-irregular-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let pipe = d.join("input.json");
    fifo(&pipe);
    let manifest_pipe = d.join("m.json");
    fifo(&manifest_pipe);
    for file in ["/dev/zero".to_string(), pipe.display().to_string()] {
        let f = file.as_str();
        let cases: Vec<Vec<&str>> = vec![
            vec!["serve", "--port", "0", "--iam-policy", f],
            vec![
                "serve",
                "--port",
                "0",
                "--nic",
                "lambda",
                "--lambda-memory-mb",
                "1769",
                "--nic-table",
                f,
            ],
            vec!["preflight", "--event", f],
            vec!["report", f],
            vec!["compare", f, f],
            vec!["run", "--event", f, "--endpoint", "http://127.0.0.1:9"],
        ];
        for args in cases {
            let start = Instant::now();
            let out = run_within(
                "a file flag on a device or FIFO",
                Command::new(BIN).args(&args),
                Duration::from_secs(20),
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            eprintln!("{args:?}: {:.2} s: {}", start.elapsed().as_secs_f64(), stderr.trim());
            assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {stderr}");
            assert!(stderr.contains("not a regular file"), "{args:?}: {stderr}");
            assert!(start.elapsed() < Duration::from_secs(10), "{args:?}");
        }
    }
    let out = run_within(
        "clean of a FIFO manifest",
        Command::new(BIN).args(["clean", "--manifest"]).arg(&manifest_pipe),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a regular file"), "{stderr}");
    let _ = std::fs::remove_dir_all(&d);
}

//! The `s3sweep` binary under faults and for data safety, as a user runs it:
//! `serve --fault` (tally at /_s3sweep/faults and on exit), `clean --manifest`, the
//! file-descriptor budget, and credentials that never show up in any output.
//! Each test starts its own `serve` on a free loopback port and stops it after.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{run_bounded, Serve, BIN};

fn run(args: &[&str]) -> Output {
    run_bounded(Command::new(BIN).args(args).env("RUST_BACKTRACE", "0"))
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("s3sweep-rel-{}-{name}", std::process::id()))
}

fn seed(endpoint: &str, bucket: &str, template: &str, count: u32, manifest: &std::path::Path) -> Output {
    let count = count.to_string();
    let manifest = manifest.display().to_string();
    run(&[
        "seed",
        "--bucket",
        bucket,
        "--key-template",
        template,
        "--count",
        &count,
        "--size",
        "1024",
        "--endpoint",
        endpoint,
        "--manifest",
        &manifest,
    ])
}

fn sweep(endpoint: &str, event: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = tmp(&format!("event-{n}.json"));
    std::fs::write(&path, event).unwrap();
    let p = path.display().to_string();
    let mut args = vec!["run", "--event", &p, "--endpoint", endpoint];
    args.extend_from_slice(extra);
    let out = run(&args);
    let _ = std::fs::remove_file(path);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, doc)
}

#[test]
fn serve_injects_faults_and_reports_the_tally() {
    let server = Serve::start(
        &[],
        &[
            "--bucket",
            "faulty-bucket=none",
            "--fault",
            "faulty-bucket=slow-down:0.2",
            "--fault",
            "faulty-bucket=truncated-body:0.1",
        ],
    );
    let manifest = tmp("faulty-manifest.json");
    let out = seed(&server.endpoint, "faulty-bucket", "t/{i}", 50, &manifest);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (out, doc) = sweep(
        &server.endpoint,
        r#"{"buckets": ["faulty-bucket"], "key_template": "t/{i}", "object_count": 50, "workers": [4], "warmup": false}"#,
        &["--no-preflight"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row = &doc["results"][0];
    let tally = server.tally("/_s3sweep/faults");
    let injected = &tally["tally"]["injected"];
    assert!(injected["slow-down"].as_u64().unwrap() > 0, "{tally}");
    assert_eq!(row["errors"]["throttled"], injected["slow-down"], "{row}");
    assert_eq!(row["errors"]["connection"], injected["truncated-body"], "{row}");
    assert_eq!(tally["tally"]["get_requests"], 50);
    assert_eq!(
        row["ok"].as_u64().unwrap() + row["errors"]["total"].as_u64().unwrap(),
        50
    );
    let printed = server.stop().stdout;
    let total = tally["tally"]["injected_total"].as_u64().unwrap();
    assert!(
        printed.contains(&format!("faults injected: get_requests=50 injected_total={total}")),
        "{printed}"
    );
    let _ = std::fs::remove_file(manifest);
}

#[test]
fn server_errors_are_counted_and_their_connections_retired_without_error_lines() {
    // 5% injected 500s over 1,000 GETs at 8 workers, no retries. The SDK retires the
    // connection of every transient error (its connection-poisoning interceptor); the
    // transport must hand it the connection, or it logs an ERROR per error and the
    // suspect connection is reused.
    let server = Serve::start(
        &[],
        &[
            "--bucket",
            "err-bucket=none",
            "--fault",
            "err-bucket=internal-error:0.05",
        ],
    );
    let manifest = tmp("err-manifest.json");
    let out = seed(&server.endpoint, "err-bucket", "e/{i}", 1000, &manifest);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (out, doc) = sweep(
        &server.endpoint,
        r#"{"buckets": ["err-bucket"], "key_template": "e/{i}", "object_count": 1000, "workers": [8], "pool_connections": 8, "warmup": false}"#,
        &["--no-preflight", "--quiet"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let tally = server.tally("/_s3sweep/faults");
    let injected = tally["tally"]["injected"]["internal-error"].as_u64().unwrap();
    let row = &doc["results"][0];
    eprintln!("errors: {} injected {injected}", row["errors"]);
    assert!(injected > 20, "{tally}");
    assert_eq!(row["errors"]["server_error"].as_u64().unwrap(), injected, "{row}");
    assert_eq!(row["errors"]["total"].as_u64().unwrap(), injected, "{row}");
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("ERROR")).collect();
    assert!(
        error_lines.is_empty(),
        "{} ERROR lines, first: {:?}",
        error_lines.len(),
        error_lines.first()
    );
    // Each error's connection was closed, not reused: a new one took its place (all
    // but the last few, after which no request was left to need one).
    let opened = row["connections_opened"].as_u64().unwrap();
    println!("{injected} injected 500s, {opened} connections opened, 0 ERROR lines");
    assert!(
        opened >= injected,
        "{opened} connections opened for {injected} retired ones"
    );
    let _ = std::fs::remove_file(manifest);
}

#[test]
fn bad_fault_flags_are_clear_errors() {
    let out = run(&[
        "serve",
        "--port",
        "0",
        "--fault",
        "Bad_Bucket=slow-down:0.1",
        "--fault",
        "ok-bucket=explode:0.1",
        "--fault",
        "ok-bucket=slow-down:1.5",
        "--fault",
        "ok-bucket",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in ["Bad_Bucket", "explode", "1.5", "BUCKET=KIND:RATE", "--fault"] {
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    let out = run(&[
        "serve",
        "--port",
        "0",
        "--fault",
        "ok-bucket=slow-down:0.6",
        "--fault",
        "ok-bucket=stall-body:0.6",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("more than 1"), "{err}");
}

#[test]
fn clean_deletes_only_what_the_manifest_recorded() {
    let server = Serve::start(&[], &["--bucket", "safe-bucket=none"]);
    let ours = tmp("ours.json");
    let theirs = tmp("theirs.json");
    // "Someone else's" keys under the same prefix, written first: data/{i}/other.
    let out = seed(&server.endpoint, "safe-bucket", "data/{i}/other", 20, &theirs);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Our keys: data/{i}. Then a second run of ours: nothing new is written.
    let out = seed(&server.endpoint, "safe-bucket", "data/{i}", 30, &ours);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recorded: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    assert_eq!(recorded["written"].as_array().unwrap().len(), 30);

    // Another endpoint than the recorded one is refused.
    let out = run(&[
        "clean",
        "--manifest",
        &ours.display().to_string(),
        "--endpoint",
        "http://127.0.0.1:9",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing"));

    let out = run(&["clean", "--manifest", &ours.display().to_string(), "--batch", "8"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("deleted 30 of the 30 keys"), "{err}");
    let left: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    assert_eq!(left["written"].as_array().unwrap().len(), 0);

    // Ours are gone, theirs all survive.
    let (_, doc) = sweep(
        &server.endpoint,
        r#"{"buckets": ["safe-bucket"], "key_template": "data/{i}", "object_count": 30, "workers": [4], "warmup": false}"#,
        &["--no-preflight"],
    );
    assert_eq!(doc["results"][0]["errors"]["not_found"], 30, "{doc}");
    let (out, doc) = sweep(
        &server.endpoint,
        r#"{"buckets": ["safe-bucket"], "key_template": "data/{i}/other", "object_count": 20, "workers": [4]}"#,
        &[],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(doc["results"][0]["ok"], 20, "{doc}");
    let _ = std::fs::remove_file(ours);
    let _ = std::fs::remove_file(theirs);
}

#[test]
fn too_few_file_descriptors_is_a_clear_error() {
    let event = tmp("fds.json");
    std::fs::write(
        &event,
        r#"{"buckets": ["b-1"], "object_count": 10, "workers": [1024], "pool_connections": 1024}"#,
    )
    .unwrap();
    // A hard limit of 256 that the process cannot raise.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {BIN} run --event {} --endpoint http://127.0.0.1:9",
            event.display()
        ))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not enough file descriptors"), "{err}");
    assert!(err.contains("pool_connections"), "{err}");
    assert!(err.contains("256"), "{err}");
    // A low soft limit under a high hard one is raised, and the run goes ahead (to an
    // endpoint where nothing listens: the preflight says so).
    let hard = s3sweep::sys::limits::nofile().hard;
    if hard >= 2048 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -Sn 256 && exec {BIN} run --event {} --endpoint http://127.0.0.1:9",
                event.display()
            ))
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("not enough file descriptors"), "{err}");
        assert!(err.contains("EndpointUnreachable"), "{err}");
    }
    let _ = std::fs::remove_file(event);
}

#[test]
fn credentials_never_appear_in_logs_errors_or_results() {
    let server = Serve::start(&[], &["--bucket", "secret-bucket=none"]);
    let manifest = tmp("secret-manifest.json");
    let out = seed(&server.endpoint, "secret-bucket", "s/{i}", 5, &manifest);
    assert!(out.status.success());
    let event = tmp("secret-event.json");
    std::fs::write(
        &event,
        r#"{"buckets": ["secret-bucket"], "key_template": "s/{i}", "object_count": 5, "workers": [2], "max_attempts": 2}"#,
    )
    .unwrap();
    let json = tmp("secret-result.json");
    let e = event.display().to_string();
    let j = json.display().to_string();
    let runs: Vec<Vec<&str>> = vec![
        // With the preflight: fails with a start error (the server knows another secret).
        vec![
            "run",
            "--event",
            &e,
            "--endpoint",
            &server.endpoint,
            "--aws-credentials",
        ],
        // Without: every request is counted as an error, with samples in the result.
        vec![
            "run",
            "--event",
            &e,
            "--endpoint",
            &server.endpoint,
            "--aws-credentials",
            "--no-preflight",
            "--json",
            &j,
        ],
    ];
    let mut seen_errors = 0;
    for args in runs {
        let out = Command::new(BIN)
            .args(&args)
            .env("AWS_ACCESS_KEY_ID", "AKIAS3SWEEPCANARY")
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_SESSION_TOKEN", TOKEN)
            .env("RUST_LOG", "trace")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.len() > 1000, "trace logging is on: {} bytes", stderr.len());
        for text in [&stdout, &stderr] {
            assert!(!text.contains(SECRET), "the secret key leaked");
            assert!(!text.contains(TOKEN), "the session token leaked");
        }
        if stderr.contains("AccessDenied") || stdout.contains("access_denied") {
            seen_errors += 1;
        }
    }
    assert_eq!(seen_errors, 2, "both runs failed on the signature, as they should");
    not_even_the_key_id_at_default_and_info_levels(&server, &e);
    let result = std::fs::read_to_string(&json).unwrap();
    assert!(result.contains("error_samples"));
    assert!(!result.contains(SECRET) && !result.contains(TOKEN));
    let printed = server.stop().stdout;
    assert!(!printed.contains(SECRET) && !printed.contains(TOKEN));
    for p in [event, json, manifest] {
        let _ = std::fs::remove_file(p);
    }
}

/// The canary secret key and session token of [`credentials_never_appear_in_logs_errors_or_results`].
const SECRET: &str = "s3sweepSECRETcanary0123456789abcdefXYZ";
const TOKEN: &str = "s3sweepSESSIONTOKENcanary9876543210";

/// `run` of `event` against `server` with the canary keys, at the default and info log
/// levels: the access is denied, and not even the access key ID is printed (the
/// SDK's own debug/trace logs show it, with the secret redacted).
fn not_even_the_key_id_at_default_and_info_levels(server: &Serve, event: &str) {
    for level in [None, Some("info")] {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "run",
            "--event",
            event,
            "--endpoint",
            &server.endpoint,
            "--aws-credentials",
            "--no-preflight",
        ])
        .env("AWS_ACCESS_KEY_ID", "AKIAS3SWEEPCANARY")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_LOG");
        if let Some(level) = level {
            cmd.env("RUST_LOG", level);
        }
        let out = cmd.output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains("access_denied"), "{all}");
        assert!(
            !all.contains("AKIAS3SWEEPCANARY") && !all.contains(SECRET),
            "{level:?}: {all}"
        );
    }
}

/// A client that leaves mid-body (over HTTPS, as the lean client at 256 in flight did)
/// must not end `serve`: rustls writes its alert after the first failed write, and a
/// vectored write (`writev`) to a reset socket raises SIGPIPE, which the binary
/// restores for a closed stdout. Twenty rounds of 64 GETs of a 1 MiB object at once, each connection
/// reset (SO_LINGER 0) at once or after the first bytes of the body; the lab must still answer after.
/// With SIGPIPE's default action in the binary (as it was), `serve` died of signal 13 here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_resetting_mid_body_do_not_end_the_lab() {
    let mut serve = Serve::start(&["reset-bucket=none"], &["--tls"]);
    let ca = serve.ca_file.clone().unwrap();
    let mut options = crate::common::lab::client_options(&serve.endpoint);
    options = options.with_ca_file(Some(ca.clone()));
    let client = s3sweep::sweep_client(options).await.unwrap();
    let s3 = client.s3(crate::common::seed_settings());
    let body = vec![7u8; 1 << 20];
    s3.put_object()
        .bucket("reset-bucket")
        .key("big")
        .body(body.into())
        .send()
        .await
        .unwrap();
    let (addr, request) = presigned_get(&s3, "reset-bucket", "big").await;
    let connector = tls_connector(&ca);
    let request = Arc::new(request);
    for round in 0..20 {
        let mut tasks = Vec::new();
        for i in 0..64u64 {
            let (connector, addr, request) = (connector.clone(), addr.clone(), request.clone());
            // Half read the first bytes of the body, half leave at once.
            let read_first = (i + round) % 2 == 0;
            tasks.push(tokio::spawn(reset_mid_body(connector, addr, request, read_first)));
        }
        for t in tasks {
            t.await.unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        serve.child.try_wait().unwrap().is_none(),
        "serve ended: {:?}",
        serve.child.try_wait()
    );
    assert!(s3.head_object().bucket("reset-bucket").key("big").send().await.is_ok());
}

/// A presigned GET of `bucket`/`key`: the address to connect to and the raw request.
async fn presigned_get(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> (String, String) {
    let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(300)).unwrap();
    let url = s3.get_object().bucket(bucket).key(key).presigned(config).await.unwrap();
    let uri: http::Uri = url.uri().parse().unwrap();
    let addr = format!("{}:{}", uri.host().unwrap(), uri.port_u16().unwrap());
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\n\r\n",
        uri.path_and_query().unwrap(),
        uri.authority().unwrap()
    );
    (addr, request)
}

/// A TLS connector trusting only the CA in `ca`.
fn tls_connector(ca: &std::path::Path) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(tls))
}

/// One client that sends `request` over TLS to `addr`, reads the body's first bytes
/// when `read_first`, and resets the connection (SO_LINGER 0) while the lab still has
/// megabytes to send. A lab that died refuses or resets: the caller's check says so.
async fn reset_mid_body(connector: tokio_rustls::TlsConnector, addr: String, request: Arc<String>, read_first: bool) {
    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(tcp) = tokio::net::TcpStream::connect(&addr).await else {
        return;
    };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&tcp);
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let Ok(mut stream) = connector.connect(name, tcp).await else {
        return;
    };
    if stream.write_all(request.as_bytes()).await.is_err() {
        return;
    }
    if read_first {
        let mut first = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut first)).await;
    }
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket this task owns, with a valid struct and size.
    unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(stream);
}

//! Every command's failures as a user sees them: one line on stderr that names what
//! failed (the kind, the bucket or key, the endpoint) and what to do, a non-zero exit
//! status, and never the SDK's debug dump or a backtrace, even with RUST_BACKTRACE=1.
//! Per command: endpoint down, bucket missing, access denied, a bad flag (and bad
//! files for `report` and `compare`). Each test starts its own `serve` on a free port.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{run_bounded, Serve, BIN};

/// A `serve` with `here-bucket` (5 objects written by `seed`, manifest kept) and
/// `denied-bucket`, whose every GET is refused with 403 AccessDenied.
struct Lab {
    serve: Serve,
    manifest: PathBuf,
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("s3sweep-errors-{}-{name}", std::process::id()))
}

fn lab(name: &str) -> Lab {
    let serve = Serve::start(
        &["here-bucket=none", "denied-bucket=none"],
        &["--fault", "denied-bucket=access-denied:1"],
    );
    let manifest = tmp(&format!("{name}-manifest.json"));
    let out = cmd(&[
        "seed",
        "--bucket",
        "here-bucket",
        "--count",
        "5",
        "--size",
        "100",
        "--endpoint",
        &serve.endpoint,
        "--manifest",
        &manifest.display().to_string(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Lab { serve, manifest }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.manifest);
    }
}

/// The binary with `args`, backtraces asked for, no log filter, no AWS keys.
fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LIB_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE");
    c
}

/// Runs a command that must fail; returns its one stderr line, checked.
fn fails(c: &mut Command) -> String {
    let out = run_bounded(c);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "succeeded:\n{stderr}");
    assert_ne!(out.status.code(), Some(101), "a panic, not an error:\n{stderr}");
    for noise in [
        "ServiceError(",
        "DispatchFailure(",
        "stack backtrace",
        "panicked",
        "Caused by",
    ] {
        assert!(!stderr.contains(noise), "{noise:?} in:\n{stderr}");
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    lines[0].to_string()
}

fn has_all(line: &str, needles: &[&str]) {
    for n in needles {
        assert!(line.contains(n), "{n:?} missing in: {line}");
    }
}

/// A port nothing listens on.
fn closed_endpoint() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

/// A manifest of `bucket` at `endpoint` recording two keys (with an owner marker:
/// `clean` refuses one without before it sends anything).
fn manifest(name: &str, bucket: &str, endpoint: &str) -> PathBuf {
    let path = tmp(name);
    std::fs::write(
        &path,
        serde_json::json!({
            "schema": "s3sweep.manifest/v3",
            "owner_marker": "0123456789abcdef0123456789abcdef",
            "bucket": bucket,
            "endpoint": endpoint,
            "key_template": "test/{i}/vectors",
            "object_size_bytes": 100,
            "written": ["test/0/vectors", "test/1/vectors"],
            "skipped_existing": 0
        })
        .to_string(),
    )
    .unwrap();
    path
}

#[test]
fn endpoint_down_is_one_line_naming_the_endpoint() {
    let down = closed_endpoint();
    let unreachable = ["EndpointUnreachable", &down, "check that the endpoint is up"];
    let line = fails(&mut cmd(&["run", "--bucket", "some-bucket", "--endpoint", &down]));
    has_all(&line, &unreachable);
    has_all(&line, &["\"some-bucket\""]);
    let line = fails(&mut cmd(&[
        "seed",
        "--bucket",
        "some-bucket",
        "--count",
        "3",
        "--endpoint",
        &down,
    ]));
    has_all(&line, &unreachable);
    let m = manifest("down-manifest.json", "some-bucket", &down);
    let line = fails(&mut cmd(&["clean", "--manifest", &m.display().to_string()]));
    has_all(&line, &unreachable);
    // The keys stay recorded.
    assert!(std::fs::read_to_string(&m).unwrap().contains("test/1/vectors"));
    let _ = std::fs::remove_file(m);
    // Forced credentials skip the probe: the preflight says the same.
    let line = fails(&mut cmd(&[
        "run",
        "--bucket",
        "some-bucket",
        "--endpoint",
        &down,
        "--credentials",
        "lab",
    ]));
    has_all(&line, &unreachable);
}

#[test]
fn a_missing_bucket_is_one_line_with_advice() {
    let lab = lab("missing");
    let ep = lab.serve.endpoint.as_str();
    let line = fails(&mut cmd(&["run", "--bucket", "missing-bucket", "--endpoint", ep]));
    has_all(&line, &["BucketNotFound", "\"missing-bucket\"", ep, "create it"]);
    let seed_manifest = tmp("missing-seed-manifest.json");
    let line = fails(&mut cmd(&[
        "seed",
        "--bucket",
        "missing-bucket",
        "--count",
        "3",
        "--endpoint",
        ep,
        "--manifest",
        &seed_manifest.display().to_string(),
    ]));
    has_all(&line, &["BucketNotFound", "\"missing-bucket\"", ep, "--create-bucket"]);
    let m = manifest("missing-manifest.json", "missing-bucket", ep);
    let line = fails(&mut cmd(&["clean", "--manifest", &m.display().to_string()]));
    has_all(&line, &["BucketNotFound", "\"missing-bucket\"", ep, "2 key(s) stay in"]);
    let _ = std::fs::remove_file(m);
    // A missing object is not a missing bucket.
    let line = fails(&mut cmd(&[
        "run",
        "--bucket",
        "here-bucket",
        "--key-template",
        "other/{i}",
        "--endpoint",
        ep,
    ]));
    has_all(&line, &["ObjectNotFound", "here-bucket\"/other/0", "s3sweep seed"]);
}

#[test]
fn access_denied_is_one_line_with_advice() {
    let lab = lab("denied");
    let ep = lab.serve.endpoint.as_str();
    // Every GET of denied-bucket is refused (fault profile).
    let line = fails(&mut cmd(&["run", "--bucket", "denied-bucket", "--endpoint", ep]));
    has_all(
        &line,
        &[
            "AccessDenied",
            "reading \"denied-bucket\"/test/0/vectors",
            ep,
            "s3:GetObject",
        ],
    );
    wrong_keys_are_refused_with_advice(&lab);
}

/// Keys the lab does not accept (the lab's key id with a wrong secret): `seed`, `clean`
/// and `run` each fail in one line naming AccessDenied and what to do.
fn wrong_keys_are_refused_with_advice(lab: &Lab) {
    let ep = lab.serve.endpoint.as_str();
    let wrong_keys = |c: &mut Command| {
        c.env("AWS_ACCESS_KEY_ID", "s3sweep")
            .env("AWS_SECRET_ACCESS_KEY", "not-the-lab-secret");
    };
    let mut c = cmd(&[
        "seed",
        "--bucket",
        "here-bucket",
        "--count",
        "3",
        "--endpoint",
        ep,
        "--credentials",
        "chain",
        "--manifest",
        &tmp("denied-seed-manifest.json").display().to_string(),
    ]);
    wrong_keys(&mut c);
    let line = fails(&mut c);
    has_all(
        &line,
        // seed's first write is its probe of the endpoint's If-None-Match (guards).
        &[
            "AccessDenied",
            "writing \"here-bucket\"/s3sweep-probe-put-",
            ep,
            "credentials",
        ],
    );
    let mut c = cmd(&[
        "clean",
        "--manifest",
        &lab.manifest.display().to_string(),
        "--credentials",
        "chain",
    ]);
    wrong_keys(&mut c);
    let line = fails(&mut c);
    has_all(
        &line,
        &[
            "AccessDenied",
            "deleting bucket \"here-bucket\"",
            ep,
            "SignatureDoesNotMatch",
            "refused the credentials",
            "5 key(s) stay in",
        ],
    );
    let mut c = cmd(&[
        "run",
        "--bucket",
        "here-bucket",
        "--objects",
        "5",
        "--endpoint",
        ep,
        "--credentials",
        "chain",
    ]);
    wrong_keys(&mut c);
    let line = fails(&mut c);
    has_all(
        &line,
        &["AccessDenied", "SignatureDoesNotMatch", "refused the credentials"],
    );
}

#[test]
fn bad_flags_are_one_line_naming_the_flag() {
    let cases: [(&[&str], &[&str]); 9] = [
        (&["run", "--buckt", "x"], &["--buckt", "--bucket", "s3sweep run --help"]),
        (
            &["run", "--bucket", "Bad_Name", "--workers", "0"],
            &["--bucket", "--workers"],
        ),
        (&["run"], &["--bucket", "--event"]),
        (
            &["seed", "--bucket", "b-1", "--count", "many"],
            &["--count", "s3sweep seed --help"],
        ),
        (&["clean", "--manifest", "m.json", "--batch", "0"], &["--batch"]),
        (&["local", "--workers", "0,2"], &["--workers"]),
        (
            &["report", "r.json", "--lambda-memory-mb", "1"],
            &["--lambda-memory-mb"],
        ),
        (
            &["compare", "--bucket-x", "a"],
            &["--bucket-x", "s3sweep compare --help"],
        ),
        (&["serve", "--fault", "nope"], &["--fault", "BUCKET=KIND:RATE"]),
    ];
    for (args, needles) in cases {
        let out = run_bounded(&mut cmd(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = fails(&mut cmd(args));
        has_all(&line, needles);
    }
    // Help is not an error.
    let out = run_bounded(&mut cmd(&["run", "--help"]));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--print-event"));
}

#[test]
fn bad_files_for_report_and_compare_are_one_line_with_advice() {
    let not_json = tmp("not-json.json");
    std::fs::write(&not_json, "zzz").unwrap();
    let other = tmp("other.json");
    std::fs::write(&other, r#"{"schema": "s3sweep.manifest/v1"}"#).unwrap();
    let missing = tmp("absent.json");
    let advice = "give a result JSON";
    for (path, why) in [
        (&missing, "No such file"),
        (&not_json, "not a JSON document"),
        (&other, "not an s3sweep result"),
    ] {
        let p = path.display().to_string();
        for args in [vec!["report", p.as_str()], vec!["compare", p.as_str()]] {
            let line = fails(&mut cmd(&args));
            has_all(&line, &[&p, why, advice]);
        }
    }
    let _ = std::fs::remove_file(not_json);
    let _ = std::fs::remove_file(other);
}

//! Issue 24: the boto3 baseline function (`baseline/handler.py`), run by the test
//! suite's own Python (`common::bench_python`) against the lab's Standard-like and
//! directory buckets over HTTPS with the lab's CA. Its answer must be a result that
//! the real `s3sweep compare` reads beside s3sweep's own run of the same event, with
//! every object read, errors counted by s3sweep's kinds, read-only S3 Express sessions
//! (the role allows no other), and a CPU per GET that comes from its own process clock:
//! within the process's own CPU time, well under a GET's latency at one worker (a wall
//! clock would not be), and larger by the work added when each GET does more.
//!
//! CPU figures: in the Makefile's TIMED_TESTS, and holding `one_at_a_time`.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{bench_python, one_at_a_time, run_bounded, Serve, BIN};

const STANDARD: &str = "baseline-std";
const EXPRESS: &str = "baseline--lab1-az1--x-s3";
const OBJECTS: u64 = 20;
const SIZE: u64 = 4096;
/// CPU each GET burns on top in the heavier run, ms (its thread's own clock). Large
/// beside the spread of a Python GET's own CPU between rows of 20 GETs, which reaches
/// a few ms on a busy machine: the heavier row must clear the plain rows' highest by
/// half of it (docs/testing.md, "Thresholds on a slower or busier machine").
const BURN_MS: f64 = 10.0;

/// Runs the handler in-process three ways, printing one JSON object: `plain` (the
/// event), `plain_process_cpu_ms` (this process's CPU over that call, measured here
/// and not by the handler), `heavier` (the event `heavier_event`, each GET burning
/// BURN_MS of CPU first), `bad` (the message of a bad event).
const DRIVER: &str = r#"
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import handler

def cpu_ms():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000

event, heavier_event, burn_ms = json.loads(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])
c0 = cpu_ms()
plain = handler.handler(event, None)
plain_cpu = cpu_ms() - c0
get = handler.Reader.get
def burning_get(self, bucket, key):
    until = time.thread_time() + burn_ms / 1000
    while time.thread_time() < until:
        pass
    return get(self, bucket, key)
handler.Reader.get = burning_get
heavier = handler.handler(heavier_event, None)
try:
    handler.handler({"buckets": [], "workers": [0, 2], "fanout": {"invocations": 2}, "bogus": 1}, None)
    bad = None
except handler.BadEvent as e:
    bad = str(e)
print(json.dumps({"plain": plain, "plain_process_cpu_ms": plain_cpu, "heavier": heavier, "bad": bad}))
"#;

/// The bench venv's Python set up to run the baseline handler against the lab at
/// `endpoint` (its CA `ca`, the lab's keys, no AWS profile or Lambda name).
fn baseline_python(python: &Path, endpoint: &str, ca: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.env("S3SWEEP_ENDPOINT_URL", endpoint)
        .env("AWS_CA_BUNDLE", ca)
        .env("AWS_ACCESS_KEY_ID", "s3sweep")
        .env("AWS_SECRET_ACCESS_KEY", "s3sweep-local-secret")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env_remove("AWS_LAMBDA_FUNCTION_NAME")
        .env_remove("AWS_PROFILE");
    cmd
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rows<'a>(doc: &'a Value, bucket: &str) -> Vec<&'a Value> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["bucket"] == bucket)
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_baseline_handler_reads_the_lab_and_compares_with_s3sweep() {
    let Some(python) = bench_python("the baseline function test") else {
        return;
    };
    let _one = one_at_a_time();
    let server = Serve::start(
        &[&format!("{STANDARD}=standard"), &format!("{EXPRESS}=express")],
        &["--tls"],
    );
    let dir = std::env::temp_dir().join(format!("s3sweep-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for bucket in [STANDARD, EXPRESS] {
        server.seed(bucket, OBJECTS, SIZE, &dir.join(format!("manifest-{bucket}.json")));
    }

    let event =
        json!({"buckets": [STANDARD, EXPRESS], "object_count": OBJECTS, "workers": [1, 8], "pool_connections": 8});
    // The heavier run also asks for 4 objects that do not exist: errors by kind.
    let heavier = json!({"buckets": [EXPRESS], "object_count": OBJECTS + 4, "workers": [4], "pool_connections": 4});
    let got = run_the_driver(&python, &server, &event, &heavier);
    let plain = &got["plain"];
    every_object_is_read_in_s3sweeps_row_shape(plain);
    cpu_per_get_is_the_process_clocks(&got);
    // A bad event names each bad field.
    let bad = got["bad"]
        .as_str()
        .unwrap_or_else(|| panic!("a bad event was accepted: {got}"));
    for field in ["buckets", "workers[0]", "fanout", "bogus"] {
        assert!(bad.contains(field), "{field} not named in {bad:?}");
    }
    s3sweep_compares_its_run_with_the_baselines(&server, &dir, plain, &event);

    // Stop the lab (SIGTERM): its tally shows the baseline's sessions were read-only
    // (seeding's one ReadWrite session is the only one).
    let stopped = server.stop();
    let sessions = stopped.stderr_line("S3 Express sessions:");
    assert!(sessions.contains("ReadWrite=1"), "{sessions}");
    assert!(!sessions.contains("ReadOnly=0"), "{sessions}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`DRIVER`] run by `python` against `server` with `event` and `heavier`: its JSON.
fn run_the_driver(python: &Path, server: &Serve, event: &Value, heavier: &Value) -> Value {
    let ca = server.ca_file.clone().unwrap();
    let out = run_bounded(
        baseline_python(python, &server.endpoint, &ca)
            .args(["-c", DRIVER])
            .arg(root().join("baseline"))
            .args([event.to_string(), heavier.to_string(), BURN_MS.to_string()]),
    );
    assert!(
        out.status.success(),
        "the handler failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every object of both buckets read at both worker counts, in s3sweep's row shape.
fn every_object_is_read_in_s3sweeps_row_shape(plain: &Value) {
    assert_eq!(plain["schema"], "s3sweep.result/v1");
    assert!(
        plain["tool"]["client"].as_str().unwrap().starts_with("boto3 "),
        "{}",
        plain["tool"]
    );
    for bucket in [STANDARD, EXPRESS] {
        let mine = rows(plain, bucket);
        assert_eq!(mine.len(), 2, "{bucket}: {mine:?}");
        for r in &mine {
            assert_eq!(r["ok"].as_u64(), Some(OBJECTS), "{r}");
            assert_eq!(r["bytes"].as_u64(), Some(OBJECTS * SIZE), "{r}");
            assert_eq!(r["errors"]["total"].as_u64(), Some(0), "{r}");
        }
    }
    assert!(plain["not_measured"]
        .as_array()
        .unwrap()
        .contains(&json!("pool_wait_ms")));
}

/// CPU per GET from the process clock: positive; in total no more than the CPU this
/// process spent over the call (measured by the driver); at one worker on the
/// Standard-like bucket far below a GET's time to last byte, which a wall clock would
/// equal; and more work per GET shows in it.
fn cpu_per_get_is_the_process_clocks(got: &Value) {
    let plain = &got["plain"];
    let cpu_sum: f64 = plain["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| f(&r["cpu_ms"]))
        .sum();
    let process = f(&got["plain_process_cpu_ms"]);
    assert!(
        cpu_sum > 0.0 && cpu_sum <= process + 1.0,
        "rows {cpu_sum} ms, process {process} ms"
    );
    for r in plain["results"].as_array().unwrap() {
        let per_get = f(&r["cpu_ms_per_get"]);
        assert!(per_get > 0.01 && per_get < 50.0, "implausible CPU per GET: {r}");
    }
    let one = rows(plain, STANDARD).into_iter().find(|r| r["workers"] == 1).unwrap();
    assert!(
        f(&one["cpu_ms_per_get"]) < 0.75 * f(&one["ttlb_ms"]["mean"]),
        "CPU per GET {} ms is not below 3/4 of the GET's {} ms at one worker: a wall clock?",
        one["cpu_ms_per_get"],
        one["ttlb_ms"]["mean"]
    );
    // More work per GET shows in the CPU per GET.
    let heavier = &got["heavier"]["results"][0];
    let before = rows(plain, EXPRESS)
        .into_iter()
        .map(|r| f(&r["cpu_ms_per_get"]))
        .fold(0.0, f64::max);
    assert!(
        f(&heavier["cpu_ms_per_get"]) >= before + 0.5 * BURN_MS,
        "burning {BURN_MS} ms per GET moved CPU per GET from {before} to {}",
        heavier["cpu_ms_per_get"]
    );
    assert_eq!(heavier["errors"]["not_found"].as_u64(), Some(4), "{heavier}");
    assert_eq!(heavier["errors"]["total"].as_u64(), Some(4), "{heavier}");
}

/// s3sweep runs the same event; the real binary compares the two: the baseline's
/// client and CPU per GET are named, what it did not measure said, and each pair of
/// rows has a median CPU per GET on both sides.
fn s3sweep_compares_its_run_with_the_baselines(server: &Serve, dir: &Path, plain: &Value, event: &Value) {
    let ca = server.ca_file.clone().unwrap();
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, plain.to_string()).unwrap();
    let event_file = dir.join("event.json");
    std::fs::write(&event_file, event.to_string()).unwrap();
    let s3sweep = dir.join("s3sweep.json");
    let out = run_bounded(
        Command::new(BIN)
            .args(["run", "--endpoint", &server.endpoint, "--credentials", "lab"])
            .arg("--ca-file")
            .arg(&ca)
            .arg("--event")
            .arg(&event_file)
            .arg("--json")
            .arg(&s3sweep),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_bounded(Command::new(BIN).arg("compare").arg(&baseline).arg(&s3sweep));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "compare failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{table}");
    assert!(table.contains("client boto3"), "{table}");
    assert!(table.contains("A cpu ms/GET"), "{table}");
    assert!(table.contains("A did not measure ttfb_ms"), "{table}");
    let out = run_bounded(
        Command::new(BIN)
            .args(["compare", "--json"])
            .arg(&baseline)
            .arg(&s3sweep),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["pairs"].as_array().unwrap().len(), 2, "{c}");
    for config in c["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["configs"].as_array().unwrap())
    {
        assert!(f(&config["a"]["median_cpu_ms_per_get"]) > 0.0, "{config}");
        assert!(f(&config["b"]["median_cpu_ms_per_get"]) > 0.0, "{config}");
    }
}

/// Issue 33: a baseline worker is a thread and Lambda allows 1,024 threads per
/// execution environment: the handler refuses more workers than fit (it accepted
/// 4,096), saying why, and takes 1,000.
#[test]
fn the_baseline_refuses_more_workers_than_lambda_has_threads() {
    let Some(python) = bench_python("the_baseline_refuses_more_workers_than_lambda_has_threads") else {
        return;
    };
    let driver = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import handler
out = {"ok": handler.validate({"buckets": ["b-1"], "workers": [1, 1000]})["workers"]}
for w in (1025, 4096):
    try:
        handler.validate({"buckets": ["b-1"], "workers": [w]})
        out[str(w)] = None
    except handler.BadEvent as e:
        out[str(w)] = str(e)
print(json.dumps(out))
"#;
    let out = Command::new(python)
        .args(["-c", driver])
        .arg(root().join("baseline"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], json!([1, 1000]));
    for w in ["1025", "4096"] {
        let message = doc[w].as_str().unwrap_or_else(|| panic!("{w} workers accepted: {doc}"));
        assert!(
            message.contains(&format!("workers[0]: {w} is not an integer from 1 to 1000"))
                && message.contains("1,024 threads"),
            "{message}"
        );
    }
}

/// The baseline handler run once by `python` with `event` against `server` (off the
/// runtime's threads).
async fn handle(python: &Path, server: &crate::common::lab::RunningServer, event: &Value) -> std::process::Output {
    let (endpoint, ca) = (server.endpoint(), server.ca_file().unwrap().to_path_buf());
    let (python, event) = (python.to_path_buf(), event.to_string());
    tokio::task::spawn_blocking(move || {
        run_bounded(
            baseline_python(&python, &endpoint, &ca)
                .args(["-c", "import json, sys; sys.path.insert(0, sys.argv[1]); import handler; print(json.dumps(handler.handler(json.loads(sys.argv[2]), None)))"])
                .arg(root().join("baseline"))
                .arg(event),
        )
    })
    .await
    .unwrap()
}

/// Issue 33: the baseline's S3 calls run under its own role as SAM expands it
/// (`Baseline=enabled`), enforced by the lab as S3 does: every GET of the Standard-like
/// bucket (s3:GetObject) and of the directory bucket (a ReadOnly CreateSession, then
/// the session's reads) is allowed, none refused; a missing key is `not_found` (the
/// role may list the Standard bucket: without it S3 answers 403). The enforcement is
/// real: the same role allows no PutObject and no ReadWrite session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_baseline_reads_under_its_expanded_role() {
    use std::sync::Arc;

    use crate::common::iam::{baseline_role, Enforcer};
    use crate::common::lab::LatencyProfile;
    use crate::common::{EXPRESS_BUCKET, STANDARD_BUCKET};

    let Some(python) = bench_python("the baseline under its role") else {
        return;
    };
    let enforcer = Arc::new(Enforcer::new(baseline_role()));
    let server = crate::common::LabBuilder::new()
        .bucket(STANDARD_BUCKET, LatencyProfile::None)
        .bucket(EXPRESS_BUCKET, LatencyProfile::None)
        .tls()
        .seed(STANDARD_BUCKET, 8, 256)
        .seed(EXPRESS_BUCKET, 8, 256)
        .iam(enforcer.clone())
        .server()
        .await;

    let event =
        json!({"buckets": [STANDARD_BUCKET, EXPRESS_BUCKET], "object_count": 8, "workers": [2], "pool_connections": 2});
    let out = handle(&python, &server, &event).await;
    assert!(
        out.status.success(),
        "the handler failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(enforcer.denials().is_empty(), "refused: {:?}", enforcer.denials());
    for bucket in [STANDARD_BUCKET, EXPRESS_BUCKET] {
        let mine = rows(&got, bucket);
        assert_eq!(mine.len(), 1, "{bucket}: {got}");
        assert_eq!(mine[0]["ok"].as_u64(), Some(8), "{}", mine[0]);
        assert_eq!(mine[0]["errors"]["total"].as_u64(), Some(0), "{}", mine[0]);
    }
    // A missing key: S3 answers 404 only to a caller with s3:ListBucket on the bucket,
    // 403 AccessDenied without it (GetObject API reference, Permissions). The baseline
    // may list the Standard bucket, as s3sweep's role may, so both count a missing key
    // as not_found and compare-baseline compares like with like.
    let missing = json!({"buckets": [STANDARD_BUCKET], "object_count": 10, "workers": [2], "pool_connections": 2});
    let out = handle(&python, &server, &missing).await;
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows(&got, STANDARD_BUCKET)[0];
    eprintln!(
        "the baseline reading 2 missing keys under its role: errors {}",
        row["errors"]
    );
    assert_eq!(row["errors"]["not_found"].as_u64(), Some(2), "{row}");
    assert_eq!(row["errors"]["access_denied"].as_u64(), Some(0), "{row}");
    let object = format!("arn:aws:s3:::{STANDARD_BUCKET}/test/0/vectors");
    assert!(enforcer.authorize("s3:PutObject", &object, &[]).is_err());
    assert!(enforcer
        .authorize("s3:ListBucket", &format!("arn:aws:s3:::{EXPRESS_BUCKET}"), &[])
        .is_err());
    let directory = format!("arn:aws:s3express:us-east-1:123456789012:bucket/{EXPRESS_BUCKET}");
    let read_write = [("s3express:SessionMode", "ReadWrite")];
    assert!(enforcer
        .authorize("s3express:CreateSession", &directory, &read_write)
        .is_err());
}

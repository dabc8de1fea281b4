//! The client under a CPU quota (`--cpu-quota`, a cgroup of its own): at 64 workers the
//! verdict is `client_cpu` with about a quarter of a core usable and the quota named as
//! its source; without a quota the same machine reports its cores. The emulated memory
//! sweep (`--lambda-memory-mb 256,512,1769`): each step within its quota, objects/s rising with
//! the quota until latency binds. `--clients sdk,lean` under half a core: the SDK row
//! says what the lean client reached beside it.

use std::process::Command;

use crate::common::{self, run_bounded, BIN, EXPRESS_BUCKET, STANDARD_BUCKET};

fn local(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let json = std::env::temp_dir().join(format!("s3sweep-quota-{}-{}.json", std::process::id(), extra.len()));
    let path = json.display().to_string();
    let mut args = vec![
        "local",
        "--quiet",
        "--objects",
        "300",
        "--workers",
        "64",
        "--json",
        &path,
    ];
    args.extend_from_slice(extra);
    let out = run_bounded(Command::new(BIN).args(&args));
    let doc = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let _ = std::fs::remove_file(json);
    (out, doc)
}

#[test]
fn under_a_quarter_core_the_client_is_cpu_bound_and_says_why() {
    let _one = common::one_at_a_time();
    let (out, doc) = local(&["--cpu-quota", "0.25"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("cannot set a CPU quota here") {
        // Only where this machine refuses cgroups (not root); CI runs as root.
        eprintln!("SKIPPED: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert_eq!(doc["environment"]["usable_cores"], 0.25, "{}", doc["environment"]);
    for row in doc["results"].as_array().unwrap() {
        let client = &row["client"];
        assert_eq!(client["usable_cores"], 0.25, "{row}");
        let source = client["cpu_source"].as_str().unwrap();
        assert!(source == "cgroup_v1" || source == "cgroup_v2", "{source}");
        assert_eq!(row["diagnosis"]["verdict"], "client_cpu", "{}", row["diagnosis"]);
        let explanation = row["diagnosis"]["explanation"].as_str().unwrap();
        assert!(explanation.contains("0.25 usable (the CPU quota)"), "{explanation}");
        // The client used about its quota, not the machine's two cores.
        assert!(client["cores_busy"].as_f64().unwrap() < 0.4, "{client}");
    }
    // The model line speaks of the fraction, not of "0 cores".
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("per GET on P = 0.25 core(s)"), "{stdout}");
}

#[test]
fn bad_quotas_are_named() {
    let out = run_bounded(Command::new(BIN).args(["local", "--cpu-quota", "0"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--cpu-quota"), "{stderr}");
    let out = run_bounded(Command::new(BIN).args(["local", "--lambda-memory-mb", "64"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--lambda-memory-mb") && stderr.contains("128"),
        "{stderr}"
    );
}

/// The emulated memory sweep: `--lambda-memory-mb 256,512,1769` runs the sweep once per
/// size under MB / 1,769 cores. Each step's client uses its quota and no more,
/// objects/s at 64 workers rises with the quota, and once the quota is large enough the few-worker configuration is bound by
/// latency, not CPU.
#[test]
fn an_emulated_memory_sweep_scales_with_the_quota_until_latency_binds() {
    let _one = common::one_at_a_time();
    let (out, doc) = local(&["--lambda-memory-mb", "256,512,1769", "--workers", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("cannot set a CPU quota here") {
        eprintln!("SKIPPED: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("memory MB") && stdout.contains("256*"), "{stdout}");
    assert!(
        stdout.contains("256 MB emulated (client CPU quota 0.145 cores"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("memory for {EXPRESS_BUCKET}: fastest")),
        "{stdout}"
    );
    assert_eq!(doc["memory"]["mode"], "emulated");
    let cores: Vec<f64> = doc["memory"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cores"].as_f64().unwrap())
        .collect();
    assert_eq!(cores, vec![0.1447, 0.2894, 1.0]);
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 2 * 2);
    assert!(
        rows.iter().all(|r| r["emulated"] == true),
        "every row is marked emulated"
    );
    for bucket in [STANDARD_BUCKET, EXPRESS_BUCKET] {
        throughput_follows_the_quota_the_client_used(rows, bucket);
    }
    // With a core, four requests in flight wait on latency, not on the CPU.
    assert_eq!(row_at(rows, EXPRESS_BUCKET, 1769, 4)["diagnosis"]["verdict"], "latency");
    assert_eq!(
        row_at(rows, EXPRESS_BUCKET, 256, 4)["diagnosis"]["verdict"],
        "client_cpu"
    );
}

/// The row of `bucket` at `mb` MB and `workers`.
fn row_at<'r>(rows: &'r [serde_json::Value], bucket: &str, mb: u64, workers: u64) -> &'r serde_json::Value {
    rows.iter()
        .find(|r| r["bucket"] == bucket && r["memory_mb"] == mb && r["workers"] == workers)
        .unwrap_or_else(|| panic!("no row {bucket} {mb} MB {workers} workers"))
}

/// `bucket`'s rows at 64 workers: objects/s rise with the quota, each step's client
/// used its quota and no more, and at 256 MB the diagnosis is the client's CPU.
fn throughput_follows_the_quota_the_client_used(rows: &[serde_json::Value], bucket: &str) {
    let at = |bucket: &str, mb: u64, workers: u64| row_at(rows, bucket, mb, workers);
    let rate = |mb| at(bucket, mb, 64)["objects_per_s"].as_f64().unwrap();
    let cpu = |mb| at(bucket, mb, 64)["cpu_ms_per_get"].as_f64().unwrap();
    eprintln!(
        "{bucket} at 64 workers: objects/s {:.0} / {:.0} / {:.0}, cpu ms per GET {:.3} / {:.3} / {:.3}",
        rate(256),
        rate(512),
        rate(1769),
        cpu(256),
        cpu(512),
        cpu(1769)
    );
    // Throughput rises with the quota (ratios of rows of one run), checked where
    // the effect is large: from 256 to 1,769 MB the quota grows 6.9x (measured on a
    // quiet 2-core machine: 5.1x the objects/s on the Standard-like bucket, 6.3x on
    // the Express-like one); without the quota the three rates are alike. The step
    // to 512 MB (2x the quota) is only checked to rise: one quiet run measured
    // 1.16x on the Express-like bucket, so a 1.4x bound there failed by noise.
    assert!(
        rate(1769) > 2.0 * rate(256),
        "{bucket}: {} vs {}",
        rate(1769),
        rate(256)
    );
    assert!(rate(512) > rate(256), "{bucket}: {} vs {}", rate(512), rate(256));
    // ...because each step's client used its quota and no more: CPU time is a
    // CPU clock, so a row's `cpu_ms` cannot pass what the quota hands out over its
    // wall time, give or take the period it started in (100 ms) and the kernel's
    // overrun of a few %. CPU counted over all three steps would put the 1,769 MB
    // row at several cores; a step run without its quota would put the 256 MB row
    // at most of a core. The 256 MB row also used at least half its quota (it is
    // bound by it). CPU per GET is not compared between steps: under 0.145 cores a
    // debug client spends 1.5x-2.5x the CPU per GET it spends under a core
    // (docs/testing.md).
    for (mb, cores) in [(256, 0.1447), (1769, 1.0)] {
        let row = at(bucket, mb, 64);
        let cpu_ms = row["cpu_ms"].as_f64().unwrap();
        let wall_ms = row["wall_ms"].as_f64().unwrap();
        let most = 1.05 * cores * (wall_ms + 100.0);
        assert!(
            cpu_ms <= most,
            "{bucket} {mb} MB: {cpu_ms} ms of CPU in {wall_ms} ms under {cores} cores"
        );
    }
    let row = at(bucket, 256, 64);
    let busy = row["cpu_ms"].as_f64().unwrap() / row["wall_ms"].as_f64().unwrap();
    assert!(busy > 0.5 * 0.1447, "{bucket} 256 MB: {busy} cores busy");
    assert_eq!(at(bucket, 256, 64)["diagnosis"]["verdict"], "client_cpu", "{bucket}");
}

#[test]
fn bad_memory_sizes_are_each_named() {
    let out = run_bounded(Command::new(BIN).args(["local", "--lambda-memory-mb", "64,512,512,20000"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for needle in ["--lambda-memory-mb", "got 64", "512 is listed twice", "got 20000"] {
        assert!(stderr.contains(needle), "{needle} not in {stderr}");
    }
}

/// `local --clients sdk,lean` under half a core: the SDK's row at 64 workers is bound
/// by its CPU, the lean client's row beside it read faster at less CPU per GET, and the
/// SDK row's diagnosis says so, in ms per GET and in Lambda memory.
///
/// Every figure compared is a ratio of two rows of the same run. How much faster the
/// lean client read is checked on the Express-like bucket only: there a GET's 4 ms
/// leave the client's CPU the bound for both clients. On the Standard-like bucket the
/// 16 ms (and its 48 ms tail) bound the lean client's 300 GETs too, so its speedup
/// shrinks towards 1 on a quiet machine, and the row may even be latency-bound (then
/// it has no note); when it has one, it must state the speedup the two rows measured.
/// On a busy machine the verdict is `machine_cpu`, which gets the note as well.
#[test]
fn under_half_a_core_a_cpu_bound_sdk_row_says_what_the_lean_client_reached() {
    let _one = common::one_at_a_time();
    let (out, doc) = local(&["--cpu-quota", "0.5", "--clients", "sdk,lean"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("cannot set a CPU quota here") {
        eprintln!("SKIPPED: {stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "two buckets x two clients");
    for bucket in [STANDARD_BUCKET, EXPRESS_BUCKET] {
        let of = |client: Option<&str>| {
            rows.iter()
                .find(|r| r["bucket"] == bucket && r["s3_client"].as_str() == client)
                .unwrap_or_else(|| panic!("{bucket}: no {client:?} row"))
        };
        let (sdk, lean) = (of(None), of(Some("lean")));
        assert_eq!(sdk["ok"], 300, "{sdk}");
        assert_eq!(lean["ok"], 300, "{lean}");
        let d = &sdk["diagnosis"];
        let (sdk_cpu, lean_cpu) = (
            sdk["cpu_ms_per_get"].as_f64().unwrap(),
            lean["cpu_ms_per_get"].as_f64().unwrap(),
        );
        eprintln!("{bucket}: CPU per GET sdk {sdk_cpu} ms, lean {lean_cpu} ms");
        assert!(
            lean_cpu < 0.8 * sdk_cpu,
            "{bucket}: lean {lean_cpu} vs sdk {sdk_cpu} ms per GET"
        );
        assert!(stdout.contains(&format!("bucket {bucket}, client lean")), "{stdout}");
        let note = d["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str())
            .find(|n| n.contains("the lean client reached"));
        // The note is for an SDK row bound by CPU, its own or the machine's (a busy
        // machine); the Standard-like row may be bound by its latency instead.
        let cpu_bound = d["verdict"] == "client_cpu" || d["verdict"] == "machine_cpu";
        assert!(cpu_bound || bucket == STANDARD_BUCKET, "{bucket}: {d}");
        if !cpu_bound {
            assert!(note.is_none(), "{bucket}: a lean note on a row not bound by CPU: {d}");
            continue;
        }
        let note = note.unwrap_or_else(|| panic!("{bucket}: no lean note in {d}"));
        assert!(
            note.contains("ms more per GET") && note.contains("MB of Lambda CPU (0.50 cores)"),
            "{note}"
        );
        let speedup = d["figures"]["lean_speedup"].as_f64().unwrap();
        let measured = lean["objects_per_s"].as_f64().unwrap() / sdk["objects_per_s"].as_f64().unwrap();
        assert!(
            (speedup - measured).abs() <= 0.01 * measured,
            "{bucket}: {speedup} vs {measured}: {d}"
        );
        if bucket == EXPRESS_BUCKET {
            assert!(speedup > 1.2, "{bucket}: {d}");
        }
    }
    assert!(stdout.contains("note: the SDK's client costs"), "{stdout}");
}

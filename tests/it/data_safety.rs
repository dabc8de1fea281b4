//! Data safety (issue 27): nothing a user owns is touched, nothing s3sweep wrote is
//! orphaned, hostile input costs little. Each test is one finding: concurrent seeds
//! claim disjoint keys; a crafted manifest deletes nothing it cannot prove; a seed
//! killed mid-way leaves a record that cleans every object it wrote; a crafted
//! histogram and a 100,000-unknown-key event are refused at a bounded cost (peak RSS
//! of a child process); a full disk leaves the previous file intact. Every server is
//! the lab on 127.0.0.1, every child bounded in time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::lab::LatencyProfile;
use crate::common::{baseline_rss_kib, run_measured, seed_settings, seed_spec, LabBuilder};
use bytes::Bytes;
use s3sweep::s3::clean;
use s3sweep::s3::seed::{seed, seed_recorded, SeedSpec};

use crate::common::BIN;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-safety-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_seeds_over_one_template_claim_disjoint_keys() {
    let bucket = "race-bucket";
    let (server, client) = LabBuilder::new().bucket(bucket, LatencyProfile::None).start().await;
    let s3 = client.s3(seed_settings());
    let spec = SeedSpec {
        concurrency: 32,
        ..seed_spec(bucket, "race/{i}", 3000, 64)
    };
    let (a, b) = tokio::join!(seed(&s3, client.endpoint(), &spec), seed(&s3, client.endpoint(), &spec));
    let (a, b) = (a.unwrap(), b.unwrap());
    let (ka, kb): (BTreeSet<_>, BTreeSet<_>) = (a.written.iter().collect(), b.written.iter().collect());
    let both: Vec<_> = ka.intersection(&kb).collect();
    assert!(
        both.is_empty(),
        "{} keys claimed by both seeds, e.g. {:?}",
        both.len(),
        both.first()
    );
    assert_eq!(ka.len() + kb.len(), 3000, "every key claimed once");
    assert_eq!(a.skipped_existing + b.skipped_existing, 3000);
    // A key written by someone else between the runs is never overwritten or claimed.
    server
        .store()
        .insert(bucket, "late/0", Bytes::from_static(b"the user's"));
    let again = seed(&s3, client.endpoint(), &seed_spec(bucket, "late/{i}", 2, 64))
        .await
        .unwrap();
    assert_eq!(again.written, vec!["late/1".to_string()]);
    let head = s3.get_object().bucket(bucket).key("late/0").send().await.unwrap();
    assert_eq!(head.body.collect().await.unwrap().into_bytes().as_ref(), b"the user's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crafted_manifest_deletes_nothing_it_cannot_prove() {
    let bucket = "crafted-bucket";
    let (server, client) = LabBuilder::new().bucket(bucket, LatencyProfile::None).start().await;
    let s3 = client.s3(seed_settings());
    let dir = tmp_dir("crafted");
    let path = dir.join("m.json");
    let run = seed_recorded(&s3, client.endpoint(), &seed_spec(bucket, "data/{i}", 5, 100), &path)
        .await
        .unwrap();
    assert_eq!(run.written.len(), 5);
    // The user's objects: one the template does not make, one it makes but seed never
    // wrote (another size), one seed wrote and the user overwrote since (same size).
    server
        .store()
        .insert(bucket, "data/foreign", Bytes::from_static(b"mine"));
    server.store().insert(bucket, "data/7", Bytes::from_static(b"mine too"));
    server.store().insert(bucket, "data/2", Bytes::from(vec![7u8; 100]));
    let mut crafted: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for k in ["data/foreign", "data/7", "data/8"] {
        crafted["written"].as_array_mut().unwrap().push(k.into());
    }
    std::fs::write(&path, crafted.to_string()).unwrap();

    let manifest = clean::load_manifest(&path).unwrap();
    let outcome = clean::clean(&s3, &manifest, 1000).await;
    let deleted: BTreeSet<&str> = outcome.deleted.iter().map(String::as_str).collect();
    assert_eq!(
        deleted,
        BTreeSet::from(["data/0", "data/1", "data/3", "data/4"]),
        "{outcome:?}"
    );
    let kept: Vec<(&str, &str)> = outcome.kept.iter().map(|(k, w)| (k.as_str(), w.as_str())).collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    let why = |key: &str| kept.iter().find(|(k, _)| *k == key).map(|(_, w)| *w).unwrap_or("");
    assert!(why("data/foreign").contains("template"), "{kept:?}");
    // The user's objects lack the manifest's owner marker (issue 35): refused on that
    // before their size or ETag is looked at.
    assert!(why("data/7").contains("owner marker"), "{kept:?}");
    assert!(why("data/2").contains("owner marker"), "{kept:?}");
    assert_eq!(outcome.gone, vec!["data/8".to_string()]);
    let mut left = server.store().keys(bucket).unwrap();
    left.sort();
    assert_eq!(
        left,
        vec!["data/2", "data/7", "data/foreign"],
        "exactly the user's objects survive"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_killed_mid_way_leaves_a_record_that_cleans_every_object_it_wrote() {
    let bucket = "killed-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    server.store().insert(bucket, "k/5", Bytes::from_static(b"the user's"));
    let dir = tmp_dir("killed");
    let path = dir.join("m.json");
    let mut child = Command::new(BIN)
        .args([
            "seed",
            "--bucket",
            bucket,
            "--key-template",
            "k/{i}",
            "--count",
            "200000",
        ])
        .args([
            "--size",
            "64",
            "--concurrency",
            "64",
            "--endpoint",
            server.endpoint().as_str(),
        ])
        .arg("--manifest")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // 2,000 of its own besides the user's one.
    while server.store().object_count(bucket).unwrap_or(0) < 2001 {
        assert!(started.elapsed() < Duration::from_secs(60), "the seed wrote too slowly");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the seed ended before it was killed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap(); // SIGKILL: no handler runs.
    child.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let written = server.store().object_count(bucket).unwrap() - 1;
    assert!(written >= 2000, "{written}");

    let out = crate::common::run_bounded(
        Command::new(BIN)
            .args(["clean", "--endpoint", server.endpoint().as_str(), "--manifest"])
            .arg(&path),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        server.store().keys(bucket).unwrap(),
        vec!["k/5".to_string()],
        "every object the killed seed wrote is cleaned, the user's survives: {stderr}"
    );
    assert!(!s3sweep::s3::manifest::journal_path(&path).exists());
    let left = s3sweep::s3::manifest::read_manifest(&path).unwrap();
    assert!(left.written.is_empty(), "{} keys left", left.written.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A result file whose rows' histograms are a 56-byte V2 header claiming `claim` bytes.
fn crafted_result(dir: &Path, claim: u32) -> PathBuf {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/demo.json");
    let mut result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(demo).unwrap()).unwrap();
    let mut header = Vec::new();
    header.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    header.extend_from_slice(&claim.to_be_bytes());
    header.extend_from_slice(&0u32.to_be_bytes());
    header.extend_from_slice(&3u32.to_be_bytes());
    header.extend_from_slice(&1u64.to_be_bytes());
    header.extend_from_slice(&3_600_000_000u64.to_be_bytes());
    header.extend_from_slice(&1f64.to_be_bytes());
    header.extend_from_slice(&[0u8; 16]);
    assert_eq!(header.len(), 56);
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(&header);
    let mut n = 0;
    for row in result["results"].as_array_mut().unwrap() {
        row["ttlb_histogram_us"] = text.clone().into();
        n += 1;
    }
    assert!(n > 0);
    let path = dir.join(format!("crafted-{claim}.json"));
    std::fs::write(&path, result.to_string()).unwrap();
    path
}

#[test]
fn a_crafted_histogram_header_is_refused_at_a_bounded_allocation() {
    let dir = tmp_dir("histogram");
    let base = baseline_rss_kib();
    for claim in [1u32 << 30, u32::MAX] {
        let file = crafted_result(&dir, claim);
        let (out, rss) = run_measured(
            Command::new(BIN)
                .args(["report", "--plot"])
                .arg(dir.join("p.svg"))
                .arg(&file),
            Duration::from_secs(120),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "crafted histogram claiming {claim} bytes: peak RSS {rss} KiB (baseline {base} KiB), exit {:?}",
            out.status.code()
        );
        // The plot falls back to the row's percentiles for a histogram it cannot read.
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(rss < base + 64 * 1024, "peak RSS {rss} KiB, baseline {base} KiB");
        let result = s3sweep::model::SweepResult::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
        match result.results[0].ttlb_cdf() {
            Some(Err(e)) => assert!(e.to_string().contains("payload bytes"), "{e}"),
            other => panic!("the crafted histogram was read: {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_event_with_100000_unknown_keys_gets_a_bounded_error() {
    let dir = tmp_dir("unknown");
    let mut body: Vec<String> = vec!["\"buckets\": [\"b-1\"]".into()];
    body.extend((0..100_000).map(|i| format!("\"unknown_field_{i:06}\": 1")));
    let text = format!("{{{}}}", body.join(","));
    assert!(text.len() > 2_000_000, "{} bytes", text.len());
    let err = s3sweep::plan::Plan::from_json(&text).unwrap_err();
    let shown = err.to_string();
    assert!(shown.len() < 4096, "{} bytes", shown.len());
    assert!(shown.contains("99990 more unknown field(s)"), "{shown}");
    assert_eq!(shown.matches("known fields are").count(), 1, "{shown}");
    let lambda = s3sweep_lambda::validate_event(serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap_err();
    assert!(lambda.to_string().len() < 4096);

    let event = dir.join("event.json");
    std::fs::write(&event, &text).unwrap();
    let base = baseline_rss_kib();
    let (out, rss) = run_measured(
        Command::new(BIN)
            .args(["run", "--endpoint", "http://127.0.0.1:9", "--event"])
            .arg(&event),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "100,000 unknown keys ({} bytes): error of {} bytes, peak RSS {rss} KiB (baseline {base} KiB)",
        text.len(),
        stderr.len()
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.len() < 4096, "{} bytes of error", stderr.len());
    assert!(rss < base + 64 * 1024, "peak RSS {rss} KiB, baseline {base} KiB");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn too_many_configurations_are_refused_on_the_command_line_too() {
    let workers: Vec<String> = (1..=256).map(|w| w.to_string()).collect();
    let out = crate::common::run_bounded(Command::new(BIN).args([
        "run",
        "--endpoint",
        "http://127.0.0.1:9",
        "--bucket",
        "b-1",
        "--objects",
        "1",
        "--repetitions",
        "4",
        "--workers",
        &workers.join(","),
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("1024 configurations") && stderr.contains("at most 1000"),
        "{stderr}"
    );
}

/// A small tmpfs mounted at `dir` (root only); false when it cannot be mounted.
fn mount_tmpfs(dir: &Path, size: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_full_disk_leaves_the_previous_file_intact() {
    let dir = tmp_dir("full");
    let disk = dir.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let mounted = mount_tmpfs(&disk, "256k");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/demo.json");
    let plot = disk.join("plot.svg");
    let result = disk.join("result.json");
    let previous = "the previous file";
    let commands: Vec<(PathBuf, Vec<std::ffi::OsString>)> = vec![
        (
            plot.clone(),
            vec!["report".into(), "--plot".into(), plot.clone().into(), demo.into()],
        ),
        (
            result.clone(),
            [
                "local",
                "--in-process",
                "--objects",
                "20",
                "--workers",
                "1",
                "--size",
                "1000",
                "--json",
            ]
            .iter()
            .map(Into::into)
            .chain([result.clone().into()])
            .collect(),
        ),
    ];
    for (file, args) in commands {
        let _ = std::fs::remove_file(disk.join("filler"));
        std::fs::write(&file, previous).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        if mounted {
            // Fill the disk: the new file cannot fit.
            let _ = std::fs::write(disk.join("filler"), vec![0u8; 512 * 1024]);
        } else {
            cmd.env("S3SWEEP_TEST_FAIL_WRITES_AFTER_BYTES", "1000");
        }
        let out = crate::common::run_bounded(&mut cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let how = if mounted {
            "a 256 KiB tmpfs"
        } else {
            "an injected write error"
        };
        eprintln!(
            "{}: full disk by {how}: {}",
            file.display(),
            stderr.lines().last().unwrap_or("")
        );
        assert!(!out.status.success(), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            previous,
            "{} is intact",
            file.display()
        );
        let names: Vec<String> = std::fs::read_dir(&disk)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.contains(".tmp-")),
            "a temporary file was left: {names:?}"
        );
    }
    if mounted {
        let _ = Command::new("umount").arg(&disk).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

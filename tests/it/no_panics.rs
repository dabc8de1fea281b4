//! No panics (issue 53): the red team's inputs that made the SDK or tokio panic (exit
//! 101) are each a clear error naming what is wrong, refused before any request by the
//! one place names are checked (`plan::names`) or where the count is parsed
//! (`cli::counts`): a 100,000-character `key_template` or `key_prefix` in a preflight
//! event (the SDK's `InvalidUri(TooLong)`), a 70,000-character key in `report
//! s3://bkt/KEY`, a region with a line break (the signer's header value), and `seed
//! --concurrency 18446744073709551615` (tokio's "more than MAX_PERMITS").

use std::process::Command;
use std::time::Duration;

use crate::common::{run_within, BIN};

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("s3sweep-no-panics-{}-{name}", std::process::id()))
}

#[test]
fn the_red_teams_inputs_are_clear_errors_not_panics() {
    let long = "k".repeat(100_000);
    let template_event = tmp("template.json");
    let t = format!("{long}{{i}}");
    std::fs::write(
        &template_event,
        serde_json::json!({"buckets": ["b-1"], "key_template": t}).to_string(),
    )
    .unwrap();
    let prefix_event = tmp("prefix.json");
    std::fs::write(
        &prefix_event,
        serde_json::json!({"buckets": ["b-1"], "key_prefix": long}).to_string(),
    )
    .unwrap();
    let key_uri = format!("s3://bkt/{}", "k".repeat(70_000));
    let down = "http://127.0.0.1:9";
    let (template, prefix) = (template_event.display().to_string(), prefix_event.display().to_string());
    let max = "18446744073709551615";
    let cases: &[(&[&str], &str)] = &[
        (&["preflight", "--event", &template, "--endpoint", down], "key_template"),
        (&["preflight", "--event", &prefix, "--endpoint", down], "key_prefix"),
        (&["report", &key_uri, "--endpoint", down], "1024"),
        (&["report", &key_uri], "1024"),
        (
            &["run", "--bucket", "b-1", "--endpoint", down, "--region", "us-east-1\n"],
            "region",
        ),
        (&["run", "--bucket", "b-1", "--region", "us-east-1\n"], "region"),
        (
            &["seed", "--bucket", "b-1", "--endpoint", down, "--concurrency", max],
            "--concurrency",
        ),
        (&["serve", "--port", "0", "--max-connections", max], "--max-connections"),
    ];
    for (args, needle) in cases {
        a_short_clear_error(args, needle);
    }
    for f in [template_event, prefix_event] {
        let _ = std::fs::remove_file(f);
    }
}

/// `s3sweep ARGS` ends within 30 s with exit code 1 or 2, no panic, and a short error
/// holding `needle` (not the input repeated).
fn a_short_clear_error(args: &[&str], needle: &str) {
    let out = run_within(
        "a red-team input",
        Command::new(BIN).args(args),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown: Vec<String> = args.iter().map(|a| a.chars().take(40).collect()).collect();
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{shown:?}: {:?}: {stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("panicked"), "{shown:?}: {stderr}");
    assert!(stderr.contains(needle), "{shown:?}: {needle:?} not in {stderr}");
    assert!(
        stderr.len() < 2_000,
        "{shown:?}: the error repeats the input: {} bytes",
        stderr.len()
    );
}

/// `seed --size 3221225472` against the lab (whose cap is 64 MiB): the body is made as
/// it is sent, never held (3.1 GB peak RSS before, and still sending at 60 s), and the
/// lab's early 400 `EntityTooLarge` is what the error says (it was "EndpointUnreachable
/// ... Broken pipe"). The peak is the child's `ru_maxrss`, which starts from this
/// process's peak: under 1 GiB tells a held 3 GiB body apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_streams_a_3_gib_body_and_reports_the_labs_early_answer() {
    let bucket = "big-seed";
    let server = crate::common::LabBuilder::new()
        .bucket(bucket, crate::common::lab::LatencyProfile::None)
        .server()
        .await;
    let manifest = tmp("big-seed-manifest.json");
    let args: Vec<String> = [
        "seed",
        "--bucket",
        bucket,
        "--count",
        "1",
        "--size",
        "3221225472",
        "--endpoint",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([server.endpoint(), "--manifest".into(), manifest.display().to_string()])
    .collect();
    let (out, rss_kib) = tokio::task::spawn_blocking(move || {
        crate::common::run_measured(Command::new(BIN).args(&args), Duration::from_secs(60))
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("seed of 3 GiB: peak RSS {} MiB: {stderr}", rss_kib >> 10);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(rss_kib < 1 << 20, "peak RSS {} MiB", rss_kib >> 10);
    // The lab answers 400 and closes while the body is still being sent. Usually hyper
    // reads that answer first; on a loaded machine the kernel's broken pipe can reach
    // the writer before it does (a race left open: a clean-clone run under the parallel
    // pass lost it once), and then the error is still one clear line, not a panic.
    let answered = stderr.contains("EntityTooLarge") && stderr.contains("HTTP 400");
    let raced = stderr.contains("Broken pipe") && stderr.lines().count() == 1;
    assert!(answered || raced, "{stderr}");
    for p in [manifest.clone(), s3sweep::s3::manifest::journal_path(&manifest)] {
        let _ = std::fs::remove_file(p);
    }
}

//! The object size axis (`object_sizes_bytes`, `--object-sizes`) against the embedded
//! server on 127.0.0.1: `seed` writes each size under its own prefix and records every
//! key in the one manifest, a sweep reads exactly each size's bytes at every worker
//! count, `clean` removes every size and nothing beside it, and bad sizes, a size axis
//! beside `--size` or one too large for the lab are errors naming the fields.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use crate::common::lab::LatencyProfile;
use s3sweep::engine::{self, Quiet};
use s3sweep::plan::Plan;
use s3sweep::s3::clean;
use s3sweep::s3::seed::{seed_recorded, SeedSpec};

use crate::common::{client_of, options, run_bounded, seed_settings, seed_spec, LabBuilder, Serve, BIN};

const SIZES: [u64; 3] = [4096, 46_080, 1_048_576];
const COUNT: u32 = 6;

/// A fresh manifest path under the temporary folder.
fn manifest_path(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("s3sweep-sizes-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("manifest.json")
}

fn spec(bucket: &str) -> SeedSpec {
    SeedSpec {
        object_sizes_bytes: SIZES.to_vec(),
        ..seed_spec(bucket, "test/{i}/vectors", COUNT, 46_080)
    }
}

/// Each size's rows read that size's keys (under its prefix) and exactly its bytes:
/// no row fails on a missing key, and no size reads another size's bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_size_reads_exactly_its_bytes_at_every_worker_count() {
    let bucket = "sizes-bytes";
    let (_server, client) = LabBuilder::new().bucket(bucket, LatencyProfile::None).start().await;
    let path = manifest_path("bytes");
    let s3 = client.s3(seed_settings());
    let manifest = seed_recorded(&s3, client.endpoint(), &spec(bucket), &path)
        .await
        .unwrap();
    assert_eq!(manifest.written.len(), SIZES.len() * COUNT as usize);
    for size in SIZES {
        let key = format!("s{size}/test/5/vectors");
        let head = s3.head_object().bucket(bucket).key(&key).send().await;
        let length = head.expect("each size under its own prefix").content_length();
        assert_eq!(length, Some(size as i64), "{key}");
    }
    let plan = Plan::from_value(json!({
        "buckets": [bucket], "object_count": COUNT, "workers": [1, 4], "pool_connections": 4,
        "object_sizes_bytes": SIZES, "warmup": false
    }))
    .unwrap();
    let result = engine::run(&client.session(&plan), &plan, &options(), Arc::new(Quiet)).await;
    assert_eq!(result.results.len(), SIZES.len() * 2, "size x workers");
    for r in &result.results {
        let size = r.size_axis_bytes().expect("a size axis's row carries its size");
        assert_eq!(
            (r.ok, r.errors.total),
            (u64::from(COUNT), 0),
            "{size} B x {}",
            r.workers
        );
        assert_eq!(r.bytes, u64::from(COUNT) * size, "{size} B x {} workers", r.workers);
    }
    let order: Vec<(Option<u64>, u32)> = result
        .results
        .iter()
        .map(|r| (r.size_axis_bytes(), r.workers))
        .collect();
    assert_eq!(
        order,
        SIZES
            .iter()
            .flat_map(|&s| [(Some(s), 1), (Some(s), 4)])
            .collect::<Vec<_>>(),
        "rows in plan order: size, then workers"
    );
    let text = serde_json::to_value(&result).unwrap();
    assert_eq!(
        text["results"][0]["object_size_bytes"],
        json!(4096),
        "a number, not a spread"
    );
}

/// `clean` proves every size's keys by the manifest's `object_sizes_bytes` and deletes
/// them all, and keeps the user's keys beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_removes_every_size_and_nothing_beside_them() {
    let bucket = "sizes-clean";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    // The user's keys: one a seed of size 4,096 would write (so it is skipped and not
    // recorded), others beside the sizes' prefixes.
    let foreign = [
        "s4096/test/2/vectors",
        "s4096/test/99/vectors",
        "s4096/notes",
        "s46080/test/x/vectors",
        "test/1/vectors",
        "s999/test/1/vectors",
    ];
    for k in foreign {
        server.store().insert(bucket, k, Bytes::from_static(b"mine"));
    }
    let client = client_of(&server).await;
    let s3 = client.s3(seed_settings());
    let path = manifest_path("clean");
    let run = seed_recorded(&s3, client.endpoint(), &spec(bucket), &path)
        .await
        .unwrap();
    assert_eq!(
        run.written.len(),
        SIZES.len() * COUNT as usize - 1,
        "s4096/test/2 existed"
    );
    let loaded = clean::load_manifest(&path).unwrap();
    assert_eq!(
        loaded.object_sizes_bytes,
        SIZES.to_vec(),
        "the manifest records the axis"
    );
    assert!(!loaded.written.contains(&"s4096/test/2/vectors".to_string()));
    // A seed of other sizes into the same manifest is refused, not mixed in.
    let mut other = spec(bucket);
    other.object_sizes_bytes = vec![4096];
    let refused = seed_recorded(&s3, client.endpoint(), &other, &path).await.unwrap_err();
    assert!(refused.to_string().contains("object sizes"), "{refused}");

    let outcome = clean::clean(&s3, &loaded, 5).await;
    assert!(outcome.failed.is_empty() && outcome.kept.is_empty(), "{outcome:?}");
    assert_eq!(outcome.deleted.len(), SIZES.len() * COUNT as usize - 1);
    let mut left = server.store().keys(bucket).unwrap();
    left.sort();
    let mut expected: Vec<String> = foreign.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(left, expected, "only the user's keys are left");
}

fn fails(args: &[&str]) -> String {
    let out = run_bounded(Command::new(BIN).args(args));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(out.status.code(), Some(2), "a usage error's status:\n{stderr}");
    stderr
}

/// `--object-sizes` with another size flag, or a bad size, is refused before any
/// connection, naming the flags.
#[test]
fn bad_sizes_and_two_size_flags_are_named() {
    let both = fails(&["seed", "--bucket", "b-1", "--object-sizes", "4096", "--size", "10"]);
    assert!(both.contains("--object-sizes") && both.contains("--size"), "{both}");
    let both = fails(&["local", "--object-sizes", "4096", "--sizes", "10,20"]);
    assert!(both.contains("--object-sizes") && both.contains("--sizes"), "{both}");
    let bad = fails(&[
        "run",
        "--bucket",
        "b-1",
        "--object-sizes",
        "4096,0,4096",
        "--print-event",
    ]);
    for needle in ["object_sizes_bytes[1]", "object_sizes_bytes[2]", "--object-sizes"] {
        assert!(bad.contains(needle), "{needle} in {bad}");
    }
    let seed = fails(&["seed", "--bucket", "b-1", "--object-sizes", "0"]);
    assert!(seed.contains("--object-sizes[0]"), "{seed}");
    // 2 buckets x 1,000 x 1 MiB do not fit the lab's 1 GiB: said before anything starts.
    let room = fails(&["local", "--object-sizes", "4096,1048576", "--objects", "1000"]);
    assert!(
        room.contains("--objects 1000") && room.contains("use fewer --objects"),
        "{room}"
    );
}

/// The binary with `args` and no AWS keys (the lab's own are used for 127.0.0.1).
fn bin(args: &[&str]) -> std::process::Output {
    run_bounded(
        Command::new(BIN)
            .args(args)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_PROFILE"),
    )
}

/// The commands end to end against `serve`: `seed --object-sizes`, `run
/// --object-sizes` (its preflight reads every size's first object, under the size's
/// prefix), `clean`.
#[test]
fn seed_run_and_clean_from_the_command_line() {
    let serve = Serve::start(&["sizes-cli=none"], &[]);
    let manifest = manifest_path("cli").display().to_string();
    let json = manifest_path("cli-json").with_file_name("result.json");
    let at = ["--endpoint", serve.endpoint.as_str()];
    let seeded = bin(&[
        &[
            "seed",
            "--bucket",
            "sizes-cli",
            "--count",
            "4",
            "--object-sizes",
            "100,5000",
            "--manifest",
            &manifest,
        ][..],
        &at,
    ]
    .concat());
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    let sweep = [
        "run",
        "--bucket",
        "sizes-cli",
        "--objects",
        "4",
        "--workers",
        "1,2",
        "--object-sizes",
    ];
    let json_arg = json.display().to_string();
    let ran = bin(&[&sweep[..], &["100,5000", "--json", &json_arg, "--quiet"], &at].concat());
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows: Vec<(u64, u64)> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["object_size_bytes"].as_u64().unwrap(), r["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, vec![(100, 400), (100, 400), (5000, 20_000), (5000, 20_000)]);
    // A size never seeded: the preflight names its first key.
    let missing = bin(&[&sweep[..], &["100,7000"], &at].concat());
    let text = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !missing.status.success() && text.contains("s7000/test/0/vectors"),
        "{text}"
    );
    let cleaned = bin(&[&["clean", "--manifest", &manifest][..], &at].concat());
    assert!(cleaned.status.success(), "{}", String::from_utf8_lossy(&cleaned.stderr));
    let gone = bin(&[&sweep[..], &["100,5000"], &at].concat());
    let text = String::from_utf8_lossy(&gone.stderr);
    assert!(
        !gone.status.success() && text.contains("s100/test/0/vectors"),
        "every size cleaned: {text}"
    );
}

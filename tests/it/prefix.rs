//! A sweep over the keys listed under a prefix (`key_prefix`), against the embedded
//! server on 127.0.0.1: it reads exactly the keys under the prefix (not a sibling
//! prefix, not a key sharing its first characters) with their real, mixed sizes, the
//! listing follows pagination past 1,000 keys, is made once per run and reported apart,
//! and a prefix with too few keys is an error naming both numbers unless
//! `allow_fewer_keys`. Plus the requests refused, and `seed --sizes` proven by `clean`.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use crate::common::lab::LatencyProfile;
use s3sweep::engine::{self, Quiet};
use s3sweep::model::{SizeSpread, SweepResult};
use s3sweep::plan::Plan;
use s3sweep::s3::list::ListingError;
use s3sweep::s3::SweepClient;

use crate::common::{options, seed_spec, LabBuilder};

pub(crate) const SIZES: [u64; 3] = [1000, 46_080, 200_000];
pub(crate) const UNDER: u32 = 30;

/// A bucket with `UNDER` objects of mixed sizes under `data/` and keys beside it of
/// sizes the sweep's bytes would show: a sibling prefix and keys sharing `data`.
pub(crate) fn mixed_bucket(bucket: &str) -> LabBuilder {
    let mut spec = seed_spec(bucket, "data/{i}", UNDER, SIZES[0]);
    spec.size_cycle_bytes = SIZES.to_vec();
    let beside = [
        ("data2/a", 7),
        ("data2/b", 7),
        ("data", 11),
        ("datum/x", 13),
        ("other/y", 17),
    ];
    beside.into_iter().fold(
        LabBuilder::new().bucket(bucket, LatencyProfile::None).seed_spec(spec),
        |lab, (key, size)| lab.stored(bucket, key, Bytes::from(vec![b'x'; size])),
    )
}

fn plan(value: serde_json::Value) -> Plan {
    Plan::from_value(value).unwrap()
}

async fn sweep(client: &SweepClient, plan: &Plan) -> SweepResult {
    engine::run(&client.session(plan), plan, &options(), Arc::new(Quiet)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_exactly_the_keys_under_the_prefix_with_their_sizes() {
    let bucket = "prefix-mixed";
    let (server, client) = mixed_bucket(bucket).start().await;
    // The keys beside the prefix are there, so reading exactly the prefix's shows.
    assert_eq!(server.store().object_count(bucket), Some(UNDER as usize + 5));
    let p = plan(
        json!({"buckets": [bucket], "key_prefix": "data/", "object_count": UNDER,
        "workers": [1, 4], "repetitions": 2, "pool_connections": 4, "warmup": false}),
    );
    let result = sweep(&client, &p).await;

    let expected_bytes: u64 = (0..UNDER).map(|i| SIZES[i as usize % 3]).sum();
    let listed: BTreeSet<String> = p.listing().unwrap()[0].objects.iter().map(|o| o.key.clone()).collect();
    let seeded: BTreeSet<String> = (0..UNDER).map(|i| format!("data/{i}")).collect();
    assert_eq!(
        listed, seeded,
        "the listing holds the prefix's keys and nothing beside it"
    );
    assert_eq!(result.listing.len(), 1);
    let l = &result.listing[0];
    assert_eq!(
        (l.keys_found, l.keys_asked, l.bytes_total),
        (UNDER, UNDER, expected_bytes)
    );
    assert_eq!(l.list_requests, 1, "listed once for the whole run (4 configurations)");
    assert_eq!(result.results.len(), 4);
    let spread = SizeSpread {
        min: 1000,
        p50: 46_080,
        p99: 200_000,
        max: 200_000,
    };
    for r in &result.results {
        assert_eq!((r.ok, r.errors.total), (u64::from(UNDER), 0), "{r:?}");
        assert_eq!(
            r.bytes, expected_bytes,
            "workers {} read exactly the prefix's bytes",
            r.workers
        );
        assert_eq!(
            r.axes.object_size_bytes,
            Some(s3sweep::model::ObjectSize::Spread(spread))
        );
        let mib = expected_bytes as f64 / (1 << 20) as f64 / (r.wall_ms / 1000.0);
        assert!(
            (r.mib_per_s - mib).abs() <= 0.01 * mib + 0.01,
            "{} vs {mib}",
            r.mib_per_s
        );
    }
    let mut result = result;
    s3sweep::analysis::analyse(&mut result, &Default::default());
    let table = s3sweep::render::render_tables(&result, s3sweep::render::Style::Markdown);
    assert!(table.contains("1000/46080/200000/200000 (varies)"), "{table}");
    assert!(table.contains("1 ListObjectsV2 request(s)"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_follows_pages_past_a_thousand_keys() {
    let bucket = "prefix-pages";
    let (server, client) = LabBuilder::new().bucket(bucket, LatencyProfile::None).start().await;
    for i in 0..1100 {
        server
            .store()
            .insert(bucket, &format!("many/{i:05}"), Bytes::from_static(b"0123456789abcdef"));
    }
    server
        .store()
        .insert(bucket, "many0", Bytes::from_static(b"not under many/"));
    let p = plan(json!({"buckets": [bucket], "key_prefix": "many/", "object_count": 1050,
        "workers": [16], "pool_connections": 16, "warmup": false}));
    let result = sweep(&client, &p).await;
    let l = &result.listing[0];
    assert_eq!((l.keys_found, l.list_requests, l.bytes_total), (1050, 2, 1050 * 16));
    let r = &result.results[0];
    assert_eq!((r.ok, r.bytes), (1050, 1050 * 16));
    let keys = &p.listing().unwrap()[0].objects;
    assert_eq!(
        keys.last().unwrap().key,
        "many/01049",
        "the service's (byte) order, page after page"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_few_keys_is_an_error_naming_both_numbers_unless_allowed() {
    let bucket = "prefix-fewer";
    let (_server, client) = mixed_bucket(bucket).start().await;
    let asked = json!({"buckets": [bucket], "key_prefix": "data/", "object_count": 45,
        "workers": [2], "pool_connections": 2, "warmup": false});
    let fewer = plan(asked.clone());
    let err = engine::list_keys(&client.session(&fewer), &fewer).await.unwrap_err();
    assert!(
        matches!(
            err,
            ListingError::TooFew {
                found: 30,
                asked: 45,
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("holds 30 keys") && message.contains("(45)"),
        "{message}"
    );
    assert_eq!(err.error_type(), "TooFewKeys");

    let mut allowed = asked;
    allowed["allow_fewer_keys"] = json!(true);
    let p = plan(allowed);
    engine::list_keys(&client.session(&p), &p).await.unwrap();
    let result = sweep(&client, &p).await;
    assert_eq!((result.listing[0].keys_found, result.listing[0].keys_asked), (30, 45));
    let r = &result.results[0];
    assert_eq!((r.ok, r.requests, r.requests_not_done), (30, 30, 0), "{r:?}");
    assert!(!r.cut_short);
}

#[test]
fn requests_naming_objects_both_ways_or_misplacing_listed_shares_are_refused() {
    let fields = |v: serde_json::Value| -> Vec<String> {
        let err = Plan::from_value(v).unwrap_err();
        err.fields().into_iter().map(str::to_string).collect()
    };
    assert_eq!(
        fields(json!({"buckets": ["b-1"], "key_prefix": "d/", "key_template": "d/{i}"})),
        vec!["key_prefix"]
    );
    // A prefix fans out; a child's shares need the prefix, one per bucket, in range.
    plan(json!({"buckets": ["b-1"], "key_prefix": "d/", "fanout": {"invocations": 2}}));
    assert_eq!(
        fields(json!({"buckets": ["b-1", "b--use1-az4--x-s3"], "key_prefix": "d/", "fanout": {"invocations": 2}})),
        vec!["fanout"],
        "directory buckets cannot list after a key"
    );
    let share = json!({"start_after": "d/4", "count": 5});
    assert_eq!(
        fields(json!({"buckets": ["b-1"], "from_coordinator": {"role": "child", "listed_shares": [share]}})),
        vec!["from_coordinator.listed_shares"]
    );
    assert_eq!(
        fields(json!({"buckets": ["b-1", "b-2"], "key_prefix": "d/",
            "from_coordinator": {"role": "child", "listed_shares": [share]}})),
        vec!["from_coordinator.listed_shares"]
    );
    assert_eq!(
        fields(
            json!({"buckets": ["b-1"], "key_prefix": "d/", "fanout": {"invocations": 2},
            "from_coordinator": {"listed_shares": [share]}})
        ),
        vec!["from_coordinator.listed_shares"]
    );
    assert_eq!(
        fields(json!({"buckets": ["b-1"], "allow_fewer_keys": true})),
        vec!["allow_fewer_keys"]
    );
    let ok = plan(json!({"buckets": ["b-1"], "key_prefix": "d/", "allow_fewer_keys": true}));
    assert_eq!(ok.key_prefix(), Some("d/"));
}

/// `seed --sizes`: object `i` gets the `(i mod n)`-th size, the manifest records the
/// cycle, and `clean` proves each key by its own size (a key rewritten with another
/// size is kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_mixed_sizes_are_recorded_and_proven_by_clean() {
    let bucket = "prefix-clean";
    let (server, client) = mixed_bucket(bucket).start().await;
    let s3 = client.s3(crate::common::seed_settings());
    let mut spec = seed_spec(bucket, "data/{i}", UNDER, SIZES[0]);
    spec.size_cycle_bytes = SIZES.to_vec();
    spec.keys = s3sweep::plan::KeyTemplate::parse("mine/{i}", UNDER).unwrap();
    let manifest = s3sweep::s3::seed::seed(&s3, client.endpoint(), &spec).await.unwrap();
    assert_eq!(manifest.size_cycle_bytes, SIZES.to_vec());
    for i in 0..UNDER {
        let head = s3
            .head_object()
            .bucket(bucket)
            .key(format!("mine/{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(SIZES[i as usize % 3] as i64), "mine/{i}");
    }
    server.store().insert(bucket, "mine/4", Bytes::from(vec![b'z'; 1000]));
    let outcome = s3sweep::s3::clean::clean(&s3, &manifest, 1000).await;
    assert_eq!(outcome.deleted.len() as u32, UNDER - 1, "{:?}", outcome.kept);
    assert_eq!(outcome.kept.len(), 1);
    assert_eq!(outcome.kept[0].0, "mine/4");
}

/// The binary: `seed --sizes` then `run --prefix` against `serve`: the listing on
/// stderr and in the result's `listing`, rows with their bytes and sizes; too few keys
/// exits non-zero naming both numbers; `--allow-fewer` sweeps what is there.
#[test]
fn run_with_prefix_from_the_command_line() {
    use crate::common::{run_bounded, Serve, BIN};
    use std::process::Command;
    let bucket = "cli-prefix";
    let serve = Serve::start(&[bucket], &[]);
    let ep = serve.endpoint.clone();
    let manifest = std::env::temp_dir().join(format!("s3sweep-prefix-cli-{}.json", std::process::id()));
    let cmd = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(args).args(["--endpoint", &ep]).env_remove("RUST_LOG");
        run_bounded(&mut c)
    };
    let seeded = cmd(&[
        "seed",
        "--bucket",
        bucket,
        "--key-template",
        "set/{i}",
        "--count",
        "20",
        "--sizes",
        "10,300,5000",
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    // `s3sweep run` of the bucket's prefix `set/` with more flags.
    let run = |more: &str| {
        cmd(&[
            &["run", "--bucket", bucket, "--prefix", "set/"],
            &more.split_whitespace().collect::<Vec<_>>()[..],
        ]
        .concat())
    };
    let out = run("--objects 20 --workers 1,4");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("listed 20 keys (32170 bytes) under \"set/\""),
        "{stderr}"
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["listing"][0]["keys_found"], 20);
    for row in result["results"].as_array().unwrap() {
        assert_eq!(row["bytes"], 32_170);
        assert_eq!(
            row["object_size_bytes"],
            json!({"min": 10, "p50": 300, "p99": 5000, "max": 5000})
        );
    }
    let few = run("--objects 25 --workers 1");
    let stderr = String::from_utf8_lossy(&few.stderr);
    assert!(!few.status.success());
    assert!(stderr.contains("holds 20 keys") && stderr.contains("(25)"), "{stderr}");
    let allowed = run("--objects 25 --workers 1 --allow-fewer");
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stderr));
    let result: serde_json::Value = serde_json::from_slice(&allowed.stdout).unwrap();
    assert_eq!(result["results"][0]["ok"], 20);
    let _ = std::fs::remove_file(manifest);
}

/// Fan-out over a listed prefix: the coordinator lists once; each child event carries
/// its share (a start-after key and a count), lists only that, and sweeps it. Across the
/// children every key under the prefix is listed and read exactly once, none beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fanout_splits_the_listed_keys_so_each_is_read_once() {
    let bucket = "prefix-fanout";
    let (_server, client) = mixed_bucket(bucket).start().await;
    let coordinator = plan(
        json!({"buckets": [bucket], "key_prefix": "data/", "object_count": UNDER,
        "workers": [2], "warmup": false, "fanout": {"invocations": 4}}),
    );
    engine::list_keys(&client.session(&coordinator), &coordinator)
        .await
        .unwrap();
    let children = s3sweep_lambda::child_requests(&coordinator, 0, None);
    assert_eq!(children.len(), 4);

    let mut read: Vec<String> = Vec::new();
    let mut bytes_read = 0u64;
    for (_, request) in &children {
        let child = Plan::from_value(s3sweep_lambda::child_event(request)).unwrap();
        let result = sweep(&client, &child).await;
        let share = &request.from_coordinator.as_ref().unwrap().listed_shares[0];
        let l = &result.listing[0];
        assert_eq!(l.keys_found, share.count, "the child listed only its share");
        assert_eq!(l.list_requests, 1);
        assert_eq!(result.results.len(), 1);
        let row = &result.results[0];
        assert_eq!(
            (row.ok, row.bytes),
            (u64::from(share.count), l.bytes_total),
            "read its share"
        );
        read.extend(child.listing().unwrap()[0].objects.iter().map(|o| o.key.clone()));
        bytes_read += row.bytes;
    }
    let once: BTreeSet<String> = read.iter().cloned().collect();
    assert_eq!(read.len(), once.len(), "no key read by two children: {read:?}");
    let seeded: BTreeSet<String> = (0..UNDER).map(|i| format!("data/{i}")).collect();
    assert_eq!(once, seeded, "every key under the prefix, none beside it");
    let expected_bytes: u64 = (0..UNDER).map(|i| SIZES[i as usize % 3]).sum();
    assert_eq!(bytes_read, expected_bytes);
    // The coordinator's listing block says how the keys were split.
    let reports = s3sweep_lambda::listing_reports(&coordinator);
    assert_eq!(reports[0].keys_per_child, vec![7, 8, 7, 8]);
}

//! A `key_prefix` sweep by the real `s3sweep-lambda` binary under the Runtime API of
//! our own (tests/it/common/runtime.rs: the deadline enforced, processes killed at it)
//! against the embedded server, which counts every key's GETs:
//! - a fan-out coordinator lists the prefix once and invokes real children through the
//!   Lambda Invoke API; across them every key under the prefix is read exactly once per
//!   configuration (nothing beside it), as the coordinator's `keys_per_child` says;
//! - a listing too slow for the invocation's deadline (every ListObjectsV2 page delayed)
//!   stops at its budget: an error naming what it found, or with `allow_fewer_keys` a
//!   sweep of the keys found, answered in time instead of killed; a fan-out's
//!   coordinator too.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::common::lab::LatencyProfile;
use crate::common::runtime::{Ending, Runtime};
use crate::common::LabBuilder;
use crate::prefix::{mixed_bucket, SIZES, UNDER};
use crate::runtime_api::{answered, fanout_env};

/// The GETs of each key of `bucket` the lab counted.
fn gets_of(server: &crate::common::lab::RunningServer, bucket: &str) -> BTreeMap<String, u64> {
    server
        .store()
        .gets()
        .into_iter()
        .filter(|((b, _), _)| b == bucket)
        .map(|((_, k), n)| (k, n))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_lists_once_and_its_invoked_children_read_every_key_once() {
    const N: usize = 3;
    const WORKERS: [u32; 2] = [1, 4];
    let bucket = "prefix-invoked";
    let (server, _client) = mixed_bucket(bucket).start().await;
    server.store().count_gets();
    let rt = Runtime::start().await;
    let mut env = fanout_env(&rt, &[]);
    env.push(("S3SWEEP_ENDPOINT_URL", server.endpoint()));
    rt.spawn_functions(crate::common::lambda_bin(), 1 + N, &env);
    let event = json!({
        "buckets": [bucket], "key_prefix": "data/", "object_count": UNDER, "workers": WORKERS,
        "pool_connections": 4, "warmup": false,
        "fanout": {"invocations": N, "start_delay_ms": 1000}
    });
    let (_, ending) = rt
        .invoke(serde_json::to_vec(&event).unwrap(), Duration::from_secs(60))
        .await;
    let (result, _, after) = answered(ending);
    println!("coordinator answered after {} ms", after.as_millis());
    let fanout = &result["fanout"];
    assert_eq!(fanout["children_ok"], N, "{fanout}");

    // Every Invoke of a child was one the expanded role allows.
    rt.assert_all_allowed();

    // The coordinator's listing: once, every key under the prefix, split between the
    // children in contiguous shares.
    let expected_bytes: u64 = (0..UNDER).map(|i| SIZES[i as usize % 3]).sum();
    let listing = &result["listing"][0];
    assert_eq!(listing["keys_found"], UNDER, "{listing}");
    assert_eq!(listing["bytes_total"], expected_bytes, "{listing}");
    assert_eq!(listing["list_requests"], 1, "{listing}");
    let per_child: Vec<u64> = listing["keys_per_child"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per_child, vec![10, 10, 10], "{listing}");

    // Each child read its share, with the exact bytes of its keys.
    let mut sorted: Vec<String> = (0..UNDER).map(|i| format!("data/{i}")).collect();
    sorted.sort(); // the service's (byte) order
    let size_of = |key: &str| SIZES[key["data/".len()..].parse::<usize>().unwrap() % 3];
    let mut share_starts = Vec::new();
    let mut first = 0usize;
    for (k, child) in fanout["children"].as_array().unwrap().iter().enumerate() {
        let share = &sorted[first..first + per_child[k] as usize];
        let share_bytes: u64 = share.iter().map(|key| size_of(key)).sum();
        for row in child["results"].as_array().unwrap() {
            assert_eq!(row["ok"].as_u64(), Some(per_child[k]), "child {k}: {row}");
            assert_eq!(row["bytes"].as_u64(), Some(share_bytes), "child {k}: {row}");
        }
        share_starts.push(share[0].clone());
        first += per_child[k] as usize;
    }
    // The merged rows: every key, the prefix's bytes.
    for row in result["results"].as_array().unwrap() {
        assert_eq!(row["ok"], UNDER, "{row}");
        assert_eq!(row["bytes"], expected_bytes, "{row}");
        assert_eq!(row["errors"]["total"], 0, "{row}");
    }

    // The lab's tally: each key once per configuration, plus the preflight's one read
    // of the first key of each child's share and of the coordinator's listing; none
    // beside the prefix.
    let gets = gets_of(&server, bucket);
    for key in &sorted {
        let preflights = share_starts.iter().filter(|s| *s == key).count() + usize::from(*key == sorted[0]);
        let expected = WORKERS.len() as u64 + preflights as u64;
        assert_eq!(gets.get(key).copied(), Some(expected), "GETs of {key}: {gets:?}");
    }
    let beside: Vec<&String> = gets.keys().filter(|k| !k.starts_with("data/")).collect();
    assert!(beside.is_empty(), "read beside the prefix: {beside:?}");
    server.shutdown().await;
}

/// 5,000 keys under `big/`, every ListObjectsV2 page 2 s late, 8 s of deadline with a
/// 1 s margin: the listing's budget is half the 7 s left, 3.5 s, so the first page
/// (1,000 keys, ~2 s) comes in and the second (~4 s) is abandoned. Listed without a
/// bound, the five pages take 10 s and the function is killed at 8 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_slower_than_the_deadline_allows_answers_in_time() {
    const KEYS: u32 = 5000;
    let bucket = "prefix-slow-listing";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    for i in 0..KEYS {
        server
            .store()
            .insert(bucket, &format!("big/{i:05}"), Bytes::from_static(b"0123456789abcdef"));
    }
    server.profiles().set_list_delay(Duration::from_secs(2));
    let rt = Runtime::start().await;
    rt.spawn_functions(
        crate::common::lambda_bin(),
        1,
        &[
            ("S3SWEEP_ENDPOINT_URL", server.endpoint()),
            ("S3SWEEP_SAFETY_MARGIN_MS", "1000".into()),
        ],
    );
    let deadline = Duration::from_secs(8);
    let mut event = json!({"buckets": [bucket], "key_prefix": "big/", "object_count": KEYS,
        "workers": [8], "pool_connections": 8, "warmup": false});

    // 1. Fewer keys not allowed: a clear error, in time.
    let (_, ending) = rt.invoke(serde_json::to_vec(&event).unwrap(), deadline).await;
    let Ending::Error { body, after } = ending else {
        panic!("expected the function's error, got {ending:?}");
    };
    let error: Value = serde_json::from_slice(&body).unwrap();
    println!("error after {} ms: {error}", after.as_millis());
    assert!(!rt.killed(), "the function was killed at its deadline");
    assert_eq!(error["errorType"], "DeadlineReached", "{error}");
    let message = error["errorMessage"].as_str().unwrap();
    for part in [
        "the listing of \"big/\" in bucket \"prefix-slow-listing\" ran out of its time",
        "with 1000 of the 5000 keys found, in 2 ListObjectsV2 request(s)",
        "allow_fewer_keys",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }

    // 2. With allow_fewer_keys: the keys found are swept, and the listing says why
    // there are fewer.
    event["allow_fewer_keys"] = json!(true);
    let (_, ending) = rt.invoke(serde_json::to_vec(&event).unwrap(), deadline).await;
    let (result, _, after) = answered(ending);
    println!("answered after {} ms: listing {}", after.as_millis(), result["listing"]);
    assert!(!rt.killed());
    let listing = &result["listing"][0];
    assert_eq!(listing["keys_found"], 1000, "{listing}");
    assert_eq!(listing["keys_asked"], KEYS, "{listing}");
    assert_eq!(listing["list_requests"], 2, "{listing}");
    assert_eq!(listing["out_of_time"], true, "{listing}");
    let row = &result["results"][0];
    assert_eq!(row["ok"], 1000, "{row}");
    assert_eq!(row["bytes"], 16_000, "{row}");
    assert_ne!(row["cut_short"], true, "{row}");
    assert_eq!(result["truncated"], false, "{result}");

    // 3. A fan-out's coordinator lists within the same budget before it invokes
    // anyone: the same error, in time.
    let fanout = json!({"buckets": [bucket], "key_prefix": "big/", "object_count": KEYS,
        "workers": [8], "warmup": false, "fanout": {"invocations": 2}});
    let (_, ending) = rt.invoke(serde_json::to_vec(&fanout).unwrap(), deadline).await;
    let Ending::Error { body, after } = ending else {
        panic!("expected the coordinator's error, got {ending:?}");
    };
    let error: Value = serde_json::from_slice(&body).unwrap();
    println!("coordinator's error after {} ms", after.as_millis());
    assert!(!rt.killed());
    assert_eq!(error["errorType"], "DeadlineReached", "{error}");
    assert!(
        error["errorMessage"]
            .as_str()
            .unwrap()
            .contains("with 1000 of the 5000 keys found"),
        "{error}"
    );
    server.shutdown().await;
}

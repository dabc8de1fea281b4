//! S3's per-prefix request rate through a real fan-out (issue 22): the lab with
//! `prefix_gets_per_s` set, the real `s3sweep-lambda` binary as coordinator and
//! children under the test Runtime API (tests/it/common/runtime.rs, which also serves
//! the Invoke API the coordinator calls). The same fan-out over one prefix is
//! `throttled` with its 503 SlowDown answers counted; over a prefix per object
//! (`{i}/vectors`) it is not, at a rate well over one prefix's. A module whose name
//! ends in `network`, so `make test` runs it in the one-at-a-time pass (TIMED_TESTS
//! `network::`): the 503s follow the request rate the machine reaches.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::lab::{LatencyProfile, NetworkConfig};
use crate::common::runtime::{Ending, Runtime};
use crate::common::LabBuilder;
use s3sweep::s3::seed::object_body;

const BUCKET: &str = "prefix-bucket";
/// The lab's rate per prefix partition, GET/s (S3's is 5,500: scaled down with the load).
const RATE: f64 = 50.0;
const OBJECTS: u32 = 300;
const CHILDREN: u32 = 3;

/// One fan-out of `CHILDREN` children, 8 workers each, over the keys of `template`.
async fn fan_out(rt: &Runtime, template: &str) -> Value {
    let event = json!({
        "buckets": [BUCKET], "object_count": OBJECTS, "key_template": template, "workers": [8],
        "pool_connections": 8, "warmup": false,
        "fanout": {"invocations": CHILDREN, "start_delay_ms": 500}
    });
    let (_, ending) = rt
        .invoke(serde_json::to_vec(&event).unwrap(), Duration::from_secs(90))
        .await;
    match ending {
        Ending::Answered { body, .. } => serde_json::from_slice(&body).unwrap(),
        other => panic!("no answer: {other:?}"),
    }
}

/// The merged row's figures: (verdict, throttled answers, objects/s, requests).
fn merged(result: &Value) -> (String, u64, f64, u64) {
    assert_eq!(result["fanout"]["children_ok"], CHILDREN, "{}", result["fanout"]);
    let row = &result["results"][0];
    let throttled = row["errors"]["throttled"]
        .as_u64()
        .unwrap()
        .max(row["throttled_responses"].as_u64().unwrap_or(0));
    (
        row["diagnosis"]["verdict"].as_str().unwrap().to_string(),
        throttled,
        row["objects_per_s"].as_f64().unwrap(),
        row["requests"].as_u64().unwrap(),
    )
}

/// The lab's per-prefix request rate throttles a fan-out over one prefix (SlowDown
/// counted, the verdict says so), and not one spread over prefixes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_over_one_prefix_is_throttled_and_spread_over_prefixes_is_not() {
    let _one = crate::common::one_at_a_time_async().await;
    let server = LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::None)
        .network(NetworkConfig {
            prefix_gets_per_s: Some(RATE),
            ..NetworkConfig::default()
        })
        .server()
        .await;
    // Written straight into the store: seeding's requests would meet the rate too.
    let body = object_body(46_080);
    for i in 0..OBJECTS {
        server.store().insert(BUCKET, &format!("hot/{i}"), body.clone());
        server.store().insert(BUCKET, &format!("{i}/vectors"), body.clone());
    }
    let rt = Runtime::start().await;
    let env = vec![
        ("S3SWEEP_ENDPOINT_URL", server.endpoint()),
        ("S3SWEEP_FANOUT_FUNCTION", "s3sweep".to_string()),
        ("AWS_ENDPOINT_URL_LAMBDA", format!("http://{}", rt.addr)),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
    ];
    rt.spawn_functions(crate::common::lambda_bin(), 1 + CHILDREN as usize, &env);

    // 1. One prefix (`hot/`): far over its rate, S3 pushes back.
    let hot = fan_out(&rt, "hot/{i}").await;
    let (verdict, throttled, rate, requests) = merged(&hot);
    let tally = server.network().tally().prefix_rate.expect("a prefix rate");
    eprintln!(
        "one prefix, {CHILDREN} children x 8 workers, rate {RATE} GET/s: verdict {verdict}, {throttled} SlowDown in {requests} GETs, \
         {rate:.0} objects/s; lab {tally:?}\n{}",
        hot["results"][0]["diagnosis"]["explanation"]
    );
    assert_eq!(verdict, "throttled", "{}", hot["results"][0]["diagnosis"]);
    assert!(
        throttled >= u64::from(OBJECTS) / 4,
        "{throttled} SlowDown in {requests}"
    );
    assert!(
        tally.throttled >= throttled,
        "every 503 the rows counted was the lab's: {tally:?}"
    );

    // 2. The same load over a prefix per object: nothing refused, at well over one
    // prefix's rate.
    let spread = fan_out(&rt, "{i}/vectors").await;
    let (verdict, throttled, rate, requests) = merged(&spread);
    let after = server.network().tally().prefix_rate.unwrap();
    eprintln!(
        "{OBJECTS} prefixes, same load: verdict {verdict}, {throttled} SlowDown in {requests} GETs, {rate:.0} objects/s; lab {after:?}"
    );
    assert_ne!(verdict, "throttled", "{}", spread["results"][0]["diagnosis"]);
    assert_eq!(throttled, 0);
    assert_eq!(after.throttled, tally.throttled, "the lab refused nothing");
    assert!(
        rate > 2.0 * RATE,
        "{rate:.0} objects/s: over one prefix's rate, so spreading is what kept it unthrottled"
    );
    server.shutdown().await;
}

/// `probe_bandwidth` in a fan-out: every child probes from its own function and the
/// merged answer keeps each figure and their sum, which is the merged rows' ceiling.
/// In the lab all children share one NIC (on Lambda each function has its own), so
/// their probes, run at the same time, split its 20 MiB/s and the sum is that NIC's
/// rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_keeps_each_childs_probe_and_their_sum_is_the_ceiling() {
    let _one = crate::common::one_at_a_time_async().await;
    const NIC_MIB_S: f64 = 20.0;
    let server = LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::None)
        .network(NetworkConfig {
            nic: Some(crate::common::lab::nic::NicConfig {
                rate_mib_s: NIC_MIB_S,
                burst: None,
                per_connection_mib_s: None,
            }),
            ..NetworkConfig::default()
        })
        .server()
        .await;
    let body = object_body(46_080);
    for i in 0..20 {
        server
            .store()
            .insert(BUCKET, &format!("test/{i}/vectors"), body.clone());
    }
    server
        .store()
        .insert(BUCKET, "s3sweep/probe-object", object_body(64 << 20));
    let rt = Runtime::start().await;
    let env = vec![
        ("S3SWEEP_ENDPOINT_URL", server.endpoint()),
        ("S3SWEEP_FANOUT_FUNCTION", "s3sweep".to_string()),
        ("AWS_ENDPOINT_URL_LAMBDA", format!("http://{}", rt.addr)),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
    ];
    rt.spawn_functions(crate::common::lambda_bin(), 3, &env);
    let event = json!({
        "buckets": [BUCKET], "object_count": 20, "workers": [2], "warmup": false, "probe_bandwidth": true,
        "fanout": {"invocations": 2, "start_delay_ms": 500}
    });
    let (_, ending) = rt
        .invoke(serde_json::to_vec(&event).unwrap(), Duration::from_secs(90))
        .await;
    let result: Value = match ending {
        Ending::Answered { body, .. } => serde_json::from_slice(&body).unwrap(),
        other => panic!("no answer: {other:?}"),
    };
    assert_eq!(result["fanout"]["children_ok"], 2, "{}", result["fanout"]);
    let probe = &result["fanout"]["probe"];
    eprintln!("fan-out probe block: {probe}; network: {}", result["network"]);
    let children = probe["children"].as_array().expect("a probe block");
    let figures: Vec<(u64, f64)> = children
        .iter()
        .map(|c| (c["child"].as_u64().unwrap(), c["sustained_mib_per_s"].as_f64().unwrap()))
        .collect();
    assert_eq!(figures.iter().map(|f| f.0).collect::<Vec<_>>(), [0, 1]);
    let sum: f64 = figures.iter().map(|f| f.1).sum();
    let aggregate = probe["aggregate_mib_per_s"].as_f64().unwrap();
    assert!((aggregate - sum).abs() < 0.01, "{probe}");
    assert!(
        (aggregate - NIC_MIB_S).abs() <= 0.15 * NIC_MIB_S,
        "two probes at once on one {NIC_MIB_S} MiB/s NIC add up to it: {probe}"
    );
    let ceiling = &result["network"]["ceiling"];
    assert_eq!(ceiling["mib_per_s"].as_f64(), Some(aggregate), "{ceiling}");
    assert_eq!(ceiling["source"], "probe");
    server.shutdown().await;
}

//! End-to-end tests of the engine against the embedded server on 127.0.0.1:0: real
//! TCP, real SigV4, the SDK's real connection handling. Every test is bounded in
//! requests (hundreds at most) and time.

use std::sync::Arc;
use std::time::Duration;

use crate::common::lab::LatencyProfile;
use crate::common::{client_of, options, seed_bucket, LabBuilder};
use s3sweep::engine::{self, BucketError, Quiet};
use s3sweep::plan::Plan;
use s3sweep::s3::ClientOptions;

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_are_exact_and_missing_keys_are_not_found() {
    let (server, client) = LabBuilder::new()
        .bucket("e2e-bucket", LatencyProfile::None)
        .seed("e2e-bucket", 50, 1000)
        .start()
        .await;
    assert_eq!(server.store().object_count("e2e-bucket"), Some(50));

    let plan =
        Plan::from_json(r#"{"buckets": ["e2e-bucket"], "object_count": 60, "workers": [1, 4], "repetitions": 2}"#)
            .unwrap();
    let mut result = engine::run(&client.session(&plan), &plan, &options(), Arc::new(Quiet)).await;
    s3sweep::analysis::analyse(&mut result, &Default::default());
    assert_eq!(result.schema, "s3sweep.result/v1");
    assert_eq!(result.results.len(), 4);
    for row in &result.results {
        assert_eq!(row.requests, 60, "{row:?}");
        assert_eq!(row.ok, 50, "{row:?}");
        assert_eq!(row.errors.not_found, 10, "{row:?}");
        assert_eq!(row.errors.total, 10, "{row:?}");
        assert_eq!(row.ok + row.errors.total, row.requests);
        assert_eq!(row.bytes, 50 * 1000);
        assert_eq!(row.retries, 0);
        assert_eq!(row.ttfb_ms.count, 50);
        assert_eq!(row.pool_wait_ms.count, 60);
        assert!(
            row.ttfb_ms.p50 > 0.0 && row.ttfb_ms.p50 <= row.ttlb_ms.p50 + 0.01,
            "{row:?}"
        );
        assert!(row.wall_ms > 0.0);
        assert!(!row.error_samples.is_empty());
    }
    let summary = &result.summary[0];
    assert_eq!(summary.bucket, "e2e-bucket");
    assert_eq!(summary.errors_total, 40);
    let json = serde_json::to_value(&result).unwrap();
    for field in [
        "bucket",
        "workers",
        "repetition",
        "wall_ms",
        "ok",
        "errors",
        "bytes",
        "ttfb_ms",
        "ttlb_ms",
        "cpu_ms_per_get",
        "connections_opened",
    ] {
        assert!(json["results"][0].get(field).is_some(), "missing {field}");
    }
    assert_eq!(json["environment"]["endpoint"], server.endpoint());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_has_no_delayed_ack_stall() {
    let (_server, client) = LabBuilder::new()
        .bucket("quick-bucket", LatencyProfile::None)
        .seed("quick-bucket", 200, 46_080)
        .start()
        .await;
    let plan = Plan::from_json(r#"{"buckets": ["quick-bucket"], "object_count": 200, "workers": [1]}"#).unwrap();
    let result = engine::run(&client.session(&plan), &plan, &options(), Arc::new(Quiet)).await;
    let row = &result.results[0];
    assert_eq!(row.ok, 200);
    let per_get_ms = row.wall_ms / 200.0;
    // A 40 ms delayed-ACK stall on either side would put every GET near 40-48 ms.
    // The median is immune to a few requests delayed by a busy machine (the tests of
    // this file run in parallel); a stall would move it, and the mean, to ~40 ms.
    assert!(row.ttlb_ms.p50 < 5.0, "{row:?}");
    assert!(per_get_ms < 15.0, "{per_get_ms:.2} ms per GET at one worker: {row:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_caps_connections_and_measures_the_wait() {
    let (server, client) = LabBuilder::new()
        .bucket("pool-bucket", LatencyProfile::Express)
        .seed("pool-bucket", 160, 1000)
        .start()
        .await;
    let accepted_before = server.connections_accepted();
    let plan =
        Plan::from_json(r#"{"buckets": ["pool-bucket"], "object_count": 160, "workers": [32], "pool_connections": 8}"#)
            .unwrap();
    let session = client.session(&plan);
    let result = engine::run(&session, &plan, &options(), Arc::new(Quiet)).await;
    let row = &result.results[0];
    assert_eq!(row.ok, 160, "{row:?}");
    assert!(row.connections_opened <= 8, "{row:?}");
    let opened = session.transport().counters().connections_opened;
    assert!(opened <= 8, "{opened} connections opened in all, warm-up included");
    assert!(server.connections_accepted() - accepted_before <= 8);
    // 32 workers share 8 connections: most requests waited for one.
    assert!(row.pool_wait_ms.p50 > 1.0, "{:?}", row.pool_wait_ms);
    // The session never had more than its cap open.
    assert!(session.transport().connections_open() <= 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_says_what_to_fix() {
    let (server, client) = LabBuilder::new()
        .bucket("present-bucket", LatencyProfile::None)
        .start()
        .await;

    let plan = Plan::from_json(r#"{"buckets": ["absent-bucket"], "object_count": 5, "workers": [1]}"#).unwrap();
    let err = engine::preflight(&client.session(&plan), &plan).await.unwrap_err();
    assert!(matches!(err, BucketError::BucketNotFound { .. }), "{err:?}");

    let plan = Plan::from_json(r#"{"buckets": ["present-bucket"], "object_count": 5, "workers": [1]}"#).unwrap();
    let err = engine::preflight(&client.session(&plan), &plan).await.unwrap_err();
    assert!(matches!(err, BucketError::ObjectNotFound { .. }), "{err:?}");
    assert_eq!(err.error_type(), "ObjectNotFound");
    assert!(err.to_string().contains("s3sweep seed"), "{err}");

    seed_bucket(&client, "present-bucket", 5, 10).await;
    engine::preflight(&client.session(&plan), &plan)
        .await
        .expect("seeded bucket passes");

    let wrong = s3sweep::sweep_client(ClientOptions {
        credentials: s3sweep::s3::CredentialSource::Chain,
        ..crate::common::lab::client_options(server.endpoint())
    });
    // With no credentials in this environment the chain yields none or wrong ones;
    // either way the first request must fail with a clear start error, not a panic.
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        let err = engine::preflight(&wrong.await.unwrap().session(&plan), &plan)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                BucketError::NoCredentials { .. } | BucketError::AccessDenied { .. } | BucketError::Other { .. }
            ),
            "{err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoint_is_counted_not_fatal() {
    // Bind a port, then close it: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let client = s3sweep::sweep_client(crate::common::lab::client_options(format!("http://127.0.0.1:{port}")))
        .await
        .unwrap();
    let plan = Plan::from_json(
        r#"{"buckets": ["gone-bucket"], "object_count": 20, "workers": [4], "warmup": false, "timeouts_ms": {"connect": 500}}"#,
    )
    .unwrap();
    let err = engine::preflight(&client.session(&plan), &plan).await.unwrap_err();
    assert_eq!(err.error_type(), "EndpointUnreachable", "{err:?}");
    let result = engine::run(&client.session(&plan), &plan, &options(), Arc::new(Quiet)).await;
    let row = &result.results[0];
    assert_eq!(row.ok, 0);
    assert_eq!(row.errors.total, 20);
    assert_eq!(row.errors.connection, 20, "{row:?}");
}

/// The TCP timers (`tr` of /proc/net/tcp: 2 is keepalive) of established sockets whose
/// remote end is 127.0.0.1:`port` (the client's ends of its connections to the server).
fn client_socket_timers(port: u16) -> Vec<u8> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let remote_port = u16::from_str_radix(f.get(2)?.split(':').nth(1)?, 16).ok()?;
            let established = *f.get(3)? == "01";
            let timer = u8::from_str_radix(f.get(5)?.split(':').next()?, 16).ok()?;
            (remote_port == port && established).then_some(timer)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_keepalive_is_on_the_sockets_only_when_asked_for() {
    // Seeded by the lab's client, dropped (its connection closed) before the sweeps'
    // sessions open theirs.
    let (server, seeder) = LabBuilder::new()
        .bucket("keepalive-bucket", LatencyProfile::None)
        .seed("keepalive-bucket", 1, 100)
        .start()
        .await;
    drop(seeder);
    let port = server.addr().port();
    let client = client_of(&server).await;
    let settle = std::time::Instant::now();
    while !client_socket_timers(port).is_empty() && settle.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for keepalive in [None, Some(Duration::from_secs(60))] {
        // A session of its own per setting: the last one's connections close with it.
        let session = client.session_with(
            s3sweep::transport::TransportSettings {
                pool_connections: 1,
                connect_timeout: Duration::from_secs(3),
                tcp_keepalive: keepalive,
                ..Default::default()
            },
            common::seed_settings(),
        );
        let s3 = session.sdk(0);
        let out = s3
            .get_object()
            .bucket("keepalive-bucket")
            .key("test/0/vectors")
            .send()
            .await
            .unwrap();
        out.body.collect().await.unwrap();
        // The connection is now idle in the pool; the last session's closed with it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let timers = client_socket_timers(port);
        assert!(!timers.is_empty(), "no established client socket to port {port}");
        let keepalive_timers = timers.iter().filter(|&&t| t == 2).count();
        match keepalive {
            None => assert_eq!(keepalive_timers, 0, "{timers:?}"),
            Some(_) => assert_eq!(keepalive_timers, timers.len(), "{timers:?}"),
        }
    }
    server.shutdown().await;
}

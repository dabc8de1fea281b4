//! The SDK's real S3 Express path against the lab's directory buckets, over HTTPS:
//! `CreateSession` (ReadWrite for seeding, ReadOnly for the sweep's reads), requests
//! signed with the session (`x-amz-s3session-token`, signing name `s3express`), one
//! session per client per lifetime and another after it, a refused (expired) session
//! counted by kind and replaced, a ReadOnly session refused a write, and one TLS
//! handshake per new connection, counted by the client and by the server. Everything
//! on 127.0.0.1, bounded in requests (tens) and time (seconds).

use std::sync::Arc;
use std::time::Duration;

use crate::common::lab::LatencyProfile;
use crate::common::{options, seed_settings, LabBuilder};
use s3sweep::engine::{self, Quiet};
use s3sweep::plan::Plan;
use s3sweep::s3::get::get_one;
use s3sweep::s3::RequestSettings;

const DIRECTORY_BUCKET: &str = "express-test--lab1-az1--x-s3";
const GENERAL_BUCKET: &str = "general-test-bucket";

fn read_settings() -> RequestSettings {
    RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(5),
        attempt_timeout: Duration::from_secs(10),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_use_one_read_only_session_and_one_handshake_per_connection() {
    let (server, client) = LabBuilder::new()
        .buckets(&[
            (DIRECTORY_BUCKET, LatencyProfile::None),
            (GENERAL_BUCKET, LatencyProfile::None),
        ])
        .tls()
        .seed(DIRECTORY_BUCKET, 40, 2048)
        .seed(GENERAL_BUCKET, 40, 2048)
        .start()
        .await;
    assert!(
        server.endpoint().starts_with("https://127.0.0.1:"),
        "{}",
        server.endpoint()
    );
    let seeded = server.sessions().tally();
    assert_eq!(
        seeded.created_read_write, 1,
        "seeding: the SDK's own (ReadWrite) session: {seeded:?}"
    );
    assert_eq!(seeded.created_read_only, 0, "{seeded:?}");

    let plan = Plan::from_json(&format!(
        r#"{{"buckets": ["{DIRECTORY_BUCKET}", "{GENERAL_BUCKET}"], "object_count": 40, "workers": [1, 4, 8], "pool_connections": 8}}"#
    ))
    .unwrap();
    let session = client.session(&plan);
    let result = engine::run(&session, &plan, &options(), Arc::new(Quiet)).await;
    for row in &result.results {
        assert_eq!(row.ok, 40, "{row:?}");
    }
    // One ReadOnly session for the whole sweep of the directory bucket, created by the
    // first configuration's warm-up; none for the general purpose bucket.
    let tally = server.sessions().tally();
    assert_eq!(tally.created_read_only, 1, "{tally:?}");
    assert_eq!(tally.created_read_write, 1, "{tally:?}");
    assert_eq!(session.transport().counters().session_requests, 1);
    let first = &result.results[0];
    assert_eq!(first.warmup.as_ref().map(|w| w.session_requests), Some(1), "{first:?}");
    let sessions_in_rows: u64 = result
        .results
        .iter()
        .map(|r| r.session_requests + r.warmup.as_ref().map_or(0, |w| w.session_requests))
        .sum();
    assert_eq!(sessions_in_rows, 1);
    // Every GET of the directory bucket carried the session: accepted by the lab.
    assert!(tally.accepted >= 3 * 40, "{tally:?}");

    // One TLS handshake per connection: the session's counters (the seeding's on the
    // client's own transport), the rows' warm-up and timed breakdowns, and the
    // server's count agree.
    let counters = session.transport().counters();
    let seeding = client.transport().counters();
    assert!(counters.connections_opened > 0);
    assert_eq!(counters.tls_handshakes, counters.connections_opened, "{counters:?}");
    assert_eq!(
        server.tls_handshakes(),
        counters.connections_opened + seeding.connections_opened
    );
    assert_eq!(server.tls_handshakes_failed(), 0);
    let in_rows: (u64, u64) = result
        .results
        .iter()
        .flat_map(|r| [r.warmup.as_ref(), r.breakdown.as_ref()])
        .flatten()
        .fold((0, 0), |(c, t), b| (c + b.connections_opened, t + b.tls_handshakes));
    assert!(in_rows.0 > 0 && in_rows.0 == in_rows.1, "{in_rows:?}");
    let warmup = first.warmup.as_ref().unwrap();
    assert!(warmup.tls_handshake_ms.p50 > 0.0, "{warmup:?}");
    assert!(warmup.connect_ms.p50 >= warmup.tls_handshake_ms.p50, "{warmup:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_cannot_write_and_a_read_write_one_can() {
    let (server, client) = LabBuilder::new()
        .bucket(DIRECTORY_BUCKET, LatencyProfile::None)
        .tls()
        .start()
        .await;
    let reader = client.reader(read_settings());
    let err = reader
        .put_object()
        .bucket(DIRECTORY_BUCKET)
        .key("written-by-a-reader")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"no"))
        .send()
        .await
        .expect_err("a ReadOnly session must not write");
    let code = err
        .as_service_error()
        .and_then(aws_sdk_s3::error::ProvideErrorMetadata::code);
    assert_eq!(
        code,
        Some("AccessDenied"),
        "{}",
        aws_sdk_s3::error::DisplayErrorContext(&err)
    );
    assert!(!server.store().contains(DIRECTORY_BUCKET, "written-by-a-reader"));
    let tally = server.sessions().tally();
    assert_eq!(
        (tally.created_read_only, tally.refused_read_only_writes),
        (1, 1),
        "{tally:?}"
    );

    let writer = client.s3(seed_settings());
    writer
        .put_object()
        .bucket(DIRECTORY_BUCKET)
        .key("written-by-a-writer")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"yes"))
        .send()
        .await
        .expect("a ReadWrite session writes");
    assert!(server.store().contains(DIRECTORY_BUCKET, "written-by-a-writer"));
    assert_eq!(server.sessions().tally().created_read_write, 1);
    // The reader reads what the writer wrote, with its ReadOnly session.
    let read = get_one(
        &reader,
        DIRECTORY_BUCKET,
        "written-by-a-writer",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(read.result, Ok(3));
    assert_eq!(server.sessions().tally().created_read_only, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_reused_for_its_lifetime_and_replaced_after_it() {
    // Sessions of 2 s: the client refreshes a fifth of the lifetime before the end.
    let (server, client) = LabBuilder::new()
        .bucket(DIRECTORY_BUCKET, LatencyProfile::None)
        .tls()
        .session_ttl(Duration::from_secs(2))
        .seed(DIRECTORY_BUCKET, 5, 100)
        .start()
        .await;
    let reader = client.reader(read_settings());
    let before = client.transport().counters().session_requests;
    for i in 0..10 {
        let read = get_one(
            &reader,
            DIRECTORY_BUCKET,
            &format!("test/{}/vectors", i % 5),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(read.result, Ok(100));
    }
    assert_eq!(
        client.transport().counters().session_requests - before,
        1,
        "one session for ten GETs"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    for i in 0..5 {
        let read = get_one(
            &reader,
            DIRECTORY_BUCKET,
            &format!("test/{i}/vectors"),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(read.result, Ok(100));
    }
    assert_eq!(
        client.transport().counters().session_requests - before,
        2,
        "a second one after expiry"
    );
    let tally = server.sessions().tally();
    assert_eq!(tally.created_read_only, 2, "{tally:?}");
    assert_eq!(
        tally.refused_expired, 0,
        "the client refreshed before the end: {tally:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_refused_counted_by_kind_and_replaced() {
    let (server, client) = LabBuilder::new()
        .bucket(DIRECTORY_BUCKET, LatencyProfile::None)
        .tls()
        .seed(DIRECTORY_BUCKET, 20, 100)
        .start()
        .await;
    let plan = Plan::from_json(&format!(
        r#"{{"buckets": ["{DIRECTORY_BUCKET}"], "object_count": 20, "workers": [1], "warmup": false}}"#
    ))
    .unwrap();
    // One session for both runs: its S3 Express sessions are what expires.
    let session = client.session(&plan);
    let first = engine::run(&session, &plan, &options(), Arc::new(Quiet)).await;
    assert_eq!(first.results[0].ok, 20);
    assert_eq!(first.results[0].session_requests, 1);
    // The lab ends every session before the client expects (a session revoked early,
    // or a client clock running behind): the next GET carries an expired session.
    server.sessions().expire_all();
    let second = engine::run(&session, &plan, &options(), Arc::new(Quiet)).await;
    let row = &second.results[0];
    assert_eq!(
        row.errors.session, 1,
        "refused with ExpiredToken, counted as `session`: {row:?}"
    );
    assert_eq!(row.errors.total, 1, "{row:?}");
    assert_eq!(row.ok, 19, "the session was replaced after the refusal: {row:?}");
    assert_eq!(row.session_requests, 1, "{row:?}");
    assert!(
        row.error_samples.iter().any(|s| s.contains("ExpiredToken")),
        "{:?}",
        row.error_samples
    );
    let tally = server.sessions().tally();
    assert_eq!(tally.refused_expired, 1, "{tally:?}");
    assert_eq!(tally.created_read_only, 2, "{tally:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_handshake_is_abandoned_not_failed() {
    use tokio::io::AsyncWriteExt;
    let server = LabBuilder::new()
        .bucket(GENERAL_BUCKET, LatencyProfile::None)
        .tls()
        .server()
        .await;
    // A client that connects and goes away before the handshake ends (a killed process).
    drop(tokio::net::TcpStream::connect(server.addr()).await.unwrap());
    // A client that does not speak TLS: a real handshake failure.
    let mut plain = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    plain.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.tls_handshakes_abandoned() + server.tls_handshakes_failed() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "the server never counted both");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.tls_handshakes_abandoned(), 1);
    assert_eq!(server.tls_handshakes_failed(), 1);
    assert_eq!(server.tls_handshakes(), 0);
}

//! The lean client (`client: "lean"`) against the lab, beside the SDK path: the same
//! bytes over HTTP and HTTPS from a Standard-like and a directory bucket; a wrong
//! secret refused with the same `AccessDenied` kind; S3 Express sessions created
//! ReadOnly, renewed after their lifetime and replaced after a refusal; and the lab's
//! faults counted by the same kinds and retried by the same rules as the SDK path, in
//! a sweep with `clients: ["sdk", "lean"]`. Everything on 127.0.0.1, bounded in
//! requests (hundreds at most) and time (seconds).

use std::time::Duration;

use crate::common::faulted;
use crate::common::lab::{self, FaultKind, FaultSpec, LatencyProfile, RunningServer};
use crate::common::{client_of, expected_kind, seed_spec, LabBuilder};
use s3sweep::model::{Client, ErrorKind};
use s3sweep::plan::Plan;
use s3sweep::s3::get::get_one;
use s3sweep::s3::seed::SeedSpec;
use s3sweep::s3::{CredentialSource, RequestSettings, StaticCredentials, SweepClient};

const DIRECTORY_BUCKET: &str = "lean-test--lab1-az1--x-s3";
const GENERAL_BUCKET: &str = "lean-general";
const OBJECTS: u32 = 12;

fn read_settings() -> RequestSettings {
    RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(5),
        attempt_timeout: Duration::from_secs(10),
    }
}

/// Objects of different sizes and contents (the seed's size cycle), so a body read
/// from the wrong key or cut short shows.
fn varied(bucket: &str) -> SeedSpec {
    SeedSpec {
        size_cycle_bytes: vec![1000, 4096, 70_000, 1],
        ..seed_spec(bucket, "test/{i}/vectors", OBJECTS, 1000)
    }
}

/// The lab with the directory and the general bucket, each seeded [`varied`].
fn both_buckets() -> LabBuilder {
    LabBuilder::new()
        .bucket(DIRECTORY_BUCKET, LatencyProfile::None)
        .bucket(GENERAL_BUCKET, LatencyProfile::None)
        .seed_spec(varied(DIRECTORY_BUCKET))
        .seed_spec(varied(GENERAL_BUCKET))
}

/// Every object, read by the SDK path and the lean client: the same bytes.
async fn same_bytes(server: &RunningServer, client: &SweepClient) {
    let lean = client.lean(read_settings());
    let sdk = client.s3(read_settings());
    let sent_before = client.transport().counters().requests_sent;
    for bucket in [GENERAL_BUCKET, DIRECTORY_BUCKET] {
        for i in 0..OBJECTS {
            let key = format!("test/{i}/vectors");
            let theirs = sdk.get_object().bucket(bucket).key(&key).send().await.unwrap();
            let theirs = theirs.body.collect().await.unwrap().into_bytes();
            let ours = lean
                .get_body(bucket, &key)
                .await
                .unwrap_or_else(|f| panic!("{bucket}/{key}: {f:?}"));
            assert_eq!(ours.len(), theirs.len(), "{bucket}/{key}");
            assert!(ours == theirs, "{bucket}/{key}: the bodies differ");
            assert_eq!(lean.get(bucket, &key).await, Ok(theirs.len() as u64));
        }
    }
    // Every lean GET went through the shared transport and was counted there.
    let sent = client.transport().counters().requests_sent - sent_before;
    assert_eq!(sent, 3 * 2 * u64::from(OBJECTS));
    // The directory bucket's GETs carried a ReadOnly session the lab accepted.
    let tally = server.sessions().tally();
    assert!(tally.created_read_only >= 1, "{tally:?}");
    assert!(tally.accepted >= 3 * u64::from(OBJECTS), "{tally:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_reads_the_same_bytes_as_the_sdk_over_http() {
    let (server, client) = both_buckets().start().await;
    same_bytes(&server, &client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_reads_the_same_bytes_as_the_sdk_over_https() {
    let (server, client) = both_buckets().tls().start().await;
    same_bytes(&server, &client).await;
    let client = client_of(&server).await;
    let lean = client.lean(read_settings());
    assert_eq!(lean.get(GENERAL_BUCKET, "test/0/vectors").await, Ok(1000));
    let counters = client.transport().counters();
    assert_eq!(counters.tls_handshakes, counters.connections_opened, "{counters:?}");
    assert!(counters.tls_handshakes >= 1, "{counters:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_is_refused_with_the_same_kind_as_the_sdk_path() {
    let server = both_buckets().server().await;
    let wrong = lab::client_options(server.endpoint());
    let wrong = s3sweep::s3::ClientOptions {
        credentials: CredentialSource::Static(StaticCredentials {
            access_key_id: match &wrong.credentials {
                CredentialSource::Static(keys) => keys.access_key_id.clone(),
                CredentialSource::Chain => unreachable!("the lab's keys are static"),
            },
            secret_access_key: "not-the-secret".into(),
            provider_name: "test",
        }),
        ..wrong
    };
    let client = s3sweep::sweep_client(wrong.clone()).await.unwrap();
    // Its own client of the same options (its own transport and sessions).
    let lean = s3sweep::sweep_client(wrong).await.unwrap().lean(read_settings());
    for bucket in [GENERAL_BUCKET, DIRECTORY_BUCKET] {
        let key = "test/0/vectors";
        let sdk = get_one(&client.reader(read_settings()), bucket, key, Duration::from_secs(10)).await;
        let sdk = sdk.result.expect_err("the SDK path is refused");
        let ours = lean.get(bucket, key).await.expect_err("the lean client is refused");
        assert_eq!(sdk.kind, ErrorKind::AccessDenied, "{bucket}: {sdk:?}");
        assert_eq!(ours.kind, sdk.kind, "{bucket}: {ours:?} vs {sdk:?}");
        assert_eq!(ours.code, sdk.code, "{bucket}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_renewed_and_a_refused_one_replaced() {
    // Sessions of 2 s: the lean client renews them as the SDK path does.
    let (server, client) = LabBuilder::new()
        .bucket(DIRECTORY_BUCKET, LatencyProfile::None)
        .tls()
        .session_ttl(Duration::from_secs(2))
        .seed_spec(varied(DIRECTORY_BUCKET))
        .start()
        .await;
    let lean = client.lean(read_settings());
    let before = client.transport().counters().session_requests;
    for i in 0..OBJECTS {
        assert!(lean.get(DIRECTORY_BUCKET, &format!("test/{i}/vectors")).await.is_ok());
    }
    assert_eq!(
        client.transport().counters().session_requests - before,
        1,
        "one session"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(lean.get(DIRECTORY_BUCKET, "test/0/vectors").await.is_ok());
    assert_eq!(
        client.transport().counters().session_requests - before,
        2,
        "a second one after the first's lifetime"
    );
    let tally = server.sessions().tally();
    assert_eq!((tally.created_read_only, tally.refused_expired), (2, 0), "{tally:?}");
    // Ended early by the server: refused once as `session`, then replaced.
    server.sessions().expire_all();
    let refused = lean.get(DIRECTORY_BUCKET, "test/1/vectors").await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Session, "{refused:?}");
    assert_eq!(refused.code.as_deref(), Some("ExpiredToken"));
    assert!(lean.get(DIRECTORY_BUCKET, "test/1/vectors").await.is_ok());
    let tally = server.sessions().tally();
    assert_eq!((tally.created_read_only, tally.refused_expired), (3, 1), "{tally:?}");
}

/// A plan of [`faulted::plan`] for `client`, unshuffled.
fn fault_plan(bucket: &str, client: Client, workers: u32, max_attempts: u32) -> Plan {
    let more = format!(r#", "clients": ["{}"], "shuffle": false"#, client.name());
    faulted::plan(bucket, workers, max_attempts, &more)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_is_counted_under_the_same_kind_by_both_clients() {
    let bucket = "lean-faults";
    let (server, client) = faulted::lab(&[bucket]).start().await;
    let mut lines = Vec::new();
    for &kind in FaultKind::ALL.iter() {
        server
            .faults()
            .set(bucket, vec![FaultSpec { kind, rate: 0.2 }])
            .unwrap();
        for c in [Client::Sdk, Client::Lean] {
            let plan = fault_plan(bucket, c, 16, 1);
            let (row, injected, sent, _) = faulted::sweep(&server, &client, &plan, Duration::from_secs(30)).await;
            let n = injected.of(kind);
            lines.push(format!(
                "{:<22} {:<4} injected {:>3} counted {:>3} as {:<13} ok {:>3}",
                kind.name(),
                c.name(),
                n,
                row.errors.get(expected_kind(kind)),
                expected_kind(kind).name(),
                row.ok
            ));
            assert_eq!(row.axes.s3_client, c);
            assert!(n > 0, "{kind}: nothing injected; pick another rate");
            assert_eq!(injected.get_requests, u64::from(faulted::OBJECTS), "{kind} {c}");
            assert_eq!(sent, u64::from(faulted::OBJECTS), "{kind} {c}: one attempt per object");
            assert_eq!(row.errors.get(expected_kind(kind)), n, "{kind} {c}: {row:?}");
            assert_eq!(row.errors.total, n, "{kind} {c}: {row:?}");
            assert_eq!(row.ok, row.requests - n, "{kind} {c}");
            assert_eq!(row.bytes, row.ok * faulted::SIZE, "{kind} {c}: only whole bodies");
            assert_eq!(row.retries, 0, "{kind} {c}");
        }
    }
    server.faults().set(bucket, Vec::new()).unwrap();
    eprintln!(
        "fault kind, client: injected vs counted (rate 0.2, {} GETs, 16 workers, 1 attempt)",
        faulted::OBJECTS
    );
    for l in &lines {
        eprintln!("{l}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_retried_by_the_same_rules_as_the_sdk_path() {
    let bucket = "lean-retries";
    let (server, client) = faulted::lab(&[bucket]).start().await;
    let specs: Vec<FaultSpec> = FaultKind::ALL
        .iter()
        .map(|&kind| FaultSpec { kind, rate: 0.04 })
        .collect();
    server.faults().set(bucket, specs).unwrap();
    let plan = fault_plan(bucket, Client::Lean, 16, 3);
    let (row, injected, sent, _) = faulted::sweep(&server, &client, &plan, Duration::from_secs(60)).await;
    eprintln!(
        "lean retries: injected {} ({}), errors {} ({}), retries {} ({}), ok {}",
        injected.injected_total,
        injected.line(),
        row.errors.total,
        row.errors.short(),
        row.retries,
        row.retries_by_cause.short(),
        row.ok
    );
    assert_eq!(row.ok + row.errors.total, row.requests);
    assert_eq!(
        injected.get_requests, sent,
        "every attempt the lab saw was sent and counted"
    );
    // 503 and 500 are retried until the attempts run out, as by the SDK.
    faulted::retries_add_up(&row, &injected, sent);
    assert_eq!(injected.injected_total, row.errors.total + row.retries, "{row:?}");
    assert!(row.retries > 0, "some faults are retryable");
    assert_eq!(row.errors.other, 0, "every failure has a kind: {row:?}");
    assert_eq!(row.bytes, row.ok * faulted::SIZE);
    // Body faults are the caller's (never retried), and 403 is final.
    let body_faults = injected.of(FaultKind::ResetMidBody)
        + injected.of(FaultKind::TruncatedBody)
        + injected.of(FaultKind::StallBody);
    assert!(row.errors.connection + row.errors.timeout >= body_faults, "{row:?}");
    assert_eq!(row.errors.access_denied, injected.of(FaultKind::AccessDenied));
}

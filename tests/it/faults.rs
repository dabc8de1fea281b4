//! The client under faults: every fault the embedded server injects is counted under
//! the right error kind, exactly; `ok + errors == requests` always; retries are
//! counted apart from first attempts; truncated bodies are never ok; nothing hangs.
//! Each test starts its own server on 127.0.0.1:0 and makes a few hundred GETs at most.

use std::time::Duration;

use crate::common::expected_kind;
use crate::common::faulted::{self, ATTEMPT_MS, OBJECTS, SIZE, TIMING};
use crate::common::lab::{self, FaultKind, FaultSpec};
use s3sweep::engine;
use s3sweep::plan::Plan;

/// A plan of [`faulted::plan`] (the SDK's client).
fn plan(bucket: &str, workers: u32, max_attempts: u32) -> Plan {
    faulted::plan(bucket, workers, max_attempts, "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_kind_is_counted_exactly_under_its_error_kind() {
    let buckets: Vec<String> = FaultKind::ALL.iter().map(|k| format!("fault-{}", k.name())).collect();
    let names: Vec<&str> = buckets.iter().map(String::as_str).collect();
    let (server, client) = faulted::lab(&names).start().await;
    let mut lines = Vec::new();
    for (kind, bucket) in FaultKind::ALL.iter().zip(&buckets) {
        server
            .faults()
            .set(bucket, vec![FaultSpec { kind: *kind, rate: 0.2 }])
            .unwrap();
        let (row, injected, sent, took) =
            faulted::sweep(&server, &client, &plan(bucket, 16, 1), Duration::from_secs(30)).await;
        let n = injected.of(*kind);
        let counted = row.errors.get(expected_kind(*kind));
        lines.push(format!(
            "{:<22} injected {:>3}  counted {:>3} as {:<14} ok {:>3}  requests {}  {} ms",
            kind.name(),
            n,
            counted,
            expected_kind(*kind).name(),
            row.ok,
            row.requests,
            took.as_millis()
        ));
        assert!(n > 0, "{kind}: the seeded draw injected nothing; pick another rate");
        assert_eq!(injected.injected_total, n, "{kind}: only this kind was injected");
        assert_eq!(
            injected.get_requests,
            u64::from(OBJECTS),
            "{kind}: one GET per object reached the server"
        );
        assert_eq!(
            sent,
            u64::from(OBJECTS),
            "{kind}: the client sent one attempt per object"
        );
        assert_eq!(row.requests, u64::from(OBJECTS));
        assert_eq!(counted, n, "{kind}: {row:?}");
        assert_eq!(row.errors.total, n, "{kind}: every error is an injected fault: {row:?}");
        assert_eq!(row.ok + row.errors.total, row.requests, "{kind}");
        assert_eq!(row.ok, row.requests - n, "{kind}: faulted responses are never ok");
        assert_eq!(row.bytes, row.ok * SIZE, "{kind}: only whole bodies are counted");
        assert_eq!(row.retries, 0, "{kind}");
        // Nothing hangs: each faulted request ends within its limits (one attempt),
        // 16 at a time.
        let bound = Duration::from_millis(ATTEMPT_MS) * (OBJECTS / 16 + 1) + Duration::from_secs(3);
        assert!(took < bound, "{kind}: {took:?} > {bound:?}");
        server.faults().set(bucket, Vec::new()).unwrap();
    }
    eprintln!("fault kind             injected vs counted (rate 0.2, {OBJECTS} GETs, 16 workers, 1 attempt)");
    for l in &lines {
        eprintln!("{l}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_counted_apart_from_first_attempts() {
    let bucket = "retry-bucket".to_string();
    let (server, client) = faulted::lab(&[&bucket]).start().await;
    let specs: Vec<FaultSpec> = FaultKind::ALL
        .iter()
        .map(|&kind| FaultSpec { kind, rate: 0.04 })
        .collect();
    server.faults().set(&bucket, specs).unwrap();
    let (row, injected, sent, took) =
        faulted::sweep(&server, &client, &plan(&bucket, 16, 3), Duration::from_secs(60)).await;
    eprintln!(
        "retries: injected {} ({}), errors {} ({}), retries {}, ok {}, {} ms",
        injected.injected_total,
        injected.line(),
        row.errors.total,
        row.errors.short(),
        row.retries,
        row.ok,
        took.as_millis()
    );
    assert!(injected.injected_total > 0);
    assert_eq!(row.ok + row.errors.total, row.requests);
    // Every attempt the server saw was sent by the client, and every attempt beyond
    // the first of a request is a retry.
    assert_eq!(injected.get_requests, sent);
    faulted::retries_add_up(&row, &injected, sent);
    let causes = row.retries_by_cause;
    eprintln!("retries by cause: {}", causes.short());
    assert!(
        causes.connection > 0 || injected.of(FaultKind::ResetBeforeHeaders) == 0,
        "{causes:?}"
    );
    // Each faulted attempt either was retried or is the request's final error.
    assert_eq!(injected.injected_total, row.errors.total + row.retries, "{row:?}");
    assert!(
        row.retries > 0,
        "some faults are retryable (503, 500, resets, late first byte)"
    );
    assert_eq!(row.errors.other, 0, "every failure has a kind: {row:?}");
    assert_eq!(row.bytes, row.ok * SIZE);
    // Body faults are not retried (the body is the caller's): each is a final error.
    let body_faults = injected.of(FaultKind::ResetMidBody)
        + injected.of(FaultKind::TruncatedBody)
        + injected.of(FaultKind::StallBody);
    assert!(row.errors.connection + row.errors.timeout >= body_faults, "{row:?}");
    // 403 is not retried either.
    assert_eq!(row.errors.access_denied, injected.of(FaultKind::AccessDenied));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tally_endpoint_reports_what_was_injected() {
    let bucket = "tally-bucket".to_string();
    let (server, client) = faulted::lab(&[&bucket]).start().await;
    server
        .faults()
        .set(
            &bucket,
            vec![FaultSpec {
                kind: FaultKind::SlowDown,
                rate: 0.5,
            }],
        )
        .unwrap();
    let (row, ..) = faulted::sweep(&server, &client, &plan(&bucket, 4, 1), Duration::from_secs(30)).await;
    // A plain HTTP GET, as a test of the `serve` binary would make it.
    let body = http_get(server.addr(), lab::FAULTS_PATH).await;
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["tally"]["injected"]["slow-down"], row.errors.throttled);
    assert_eq!(doc["tally"]["get_requests"], u64::from(OBJECTS));
    assert_eq!(doc["timing"]["stall_ms"], TIMING.stall_ms);
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_survives_transient_faults_and_names_persistent_ones() {
    let bucket = "preflight-bucket".to_string();
    let (server, client) = faulted::lab(&[&bucket]).start().await;
    let plan = plan(&bucket, 1, 1);
    // Half of all GETs answer 503 or reset: the preflight retries rather than aborting.
    server
        .faults()
        .set(
            &bucket,
            vec![
                FaultSpec {
                    kind: FaultKind::SlowDown,
                    rate: 0.15,
                },
                FaultSpec {
                    kind: FaultKind::ResetBeforeHeaders,
                    rate: 0.15,
                },
            ],
        )
        .unwrap();
    let before = server.faults().tally();
    let mut failed = 0u64;
    for _ in 0..20 {
        if let Err(e) = engine::preflight(&client.session(&plan), &plan).await {
            // Only a run of PREFLIGHT_TRIES faults in a row may stop it.
            assert!(
                matches!(
                    e,
                    engine::BucketError::Other { .. } | engine::BucketError::Unreachable { .. }
                ),
                "{e}"
            );
            failed += 1;
        }
    }
    let tally = server.faults().tally().since(&before);
    eprintln!("preflight under 30% faults: {failed} of 20 gave up; {}", tally.line());
    assert!(tally.injected_total >= 3, "{}", tally.line());
    // Each fault was followed by another try, except the last of a run that gave up.
    assert_eq!(
        tally.get_requests,
        20 + tally.injected_total - failed,
        "{}",
        tally.line()
    );
    assert_eq!(
        tally.injected_total - failed,
        tally.get_requests - 20,
        "every retry followed a fault"
    );
    assert!(failed * u64::from(engine::PREFLIGHT_TRIES) <= tally.injected_total);
    assert!(failed <= 2, "{failed} of 20 preflights gave up at 30% transient faults");
    // Every GET throttled: the preflight gives up after its tries and says why.
    server
        .faults()
        .set(
            &bucket,
            vec![FaultSpec {
                kind: FaultKind::SlowDown,
                rate: 1.0,
            }],
        )
        .unwrap();
    let before = server.faults().tally();
    let err = engine::preflight(&client.session(&plan), &plan).await.unwrap_err();
    assert!(err.to_string().contains("SlowDown"), "{err}");
    assert_eq!(
        server.faults().tally().since(&before).get_requests,
        u64::from(engine::PREFLIGHT_TRIES)
    );
}

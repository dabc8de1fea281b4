//! Bodies read through a byte limit while they stream, not collected whole and then
//! measured (issue 35): a result read from `s3://` (`report`, `compare`) and an error
//! answer's body on the lean client's path. A scripted server of our own on
//! 127.0.0.1:0 answers every request with a chunked body (no `Content-Length`, so
//! nothing can be refused up front) far larger than the limit, and counts the bytes
//! the kernel took from it before the client hung up: bounded by the limit plus
//! the sockets' buffers, not the body. Collecting the body whole first took the
//! whole 64 MiB (the 1 GiB body peaked at 2.1 GB).

use std::time::Duration;

use s3sweep::plan::ObjectUri;
use s3sweep::s3::{RequestSettings, SweepClient};

use crate::common::chunked::{Answer, Chunked};

/// The body each answer streams: 64 MiB in 64 KiB chunks.
const BODY_BYTES: u64 = 64 << 20;
const CHUNK_BYTES: usize = 64 << 10;

/// What the server may have sent before the client hung up: the limit, and up to
/// 16 MiB the loopback sockets' send and receive buffers hold.
const SOCKET_SLACK_BYTES: u64 = 16 << 20;

/// The scripted server ([`Chunked`]) answering every request with `status` and a
/// chunked body of [`BODY_BYTES`], each chunk `head` padded with spaces.
async fn scripted(status: &'static str, head: &'static str) -> Chunked {
    let mut chunk = head.as_bytes().to_vec();
    chunk.resize(CHUNK_BYTES, b' ');
    Chunked::start(Answer {
        status,
        content_type: "application/xml",
        chunk,
        chunks: BODY_BYTES / CHUNK_BYTES as u64,
        pause: Duration::ZERO,
    })
    .await
}

async fn client(endpoint: &str) -> SweepClient {
    s3sweep::sweep_client(crate::common::lab::client_options(endpoint))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_read_from_s3_stops_at_its_limit_while_streaming() {
    let server = scripted("200 OK", "{\"schema\":").await;
    let client = client(&server.endpoint).await;
    let uri = ObjectUri::parse("s3://results/run.json").unwrap();
    let limit: u64 = 1 << 20;
    let read = tokio::time::timeout(
        Duration::from_secs(30),
        s3sweep::s3::results::read_object(&client, &uri, limit),
    )
    .await
    .expect("refused within 30 s");
    let err = read.unwrap_err();
    assert!(
        matches!(
            err,
            s3sweep::s3::results::ResultsError::OverLimit { max_bytes: 1048576, .. }
        ),
        "{err}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = server.sent();
    eprintln!("a {limit}-byte limit: the server sent {sent} of {BODY_BYTES} bytes");
    assert!(
        sent <= limit + SOCKET_SLACK_BYTES,
        "the server sent {sent} bytes of a {BODY_BYTES}-byte body for a {limit}-byte limit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lean_clients_error_bodies_are_read_to_a_limit() {
    let server = scripted(
        "500 Internal Server Error",
        "<Error><Code>InternalError</Code><Message>scripted</Message></Error>",
    )
    .await;
    let client = client(&server.endpoint).await;
    let lean = client.lean(RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(10),
        attempt_timeout: Duration::from_secs(20),
    });
    let failure = tokio::time::timeout(Duration::from_secs(30), lean.get("bucket", "key"))
        .await
        .expect("answered within 30 s")
        .unwrap_err();
    // The code and message come from the first bytes, the status sorts the kind.
    assert_eq!(failure.code.as_deref(), Some("InternalError"), "{failure:?}");
    assert!(failure.message.contains("scripted"), "{failure:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = server.sent();
    eprintln!("an error body: the server sent {sent} of {BODY_BYTES} bytes");
    assert!(
        sent <= SOCKET_SLACK_BYTES,
        "the server sent {sent} bytes of a {BODY_BYTES}-byte error body"
    );
}

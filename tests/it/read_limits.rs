//! Bodies read through a byte limit while they stream, not collected whole and then
//! measured (issue 35): a result read from `s3://` (`report`, `compare`) and an error
//! answer's body on the lean client's path. A scripted server of our own on
//! 127.0.0.1:0 answers every request with a chunked body (no `Content-Length`, so
//! nothing can be refused up front) far larger than the limit, and counts the bytes
//! the kernel took from it before the client hung up: bounded by the limit plus
//! the sockets' buffers, not the body. Collecting the body whole first took the
//! whole 64 MiB (the 1 GiB body peaked at 2.1 GB).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use s3sweep::plan::ObjectUri;
use s3sweep::s3::{RequestSettings, SweepClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The body each answer streams: 64 MiB in 64 KiB chunks.
const BODY_BYTES: u64 = 64 << 20;
const CHUNK_BYTES: usize = 64 << 10;

/// What the server may have sent before the client hung up: the limit, and up to
/// 16 MiB the loopback sockets' send and receive buffers hold.
const SOCKET_SLACK_BYTES: u64 = 16 << 20;

/// A server answering every request with `status` and a chunked body of
/// [`BODY_BYTES`], each chunk `head` padded with spaces; the bytes it wrote, summed
/// over connections.
struct Scripted {
    endpoint: String,
    sent: Arc<AtomicU64>,
}

async fn scripted(status: &'static str, head: &'static str) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(answer(tcp, status, head, counter.clone()));
        }
    });
    Scripted { endpoint, sent }
}

/// Reads a request's head, then writes the answer until the body is done, the
/// client hangs up, or a write waits 2 s (a client holding the connection unread).
async fn answer(mut tcp: TcpStream, status: &'static str, head: &'static str, sent: Arc<AtomicU64>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let start = format!("HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n");
    let mut chunk = head.as_bytes().to_vec();
    chunk.resize(CHUNK_BYTES, b' ');
    let framed = [format!("{CHUNK_BYTES:x}\r\n").as_bytes(), &chunk, b"\r\n"].concat();
    if !write(&mut tcp, start.as_bytes()).await {
        return;
    }
    let mut written = 0;
    while written < BODY_BYTES {
        if !write(&mut tcp, &framed).await {
            return;
        }
        written += CHUNK_BYTES as u64;
        sent.fetch_add(CHUNK_BYTES as u64, Ordering::Relaxed);
    }
    let _ = write(&mut tcp, b"0\r\n\r\n").await;
}

/// Writes `bytes` within 2 s; false when the client hung up or read nothing.
async fn write(tcp: &mut TcpStream, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(2), tcp.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

async fn client(endpoint: &str) -> SweepClient {
    SweepClient::new(crate::common::lab::client_options(endpoint))
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
    assert!(err.contains("is over 1048576 bytes"), "{err}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = server.sent.load(Ordering::Relaxed);
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
    let sent = server.sent.load(Ordering::Relaxed);
    eprintln!("an error body: the server sent {sent} of {BODY_BYTES} bytes");
    assert!(
        sent <= SOCKET_SLACK_BYTES,
        "the server sent {sent} bytes of a {BODY_BYTES}-byte error body"
    );
}

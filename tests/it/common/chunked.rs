//! A scripted HTTP server of the tests' own on 127.0.0.1:0 that answers every request
//! with a chunked body (no `Content-Length`, so a client cannot refuse it up front):
//! large and fast for the byte limits (tests/it/read_limits.rs), one byte a second for
//! the read deadlines (tests/it/slow_bodies.rs). It counts the body bytes the kernel
//! took from it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What every answer is: its status line's rest (`"200 OK"`), its content type, and its
/// body: `chunks` chunks of `chunk`, a `pause` after each.
#[derive(Clone)]
pub(crate) struct Answer {
    pub status: &'static str,
    pub content_type: &'static str,
    pub chunk: Vec<u8>,
    pub chunks: u64,
    pub pause: Duration,
}

/// The running server: its endpoint, and the body bytes it wrote, summed over
/// connections.
pub(crate) struct Chunked {
    pub endpoint: String,
    pub sent: Arc<AtomicU64>,
}

impl Chunked {
    /// Starts answering every request with `answer`, on the current runtime.
    pub(crate) async fn start(answer: Answer) -> Chunked {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve(tcp, answer.clone(), counter.clone()));
            }
        });
        Chunked { endpoint, sent }
    }

    /// The body bytes written so far.
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// Reads a request's head, then writes the answer until the body is done, the client
/// hangs up, or a write waits 2 s (a client holding the connection unread).
async fn serve(mut tcp: TcpStream, answer: Answer, sent: Arc<AtomicU64>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        answer.status, answer.content_type
    );
    let framed = [
        format!("{:x}\r\n", answer.chunk.len()).as_bytes(),
        &answer.chunk,
        b"\r\n",
    ]
    .concat();
    if !write(&mut tcp, head.as_bytes()).await {
        return;
    }
    for _ in 0..answer.chunks {
        if !write(&mut tcp, &framed).await {
            return;
        }
        sent.fetch_add(answer.chunk.len() as u64, Ordering::Relaxed);
        if !answer.pause.is_zero() {
            tokio::time::sleep(answer.pause).await;
        }
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

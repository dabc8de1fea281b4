//! The lab's connection cap is fair (docs/lab.md, "Limits"): one client holding every
//! slot with kept-alive connections, each sending a request every second, does not
//! starve another client: at the cap, the connection idle longest is closed between
//! requests and the newcomer is served.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::lab::LabLimits;
use crate::common::LabBuilder;

const CAP: usize = 8;
const HELLO: &[u8] = b"GET /_s3sweep/hello HTTP/1.1\r\nhost: x\r\n\r\n";

/// Sends one request on `s` and reads its answer's status line and body; `None` when
/// the connection was closed instead.
fn ask(s: &mut BufReader<TcpStream>) -> Option<String> {
    s.get_mut().write_all(HELLO).ok()?;
    let mut status = String::new();
    if s.read_line(&mut status).ok()? == 0 {
        return None;
    }
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if s.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    s.read_exact(&mut body).ok()?;
    Some(status)
}

fn connect(addr: SocketAddr) -> BufReader<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    BufReader::new(s)
}

/// One kept-alive connection of the hog: a request a second, reconnecting (as an
/// SDK's pool does) whenever the lab closes it.
fn hog(addr: SocketAddr, stop: Arc<AtomicBool>, reconnects: Arc<AtomicU64>) {
    let mut conn = connect(addr);
    while !stop.load(Ordering::Relaxed) {
        if ask(&mut conn).is_none() {
            reconnects.fetch_add(1, Ordering::Relaxed);
            conn = connect(addr);
            continue;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_alive_connections_at_the_cap_do_not_starve_another_client() {
    let server = LabBuilder::new()
        .limits(LabLimits {
            max_connections: CAP,
            ..LabLimits::default()
        })
        .server()
        .await;
    let addr = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicU64::new(0));
    let hogs: Vec<_> = (0..CAP)
        .map(|_| {
            let (stop, reconnects) = (stop.clone(), reconnects.clone());
            std::thread::spawn(move || hog(addr, stop, reconnects))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // The other client: 5 requests, each on a new connection, each answered 200
    // within 3 s (the eviction waits at most 2 s for the slot).
    let answers = tokio::task::spawn_blocking(move || {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                let mut conn = connect(addr);
                let status = ask(&mut conn).unwrap_or_else(|| "closed".into());
                let took = started.elapsed();
                drop(conn);
                std::thread::sleep(Duration::from_millis(300));
                (status, took)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
    for (status, took) in &answers {
        assert!(
            status.starts_with("HTTP/1.1 200") && *took < Duration::from_secs(3),
            "the other client got {status:?} after {took:?} (all: {answers:?}); refused {}, evicted {}",
            server.connections_refused(),
            server.connections_evicted()
        );
    }
    assert!(
        server.connections_evicted() >= 1,
        "evicted {}",
        server.connections_evicted()
    );
    eprintln!(
        "fairness: answers {answers:?}, evicted {}, refused {}, hog reconnects {}",
        server.connections_evicted(),
        server.connections_refused(),
        reconnects.load(Ordering::Relaxed)
    );
}

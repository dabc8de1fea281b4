//! First byte is timed at the wire: a delay line (a small TCP proxy on 127.0.0.1 that
//! holds every chunk for a fixed time in each direction) between the client and the
//! embedded server adds a known round trip, and the GETs' first byte follows it while
//! the client's own work (preparing the request, waiting for a connection inside the
//! HTTP client) is reported apart and stays small. Then a pool smaller than the workers:
//! the sweep's own slot wait grows, the HTTP client's does not.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::lab::LatencyProfile;
use crate::common::{self, options, seed_spec, seed_with, LabBuilder};
use s3sweep::engine::{self, Quiet};
use s3sweep::model::ConfigResult;
use s3sweep::plan::Plan;
use s3sweep::s3::get::get_one;
use s3sweep::s3::SweepClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One-way delay of the line: a request/response round trip gets twice this.
const ONE_WAY: Duration = Duration::from_millis(15);
const OBJECTS: u32 = 64;

/// Copies `from` to `to`, each chunk delivered `delay` after it was read.
async fn delayed_copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until((at + delay).into()).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// A delay line in front of `upstream`; returns its address.
async fn delay_line(upstream: SocketAddr, one_way: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(delayed_copy(cr, sw, one_way));
            tokio::spawn(delayed_copy(sr, cw, one_way));
        }
    });
    addr
}

fn plan(bucket: &str, workers: u32, pool: u32) -> Plan {
    Plan::from_json(&format!(
        r#"{{"buckets": ["{bucket}"], "key_template": "w/{{i}}", "object_count": {OBJECTS},
            "workers": [{workers}], "pool_connections": {pool}}}"#
    ))
    .unwrap()
}

async fn sweep(client: &SweepClient, plan: &Plan) -> ConfigResult {
    let options = options();
    let session = client.session(plan);
    let run = engine::run(&session, plan, &options, Arc::new(Quiet));
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the sweep ends");
    result.results[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_byte_follows_the_delay_line_and_client_work_is_apart() {
    let _one = common::one_at_a_time_async().await;
    let bucket = "wire-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    let direct = s3sweep::sweep_client(crate::common::lab::client_options(server.endpoint()))
        .await
        .unwrap();
    seed_with(&direct, &seed_spec(bucket, "w/{i}", OBJECTS, 4096)).await;
    let upstream: SocketAddr = server.endpoint().trim_start_matches("http://").parse().unwrap();
    let line = delay_line(upstream, ONE_WAY).await;
    let client = s3sweep::sweep_client(crate::common::lab::client_options(format!("http://{line}")))
        .await
        .unwrap();
    let rtt_ms = 2.0 * ONE_WAY.as_secs_f64() * 1000.0;

    // Enough connections for every worker: no waiting for one.
    let row = sweep(&client, &plan(bucket, 8, 8)).await;
    let b = row.breakdown.clone().expect("a breakdown");
    eprintln!(
        "8 workers, pool 8, RTT {rtt_ms} ms: ttfb p50 {:.2} ms (steady {:.2}), client prep p50 {:.3} / p99 {:.3} ms, \
         http pool wait p50 {:.3} / p99 {:.3} ms, sweep pool wait p50 {:.3}, ttlb p50 {:.2}, attempts {}",
        row.ttfb_ms.p50,
        b.steady_ttfb_ms.p50,
        b.client_prep_ms.p50,
        b.client_prep_ms.p99,
        b.http_pool_wait_ms.p50,
        b.http_pool_wait_ms.p99,
        row.pool_wait_ms.p50,
        row.ttlb_ms.p50,
        b.attempts
    );
    assert_eq!(row.ok, u64::from(OBJECTS), "{row:?}");
    assert_eq!(b.attempts, u64::from(OBJECTS), "one attempt per GET");
    // First byte at the wire: the round trip of the line plus little else, in round
    // trips like the pooled-connection test below. A first byte that also held a
    // connection's set-up through the line would be 2 RTT; 1.5 RTT leaves the server's
    // and the line's own work room on a busy 2-core machine.
    assert!(row.ttfb_ms.p50 >= rtt_ms, "ttfb p50 {} < RTT {rtt_ms}", row.ttfb_ms.p50);
    assert!(
        row.ttfb_ms.p50 < 1.5 * rtt_ms,
        "ttfb p50 {} far above RTT {rtt_ms}",
        row.ttfb_ms.p50
    );
    // The client's own work is measured, non-zero, and far below the round trip.
    assert!(b.client_prep_ms.p50 > 0.0, "{b:?}");
    assert!(b.client_prep_ms.p50 < 2.0, "{b:?}");
    assert!(b.http_pool_wait_ms.p50 < 1.0, "{b:?}");
    // The whole GET adds the client's work and the body to the first byte.
    assert!(row.ttlb_ms.p50 >= row.ttfb_ms.p50, "{row:?}");

    // Fewer connections than workers: the sweep's own slot wait takes the queueing
    // (about one round trip per GET ahead in the queue), the HTTP client's does not.
    let row = sweep(&client, &plan(bucket, 8, 2)).await;
    let b = row.breakdown.clone().expect("a breakdown");
    eprintln!(
        "8 workers, pool 2: sweep pool wait p50 {:.2} ms, http pool wait p50 {:.3} ms, ttfb p50 {:.2} ms",
        row.pool_wait_ms.p50, b.http_pool_wait_ms.p50, row.ttfb_ms.p50
    );
    assert!(row.pool_wait_ms.p50 >= rtt_ms, "{row:?}");
    assert!(b.http_pool_wait_ms.p50 < 1.0, "{b:?}");
    assert!(row.ttfb_ms.p50 < rtt_ms + 8.0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_a_connection_inside_the_http_client_is_not_first_byte() {
    let _one = common::one_at_a_time_async().await;
    // One connection, two GETs at once through the delay line: the second waits inside
    // the HTTP client for the first's connection (about one round trip). Its first byte
    // at the wire is still one round trip; from the call it is two.
    let bucket = "wait-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    let direct = s3sweep::sweep_client(crate::common::lab::client_options(server.endpoint()))
        .await
        .unwrap();
    seed_with(&direct, &seed_spec(bucket, "w/{i}", 4, 4096)).await;
    let upstream: SocketAddr = server.endpoint().trim_start_matches("http://").parse().unwrap();
    let line = delay_line(upstream, ONE_WAY).await;
    let client = s3sweep::sweep_client(crate::common::lab::client_options(format!("http://{line}")))
        .await
        .unwrap();
    let session = client.session_with(
        s3sweep::transport::TransportSettings {
            pool_connections: 1,
            ..Default::default()
        },
        s3sweep::s3::RequestSettings::maintenance(Duration::from_secs(10)),
    );
    let s3 = session.sdk(0);
    let limit = Duration::from_secs(10);
    let warm = get_one(s3, bucket, "w/0", limit).await;
    assert!(warm.result.is_ok() && warm.cold.connections == 1, "{:?}", warm.cold);
    let (a, b) = tokio::join!(get_one(s3, bucket, "w/1", limit), get_one(s3, bucket, "w/2", limit));
    let (first, second) = if a.headers_at <= b.headers_at { (a, b) } else { (b, a) };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ns_ms = |ns: u64| ns as f64 / 1e6;
    let rtt_ms = 2.0 * ms(ONE_WAY);
    eprintln!(
        "first: ttfb {:.2} ms, headers {:.2} ms, http pool wait {:.3} ms; second: ttfb {:.2} ms, headers {:.2} ms, \
         http pool wait {:.3} ms, prep {:.3} ms, connections {}",
        ms(first.ttfb),
        ms(first.headers_at),
        ns_ms(first.cold.pool_wait_ns),
        ms(second.ttfb),
        ms(second.headers_at),
        ns_ms(second.cold.pool_wait_ns),
        ns_ms(second.cold.prep_ns),
        second.cold.connections
    );
    assert!(first.result.is_ok() && second.result.is_ok());
    assert_eq!(second.cold.connections, 0, "the cap allows one connection");
    // Each first byte is one round trip at the wire, under 1.5 round trips: a first
    // byte timed from the call would be two for the second GET (a busy machine once
    // added 8.04 ms, so the margin is half a round trip, not 8 ms).
    for got in [&first, &second] {
        assert!(
            ms(got.ttfb) >= rtt_ms && ms(got.ttfb) < 1.5 * rtt_ms,
            "ttfb {:?}",
            got.ttfb
        );
    }
    assert!(ms(second.headers_at) >= 2.0 * rtt_ms, "{:?}", second.headers_at);
    assert!(ns_ms(second.cold.pool_wait_ns) >= rtt_ms - 2.0, "{:?}", second.cold);
    // The first took the idle connection: its wait is scheduling only, far under the
    // round trip the second waited (a busy machine's scheduling once took 1.95 ms, so
    // the bound is a quarter of the round trip, 7.5 ms, not 1 ms).
    assert!(ns_ms(first.cold.pool_wait_ns) < rtt_ms / 4.0, "{:?}", first.cold);
}

//! The lab's network, measured by a plain client (the SDK's GetObject in loops, over
//! many connections; for 256 connections, presigned GETs over raw keep-alive
//! connections, which cost the client far less) against servers on 127.0.0.1: the NIC's aggregate rate, its
//! one-time burst and its per-connection cap; S3's per-prefix request rate (503
//! SlowDown over one prefix, none when the same rate is spread); idle keep-alive
//! connections closed cleanly after the idle timeout and counted. Every phase is
//! bounded in time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::lab::nic::{Burst, NicConfig};
use crate::common::lab::{self, LatencyProfile, NetworkConfig, RunningServer};
use crate::common::LabBuilder;
use s3sweep::s3::RequestSettings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BUCKET: &str = "net-bucket";
const MIB: f64 = 1024.0 * 1024.0;

/// The lab with the bucket behind `network`.
fn lab(network: NetworkConfig) -> LabBuilder {
    LabBuilder::new().bucket(BUCKET, LatencyProfile::None).network(network)
}

fn nic(rate_mib_s: f64) -> NetworkConfig {
    NetworkConfig {
        nic: Some(NicConfig {
            rate_mib_s,
            burst: None,
            per_connection_mib_s: None,
        }),
        ..NetworkConfig::default()
    }
}

/// One attempt per request, so a 503 is seen as sent.
fn one_attempt() -> RequestSettings {
    RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(10),
        attempt_timeout: Duration::from_secs(20),
    }
}

/// An SDK client of `server` and the keys of `count` objects of `size` bytes under
/// each prefix, put straight into the store (no PUT leaves a pooled connection
/// behind).
async fn seeded(
    server: &RunningServer,
    prefixes: &[&str],
    count: usize,
    size: usize,
) -> (aws_sdk_s3::Client, Vec<String>) {
    let client = crate::common::client_of(server).await;
    let mut keys = Vec::new();
    // Prefixes interleaved: consecutive keys are in different prefixes.
    for i in 0..count {
        for p in prefixes {
            let key = format!("{p}/obj-{i}");
            server.store().insert(BUCKET, &key, bytes::Bytes::from(vec![7u8; size]));
            keys.push(key);
        }
    }
    (client.s3(one_attempt()), keys)
}

/// When each GET ended and its body's bytes.
type Arrivals = Vec<(Instant, usize)>;

/// One GET: when its response's headers arrived, and its whole body.
async fn get(s3: &aws_sdk_s3::Client, key: &str) -> (Instant, bytes::Bytes) {
    let out = s3
        .get_object()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .expect("the GET works");
    let headers_at = Instant::now();
    let body = out.body.collect().await.expect("the body arrives").into_bytes();
    (headers_at, body)
}

/// `tasks` loops of GETs over `keys` until `run_for` has passed; every GET must work.
async fn read_for(s3: &aws_sdk_s3::Client, keys: &[String], tasks: usize, run_for: Duration) -> (Instant, Arrivals) {
    let started = Instant::now();
    let keys = Arc::new(keys.to_vec());
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (s3, keys) = (s3.clone(), keys.clone());
        handles.push(tokio::spawn(async move {
            let mut arrivals = Vec::new();
            let mut i = t;
            while started.elapsed() < run_for {
                let key = &keys[i % keys.len()];
                i += tasks;
                let (_, body) = get(&s3, key).await;
                arrivals.push((Instant::now(), body.len()));
            }
            arrivals
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(tokio::time::timeout(run_for * 4, h).await.expect("bounded").unwrap());
    }
    all.sort_by_key(|a| a.0);
    (started, all)
}

/// MiB/s of `arrivals` from `from` to the last arrival.
fn rate(from: Instant, arrivals: &[(Instant, usize)]) -> f64 {
    let bytes: usize = arrivals.iter().map(|a| a.1).sum();
    let end = arrivals.last().expect("some GETs").0;
    bytes as f64 / MIB / (end - from).as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nic_holds_the_aggregate_rate_over_many_connections() {
    // 64 then 128 connections reading 1 MiB objects for 3 s. (256 connections reading
    // 512 KiB ones measured 38-39 MiB/s alone, but this SDK client cannot keep 40 MiB/s
    // of them while the other tests of this file run on a loaded 2-core machine: the
    // next test drives 256 with presigned GETs over raw connections.)
    for (tasks, size, secs) in [(64, 1 << 20, 3), (128, 1 << 20, 3)] {
        let server = lab(nic(40.0)).server().await;
        let (s3, keys) = seeded(&server, &["data"], 32, size).await;
        let (started, arrivals) = read_for(&s3, &keys, tasks, Duration::from_secs(secs)).await;
        let measured = rate(started, &arrivals);
        eprintln!(
            "NIC 40 MiB/s, {tasks} connections: {measured:.2} MiB/s over {} GETs of {size} bytes",
            arrivals.len()
        );
        assert!(
            (measured - 40.0).abs() <= 4.0,
            "{tasks} connections: {measured:.2} MiB/s, want 40 +- 10%"
        );
        let tally = server.network().tally().nic_tally.expect("a NIC");
        let bodies: usize = arrivals.iter().map(|a| a.1).sum();
        assert!(tally.bytes_shaped >= bodies as u64, "{tally:?}");
        assert!(tally.throttled_writes > 0, "{tally:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_runs_faster_for_its_size_then_the_rate_settles() {
    let mut config = nic(20.0);
    let burst_mib = 24.0;
    config.nic.as_mut().unwrap().burst = Some(Burst {
        size_mib: burst_mib,
        rate_mib_s: 100.0,
        refill_mib_s: 0.0,
    });
    let server = lab(config).server().await;
    let (s3, keys) = seeded(&server, &["data"], 16, 1 << 20).await;
    let tasks = 4;
    let (started, arrivals) = read_for(&s3, &keys, tasks, Duration::from_secs(3)).await;
    // The GET that took the total past the burst's size ends the burst phase; the
    // settled rate is measured from `tasks` GETs later, once every GET that was in
    // flight during the burst has ended.
    let mut total = 0usize;
    let split = arrivals
        .iter()
        .position(|a| {
            total += a.1;
            total as f64 >= burst_mib * MIB
        })
        .expect("more than the burst was read");
    let in_burst = rate(started, &arrivals[..=split]);
    let settled = split + tasks;
    let after = rate(arrivals[settled].0, &arrivals[settled + 1..]);
    eprintln!("burst {burst_mib} MiB at 100 MiB/s then 20 MiB/s: {in_burst:.1} MiB/s, then {after:.2} MiB/s");
    assert!(in_burst > 2.0 * 20.0, "the burst phase ran at {in_burst:.1} MiB/s");
    assert!(
        (after - 20.0).abs() <= 2.0,
        "after the burst {after:.2} MiB/s, want 20 +- 10%"
    );
    let tally = server.network().tally().nic_tally.expect("a NIC");
    assert_eq!(tally.burst_bytes, (burst_mib * MIB) as u64);
    assert_eq!(tally.burst_left_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_connection_cap_binds_one_connection() {
    let mut config = nic(200.0);
    config.nic.as_mut().unwrap().per_connection_mib_s = Some(10.0);
    let server = lab(config).server().await;
    // One request at a time, 4 MiB each (the SDK may move between two pooled
    // connections, but only one is ever busy). The rate is each body's: its bytes over
    // the time from the response's headers to its last byte. Counted from one GET's end
    // to the next, it also held each request's round trip and the client's work between
    // GETs, which measured 8.0-9.1 MiB/s on a slow evening for a cap that held.
    let (reader, keys) = seeded(&server, &["data"], 4, 4 << 20).await;
    let before = server.connections_accepted();
    let mut rates = Vec::new();
    for key in keys.iter().cycle().take(6) {
        let (headers_at, body) = get(&reader, key).await;
        rates.push(body.len() as f64 / MIB / headers_at.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let measured = rates[rates.len() / 2];
    eprintln!("cap 10 MiB/s per connection under 200 MiB/s: one connection's bodies read {rates:.2?} MiB/s");
    assert!(
        server.connections_accepted() - before <= 2,
        "the reads used one connection"
    );
    assert!(
        (measured - 10.0).abs() <= 1.0,
        "median body rate {measured:.2} MiB/s, want 10 +- 10%: {rates:.2?}"
    );
}

/// GETs at `per_s` a second for `run_for`, round robin over `keys`, each in its own
/// task so a slow answer never delays the pace; returns (ok, 503 SlowDown, seconds
/// from the first GET sent to the last answer).
async fn paced_gets(s3: &aws_sdk_s3::Client, keys: &[String], per_s: u32, run_for: Duration) -> (u64, u64, f64) {
    let mut tick = tokio::time::interval(Duration::from_secs(1) / per_s);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut handles = Vec::new();
    let mut i = 0;
    while started.elapsed() < run_for {
        tick.tick().await;
        let (s3, key) = (s3.clone(), keys[i % keys.len()].clone());
        i += 1;
        handles.push(tokio::spawn(async move {
            match s3.get_object().bucket(BUCKET).key(key).send().await {
                Ok(_) => (1, 0),
                Err(e) => {
                    let code = e
                        .as_service_error()
                        .and_then(|s| aws_sdk_s3::error::ProvideErrorMetadata::code(s))
                        .map(str::to_string);
                    assert_eq!(code.as_deref(), Some("SlowDown"), "only SlowDown is expected: {e:?}");
                    (0, 1)
                }
            }
        }));
    }
    let (mut ok, mut slow) = (0, 0);
    for h in handles {
        let (o, s) = tokio::time::timeout(Duration::from_secs(20), h)
            .await
            .expect("bounded")
            .unwrap();
        ok += o;
        slow += s;
    }
    (ok, slow, started.elapsed().as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_prefix_over_its_rate_gets_slow_down_and_spread_prefixes_do_not() {
    let server = lab(NetworkConfig {
        prefix_gets_per_s: Some(40.0),
        ..NetworkConfig::default()
    })
    .server()
    .await;
    let prefixes: Vec<String> = (0..17).map(|i| format!("p{i}")).collect();
    let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
    let (s3, keys) = seeded(&server, &prefixes, 2, 1024).await;
    // 200 GET/s offered for 2 s over one prefix whose rate is 40 (a loaded machine
    // sends fewer, still well over 40): the GETs let through follow the rate (plus
    // the bucket's tenth of a second), the rest are refused.
    let one: Vec<String> = keys.iter().filter(|k| k.starts_with("p0/")).cloned().collect();
    let (ok, slow, secs) = paced_gets(&s3, &one, 200, Duration::from_secs(2)).await;
    let tally = server.network().tally().prefix_rate.expect("a prefix rate");
    eprintln!(
        "one prefix, 200 GET/s offered (rate 40): {:.0} GET/s sent, {ok} ok, {slow} SlowDown in {secs:.2} s; tally {tally:?}",
        (ok + slow) as f64 / secs
    );
    assert!(slow >= (ok + slow) / 10, "{ok} ok, {slow} SlowDown");
    let most = 40.0 * secs * 1.1 + 4.0;
    assert!(
        ok as f64 <= most,
        "{ok} let through in {secs:.2} s, over the rate ({most:.0})"
    );
    assert_eq!(tally.throttled, slow, "every 503 is counted");
    // The same 200 GET/s spread over 16 other prefixes (12.5 a second each, so a
    // client stalled by a loaded machine may bunch its requests): none refused.
    let spread: Vec<String> = keys.iter().filter(|k| !k.starts_with("p0/")).cloned().collect();
    let (ok, slow, _) = paced_gets(&s3, &spread, 200, Duration::from_secs(2)).await;
    let after = server.network().tally().prefix_rate.expect("a prefix rate");
    eprintln!("16 prefixes at 200 GET/s in all: {ok} ok, {slow} SlowDown");
    assert_eq!(slow, 0, "spread over prefixes, nothing is throttled ({ok} ok)");
    assert_eq!(after.throttled, tally.throttled);
    // More than one prefix's rate (40 x 2 s) went through.
    assert!(ok >= 100, "{ok}");
}

/// A raw keep-alive connection that made one request and read its answer.
async fn used_connection(server: &RunningServer) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", lab::HELLO_PATH).as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    s
}

/// Waits up to `limit` for the server to close `s`: `Some(after)` on a clean end of
/// stream (an error such as a reset fails the test), `None` if still open.
async fn closed_within(s: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 64];
    match tokio::time::timeout(limit, s.read(&mut buf)).await {
        Ok(Ok(0)) => Some(started.elapsed()),
        Ok(Ok(n)) => panic!("{n} unexpected bytes"),
        Ok(Err(e)) => panic!("not a clean close: {e}"),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_cleanly_after_the_timeout_and_counted() {
    let server = lab(NetworkConfig {
        idle_timeout: Some(Duration::from_millis(1500)),
        ..NetworkConfig::default()
    })
    .server()
    .await;
    // Requests every 0.5 s keep a connection open past the timeout.
    let mut busy = used_connection(&server).await;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        busy.write_all(format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", lab::HELLO_PATH).as_bytes())
            .await
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), busy.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(
            String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
            "still served"
        );
    }
    assert_eq!(server.network().tally().idle_closes, 0);
    // Left idle, it is closed (a FIN, not a reset) after about 1.5 s, and counted.
    let after = closed_within(&mut busy, Duration::from_secs(6))
        .await
        .expect("closed by the server");
    eprintln!("idle connection closed {} ms after its last answer", after.as_millis());
    assert!(after >= Duration::from_millis(1300), "closed too early: {after:?}");
    assert_eq!(server.network().tally().idle_closes, 1);
    let doc: serde_json::Value = {
        let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            lab::NETWORK_PATH
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut text = String::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut text))
            .await
            .expect("bounded")
            .unwrap();
        serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("a body")).unwrap()
    };
    assert_eq!(doc["idle_closes"], 1);
    assert_eq!(doc["idle_timeout_s"], 1.5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_idle_timeout_the_connection_stays_open() {
    let server = lab(NetworkConfig {
        idle_timeout: None,
        ..NetworkConfig::default()
    })
    .server()
    .await;
    let mut s = used_connection(&server).await;
    assert_eq!(closed_within(&mut s, Duration::from_secs(3)).await, None);
    assert_eq!(server.network().tally().idle_closes, 0);
}

/// When one raw GET was sent, when its first byte and its last byte arrived.
#[derive(Debug, Clone, Copy)]
struct GetTimes {
    sent: Instant,
    first_byte: Instant,
    last_byte: Instant,
}

/// What [`raw_rate`] measured: body MiB/s over its window, the GETs completed, and
/// each GET's times.
struct RawRun {
    mib_per_s: f64,
    gets: u64,
    times: Vec<GetTimes>,
}

/// One GET over a raw keep-alive connection: the request, the head, then the body by
/// its Content-Length, in 64 KiB reads, each counted in `received` as it arrives.
async fn raw_get(
    s: &mut tokio::net::TcpStream,
    request: &[u8],
    buf: &mut [u8],
    received: &std::sync::atomic::AtomicU64,
) -> GetTimes {
    use std::sync::atomic::Ordering;
    let sent = Instant::now();
    s.write_all(request).await.unwrap();
    let mut head = Vec::new();
    let mut first_byte = None;
    let body_start = loop {
        let n = s.read(buf).await.unwrap();
        assert!(n > 0, "the lab closed a busy connection");
        first_byte.get_or_insert_with(Instant::now);
        head.extend_from_slice(&buf[..n]);
        if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let text = String::from_utf8_lossy(&head[..body_start]).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .expect("a Content-Length")
        .trim()
        .parse()
        .unwrap();
    let mut left = length - (head.len() - body_start);
    received.fetch_add((head.len() - body_start) as u64, Ordering::Relaxed);
    while left > 0 {
        let n = s.read(&mut buf[..left.min(64 * 1024)]).await.unwrap();
        assert!(n > 0, "the body was cut");
        left -= n;
        received.fetch_add(n as u64, Ordering::Relaxed);
    }
    GetTimes {
        sent,
        first_byte: first_byte.expect("a first byte"),
        last_byte: Instant::now(),
    }
}

/// A light reader for many connections: GETs presigned once by the SDK (no signing
/// per request), sent over raw keep-alive TCP connections ([`raw_get`]). Returns the
/// body bytes received from `from` to `until` (after the start) over that time,
/// MiB/s, the GETs completed and their times.
async fn raw_rate(server: &RunningServer, urls: &[String], conns: usize, from: Duration, until: Duration) -> RawRun {
    use std::sync::atomic::{AtomicU64, Ordering};
    let received = Arc::new(AtomicU64::new(0));
    let requests: Arc<Vec<Vec<u8>>> = Arc::new(
        urls.iter()
            .map(|u| {
                let rest = u.strip_prefix("http://").expect("the lab's plain HTTP");
                let (host, path) = rest.split_at(rest.find('/').unwrap());
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
            })
            .collect(),
    );
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..conns {
        let (addr, requests, received) = (server.addr(), requests.clone(), received.clone());
        tasks.spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut times = Vec::new();
            let mut i = c;
            while started.elapsed() < until {
                times.push(raw_get(&mut s, &requests[i % requests.len()], &mut buf, &received).await);
                i += conns;
            }
            times
        });
    }
    tokio::time::sleep_until((started + from).into()).await;
    let (b0, t0) = (received.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep_until((started + until).into()).await;
    let (b1, t1) = (received.load(Ordering::Relaxed), Instant::now());
    let mut times = Vec::new();
    let bounded = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(r) = tasks.join_next().await {
            times.extend(r.unwrap());
        }
    });
    bounded.await.expect("every connection ends its last GET within 30 s");
    RawRun {
        mib_per_s: (b1 - b0) as f64 / MIB / (t1 - t0).as_secs_f64(),
        gets: times.len() as u64,
        times,
    }
}

/// Presigned GET URLs of `keys`.
async fn presigned(s3: &aws_sdk_s3::Client, keys: &[String]) -> Vec<String> {
    let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(600)).unwrap();
    let mut urls = Vec::new();
    for key in keys {
        let p = s3
            .get_object()
            .bucket(BUCKET)
            .key(key)
            .presigned(config.clone())
            .await
            .unwrap();
        urls.push(p.uri().to_string());
    }
    urls
}

/// The p50 of `ms`, in ms.
fn p50_ms(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// A body takes the time its share of the link allows (issue 47). On 40 MiB/s with 32
/// connections each keeping a 46,080-byte GET in flight, a connection's share is
/// 1.25 MiB/s: 35.2 ms per body. The body (with its ~200 B head) leaves in three
/// frames of at most 16 KiB, one per turn of the shared queue; the first arrives with
/// the first byte, so its last byte comes two turns later: ideally 2/3 of the share,
/// 23.5 ms, less when some connections sit between GETs (shorter turns), more when
/// the machine wakes writers late. The test wants the p50 of last byte minus first
/// byte (GETs sent from the second second on) within 0.4x to 1.5x of the share
/// (14-53 ms): a NIC that lets a whole response through at once gives ~0.1-0.4 ms.
/// The aggregate still holds 40 MiB/s within 10%, and a first byte waits behind the
/// queue only (at most a turn, ~12 ms, plus the write of the request), not behind
/// whole responses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_takes_its_share_of_the_link_and_frames_interleave() {
    let _one = crate::common::one_at_a_time_async().await;
    let server = lab(nic(40.0)).server().await;
    let (s3, keys) = seeded(&server, &["data"], 256, 46_080).await;
    let urls = presigned(&s3, &keys).await;
    let run = raw_rate(&server, &urls, 32, Duration::from_secs(1), Duration::from_secs(3)).await;
    let steady: Vec<&GetTimes> = run
        .times
        .iter()
        .filter(|t| t.sent >= run.times.iter().map(|t| t.sent).min().unwrap() + Duration::from_secs(1))
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let body = p50_ms(steady.iter().map(|t| ms(t.last_byte - t.first_byte)).collect());
    let first = p50_ms(steady.iter().map(|t| ms(t.first_byte - t.sent)).collect());
    let share_ms = 46_080.0 / (40.0 * MIB / 32.0) * 1e3;
    let tally = server.network().tally().nic_tally.expect("a NIC");
    eprintln!(
        "NIC 40 MiB/s, 32 raw connections, 46,080 B bodies: {:.2} MiB/s ({} GETs, {} frames); body p50 {body:.1} ms against a share of {share_ms:.1} ms ({:.2}x); first byte p50 {first:.1} ms",
        run.mib_per_s,
        run.gets,
        tally.frames,
        body / share_ms
    );
    assert!(
        (run.mib_per_s - 40.0).abs() <= 4.0,
        "{:.2} MiB/s, want 40 +- 10%",
        run.mib_per_s
    );
    assert!(
        (0.4 * share_ms..=1.5 * share_ms).contains(&body),
        "body p50 {body:.2} ms, want 0.4-1.5x its share of the link, {share_ms:.1} ms"
    );
    assert!(
        first < share_ms,
        "first byte p50 {first:.1} ms: it waits behind whole bodies"
    );
}

/// 256 connections, which the SDK client of the test above cannot drive on a loaded
/// 2-core machine: presigned GETs over raw connections cost the client a read per
/// 64 KiB. The rate is measured from the second second on (every connection has its
/// GET in flight by then). Measured 39.93 MiB/s (1,340 GETs in 4 s) on the loaded
/// 2-core machine; a NIC at twice its rate measures about 80 and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nic_holds_the_aggregate_rate_over_256_connections() {
    let _one = crate::common::one_at_a_time_async().await;
    let server = lab(nic(40.0)).server().await;
    let (s3, keys) = seeded(&server, &["data"], 64, 128 << 10).await;
    let urls = presigned(&s3, &keys).await;
    let run = raw_rate(&server, &urls, 256, Duration::from_secs(1), Duration::from_secs(4)).await;
    let (measured, gets) = (run.mib_per_s, run.gets);
    eprintln!("NIC 40 MiB/s, 256 raw connections: {measured:.2} MiB/s ({gets} GETs of 128 KiB)");
    assert!(
        (measured - 40.0).abs() <= 4.0,
        "256 connections: {measured:.2} MiB/s, want 40 +- 10%"
    );
    let tally = server.network().tally().nic_tally.expect("a NIC");
    assert!(tally.throttled_writes > 0, "{tally:?}");
    assert_eq!(server.connections_accepted(), 256, "one connection each, kept alive");
}

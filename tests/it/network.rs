//! The client's side of the network (issue 22): bytes on the wire per row, the
//! bandwidth probe finding a ceiling the test sets with a rate-limiting TCP proxy of
//! its own between the client and the lab (not the lab's NIC), the `bandwidth` verdict
//! naming that ceiling and its source, a one-time burst seen by the probe, the
//! interleaved order keeping a burst off one worker count, `compare`'s wording on two
//! interleaved runs, and the pool retiring idle connections before a server that
//! closes idle ones would. Everything on 127.0.0.1, bounded in time and bytes.

use crate::common;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::lab::{self, LatencyProfile, RunningServer};
use s3sweep::analysis::analyse;
use s3sweep::analysis::compare::{compare, CompareOptions};
use s3sweep::engine::{self, Quiet};
use s3sweep::model::{CeilingSource, Figure, FigureName, ProbeObjectKind, SweepResult, Thresholds, Verdict};
use s3sweep::plan::Plan;
use s3sweep::render::{render_tables, Style};
use s3sweep::s3::seed::{object_body, seed_probe_object};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MIB: f64 = 1024.0 * 1024.0;
const BUCKET: &str = "net-bucket";

/// The rate of the proxy's server-to-client direction, shared by all its connections:
/// a pacer (each chunk takes its slot of time at the rate; idle time earns no credit)
/// with an optional one-time burst of `burst_bytes` at `burst_rate` first.
pub(crate) struct Pacer {
    rate: f64,
    burst_rate: f64,
    state: Mutex<(Instant, u64)>,
}

impl Pacer {
    pub(crate) fn new(mib_per_s: f64, burst: Option<(f64, f64)>) -> Arc<Pacer> {
        let (burst_mib, burst_rate) = burst.unwrap_or((0.0, mib_per_s));
        Arc::new(Pacer {
            rate: mib_per_s * MIB,
            burst_rate: burst_rate * MIB,
            state: Mutex::new((Instant::now(), (burst_mib * MIB) as u64)),
        })
    }

    /// When `n` bytes may have been sent (the caller sleeps until then).
    fn reserve(&self, n: usize) -> Instant {
        let mut s = self.state.lock().unwrap();
        let rate = if s.1 > 0 {
            s.1 = s.1.saturating_sub(n as u64);
            self.burst_rate
        } else {
            self.rate
        };
        let start = s.0.max(Instant::now());
        s.0 = start + Duration::from_secs_f64(n as f64 / rate);
        s.0
    }
}

/// What the proxy saw of its connections' ends.
#[derive(Default)]
pub(crate) struct ProxyTally {
    accepted: AtomicU64,
    /// Connections the proxy closed because they were idle too long.
    idle_closes: AtomicU64,
    /// Connections the client closed first.
    client_closes: AtomicU64,
}

/// A TCP proxy on 127.0.0.1:0 in front of `upstream`: server-to-client bytes paced by
/// `pacer` (when given), connections idle for `idle_close` closed by the proxy (when
/// given). Returns its endpoint and tally.
pub(crate) async fn proxy(
    upstream: std::net::SocketAddr,
    pacer: Option<Arc<Pacer>>,
    idle_close: Option<Duration>,
) -> (String, Arc<ProxyTally>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let tally = Arc::new(ProxyTally::default());
    let t = tally.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            t.accepted.fetch_add(1, Ordering::Relaxed);
            let (pacer, t) = (pacer.clone(), t.clone());
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                relay(client, server, pacer, idle_close, t).await;
            });
        }
    });
    (endpoint, tally)
}

/// Relays one connection until either side closes, or it is idle for `idle_close`.
async fn relay(
    client: TcpStream,
    server: TcpStream,
    pacer: Option<Arc<Pacer>>,
    idle_close: Option<Duration>,
    tally: Arc<ProxyTally>,
) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let last = Arc::new(Mutex::new(Instant::now()));
    let touch = |l: &Arc<Mutex<Instant>>| *l.lock().unwrap() = Instant::now();
    let up_last = last.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    touch(&up_last);
                    if sw.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let down_last = last.clone();
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match sr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if let Some(p) = &pacer {
                        tokio::time::sleep_until(p.reserve(n).into()).await;
                    }
                    touch(&down_last);
                    if cw.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let idle = async move {
        let Some(limit) = idle_close else {
            return std::future::pending::<()>().await;
        };
        loop {
            tokio::time::sleep(limit / 10).await;
            if last.lock().unwrap().elapsed() >= limit {
                return;
            }
        }
    };
    tokio::select! {
        _ = up => { tally.client_closes.fetch_add(1, Ordering::Relaxed); }
        _ = down => {}
        _ = idle => { tally.idle_closes.fetch_add(1, Ordering::Relaxed); }
    }
}

/// The lab with one bucket of `count` objects of 46,080 bytes, and the probe object of
/// `probe_mib` when asked for (written directly, not through the proxy).
async fn lab_with_objects(count: u32, probe_mib: Option<u64>) -> RunningServer {
    let (server, client) = common::LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::None)
        .seed(BUCKET, count, 46_080)
        .start()
        .await;
    if let Some(mib) = probe_mib {
        let s3 = client.s3(common::seed_settings());
        let written = seed_probe_object(&s3, client.endpoint(), BUCKET, "s3sweep/probe-object", mib << 20, "m")
            .await
            .unwrap();
        assert_eq!(written.map(|p| p.size_bytes), Some(mib << 20));
    }
    server
}

pub(crate) async fn sweep(endpoint: &str, request: &str) -> SweepResult {
    let plan = Plan::from_json(request).unwrap();
    let client = s3sweep::sweep_client(lab::client_options(endpoint)).await.unwrap();
    let mut result = engine::run(&client.session(&plan), &plan, &common::options(), Arc::new(Quiet)).await;
    analyse(&mut result, &Thresholds::default());
    result
}

/// The proxy's rate in the probe test, MiB/s.
const CEILING: f64 = 10.0;

fn within(x: f64, target: f64, share: f64) -> bool {
    (x - target).abs() <= share * target
}

/// The probe's ceiling is recorded in the network block and named by the verdicts
/// of the rows that reach it. The ceiling is 10 MiB/s, not the 40 of the issue: on the shared 2-core machine a
/// debug client under a load of 12 reached about 30 MiB/s through the proxy with no
/// limit, so 40 would measure the machine, not the probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_finds_the_proxys_ceiling_and_the_top_rows_are_bandwidth_bound() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(400, Some(32)).await;
    let (endpoint, _) = proxy(server.addr(), Some(Pacer::new(CEILING, None)), None).await;
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        sweep(
            &endpoint,
            r#"{"buckets": ["net-bucket"], "object_count": 400, "workers": [2, 16, 64],
                "pool_connections": 64, "probe_bandwidth": true}"#,
        ),
    )
    .await
    .expect("the run ends within 60 s");
    eprintln!("{}", render_tables(&result, Style::Terminal));
    let network = result.network.as_ref().unwrap();
    let probe = network.probe.as_ref().unwrap();
    assert_eq!(probe.kind, ProbeObjectKind::ProbeObject);
    assert!(
        within(probe.sustained_mib_per_s, CEILING, 0.10),
        "probe: {}",
        probe.explanation
    );
    let ceiling = network.ceiling.unwrap();
    assert_eq!(ceiling.source, CeilingSource::Probe);
    let top = result.results.iter().find(|r| r.workers == 64).unwrap();
    let d = top.diagnosis.as_ref().unwrap();
    assert_eq!(d.verdict, Verdict::Bandwidth, "{}", d.explanation);
    assert_eq!(
        d.figures[FigureName::BandwidthCeilingMibPerS],
        Figure::MibPerS(ceiling.mib_per_s)
    );
    assert!(d.explanation.contains("(source: probe"), "{}", d.explanation);
    // Through the proxy the loopback carries every body twice (lab to proxy, proxy to
    // client) plus the requests: at least twice the body, in packets of at most 64 KiB
    // (loopback's MTU). No upper bound: the counters are the machine's, and other
    // processes' loopback traffic during a row (other test runs) only adds to them.
    for row in &result.results {
        let w = row.wire.as_ref().expect("wire counters on Linux");
        let ratio = w.wire_to_body_ratio.unwrap();
        assert!(
            ratio >= 2.0,
            "workers {}: ratio {ratio}: {w:?} body {}",
            row.workers,
            row.bytes
        );
        assert!(w.rx_packets >= 2 * row.bytes / 65_536, "{w:?}");
    }
}

/// A local endpoint's wire counters are read from loopback (not the external
/// interfaces), and cover the bodies read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_bytes_cover_the_bodies_without_a_proxy() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(200, None).await;
    let result = sweep(
        &server.endpoint(),
        r#"{"buckets": ["net-bucket"], "object_count": 200, "workers": [8]}"#,
    )
    .await;
    let row = &result.results[0];
    let w = row.wire.as_ref().unwrap();
    assert_eq!(w.interfaces, ["lo"]);
    let ratio = w.wire_to_body_ratio.unwrap();
    // Requests and headers add a few percent; other processes' loopback traffic at the
    // same time can only add (no upper bound on a shared machine).
    assert!(ratio >= 1.0, "ratio {ratio}: {w:?}");
    assert!(w.rx_packets >= row.bytes / 65_536, "{w:?}");
}

/// Other traffic on the interface during a row (a second process downloading from
/// the lab over loopback) is flagged in that row: the counters are the interface's,
/// its note says so, and the table does not show their rate as the row's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_traffic_on_the_interface_is_flagged_in_the_row() {
    let _one = common::one_at_a_time_async().await;
    let server = common::LabBuilder::new()
        .buckets(&[
            (BUCKET, LatencyProfile::None),
            ("slow-bucket", LatencyProfile::Standard),
        ])
        .seed(BUCKET, 200, 46_080)
        .seed("slow-bucket", 60, 46_080)
        .server()
        .await;
    let endpoint = server.endpoint();
    let before = server.faults().tally().get_requests;
    // The second process: 16 workers reading the no-latency bucket over and over
    // (at most 20,000 GETs), killed when the row is done.
    let mut other = std::process::Command::new(common::BIN)
        .args(["run", "--endpoint", &endpoint, "--bucket", BUCKET, "--objects", "200"])
        .args(["--workers", "16", "--repetitions", "100", "--no-preflight", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.faults().tally().get_requests < before + 400 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the second process never read"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // One worker on ~18 ms latency: about a second of row while the other reads.
    let result = sweep(
        &endpoint,
        r#"{"buckets": ["slow-bucket"], "object_count": 60, "workers": [1], "warmup": false}"#,
    )
    .await;
    let _ = other.kill();
    let _ = other.wait();
    let row = &result.results[0];
    let w = row.wire.as_ref().expect("wire counters on Linux");
    assert!(w.other_traffic, "{w:?} for {} body bytes", row.bytes);
    let notes = &row.diagnosis.as_ref().unwrap().notes;
    assert!(notes.iter().any(|n| n.contains("not this row's rate")), "{notes:?}");
    // The table's wire cell does not present the interface's rate as the row's.
    let text = render_tables(&result, Style::Terminal);
    let cells = text
        .lines()
        .filter(|l| l.starts_with('│') && l.contains("other traffic"));
    assert_eq!(cells.count(), 1, "{text}");
}

/// The probe reports the one-time burst and the settled rate after it, and a burst
/// then a settled rate is not a lower bound even on a machine whose CPU is busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_reports_a_one_time_burst_and_the_rate_after_it() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(50, Some(32)).await;
    // 12 MiB at 30 MiB/s (0.4 s), then 6 MiB/s.
    let (endpoint, _) = proxy(server.addr(), Some(Pacer::new(6.0, Some((12.0, 30.0)))), None).await;
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        sweep(
            &endpoint,
            r#"{"buckets": ["net-bucket"], "object_count": 50, "workers": [8], "probe_bandwidth": true}"#,
        ),
    )
    .await
    .unwrap();
    let probe = result.network.unwrap().probe.unwrap();
    eprintln!("{}", probe.explanation);
    assert!(within(probe.sustained_mib_per_s, 6.0, 0.10), "{}", probe.explanation);
    let burst = probe.burst.unwrap_or_else(|| panic!("no burst: {}", probe.explanation));
    assert!(burst.mib_per_s > 12.0, "{burst:?}");
    assert!((6.0..=24.0).contains(&burst.mib), "{burst:?}");
    // A burst, then a settled rate: the path set the figure, whatever the (loaded)
    // machine's CPU did, so it is not a lower bound and the ceiling can flag rows.
    assert!(!probe.lower_bound, "{}", probe.explanation);
    assert!(
        !result.results[0].in_burst,
        "the probe spent the burst: the row ran after it"
    );
}

/// Medians of wall time per worker count, in the plan's order.
fn medians(result: &SweepResult) -> Vec<(u32, f64)> {
    result
        .request
        .workers
        .iter()
        .map(|&w| {
            let mut walls: Vec<f64> = result
                .results
                .iter()
                .filter(|r| r.workers == w)
                .map(|r| r.wall_ms)
                .collect();
            walls.sort_by(f64::total_cmp);
            (w, walls[walls.len() / 2])
        })
        .collect()
}

/// A burst that favours whatever runs first: 3 configurations' worth of bytes fast,
/// then 3 MiB/s (well below what the client reaches on a loaded machine, about 8). In
/// ascending order the first worker count gets all of it (its median
/// is far faster); interleaved, each worker count gets it in one round at most, and the
/// medians agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaving_keeps_a_burst_off_one_worker_count() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(60, None).await;
    let body_mib = 60.0 * 46_080.0 / MIB;
    let request = |order: &str| {
        format!(
            r#"{{"buckets": ["net-bucket"], "object_count": 60, "workers": [8, 16, 32], "pool_connections": 32,
                "repetitions": 3, "order": "{order}", "warmup": false}}"#
        )
    };
    let mut spreads = Vec::new();
    for order in ["ascending", "interleaved"] {
        let burst = Some((3.0 * body_mib, 40.0));
        let (endpoint, _) = proxy(server.addr(), Some(Pacer::new(3.0, burst)), None).await;
        let result = tokio::time::timeout(Duration::from_secs(60), sweep(&endpoint, &request(order)))
            .await
            .unwrap();
        let m = medians(&result);
        let fastest = m.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let slowest = m.iter().map(|x| x.1).fold(0.0, f64::max);
        eprintln!("{order}: medians {m:?}");
        spreads.push((order, slowest / fastest, m));
    }
    assert!(
        spreads[0].1 > 1.5,
        "ascending: the burst favours the first worker count: {spreads:?}"
    );
    assert!(
        spreads[1].1 < 1.25,
        "interleaved: no worker count favoured: {spreads:?}"
    );
}

/// Two interleaved runs compared: rows paired by round, corrected for the worker counts,
/// and with 3 rounds at 2 worker counts no test can reach 0.05, which the verdict says
/// with the rounds that would. The pairing needs the engine to set each row's
/// `round`: without it the test is `unpaired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_pairs_interleaved_runs_by_round_and_says_what_it_cannot_show() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(60, None).await;
    let request = r#"{"buckets": ["net-bucket"], "object_count": 60, "workers": [1, 8], "repetitions": 3, "seed": 5}"#;
    let a = sweep(&server.endpoint(), request).await;
    let b = sweep(&server.endpoint(), request).await;
    assert_eq!(a.network.as_ref().unwrap().order_seed, Some(5));
    let runs: Vec<(u32, Option<u32>, Option<u32>)> =
        a.results.iter().map(|r| (r.workers, r.round, r.run_index)).collect();
    let again: Vec<(u32, Option<u32>, Option<u32>)> =
        b.results.iter().map(|r| (r.workers, r.round, r.run_index)).collect();
    assert_eq!(runs, again, "the seeded order is the same in both runs");
    let c = compare(&a, &b, &CompareOptions::default()).unwrap();
    let text = s3sweep::render::compare::render_comparison(&c, Style::Terminal);
    eprintln!("{text}");
    assert!(text.contains("rows paired by round"), "{text}");
    assert!(
        text.contains("no difference shown (cannot reach p<0.05; 7 reps would)"),
        "{text}"
    );
    assert!(text.contains("Holm"), "{text}");
}

/// The proxy closes connections idle for 600 ms, as S3 does after about 20 s. A client
/// whose pool retires idle connections after 200 ms closes them first: after a pause
/// the next GET opens a new connection, no request fails, and the proxy closes no
/// idle connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_retires_idle_connections_before_the_server_would() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(20, None).await;
    let (endpoint, tally) = proxy(server.addr(), None, Some(Duration::from_millis(600))).await;
    let request = r#"{"buckets": ["net-bucket"], "object_count": 20, "workers": [2], "pool_connections": 2,
        "warmup": false, "pool_idle_timeout_ms": 200}"#;
    let plan = Plan::from_json(request).unwrap();
    let client = s3sweep::sweep_client(lab::client_options(&endpoint)).await.unwrap();
    // One session for both runs: its pool is what the pause tests.
    let session = client.session(&plan);
    let first = engine::run(&session, &plan, &common::options(), Arc::new(Quiet)).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let second = engine::run(&session, &plan, &common::options(), Arc::new(Quiet)).await;
    for r in first.results.iter().chain(&second.results) {
        assert_eq!(r.errors.total, 0, "{:?}", r.error_samples);
        assert_eq!(r.retries, 0);
    }
    assert!(
        second.results[0].connections_opened >= 1,
        "the pause retired the old connections"
    );
    assert_eq!(tally.idle_closes.load(Ordering::Relaxed), 0, "the client closed first");
    assert!(tally.client_closes.load(Ordering::Relaxed) >= 1);
}

/// The command line: `run --probe-bandwidth --order interleaved` through the 10 MiB/s
/// proxy prints a result whose probe found the ceiling, whose verdicts name it, and
/// whose rows carry rounds and wire counters: `--probe-bandwidth` reaches the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_probe_bandwidth_from_the_command_line() {
    let _one = common::one_at_a_time_async().await;
    let server = lab_with_objects(400, Some(32)).await;
    let (endpoint, _) = proxy(server.addr(), Some(Pacer::new(CEILING, None)), None).await;
    let args = [
        "run",
        "--endpoint",
        &endpoint,
        "--credentials",
        "lab",
        "--bucket",
        BUCKET,
        "--objects",
        "400",
        "--workers",
        "4,32",
        "--repetitions",
        "2",
        "--order",
        "interleaved",
        "--probe-bandwidth",
        "--quiet",
    ]
    .map(String::from);
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(common::BIN)
            .args(&args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run ends within 90 s")
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result = SweepResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let network = result.network.as_ref().unwrap();
    let probe = network.probe.as_ref().expect("the probe ran");
    assert!(
        within(probe.sustained_mib_per_s, CEILING, 0.10),
        "{}",
        probe.explanation
    );
    assert_eq!(network.ceiling.unwrap().source, CeilingSource::Probe);
    assert_eq!(network.order_seed, Some(1));
    let top = result.results.iter().filter(|r| r.workers == 32);
    for r in top {
        assert!(r.round.is_some() && r.wire.is_some(), "{r:?}");
        let d = r.diagnosis.as_ref().unwrap();
        assert_eq!(d.verdict, Verdict::Bandwidth, "{}", d.explanation);
    }
}

/// `seed --probe-object-mib` writes the probe object, records it in the manifest (key
/// in `written`, so `clean` removes it with the rest), and leaves an existing one
/// alone; `clean` proves it by its recorded size and ETag (an overwritten one is kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_writes_the_probe_object_and_clean_removes_it() {
    let _one = common::one_at_a_time_async().await;
    let (server, client) = common::LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::None)
        .start()
        .await;
    let dir = std::env::temp_dir().join(format!("s3sweep-net-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("m.json");
    let m = manifest.display().to_string();
    let endpoint = server.endpoint();
    let seed = [
        "seed",
        "--endpoint",
        &endpoint,
        "--credentials",
        "lab",
        "--bucket",
        BUCKET,
        "--count",
        "3",
        "--size",
        "100",
        "--probe-object-mib",
        "2",
        "--manifest",
        &m,
    ];
    tokio::task::block_in_place(|| succeeds(&seed));
    let text = std::fs::read_to_string(&manifest).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["written"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "s3sweep/probe-object"),
        "{text}"
    );
    assert_eq!(v["probe_object"]["size_bytes"], 2 << 20, "{text}");
    let s3 = client.s3(common::seed_settings());
    the_probe_object_is_there_whole_and_in_ranges(&s3, &v).await;
    // A second seed finds it there: left alone, recorded once, its record unchanged.
    tokio::task::block_in_place(|| succeeds(&seed));
    let again: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(again["probe_object"], v["probe_object"]);
    let probes = again["written"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| *k == "s3sweep/probe-object")
        .count();
    assert_eq!(probes, 1);
    let marker = v["owner_marker"].as_str().unwrap();
    clean_keeps_an_overwritten_probe_and_removes_its_own(&s3, &endpoint, &m, marker).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `s3sweep ARGS` succeeds.
fn succeeds(args: &[&str]) {
    let out = std::process::Command::new(common::BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The probe object `manifest` records: 2 MiB, read in a range as the probe reads it,
/// proven by the ETag its PUT returned.
async fn the_probe_object_is_there_whole_and_in_ranges(s3: &aws_sdk_s3::Client, manifest: &serde_json::Value) {
    let head = s3
        .head_object()
        .bucket(BUCKET)
        .key("s3sweep/probe-object")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(2 << 20));
    // A ranged GET of it, as the probe makes.
    let part = s3
        .get_object()
        .bucket(BUCKET)
        .key("s3sweep/probe-object")
        .range("bytes=1048576-1048675")
        .send()
        .await
        .unwrap();
    assert_eq!(part.content_range(), Some("bytes 1048576-1048675/2097152"));
    assert_eq!(part.body.collect().await.unwrap().into_bytes().len(), 100);
    // The manifest proves it by the ETag its PUT returned.
    assert_eq!(manifest["probe_object"]["etag"].as_str(), head.e_tag(), "{manifest}");
}

/// `clean` of manifest `m`: keeps the probe object once someone else overwrote it
/// (same size, other bytes; the bodies carry the manifest's owner `marker`, issue 35,
/// so only the ETag decides), and removes it once it holds its own bytes again.
async fn clean_keeps_an_overwritten_probe_and_removes_its_own(
    s3: &aws_sdk_s3::Client,
    endpoint: &str,
    m: &str,
    marker: &str,
) {
    let clean = ["clean", "--endpoint", endpoint, "--credentials", "lab", "--manifest", m];
    let put = |body: Vec<u8>| {
        s3.put_object()
            .bucket(BUCKET)
            .key("s3sweep/probe-object")
            .metadata("s3sweep-owner", marker)
            .body(body.into())
            .send()
    };
    let there = || s3.head_object().bucket(BUCKET).key("s3sweep/probe-object").send();
    put(vec![7u8; 2 << 20]).await.unwrap();
    tokio::task::block_in_place(|| succeeds(&clean));
    assert!(there().await.is_ok(), "clean removed an object someone else overwrote");
    // Its own bytes again (the recorded ETag): the next clean removes it.
    put(object_body(2 << 20).to_vec()).await.unwrap();
    tokio::task::block_in_place(|| succeeds(&clean));
    assert!(there().await.is_err(), "clean left the probe object it wrote");
}

//! What a row's timeline shows, against the lab: its wire bytes adding up to what the
//! server sent, a NIC with a one-time burst (the burst's size and rate and the
//! settled rate named; with a burst that refills while the link is idle, a later row
//! small enough to fit in it flagged `in_burst`, and not without the refill), the whole server paused for 2 s
//! in the middle of a configuration (a stall of about 2 s at the right offset), and a
//! per-prefix rate lowered mid-row (throttling began within one interval of it); the
//! request log (a line per attempt adding up to the row, its cap, and the straggler
//! share on the standard profile equal to the log's own arithmetic). Each
//! test starts its own server on 127.0.0.1:0 and runs one configuration of a few
//! seconds; the timeline's sums equal the row's counts. Timings to 100 ms: in the
//! Makefile's TIMED_TESTS (one test at a time); the burst's rates also hold
//! `one_at_a_time`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::lab::nic::{Burst, NicConfig};
use crate::common::lab::{self, LatencyProfile, NetworkConfig, RunningServer};
use crate::common::lab::{FaultKind, FaultSpec, FaultTiming};
use crate::common::LabBuilder;
use crate::common::{one_at_a_time_async, options, TempFile};
use s3sweep::analysis::analyse;
use s3sweep::engine::requests_log::RequestsLog;
use s3sweep::engine::{self, Observer, Quiet};
use s3sweep::model::{ConfigResult, FigureName, SweepResult, Thresholds, BASE_INTERVAL_MS};
use s3sweep::plan::Plan;
use s3sweep::s3::{SweepClient, SweepSession};

const BUCKET: &str = "timeline-bucket";
const SIZE: u64 = 64 * 1024;

/// The lab with the bucket behind `profile` and `network`, seeded with `objects`.
fn lab(network: NetworkConfig, profile: LatencyProfile, objects: u32) -> LabBuilder {
    LabBuilder::new()
        .bucket(BUCKET, profile)
        .network(network)
        .seed(BUCKET, objects, SIZE)
}

/// A share of the bucket's GETs answered 503 SlowDown (retried by the clients).
fn slow_down(server: &RunningServer, rate: f64) {
    server
        .faults()
        .set(
            BUCKET,
            vec![FaultSpec {
                kind: FaultKind::SlowDown,
                rate,
            }],
        )
        .unwrap();
}

fn plan(objects: u32, workers: u32, max_attempts: u32) -> Plan {
    Plan::from_json(&format!(
        r#"{{"buckets": ["{BUCKET}"], "object_count": {objects}, "workers": [{workers}],
            "pool_connections": {workers}, "warmup": false, "max_attempts": {max_attempts}}}"#
    ))
    .unwrap()
}

/// One analysed configuration, bounded in time; and when the sweep was called.
async fn sweep(client: &SweepClient, plan: &Plan) -> (SweepResult, Instant) {
    sweep_told(client, plan, Arc::new(Quiet)).await
}

/// [`sweep`] telling `observer`.
async fn sweep_told(client: &SweepClient, plan: &Plan, observer: Arc<dyn Observer>) -> (SweepResult, Instant) {
    sweep_in(&client.session(plan), plan, observer).await
}

/// [`sweep_told`] through `session`.
async fn sweep_in(session: &SweepSession, plan: &Plan, observer: Arc<dyn Observer>) -> (SweepResult, Instant) {
    let called = Instant::now();
    let mut result = tokio::time::timeout(
        Duration::from_secs(60),
        engine::run(session, plan, &options(), observer),
    )
    .await
    .expect("the sweep ends within 60 s");
    analyse(&mut result, &Thresholds::default());
    (result, called)
}

/// The timeline adds up to the row: GETs, bytes, failures.
fn sums_match(row: &ConfigResult) {
    let t = row.timeline.as_ref().expect("a timeline");
    assert_eq!(t.gets.iter().map(|&g| u64::from(g)).sum::<u64>(), row.ok);
    assert_eq!(t.body_bytes.iter().sum::<u64>(), row.bytes);
    assert_eq!(
        t.errors_total().iter().map(|&e| u64::from(e)).sum::<u64>(),
        row.errors.total
    );
}

fn figure(row: &ConfigResult, name: FigureName) -> f64 {
    let d = row.diagnosis.as_ref().expect("a diagnosis");
    d.figures
        .get(name)
        .unwrap_or_else(|| panic!("no {name}: {:?}", d.notes))
        .value()
}

fn note<'a>(row: &'a ConfigResult, start: &str) -> &'a str {
    let d = row.diagnosis.as_ref().expect("a diagnosis");
    d.notes
        .iter()
        .find(|n| n.starts_with(start))
        .unwrap_or_else(|| panic!("no {start:?} note: {:#?}", d.notes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_that_outlasts_the_nics_burst_names_the_burst_and_the_settled_rate() {
    let _one = one_at_a_time_async().await;
    // 10 MiB at 20 MiB/s (0.5 s), then 5 MiB/s: 280 objects of 64 KiB (17.5 MiB)
    // take 0.5 s in the burst and 1.5 s after it. Rates a loaded 2-core machine's
    // debug build reads at with room to spare (at 40 MiB/s the client itself held the
    // burst to 29 MiB/s once).
    let (burst_mib, burst_rate, settled) = (10.0, 20.0, 5.0);
    let network = NetworkConfig {
        nic: Some(NicConfig {
            rate_mib_s: settled,
            burst: Some(Burst {
                size_mib: burst_mib,
                rate_mib_s: burst_rate,
                refill_mib_s: 0.0,
            }),
            per_connection_mib_s: None,
        }),
        ..NetworkConfig::default()
    };
    let (server, client) = lab(network, LatencyProfile::None, 280).start().await;
    // Seeding sent bodies the other way (not shaped): the burst is nearly whole.
    assert!(server.network().tally().nic_tally.unwrap().burst_bytes < 1 << 20);
    let (result, _) = sweep(&client, &plan(280, 16, 3)).await;
    let row = &result.results[0];
    sums_match(row);
    eprintln!("timeline: {:?}", row.timeline.as_ref().map(|t| &t.body_bytes));
    let text = note(row, "burst then settled");
    eprintln!("{text}\ntimeline: {:?}", row.timeline.as_ref().map(|t| &t.body_bytes));
    let within = |got: f64, want: f64, tolerance: f64| (got - want).abs() <= tolerance * want;
    let got = figure(row, FigureName::BurstMib);
    assert!(
        within(got, burst_mib, 0.2),
        "burst {got} MiB, not {burst_mib} within 20%: {text}"
    );
    let got = figure(row, FigureName::BurstMibPerS);
    assert!(
        within(got, burst_rate, 0.2),
        "burst rate {got}, not {burst_rate} within 20%: {text}"
    );
    let got = figure(row, FigureName::SettledMibPerS);
    assert!(
        within(got, settled, 0.1),
        "settled {got}, not {settled} within 10%: {text}"
    );
    // Judged by its own settled rate, the row is bound by the network.
    let d = row.diagnosis.as_ref().unwrap();
    assert_eq!(d.verdict, s3sweep::model::Verdict::Bandwidth, "{}", d.explanation);
    assert!(d.explanation.contains("(source: timeline)"), "{}", d.explanation);
}

/// Two rows of one bucket under a NIC of 5 MiB/s with a burst of 10 MiB at 20 MiB/s
/// refilled at `refill_mib_s` while idle: 240 objects of 64 KiB (15 MiB: the burst,
/// then 1 s at the settled rate), 0.6 s idle, then 96 (6 MiB); both analysed as one
/// result.
async fn a_burst_then_an_idle_gap(refill_mib_s: f64) -> SweepResult {
    let network = NetworkConfig {
        nic: Some(NicConfig {
            rate_mib_s: 5.0,
            burst: Some(Burst {
                size_mib: 10.0,
                rate_mib_s: 20.0,
                refill_mib_s,
            }),
            per_connection_mib_s: None,
        }),
        ..NetworkConfig::default()
    };
    let (_server, client) = lab(network, LatencyProfile::None, 240).start().await;
    let (mut result, _) = sweep(&client, &plan(240, 16, 3)).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (second, _) = sweep(&client, &plan(96, 16, 3)).await;
    result.results.extend(second.results);
    analyse(&mut result, &Thresholds::default());
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_inside_a_refilled_burst_is_flagged_and_without_a_refill_it_is_not() {
    let _one = one_at_a_time_async().await;
    let refilled = a_burst_then_an_idle_gap(40.0).await;
    let once = a_burst_then_an_idle_gap(0.0).await;
    for (name, result) in [("refilled", &refilled), ("one-time", &once)] {
        let [first, second] = &result.results[..] else {
            panic!("two rows: {:?}", result.results)
        };
        let settled = figure(first, FigureName::SettledMibPerS);
        eprintln!(
            "{name}: first row settled at {settled:.2} MiB/s; the second {:.2} MiB/s ({:.2}x), in_burst {}",
            second.mib_per_s,
            second.mib_per_s / settled,
            second.in_burst
        );
        note(first, "burst then settled");
    }
    let second = &refilled.results[1];
    assert!(second.in_burst, "refilled: {:?}", second.diagnosis);
    let text = note(second, "inside a burst");
    assert!(text.contains("refilled while the link was idle"), "{text}");
    let second = &once.results[1];
    assert!(!second.in_burst, "one-time: {:?}", second.diagnosis);
    assert!(second
        .diagnosis
        .as_ref()
        .unwrap()
        .notes
        .iter()
        .all(|n| !n.starts_with("inside a burst")));
}

/// The timeline's wire bytes are what the server sent while the row ran (the lab's
/// NIC counts every byte it writes; a rate far above what the row reaches shapes
/// nothing), at least the body bytes, and never more than the OS counted on the
/// interface (loopback receives them, the requests and other traffic besides).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wire_bytes_per_interval_add_up_to_what_the_server_sent() {
    let network = NetworkConfig {
        nic: Some(NicConfig {
            rate_mib_s: 100_000.0,
            burst: None,
            per_connection_mib_s: None,
        }),
        ..NetworkConfig::default()
    };
    let (server, client) = lab(network, LatencyProfile::Express, 300).start().await;
    let sent_before = server.network().tally().nic_tally.unwrap().bytes_shaped;
    let (result, _) = sweep(&client, &plan(300, 8, 3)).await;
    let server_sent = server.network().tally().nic_tally.unwrap().bytes_shaped - sent_before;
    let row = &result.results[0];
    sums_match(row);
    let t = row.timeline.as_ref().unwrap();
    assert_eq!(t.wire_bytes.len(), t.len(), "{t:?}");
    let wire: u64 = t.wire_bytes.iter().sum();
    let rx = row.wire.as_ref().map(|w| w.rx_bytes);
    eprintln!(
        "wire {wire}, body {}, server sent {server_sent} (the listing too), interface received {rx:?}",
        row.bytes
    );
    assert!(wire >= row.bytes, "wire {wire} < body {}", row.bytes);
    // Headers: a few hundred bytes on each 64 KiB body.
    assert!(
        wire <= row.bytes + 1_000 * row.requests,
        "wire {wire}, body {}",
        row.bytes
    );
    // The server's count holds the row's responses and the listing before it.
    let share = wire as f64 / server_sent as f64;
    assert!(
        (0.97..=1.0).contains(&share),
        "wire {wire} of {server_sent} the server sent"
    );
    if let Some(rx) = rx {
        assert!(wire <= rx, "wire {wire} > the interface's {rx}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_paused_for_2_s_mid_row_is_a_stall_of_about_2_s_at_its_offset() {
    let (server, client) = lab(NetworkConfig::default(), LatencyProfile::Express, 600)
        .start()
        .await;
    let faults = server.faults().clone();
    let pause_in = Duration::from_millis(700);
    let pauser = tokio::spawn(async move {
        tokio::time::sleep(pause_in).await;
        faults.pause_all(Duration::from_secs(2));
        Instant::now()
    });
    // 4 workers at ~6 ms: ~650 GET/s; 600 GETs, most of them before the pause and
    // the rest after it.
    let (result, called) = sweep(&client, &plan(600, 4, 3)).await;
    let paused_at_ms = (pauser.await.unwrap() - called).as_secs_f64() * 1000.0;
    let row = &result.results[0];
    sums_match(row);
    let text = note(row, "stall");
    eprintln!("{text} (paused {paused_at_ms:.0} ms after the sweep was called)");
    let (stall_ms, at_ms) = (figure(row, FigureName::StallMs), figure(row, FigureName::StallAtMs));
    assert!((1800.0..=2200.0).contains(&stall_ms), "{stall_ms} ms: {text}");
    assert!(
        (at_ms - paused_at_ms).abs() <= 200.0,
        "stall at {at_ms} ms, paused at {paused_at_ms:.0} ms: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_rate_reached_mid_row_dates_the_throttling_within_one_interval() {
    let network = NetworkConfig {
        prefix_gets_per_s: Some(1_000_000.0),
        ..NetworkConfig::default()
    };
    let (server, client) = lab(network, LatencyProfile::Express, 400).start().await;
    let lowered_in = Duration::from_millis(500);
    let net = server.network().clone();
    let lowerer = tokio::spawn(async move {
        tokio::time::sleep(lowered_in).await;
        net.set_prefix_gets_per_s(100.0).unwrap();
        Instant::now()
    });
    // 4 workers at ~6 ms: ~650 GET/s for 0.5 s, then 100 a second let through and
    // the rest answered 503 (one attempt each: every 503 is a failed GET).
    let (result, called) = sweep(&client, &plan(400, 4, 1)).await;
    let lowered_at_ms = (lowerer.await.unwrap() - called).as_secs_f64() * 1000.0;
    let row = &result.results[0];
    sums_match(row);
    assert!(row.errors.throttled > 0, "{:?}", row.errors);
    let text = note(row, "throttling began");
    let at_ms = figure(row, FigureName::ThrottlingAtMs);
    // The interval the analysis dates it in (it reads a row in intervals of 100 ms or
    // more, whatever the width the row is drawn at).
    let interval = f64::from(row.timeline.as_ref().unwrap().coarsened(BASE_INTERVAL_MS).interval_ms);
    eprintln!("{text} (rate lowered {lowered_at_ms:.0} ms after the sweep was called)");
    assert!(
        (at_ms - lowered_at_ms).abs() <= interval,
        "throttling dated {at_ms} ms, the rate was lowered at {lowered_at_ms:.0} ms: {text}"
    );
}

/// The lines of a request log (gunzipped when its name ends in `.gz`).
fn log_lines(path: &std::path::Path) -> Vec<String> {
    use std::io::Read;
    let bytes = std::fs::read(path).unwrap();
    let mut text = String::new();
    if path.to_string_lossy().ends_with(".gz") {
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(bytes).unwrap();
    }
    text.lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_has_a_line_per_attempt_adding_up_to_the_row_and_keeps_its_cap() {
    let (server, client) = lab(NetworkConfig::default(), LatencyProfile::Express, 300)
        .start()
        .await;
    // A tenth of the GETs answered 503 SlowDown: retried (3 attempts at most), some
    // failing after their last.
    slow_down(&server, 0.1);
    let (csv, jsonl, capped) = (
        TempFile::new("timeline", "r.csv"),
        TempFile::new("timeline", "r.jsonl.gz"),
        TempFile::new("timeline", "c.csv"),
    );
    let csv_log = Arc::new(RequestsLog::create(&csv.0, 1 << 30, Arc::new(Quiet), false).unwrap());
    let json_log = Arc::new(RequestsLog::create(&jsonl.0, 1 << 30, csv_log.clone(), false).unwrap());
    let cap_log = Arc::new(RequestsLog::create(&capped.0, 4_000, json_log.clone(), false).unwrap());
    let sweep_plan = plan(300, 8, 3);
    let session = client.session(&sweep_plan);
    let (result, _) = sweep_in(&session, &sweep_plan, cap_log.clone()).await;
    let sent = session.transport().counters().requests_sent;
    let tallies: Vec<_> = [&csv_log, &json_log, &cap_log]
        .iter()
        .map(|l| l.finish().unwrap())
        .collect();
    let row = &result.results[0];
    assert!(row.retries > 0 && row.retries_by_cause.throttled > 0, "{row:?}");
    let lines = log_lines(&csv.0);
    assert_eq!(
        lines[0],
        "bucket,workers,repetition,get,attempt,attempts,sent_ms,first_byte_ms,last_byte_ms,bytes,connection,outcome,\
         memory_mb,object_size_bytes,s3_client,hedge,copy,fate"
    );
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    // One line per GET sent, retries as their own attempts.
    assert_eq!(rows.len() as u64, sent, "lines vs GETs sent");
    assert_eq!(rows.len() as u64, row.requests + row.retries);
    let ok: Vec<&Vec<&str>> = rows.iter().filter(|r| r[11] == "ok").collect();
    assert_eq!(ok.len() as u64, row.ok);
    assert_eq!(ok.iter().map(|r| r[9].parse::<u64>().unwrap()).sum::<u64>(), row.bytes);
    let count = |outcome: &str| rows.iter().filter(|r| r[11] == outcome).count() as u64;
    assert_eq!(count("throttled"), row.errors.throttled);
    assert_eq!(count("retried_throttled"), row.retries_by_cause.throttled);
    assert_eq!(tallies[0].lines_written, rows.len() as u64);
    // The same lines as JSON, gzipped.
    let json = log_lines(&jsonl.0);
    assert_eq!(json.len(), rows.len());
    let first: serde_json::Value = serde_json::from_str(&json[0]).unwrap();
    assert_eq!(first["bucket"], BUCKET);
    assert!(first["last_byte_ms"].is_number(), "{first}");
    // The cap: never more bytes than it, the rest counted as dropped.
    let capped_bytes = std::fs::metadata(&capped.0).unwrap().len();
    assert!(capped_bytes <= 4_000, "{capped_bytes}");
    assert_eq!(tallies[2].lines_written + tallies[2].lines_dropped, sent);
    assert!(tallies[2].lines_dropped > 0);
    assert!(cap_log
        .summary(&tallies[2])
        .contains("lines dropped at the cap of 4000 bytes"));
}

/// Each GET's line names the connection it went out on, with either client: as many
/// connections in the log as the row opened, and no connection carrying two GETs at
/// once (HTTP/1.1: a GET's answer starts after the last byte of the one before it on
/// its connection; its `sent_ms` may be earlier, while it waited for the connection).
/// The log's times are the client's stamps, not the wire's: a stamp the scheduler took
/// late is allowed 1 ms (0.5 ms was seen under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_get_names_its_connection_as_many_as_the_row_opened_none_shared_at_once() {
    let (server, _) = lab(NetworkConfig::default(), LatencyProfile::Express, 200)
        .start()
        .await;
    for name in ["sdk", "lean"] {
        // Its own client: every connection of the row is opened in the row.
        let client = s3sweep::sweep_client(lab::client_options(server.endpoint()))
            .await
            .unwrap();
        let file = TempFile::new("timeline", &format!("conn-{name}.csv"));
        let log = Arc::new(RequestsLog::create(&file.0, 1 << 30, Arc::new(Quiet), false).unwrap());
        let plan = Plan::from_json(&format!(
            r#"{{"buckets": ["{BUCKET}"], "object_count": 200, "workers": [8], "pool_connections": 8,
                "warmup": false, "clients": ["{name}"]}}"#
        ))
        .unwrap();
        let (result, _) = sweep_told(&client, &plan, log.clone()).await;
        log.finish().unwrap();
        let row = &result.results[0];
        // (connection, first byte, last byte) of each GET.
        let mut gets: Vec<(u64, f64, f64)> = log_lines(&file.0)[1..]
            .iter()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .map(|r| {
                (
                    r[10].parse().expect("a connection"),
                    r[7].parse().unwrap(),
                    r[8].parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(gets.len() as u64, row.requests, "{name}");
        let mut ids: Vec<u64> = gets.iter().map(|g| g.0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len() as u64,
            row.connections_opened,
            "{name}: connections in the log vs opened"
        );
        assert!(ids.len() > 1, "{name}: {ids:?}");
        gets.sort_by(|a, b| (a.0, a.1).partial_cmp(&(b.0, b.1)).unwrap());
        for pair in gets.windows(2).filter(|p| p[0].0 == p[1].0) {
            assert!(
                pair[1].1 >= pair[0].2 - 1.0,
                "{name}: two GETs at once on connection {}: {pair:?}",
                pair[0].0
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stragglers_share_on_the_standard_profile_is_the_request_logs_arithmetic() {
    let (server, client) = lab(NetworkConfig::default(), LatencyProfile::Standard, 400)
        .start()
        .await;
    // One GET in a hundred answers 1.5 s late: the stragglers decide the wall time.
    server.faults().set_timing(FaultTiming {
        late_first_byte_ms: 1_500,
        ..FaultTiming::default()
    });
    server
        .faults()
        .set(
            BUCKET,
            vec![FaultSpec {
                kind: FaultKind::LateFirstByte,
                rate: 0.01,
            }],
        )
        .unwrap();
    let file = TempFile::new("timeline", "s.csv");
    let log = Arc::new(RequestsLog::create(&file.0, 1 << 30, Arc::new(Quiet), false).unwrap());
    let (result, _) = sweep_told(&client, &plan(400, 16, 3), log.clone()).await;
    log.finish().unwrap();
    let row = &result.results[0];
    sums_match(row);
    let text = note(row, "stragglers");
    // The log's arithmetic: the GETs' last bytes in order; 99% had ended at the one of
    // rank ceil(0.99 n), 95% at ceil(0.95 n); the rest of the wall time is theirs.
    let mut ends: Vec<f64> = log_lines(&file.0)[1..]
        .iter()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[4] == r[5])
        .map(|r| r[8].parse().unwrap())
        .collect();
    ends.sort_by(f64::total_cmp);
    let share = |q: f64| {
        let rank = (q * ends.len() as f64).ceil() as usize;
        (row.wall_ms - ends[rank - 1]) / row.wall_ms
    };
    let (s1, s5) = (share(0.99), share(0.95));
    eprintln!("{text}; from the log: last 1% {s1:.4}, last 5% {s5:.4}");
    assert!(
        (figure(row, FigureName::StragglersLast1PctShare) - s1).abs() < 1e-3,
        "{s1}: {text}"
    );
    assert!(
        (figure(row, FigureName::StragglersLast5PctShare) - s5).abs() < 1e-3,
        "{s5}: {text}"
    );
    assert!(s1 > 0.3, "a 1.5 s straggler in a ~0.5 s sweep holds most of it: {text}");
}

/// A retried GET's attempts each have their own times and connection in the request
/// log, with either client: sent in order (each after the one before ended), each on
/// a connection, a 503 answer's first byte logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_gets_attempts_each_have_their_times_and_connection() {
    let (server, _) = lab(NetworkConfig::default(), LatencyProfile::Express, 60).start().await;
    // 30% of the answers 503 SlowDown: retried up to 3 attempts (18 GETs retried, on
    // average, of 60).
    slow_down(&server, 0.3);
    for name in ["sdk", "lean"] {
        let client = s3sweep::sweep_client(lab::client_options(server.endpoint()))
            .await
            .unwrap();
        let file = TempFile::new("timeline", &format!("attempts-{name}.csv"));
        let log = Arc::new(RequestsLog::create(&file.0, 1 << 30, Arc::new(Quiet), false).unwrap());
        let plan = Plan::from_json(&format!(
            r#"{{"buckets": ["{BUCKET}"], "object_count": 60, "workers": [12], "pool_connections": 12,
                "warmup": false, "max_attempts": 3, "clients": ["{name}"]}}"#
        ))
        .unwrap();
        let (result, _) = sweep_told(&client, &plan, log.clone()).await;
        log.finish().unwrap();
        let row = &result.results[0];
        assert!(row.retries > 5, "{name}: {} retries", row.retries);
        let lines = log_lines(&file.0);
        let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
        let mut retried = 0;
        for get in rows.chunk_by(|a, b| a[3] == b[3]).filter(|g| g.len() > 1) {
            retried += 1;
            let num = |r: &Vec<&str>, i: usize| -> f64 {
                r[i].parse()
                    .unwrap_or_else(|_| panic!("{name}: column {i} of {r:?} in {get:?}"))
            };
            for r in get {
                assert!(num(r, 10) >= 1.0, "{name}: no connection: {get:?}");
                assert!(num(r, 7) >= num(r, 6) && num(r, 8) >= num(r, 7), "{name}: {r:?}");
            }
            for pair in get.windows(2) {
                assert_eq!(pair[0][11], "retried_throttled", "{name}: {get:?}");
                assert!(
                    num(&pair[1], 6) >= num(&pair[0], 8) - 1.0,
                    "{name}: attempt {} sent before attempt {} ended: {get:?}",
                    pair[1][4],
                    pair[0][4]
                );
            }
        }
        assert_eq!(retried as u64, rows.iter().filter(|r| r[4] == "2").count() as u64);
        assert!(retried > 5, "{name}: {retried} retried GETs in the log");
        eprintln!("{name}: {retried} retried GETs, wall {:.0} ms", row.wall_ms);
    }
}

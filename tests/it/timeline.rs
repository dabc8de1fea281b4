//! What a row's timeline shows, against the lab: a NIC with a one-time burst (the
//! burst's size and rate and the settled rate named), the whole server paused for 2 s
//! in the middle of a configuration (a stall of about 2 s at the right offset), and a
//! per-prefix rate lowered mid-row (throttling began within one interval of it). Each
//! test starts its own server on 127.0.0.1:0 and runs one configuration of a few
//! seconds; the timeline's sums equal the row's counts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{one_at_a_time_async, options, seed_spec, seed_with};
use s3sweep::analysis::analyse;
use s3sweep::engine::{self, Quiet};
use s3sweep::lab::nic::{Burst, NicConfig};
use s3sweep::lab::{self, LatencyProfile, NetworkConfig, RunningServer, ServerConfig};
use s3sweep::model::{ConfigResult, FigureName, SweepResult, Thresholds};
use s3sweep::plan::Plan;
use s3sweep::s3::SweepClient;

const BUCKET: &str = "timeline-bucket";
const SIZE: u64 = 64 * 1024;

async fn seeded(network: NetworkConfig, profile: LatencyProfile, objects: u32) -> (RunningServer, SweepClient) {
    let server = lab::start(ServerConfig {
        buckets: vec![(BUCKET.to_string(), profile)],
        network,
        ..ServerConfig::default()
    })
    .await
    .expect("server starts on 127.0.0.1:0");
    let client = SweepClient::new(lab::client_options(server.endpoint())).await.unwrap();
    seed_with(&client, &seed_spec(BUCKET, "test/{i}/vectors", objects, SIZE)).await;
    (server, client)
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
    let called = Instant::now();
    let mut result = tokio::time::timeout(
        Duration::from_secs(60),
        engine::run(client, plan, &options(), Arc::new(Quiet)),
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
            }),
            per_connection_mib_s: None,
        }),
        ..NetworkConfig::default()
    };
    let (server, client) = seeded(network, LatencyProfile::None, 280).await;
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_paused_for_2_s_mid_row_is_a_stall_of_about_2_s_at_its_offset() {
    let (server, client) = seeded(NetworkConfig::default(), LatencyProfile::Express, 600).await;
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
    let (server, client) = seeded(network, LatencyProfile::Express, 400).await;
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
    let interval = f64::from(row.timeline.as_ref().unwrap().interval_ms);
    eprintln!("{text} (rate lowered {lowered_at_ms:.0} ms after the sweep was called)");
    assert!(
        (at_ms - lowered_at_ms).abs() <= interval,
        "throttling dated {at_ms} ms, the rate was lowered at {lowered_at_ms:.0} ms: {text}"
    );
}

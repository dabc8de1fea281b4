//! Idle keep-alive connections under the Lambda emulator (issue 22, "Idle"): the real
//! `s3sweep-lambda` under `cargo lambda watch` against `s3sweep serve` whose idle
//! timeout is shortened to 3 s (`--idle-timeout-s`, S3's is about 20 s), the
//! function's pool retiring idle connections after 1 s (the event's
//! `pool_idle_timeout_ms`; the product's default, 15 s, is below S3's 20 s in the same
//! way). Two cases count zero connection errors at one attempt per GET (the GETs the
//! lab received equal the GETs the rows read) and no connection the lab had to close:
//! - a second invocation of the same warm function after a pause longer than the
//!   lab's idle timeout;
//! - an interleaved sweep whose 1-worker configuration outlasts the lab's idle
//!   timeout while the 8-worker configurations' connections wait in the pool.
//!
//! Needs cargo-lambda as tests/it/lambda_emulator.rs does (`S3SWEEP_SKIP_EMULATOR=1`
//! skips it loudly). Everything it starts is killed at the end; every wait is bounded.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{cargo_lambda_for, Serve};
use crate::emulator::*;
use s3sweep::model::{Order, SweepResult};

/// The lab's idle timeout, s.
const LAB_IDLE_S: f64 = 3.0;
/// The function's pool idle timeout, ms (below the lab's, as 15 s is below S3's 20 s).
const POOL_IDLE_MS: u64 = 1_000;
const BUCKET: &str = "idle-bucket";

fn invoke(emulator: &mut Emulator, event: &Path, limit: Duration) -> SweepResult {
    let out = emulator.invoke(event, limit);
    assert!(
        out.status.success(),
        "invocation failed:\n{}\nemulator log:\n{}",
        error_text(&out),
        emulator.log()
    );
    SweepResult::from_json(&String::from_utf8_lossy(&out.stdout)).expect("a result document")
}

fn get_requests(lab: &Serve) -> u64 {
    lab.tally(crate::common::lab::FAULTS_PATH)["tally"]["get_requests"]
        .as_u64()
        .unwrap()
}

fn idle_closes(lab: &Serve) -> u64 {
    lab.tally(crate::common::lab::NETWORK_PATH)["idle_closes"]
        .as_u64()
        .unwrap()
}

/// Every row: no error of any kind, no retry; the lab received exactly the GETs the
/// sweep made (`lab_gets`: its count over the invocation), one attempt each.
fn one_attempt_per_get(what: &str, result: &SweepResult, lab_gets: u64) {
    let mut read = 0;
    for r in &result.results {
        let at = format!("{what}: {} workers, repetition {}", r.workers, r.repetition);
        assert_eq!(r.errors.connection, 0, "{at}: {:?}", r.error_samples);
        assert_eq!(r.errors.total, 0, "{at}: {:?}", r.error_samples);
        assert_eq!(r.retries, 0, "{at}: {:?}", r.retries_by_cause);
        assert_eq!(r.ok, r.requests, "{at}");
        read += r.requests;
    }
    // The preflight reads the first object of each bucket once before the sweep.
    let preflight = result.request.buckets.len() as u64;
    assert_eq!(
        lab_gets,
        preflight + read,
        "{what}: GETs the lab received vs the preflight's and the rows' GETs"
    );
}

/// The function retires its idle connections before the lab's 3 s idle timeout would
/// close them, after a pause and through an interleaved sweep: the lab closes none.
/// Counting the lab's closes, not the rows' errors, is the check: on loopback hyper
/// sees each FIN before reusing a connection, so a server-closed one costs no error;
/// what the product guarantees is that it never comes to that.
#[test]
fn idle_connections_cost_no_error_after_a_pause_or_a_long_configuration() {
    let test_start = Instant::now();
    let Some(cargo_lambda) = cargo_lambda_for("the idle emulator test") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("s3sweep-idle-emulator-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    const OBJECTS: u32 = 240;
    let lab = Serve::start(
        &[&format!("{BUCKET}=standard")],
        &["--idle-timeout-s", &LAB_IDLE_S.to_string()],
    );
    lab.seed(BUCKET, OBJECTS.into(), OBJECT_SIZE_BYTES, &tmp.join("manifest.json"));
    let mut emulator = Emulator::start(&cargo_lambda, &lab.endpoint, &tmp.join("watch.log"), None);

    // 1. The same warm function twice, a pause longer than the lab's idle timeout between.
    let event = tmp.join("pause.json");
    let pause_event = serde_json::json!({
        "buckets": [BUCKET], "object_count": 40, "workers": [4], "pool_connections": 4,
        "warmup": false, "pool_idle_timeout_ms": POOL_IDLE_MS
    });
    std::fs::write(&event, pause_event.to_string()).unwrap();
    let before = get_requests(&lab);
    let first = invoke(&mut emulator, &event, FIRST_INVOKE_LIMIT);
    let after_first = get_requests(&lab);
    one_attempt_per_get("first invocation", &first, after_first - before);
    std::thread::sleep(Duration::from_secs_f64(LAB_IDLE_S + 1.0));
    let second = invoke(&mut emulator, &event, INVOKE_LIMIT);
    let after_second = get_requests(&lab);
    one_attempt_per_get("warm invocation after the pause", &second, after_second - after_first);
    let lambda = second.environment.lambda.as_ref().unwrap();
    assert!(!lambda.cold_start, "the same instance, warm");
    assert!(
        second.results[0].connections_opened >= 1,
        "the pause retired the pooled connections: the warm invocation opened new ones"
    );
    let closes_after_pause = idle_closes(&lab);

    // 2. An interleaved sweep: 3 rounds of 1 and 8 workers; the 1-worker configuration
    // (240 GETs at about 17 ms each) outlasts the lab's idle timeout while the 8-worker
    // ones' connections wait in the pool.
    let sweep_event = tmp.join("interleaved.json");
    std::fs::write(
        &sweep_event,
        serde_json::json!({
            "buckets": [BUCKET], "object_count": OBJECTS, "workers": [1, 8], "pool_connections": 8,
            "repetitions": 3, "seed": 3, "warmup": false, "pool_idle_timeout_ms": POOL_IDLE_MS
        })
        .to_string(),
    )
    .unwrap();
    let before = get_requests(&lab);
    let sweep = invoke(&mut emulator, &sweep_event, INVOKE_LIMIT);
    let after = get_requests(&lab);
    one_attempt_per_get("interleaved sweep", &sweep, after - before);
    an_8_worker_pool_waits_out_a_long_1_worker_row(&sweep);
    let closes = idle_closes(&lab);
    eprintln!(
        "idle emulator test: lab idle closes after the pause {closes_after_pause}, after the sweep {closes}; \
         connections opened by the warm invocation {}; total {} ms",
        second.results[0].connections_opened,
        test_start.elapsed().as_millis()
    );
    assert_eq!(
        (closes_after_pause, closes),
        (0, 0),
        "the function retired its idle connections first: the lab closed none"
    );
    drop(emulator);
    let _ = lab.stop();
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The interleaved sweep's rows, in plan order with `run_index` saying when each ran:
/// each 1-worker row outlasts the lab's idle timeout, and an 8-worker row ran before
/// and after one (its pooled connections waited through it).
fn an_8_worker_pool_waits_out_a_long_1_worker_row(sweep: &SweepResult) {
    assert_eq!(sweep.network.as_ref().unwrap().order, Order::Interleaved);
    let mut ran: Vec<(u32, u32)> = sweep
        .results
        .iter()
        .map(|r| (r.run_index.expect("an interleaved row's run index"), r.workers))
        .collect();
    ran.sort_unstable();
    let order: Vec<u32> = ran.iter().map(|r| r.1).collect();
    eprintln!("interleaved order: {order:?}");
    let long = sweep.results.iter().filter(|r| r.workers == 1);
    for r in long {
        assert!(
            r.wall_ms > LAB_IDLE_S * 1000.0,
            "the 1-worker configuration outlasts the lab's idle timeout: {} ms",
            r.wall_ms
        );
    }
    let (first_8, last_8) = (
        order.iter().position(|&w| w == 8).unwrap(),
        order.iter().rposition(|&w| w == 8).unwrap(),
    );
    let follows_long = order[first_8..last_8].contains(&1);
    assert!(
        follows_long,
        "an 8-worker configuration runs before and after a 1-worker one: {order:?}"
    );
}

//! The request log of a run with several clients and hedge policies, against the lab:
//! every line names its configuration's axes (client, hedge policy; memory and object
//! size columns empty without them), so each (configuration, GET) has exactly one
//! final line and no two configurations' lines look alike; each hedge copy sent is a
//! line of its own with its fate (`won`, `lost`, `cancelled`), as many as the row's
//! `hedges_sent`, its `won` lines as many as `hedges_won`; the GETs' own lines still
//! add up to the row (requests and retries). CSV and JSON lines alike.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{client_of, options, seed_spec, seed_with};
use s3sweep::engine::requests_log::RequestsLog;
use s3sweep::engine::{self, Quiet};
use s3sweep::lab::{self, LatencyProfile, ServerConfig, Tail};
use s3sweep::plan::Plan;

const BUCKET: &str = "log-bucket";

/// A configuration as the log names it: workers, client, hedge policy.
type Config = (String, String, String);

/// A configuration's lines: the GETs' lines, its copies, those won, those cancelled.
type Tally = (u64, u64, u64, u64);

/// A file under the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp(name: &str) -> TempFile {
    TempFile(std::env::temp_dir().join(format!("s3sweep-reqlog-{}-{name}", std::process::id())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_names_its_axes_and_hedge_copies_are_lines_with_their_fate() {
    let server = lab::start(ServerConfig {
        buckets: vec![(BUCKET.to_string(), LatencyProfile::Standard)],
        ..ServerConfig::default()
    })
    .await
    .expect("server starts on 127.0.0.1:0");
    // One read in ten stalls 150 ms: a copy sent after 5 ms without a first byte wins
    // those, and loses (is cancelled) where the first answers soon after.
    server.profiles().set_tail(Some(Tail {
        rate: 0.1,
        stall_ms: 150,
    }));
    let client = client_of(&server).await;
    let objects = 80;
    seed_with(&client, &seed_spec(BUCKET, "test/{i}/vectors", objects, 1024)).await;
    let plan = Plan::from_value(serde_json::json!({
        "buckets": [BUCKET], "object_count": objects, "workers": [4, 8], "repetitions": 1,
        "clients": ["sdk", "lean"], "hedge": ["off", {"after_ms": 5}], "max_hedge_percent": 50
    }))
    .unwrap();
    let (csv, jsonl) = (temp("axes.csv"), temp("axes.jsonl"));
    let csv_log = Arc::new(RequestsLog::create(&csv.0, 1 << 30, Arc::new(Quiet), false).unwrap());
    let json_log = Arc::new(RequestsLog::create(&jsonl.0, 1 << 30, csv_log.clone(), false).unwrap());
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        engine::run(&client.session(&plan), &plan, &options(), json_log.clone()),
    )
    .await
    .expect("the sweep ends within 90 s");
    csv_log.finish().unwrap();
    json_log.finish().unwrap();
    assert_eq!(result.results.len(), 2 * 2 * 2, "workers x clients x policies");

    let text = std::fs::read_to_string(&csv.0).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}: {header:?}"))
    };
    let (workers, get, attempt, attempts, bytes, outcome) = (
        col("workers"),
        col("get"),
        col("attempt"),
        col("attempts"),
        col("bytes"),
        col("outcome"),
    );
    let (client_col, hedge, memory, size, copy, fate) = (
        col("s3_client"),
        col("hedge"),
        col("memory_mb"),
        col("object_size_bytes"),
        col("copy"),
        col("fate"),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        rows.iter().all(|r| r.len() == header.len()),
        "every line has every column"
    );
    assert!(
        rows.iter().all(|r| r[memory].is_empty() && r[size].is_empty()),
        "no memory or size axis"
    );
    // The configuration of a line: its workers, client and policy.
    let config =
        |r: &Vec<&str>| -> Config { (r[workers].to_string(), r[client_col].to_string(), r[hedge].to_string()) };
    let mut finals: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    let mut per_config: BTreeMap<Config, Tally> = BTreeMap::new();
    for r in &rows {
        let entry = per_config.entry(config(r)).or_default();
        match r[copy] {
            "get" => {
                entry.0 += 1;
                if r[attempt] == r[attempts] {
                    let (w, c, h) = config(r);
                    assert!(
                        finals.insert((w, c, h, r[get].to_string())),
                        "a GET's final line twice: {r:?}"
                    );
                }
            }
            "hedge" => {
                entry.1 += 1;
                entry.2 += u64::from(r[fate] == "won");
                entry.3 += u64::from(r[fate] == "cancelled");
                assert!(["won", "lost", "cancelled"].contains(&r[fate]), "{r:?}");
                if r[fate] == "cancelled" {
                    assert_eq!(r[outcome], "cancelled", "{r:?}");
                }
                if r[fate] == "won" {
                    assert!(
                        r[bytes] == "1024" && r[outcome] == "ok",
                        "a winning copy read the body: {r:?}"
                    );
                }
            }
            other => panic!("copy {other}: {r:?}"),
        }
    }
    assert_eq!(
        per_config.len(),
        result.results.len(),
        "one set of lines per configuration"
    );
    let (mut won, mut cancelled) = (0, 0);
    for row in &result.results {
        let key = (
            row.workers.to_string(),
            row.axes.s3_client.to_string(),
            row.axes.hedge.to_string(),
        );
        let (gets, copies, wins, drops) = per_config[&key];
        assert_eq!(
            gets,
            row.requests + row.retries,
            "{key:?}: the GETs' lines add up to the row"
        );
        let finals_here = finals
            .iter()
            .filter(|(w, c, h, _)| (w, c, h) == (&key.0, &key.1, &key.2))
            .count() as u64;
        assert_eq!(finals_here, row.requests, "{key:?}: one final line per GET");
        let hedging = row.hedging.unwrap_or_default();
        assert_eq!(copies, hedging.hedges_sent, "{key:?}: a line per copy sent");
        assert_eq!(wins, hedging.hedges_won, "{key:?}: the won copies");
        (won, cancelled) = (won + wins, cancelled + drops);
    }
    eprintln!("{} lines; copies won {won}, cancelled {cancelled}", rows.len());
    assert!(
        won > 0 && cancelled > 0,
        "both fates seen: won {won}, cancelled {cancelled}"
    );

    // The same lines as JSON, the axes typed.
    let json: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl.0)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(json.len(), rows.len());
    let copy_line = json.iter().find(|v| v["copy"] == "hedge").expect("a hedge line");
    assert_eq!(copy_line["hedge"], "5ms", "{copy_line}");
    assert!(
        copy_line["fate"].is_string() && copy_line["memory_mb"].is_null(),
        "{copy_line}"
    );
    let get_line = &json[0];
    assert!(
        get_line["fate"].is_null() && get_line["s3_client"].is_string(),
        "{get_line}"
    );
}

/// A memory sweep's step (`SweepOptions::memory_mb`): every row and every line of the
/// request log carries the memory size, as the local memory sweep runs each size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_steps_lines_carry_its_memory_size() {
    let server = lab::start(ServerConfig {
        buckets: vec![(BUCKET.to_string(), LatencyProfile::Express)],
        ..ServerConfig::default()
    })
    .await
    .expect("server starts on 127.0.0.1:0");
    let client = client_of(&server).await;
    seed_with(&client, &seed_spec(BUCKET, "test/{i}/vectors", 20, 256)).await;
    let plan = Plan::from_value(serde_json::json!({"buckets": [BUCKET], "object_count": 20, "workers": [2]})).unwrap();
    let csv = temp("memory.csv");
    let log = Arc::new(RequestsLog::create(&csv.0, 1 << 30, Arc::new(Quiet), false).unwrap());
    let options = s3sweep::engine::SweepOptions {
        memory_mb: Some(512),
        ..options()
    };
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        engine::run(&client.session(&plan), &plan, &options, log.clone()),
    )
    .await
    .expect("the sweep ends within 60 s");
    log.finish().unwrap();
    assert!(result.results.iter().all(|r| r.axes.memory_mb == Some(512)));
    let text = std::fs::read_to_string(&csv.0).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let memory = header.iter().position(|h| *h == "memory_mb").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r[memory] == "512"), "{text}");
}

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

use crate::common::lab::{FaultKind, FaultSpec, LatencyProfile, Tail};
use crate::common::LabBuilder;
use crate::common::{options, TempFile};
use s3sweep::engine::requests_log::RequestsLog;
use s3sweep::engine::{self, Quiet};
use s3sweep::plan::Plan;

const BUCKET: &str = "log-bucket";

/// A configuration as the log names it: workers, client, hedge policy.
type Config = (String, String, String);

/// A configuration's lines: the GETs' lines, its copies, those won, those cancelled.
type Tally = (u64, u64, u64, u64);

/// The GETs' final lines: configuration (workers, client, policy) and GET number.
type Finals = BTreeSet<(String, String, String, String)>;

fn temp(name: &str) -> TempFile {
    TempFile::new("reqlog", name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_names_its_axes_and_hedge_copies_are_lines_with_their_fate() {
    let objects = 80;
    // One read in ten stalls 150 ms: a copy sent after 5 ms without a first byte wins
    // those, and loses (is cancelled) where the first answers soon after.
    let (_server, client) = LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::Standard)
        .tail(Tail {
            rate: 0.1,
            stall_ms: 150,
        })
        .seed(BUCKET, objects, 1024)
        .start()
        .await;
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
    let lines = CsvLines::read(&text);
    let (finals, per_config) = lines.tally();
    assert_eq!(
        per_config.len(),
        result.results.len(),
        "one set of lines per configuration"
    );
    let (mut won, mut cancelled) = (0, 0);
    for row in &result.results {
        let (wins, drops) = the_lines_add_up_to_the_row(row, &finals, &per_config);
        (won, cancelled) = (won + wins, cancelled + drops);
    }
    eprintln!("{} lines; copies won {won}, cancelled {cancelled}", lines.rows.len());
    assert!(
        won > 0 && cancelled > 0,
        "both fates seen: won {won}, cancelled {cancelled}"
    );
    the_json_lines_are_the_same_typed(&jsonl, lines.rows.len());
}

/// A request log in CSV: its header and its lines split into fields.
struct CsvLines<'t> {
    header: Vec<&'t str>,
    rows: Vec<Vec<&'t str>>,
}

impl<'t> CsvLines<'t> {
    /// The lines of `text`; every one has every column, and none a memory or size axis.
    fn read(text: &'t str) -> CsvLines<'t> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let csv = CsvLines { header, rows };
        assert!(
            csv.rows.iter().all(|r| r.len() == csv.header.len()),
            "every line has every column"
        );
        let (memory, size) = (csv.col("memory_mb"), csv.col("object_size_bytes"));
        assert!(
            csv.rows.iter().all(|r| r[memory].is_empty() && r[size].is_empty()),
            "no memory or size axis"
        );
        csv
    }

    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}: {:?}", self.header))
    }

    /// The configuration of a line: its workers, client and policy.
    fn config(&self, r: &[&str]) -> Config {
        let field = |name: &str| r[self.col(name)].to_string();
        (field("workers"), field("s3_client"), field("hedge"))
    }

    /// Each GET's final line (once each: a second is a failure), and each
    /// configuration's [`Tally`]; each hedge copy's fate checked on its line.
    fn tally(&self) -> (Finals, BTreeMap<Config, Tally>) {
        let (get, attempt, attempts, copy) = (
            self.col("get"),
            self.col("attempt"),
            self.col("attempts"),
            self.col("copy"),
        );
        let mut finals = BTreeSet::new();
        let mut per_config: BTreeMap<Config, Tally> = BTreeMap::new();
        for r in &self.rows {
            let entry = per_config.entry(self.config(r)).or_default();
            match r[copy] {
                "get" => {
                    entry.0 += 1;
                    if r[attempt] == r[attempts] {
                        let (w, c, h) = self.config(r);
                        assert!(
                            finals.insert((w, c, h, r[get].to_string())),
                            "a GET's final line twice: {r:?}"
                        );
                    }
                }
                "hedge" => {
                    let fate = self.hedge_copys_fate(r);
                    entry.1 += 1;
                    entry.2 += u64::from(fate == "won");
                    entry.3 += u64::from(fate == "cancelled");
                }
                other => panic!("copy {other}: {r:?}"),
            }
        }
        (finals, per_config)
    }

    /// A hedge copy's line: its fate, which agrees with its outcome.
    fn hedge_copys_fate<'r>(&self, r: &[&'r str]) -> &'r str {
        let (fate, outcome, bytes) = (r[self.col("fate")], r[self.col("outcome")], r[self.col("bytes")]);
        assert!(["won", "lost", "cancelled"].contains(&fate), "{r:?}");
        if fate == "cancelled" {
            assert_eq!(outcome, "cancelled", "{r:?}");
        }
        if fate == "won" {
            assert!(
                bytes == "1024" && outcome == "ok",
                "a winning copy read the body: {r:?}"
            );
        }
        fate
    }
}

/// A row's lines: the GETs' lines add up to its requests and retries, one final line
/// per GET, a line per hedge copy sent and as many won as it says. Returns the copies
/// won and cancelled.
fn the_lines_add_up_to_the_row(
    row: &s3sweep::model::ConfigResult,
    finals: &Finals,
    per_config: &BTreeMap<Config, Tally>,
) -> (u64, u64) {
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
    (wins, drops)
}

/// The same `lines` lines as JSON, the axes typed.
fn the_json_lines_are_the_same_typed(jsonl: &TempFile, lines: usize) {
    let json: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl.0)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(json.len(), lines);
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
    let (_server, client) = LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::Express)
        .seed(BUCKET, 20, 256)
        .start()
        .await;
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

/// A hedge copy that lost: it failed (403, never retried) while its GET's first
/// request, stalled, went on and won. Its line says `lost` with the copy's own
/// failure, its GET's final line `ok`; the copies' lines add up to `hedges_sent`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_that_fails_while_its_get_goes_on_is_lost() {
    // After seeding: three GETs in ten are refused (a copy as much as a first request).
    let fault = FaultSpec {
        kind: FaultKind::AccessDenied,
        rate: 0.3,
    };
    let (_server, client) = LabBuilder::new()
        .bucket(BUCKET, LatencyProfile::Standard)
        .tail(Tail {
            rate: 0.3,
            stall_ms: 150,
        })
        .seed(BUCKET, 100, 256)
        .faults(BUCKET, vec![fault])
        .start()
        .await;
    let plan = Plan::from_value(serde_json::json!({
        "buckets": [BUCKET], "object_count": 100, "workers": [4], "clients": ["lean"],
        "hedge": [{"after_ms": 5}], "max_hedge_percent": 100
    }))
    .unwrap();
    let csv = temp("lost.csv");
    let log = Arc::new(RequestsLog::create(&csv.0, 1 << 30, Arc::new(Quiet), false).unwrap());
    let options = options();
    let session = client.session(&plan);
    let run = engine::run(&session, &plan, &options, log.clone());
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the sweep ends within 60 s");
    log.finish().unwrap();
    let text = std::fs::read_to_string(&csv.0).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (get, copy, outcome, fate) = (col("get"), col("copy"), col("outcome"), col("fate"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let copies: Vec<&Vec<&str>> = rows.iter().filter(|r| r[copy] == "hedge").collect();
    let hedging = result.results[0].hedging.unwrap_or_default();
    assert_eq!(copies.len() as u64, hedging.hedges_sent, "a line per copy sent");
    let lost: Vec<&&Vec<&str>> = copies.iter().filter(|r| r[fate] == "lost").collect();
    assert!(!lost.is_empty(), "no copy lost in {} copies: {text}", copies.len());
    assert!(
        lost.iter().all(|r| r[outcome] == "access_denied"),
        "a lost copy's own failure"
    );
    // The GET of a lost copy: its final line (its own, not the copy's) is its result.
    let final_of = |n: &str| rows.iter().rfind(|r| r[copy] == "get" && r[get] == n).unwrap()[outcome];
    assert!(
        lost.iter().any(|r| final_of(r[get]) == "ok"),
        "a copy lost while its GET went on to an ok: {:?}",
        lost.iter().map(|r| (r[get], final_of(r[get]))).collect::<Vec<_>>()
    );
}

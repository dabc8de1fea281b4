//! A session's lanes on the embedded server: work spawned on a lane with that lane's
//! reader runs on that lane's thread and reads through that lane's own connections,
//! each lane holding its share of `pool_connections`, so the whole pool never opens
//! more than the cap.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::lab::LatencyProfile;
use crate::common::{seed_spec, LabBuilder};
use s3sweep::engine::{self, Observer, Quiet};
use s3sweep::s3::get::get_one;
use s3sweep::s3::RequestSettings;
use s3sweep::transport::{Transport, TransportSettings};

const BUCKET: &str = "lanes-bucket";

/// The embedded server with the bucket.
fn lab() -> LabBuilder {
    LabBuilder::new().bucket(BUCKET, LatencyProfile::None)
}

/// `keys` read at once on lane `i` with `s3`: the thread they ended on, and whether each
/// worked.
async fn read_on(lanes: &Transport, i: usize, s3: &aws_sdk_s3::Client, keys: &[&str]) -> (String, Vec<bool>) {
    let (s3, keys): (aws_sdk_s3::Client, Vec<String>) = (s3.clone(), keys.iter().map(|k| k.to_string()).collect());
    let mut set = tokio::task::JoinSet::new();
    lanes.spawn(&mut set, i, async move {
        let limit = Duration::from_secs(10);
        let gets = keys.iter().map(|key| get_one(&s3, BUCKET, key, limit));
        let outcomes = futures_util::future::join_all(gets).await;
        let thread = std::thread::current().name().unwrap_or("").to_string();
        (thread, outcomes.iter().map(|o| o.result.is_ok()).collect())
    });
    set.join_next().await.unwrap().expect("the lane's task ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lane_reads_through_its_own_share_of_the_pool() {
    let (_server, client) = lab().seed_spec(seed_spec(BUCKET, "l/{i}", 6, 2048)).start().await;
    // Two lanes of one connection each.
    let session = client.session_with(
        TransportSettings {
            pool_connections: 2,
            lanes: 2,
            ..Default::default()
        },
        RequestSettings::maintenance(Duration::from_secs(10)),
    );
    let lanes = session.transport();
    assert!(lanes.start(), "the lanes' threads start");
    assert_eq!(lanes.lanes().len(), 2);
    let opened = || lanes.counters().connections_opened;

    // Two GETs at once on lane 0: its one connection serves both, one after the other.
    let (thread, ok) = read_on(lanes, 0, session.sdk(0), &["l/0", "l/1"]).await;
    assert_eq!((thread.as_str(), ok), ("s3sweep-lane-0", vec![true, true]));
    assert_eq!(opened(), 1, "lane 0's share of the pool is one connection");

    // Lane 1 does not take lane 0's idle connection: it opens its own.
    let (thread, ok) = read_on(lanes, 1, session.sdk(1), &["l/2", "l/3"]).await;
    assert_eq!((thread.as_str(), ok), ("s3sweep-lane-1", vec![true, true]));
    assert_eq!(opened(), 2, "lane 1 opened a connection of its own");

    // Each lane reuses its own: the pool stays at its cap of two.
    read_on(lanes, 0, session.sdk(0), &["l/4"]).await;
    read_on(lanes, 1, session.sdk(1), &["l/5"]).await;
    assert_eq!(opened(), 2);
    assert_eq!(lanes.connections_open(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lanes_never_outnumber_the_pooled_connections() {
    let (_server, client) = lab().start().await;
    let settings = TransportSettings {
        pool_connections: 1,
        lanes: 4,
        ..Default::default()
    };
    let session = client.session_with(settings, RequestSettings::maintenance(Duration::from_secs(10)));
    assert_eq!(session.transport().lanes().len(), 1);
}

/// The threads the GETs of each configuration ended on.
#[derive(Default)]
struct Threads(std::sync::Mutex<Vec<String>>);

impl Observer for Threads {
    fn request_done(&self, _ok: bool) {
        let name = std::thread::current().name().unwrap_or("").to_string();
        self.0.lock().unwrap().push(name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeps_drivers_run_one_per_lane() {
    let (_server, client) = lab().seed_spec(seed_spec(BUCKET, "d/{i}", 200, 1024)).start().await;
    let plan = s3sweep::plan::Plan::from_json(&format!(
        r#"{{"buckets": ["{BUCKET}"], "key_template": "d/{{i}}", "object_count": 200, "workers": [8],
            "pool_connections": 8}}"#
    ))
    .unwrap();
    let threads = Arc::new(Threads::default());
    let result = engine::run(&client.session(&plan), &plan, &Default::default(), threads.clone()).await;
    let row = &result.results[0];
    assert_eq!(row.ok, 200, "{row:?}");
    // One lane per usable core, at most the runtime's two threads.
    let lanes = result.environment.runtime_worker_threads as usize;
    assert_eq!(
        lanes,
        (result.environment.usable_cores.unwrap().ceil() as usize).clamp(1, 2)
    );
    let names = threads.0.lock().unwrap();
    let mut seen: Vec<&str> = names.iter().map(String::as_str).collect();
    seen.sort();
    seen.dedup();
    let expected: Vec<String> = (0..lanes).map(|i| format!("s3sweep-lane-{i}")).collect();
    assert_eq!(
        seen, expected,
        "every GET ends on a lane's thread, every lane drives some"
    );
    assert_eq!(
        row.client.as_ref().map(|c| c.runtime_worker_threads),
        Some(lanes as u32)
    );
    // The warm-up opened each lane's share of the pool, the timed phase none.
    assert_eq!(row.connections_opened, 0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bandwidth_probe_spreads_over_the_lanes_and_has_the_whole_pool() {
    let (_server, client) = lab().seed_spec(seed_spec(BUCKET, "p/{i}", 20, 64 * 1024)).start().await;
    let plan = s3sweep::plan::Plan::from_json(&format!(
        r#"{{"buckets": ["{BUCKET}"], "key_template": "p/{{i}}", "object_count": 20, "workers": [1],
            "pool_connections": 8, "probe_bandwidth": true}}"#
    ))
    .unwrap();
    // The session's own connections (the seeding's are the client's), the most open at
    // once over the sweep, sampled every 2 ms.
    let session = client.session(&plan);
    let (transport, done) = (session.transport().clone(), Arc::new(AtomicBool::new(false)));
    let sampled = done.clone();
    let most = tokio::spawn(async move {
        let mut most = 0;
        while !sampled.load(Ordering::Relaxed) {
            most = most.max(transport.connections_open());
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        most
    });
    let result = engine::run(&session, &plan, &Default::default(), Arc::new(Quiet)).await;
    done.store(true, Ordering::Relaxed);
    assert!(result.network.and_then(|n| n.probe).is_some());
    // The probe's 64 object streams had the whole pool open, each lane its share (not
    // lane 0's share alone, 4 of 8 with two lanes).
    assert_eq!(most.await.unwrap(), 8);
}

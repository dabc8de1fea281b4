//! Ownership that cannot be forged, deletes that cannot race (issue 35): `clean`
//! deletes only objects carrying the manifest's owner marker, each delete conditional
//! on the ETag just proven; a store that ignores `If-None-Match` or a delete's ETag
//! condition is found with a probe key and refused (by `seed`, by `clean`). The lab
//! on 127.0.0.1 is the store, except for the forgetful one, a small HTTP server of
//! this file that ignores every condition.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::lab::LatencyProfile;
use crate::common::{seed_settings, seed_spec, LabBuilder};
use bytes::Bytes;
use s3sweep::s3::clean;
use s3sweep::s3::manifest::{journal_path, Journal, OWNER_METADATA};
use s3sweep::s3::seed::{object_body, seed, seed_recorded, SeedError, SeedManifest};
use s3sweep::s3::SweepClient;

fn tmp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-owner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn lab_client(endpoint: &str) -> SweepClient {
    s3sweep::sweep_client(crate::common::lab::client_options(endpoint))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_knowing_a_users_key_size_and_etag_deletes_nothing() {
    let bucket = "forged-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    server
        .store()
        .insert(bucket, "user/1.db", Bytes::from_static(b"12345678"));
    let client = lab_client(&server.endpoint()).await;
    let s3 = client.s3(seed_settings());
    // Everything a reader of the bucket can learn: the key, its size, its ETag.
    let head = s3.head_object().bucket(bucket).key("user/1.db").send().await.unwrap();
    let mut forged = SeedManifest::empty(bucket, client.endpoint(), "user/{i}.db", 8);
    forged.owner_marker = Some("0123456789abcdef0123456789abcdef".into());
    forged.written = vec!["user/1.db".into()];
    forged
        .etags
        .insert("user/1.db".into(), head.e_tag().unwrap().to_string());

    let outcome = clean::clean(&s3, &forged, 1000).await;
    assert!(outcome.deleted.is_empty(), "{outcome:?}");
    assert!(server.store().contains(bucket, "user/1.db"));
    assert_eq!(outcome.kept.len(), 1, "{outcome:?}");
    assert!(outcome.kept[0].1.contains("owner marker"), "{outcome:?}");

    // A manifest without a marker proves nothing (issue 53): refused whole, even for
    // an object with seed's body (`forged_manifests` has the red team's forgeries).
    server.store().insert(bucket, "old/0", object_body(8));
    let mut old = SeedManifest::empty(bucket, client.endpoint(), "old/{i}", 8);
    old.written = vec!["old/0".into()];
    let outcome = clean::clean(&s3, &old, 1000).await;
    assert!(outcome.refused.is_some(), "{outcome:?}");
    assert!(outcome.deleted.is_empty(), "{outcome:?}");
    assert!(server.store().contains(bucket, "old/0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_killed_mid_put_never_deletes_a_users_identical_object() {
    let bucket = "killed-put-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    let client = lab_client(&server.endpoint()).await;
    let s3 = client.s3(seed_settings());
    let dir = tmp_dir("killed-put");
    let path = dir.join("m.json");
    let mut header = SeedManifest::empty(bucket, client.endpoint(), "k/{i}", 64);
    header.owner_marker = Some("feedfacefeedfacefeedfacefeedface".into());
    // Two PUTs went out, no answer recorded (the seed was killed): k/0's reached the
    // store; k/1's did not, and a teammate put the identical body there.
    let mut journal = Journal::create(&path, &header).unwrap();
    journal.intent("k/0").unwrap();
    journal.intent("k/1").unwrap();
    drop(journal);
    s3.put_object()
        .bucket(bucket)
        .key("k/0")
        .metadata(OWNER_METADATA, header.owner_marker.as_deref().unwrap())
        .body(object_body(64).into())
        .send()
        .await
        .unwrap();
    server.store().insert(bucket, "k/1", object_body(64));

    let manifest = clean::load_manifest(&path).unwrap();
    assert!(manifest.etags.is_empty(), "no answer was recorded");
    let outcome = clean::clean(&s3, &manifest, 1000).await;
    assert_eq!(outcome.deleted, vec!["k/0".to_string()], "{outcome:?}");
    assert_eq!(server.store().keys(bucket).unwrap(), vec!["k/1".to_string()]);
    assert!(outcome.kept[0].1.contains("owner marker"), "{outcome:?}");
    std::fs::remove_file(journal_path(&path)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Overwrites `keys` (in a shuffled order, 16 at a time) with bodies of `size` that
/// are not seed's until `stop`; returns the keys written and their bodies.
async fn overwrite_until(
    s3: aws_sdk_s3::Client,
    bucket: &'static str,
    mut keys: Vec<String>,
    size: usize,
    stop: Arc<tokio::sync::Notify>,
) -> HashMap<String, Bytes> {
    use futures_util::StreamExt;
    use rand::seq::SliceRandom;
    keys.shuffle(&mut rand::rng());
    let written = Arc::new(Mutex::new(HashMap::new()));
    let writes = futures_util::stream::iter(keys.into_iter().enumerate()).for_each_concurrent(16, |(n, key)| {
        let (s3, written) = (s3.clone(), written.clone());
        async move {
            let body = Bytes::from(format!("{n:0size$}").into_bytes());
            if s3
                .put_object()
                .bucket(bucket)
                .key(&key)
                .body(body.clone().into())
                .send()
                .await
                .is_ok()
            {
                written.lock().unwrap().insert(key, body);
            }
        }
    });
    tokio::select! {
        _ = writes => {}
        _ = stop.notified() => {}
    }
    // Writes still in flight when stopped were dropped: their answers never came, so
    // they are not counted as written (the store may hold them or not).
    let out = written.lock().unwrap().clone();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_overwriting_seeded_keys_while_clean_runs_keeps_every_object_they_wrote() {
    const BUCKET: &str = "race-clean-bucket";
    let server = LabBuilder::new().bucket(BUCKET, LatencyProfile::Express).server().await;
    let client = lab_client(&server.endpoint()).await;
    let s3 = client.s3(seed_settings());
    let spec = s3sweep::s3::seed::SeedSpec {
        concurrency: 64,
        ..seed_spec(BUCKET, "r/{i}", 3000, 32)
    };
    let manifest = seed(&s3, client.endpoint(), &spec).await.unwrap();
    assert_eq!(manifest.written.len(), 3000);
    let stop = Arc::new(tokio::sync::Notify::new());
    let user = tokio::spawn(overwrite_until(
        s3.clone(),
        BUCKET,
        manifest.written.clone(),
        32,
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let outcome = clean::clean(&s3, &manifest, 1000).await;
    stop.notify_one();
    let written = user.await.unwrap();
    assert!(outcome.failed.is_empty() && outcome.refused.is_none(), "{outcome:?}");
    let mut lost = Vec::new();
    for (key, body) in &written {
        let got = s3.get_object().bucket(BUCKET).key(key).send().await;
        let got = match got {
            Ok(o) => o.body.collect().await.unwrap().into_bytes(),
            Err(_) => Bytes::new(),
        };
        if got != *body {
            lost.push(key.clone());
        }
    }
    let changed: BTreeSet<&String> = outcome.changed.iter().map(|(k, _)| k).collect();
    eprintln!(
        "user wrote {} keys while clean ran; clean deleted {}, kept {} (seen changed by the HEAD), {} changed since proven; {} of the user's objects lost",
        written.len(),
        outcome.deleted.len(),
        outcome.kept.len(),
        changed.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "{} user objects deleted, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    assert!(
        !changed.is_empty(),
        "no write landed between a HEAD and its delete: the race was not exercised"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_ignoring_if_none_match_makes_seed_refuse_before_writing_anything() {
    let store = forgetful::start().await;
    let client = lab_client(&store.endpoint).await;
    let s3 = client.s3(seed_settings());
    let dir = tmp_dir("forgetful-seed");
    let path = dir.join("m.json");
    let err = seed_recorded(&s3, client.endpoint(), &seed_spec("b", "data/{i}", 20, 10), &path)
        .await
        .unwrap_err();
    assert!(matches!(err, SeedError::Store(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("overwrote an existing key") && text.contains("refuses"),
        "{text}"
    );
    let puts = store.puts.lock().unwrap().clone();
    assert!(
        puts.iter().all(|k| k.starts_with("s3sweep-probe-put-")),
        "only the probe was written: {puts:?}"
    );
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert!(store.objects.lock().unwrap().is_empty(), "the probe was removed");
    assert!(!path.exists(), "no manifest for a seed that wrote nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_ignoring_delete_conditions_makes_clean_refuse_unless_told() {
    let store = forgetful::start().await;
    let client = lab_client(&store.endpoint).await;
    let s3 = client.s3(seed_settings());
    let mut m = SeedManifest::empty("b", client.endpoint(), "d/{i}", 10);
    m.owner_marker = Some("00112233445566778899aabbccddeeff".into());
    m.written = vec!["d/0".into()];
    store.insert("d/0", object_body(10), m.owner_marker.as_deref().unwrap());

    let outcome = clean::clean(&s3, &m, 1000).await;
    let why = outcome.refused.clone().unwrap_or_default();
    assert!(why.contains("ignores conditional deletes"), "{outcome:?}");
    assert!(outcome.deleted.is_empty());
    assert!(store.objects.lock().unwrap().contains_key("d/0"));

    let told = clean::CleanOptions {
        batch: 1000,
        unconditional_deletes: true,
    };
    let outcome = clean::clean_with(&s3, &m, &told).await;
    assert_eq!(outcome.deleted, vec!["d/0".to_string()], "{outcome:?}");
    assert!(store.objects.lock().unwrap().is_empty());
}

/// A store that answers PUT, HEAD, GET and DeleteObjects and ignores every condition
/// (no auth either): what `seed` and `clean` must refuse.
mod forgetful {
    use std::collections::HashMap;
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::{Request, Response};

    type Objects = Arc<Mutex<HashMap<String, (Bytes, String)>>>;

    pub(super) struct Store {
        pub endpoint: String,
        pub objects: Objects,
        /// Every key a PUT wrote, in order.
        pub puts: Arc<Mutex<Vec<String>>>,
    }

    impl Store {
        pub(super) fn insert(&self, key: &str, body: Bytes, owner: &str) {
            self.objects
                .lock()
                .unwrap()
                .insert(key.to_string(), (body, owner.to_string()));
        }
    }

    fn etag(body: &[u8]) -> String {
        use md5::Digest as _;
        let d = md5::Md5::digest(body);
        format!("\"{}\"", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    pub(super) async fn start() -> Store {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let objects: Objects = Arc::default();
        let puts: Arc<Mutex<Vec<String>>> = Arc::default();
        let (o, p) = (objects.clone(), puts.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (o, p) = (o.clone(), p.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| answer(req, o.clone(), p.clone()));
                    let io = hyper_util::rt::TokioIo::new(tcp);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Store {
            endpoint,
            objects,
            puts,
        }
    }

    async fn answer(
        req: Request<hyper::body::Incoming>,
        objects: Objects,
        puts: Arc<Mutex<Vec<String>>>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let delete = req.uri().query().is_some_and(|q| q.contains("delete"));
        let owner = req
            .headers()
            .get("x-amz-meta-s3sweep-owner")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        // Path style: /BUCKET/KEY.
        let key = path.splitn(3, '/').nth(2).unwrap_or("").to_string();
        let mut map = objects.lock().unwrap();
        let reply = |status: u16, body: Bytes| Response::builder().status(status).body(Full::new(body)).unwrap();
        Ok(match method.as_str() {
            "PUT" => {
                let tag = etag(&body);
                puts.lock().unwrap().push(key.clone());
                map.insert(key, (body, owner));
                Response::builder()
                    .header("etag", tag)
                    .body(Full::new(Bytes::new()))
                    .unwrap()
            }
            "HEAD" | "GET" => match map.get(&key) {
                Some((data, owner)) => Response::builder()
                    .header("etag", etag(data))
                    .header("content-length", data.len())
                    .header("x-amz-meta-s3sweep-owner", owner.as_str())
                    .body(Full::new(if method == "GET" { data.clone() } else { Bytes::new() }))
                    .unwrap(),
                None => reply(404, Bytes::new()),
            },
            "POST" if delete => {
                let text = String::from_utf8_lossy(&body);
                let mut deleted = String::new();
                for part in text.split("<Key>").skip(1) {
                    let k = part.split("</Key>").next().unwrap_or("");
                    map.remove(k);
                    deleted.push_str(&format!("<Deleted><Key>{k}</Key></Deleted>"));
                }
                let xml = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{deleted}</DeleteResult>");
                reply(200, Bytes::from(xml))
            }
            _ => reply(501, Bytes::new()),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_writer_leaves_an_object_it_did_not_write_alone() {
    use s3sweep::plan::ResultsUri;
    use s3sweep::s3::results::ResultsWriter;
    let bucket = "results-owner-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    server
        .store()
        .insert(bucket, "runs/taken.json", Bytes::from_static(b"the user's"));
    let client = lab_client(&server.endpoint()).await;
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/demo.json");
    let result: s3sweep::model::SweepResult = serde_json::from_str(&std::fs::read_to_string(demo).unwrap()).unwrap();
    let destination = ResultsUri::parse("s3://results-owner-bucket/runs").unwrap();
    let limit = Duration::from_secs(10);

    let taken = ResultsWriter::new(&client, &destination, "taken");
    let err = taken.put(&result, limit).await.unwrap_err();
    assert!(matches!(err, s3sweep::s3::results::ResultsError::Taken { .. }), "{err}");
    assert!(err.to_string().contains("there already"), "{err}");
    let s3 = client.s3(seed_settings());
    let got = s3
        .get_object()
        .bucket(bucket)
        .key("runs/taken.json")
        .send()
        .await
        .unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"the user's");

    // A fresh key: written, then replaced by the same writer (its own copy).
    let fresh = ResultsWriter::new(&client, &destination, "fresh");
    fresh.put(&result, limit).await.unwrap();
    fresh.put(&result, limit).await.unwrap();
    assert!(server.store().contains(bucket, "runs/fresh.json"));
}

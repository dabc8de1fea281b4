//! No proof without the marker (issue 53): `clean` refuses, whole, a manifest that
//! carries no owner marker, whatever else it names: schema v2, v3 with the
//! `owner_marker` field left out, a v2 manifest whose `probe_object` names a user's
//! key with its size and ETag. A marked manifest naming the user's key as its probe
//! object keeps it (no marker on the object). The lab on 127.0.0.1 is the store and
//! `s3sweep clean` the binary; the user's object is there afterwards every time.

use crate::common::lab::LatencyProfile;
use bytes::Bytes;
use s3sweep::s3::clean;
use serde_json::json;

use crate::common::run_within;
use crate::common::{client_of, seed_settings, LabBuilder, BIN};

const BUCKET: &str = "forged-manifests";
const USER_KEY: &str = "important/db.sqlite";
/// A user's key a template makes (`important/{i}.db`).
const NUMBERED_KEY: &str = "important/1.db";

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-forged-manifests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The three forgeries the red team wrote (issue 53), each naming a user's key with
/// its real size and ETag: the key its template makes, or its probe object.
fn forgeries(endpoint: &str, size: u64, etag: &str) -> Vec<(&'static str, serde_json::Value)> {
    let base = json!({
        "bucket": BUCKET,
        "endpoint": endpoint,
        "key_template": "important/{i}.db",
        "object_size_bytes": size,
        "written": [NUMBERED_KEY],
        "etags": {NUMBERED_KEY: etag},
        "skipped_existing": 0,
    });
    let with = |schema: &str, extra: serde_json::Value| {
        let mut v = base.clone();
        v["schema"] = schema.into();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    vec![
        ("v2", with("s3sweep.manifest/v2", json!({}))),
        ("v3-without-marker", with("s3sweep.manifest/v3", json!({}))),
        (
            "v2-probe-object",
            with(
                "s3sweep.manifest/v2",
                json!({"key_template": "x/{i}", "written": [USER_KEY], "etags": {},
                       "probe_object": {"key": USER_KEY, "size_bytes": size, "etag": etag}}),
            ),
        ),
    ]
}

async fn clean_cli(manifest: &std::path::Path) -> std::process::Output {
    let manifest = manifest.to_path_buf();
    tokio::task::spawn_blocking(move || {
        run_within(
            "s3sweep clean",
            std::process::Command::new(BIN)
                .arg("clean")
                .arg("--manifest")
                .arg(&manifest),
            std::time::Duration::from_secs(60),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_without_an_owner_marker_delete_nothing() {
    let server = LabBuilder::new().bucket(BUCKET, LatencyProfile::None).server().await;
    // Two user objects with one body: the same size and ETag.
    for key in [USER_KEY, NUMBERED_KEY] {
        server
            .store()
            .insert(BUCKET, key, Bytes::from_static(b"the user's database"));
    }
    let client = client_of(&server).await;
    let s3 = client.s3(seed_settings());
    let head = s3.head_object().bucket(BUCKET).key(USER_KEY).send().await.unwrap();
    let (size, etag) = (head.content_length().unwrap() as u64, head.e_tag().unwrap().to_string());
    let both_there = || server.store().contains(BUCKET, USER_KEY) && server.store().contains(BUCKET, NUMBERED_KEY);
    for (name, forged) in forgeries(&server.endpoint(), size, &etag) {
        let path = tmp(&format!("{name}.json"));
        std::fs::write(&path, forged.to_string()).unwrap();
        let out = clean_cli(&path).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(both_there(), "{name} deleted the user's object: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("carries no owner marker"), "{name}: {stderr}");
        assert!(stderr.contains("by hand"), "{name}: {stderr}");
        // Refused by the library too, for a caller that skips load_manifest.
        let m: s3sweep::s3::seed::SeedManifest = serde_json::from_value(forged).unwrap();
        let loaded = clean::load_manifest(&path);
        assert!(
            matches!(loaded, Err(clean::CleanError::Unmarked { .. })),
            "{name}: {loaded:?}"
        );
        let outcome = clean::clean(&s3, &m, 1000).await;
        assert!(both_there(), "{name} deleted the user's object: {outcome:?}");
        let why = outcome.refused.unwrap_or_default();
        assert!(why.contains("no owner marker"), "{name}: {why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marked_manifest_naming_a_users_key_as_its_probe_object_keeps_it() {
    let bucket = "forged-probe";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    server.store().insert(bucket, USER_KEY, Bytes::from_static(b"12345678"));
    let client = client_of(&server).await;
    let s3 = client.s3(seed_settings());
    let head = s3.head_object().bucket(bucket).key(USER_KEY).send().await.unwrap();
    let mut m = s3sweep::s3::seed::SeedManifest::empty(bucket, client.endpoint(), "x/{i}", 8);
    m.owner_marker = Some("0123456789abcdef0123456789abcdef".into());
    m.written = vec![USER_KEY.into()];
    m.probe_object = Some(s3sweep::s3::manifest::ProbeObject {
        key: USER_KEY.into(),
        size_bytes: 8,
        etag: head.e_tag().map(str::to_string),
    });
    let outcome = clean::clean(&s3, &m, 1000).await;
    assert!(outcome.deleted.is_empty(), "{outcome:?}");
    assert!(outcome.kept[0].1.contains("owner marker"), "{outcome:?}");
    assert!(server.store().contains(bucket, USER_KEY));
    // A marker seed could not have written (not 32 hex digits) proves nothing either.
    m.owner_marker = Some(String::new());
    assert!(clean::clean(&s3, &m, 1000).await.refused.is_some());
}

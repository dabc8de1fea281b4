//! Data safety: `clean` deletes exactly the keys a seed manifest records. Keys the
//! user owns under the same prefix (written by someone else, or there before the seed
//! ran) survive; nothing in the crate lists a prefix and deletes what it finds.

use std::path::{Path, PathBuf};

use crate::common::lab::LatencyProfile;
use crate::common::{seed_settings, seed_spec, seed_with, LabBuilder};
use bytes::Bytes;
use s3sweep::s3::clean;
use s3sweep::s3::seed::SeedSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_deletes_only_the_manifest_keys() {
    let bucket = "clean-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    // The user's own keys under the same prefix, one of them a key the seed would
    // write (it exists, so the seed skips it and must not record it).
    let foreign = [
        "data/3",
        "data/100",
        "data/3/extra",
        "data/foreign",
        "data-other/1",
        "data/",
    ];
    for k in foreign {
        server.store().insert(bucket, k, Bytes::from_static(b"mine"));
    }
    let client = s3sweep::sweep_client(crate::common::lab::client_options(server.endpoint()))
        .await
        .unwrap();
    let spec = SeedSpec {
        concurrency: 8,
        ..seed_spec(bucket, "data/{i}", 25, 100)
    };
    let manifest = seed_with(&client, &spec).await;
    let s3 = client.s3(seed_settings());
    assert_eq!(manifest.written.len(), 24, "data/3 existed and is not recorded");
    assert!(!manifest.written.contains(&"data/3".to_string()));
    assert_eq!(manifest.skipped_existing, 1);
    let path = tmp("clean-lib.json");
    manifest.save(&path).unwrap();

    let loaded = clean::load_manifest(&path).unwrap();
    assert_eq!(
        clean::endpoint_for(&loaded, None).unwrap().as_deref(),
        Some(server.endpoint().as_str())
    );
    // Batches of 7: four DeleteObjects requests.
    let outcome = clean::clean(&s3, &loaded, 7).await;
    assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
    assert_eq!(outcome.deleted.len(), 24);
    clean::write_manifest(&path, &clean::without(loaded.clone(), &outcome.deleted)).unwrap();

    let mut left = server.store().keys(bucket).unwrap();
    left.sort();
    let mut expected: Vec<String> = foreign.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(left, expected, "exactly the user's keys survive");
    assert!(clean::load_manifest(&path).unwrap().written.is_empty());

    // A second clean is a no-op: nothing recorded, nothing deleted.
    let again = clean::clean(&s3, &clean::load_manifest(&path).unwrap(), 7).await;
    assert!(again.deleted.is_empty() && again.failed.is_empty());
    assert_eq!(server.store().object_count(bucket), Some(foreign.len()));
    let _ = std::fs::remove_file(path);
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("s3sweep-{}-{name}", std::process::id()))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A guard on the source: client code (everything but the embedded server, which
/// answers such requests but never makes them) never deletes buckets, and no file
/// that deletes objects also lists them: what is deleted comes from a manifest only.
#[test]
fn no_code_path_lists_and_deletes() {
    // The lab's crate is left out: it answers such requests but never makes them.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates/core/src", "crates/lambda/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found the sources");
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.display();
        for banned in [
            ".delete_bucket(",
            "DeleteBucket",
            ".list_objects(",
            "list_object_versions",
        ] {
            assert!(!text.contains(banned), "{name} calls {banned}");
        }
        let deletes = text.contains(".delete_objects(") || text.contains(".delete_object(");
        let lists = text.contains(".list_objects_v2(");
        assert!(!(deletes && lists), "{name} both lists and deletes objects");
        checked += 1;
    }
    assert!(checked > 5);
}

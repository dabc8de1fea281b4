//! Writing the test objects: `object_count` objects of `object_size_bytes` under a key
//! template, skipping keys that already exist, and a manifest recording exactly which
//! keys this run wrote (the only keys a later clean-up may delete); and the bandwidth
//! probe's one large object ([`seed_probe_object`]), recorded the same way.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::plan::KeyTemplate;

use super::errors::{classify, Action, BucketError};

/// Schema name of the manifest file.
pub const MANIFEST_SCHEMA: &str = "s3sweep.manifest/v1";

/// What to write.
#[derive(Debug, Clone)]
pub struct SeedSpec {
    pub bucket: String,
    pub keys: KeyTemplate,
    pub object_count: u32,
    pub object_size_bytes: u64,
    /// PUTs in flight.
    pub concurrency: usize,
    /// Check each key with HEAD first and skip those that exist.
    pub skip_existing: bool,
}

/// What a seed run did; also the manifest's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedManifest {
    pub schema: String,
    pub bucket: String,
    pub endpoint: Option<String>,
    pub key_template: String,
    pub object_size_bytes: u64,
    /// Keys this run created (and only those).
    pub written: Vec<String>,
    /// Keys that existed already and were left alone.
    pub skipped_existing: u64,
    /// The bandwidth probe's object, when this run wrote one (its key is in
    /// `written` too, so `clean` removes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_object: Option<ProbeObject>,
}

/// The one large object the bandwidth probe reads in ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeObject {
    pub key: String,
    pub size_bytes: u64,
}

/// Writes the probe object (`size_bytes` at `key`) unless it exists; returns it when
/// written, `None` when it was there already.
pub async fn seed_probe_object(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    bucket: &str,
    key: &str,
    size_bytes: u64,
) -> Result<Option<ProbeObject>, SeedError> {
    if size_bytes > 5 << 30 {
        return Err(SeedError::TooLarge(size_bytes));
    }
    let failed = |failure| {
        SeedError::Bucket(BucketError::from_failure(
            &failure,
            Action::Write,
            bucket,
            key,
            &super::endpoint_name(s3, endpoint),
        ))
    };
    match s3.head_object().bucket(bucket).key(key).send().await {
        Ok(_) => return Ok(None),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => {}
        Err(e) => return Err(failed(classify(&e))),
    }
    let body = object_body(size_bytes);
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .content_length(body.len() as i64)
        .body(ByteStream::from(body))
        .send()
        .await
        .map_err(|e| failed(classify(&e)))?;
    Ok(Some(ProbeObject {
        key: key.to_string(),
        size_bytes,
    }))
}

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// A HEAD or PUT failed: what failed, where, and what to do.
    #[error(transparent)]
    Bucket(BucketError),
    #[error("writing the manifest {path}: {source}")]
    Manifest { path: String, source: std::io::Error },
    #[error("object size {0} bytes is too large (at most 5 GiB)")]
    TooLarge(u64),
}

/// The deterministic content of every test object: a repeating byte pattern.
pub fn object_body(size: u64) -> Bytes {
    Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

/// Writes the objects; returns the manifest of what was written.
pub async fn seed(s3: &aws_sdk_s3::Client, endpoint: Option<&str>, spec: &SeedSpec) -> Result<SeedManifest, SeedError> {
    if spec.object_size_bytes > 5 << 30 {
        return Err(SeedError::TooLarge(spec.object_size_bytes));
    }
    let body = object_body(spec.object_size_bytes);
    let endpoint_name = Arc::new(super::endpoint_name(s3, endpoint));
    let sem = Arc::new(tokio::sync::Semaphore::new(spec.concurrency.max(1)));
    let mut set = tokio::task::JoinSet::new();
    // After the first failure no more writes start: the next would fail the same way.
    let failed_once = Arc::new(AtomicBool::new(false));
    for i in 0..spec.object_count {
        if failed_once.load(Ordering::Relaxed) {
            break;
        }
        let permit = sem.clone().acquire_owned().await.expect("never closed");
        let s3 = s3.clone();
        let bucket = spec.bucket.clone();
        let key = spec.keys.key(i);
        let body = body.clone();
        let skip_existing = spec.skip_existing;
        let endpoint_name = endpoint_name.clone();
        let failed_once = failed_once.clone();
        set.spawn(async move {
            let failed = |failure| {
                failed_once.store(true, Ordering::Relaxed);
                SeedError::Bucket(BucketError::from_failure(
                    &failure,
                    Action::Write,
                    &bucket,
                    &key,
                    &endpoint_name,
                ))
            };
            let _permit = permit;
            if skip_existing {
                match s3.head_object().bucket(&bucket).key(&key).send().await {
                    Ok(_) => return Ok((i, None)),
                    Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => {}
                    Err(e) => return Err(failed(classify(&e))),
                }
            }
            s3.put_object()
                .bucket(&bucket)
                .key(&key)
                .content_length(body.len() as i64)
                .body(ByteStream::from(body))
                .send()
                .await
                .map_err(|e| failed(classify(&e)))?;
            Ok((i, Some(key.clone())))
        });
    }
    let mut written: Vec<(u32, String)> = Vec::new();
    let mut skipped = 0u64;
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok((i, Some(key)))) => written.push((i, key)),
            Ok(Ok((_, None))) => skipped += 1,
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => tracing::error!(%join, "a seed task ended abnormally"),
        }
    }
    written.sort_unstable();
    let manifest = SeedManifest {
        schema: MANIFEST_SCHEMA.to_string(),
        bucket: spec.bucket.clone(),
        endpoint: endpoint.map(str::to_string),
        key_template: spec.keys.as_template(),
        object_size_bytes: spec.object_size_bytes,
        written: written.into_iter().map(|(_, k)| k).collect(),
        skipped_existing: skipped,
        probe_object: None,
    };
    match first_error {
        Some(e) => Err(e),
        None => Ok(manifest),
    }
}

impl SeedManifest {
    /// Writes the manifest as JSON, merging with an existing manifest for the same
    /// bucket so keys written by earlier runs stay recorded.
    pub fn save(&self, path: &Path) -> Result<(), SeedError> {
        let mut merged = self.clone();
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(old) = serde_json::from_str::<SeedManifest>(&text) {
                if old.bucket == self.bucket && old.endpoint == self.endpoint {
                    let mut keys = old.written;
                    keys.extend(self.written.iter().cloned());
                    keys.sort();
                    keys.dedup();
                    merged.written = keys;
                    merged.probe_object = merged.probe_object.or(old.probe_object);
                }
            }
        }
        let text = serde_json::to_string_pretty(&merged).expect("a manifest serializes");
        std::fs::write(path, text).map_err(|source| SeedError::Manifest {
            path: path.display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_have_the_requested_size() {
        assert_eq!(object_body(46_080).len(), 46_080);
        assert_eq!(object_body(0).len(), 0);
    }

    #[test]
    fn manifests_merge_keys_of_earlier_runs() {
        let dir = std::env::temp_dir().join(format!("s3sweep-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        let _ = std::fs::remove_file(&path);
        let mut m = SeedManifest {
            schema: MANIFEST_SCHEMA.into(),
            bucket: "b-1".into(),
            endpoint: None,
            key_template: "t/{i}".into(),
            object_size_bytes: 1,
            written: vec!["t/0".into()],
            skipped_existing: 0,
            probe_object: None,
        };
        m.save(&path).unwrap();
        m.written = vec!["t/1".into()];
        m.save(&path).unwrap();
        let back: SeedManifest = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back.written, vec!["t/0".to_string(), "t/1".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

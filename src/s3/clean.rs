//! Clean-up of what `seed` wrote: deletes exactly the keys a seed manifest records and
//! nothing else, and takes each deleted key out of the manifest.
//!
//! Nothing here lists a bucket or a prefix: the only keys ever deleted are the ones
//! named in the manifest, which `seed` fills only with keys it created itself (keys
//! that existed before are skipped and never recorded). Keys go out with DeleteObjects
//! in batches of at most 1,000 (S3's limit); a key the server reports as not deleted,
//! or every key of a batch whose request failed, stays in the manifest for a later run.

use std::path::Path;

use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use super::errors::{classify, Action, BucketError};
use super::seed::{SeedManifest, MANIFEST_SCHEMA};

/// S3's limit on keys per DeleteObjects request.
pub const MAX_BATCH: usize = 1000;

/// Why a clean-up could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error("reading the manifest {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not an s3sweep manifest: {detail}")]
    Parse { path: String, detail: String },
    #[error("{path} has schema {found:?}; this version reads {MANIFEST_SCHEMA:?}")]
    Schema { path: String, found: String },
    #[error("the manifest was written against {recorded}, not {given}: refusing to delete keys on another endpoint (leave out --endpoint to use the recorded one)")]
    EndpointMismatch { recorded: String, given: String },
    #[error("writing the manifest {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// What a clean-up did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanOutcome {
    /// Keys deleted (and so taken out of the manifest).
    pub deleted: Vec<String>,
    /// Keys not deleted, with the reason; they stay in the manifest.
    pub failed: Vec<(String, String)>,
    /// A DeleteObjects request that failed as a whole (endpoint down, bucket missing,
    /// access denied): what failed and what to do. No later batch was sent.
    pub stopped_by: Option<BucketError>,
}

/// Reads and checks a manifest file.
pub fn load_manifest(path: &Path) -> Result<SeedManifest, CleanError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CleanError::Read {
        path: shown.clone(),
        source,
    })?;
    let manifest: SeedManifest = serde_json::from_str(&text).map_err(|e| CleanError::Parse {
        path: shown.clone(),
        detail: e.to_string(),
    })?;
    if manifest.schema != MANIFEST_SCHEMA {
        return Err(CleanError::Schema {
            path: shown,
            found: manifest.schema,
        });
    }
    Ok(manifest)
}

/// The endpoint to clean against: the one the manifest records, unless `given`
/// names the same one. A different endpoint (or one given for a manifest written
/// against AWS) is refused: the same bucket name there holds someone else's keys.
pub fn endpoint_for(manifest: &SeedManifest, given: Option<&str>) -> Result<Option<String>, CleanError> {
    let norm = |s: &str| s.trim_end_matches('/').to_string();
    match (manifest.endpoint.as_deref(), given) {
        (recorded, None) => Ok(recorded.map(str::to_string)),
        (Some(recorded), Some(given)) if norm(recorded) == norm(given) => Ok(Some(recorded.to_string())),
        (recorded, Some(given)) => Err(CleanError::EndpointMismatch {
            recorded: recorded.unwrap_or("AWS's own endpoints").to_string(),
            given: given.to_string(),
        }),
    }
}

/// Deletes the manifest's keys, `batch` at a time (1..=1000). A request that fails as
/// a whole stops the clean-up ([`CleanOutcome::stopped_by`]): the next batch would
/// fail the same way.
pub async fn clean(s3: &aws_sdk_s3::Client, manifest: &SeedManifest, batch: usize) -> CleanOutcome {
    let batch = batch.clamp(1, MAX_BATCH);
    let mut outcome = CleanOutcome::default();
    let endpoint = super::endpoint_name(s3, manifest.endpoint.as_deref());
    for keys in manifest.written.chunks(batch) {
        let objects: Result<Vec<ObjectIdentifier>, _> = keys
            .iter()
            .map(|k| ObjectIdentifier::builder().key(k).build())
            .collect();
        let delete = objects.and_then(|objects| Delete::builder().set_objects(Some(objects)).quiet(false).build());
        let delete = match delete {
            Ok(d) => d,
            Err(e) => {
                let why = e.to_string();
                outcome.failed.extend(keys.iter().map(|k| (k.clone(), why.clone())));
                continue;
            }
        };
        match s3.delete_objects().bucket(&manifest.bucket).delete(delete).send().await {
            Ok(out) => {
                // Only keys of this batch that the server confirms count as deleted.
                let mut confirmed: Vec<String> = out
                    .deleted()
                    .iter()
                    .filter_map(|d| d.key().map(str::to_string))
                    .filter(|k| keys.contains(k))
                    .collect();
                confirmed.sort();
                confirmed.dedup();
                for err in out.errors() {
                    if let Some(k) = err.key() {
                        outcome.failed.push((
                            k.to_string(),
                            format!("{}: {}", err.code().unwrap_or("Error"), err.message().unwrap_or("")),
                        ));
                    }
                }
                for k in keys {
                    if confirmed.binary_search(k).is_err() && !outcome.failed.iter().any(|(f, _)| f == k) {
                        outcome
                            .failed
                            .push((k.clone(), "not confirmed deleted by the server".into()));
                    }
                }
                outcome.deleted.extend(confirmed);
            }
            Err(e) => {
                let error = BucketError::from_failure(&classify(&e), Action::Delete, &manifest.bucket, "", &endpoint);
                let why = error.to_string();
                outcome.failed.extend(keys.iter().map(|k| (k.clone(), why.clone())));
                outcome.stopped_by = Some(error);
                break;
            }
        }
    }
    outcome
}

/// The manifest without the deleted keys.
pub fn without(manifest: &SeedManifest, deleted: &[String]) -> SeedManifest {
    let gone: std::collections::HashSet<&str> = deleted.iter().map(String::as_str).collect();
    let mut left = manifest.clone();
    left.written.retain(|k| !gone.contains(k.as_str()));
    if left
        .probe_object
        .as_ref()
        .is_some_and(|p| gone.contains(p.key.as_str()))
    {
        left.probe_object = None;
    }
    left
}

/// Overwrites the manifest file (atomically: a temporary file, then a rename).
pub fn write_manifest(path: &Path, manifest: &SeedManifest) -> Result<(), CleanError> {
    let shown = path.display().to_string();
    let text = serde_json::to_string_pretty(manifest).expect("a manifest serializes");
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| CleanError::Write { path: shown, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(endpoint: Option<&str>) -> SeedManifest {
        SeedManifest {
            schema: MANIFEST_SCHEMA.into(),
            bucket: "b-1".into(),
            endpoint: endpoint.map(str::to_string),
            key_template: "t/{i}".into(),
            object_size_bytes: 1,
            written: vec!["t/0".into(), "t/1".into(), "t/2".into()],
            skipped_existing: 0,
            probe_object: None,
        }
    }

    #[test]
    fn endpoints_must_match_the_manifest() {
        let local = manifest(Some("http://127.0.0.1:9000"));
        assert_eq!(
            endpoint_for(&local, None).unwrap().as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert!(endpoint_for(&local, Some("http://127.0.0.1:9000/")).is_ok());
        let err = endpoint_for(&local, Some("http://127.0.0.1:9001")).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{err}");
        let aws = manifest(None);
        assert_eq!(endpoint_for(&aws, None).unwrap(), None);
        assert!(endpoint_for(&aws, Some("http://127.0.0.1:9000")).is_err());
    }

    #[test]
    fn deleted_keys_leave_the_manifest() {
        let m = manifest(None);
        let left = without(&m, &["t/1".to_string(), "other".to_string()]);
        assert_eq!(left.written, vec!["t/0".to_string(), "t/2".to_string()]);
    }

    #[test]
    fn bad_manifests_are_named() {
        let dir = std::env::temp_dir().join(format!("s3sweep-clean-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("m.json");
        std::fs::write(&p, "{\"not\": 1}").unwrap();
        assert!(matches!(load_manifest(&p), Err(CleanError::Parse { .. })));
        let mut m = manifest(None);
        m.schema = "other/v9".into();
        write_manifest(&p, &m).unwrap();
        assert!(matches!(load_manifest(&p), Err(CleanError::Schema { .. })));
        assert!(matches!(
            load_manifest(&dir.join("absent.json")),
            Err(CleanError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

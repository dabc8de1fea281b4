//! Clean-up of what `seed` wrote: deletes only keys it can show are its own, and takes
//! each deleted (or already gone) key out of the manifest.
//!
//! Nothing here lists a bucket or a prefix: the only keys considered are the ones the
//! manifest and its journal name ([`super::manifest`]). A key is deleted only when
//! (1) the recorded key template makes it, or it is the recorded probe object, and
//! (2) a HEAD just before the delete finds the manifest's owner marker in the
//! object's user metadata, the size `seed` wrote and the ETag its PUT returned (or,
//! for a key whose PUT's answer was never recorded, the ETag of the body `seed`
//! writes). The probe object is held to the same rule. A manifest without a marker
//! (schema v1 or v2, or v3 with the field left out) is refused whole
//! ([`CleanError::Unmarked`]): template, size and ETag are all a reader of the bucket
//! can learn, so they prove nothing.
//! The delete itself is conditional on that ETag (DeleteObjects' per-object ETag), on
//! every bucket kind: a key changed between the HEAD and the delete answers 412 and is
//! kept, counted as changed. A store that ignores the condition is found first with a
//! probe key ([`super::guards::check_conditional_deletes`]) and the clean-up refused,
//! unless [`CleanOptions::unconditional_deletes`]. Anything else is kept, with why.
//! Keys go out with DeleteObjects in batches of at most 1,000 (S3's limit); a key the
//! server reports as not deleted, or every key of a batch whose request failed, stays
//! in the manifest for a later run.

use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use futures_util::stream::{self, StreamExt};

use crate::plan::{is_directory_bucket, KeyTemplate};

use super::errors::{classify, Action, BucketError};
pub use super::manifest::ManifestLock;
use super::manifest::{read_journal, read_manifest_if_any, valid_owner_marker, ManifestError, OWNER_METADATA};
use super::seed::{body_etag, SeedManifest};

/// S3's limit on keys per DeleteObjects request.
pub const MAX_BATCH: usize = 1000;
/// HEADs in flight while proving a batch.
const HEADS_IN_FLIGHT: usize = 32;

/// Why a clean-up could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error("neither the manifest {path} nor its journal exists")]
    Missing { path: String },
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("the manifest was written against {recorded}, not {given}: refusing to delete keys on another endpoint (leave out --endpoint to use the recorded one)")]
    EndpointMismatch { recorded: String, given: String },
    #[error("{}", unmarked_message(path, schema))]
    Unmarked { path: String, schema: String },
}

/// Why a manifest without an owner marker is refused, and how to remove its keys by
/// hand.
fn unmarked_message(path: &str, schema: &str) -> String {
    format!(
        "refusing to delete anything: {path} ({schema}) carries no owner marker (no released s3sweep wrote such a manifest for `clean`), \
         and a key, size and ETag are all any reader of the bucket can learn, so they prove nothing. \
         To remove objects it names, check each one yourself, then delete it by hand: \
         `aws s3api head-object --bucket BUCKET --key KEY` (is it yours?), then `aws s3api delete-object --bucket BUCKET --key KEY`"
    )
}

/// Refuses a manifest whose owner marker is absent or not one `seed` writes.
pub fn check_marked(manifest: &SeedManifest, path: &Path) -> Result<(), CleanError> {
    if valid_owner_marker(manifest.owner_marker.as_deref()) {
        return Ok(());
    }
    Err(CleanError::Unmarked {
        path: path.display().to_string(),
        schema: manifest.schema.clone(),
    })
}

/// What a clean-up did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanOutcome {
    /// Keys deleted (and so taken out of the manifest).
    pub deleted: Vec<String>,
    /// Keys already gone (404 on the HEAD): taken out of the manifest too.
    pub gone: Vec<String>,
    /// Keys left alone because they could not be shown to be `seed`'s, with why; they
    /// stay in the manifest.
    pub kept: Vec<(String, String)>,
    /// Keys proven `seed`'s by the HEAD, then changed before the delete (its ETag
    /// condition answered 412): kept, with why; they stay in the manifest.
    pub changed: Vec<(String, String)>,
    /// Why nothing was deleted: the store ignores (or could not be shown to honour)
    /// conditional deletes ([`super::guards::GuardError`]).
    pub refused: Option<String>,
    /// Keys not deleted because a request failed, with the reason (one text shared by
    /// every key a failure covers, not a copy per key); they stay in the
    /// manifest.
    pub failed: Vec<(String, Arc<str>)>,
    /// A request that failed as a whole (endpoint down, bucket missing, access
    /// denied): what failed and what to do. No later batch was sent.
    pub stopped_by: Option<BucketError>,
}

/// Reads the manifest at `path` with the journal beside it folded in (a seed that was
/// stopped leaves its keys there); either may be missing, not both. A manifest that
/// does not parse, or has no owner marker ([`check_marked`]), is refused.
pub fn load_manifest(path: &Path) -> Result<SeedManifest, CleanError> {
    let manifest = read_manifest_if_any(path)?;
    let journal = read_journal(path)?;
    let loaded = match (manifest, journal) {
        (None, None) => {
            return Err(CleanError::Missing {
                path: path.display().to_string(),
            })
        }
        (Some(m), None) => m,
        (None, Some(j)) => j,
        (Some(mut m), Some(j)) => {
            j.check_same(&m, &super::manifest::journal_path(path))?;
            // The manifest's own marker decides: a journal cannot lend it one.
            check_marked(&m, path)?;
            m.absorb(&j);
            m
        }
    };
    check_marked(&loaded, path)?;
    Ok(loaded)
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

/// An ETag without quotes or a weak marker, for comparing.
fn bare(etag: &str) -> &str {
    etag.trim_start_matches("W/").trim_matches('"')
}

/// How a clean-up runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanOptions {
    /// Keys per DeleteObjects request (1..=[`MAX_BATCH`]; default 1,000).
    pub batch: usize,
    /// Delete without the ETag condition on a store that ignores it (default false:
    /// such a store is refused). Directory buckets keep the condition regardless.
    pub unconditional_deletes: bool,
}

impl Default for CleanOptions {
    fn default() -> Self {
        CleanOptions {
            batch: MAX_BATCH,
            unconditional_deletes: false,
        }
    }
}

/// What the HEAD just before the delete showed about one key.
enum Proof {
    /// Ours: delete, conditional on this ETag.
    Ours(String),
    Gone,
    Kept(String),
    Failed(String, Option<BucketError>),
}

/// The ETags of `seed`'s bodies, each size's computed once (streaming: no body is
/// held) the first time a key without a recorded ETag needs it.
#[derive(Default)]
struct BodyEtags(std::sync::Mutex<std::collections::HashMap<u64, String>>);

impl BodyEtags {
    fn of(&self, size: u64) -> String {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known.entry(size).or_insert_with(|| body_etag(size)).clone()
    }
}

/// The size `seed` wrote at `key` and the ETag its manifest recorded (`None`: none
/// recorded, the body's is computed if a HEAD shows an object of that size): the
/// probe object's own, or a template key's; `None` for a key neither (not proven
/// ours).
fn expected_object(m: &SeedManifest, template: Option<&KeyTemplate>, key: &str) -> Option<(u64, Option<String>)> {
    if let Some(p) = m.probe_object.as_ref().filter(|p| p.key == key) {
        return Some((p.size_bytes, p.etag.clone()));
    }
    let size_bytes = m.size_of_key(template?, key)?;
    Some((size_bytes, m.etags.get(key).cloned()))
}

/// Checks one key: made by the template, then the object's owner marker, size and
/// ETag. A body's ETag is computed only for an object of the size the manifest
/// claims (a claim of 3 GiB over a small object costs nothing).
async fn prove(
    s3: &aws_sdk_s3::Client,
    m: &SeedManifest,
    template: Option<&KeyTemplate>,
    key: &str,
    endpoint: &str,
    bodies: &BodyEtags,
) -> Proof {
    let Some((size_bytes, recorded)) = expected_object(m, template, key) else {
        return Proof::Kept(format!("the key template {:?} does not make this key", m.key_template));
    };
    match s3.head_object().bucket(&m.bucket).key(key).send().await {
        Ok(head) => {
            let size = head.content_length().unwrap_or(-1);
            let etag = head.e_tag().unwrap_or("");
            let owner = head.metadata().and_then(|m| m.get(OWNER_METADATA));
            if m.owner_marker.is_none() || owner != m.owner_marker.as_ref() {
                return Proof::Kept(format!(
                    "it does not carry this manifest's owner marker (x-amz-meta-{OWNER_METADATA}): not written by this seed"
                ));
            }
            if size != size_bytes as i64 {
                return Proof::Kept(format!("its size is {size} bytes, seed wrote {size_bytes}"));
            }
            let expected = recorded.unwrap_or_else(|| bodies.of(size_bytes));
            if bare(etag) != bare(&expected) {
                Proof::Kept(format!(
                    "its ETag is {etag}, seed recorded {expected}: written since by someone else"
                ))
            } else {
                Proof::Ours(etag.to_string())
            }
        }
        Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Proof::Gone,
        Err(e) => {
            let error = BucketError::from_failure(&classify(&e), Action::Delete, &m.bucket, key, endpoint);
            Proof::Failed(error.to_string(), Some(error))
        }
    }
}

/// [`clean_with`] `batch` keys at a time, every delete conditional.
pub async fn clean(s3: &aws_sdk_s3::Client, manifest: &SeedManifest, batch: usize) -> CleanOutcome {
    let options = CleanOptions {
        batch,
        ..CleanOptions::default()
    };
    clean_with(s3, manifest, &options).await
}

/// Deletes the manifest's keys it can prove are `seed`'s, `options.batch` at a time
/// (1..=1000). A request that fails as a whole stops the clean-up
/// ([`CleanOutcome::stopped_by`]): the next batch would fail the same way.
pub async fn clean_with(s3: &aws_sdk_s3::Client, manifest: &SeedManifest, options: &CleanOptions) -> CleanOutcome {
    let batch = options.batch.clamp(1, MAX_BATCH);
    let mut outcome = CleanOutcome::default();
    // The caller loaded it with [`load_manifest`]; refused here too, whoever calls.
    if !valid_owner_marker(manifest.owner_marker.as_deref()) {
        outcome.refused = Some(unmarked_message("the manifest", &manifest.schema));
        return outcome;
    }
    let endpoint = super::endpoint_name(s3, manifest.endpoint.as_deref());
    let template = KeyTemplate::parse(&manifest.key_template, 0).ok();
    let bodies = BodyEtags::default();
    let conditional = !options.unconditional_deletes || is_directory_bucket(&manifest.bucket);
    // A HEAD answers without a body, so it cannot say whether the key or the bucket is
    // missing, or why access was refused: the bucket is checked once first with a
    // GET of the first key, whose error (if any) has S3's code. After that a
    // HEAD's 404 means the key is gone.
    if let Some(first) = manifest.written.first() {
        if let Err(error) = check_bucket(s3, manifest, first, &endpoint).await {
            let why: Arc<str> = error.to_string().into();
            outcome.failed = manifest.written.iter().map(|k| (k.clone(), why.clone())).collect();
            outcome.stopped_by = Some(error);
            return outcome;
        }
        if conditional {
            let checked = super::guards::check_conditional_deletes(s3, &endpoint, &manifest.bucket).await;
            if let Err(e) = checked {
                outcome.refused = Some(e.to_string());
                return outcome;
            }
        }
    }
    for keys in manifest.written.chunks(batch) {
        let proofs: Vec<(String, Proof)> = stream::iter(keys)
            .map(|k| async {
                (
                    k.clone(),
                    prove(s3, manifest, template.as_ref(), k, &endpoint, &bodies).await,
                )
            })
            .buffered(HEADS_IN_FLIGHT)
            .collect()
            .await;
        let mut ours = Vec::new();
        let mut whole_failure = None;
        let mut failures = 0;
        for (key, proof) in proofs {
            match proof {
                Proof::Ours(etag) => ours.push((key, etag)),
                Proof::Gone => outcome.gone.push(key),
                Proof::Kept(why) => outcome.kept.push((key, why)),
                Proof::Failed(why, error) => {
                    failures += 1;
                    outcome.failed.push((key, why.into()));
                    whole_failure = whole_failure.or(error);
                }
            }
        }
        if failures == keys.len() {
            outcome.stopped_by = whole_failure;
            break;
        }
        if ours.is_empty() {
            continue;
        }
        if let Err(error) = delete_batch(s3, manifest, &ours, conditional, &endpoint, &mut outcome).await {
            outcome.stopped_by = Some(error);
            break;
        }
    }
    outcome
}

/// The bucket's check: a GET of `key` with `If-None-Match: *`, which an existing key
/// answers 304 without a body. Only a failure that is not about the key (a missing
/// bucket, refused credentials, an endpoint down) is an error.
async fn check_bucket(s3: &aws_sdk_s3::Client, m: &SeedManifest, key: &str, endpoint: &str) -> Result<(), BucketError> {
    match s3
        .get_object()
        .bucket(&m.bucket)
        .key(key)
        .if_none_match("*")
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e)
            if e.raw_response()
                .is_some_and(|r| matches!(r.status().as_u16(), 304 | 412)) =>
        {
            Ok(())
        }
        Err(e) => {
            let failure = classify(&e);
            let code = failure.code.as_deref().unwrap_or("");
            if code == "NoSuchKey" {
                return Ok(());
            }
            Err(BucketError::from_failure(
                &failure,
                Action::Delete,
                &m.bucket,
                "",
                endpoint,
            ))
        }
    }
}

/// One DeleteObjects of proven keys; a request that failed as a whole is returned.
async fn delete_batch(
    s3: &aws_sdk_s3::Client,
    manifest: &SeedManifest,
    ours: &[(String, String)],
    conditional: bool,
    endpoint: &str,
    outcome: &mut CleanOutcome,
) -> Result<(), BucketError> {
    let keys: Vec<String> = ours.iter().map(|(k, _)| k.clone()).collect();
    let objects: Result<Vec<ObjectIdentifier>, _> = ours
        .iter()
        .map(|(k, etag)| {
            let id = ObjectIdentifier::builder().key(k);
            let id = if conditional { id.e_tag(etag) } else { id };
            id.build()
        })
        .collect();
    let delete = objects.and_then(|objects| Delete::builder().set_objects(Some(objects)).quiet(false).build());
    let delete = match delete {
        Ok(d) => d,
        Err(e) => {
            let why: Arc<str> = e.to_string().into();
            outcome.failed.extend(keys.iter().map(|k| (k.clone(), why.clone())));
            return Ok(());
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
            let mut answered = std::collections::HashSet::new();
            for err in out.errors() {
                let Some(k) = err.key().filter(|k| keys.iter().any(|own| own == k)) else {
                    continue;
                };
                answered.insert(k.to_string());
                match err.code().unwrap_or("Error") {
                    "PreconditionFailed" => outcome.changed.push((
                        k.to_string(),
                        "changed since it was proven (the delete's ETag condition answered 412)".into(),
                    )),
                    "NoSuchKey" => outcome.gone.push(k.to_string()),
                    code => outcome
                        .failed
                        .push((k.to_string(), format!("{code}: {}", err.message().unwrap_or("")).into())),
                }
            }
            let unanswered: Vec<String> = keys
                .iter()
                .filter(|k| confirmed.binary_search(k).is_err() && !answered.contains(*k))
                .cloned()
                .collect();
            for k in unanswered {
                outcome.failed.push((k, "not confirmed deleted by the server".into()));
            }
            outcome.deleted.extend(confirmed);
            Ok(())
        }
        Err(e) => {
            let error = BucketError::from_failure(&classify(&e), Action::Delete, &manifest.bucket, "", endpoint);
            let why: Arc<str> = error.to_string().into();
            outcome.failed.extend(keys.iter().map(|k| (k.clone(), why.clone())));
            Err(error)
        }
    }
}

/// The manifest without the deleted (and already gone) keys (taken, not copied: a
/// manifest of millions of keys is held once).
pub fn without(manifest: SeedManifest, deleted: &[String]) -> SeedManifest {
    let gone: std::collections::HashSet<&str> = deleted.iter().map(String::as_str).collect();
    let mut left = manifest;
    left.written.retain(|k| !gone.contains(k.as_str()));
    left.etags.retain(|k, _| !gone.contains(k.as_str()));
    if left
        .probe_object
        .as_ref()
        .is_some_and(|p| gone.contains(p.key.as_str()))
    {
        left.probe_object = None;
    }
    left
}

/// Overwrites the manifest file whole (a temporary file, fsync, rename); the journal
/// it absorbed is removed after.
pub fn write_manifest(path: &Path, manifest: &SeedManifest) -> Result<(), CleanError> {
    manifest.write_to(path)?;
    super::manifest::remove_journal(path)?;
    Ok(())
}

/// Takes the manifest's lock for a clean-up ([`super::manifest::lock_manifest`]).
pub fn lock(path: &Path) -> Result<ManifestLock, CleanError> {
    Ok(super::manifest::lock_manifest(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(endpoint: Option<&str>) -> SeedManifest {
        let mut m = SeedManifest::empty("b-1", endpoint, "t/{i}", 1);
        m.written = vec!["t/0".into(), "t/1".into(), "t/2".into()];
        m
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
        let mut m = manifest(None);
        m.etags.insert("t/1".into(), "\"e\"".into());
        let left = without(m.clone(), &["t/1".to_string(), "other".to_string()]);
        assert_eq!(left.written, vec!["t/0".to_string(), "t/2".to_string()]);
        assert!(left.etags.is_empty());
    }

    #[test]
    fn bad_manifests_are_named() {
        let dir = std::env::temp_dir().join(format!("s3sweep-clean-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("m.json");
        std::fs::write(&p, "{\"not\": 1}").unwrap();
        assert!(matches!(
            load_manifest(&p),
            Err(CleanError::Manifest(ManifestError::Parse { .. }))
        ));
        let mut m = manifest(None);
        m.schema = "other/v9".into();
        write_manifest(&p, &m).unwrap();
        assert!(matches!(
            load_manifest(&p),
            Err(CleanError::Manifest(ManifestError::Schema { .. }))
        ));
        assert!(matches!(
            load_manifest(&dir.join("absent.json")),
            Err(CleanError::Missing { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

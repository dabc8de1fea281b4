//! Writing the test objects: `object_count` objects of `object_size_bytes` under a key
//! template. Every PUT is conditional (`If-None-Match: *`, S3's conditional write): a
//! key that exists answers 412 and is counted as already there, never overwritten and
//! never claimed, so two seeds racing over one template claim disjoint keys.
//!
//! [`seed_recorded`] (what `s3sweep seed` runs) records every key in the journal
//! ([`super::manifest`]) before its PUT and every outcome after, under the manifest's
//! lock, then folds the journal into the manifest, saved whole. A kill, an error or a
//! signal at any moment leaves each key a PUT went out for named in the journal or the
//! manifest, for `clean` to prove and delete.
//!
//! Every object carries its manifest's owner marker as user metadata
//! ([`super::manifest::OWNER_METADATA`]), which `clean` requires before it deletes.
//! Before the first conditional PUT, the store is checked to honour `If-None-Match`
//! ([`super::guards::check_conditional_writes`]): one that overwrites is refused
//! before anything else is written.
//!
//! [`seed_probe_object`] writes the bandwidth probe's one large object the same
//! conditional way; `seed --probe-object-mib` records it in the manifest.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use crate::plan::KeyTemplate;

use super::errors::{classify, Action, BucketError};
use super::guards::check_conditional_writes;
use super::manifest::{
    fold_journal, lock_manifest, new_owner_marker, read_manifest_if_any, remove_journal, size_in_cycle, Journal,
    ManifestError, OWNER_METADATA,
};
pub use super::manifest::{ProbeObject, SeedManifest, MANIFEST_SCHEMA};

/// What to write.
#[derive(Debug, Clone)]
pub struct SeedSpec {
    pub bucket: String,
    pub keys: KeyTemplate,
    pub object_count: u32,
    pub object_size_bytes: u64,
    /// Mixed sizes: object `i` gets `size_cycle_bytes[i % len]` bytes (empty: every
    /// object `object_size_bytes`).
    pub size_cycle_bytes: Vec<u64>,
    /// A size axis: `object_count` objects of each size, size `S`'s under `s{S}/` +
    /// the template (`crate::plan::sized_template`); empty: none.
    pub object_sizes_bytes: Vec<u64>,
    /// PUTs in flight.
    pub concurrency: usize,
    /// Write with `If-None-Match: *`, leaving keys that exist alone (false: plain
    /// PUTs, for a fresh bucket of the embedded server only).
    pub skip_existing: bool,
}

/// Writes the probe object (`size_bytes` at `key`, carrying the owner marker `owner`)
/// with `If-None-Match: *`; returns it (with the ETag S3 returned) when written, `None`
/// when the key existed (412: left alone, not claimed).
pub async fn seed_probe_object(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    bucket: &str,
    key: &str,
    size_bytes: u64,
    owner: &str,
) -> Result<Option<ProbeObject>, SeedError> {
    if size_bytes > 5 << 30 {
        return Err(SeedError::TooLarge(size_bytes));
    }
    let put = Put {
        s3: s3.clone(),
        bucket: bucket.to_string(),
        key: key.to_string(),
        size_bytes,
        conditional: true,
        owner: owner.into(),
        endpoint_name: Arc::new(super::endpoint_name(s3, endpoint)),
        failed_once: Arc::new(AtomicBool::new(false)),
    };
    Ok(match put.send().await? {
        Outcome::Written(key, etag) => Some(ProbeObject { key, size_bytes, etag }),
        Outcome::Existed(_) => None,
    })
}

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// A PUT failed: what failed, where, and what to do.
    #[error(transparent)]
    Bucket(BucketError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("object size {0} bytes is too large (at most 5 GiB)")]
    TooLarge(u64),
    /// The store does not honour `If-None-Match` (or could not be checked).
    #[error(transparent)]
    Store(super::guards::GuardError),
}

impl From<super::guards::GuardError> for SeedError {
    /// A probe PUT that failed as any PUT can (a missing bucket, refused credentials)
    /// is that failure; a store that overwrote is [`SeedError::Store`].
    fn from(e: super::guards::GuardError) -> Self {
        match e {
            super::guards::GuardError::Bucket(b) => SeedError::Bucket(b),
            other => SeedError::Store(other),
        }
    }
}

/// The deterministic content of every test object: a repeating byte pattern.
pub fn object_body(size: u64) -> Bytes {
    Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

/// One period-aligned block of the pattern (251 x 256 bytes): every block of a
/// streamed body starts at the pattern's start.
const PATTERN_BLOCK_BYTES: u64 = 251 * 256;

/// [`object_body`]`(size)` as a body made one block at a time as it is sent (a 3 GiB
/// object holds 63 KiB, not 3 GiB), made again for each attempt.
fn pattern_stream(size: u64) -> ByteStream {
    use aws_smithy_types::body::SdkBody;
    let block = object_body(PATTERN_BLOCK_BYTES);
    ByteStream::new(SdkBody::retryable(move || {
        SdkBody::from_body_1_x(PatternBody {
            left: size,
            block: block.clone(),
        })
    }))
}

/// The pattern, `left` bytes more, in blocks.
struct PatternBody {
    left: u64,
    block: Bytes,
}

impl http_body::Body for PatternBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        let n = self.left.min(self.block.len() as u64);
        self.left -= n;
        let data = self.block.slice(..n as usize);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

/// The S3 ETag of [`object_body`] written by a single PUT without KMS: its MD5, hex,
/// quoted. What `clean` proves a key by when its own PUT's answer was never recorded.
/// Computed by streaming the pattern through one 63 KiB buffer: memory does not grow
/// with `size`.
pub fn body_etag(size: u64) -> String {
    use md5::Digest as _;
    // 251 * 256 bytes: a whole number of pattern periods, so every chunk starts at 0.
    let chunk = object_body(PATTERN_BLOCK_BYTES);
    let mut md5 = md5::Md5::new();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        md5.update(&chunk[..n]);
        left -= n as u64;
    }
    let digest = md5.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// What one PUT found.
enum Outcome {
    /// Created, with the ETag S3 returned.
    Written(String, Option<String>),
    /// The key existed (412): left alone.
    Existed(String),
}

/// Writes the objects; returns the manifest of what was written. Nothing is recorded
/// on disk: `s3sweep seed` uses [`seed_recorded`].
pub async fn seed(s3: &aws_sdk_s3::Client, endpoint: Option<&str>, spec: &SeedSpec) -> Result<SeedManifest, SeedError> {
    check_sizes(spec)?;
    if spec.skip_existing {
        check_conditional_writes(s3, endpoint, &spec.bucket).await?;
    }
    let (manifest, error) = seed_inner(s3, endpoint, spec, &new_owner_marker(), None).await?;
    match error {
        Some(e) => Err(e),
        None => Ok(manifest),
    }
}

/// Seeds under the lock of the manifest at `path`: a journal from a run that was
/// stopped is folded in first; a manifest that does not parse or records another
/// bucket, endpoint, template or size is refused. Returns this run's manifest; the
/// file holds every run's keys. On a failed PUT the keys written so far are saved
/// before the error is returned.
pub async fn seed_recorded(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    spec: &SeedSpec,
    path: &Path,
) -> Result<SeedManifest, SeedError> {
    check_sizes(spec)?;
    let _lock = lock_manifest(path)?;
    let mut this = spec.empty_manifest(endpoint);
    let existed = read_manifest_if_any(path)?;
    let had_manifest = existed.is_some();
    let mut recorded = match existed {
        Some(old) => {
            old.check_same(&this, path)?;
            old
        }
        None => this.clone(),
    };
    if recorded.owner_marker.is_none() && !recorded.written.is_empty() {
        return Err(ManifestError::Unmarked {
            path: path.display().to_string(),
        }
        .into());
    }
    let owner = recorded.owner_marker.get_or_insert_with(new_owner_marker).clone();
    this.owner_marker = Some(owner.clone());
    if spec.skip_existing {
        check_conditional_writes(s3, endpoint, &spec.bucket).await?;
    }
    if fold_journal(path, &mut recorded)? {
        recorded.write_to(path)?;
        remove_journal(path)?;
    }
    let mut journal = Journal::create(path, &this)?;
    let (run, error) = seed_inner(s3, endpoint, spec, &owner, Some(&mut journal)).await?;
    journal.sync()?;
    recorded.absorb(&run);
    // A run that wrote nothing into no manifest leaves none behind.
    if had_manifest || !recorded.written.is_empty() {
        recorded.write_to(path)?;
    }
    drop(journal);
    remove_journal(path)?;
    match error {
        Some(e) => Err(e),
        None => Ok(run),
    }
}

/// The PUTs; each key is journaled (when there is a journal) before its PUT starts
/// and its outcome as soon as it is known. A failed PUT stops new ones: the manifest
/// of what was written comes back with the first error. Every object carries `owner`.
async fn seed_inner(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    spec: &SeedSpec,
    owner: &str,
    mut journal: Option<&mut Journal>,
) -> Result<(SeedManifest, Option<SeedError>), SeedError> {
    check_sizes(spec)?;
    let owner: Arc<str> = owner.into();
    let parts = spec.parts();
    let endpoint_name = Arc::new(super::endpoint_name(s3, endpoint));
    let sem = Arc::new(tokio::sync::Semaphore::new(spec.concurrency.max(1)));
    let mut set = tokio::task::JoinSet::new();
    let failed_once = Arc::new(AtomicBool::new(false));
    let mut manifest = spec.empty_manifest(endpoint);
    manifest.owner_marker = Some(owner.to_string());
    let mut first_error = None;
    let mut record = |joined, manifest: &mut SeedManifest, journal: &mut Option<&mut Journal>| {
        note(joined, manifest, journal.as_deref_mut(), &mut first_error)
    };
    for (i, (keys, sizes)) in parts
        .iter()
        .flat_map(|p| (0..spec.object_count).map(move |i| (i, (&p.0, &p.1))))
    {
        if failed_once.load(Ordering::Relaxed) {
            break;
        }
        let permit = sem.clone().acquire_owned().await.expect("never closed");
        while let Some(joined) = set.try_join_next() {
            record(joined, &mut manifest, &mut journal)?;
        }
        let key = keys.key(i);
        if let Some(j) = journal.as_deref_mut() {
            j.intent(&key)?;
        }
        let put = Put {
            s3: s3.clone(),
            bucket: spec.bucket.clone(),
            key,
            size_bytes: sizes[i as usize % sizes.len()],
            conditional: spec.skip_existing,
            owner: owner.clone(),
            endpoint_name: endpoint_name.clone(),
            failed_once: failed_once.clone(),
        };
        set.spawn(async move {
            let _permit = permit;
            put.send().await
        });
    }
    while let Some(joined) = set.join_next().await {
        record(joined, &mut manifest, &mut journal)?;
    }
    manifest.written.sort_unstable();
    Ok((manifest, first_error))
}

/// Every size at most 5 GiB.
fn check_sizes(spec: &SeedSpec) -> Result<(), SeedError> {
    let largest = spec
        .size_cycle_bytes
        .iter()
        .copied()
        .chain(spec.object_sizes_bytes.iter().copied())
        .chain([spec.object_size_bytes])
        .max();
    match largest {
        Some(n) if n > 5 << 30 => Err(SeedError::TooLarge(n)),
        _ => Ok(()),
    }
}

impl SeedSpec {
    /// The size object `i` is written with.
    pub fn size_of(&self, i: u32) -> u64 {
        size_in_cycle(&self.size_cycle_bytes, self.object_size_bytes, i)
    }
    /// The manifest of this spec with nothing written yet.
    fn empty_manifest(&self, endpoint: Option<&str>) -> SeedManifest {
        let one = self
            .object_sizes_bytes
            .first()
            .copied()
            .unwrap_or(self.object_size_bytes);
        let mut m = SeedManifest::empty(&self.bucket, endpoint, &self.keys.as_template(), one);
        m.size_cycle_bytes = self.size_cycle_bytes.clone();
        m.object_sizes_bytes = self.object_sizes_bytes.clone();
        m
    }
    /// What to write: per size of a size axis its own template and size; else the
    /// template with its size (or the size cycle's sizes). Bodies are made as they are
    /// sent ([`pattern_stream`]), never held.
    fn parts(&self) -> Vec<(KeyTemplate, Vec<u64>)> {
        if !self.object_sizes_bytes.is_empty() {
            return self
                .object_sizes_bytes
                .iter()
                .map(|&s| (crate::plan::sized_template(&self.keys, s), vec![s]))
                .collect();
        }
        let sizes = if self.size_cycle_bytes.is_empty() {
            vec![self.object_size_bytes]
        } else {
            self.size_cycle_bytes.clone()
        };
        vec![(self.keys.clone(), sizes)]
    }
}

/// Records one finished PUT in the manifest and the journal.
fn note(
    joined: Result<Result<Outcome, SeedError>, tokio::task::JoinError>,
    manifest: &mut SeedManifest,
    journal: Option<&mut Journal>,
    first_error: &mut Option<SeedError>,
) -> Result<(), SeedError> {
    match joined {
        Ok(Ok(Outcome::Written(key, etag))) => {
            if let Some(j) = journal {
                j.put(&key, etag.as_deref())?;
            }
            if let Some(e) = etag {
                manifest.etags.insert(key.clone(), e);
            }
            manifest.written.push(key);
        }
        Ok(Ok(Outcome::Existed(key))) => {
            if let Some(j) = journal {
                j.exists(&key)?;
            }
            manifest.skipped_existing += 1;
        }
        Ok(Err(e)) => {
            first_error.get_or_insert(e);
        }
        Err(join) => tracing::error!(%join, "a seed task ended abnormally"),
    }
    Ok(())
}

/// One conditional PUT.
struct Put {
    s3: aws_sdk_s3::Client,
    bucket: String,
    key: String,
    /// The body's size: [`object_body`]'s bytes, streamed ([`pattern_stream`]).
    size_bytes: u64,
    conditional: bool,
    /// The manifest's owner marker, sent as user metadata.
    owner: Arc<str>,
    endpoint_name: Arc<String>,
    failed_once: Arc<AtomicBool>,
}

/// Attempts of a conditional PUT that S3 answers 409 (a concurrent conditional write
/// to the same key; S3 says to retry).
const CONFLICT_ATTEMPTS: u32 = 3;

impl Put {
    async fn send(self) -> Result<Outcome, SeedError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = self
                .s3
                .put_object()
                .bucket(&self.bucket)
                .key(&self.key)
                .content_length(self.size_bytes as i64)
                .metadata(OWNER_METADATA, &*self.owner)
                .body(pattern_stream(self.size_bytes));
            if self.conditional {
                req = req.if_none_match("*");
            }
            match req.send().await {
                Ok(out) => return Ok(Outcome::Written(self.key, out.e_tag().map(str::to_string))),
                Err(e) => match e.raw_response().map(|r| r.status().as_u16()) {
                    Some(412) if self.conditional => return Ok(Outcome::Existed(self.key)),
                    Some(409) if self.conditional && attempt < CONFLICT_ATTEMPTS => continue,
                    _ => {
                        self.failed_once.store(true, Ordering::Relaxed);
                        return Err(SeedError::Bucket(BucketError::from_failure(
                            &classify(&e),
                            Action::Write,
                            &self.bucket,
                            &self.key,
                            &self.endpoint_name,
                        )));
                    }
                },
            }
        }
    }
}

impl SeedManifest {
    /// Writes the manifest, merged with the one at `path` (which must record the same
    /// bucket, endpoint, template and size, and parse: otherwise it is refused, not
    /// replaced), whole or not at all, under the manifest's lock.
    pub fn save(&self, path: &Path) -> Result<(), SeedError> {
        let _lock = lock_manifest(path)?;
        let mut merged = match read_manifest_if_any(path)? {
            Some(old) => {
                old.check_same(self, path)?;
                old
            }
            None => {
                let mut m = SeedManifest::empty(
                    &self.bucket,
                    self.endpoint.as_deref(),
                    &self.key_template,
                    self.object_size_bytes,
                );
                m.size_cycle_bytes = self.size_cycle_bytes.clone();
                m.object_sizes_bytes = self.object_sizes_bytes.clone();
                m
            }
        };
        merged.absorb(self);
        merged.write_to(path)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_have_the_requested_size_and_a_known_etag() {
        assert_eq!(object_body(46_080).len(), 46_080);
        assert_eq!(object_body(0).len(), 0);
        assert_eq!(body_etag(0), "\"d41d8cd98f00b204e9800998ecf8427e\"");
        use md5::Digest as _;
        for size in [1, 250, 251, 64_255, 64_256, 64_257, 200_000] {
            let whole: String = md5::Md5::digest(object_body(size))
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(body_etag(size), format!("\"{whole}\""), "size {size}");
        }
    }

    #[test]
    fn manifests_merge_keys_of_earlier_runs_and_refuse_other_buckets() {
        let dir = std::env::temp_dir().join(format!("s3sweep-seed-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        let _ = std::fs::remove_file(&path);
        let mut m = SeedManifest::empty("b-1", None, "t/{i}", 1);
        m.written = vec!["t/0".into()];
        m.save(&path).unwrap();
        m.written = vec!["t/1".into()];
        m.save(&path).unwrap();
        let back = super::super::manifest::read_manifest(&path).unwrap();
        assert_eq!(back.written, vec!["t/0".to_string(), "t/1".to_string()]);
        let other = SeedManifest::empty("b-2", None, "t/{i}", 1);
        let err = other.save(&path).unwrap_err();
        assert!(err.to_string().contains("records bucket b-1, not b-2"), "{err}");
        assert_eq!(super::super::manifest::read_manifest(&path).unwrap(), back);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_saved_size_axis_is_kept_so_the_next_seed_of_it_is_accepted() {
        let dir = std::env::temp_dir().join(format!("s3sweep-seed-axis-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        let _ = std::fs::remove_file(&path);
        let mut m = SeedManifest::empty("b-1", None, "t/{i}", 1024);
        m.object_sizes_bytes = vec![1024, 4096];
        m.owner_marker = Some("ab".into());
        m.written = vec!["s1024/t/0".into()];
        m.save(&path).unwrap();
        let back = super::super::manifest::read_manifest(&path).unwrap();
        assert_eq!(back.object_sizes_bytes, vec![1024, 4096]);
        assert_eq!(back.owner_marker.as_deref(), Some("ab"));
        back.check_same(&m, &path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

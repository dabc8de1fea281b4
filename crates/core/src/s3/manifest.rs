//! The record of what `seed` wrote, the only thing `clean` deletes from: the manifest
//! (JSON, written whole by temporary file, fsync and rename), the append-only journal
//! beside it (`MANIFEST.journal`: each key is recorded *before* its PUT, each outcome
//! after, so a kill or an error mid-seed never leaves an object no record names), and
//! the lock (`MANIFEST.lock`, flock) that keeps two runs off one manifest.
//!
//! A manifest that does not parse, or records another bucket, endpoint, key template
//! or object size, is refused with an error, never replaced.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sys::files::{read_capped_text, write_atomic, FileError};

/// Schema name of the manifest file this version writes (with an owner marker).
pub const MANIFEST_SCHEMA: &str = "s3sweep.manifest/v3";
/// The schema before owner markers; still read (so `seed` and `clean` can name it),
/// never trusted: `clean` refuses a manifest without an owner marker.
pub const MANIFEST_SCHEMA_V2: &str = "s3sweep.manifest/v2";
/// The first schema (no ETags); read and refused like v2.
pub const MANIFEST_SCHEMA_V1: &str = "s3sweep.manifest/v1";
/// The user metadata name (`x-amz-meta-s3sweep-owner` on the wire) every object
/// `seed` writes carries, valued with its manifest's [`SeedManifest::owner_marker`].
pub const OWNER_METADATA: &str = "s3sweep-owner";
/// Most bytes of a manifest or journal read: a million keys of ~200 bytes.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// Largest object size a manifest may record: S3's single PUT, 5 GiB.
pub const MAX_RECORDED_SIZE_BYTES: u64 = 5 << 30;

/// What seed runs wrote into one bucket under one template; also the manifest file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedManifest {
    pub schema: String,
    pub bucket: String,
    pub endpoint: Option<String>,
    pub key_template: String,
    pub object_size_bytes: u64,
    /// Mixed sizes (`seed --sizes`): object `i` has `size_cycle_bytes[i % len]` bytes;
    /// empty: every object has `object_size_bytes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_cycle_bytes: Vec<u64>,
    /// A size axis (`seed --object-sizes`): every object `i` of size `S` is at
    /// `s{S}/` + the key template (`crate::model::request::size_prefix`) and has `S`
    /// bytes; `object_size_bytes` is then the first of them. Empty: no axis.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_sizes_bytes: Vec<u64>,
    /// The random marker (128 bits, hex) every object written under this manifest
    /// carries as user metadata [`OWNER_METADATA`]: `clean` deletes only objects whose
    /// HEAD shows it, so a manifest naming a user's key, size and ETag is not enough.
    /// Absent in manifests written before markers: `clean` refuses those whole
    /// ([`valid_owner_marker`]), since nothing in them proves a key is `seed`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_marker: Option<String>,
    /// Keys these runs created (and only those), sorted.
    pub written: Vec<String>,
    /// The ETag each PUT returned, by key. A key without one (its PUT's answer never
    /// came: the seed was killed or failed) is proven by the ETag of the body s3sweep
    /// writes instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub etags: BTreeMap<String, String>,
    /// Keys that existed already and were left alone.
    pub skipped_existing: u64,
    /// The bandwidth probe's one large object, when a seed wrote one (`seed
    /// --probe-object-mib`); its key is in `written` too, so `clean` removes it,
    /// proven by this size and ETag rather than the template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_object: Option<ProbeObject>,
}

/// The one large object the bandwidth probe reads in ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeObject {
    pub key: String,
    pub size_bytes: u64,
    /// The ETag its PUT returned (absent: proven by the ETag of the body s3sweep writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
}

/// A manifest that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("reading the manifest: {0}")]
    Read(FileError),
    #[error("{path} is not an s3sweep manifest: {detail}; refusing to use or replace it (give another --manifest, or move it away)")]
    Parse { path: String, detail: String },
    #[error("{path} has schema {found:?}; this version reads {MANIFEST_SCHEMA:?}, {MANIFEST_SCHEMA_V2:?} and {MANIFEST_SCHEMA_V1:?}")]
    Schema { path: String, found: String },
    #[error("{path} records {field} {recorded}, not {given}: refusing to mix two seeds in one manifest (give another --manifest)")]
    Mismatch {
        path: String,
        field: &'static str,
        recorded: String,
        given: String,
    },
    #[error("writing the manifest: {0}")]
    Write(FileError),
    #[error("the journal {path}: {detail}")]
    Journal { path: String, detail: String },
    #[error("{path} records keys without an owner marker, which nothing can prove are s3sweep's: `s3sweep clean` refuses it; check and remove its keys by hand (see docs/reliability.md), or give another --manifest")]
    Unmarked { path: String },
    #[error("{path} is in use by another s3sweep seed or clean (its lock {lock} is held): wait for it, or give another --manifest")]
    Locked { path: String, lock: String },
}

impl SeedManifest {
    /// An empty manifest for `bucket` at `endpoint`.
    pub fn empty(bucket: &str, endpoint: Option<&str>, key_template: &str, object_size_bytes: u64) -> Self {
        SeedManifest {
            schema: MANIFEST_SCHEMA.into(),
            bucket: bucket.into(),
            endpoint: endpoint.map(str::to_string),
            key_template: key_template.into(),
            object_size_bytes,
            size_cycle_bytes: Vec::new(),
            object_sizes_bytes: Vec::new(),
            owner_marker: None,
            written: Vec::new(),
            etags: BTreeMap::new(),
            skipped_existing: 0,
            probe_object: None,
        }
    }

    /// The size seed writes object `index` with (its size cycle's, or the one size).
    pub fn size_of(&self, index: u32) -> u64 {
        size_in_cycle(&self.size_cycle_bytes, self.object_size_bytes, index)
    }

    /// The size seed wrote `key` with, if `template` (this manifest's key template)
    /// makes it: on a size axis, the size whose prefix the key is under.
    pub fn size_of_key(&self, template: &crate::plan::KeyTemplate, key: &str) -> Option<u64> {
        if self.object_sizes_bytes.is_empty() {
            return template.index_of(key).map(|i| self.size_of(i));
        }
        self.object_sizes_bytes
            .iter()
            .copied()
            .find(|&s| crate::plan::sized_template(template, s).index_of(key).is_some())
    }

    /// Refuses a manifest for another bucket, endpoint, key template or object size.
    pub fn check_same(&self, other: &SeedManifest, path: &Path) -> Result<(), ManifestError> {
        let norm = |e: &Option<String>| e.as_deref().map(|s| s.trim_end_matches('/').to_string());
        let shown = |e: &Option<String>| e.clone().unwrap_or_else(|| "AWS's own endpoints".into());
        let checks = [
            ("bucket", self.bucket.clone(), other.bucket.clone()),
            ("key template", self.key_template.clone(), other.key_template.clone()),
            (
                "object size",
                format!("{} bytes", self.object_size_bytes),
                format!("{} bytes", other.object_size_bytes),
            ),
            (
                "size cycle",
                format!("{:?}", self.size_cycle_bytes),
                format!("{:?}", other.size_cycle_bytes),
            ),
            (
                "object sizes",
                format!("{:?}", self.object_sizes_bytes),
                format!("{:?}", other.object_sizes_bytes),
            ),
        ];
        for (field, recorded, given) in checks {
            if recorded != given {
                return Err(mismatch(path, field, recorded, given));
            }
        }
        if let (Some(a), Some(b)) = (&self.owner_marker, &other.owner_marker) {
            if a != b {
                return Err(mismatch(path, "owner marker", a.clone(), b.clone()));
            }
        }
        if norm(&self.endpoint) != norm(&other.endpoint) {
            return Err(mismatch(
                path,
                "endpoint",
                shown(&self.endpoint),
                shown(&other.endpoint),
            ));
        }
        Ok(())
    }

    /// Adds `other`'s keys and ETags (same bucket, checked by the caller).
    pub fn absorb(&mut self, other: &SeedManifest) {
        self.written.extend(other.written.iter().cloned());
        self.written.sort();
        self.written.dedup();
        self.etags
            .extend(other.etags.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.skipped_existing += other.skipped_existing;
        if other.probe_object.is_some() {
            self.probe_object.clone_from(&other.probe_object);
        }
        if self.owner_marker.is_none() {
            self.owner_marker.clone_from(&other.owner_marker);
        }
        self.schema = MANIFEST_SCHEMA.into();
    }

    /// Writes the manifest whole or not at all (temporary file, fsync, rename).
    pub fn write_to(&self, path: &Path) -> Result<(), ManifestError> {
        let text = serde_json::to_string_pretty(self).expect("a manifest serializes");
        write_atomic(path, text.as_bytes()).map_err(ManifestError::Write)
    }
}

/// A fresh owner marker: 128 random bits, hex (from the OS-seeded thread generator).
pub fn new_owner_marker() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// True for a marker `seed` could have written: 32 lowercase hex digits. A manifest
/// whose marker is absent or anything else proves nothing and is refused by `clean`.
pub fn valid_owner_marker(marker: Option<&str>) -> bool {
    marker.is_some_and(|m| m.len() == 32 && m.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn mismatch(path: &Path, field: &'static str, recorded: String, given: String) -> ManifestError {
    ManifestError::Mismatch {
        path: path.display().to_string(),
        field,
        recorded,
        given,
    }
}

/// Reads and checks a manifest file (at most [`MAX_MANIFEST_BYTES`]).
pub fn read_manifest(path: &Path) -> Result<SeedManifest, ManifestError> {
    let shown = path.display().to_string();
    let text = read_capped_text(path, MAX_MANIFEST_BYTES, "a manifest").map_err(ManifestError::Read)?;
    let manifest: SeedManifest = serde_json::from_str(&text).map_err(|e| ManifestError::Parse {
        path: shown.clone(),
        detail: e.to_string(),
    })?;
    if ![MANIFEST_SCHEMA, MANIFEST_SCHEMA_V2, MANIFEST_SCHEMA_V1].contains(&manifest.schema.as_str()) {
        return Err(ManifestError::Schema {
            path: shown,
            found: manifest.schema,
        });
    }
    check_recorded_sizes(&manifest, &shown)?;
    check_recorded_names(&manifest, &shown)?;
    Ok(manifest)
}

/// Refuses a manifest naming a bucket or a key no request may carry
/// ([`crate::plan::names`]): the first bad one named.
fn check_recorded_names(m: &SeedManifest, path: &str) -> Result<(), ManifestError> {
    let bad = |detail: String| ManifestError::Parse {
        path: path.to_string(),
        detail,
    };
    crate::plan::check_bucket_name(&m.bucket).map_err(|e| bad(format!("its bucket: {e}")))?;
    let keys = m.written.iter().chain(m.probe_object.as_ref().map(|p| &p.key));
    for key in keys {
        crate::plan::names::check_key(key).map_err(|e| bad(format!("a key it records: {e}")))?;
    }
    Ok(())
}

/// Refuses a manifest recording a size over [`MAX_RECORDED_SIZE_BYTES`] (no seed
/// writes one; `clean` would compute an ETag over that many bytes).
fn check_recorded_sizes(m: &SeedManifest, path: &str) -> Result<(), ManifestError> {
    let sizes = [m.object_size_bytes]
        .into_iter()
        .chain(m.size_cycle_bytes.iter().copied())
        .chain(m.object_sizes_bytes.iter().copied())
        .chain(m.probe_object.as_ref().map(|p| p.size_bytes));
    match sizes.filter(|&s| s > MAX_RECORDED_SIZE_BYTES).max() {
        None => Ok(()),
        Some(s) => Err(ManifestError::Parse {
            path: path.to_string(),
            detail: format!("it records an object of {s} bytes, over S3's 5 GiB ({MAX_RECORDED_SIZE_BYTES} bytes)"),
        }),
    }
}

/// The manifest at `path` if there is one (refused if unusable), else `None`.
pub fn read_manifest_if_any(path: &Path) -> Result<Option<SeedManifest>, ManifestError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read_manifest(path).map(Some),
    }
}

/// The journal's path beside a manifest.
pub fn journal_path(manifest: &Path) -> PathBuf {
    let mut name = manifest.file_name().unwrap_or_default().to_os_string();
    name.push(".journal");
    manifest.with_file_name(name)
}

fn lock_path(manifest: &Path) -> PathBuf {
    let mut name = manifest.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    manifest.with_file_name(name)
}

/// The manifest's lock, held while it lives. Dropped, it removes its file while still
/// holding it, so no `.lock` stays beside a manifest; a run that opened the old file
/// meanwhile finds it gone and opens the new one ([`lock_manifest`]).
#[derive(Debug)]
pub struct ManifestLock {
    file: File,
    path: PathBuf,
}

impl Drop for ManifestLock {
    fn drop(&mut self) {
        // Only the file this lock holds: never one another run created since.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// True when `path` (not followed) is the file `file` has open.
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Takes the lock of the manifest at `path`, or says who holds it. The lock file is
/// opened without following a link (`O_NOFOLLOW`: a planted symlink is refused, not
/// written through) and created with mode 0600. A lock taken on a file its holder
/// removed meanwhile is taken again on the file now at the path.
pub fn lock_manifest(path: &Path) -> Result<ManifestLock, ManifestError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let lock = lock_path(path);
    for _ in 0..8 {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
            .map_err(|e| ManifestError::Journal {
                path: lock.display().to_string(),
                detail: e.to_string(),
            })?;
        if file.try_lock().is_err() {
            return Err(ManifestError::Locked {
                path: path.display().to_string(),
                lock: lock.display().to_string(),
            });
        }
        if same_file(&file, &lock) {
            return Ok(ManifestLock { file, path: lock });
        }
    }
    Err(ManifestError::Locked {
        path: path.display().to_string(),
        lock: lock.display().to_string(),
    })
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Entry {
    /// The first line: what the journal is about.
    Header(Box<SeedManifest>),
    /// A PUT of this key is about to be sent.
    Intent(String),
    /// The PUT created the key; the ETag it returned.
    Put { key: String, etag: Option<String> },
    /// The key existed (412): not ours.
    Exists(String),
}

/// The append-only journal of one seed run.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Starts a journal for a run described by `header` (its keys unused). A journal
    /// already there must have been folded first ([`fold_journal`]).
    pub fn create(manifest: &Path, header: &SeedManifest) -> Result<Journal, ManifestError> {
        let path = journal_path(manifest);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| journal_error(&path, e))?;
        let mut journal = Journal { file, path };
        let mut head = header.clone();
        head.written.clear();
        head.etags.clear();
        journal.append(&Entry::Header(Box::new(head)))?;
        journal.file.sync_all().map_err(|e| journal_error(&journal.path, e))?;
        Ok(journal)
    }

    fn append(&mut self, entry: &Entry) -> Result<(), ManifestError> {
        let mut line = serde_json::to_string(entry).expect("an entry serializes");
        line.push('\n');
        // One write per line, O_APPEND: a kill leaves whole lines and at most one cut.
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| journal_error(&self.path, e))
    }

    /// Records that a PUT of `key` is about to go out (before it does).
    pub fn intent(&mut self, key: &str) -> Result<(), ManifestError> {
        self.append(&Entry::Intent(key.into()))
    }

    /// Records that `key` was created, with its ETag.
    pub fn put(&mut self, key: &str, etag: Option<&str>) -> Result<(), ManifestError> {
        self.append(&Entry::Put {
            key: key.into(),
            etag: etag.map(str::to_string),
        })
    }

    /// Records that `key` existed already.
    pub fn exists(&mut self, key: &str) -> Result<(), ManifestError> {
        self.append(&Entry::Exists(key.into()))
    }

    /// Flushes the journal to disk.
    pub fn sync(&mut self) -> Result<(), ManifestError> {
        self.file.sync_data().map_err(|e| journal_error(&self.path, e))
    }
}

fn journal_error(path: &Path, e: impl std::fmt::Display) -> ManifestError {
    ManifestError::Journal {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

/// The journal beside `manifest` read into a manifest of what it shows written: keys
/// with a PUT (and their ETags), and keys whose PUT went out with no answer recorded
/// (they may exist; `clean` proves them or finds them gone). `None` without a journal.
pub fn read_journal(manifest: &Path) -> Result<Option<SeedManifest>, ManifestError> {
    let path = journal_path(manifest);
    if !path.exists() {
        return Ok(None);
    }
    let text = read_capped_text(&path, MAX_MANIFEST_BYTES, "a journal").map_err(ManifestError::Read)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Option<SeedManifest> = None;
    let mut outcome: BTreeMap<String, Option<Option<String>>> = BTreeMap::new();
    for (n, line) in lines.iter().enumerate() {
        let entry = match serde_json::from_str::<Entry>(line) {
            Ok(e) => e,
            // A kill mid-write cuts the last line only: the PUT it announced never left.
            Err(_) if n + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => return Err(journal_error(&path, format!("line {}: {e}", n + 1))),
        };
        if let Entry::Header(h) = entry {
            if out.is_some() {
                return Err(journal_error(&path, format!("line {}: a second header", n + 1)));
            }
            out = Some(*h);
            continue;
        }
        let Some(m) = out.as_mut() else {
            return Err(journal_error(&path, "no header line"));
        };
        match entry {
            Entry::Header(_) => {}
            Entry::Intent(k) => {
                outcome.entry(k).or_insert(None);
            }
            Entry::Put { key, etag } => {
                outcome.insert(key, Some(etag));
            }
            Entry::Exists(k) => {
                outcome.remove(&k);
                m.skipped_existing += 1;
            }
        }
    }
    let Some(mut m) = out else {
        return Ok(None);
    };
    for (key, result) in outcome {
        if let Some(Some(etag)) = result {
            m.etags.insert(key.clone(), etag);
        }
        m.written.push(key);
    }
    m.schema = MANIFEST_SCHEMA.into();
    check_recorded_sizes(&m, &path.display().to_string())?;
    check_recorded_names(&m, &path.display().to_string())?;
    Ok(Some(m))
}

/// Folds the journal beside `manifest` (if any) into `into` and returns true if there
/// was one; the caller saves the manifest, then calls [`remove_journal`].
pub fn fold_journal(path: &Path, into: &mut SeedManifest) -> Result<bool, ManifestError> {
    match read_journal(path)? {
        None => Ok(false),
        Some(j) => {
            j.check_same(into, &journal_path(path))?;
            into.absorb(&j);
            Ok(true)
        }
    }
}

/// Removes the journal once the manifest holding its keys is saved.
pub fn remove_journal(path: &Path) -> Result<(), ManifestError> {
    let j = journal_path(path);
    match std::fs::remove_file(&j) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(journal_error(&j, e)),
        _ => Ok(()),
    }
}

/// Object `index`'s size: `cycle[index % len]`, or `one` when the cycle is empty.
pub fn size_in_cycle(cycle: &[u64], one: u64, index: u32) -> u64 {
    if cycle.is_empty() {
        one
    } else {
        cycle[index as usize % cycle.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("s3sweep-manifest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_journal_names_every_key_a_put_went_out_for() {
        let d = dir("journal");
        let m = d.join("m.json");
        let header = SeedManifest::empty("b-1", Some("http://127.0.0.1:1"), "t/{i}", 10);
        let mut j = Journal::create(&m, &header).unwrap();
        j.intent("t/0").unwrap();
        j.put("t/0", Some("\"e0\"")).unwrap();
        j.intent("t/1").unwrap();
        j.exists("t/1").unwrap();
        j.intent("t/2").unwrap();
        drop(j);
        // A cut last line (a kill mid-write) is ignored.
        let mut f = OpenOptions::new().append(true).open(journal_path(&m)).unwrap();
        f.write_all(b"{\"intent\":\"t/").unwrap();
        let back = read_journal(&m).unwrap().unwrap();
        assert_eq!(back.written, vec!["t/0", "t/2"]);
        assert_eq!(back.etags.get("t/0").map(String::as_str), Some("\"e0\""));
        assert_eq!(back.skipped_existing, 1);
        let mut into = SeedManifest::empty("b-1", Some("http://127.0.0.1:1/"), "t/{i}", 10);
        assert!(fold_journal(&m, &mut into).unwrap());
        assert_eq!(into.written.len(), 2);
        let mut other = SeedManifest::empty("b-2", None, "t/{i}", 10);
        let err = fold_journal(&m, &mut other).unwrap_err();
        assert!(err.to_string().contains("records bucket b-1, not b-2"), "{err}");
        remove_journal(&m).unwrap();
        assert!(read_journal(&m).unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_second_holder_of_the_lock_is_refused() {
        let d = dir("lock");
        let m = d.join("m.json");
        let held = lock_manifest(&m).unwrap();
        let err = lock_manifest(&m).unwrap_err();
        assert!(err.to_string().contains("in use by another"), "{err}");
        drop(held);
        // Released, the lock leaves no file beside the manifest.
        assert!(!lock_path(&m).exists());
        let again = lock_manifest(&m).unwrap();
        assert!(lock_path(&m).exists());
        drop(again);
        assert!(!lock_path(&m).exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_symlink_at_the_lock_is_not_followed_and_the_lock_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = dir("lock-link");
        let m = d.join("m.json");
        let target = d.join("victim");
        std::fs::write(&target, "the user's").unwrap();
        std::os::unix::fs::symlink(&target, lock_path(&m)).unwrap();
        let err = lock_manifest(&m).unwrap_err();
        assert!(matches!(err, ManifestError::Journal { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "the user's");
        std::fs::remove_file(lock_path(&m)).unwrap();
        let held = lock_manifest(&m).unwrap();
        let mode = std::fs::metadata(lock_path(&m)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(held);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unusable_manifests_are_refused_not_replaced() {
        let d = dir("refuse");
        let m = d.join("m.json");
        std::fs::write(&m, "{\"truncated\": ").unwrap();
        let err = read_manifest_if_any(&m).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{err}");
        assert_eq!(std::fs::read_to_string(&m).unwrap(), "{\"truncated\": ");
        assert!(read_manifest_if_any(&d.join("none.json")).unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sizes_over_5_gib_are_refused_before_anything_is_sized_from_them() {
        let d = dir("sizes");
        let m = d.join("m.json");
        let manifest = |size: u64, cycle: &str| {
            format!(
                r#"{{"schema": "{MANIFEST_SCHEMA}", "bucket": "b-1", "endpoint": null, "key_template": "t/{{i}}", "object_size_bytes": {size}, "size_cycle_bytes": [{cycle}], "written": ["t/0"], "etags": {{}}, "skipped_existing": 0}}"#
            )
        };
        for (size, cycle) in [(1u64 << 40, ""), (8, "8, 5368709121")] {
            std::fs::write(&m, manifest(size, cycle)).unwrap();
            let err = read_manifest(&m).unwrap_err().to_string();
            assert!(err.contains("over S3's 5 GiB"), "{size} {cycle}: {err}");
        }
        std::fs::write(&m, manifest(MAX_RECORDED_SIZE_BYTES, "")).unwrap();
        assert_eq!(read_manifest(&m).unwrap().object_size_bytes, MAX_RECORDED_SIZE_BYTES);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

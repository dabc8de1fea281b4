//! The embedded server's object store: buckets of objects held in memory, behind the
//! s3s [`S3`] trait with only the operations s3sweep and its users need (CreateBucket,
//! HeadBucket, PutObject, GetObject, HeadObject, ListObjectsV2, DeleteObject(s), and
//! CreateSession for directory buckets, from the [`Sessions`] table it holds).
//! Everything else answers `NotImplemented`. It knows nothing of latency or faults:
//! wrappers in [`super::latency`] add those.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};

use super::express::ExpressAuth;
use super::sessions::{SessionMode, Sessions};
use crate::plan::is_directory_bucket;

/// One stored object.
#[derive(Debug, Clone)]
struct StoredObject {
    data: Bytes,
    etag: String,
    last_modified: SystemTime,
}

type Buckets = HashMap<String, BTreeMap<String, StoredObject>>;

/// In-memory buckets, and the S3 Express sessions of its directory buckets. Cheap to
/// clone; clones share the data.
#[derive(Debug, Clone, Default)]
pub struct MemStore {
    buckets: Arc<RwLock<Buckets>>,
    sessions: Arc<Sessions>,
}

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The S3 Express sessions handed out for its directory buckets.
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    /// Creates a bucket if it does not exist; true when it was created.
    pub fn ensure_bucket(&self, name: &str) -> bool {
        let mut b = self.buckets.write().unwrap_or_else(|e| e.into_inner());
        if b.contains_key(name) {
            false
        } else {
            b.insert(name.to_string(), BTreeMap::new());
            true
        }
    }

    /// Number of objects in a bucket (None: no such bucket).
    pub fn object_count(&self, bucket: &str) -> Option<usize> {
        self.read().get(bucket).map(BTreeMap::len)
    }

    /// Stores an object directly, without a request (for load tests that need many
    /// objects fast). Creates the bucket if needed.
    pub fn insert(&self, bucket: &str, key: &str, data: Bytes) {
        let object = StoredObject {
            etag: etag_of(&data),
            data,
            last_modified: SystemTime::now(),
        };
        self.write()
            .entry(bucket.to_string())
            .or_default()
            .insert(key.to_string(), object);
    }

    /// The keys of a bucket, sorted (for tests; None: no such bucket).
    pub fn keys(&self, bucket: &str) -> Option<Vec<String>> {
        self.read().get(bucket).map(|b| b.keys().cloned().collect())
    }

    /// Whether an object exists.
    pub fn contains(&self, bucket: &str, key: &str) -> bool {
        self.read().get(bucket).is_some_and(|b| b.contains_key(key))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Buckets> {
        self.buckets.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Buckets> {
        self.buckets.write().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, bucket: &str, key: &str) -> S3Result<StoredObject> {
        let buckets = self.read();
        let objects = buckets.get(bucket).ok_or_else(|| s3_error!(NoSuchBucket))?;
        objects.get(key).cloned().ok_or_else(|| s3_error!(NoSuchKey))
    }
}

fn etag_of(data: &[u8]) -> String {
    // Not MD5 (S3's ETag for single-part uploads): a cheap 64-bit FNV-1a is enough for a
    // test server and keeps PutObject's CPU low. Clients must not compare it to MD5.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}{:016x}", data.len())
}

#[async_trait::async_trait]
impl S3 for MemStore {
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        let name = req.input.bucket;
        let mut buckets = self.write();
        if buckets.contains_key(&name) {
            return Err(s3_error!(BucketAlreadyOwnedByYou));
        }
        buckets.insert(name.clone(), BTreeMap::new());
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{name}")),
        }))
    }

    async fn create_session(&self, req: S3Request<CreateSessionInput>) -> S3Result<S3Response<CreateSessionOutput>> {
        let bucket = &req.input.bucket;
        if !self.read().contains_key(bucket) {
            return Err(s3_error!(NoSuchBucket));
        }
        if !is_directory_bucket(bucket) {
            return Err(s3_error!(
                InvalidRequest,
                "CreateSession is for directory buckets (NAME--ZONE--x-s3), not {bucket}"
            ));
        }
        if matches!(req.extensions.get::<ExpressAuth>(), Some(ExpressAuth { mode: Some(_) })) {
            return Err(s3_error!(
                AccessDenied,
                "CreateSession must be signed with the account's keys, not a session"
            ));
        }
        let mode = SessionMode::parse(req.input.session_mode.as_ref().map(|m| m.as_str()))
            .map_err(|e| s3_error!(InvalidArgument, "x-amz-create-session-mode: {e}"))?;
        let session = self.sessions.create(bucket, mode);
        Ok(S3Response::new(CreateSessionOutput {
            credentials: SessionCredentials {
                access_key_id: session.access_key_id,
                secret_access_key: session.secret_access_key,
                session_token: session.token,
                expiration: Timestamp::from(session.expires),
            },
            bucket_key_enabled: None,
            ssekms_encryption_context: None,
            ssekms_key_id: None,
            server_side_encryption: None,
        }))
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        if self.read().contains_key(&req.input.bucket) {
            Ok(S3Response::new(HeadBucketOutput::default()))
        } else {
            Err(s3_error!(NoSuchBucket))
        }
    }

    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        if !self.read().contains_key(&input.bucket) {
            return Err(s3_error!(NoSuchBucket));
        }
        let mut data = BytesMut::with_capacity(input.content_length.unwrap_or(0).clamp(0, 64 << 20) as usize);
        if let Some(mut body) = input.body {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| s3_error!(IncompleteBody, "reading the body failed: {e}"))?;
                data.extend_from_slice(&chunk);
            }
        }
        if let Some(len) = input.content_length {
            if len != data.len() as i64 {
                return Err(s3_error!(IncompleteBody, "expected {len} bytes, got {}", data.len()));
            }
        }
        let data = data.freeze();
        let etag = etag_of(&data);
        let size = data.len() as i64;
        let object = StoredObject {
            data,
            etag: etag.clone(),
            last_modified: SystemTime::now(),
        };
        let mut buckets = self.write();
        let objects = buckets.get_mut(&input.bucket).ok_or_else(|| s3_error!(NoSuchBucket))?;
        objects.insert(input.key, object);
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(etag)),
            size: Some(size),
            ..Default::default()
        }))
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        if input.part_number.is_some() {
            return Err(s3_error!(
                NotImplemented,
                "GETs by part number are not supported by the embedded server"
            ));
        }
        let object = self.get(&input.bucket, &input.key)?;
        let full = object.data.len() as u64;
        // A ranged GET (the bandwidth probe reads its object in ranges) gets 206 and
        // its slice.
        let (data, content_range) = match input.range {
            Some(range) => {
                let r = range.check(full).map_err(|_| s3_error!(InvalidRange))?;
                let header = format!("bytes {}-{}/{full}", r.start, r.end - 1);
                (object.data.slice(r.start as usize..r.end as usize), Some(header))
            }
            None => (object.data, None),
        };
        let len = data.len() as i64;
        Ok(S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::from(s3s::Body::from(data))),
            content_length: Some(len),
            content_range,
            e_tag: Some(ETag::Strong(object.etag)),
            last_modified: Some(Timestamp::from(object.last_modified)),
            ..Default::default()
        }))
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let object = self.get(&req.input.bucket, &req.input.key)?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(object.data.len() as i64),
            e_tag: Some(ETag::Strong(object.etag)),
            last_modified: Some(Timestamp::from(object.last_modified)),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let max_keys = input.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
        let prefix = input.prefix.clone().unwrap_or_default();
        // The continuation token is the last key returned; start_after works the same.
        let after = input.continuation_token.clone().or_else(|| input.start_after.clone());
        let buckets = self.read();
        let objects = buckets.get(&input.bucket).ok_or_else(|| s3_error!(NoSuchBucket))?;
        let mut contents = Vec::new();
        let mut truncated = false;
        let iter = objects
            .range::<String, _>((
                after
                    .as_ref()
                    .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
                std::ops::Bound::Unbounded,
            ))
            .filter(|(k, _)| k.starts_with(&prefix));
        for (key, object) in iter {
            if contents.len() == max_keys {
                truncated = true;
                break;
            }
            contents.push(Object {
                key: Some(key.clone()),
                size: Some(object.data.len() as i64),
                e_tag: Some(ETag::Strong(object.etag.clone())),
                last_modified: Some(Timestamp::from(object.last_modified)),
                ..Default::default()
            });
        }
        let next = if truncated {
            contents.last().and_then(|o| o.key.clone())
        } else {
            None
        };
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: input.prefix,
            max_keys: Some(max_keys as i32),
            key_count: Some(contents.len() as i32),
            continuation_token: input.continuation_token,
            start_after: input.start_after,
            is_truncated: Some(truncated),
            next_continuation_token: next,
            contents: Some(contents),
            ..Default::default()
        }))
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        let mut buckets = self.write();
        let objects = buckets
            .get_mut(&req.input.bucket)
            .ok_or_else(|| s3_error!(NoSuchBucket))?;
        objects.remove(&req.input.key);
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        let mut buckets = self.write();
        let objects = buckets.get_mut(&input.bucket).ok_or_else(|| s3_error!(NoSuchBucket))?;
        let mut deleted = Vec::new();
        for id in input.delete.objects {
            objects.remove(&id.key);
            deleted.push(DeletedObject {
                key: Some(id.key),
                ..Default::default()
            });
        }
        let quiet = input.delete.quiet.unwrap_or(false);
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: if quiet { None } else { Some(deleted) },
            ..Default::default()
        }))
    }
}

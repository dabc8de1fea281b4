//! The embedded server's object store: buckets of objects held in memory, behind the
//! s3s [`S3`] trait with the operations s3sweep and the tools users point at the lab
//! need (see docs/lab.md for the list): CreateBucket, HeadBucket, ListBuckets,
//! PutObject, GetObject, HeadObject, ListObjects (v1 and v2, [`super::listing`]),
//! DeleteObject(s), and CreateSession for directory buckets, from the [`Sessions`]
//! table it holds. ETags, `Content-MD5` and conditional requests are S3's
//! ([`super::conditions`]); a PUT bigger than [`StoreLimits::max_object_bytes`] is
//! refused with `EntityTooLarge`, and one that would take the store past
//! [`StoreLimits::max_store_bytes`] with 507 `InsufficientStorage`: the cap counts
//! each object's body, key, user metadata and [`OBJECT_OVERHEAD_BYTES`], and a PUT's
//! room is reserved from its `Content-Length` before its body is read (a body without
//! one reserves as it arrives). A body not read whole within
//! [`StoreLimits::body_read_timeout`] is refused with 400 `RequestTimeout`, its room
//! given back and its connection closed. Everything else
//! answers s3s's `NotImplemented` naming the operation. It knows nothing of latency
//! or faults: wrappers in [`super::latency`] add those. On request
//! ([`MemStore::count_gets`]) it counts the GETs of each key, so a test can see every
//! key read exactly once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};

use super::conditions::{self, check_content_md5, etag_of, Current};
use super::express::ExpressAuth;
use super::listing::{self, Entry, PageRequest};
use super::sessions::{SessionMode, Sessions};
use crate::plan::is_directory_bucket;

/// One stored object: its body, ETag, time and the user metadata (`x-amz-meta-*`)
/// its PUT sent, returned by HEAD and GET as S3 does.
#[derive(Debug, Clone)]
struct StoredObject {
    data: Bytes,
    etag: String,
    last_modified: SystemTime,
    metadata: Option<Arc<Metadata>>,
}

impl StoredObject {
    fn new(data: Bytes) -> Self {
        StoredObject {
            etag: etag_of(&data),
            data,
            last_modified: SystemTime::now(),
            metadata: None,
        }
    }

    fn user_metadata(&self) -> Option<Metadata> {
        self.metadata.as_deref().cloned()
    }

    /// What the object counts against the store's cap when stored at `key`.
    fn charge(&self, key: &str) -> u64 {
        let metadata: usize = self
            .metadata
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| k.len() + v.len())
            .sum();
        self.data.len() as u64 + charge_without_body(key, metadata)
    }

    fn current(&self) -> Current<'_> {
        Current {
            etag: &self.etag,
            last_modified: self.last_modified,
            size_bytes: self.data.len() as u64,
        }
    }
}

/// One bucket: when it was made, and its objects in key order.
#[derive(Debug)]
struct Bucket {
    created: SystemTime,
    objects: BTreeMap<String, StoredObject>,
}

impl Bucket {
    fn new() -> Self {
        Bucket {
            created: SystemTime::now(),
            objects: BTreeMap::new(),
        }
    }
}

/// Bytes counted for every object beyond its body, key and metadata: its map entry,
/// ETag and time (an estimate of what the store really spends per object).
pub(crate) const OBJECT_OVERHEAD_BYTES: u64 = 256;

/// What an object of no body at `key` with `metadata_bytes` of metadata counts.
fn charge_without_body(key: &str, metadata_bytes: usize) -> u64 {
    key.len() as u64 + metadata_bytes as u64 + OBJECT_OVERHEAD_BYTES
}

/// Every bucket, the bytes their objects hold together, what they count against the
/// cap, and the room reserved for PUTs whose bodies are being read.
#[derive(Debug, Default)]
struct Buckets {
    map: HashMap<String, Bucket>,
    stored_bytes: u64,
    charged_bytes: u64,
    reserved_bytes: u64,
}

impl Buckets {
    fn bucket(&self, name: &str) -> S3Result<&Bucket> {
        self.map.get(name).ok_or_else(|| s3_error!(NoSuchBucket))
    }

    fn bucket_mut(&mut self, name: &str) -> S3Result<&mut Bucket> {
        self.map.get_mut(name).ok_or_else(|| s3_error!(NoSuchBucket))
    }

    /// Stores `object` at `key`, keeping the byte count.
    fn put(&mut self, bucket: &str, key: String, object: StoredObject) -> S3Result<()> {
        let added = object.data.len() as u64;
        let charged = object.charge(&key);
        let objects = &mut self.bucket_mut(bucket)?.objects;
        let replaced = objects.insert(key.clone(), object);
        let (removed, uncharged) = replaced.map_or((0, 0), |o| (o.data.len() as u64, o.charge(&key)));
        self.stored_bytes = self.stored_bytes + added - removed;
        self.charged_bytes = self.charged_bytes + charged - uncharged;
        Ok(())
    }

    /// Removes `key`; true when it was there.
    fn remove(&mut self, bucket: &str, key: &str) -> S3Result<bool> {
        let removed = self.bucket_mut(bucket)?.objects.remove(key);
        if let Some(o) = &removed {
            self.stored_bytes -= o.data.len() as u64;
            self.charged_bytes -= o.charge(key);
        }
        Ok(removed.is_some())
    }
}

/// How much the store takes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Largest object a PUT may carry, in bytes (S3's single PUT: 5 GiB).
    pub max_object_bytes: u64,
    /// Most bytes all objects together may count: bodies, keys, metadata and
    /// [`OBJECT_OVERHEAD_BYTES`] each.
    pub max_store_bytes: u64,
    /// Longest a PUT's body may take to arrive whole (default 30 s).
    pub body_read_timeout: Duration,
}

impl Default for StoreLimits {
    /// 64 MiB per object, 1 GiB in all: far above what s3sweep writes (objects of
    /// kilobytes), far below what would take a laptop's memory.
    fn default() -> Self {
        StoreLimits {
            max_object_bytes: 64 << 20,
            max_store_bytes: 1 << 30,
            body_read_timeout: Duration::from_secs(30),
        }
    }
}

/// In-memory buckets, and the S3 Express sessions of its directory buckets. Cheap to
/// clone; clones share the data.
#[derive(Debug, Clone, Default)]
pub struct MemStore {
    buckets: Arc<RwLock<Buckets>>,
    sessions: Arc<Sessions>,
    limits: StoreLimits,
    /// GETs per bucket and key, once [`MemStore::count_gets`] is called (no cost before).
    gets: Arc<OnceLock<Mutex<GetTally>>>,
    /// Buckets placed in another region than the lab's (HeadBucket answers it).
    regions: Arc<super::regions::BucketRegions>,
}

/// GETs answered per (bucket, key).
pub type GetTally = BTreeMap<(String, String), u64>;

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that takes in at most `limits`.
    pub fn with_limits(limits: StoreLimits) -> Self {
        MemStore {
            limits,
            ..Self::default()
        }
    }

    /// From now on, counts the GETs answered for each key (whole or ranged, with or
    /// without a body: every GetObject that finds its object).
    pub fn count_gets(&self) {
        self.gets.get_or_init(Mutex::default);
    }

    /// The GETs counted per (bucket, key) since [`MemStore::count_gets`]; empty before.
    pub fn gets(&self) -> GetTally {
        self.gets
            .get()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default()
    }

    /// The region of each bucket (`serve --bucket-region`).
    pub fn regions(&self) -> &super::regions::BucketRegions {
        &self.regions
    }

    /// The S3 Express sessions handed out for its directory buckets.
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    /// Creates a bucket if it does not exist; true when it was created.
    pub fn ensure_bucket(&self, name: &str) -> bool {
        let mut b = self.write();
        if b.map.contains_key(name) {
            false
        } else {
            b.map.insert(name.to_string(), Bucket::new());
            true
        }
    }

    /// Number of objects in a bucket (None: no such bucket).
    pub fn object_count(&self, bucket: &str) -> Option<usize> {
        self.read().map.get(bucket).map(|b| b.objects.len())
    }

    /// Bytes all objects' bodies hold together.
    pub fn stored_bytes(&self) -> u64 {
        self.read().stored_bytes
    }

    /// What all objects count against the cap (bodies, keys, metadata, overhead),
    /// and the room reserved for PUTs being read.
    pub fn charged_bytes(&self) -> (u64, u64) {
        let b = self.read();
        (b.charged_bytes, b.reserved_bytes)
    }

    /// Stores an object directly, without a request (for load tests that need many
    /// objects fast). Creates the bucket if needed; not held to the limits.
    pub fn insert(&self, bucket: &str, key: &str, data: Bytes) {
        let mut buckets = self.write();
        buckets.map.entry(bucket.to_string()).or_insert_with(Bucket::new);
        let _ = buckets.put(bucket, key.to_string(), StoredObject::new(data));
    }

    /// The keys of a bucket, sorted (for tests; None: no such bucket).
    pub fn keys(&self, bucket: &str) -> Option<Vec<String>> {
        self.read().map.get(bucket).map(|b| b.objects.keys().cloned().collect())
    }

    /// Whether an object exists.
    pub fn contains(&self, bucket: &str, key: &str) -> bool {
        self.read().map.get(bucket).is_some_and(|b| b.objects.contains_key(key))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Buckets> {
        self.buckets.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Buckets> {
        self.buckets.write().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, bucket: &str, key: &str) -> S3Result<StoredObject> {
        let buckets = self.read();
        let objects = &buckets.bucket(bucket)?.objects;
        objects.get(key).cloned().ok_or_else(|| s3_error!(NoSuchKey))
    }

    /// Reads a PUT's body within the body timeout, refusing it past the object limit
    /// or the room `room` can reserve as soon as it gets there.
    async fn read_body(
        &self,
        body: Option<StreamingBlob>,
        content_length: Option<i64>,
        room: &mut Reservation,
    ) -> S3Result<Bytes> {
        let timeout = self.limits.body_read_timeout;
        match tokio::time::timeout(timeout, self.read_body_now(body, content_length, room)).await {
            Ok(read) => read,
            Err(_) => {
                let mut err = S3Error::with_message(
                    S3ErrorCode::Custom("RequestTimeout".into()),
                    format!(
                        "Your socket connection to the server was not read from or written to within the timeout period ({} ms for the body).",
                        timeout.as_millis()
                    ),
                );
                err.set_status_code(http::StatusCode::BAD_REQUEST);
                Err(err)
            }
        }
    }

    async fn read_body_now(
        &self,
        body: Option<StreamingBlob>,
        content_length: Option<i64>,
        room: &mut Reservation,
    ) -> S3Result<Bytes> {
        let limit = self.limits.max_object_bytes;
        let too_large = || self.too_large();
        if content_length.is_some_and(|len| len as u64 > limit) {
            return Err(too_large());
        }
        let mut data = BytesMut::with_capacity(content_length.unwrap_or(0).clamp(0, 64 << 20) as usize);
        if let Some(mut body) = body {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(body_error)?;
                if (data.len() + chunk.len()) as u64 > limit {
                    return Err(too_large());
                }
                room.grow_to(self, (data.len() + chunk.len()) as u64)?;
                data.extend_from_slice(&chunk);
            }
        }
        if let Some(len) = content_length {
            if len != data.len() as i64 {
                return Err(s3_error!(IncompleteBody, "expected {len} bytes, got {}", data.len()));
            }
        }
        Ok(data.freeze())
    }

    fn too_large(&self) -> S3Error {
        let limit = self.limits.max_object_bytes;
        s3_error!(
            EntityTooLarge,
            "Your proposed upload exceeds the maximum allowed size ({limit} bytes: serve --max-object-bytes)"
        )
    }

    /// Refuses a PUT that would take the store past its cap: what is charged, less
    /// what the object it replaces counted, plus what it counts, plus the room other
    /// PUTs have reserved (`own_reserved`: this PUT's own reservation, not counted).
    fn check_room(&self, buckets: &Buckets, replaced: u64, added: u64, own_reserved: u64) -> S3Result<()> {
        let others = buckets.reserved_bytes.saturating_sub(own_reserved);
        let after = (buckets.charged_bytes - replaced)
            .saturating_add(added)
            .saturating_add(others);
        if after <= self.limits.max_store_bytes {
            return Ok(());
        }
        Err(store_full(buckets, self.limits.max_store_bytes))
    }
}

/// 507 `InsufficientStorage`, with what is held and reserved.
fn store_full(buckets: &Buckets, cap: u64) -> S3Error {
    let mut err = S3Error::with_message(
        S3ErrorCode::Custom("InsufficientStorage".into()),
        format!(
            "the lab's store is full: {} of {cap} bytes counted (bodies, keys, metadata and {OBJECT_OVERHEAD_BYTES} bytes per object), {} reserved for PUTs being read (serve --max-store-bytes)",
            buckets.charged_bytes, buckets.reserved_bytes
        ),
    );
    err.set_status_code(http::StatusCode::INSUFFICIENT_STORAGE);
    err
}

/// Room a PUT holds in the store while its body is read: reserved up front from what
/// it declares, grown as a body without a length arrives, given back on drop.
struct Reservation {
    buckets: Arc<RwLock<Buckets>>,
    bytes: u64,
    /// What the key and metadata count (the part not from the body).
    fixed: u64,
    /// What the object the PUT replaces counts (given back when it is stored).
    credit: u64,
}

impl Reservation {
    /// Reserves `fixed + body_bytes` for a PUT at `key` of `bucket`, or refuses with
    /// 507 when that does not fit.
    fn take(store: &MemStore, (bucket, key): (&str, &str), fixed: u64, body_bytes: u64) -> S3Result<Reservation> {
        let credit = {
            let b = store.read();
            let current = b.map.get(bucket).and_then(|b| b.objects.get(key));
            current.map_or(0, |o| o.charge(key))
        };
        let mut room = Reservation {
            buckets: store.buckets.clone(),
            bytes: 0,
            fixed,
            credit,
        };
        room.grow_to(store, body_bytes)?;
        Ok(room)
    }

    /// Grows the reservation to `body_bytes` of body (no-op when it holds that).
    fn grow_to(&mut self, store: &MemStore, body_bytes: u64) -> S3Result<()> {
        let want = self.fixed.saturating_add(body_bytes);
        if want <= self.bytes {
            return Ok(());
        }
        let mut b = store.write();
        let others = b.reserved_bytes - self.bytes;
        let after = b
            .charged_bytes
            .saturating_sub(self.credit)
            .saturating_add(others)
            .saturating_add(want);
        if after > store.limits.max_store_bytes {
            return Err(store_full(&b, store.limits.max_store_bytes));
        }
        b.reserved_bytes += want - self.bytes;
        self.bytes = want;
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut b = self.buckets.write().unwrap_or_else(|e| e.into_inner());
        b.reserved_bytes -= self.bytes;
    }
}

/// An error reading a request body: a payload hash that did not match (s3s's check on
/// the ordinary path, [`super::express::PayloadCheck`] on the S3 Express path) is
/// S3's `XAmzContentSHA256Mismatch`.
fn body_error(e: s3s::StdError) -> S3Error {
    let text = e.to_string();
    if text.contains(super::express::PAYLOAD_MISMATCH) || text.contains("Sha256Mismatch") {
        let mut err = S3Error::with_message(
            S3ErrorCode::Custom("XAmzContentSHA256Mismatch".into()),
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        );
        err.set_status_code(http::StatusCode::BAD_REQUEST);
        return err;
    }
    s3_error!(IncompleteBody, "reading the body failed: {text}")
}

/// An object as a listing shows it.
fn listed(key: &str, object: &StoredObject, url: bool) -> Object {
    Object {
        key: Some(if url { listing::url_encode(key) } else { key.to_string() }),
        size: Some(object.data.len() as i64),
        e_tag: Some(ETag::Strong(object.etag.clone())),
        last_modified: Some(Timestamp::from(object.last_modified)),
        storage_class: Some(ObjectStorageClass::from_static(ObjectStorageClass::STANDARD)),
        ..Default::default()
    }
}

/// A listing page split into S3's two lists: objects and common prefixes.
fn split_page(page: listing::Page<'_, StoredObject>, url: bool) -> (Vec<Object>, Vec<CommonPrefix>) {
    let mut contents = Vec::new();
    let mut prefixes = Vec::new();
    for entry in page.entries {
        match entry {
            Entry::Key(key, object) => contents.push(listed(key, object, url)),
            Entry::CommonPrefix(p) => prefixes.push(CommonPrefix {
                prefix: Some(if url { listing::url_encode(&p) } else { p }),
            }),
        }
    }
    (contents, prefixes)
}

fn wants_url(encoding: Option<&EncodingType>) -> bool {
    encoding.is_some_and(|e| e.as_str() == EncodingType::URL)
}

#[async_trait::async_trait]
impl S3 for MemStore {
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        let name = req.input.bucket;
        let mut buckets = self.write();
        if buckets.map.contains_key(&name) {
            return Err(s3_error!(BucketAlreadyOwnedByYou));
        }
        if buckets.map.len() >= super::caps::MAX_BUCKETS {
            return Err(super::caps::too_many_buckets());
        }
        buckets.map.insert(name.clone(), Bucket::new());
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{name}")),
        }))
    }

    async fn create_session(&self, req: S3Request<CreateSessionInput>) -> S3Result<S3Response<CreateSessionOutput>> {
        let bucket = &req.input.bucket;
        if !self.read().map.contains_key(bucket) {
            return Err(s3_error!(NoSuchBucket));
        }
        if !is_directory_bucket(bucket) {
            return Err(s3_error!(
                InvalidRequest,
                "CreateSession is for directory buckets (NAME--ZONE--x-s3), not {bucket}"
            ));
        }
        if matches!(
            req.extensions.get::<ExpressAuth>(),
            Some(ExpressAuth { mode: Some(_), .. })
        ) {
            return Err(s3_error!(
                AccessDenied,
                "CreateSession must be signed with the account's keys, not a session"
            ));
        }
        let mode = SessionMode::parse(req.input.session_mode.as_ref().map(|m| m.as_str()))
            .map_err(|e| s3_error!(InvalidArgument, "x-amz-create-session-mode: {e}"))?;
        let session = self
            .sessions
            .create(bucket, mode)
            .ok_or_else(super::caps::too_many_sessions)?;
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
        self.read().bucket(&req.input.bucket)?;
        let signed = req.region.as_ref().map(|r| r.as_str());
        let region = self.regions.check(&req.input.bucket, signed)?;
        Ok(S3Response::new(HeadBucketOutput {
            bucket_region: Some(region),
            ..Default::default()
        }))
    }

    async fn list_buckets(&self, _req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        let buckets = self.read();
        let mut list: Vec<s3s::dto::Bucket> = buckets
            .map
            .iter()
            .map(|(name, b)| s3s::dto::Bucket {
                name: Some(name.clone()),
                creation_date: Some(Timestamp::from(b.created)),
                bucket_region: Some(self.regions.region_of(name)),
            })
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(list),
            owner: Some(Owner {
                display_name: Some(super::LOCAL_ACCESS_KEY.into()),
                id: Some(super::LOCAL_ACCESS_KEY.into()),
            }),
            ..Default::default()
        }))
    }

    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        self.read().bucket(&input.bucket)?;
        let metadata = input.metadata.filter(|m| !m.is_empty()).map(Arc::new);
        let metadata_bytes = metadata
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| k.len() + v.len())
            .sum();
        let declared = input.content_length.unwrap_or(0).max(0) as u64;
        if declared > self.limits.max_object_bytes {
            return Err(self.too_large());
        }
        let mut room = Reservation::take(
            self,
            (&input.bucket, &input.key),
            charge_without_body(&input.key, metadata_bytes),
            declared,
        )?;
        let data = self.read_body(input.body, input.content_length, &mut room).await?;
        check_content_md5(input.content_md5.as_deref(), &data)?;
        let object = StoredObject {
            metadata,
            ..StoredObject::new(data)
        };
        let (etag, size) = (object.etag.clone(), object.data.len() as i64);
        // The conditions are checked under the same lock as the write: no PUT slips
        // in between (S3's conditional writes are atomic).
        let mut buckets = self.write();
        let current = buckets.bucket(&input.bucket)?.objects.get(&input.key);
        conditions::check_write(
            input.if_none_match.as_ref(),
            input.if_match.as_ref(),
            current.map(StoredObject::current),
        )?;
        let replaced = current.map_or(0, |o| o.charge(&input.key));
        self.check_room(&buckets, replaced, object.charge(&input.key), room.bytes)?;
        buckets.put(&input.bucket, input.key, object)?;
        drop(buckets);
        drop(room);
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
        if let Some(tally) = self.gets.get() {
            let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
            *t.entry((input.bucket.clone(), input.key.clone())).or_insert(0) += 1;
        }
        conditions::check_read(&conditions::ReadConditions::of_get(&input), object.current())?;
        let full = object.data.len() as u64;
        // A ranged GET (the bandwidth probe reads its object in ranges) gets 206 and
        // its slice.
        let (data, content_range) = match input.range {
            Some(range) => {
                let r = range.check(full).map_err(|_| s3_error!(InvalidRange))?;
                let header = format!("bytes {}-{}/{full}", r.start, r.end - 1);
                (object.data.slice(r.start as usize..r.end as usize), Some(header))
            }
            None => (object.data.clone(), None),
        };
        let len = data.len() as i64;
        Ok(S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::from(s3s::Body::from(data))),
            content_length: Some(len),
            content_range,
            metadata: object.user_metadata(),
            e_tag: Some(ETag::Strong(object.etag)),
            last_modified: Some(Timestamp::from(object.last_modified)),
            ..Default::default()
        }))
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let object = self.get(&req.input.bucket, &req.input.key)?;
        conditions::check_read(&conditions::ReadConditions::of_head(&req.input), object.current())?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(object.data.len() as i64),
            metadata: object.user_metadata(),
            e_tag: Some(ETag::Strong(object.etag)),
            last_modified: Some(Timestamp::from(object.last_modified)),
            ..Default::default()
        }))
    }

    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let max_keys = listing::max_keys(input.max_keys)?;
        let url = wants_url(input.encoding_type.as_ref());
        let buckets = self.read();
        let objects = &buckets.bucket(&input.bucket)?.objects;
        let page = listing::page(
            objects,
            &PageRequest {
                prefix: input.prefix.as_deref().unwrap_or(""),
                delimiter: input.delimiter.as_deref(),
                after: input.marker.as_deref().filter(|m| !m.is_empty()),
                max_keys,
            },
        );
        let next_marker = page.next_marker.clone();
        let (contents, prefixes) = split_page(page, url);
        let encode = |s: Option<String>| if url { s.map(|s| listing::url_encode(&s)) } else { s };
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket),
            prefix: Some(encode(input.prefix).unwrap_or_default()),
            marker: Some(encode(input.marker).unwrap_or_default()),
            delimiter: encode(input.delimiter),
            max_keys: Some(max_keys as i32),
            is_truncated: Some(next_marker.is_some()),
            next_marker: encode(next_marker),
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let max_keys = listing::max_keys(input.max_keys)?;
        let url = wants_url(input.encoding_type.as_ref());
        // The continuation token wins over start-after, as in S3.
        let after = match input.continuation_token.as_deref() {
            Some(token) => Some(listing::marker_of(token)?),
            None => input.start_after.clone().filter(|s| !s.is_empty()),
        };
        let buckets = self.read();
        let objects = &buckets.bucket(&input.bucket)?.objects;
        let page = listing::page(
            objects,
            &PageRequest {
                prefix: input.prefix.as_deref().unwrap_or(""),
                delimiter: input.delimiter.as_deref(),
                after: after.as_deref(),
                max_keys,
            },
        );
        let next = page.next_marker.as_deref().map(listing::token_of);
        let (contents, prefixes) = split_page(page, url);
        let encode = |s: Option<String>| if url { s.map(|s| listing::url_encode(&s)) } else { s };
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: Some(encode(input.prefix).unwrap_or_default()),
            delimiter: encode(input.delimiter),
            max_keys: Some(max_keys as i32),
            key_count: Some((contents.len() + prefixes.len()) as i32),
            continuation_token: input.continuation_token,
            start_after: encode(input.start_after),
            is_truncated: Some(next.is_some()),
            next_continuation_token: next,
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        let input = req.input;
        let mut buckets = self.write();
        let current = buckets.bucket(&input.bucket)?.objects.get(&input.key);
        let c = conditions::DeleteConditions {
            if_match: input.if_match.as_ref(),
            if_match_size: input.if_match_size,
            if_match_last_modified_time: input.if_match_last_modified_time.as_ref(),
        };
        if conditions::check_delete(&c, current.map(StoredObject::current))? {
            buckets.remove(&input.bucket, &input.key)?;
        }
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        let mut buckets = self.write();
        buckets.bucket(&input.bucket)?;
        let (mut deleted, mut errors) = (Vec::new(), Vec::new());
        for id in input.delete.objects {
            let if_match = id.e_tag.clone().map(ETagCondition::ETag);
            let c = conditions::DeleteConditions {
                if_match: if_match.as_ref(),
                if_match_size: id.size,
                if_match_last_modified_time: id.last_modified_time.as_ref(),
            };
            let current = buckets.bucket(&input.bucket)?.objects.get(&id.key);
            match conditions::check_delete(&c, current.map(StoredObject::current)) {
                Ok(present) => {
                    if present {
                        buckets.remove(&input.bucket, &id.key)?;
                    }
                    deleted.push(DeletedObject {
                        key: Some(id.key),
                        ..Default::default()
                    });
                }
                Err(e) => errors.push(Error {
                    code: Some(e.code().as_str().to_string()),
                    key: Some(id.key),
                    message: e.message().map(str::to_string),
                    version_id: None,
                }),
            }
        }
        let quiet = input.delete.quiet.unwrap_or(false);
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: if quiet { None } else { Some(deleted) },
            errors: (!errors.is_empty()).then_some(errors),
            ..Default::default()
        }))
    }
}

//! The lab answers as S3 does where s3sweep and users' tools rely on it (issue 28) and
//! is no softer than S3 where it claims to act like it (issue 27, item 7), against
//! servers started on 127.0.0.1:
//! - ETags are the MD5 of the body; a wrong `Content-MD5` is `BadDigest`;
//! - conditional PUT, GET, HEAD and DELETE give 412 / 304 / 404 where S3 does;
//! - ListObjects v1 and v2 with a delimiter and a small max-keys give every key and
//!   common prefix once, in key order; ListBuckets and HeadBucket answer;
//! - an operation the lab does not implement is 501 `NotImplemented` naming it;
//! - each bad signature (stale date, scope date not the request's date, `host` not
//!   signed, a body that is not the signed payload hash) is refused on the S3 Express
//!   path as on the ordinary one, and a session's keys work only on its own directory
//!   bucket (raw requests signed here, so only the one flaw differs);
//! - the header-read timeout, the connection cap, the object and store size caps;
//! - the HTTPS CA's folder is private, the CA short-lived and loopback-only, and the
//!   folder is gone when the server (in process or child) stops.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::lab::{self, LabLimits, LatencyProfile, RunningServer, SessionMode, StoreLimits};
use crate::common::LabBuilder;
use aws_sdk_s3::primitives::ByteStream;
use ring::{digest, hmac};

use crate::common::{client_of, seed_settings, Serve};

const PLAIN: &str = "plain";
const DIR: &str = "conf--lab1-az1--x-s3";

/// The lab with the plain and the directory bucket, taking in what `limits` allow.
fn lab(limits: LabLimits) -> LabBuilder {
    LabBuilder::new()
        .bucket(PLAIN, LatencyProfile::None)
        .bucket(DIR, LatencyProfile::None)
        .limits(limits)
}

async fn sdk(server: &RunningServer) -> aws_sdk_s3::Client {
    client_of(server).await.s3(seed_settings())
}

fn code<E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug>(e: &aws_sdk_s3::error::SdkError<E>) -> String {
    e.as_service_error()
        .and_then(|s| s.code())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{e:?}"))
}

fn status<E>(e: &aws_sdk_s3::error::SdkError<E>) -> u16 {
    e.raw_response().map_or(0, |r| r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_are_md5_and_content_md5_is_checked() {
    let server = lab(LabLimits::default()).server().await;
    let s3 = sdk(&server).await;
    let put = s3
        .put_object()
        .bucket(PLAIN)
        .key("hello")
        .body(ByteStream::from_static(b"hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(put.e_tag(), Some("\"5d41402abc4b2a76b9719d911017c592\""));
    let head = s3.head_object().bucket(PLAIN).key("hello").send().await.unwrap();
    assert_eq!(head.e_tag(), Some("\"5d41402abc4b2a76b9719d911017c592\""));
    // base64(md5("hello")) sent with another body.
    let err = s3
        .put_object()
        .bucket(PLAIN)
        .key("bad")
        .content_md5("XUFAKrxLKna5cZ2REBfFkg==")
        .body(ByteStream::from_static(b"hellO"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "BadDigest");
    assert!(!server.store().contains(PLAIN, "bad"), "a bad digest stores nothing");
    s3.put_object()
        .bucket(PLAIN)
        .key("good")
        .content_md5("XUFAKrxLKna5cZ2REBfFkg==")
        .body(ByteStream::from_static(b"hello"))
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_requests_answer_as_s3_documents() {
    let server = lab(LabLimits::default()).server().await;
    let s3 = sdk(&server).await;
    let put = |key: &'static str, body: &'static [u8]| {
        s3.put_object()
            .bucket(PLAIN)
            .key(key)
            .body(ByteStream::from_static(body))
    };
    let first = put("k", b"one").if_none_match("*").send().await.unwrap();
    let etag = first.e_tag().unwrap().to_string();
    let err = put("k", b"two").if_none_match("*").send().await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (412, "PreconditionFailed"));
    let err = put("k", b"two").if_match("\"0000\"").send().await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (412, "PreconditionFailed"));
    let err = put("missing", b"x").if_match(&etag).send().await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (404, "NoSuchKey"));
    let second = put("k", b"two").if_match(&etag).send().await.unwrap();
    let etag2 = second.e_tag().unwrap().to_string();
    assert_ne!(etag, etag2);

    let get = || s3.get_object().bucket(PLAIN).key("k");
    let err = get().if_match(&etag).send().await.unwrap_err();
    assert_eq!(status(&err), 412);
    let err = get().if_none_match(&etag2).send().await.unwrap_err();
    assert_eq!(status(&err), 304);
    let err = get().if_none_match("*").send().await.unwrap_err();
    assert_eq!(status(&err), 304);
    let body = get().if_match(&etag2).if_none_match(&etag).send().await.unwrap();
    assert_eq!(&body.body.collect().await.unwrap().into_bytes()[..], b"two");
    let future = aws_smithy_types::DateTime::from(SystemTime::now() + Duration::from_secs(3600));
    let past = aws_smithy_types::DateTime::from(SystemTime::now() - Duration::from_secs(3600));
    let err = get().if_modified_since(future).send().await.unwrap_err();
    assert_eq!(status(&err), 304);
    get().if_modified_since(past).send().await.unwrap();
    let err = get().if_unmodified_since(past).send().await.unwrap_err();
    assert_eq!(status(&err), 412);
    let head = || s3.head_object().bucket(PLAIN).key("k");
    let err = head().if_match(&etag).send().await.unwrap_err();
    assert_eq!(status(&err), 412);
    let err = head().if_none_match(&etag2).send().await.unwrap_err();
    assert_eq!(status(&err), 304);

    let delete = || s3.delete_object().bucket(PLAIN).key("k");
    let err = delete().if_match(&etag).send().await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (412, "PreconditionFailed"));
    assert!(
        server.store().contains(PLAIN, "k"),
        "a failed conditional delete deletes nothing"
    );
    delete().if_match(&etag2).send().await.unwrap();
    assert!(!server.store().contains(PLAIN, "k"));
    let err = delete().if_match("*").send().await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (404, "NoSuchKey"));
    delete().send().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_page_with_a_delimiter_and_give_every_entry_once() {
    let server = lab(LabLimits::default()).server().await;
    let keys = ["a", "d/1", "d/2", "d/e/3", "e/1", "e/2", "f", "g/1", "g/h/2", "z"];
    for k in keys {
        server.store().insert(PLAIN, k, bytes::Bytes::from_static(b"x"));
    }
    let s3 = sdk(&server).await;
    // v2: top level, two entries a page.
    let (seen, pages) = v2_pages_of_two(&s3).await;
    assert_eq!(seen, ["a", "d/", "e/", "f", "g/", "z"]);
    assert_eq!(pages, 3);
    // v1 with a prefix, one entry a page, following NextMarker.
    assert_eq!(v1_pages_of_one_under_g(&s3).await, ["g/1", "g/h/"]);
    // No delimiter, start-after: every key after it, in order.
    let page = s3
        .list_objects_v2()
        .bucket(PLAIN)
        .start_after("e/1")
        .send()
        .await
        .unwrap();
    let got: Vec<&str> = page.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(got, ["e/2", "f", "g/1", "g/h/2", "z"]);
    assert_eq!(page.contents()[0].e_tag(), Some("\"9dd4e461268c8034f5c8564e155c67a6\""));
    let buckets = s3.list_buckets().send().await.unwrap();
    let names: Vec<&str> = buckets.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, [DIR, PLAIN]);
    s3.head_bucket().bucket(PLAIN).send().await.unwrap();
    let err = s3.head_bucket().bucket("nope").send().await.unwrap_err();
    assert_eq!(status(&err), 404);
}

/// ListObjectsV2 of [`PLAIN`] with the delimiter `/`, two entries a page (each page's
/// keys and common prefixes, at most two): every entry, and the pages.
async fn v2_pages_of_two(s3: &aws_sdk_s3::Client) -> (Vec<String>, u32) {
    let (mut seen, mut token, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let page = s3
            .list_objects_v2()
            .bucket(PLAIN)
            .delimiter("/")
            .max_keys(2)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap();
        pages += 1;
        let mut entries: Vec<String> = page
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_string))
            .collect();
        entries.extend(
            page.common_prefixes()
                .iter()
                .filter_map(|p| p.prefix().map(str::to_string)),
        );
        assert!(entries.len() <= 2);
        entries.sort();
        seen.extend(entries);
        match page.next_continuation_token() {
            Some(t) => token = Some(t.to_string()),
            None => break,
        }
    }
    (seen, pages)
}

/// ListObjects (v1) of [`PLAIN`] under `g/` with the delimiter `/`, one entry a page,
/// following NextMarker: every entry.
async fn v1_pages_of_one_under_g(s3: &aws_sdk_s3::Client) -> Vec<String> {
    let (mut seen, mut marker) = (Vec::new(), None::<String>);
    loop {
        let page = s3
            .list_objects()
            .bucket(PLAIN)
            .prefix("g/")
            .delimiter("/")
            .max_keys(1)
            .set_marker(marker.clone())
            .send()
            .await
            .unwrap();
        seen.extend(page.contents().iter().filter_map(|o| o.key().map(str::to_string)));
        seen.extend(
            page.common_prefixes()
                .iter()
                .filter_map(|p| p.prefix().map(str::to_string)),
        );
        if page.is_truncated() != Some(true) {
            break;
        }
        marker = page.next_marker().map(str::to_string);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unimplemented_operations_answer_501_with_their_name() {
    let server = lab(LabLimits::default()).server().await;
    let s3 = sdk(&server).await;
    let err = s3
        .copy_object()
        .bucket(PLAIN)
        .key("b")
        .copy_source("plain/a")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&err), 501);
    let message = err
        .as_service_error()
        .and_then(|e| e.meta().message())
        .unwrap_or_default();
    assert!(message.contains("CopyObject"), "{message}");
    let err = s3.get_bucket_tagging().bucket(PLAIN).send().await.unwrap_err();
    assert_eq!(status(&err), 501);
    let message = err
        .as_service_error()
        .and_then(|e| e.meta().message())
        .unwrap_or_default();
    assert!(message.contains("GetBucketTagging"), "{message}");
}

// ---- raw SigV4 requests: one flaw at a time ----

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// `x-amz-date` of a time.
fn amz_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let dt = aws_smithy_types::DateTime::from_secs(secs)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap();
    // 2026-12-01T05:00:00Z -> 20261201T050000Z
    dt.replace(['-', ':'], "")
}

/// One PUT of `body` to `/bucket/key`, signed here; each field is one thing a test
/// can get wrong on purpose.
struct SignedPut<'a> {
    bucket: &'a str,
    key: &'a str,
    body: &'a [u8],
    service: &'a str,
    access_key: String,
    secret: String,
    token: Option<String>,
    at: SystemTime,
    /// The credential scope's date (None: the date of `at`).
    scope_date: Option<String>,
    sign_host: bool,
    /// The signed payload hash (None: the body's).
    payload_hash: Option<String>,
}

impl<'a> SignedPut<'a> {
    fn lab(bucket: &'a str, service: &'a str) -> Self {
        SignedPut {
            bucket,
            key: "k",
            body: b"payload",
            service,
            access_key: lab::LOCAL_ACCESS_KEY.into(),
            secret: lab::LOCAL_SECRET_KEY.into(),
            token: None,
            at: SystemTime::now(),
            scope_date: None,
            sign_host: true,
            payload_hash: None,
        }
    }

    /// Sends it to `addr` and returns the status and the body.
    fn send(&self, addr: std::net::SocketAddr) -> (u16, String) {
        let date = amz_date(self.at);
        let scope_date = self.scope_date.clone().unwrap_or_else(|| date[..8].to_string());
        let payload = self.payload_hash.clone().unwrap_or_else(|| sha256_hex(self.body));
        let host = addr.to_string();
        let mut headers: Vec<(&str, String)> = vec![
            ("host", host.clone()),
            ("x-amz-content-sha256", payload.clone()),
            ("x-amz-date", date.clone()),
        ];
        if let Some(t) = &self.token {
            headers.push(("x-amz-s3session-token", t.clone()));
        }
        let signed: Vec<&(&str, String)> = headers.iter().filter(|(n, _)| self.sign_host || *n != "host").collect();
        let path = format!("/{}/{}", self.bucket, self.key);
        let mut canonical = format!("PUT\n{path}\n\n");
        for (n, v) in &signed {
            canonical.push_str(&format!("{n}:{v}\n"));
        }
        let names: Vec<&str> = signed.iter().map(|(n, _)| *n).collect();
        canonical.push_str(&format!("\n{}\n{payload}", names.join(";")));
        let scope = format!("{scope_date}/us-east-1/{}/aws4_request", self.service);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
            sha256_hex(canonical.as_bytes())
        );
        let mut key = hmac_sha256(format!("AWS4{}", self.secret).as_bytes(), scope_date.as_bytes());
        for part in ["us-east-1", self.service, "aws4_request"] {
            key = hmac_sha256(&key, part.as_bytes());
        }
        let signature = hex(&hmac_sha256(&key, to_sign.as_bytes()));
        let mut req = format!("PUT {path} HTTP/1.1\r\n");
        for (n, v) in &headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str(&format!(
            "authorization: AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={}, Signature={signature}\r\n",
            self.access_key,
            names.join(";")
        ));
        req.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(req.as_bytes()).unwrap();
        stream.write_all(self.body).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }
}

/// A flaw: what it is, how to make it, and the code S3 answers it with.
type Flaw = (&'static str, fn(&mut SignedPut<'_>), &'static str);

/// The ways a request can be signed wrongly that S3 refuses on every path.
fn flaws() -> Vec<Flaw> {
    vec![
        (
            "a 2020 date",
            |p| p.at = UNIX_EPOCH + Duration::from_secs(1_600_000_000),
            "RequestTimeTooSkewed",
        ),
        (
            "a scope date that is not x-amz-date's",
            |p| p.scope_date = Some("20200101".into()),
            "SignatureDoesNotMatch",
        ),
        ("host not signed", |p| p.sign_host = false, "'Host'"),
        (
            "a payload hash that is not the body's",
            |p| p.payload_hash = Some(sha256_hex(b"another body")),
            "XAmzContentSHA256Mismatch",
        ),
    ]
}

/// A PUT signed with a session's keys, for `s3express`.
fn with_session(bucket: &'static str, session: &lab::Session) -> SignedPut<'static> {
    let mut p = SignedPut::lab(bucket, "s3express");
    p.access_key = session.access_key_id.clone();
    p.secret = session.secret_access_key.clone();
    p.token = Some(session.token.clone());
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_express_path_refuses_every_bad_signature_the_ordinary_path_refuses() {
    let server = lab(LabLimits::default()).server().await;
    let addr = server.addr();
    let session = server.sessions().create(DIR, SessionMode::ReadWrite).unwrap();
    tokio::task::spawn_blocking(move || {
        let paths = [
            "ordinary (s3, lab keys)",
            "S3 Express, lab keys",
            "S3 Express, session keys",
        ];
        let make = |path: &str| match path {
            "ordinary (s3, lab keys)" => SignedPut::lab(PLAIN, "s3"),
            "S3 Express, lab keys" => SignedPut::lab(DIR, "s3express"),
            _ => with_session(DIR, &session),
        };
        for path in paths {
            let bucket = make(path).bucket;
            let (ok, answer) = make(path).send(addr);
            assert_eq!(ok, 200, "{path}: the unflawed request is accepted: {answer}");
            for (flaw, apply, expected) in flaws() {
                let mut p = make(path);
                p.key = "flawed";
                apply(&mut p);
                let (status, answer) = p.send(addr);
                assert!(
                    (400..500).contains(&status) && answer.contains(expected),
                    "{path}: {flaw} must be refused with {expected}, got {status}: {answer}"
                );
                assert!(
                    !server.store().contains(bucket, "flawed"),
                    "{path}: {flaw} stored the object"
                );
            }
        }
        // A session's keys on an ordinary bucket, signed for either service.
        for service in ["s3express", "s3"] {
            let mut p = with_session(PLAIN, &session);
            p.service = service;
            p.key = "by-session";
            let (status, answer) = p.send(addr);
            assert_eq!(status, 403, "session keys on {PLAIN} ({service}): {answer}");
            assert!(!server.store().contains(PLAIN, "by-session"));
        }
        let other = server
            .sessions()
            .create("other--lab1-az1--x-s3", SessionMode::ReadWrite)
            .unwrap();
        let mut p = with_session(DIR, &other);
        p.key = "by-other";
        let (status, answer) = p.send(addr);
        assert_eq!(status, 403, "another bucket's session on {DIR}: {answer}");
        assert!(!server.store().contains(DIR, "by-other"));
    })
    .await
    .unwrap();
}

// ---- limits ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_are_closed_after_the_header_read_timeout() {
    let server = lab(LabLimits {
        header_read_timeout: Duration::from_millis(500),
        ..LabLimits::default()
    })
    .server()
    .await;
    let addr = server.addr();
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        s.write_all(b"GET /plain/k HTTP/1.1\r\nhost: 127.0.0.1\r\n").unwrap();
        let started = Instant::now();
        let mut buf = Vec::new();
        let closed = s.read_to_end(&mut buf).is_ok();
        let waited = started.elapsed();
        assert!(closed, "the server closes the half-sent request's connection");
        assert!(
            waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
            "closed after {waited:?}, the timeout is 500 ms"
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_get_slow_down() {
    let server = lab(LabLimits {
        max_connections: 2,
        ..LabLimits::default()
    })
    .server()
    .await;
    let addr = server.addr();
    let refused = tokio::task::spawn_blocking(move || {
        let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(200));
        let mut third = TcpStream::connect(addr).unwrap();
        third.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = String::new();
        let _ = third.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 503") && answer.contains("<Code>SlowDown</Code>"),
            "{answer}"
        );
        drop(held);
        std::thread::sleep(Duration::from_millis(200));
        let mut again = TcpStream::connect(addr).unwrap();
        again.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        again
            .write_all(b"GET /_s3sweep/hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = again.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "a slot freed is served: {answer}");
        server
    })
    .await
    .unwrap()
    .connections_refused();
    assert_eq!(refused, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_past_the_object_cap_and_the_store_cap_are_refused() {
    let server = lab(LabLimits {
        store: StoreLimits {
            max_object_bytes: 1000,
            max_store_bytes: 2500 + 2 * (256 + 1),
            ..StoreLimits::default()
        },
        ..LabLimits::default()
    })
    .server()
    .await;
    let s3 = sdk(&server).await;
    let put = |key: &'static str, len: usize| {
        s3.put_object()
            .bucket(PLAIN)
            .key(key)
            .body(ByteStream::from(vec![7u8; len]))
            .send()
    };
    let err = put("big", 1001).await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (400, "EntityTooLarge"));
    put("a", 1000).await.unwrap();
    put("b", 1000).await.unwrap();
    let err = put("c", 1000).await.unwrap_err();
    assert_eq!((status(&err), code(&err).as_str()), (507, "InsufficientStorage"));
    // Replacing an object gives its bytes back first.
    put("b", 1000).await.unwrap();
    s3.delete_object().bucket(PLAIN).key("a").send().await.unwrap();
    put("c", 1000).await.unwrap();
    assert_eq!(server.store().stored_bytes(), 2000);
}

// ---- the CA ----

fn openssl_text(pem: &std::path::Path) -> Option<String> {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(pem)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ca_is_private_loopback_only_short_lived_and_removed_on_stop() {
    use std::os::unix::fs::PermissionsExt;
    let server = LabBuilder::new().tls().server().await;
    let ca = server.ca_file().unwrap().to_path_buf();
    let dir = ca.parent().unwrap().to_path_buf();
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&ca).unwrap().permissions().mode() & 0o077, 0);
    match openssl_text(&ca) {
        Some(text) => {
            assert!(text.contains("Name Constraints"), "{text}");
            assert!(
                text.contains("IP:127.0.0.1/255.255.255.255") && text.contains("DNS:localhost"),
                "{text}"
            );
            let year = |label: &str| -> i32 {
                let line = text.lines().find(|l| l.contains(label)).unwrap();
                line.split_whitespace().rev().nth(1).unwrap().parse().unwrap()
            };
            assert!(year("Not After") - year("Not Before") <= 1, "short-lived: {text}");
        }
        None => eprintln!("openssl not found: the CA's constraints and dates are not read back here"),
    }
    // The SDK still trusts it for 127.0.0.1.
    let s3 = sdk(&server).await;
    s3.create_bucket().bucket("tls").send().await.unwrap();
    drop(s3);
    drop(server);
    assert!(
        !ca.exists() && !dir.exists(),
        "the CA and its folder go when the server stops"
    );

    // A child `serve --tls` removes its own when it is told to stop.
    let child = Serve::start(&[], &["--tls"]);
    let ca = child.ca_file.clone().unwrap();
    assert!(ca.exists());
    child.stop();
    assert!(
        !ca.exists() && !ca.parent().unwrap().exists(),
        "serve removed its CA folder"
    );
}

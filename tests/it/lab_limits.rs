//! What the lab refuses as S3 does (issue 35): SigV2 signatures, header or query, get
//! S3's 400 `InvalidRequest` (a 2001-dated SigV2 signature is not replayable), POST
//! form uploads 501; a PUT's room is reserved before its body, a trickling body is
//! closed, keys count against the store cap; buckets and sessions past their caps get
//! `TooManyBuckets` and `SlowDown` (the store called directly). Raw HTTP/1.1 over a
//! TCP socket to the lab on 127.0.0.1, so no client library rewrites the request.

use std::time::Duration;

use crate::common::lab::{LatencyProfile, SessionMode};
use crate::common::LabBuilder;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `request` (a whole HTTP/1.1 request) and returns the response's text.
async fn raw(addr: &str, request: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigv2_signatures_and_post_forms_get_s3s_answer() {
    let bucket = "v2-bucket";
    let server = LabBuilder::new().bucket(bucket, LatencyProfile::None).server().await;
    server.store().insert(bucket, "k", Bytes::from_static(b"secret"));
    let addr = server.endpoint().trim_start_matches("http://").to_string();
    let header = format!(
        "GET /{bucket}/k HTTP/1.1\r\nHost: {addr}\r\nDate: Mon, 01 Jan 2001 00:00:00 GMT\r\nAuthorization: AWS s3sweep:frJIUN8DYpKDtOLCwo//yllqDzg=\r\nConnection: close\r\n\r\n"
    );
    let query = format!(
        "GET /{bucket}/k?AWSAccessKeyId=s3sweep&Expires=4102444800&Signature=frJIUN8DYpKDtOLCwo%2F%2FyllqDzg%3D HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    for (what, request) in [("header", header), ("query", query)] {
        let answer = raw(&addr, &request).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "SigV2 {what}: {answer}");
        assert!(answer.contains("<Code>InvalidRequest</Code>"), "SigV2 {what}: {answer}");
        assert!(answer.contains("AWS4-HMAC-SHA256"), "SigV2 {what}: {answer}");
        assert!(!answer.contains("secret"), "SigV2 {what}: {answer}");
    }
    let form = format!(
        "POST /{bucket} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let answer = raw(&addr, &form).await;
    assert!(answer.starts_with("HTTP/1.1 501"), "{answer}");
    assert!(answer.contains("<Code>NotImplemented</Code>"), "{answer}");
}

/// The head of a PUT of `len` bytes to `/bucket/key`, signed with the lab's key
/// (`UNSIGNED-PAYLOAD`: the body can come later, or trickle).
pub(crate) fn signed_put_head(addr: &str, bucket: &str, key: &str, len: usize) -> String {
    use ring::{digest, hmac};
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mac = |k: &[u8], d: &[u8]| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, k), d).as_ref().to_vec();
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let date = aws_smithy_types::DateTime::from_secs(secs)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap()
        .replace(['-', ':'], "");
    let path = format!("/{bucket}/{key}");
    let canonical = format!(
        "PUT\n{path}\n\nhost:{addr}\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:{date}\n\nhost;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD"
    );
    let scope = format!("{}/us-east-1/s3/aws4_request", &date[..8]);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mut k = mac(
        format!("AWS4{}", crate::common::lab::LOCAL_SECRET_KEY).as_bytes(),
        &date.as_bytes()[..8],
    );
    for part in ["us-east-1", "s3", "aws4_request"] {
        k = mac(&k, part.as_bytes());
    }
    let signature = hex(&mac(&k, to_sign.as_bytes()));
    format!(
        "PUT {path} HTTP/1.1\r\nhost: {addr}\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\nx-amz-date: {date}\r\nauthorization: AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={signature}\r\ncontent-length: {len}\r\n\r\n",
        crate::common::lab::LOCAL_ACCESS_KEY
    )
}

/// The lab with bucket `cap` and the store's caps `store`.
fn lab_with(store: crate::common::lab::StoreLimits) -> LabBuilder {
    LabBuilder::new()
        .bucket("cap", LatencyProfile::None)
        .limits(crate::common::lab::LabLimits {
            store,
            ..crate::common::lab::LabLimits::default()
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_reserves_its_room_before_its_body_and_a_trickling_body_is_closed() {
    let server = lab_with(crate::common::lab::StoreLimits {
        max_object_bytes: 100_000,
        max_store_bytes: 64_000,
        body_read_timeout: Duration::from_millis(500),
    })
    .server()
    .await;
    let addr = server.endpoint().trim_start_matches("http://").to_string();
    // A: declares 50,000 bytes, sends one, then nothing.
    let mut a = tokio::net::TcpStream::connect(&addr).await.unwrap();
    a.write_all(signed_put_head(&addr, "cap", "a", 50_000).as_bytes())
        .await
        .unwrap();
    a.write_all(b"x").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    // B: 20,000 bytes sent whole; A's reservation leaves no room for it.
    let b = format!("{}{}", signed_put_head(&addr, "cap", "b", 20_000), "y".repeat(20_000));
    let answer = raw(&addr, &b.replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 507"), "{answer}");
    assert!(answer.contains("InsufficientStorage"), "{answer}");
    // A is answered RequestTimeout and closed after the body timeout.
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), a.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out);
    assert!(
        read.is_ok(),
        "the trickling connection was still open after 5 s: {text}"
    );
    assert!(
        text.starts_with("HTTP/1.1 400") && text.contains("RequestTimeout"),
        "{text}"
    );
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(3), "closed after {waited:?}");
    // Its room is given back: B fits now.
    let answer = raw(&addr, &b.replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    eprintln!(
        "trickling PUT closed after {waited:?}; charged {:?}",
        server.store().charged_bytes()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_objects_with_long_keys_count_against_the_store_cap() {
    let server = lab_with(crate::common::lab::StoreLimits {
        max_store_bytes: 64_000,
        ..crate::common::lab::StoreLimits::default()
    })
    .server()
    .await;
    let s3 = crate::common::client_of(&server)
        .await
        .s3(crate::common::seed_settings());
    let mut accepted = 0;
    let refused = loop {
        let key = format!("{accepted:0>1000}");
        match s3
            .put_object()
            .bucket("cap")
            .key(&key)
            .body(Vec::new().into())
            .send()
            .await
        {
            Ok(_) => accepted += 1,
            Err(e) => break e,
        }
        assert!(
            accepted <= 1000,
            "1,000 empty objects of 1,000-byte keys under a 64,000-byte cap"
        );
    };
    assert_eq!(refused.raw_response().map(|r| r.status().as_u16()), Some(507));
    let (charged, reserved) = server.store().charged_bytes();
    eprintln!("{accepted} empty objects with 1,000-byte keys accepted under 64,000 bytes; {charged} counted");
    assert_eq!(accepted, 64_000 / (1000 + 256), "each counts its key and 256 bytes");
    assert!(charged <= 64_000 && reserved == 0);
}

fn create_bucket(name: &str) -> s3s::S3Request<s3s::dto::CreateBucketInput> {
    request(
        s3s::dto::CreateBucketInput::builder()
            .bucket(name.into())
            .build()
            .unwrap(),
    )
}

/// An S3 request of `input` as the store sees it after authentication.
fn request<T>(input: T) -> s3s::S3Request<T> {
    s3s::S3Request {
        input,
        method: http::Method::PUT,
        uri: http::Uri::from_static("/"),
        headers: Default::default(),
        extensions: Default::default(),
        credentials: None,
        region: None,
        service: None,
        trailing_headers: None,
    }
}

#[tokio::test]
async fn buckets_past_the_cap_get_too_many_buckets() {
    use s3s::S3;
    let store = crate::common::lab::MemStore::new();
    for i in 0..crate::common::lab::MAX_BUCKETS {
        store.create_bucket(create_bucket(&format!("b-{i}"))).await.unwrap();
    }
    let e = store.create_bucket(create_bucket("one-more")).await.unwrap_err();
    assert_eq!(*e.code(), s3s::S3ErrorCode::TooManyBuckets);
    assert_eq!(e.status_code(), Some(http::StatusCode::BAD_REQUEST));
    // An existing name still gets S3's answer for it.
    let again = store.create_bucket(create_bucket("b-0")).await.unwrap_err();
    assert_eq!(*again.code(), s3s::S3ErrorCode::BucketAlreadyOwnedByYou);
}

#[tokio::test]
async fn sessions_past_the_cap_get_slow_down() {
    use s3s::S3;
    let store = crate::common::lab::MemStore::new();
    let dir = "d--az1--x-s3";
    store.create_bucket(create_bucket(dir)).await.unwrap();
    for _ in 0..crate::common::lab::MAX_SESSIONS {
        store.sessions().create(dir, SessionMode::ReadOnly).unwrap();
    }
    let input = s3s::dto::CreateSessionInput::builder()
        .bucket(dir.into())
        .build()
        .unwrap();
    let e = store.create_session(request(input)).await.unwrap_err();
    assert_eq!(*e.code(), s3s::S3ErrorCode::SlowDown);
    assert_eq!(e.status_code(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
}

//! What S3 checks about an object before it acts on a request: ETags as S3 computes
//! them for single-part uploads (the hex MD5 of the body, quoted on the wire), the
//! `Content-MD5` a client sends with a PUT, and the conditional headers of reads
//! (GetObject, HeadObject), writes (PutObject) and deletes (DeleteObject(s)), each as
//! S3 documents it:
//! - reads (RFC 7232 order, as S3 documents): `If-Match` false -> 412; else
//!   `If-Unmodified-Since` false -> 412; `If-None-Match` matching -> 304; else
//!   `If-Modified-Since` not modified -> 304. Dates compare at whole seconds, as
//!   `Last-Modified` is sent;
//! - writes: `If-None-Match: *` on an existing key -> 412; any other `If-None-Match`
//!   value -> 501 (S3 supports only `*`); `If-Match` on a missing key -> 404
//!   `NoSuchKey`, on another ETag -> 412;
//! - deletes: `If-Match` (an ETag or `*`) on a missing key -> 404 `NoSuchKey`, on
//!   another ETag -> 412; `x-amz-if-match-size` and `x-amz-if-match-last-modified-time`
//!   on another size or time -> 412 (a missing key then deletes nothing, 204).

use std::time::{SystemTime, UNIX_EPOCH};

use md5::{Digest, Md5};
use s3s::dto::{ETag, ETagCondition, Timestamp};
use s3s::{s3_error, S3Error};

/// The ETag S3 gives a single-part upload: the hex MD5 of the body (unquoted here;
/// s3s quotes it on the wire).
pub(crate) fn etag_of(data: &[u8]) -> String {
    hex(&Md5::digest(data))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a PUT's `Content-MD5` (base64 of the body's MD5): `InvalidDigest` when it
/// is not 16 base64-encoded bytes, `BadDigest` when it is another body's.
pub(crate) fn check_content_md5(content_md5: Option<&str>, data: &[u8]) -> Result<(), S3Error> {
    use base64::Engine as _;
    let Some(sent) = content_md5 else {
        return Ok(());
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(sent.trim())
        .ok()
        .filter(|d| d.len() == 16)
        .ok_or_else(|| s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid."))?;
    if decoded.as_slice() == Md5::digest(data).as_slice() {
        Ok(())
    } else {
        Err(s3_error!(
            BadDigest,
            "The Content-MD5 you specified did not match what we received."
        ))
    }
}

/// What a condition is checked against: the current object, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Current<'a> {
    pub(crate) etag: &'a str,
    pub(crate) last_modified: SystemTime,
    pub(crate) size_bytes: u64,
}

/// The conditional headers of a GetObject or HeadObject.
#[derive(Debug, Default)]
pub(crate) struct ReadConditions<'a> {
    pub(crate) if_match: Option<&'a ETagCondition>,
    pub(crate) if_none_match: Option<&'a ETagCondition>,
    pub(crate) if_modified_since: Option<&'a Timestamp>,
    pub(crate) if_unmodified_since: Option<&'a Timestamp>,
}

/// The read conditions of a request type that has the four `If-*` headers.
macro_rules! read_conditions_of {
    ($name:ident, $input:ty) => {
        pub(crate) fn $name(input: &'a $input) -> Self {
            ReadConditions {
                if_match: input.if_match.as_ref(),
                if_none_match: input.if_none_match.as_ref(),
                if_modified_since: input.if_modified_since.as_ref(),
                if_unmodified_since: input.if_unmodified_since.as_ref(),
            }
        }
    };
}

impl<'a> ReadConditions<'a> {
    read_conditions_of!(of_get, s3s::dto::GetObjectInput);
    read_conditions_of!(of_head, s3s::dto::HeadObjectInput);
}

fn matches(condition: &ETagCondition, etag: &str) -> bool {
    match condition {
        ETagCondition::Any => true,
        ETagCondition::ETag(tag) => tag.value() == etag,
    }
}

fn strong_matches(condition: &ETagCondition, etag: &str) -> bool {
    match condition {
        ETagCondition::Any => true,
        ETagCondition::ETag(ETag::Strong(v)) => v == etag,
        ETagCondition::ETag(ETag::Weak(_)) => false,
    }
}

/// Seconds since the epoch (HTTP dates have no finer unit).
fn seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

fn timestamp_seconds(t: &Timestamp) -> i64 {
    time::OffsetDateTime::from(t.clone()).unix_timestamp()
}

fn precondition_failed(what: &str) -> S3Error {
    s3_error!(
        PreconditionFailed,
        "At least one of the pre-conditions you specified did not hold ({what})"
    )
}

fn not_modified() -> S3Error {
    s3_error!(NotModified, "Not Modified")
}

/// Checks a read's conditions against the object (see the module comment).
pub(crate) fn check_read(c: &ReadConditions<'_>, object: Current<'_>) -> Result<(), S3Error> {
    let modified = seconds(object.last_modified);
    if let Some(cond) = c.if_match {
        if !strong_matches(cond, object.etag) {
            return Err(precondition_failed("If-Match"));
        }
    } else if let Some(since) = c.if_unmodified_since {
        if modified > timestamp_seconds(since) {
            return Err(precondition_failed("If-Unmodified-Since"));
        }
    }
    if let Some(cond) = c.if_none_match {
        if matches(cond, object.etag) {
            return Err(not_modified());
        }
    } else if let Some(since) = c.if_modified_since {
        if modified <= timestamp_seconds(since) {
            return Err(not_modified());
        }
    }
    Ok(())
}

/// Checks a PutObject's `If-None-Match` / `If-Match` against the current object.
pub(crate) fn check_write(
    if_none_match: Option<&ETagCondition>,
    if_match: Option<&ETagCondition>,
    current: Option<Current<'_>>,
) -> Result<(), S3Error> {
    match if_none_match {
        None | Some(ETagCondition::Any) if current.is_none() => {}
        None => {}
        Some(ETagCondition::Any) => {
            return Err(precondition_failed("If-None-Match: * and the key exists"));
        }
        Some(ETagCondition::ETag(_)) => {
            return Err(s3_error!(
                NotImplemented,
                "A header you provided implies functionality that is not implemented: If-None-Match takes only *"
            ))
        }
    }
    if let Some(cond) = if_match {
        let object = current.ok_or_else(|| s3_error!(NoSuchKey))?;
        if !strong_matches(cond, object.etag) {
            return Err(precondition_failed("If-Match"));
        }
    }
    Ok(())
}

/// The conditional headers of a DeleteObject (or one entry of DeleteObjects).
#[derive(Debug, Default)]
pub(crate) struct DeleteConditions<'a> {
    pub(crate) if_match: Option<&'a ETagCondition>,
    pub(crate) if_match_size: Option<i64>,
    pub(crate) if_match_last_modified_time: Option<&'a Timestamp>,
}

/// Checks a delete's conditions; `Ok(false)`: nothing to delete, answer 204.
pub(crate) fn check_delete(c: &DeleteConditions<'_>, current: Option<Current<'_>>) -> Result<bool, S3Error> {
    let Some(object) = current else {
        return match c.if_match {
            Some(_) => Err(s3_error!(NoSuchKey)),
            None => Ok(false),
        };
    };
    if c.if_match.is_some_and(|cond| !strong_matches(cond, object.etag)) {
        return Err(precondition_failed("If-Match"));
    }
    if c.if_match_size.is_some_and(|size| size != object.size_bytes as i64) {
        return Err(precondition_failed("x-amz-if-match-size"));
    }
    if c.if_match_last_modified_time
        .is_some_and(|t| timestamp_seconds(t) != seconds(object.last_modified))
    {
        return Err(precondition_failed("x-amz-if-match-last-modified-time"));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn object(etag: &str) -> Current<'_> {
        Current {
            etag,
            last_modified: UNIX_EPOCH + Duration::from_secs(1_000_000),
            size_bytes: 5,
        }
    }

    fn tag(v: &str) -> ETagCondition {
        ETagCondition::ETag(ETag::Strong(v.to_string()))
    }

    fn code(e: S3Error) -> String {
        e.code().as_str().to_string()
    }

    #[test]
    fn etags_are_the_md5_of_the_body() {
        assert_eq!(etag_of(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(etag_of(b"hello"), "5d41402abc4b2a76b9719d911017c592");
        check_content_md5(Some("XUFAKrxLKna5cZ2REBfFkg=="), b"hello").unwrap();
        assert_eq!(
            code(check_content_md5(Some("XUFAKrxLKna5cZ2REBfFkg=="), b"hellO").unwrap_err()),
            "BadDigest"
        );
        assert_eq!(
            code(check_content_md5(Some("nope"), b"hello").unwrap_err()),
            "InvalidDigest"
        );
    }

    #[test]
    fn reads_follow_the_documented_order() {
        let o = object("abc");
        let at = |secs: u64| Timestamp::from(UNIX_EPOCH + Duration::from_secs(secs));
        let (before, same) = (at(999_999), at(1_000_000));
        let c = ReadConditions {
            if_match: Some(&tag("zzz")),
            ..Default::default()
        };
        assert_eq!(code(check_read(&c, o).unwrap_err()), "PreconditionFailed");
        // If-Match true wins over a false If-Unmodified-Since (S3 returns 200).
        let c = ReadConditions {
            if_match: Some(&tag("abc")),
            if_unmodified_since: Some(&before),
            ..Default::default()
        };
        check_read(&c, o).unwrap();
        let c = ReadConditions {
            if_unmodified_since: Some(&before),
            ..Default::default()
        };
        assert_eq!(code(check_read(&c, o).unwrap_err()), "PreconditionFailed");
        let c = ReadConditions {
            if_none_match: Some(&tag("abc")),
            ..Default::default()
        };
        assert_eq!(code(check_read(&c, o).unwrap_err()), "NotModified");
        let c = ReadConditions {
            if_modified_since: Some(&same),
            ..Default::default()
        };
        assert_eq!(code(check_read(&c, o).unwrap_err()), "NotModified");
        let c = ReadConditions {
            if_modified_since: Some(&before),
            ..Default::default()
        };
        check_read(&c, o).unwrap();
    }

    #[test]
    fn writes_and_deletes_check_the_current_object() {
        let o = object("abc");
        assert_eq!(
            code(check_write(Some(&ETagCondition::Any), None, Some(o)).unwrap_err()),
            "PreconditionFailed"
        );
        check_write(Some(&ETagCondition::Any), None, None).unwrap();
        assert_eq!(
            code(check_write(None, Some(&tag("abc")), None).unwrap_err()),
            "NoSuchKey"
        );
        assert_eq!(
            code(check_write(None, Some(&tag("x")), Some(o)).unwrap_err()),
            "PreconditionFailed"
        );
        check_write(None, Some(&tag("abc")), Some(o)).unwrap();
        let c = DeleteConditions {
            if_match: Some(&tag("x")),
            ..Default::default()
        };
        assert_eq!(code(check_delete(&c, Some(o)).unwrap_err()), "PreconditionFailed");
        assert_eq!(code(check_delete(&c, None).unwrap_err()), "NoSuchKey");
        let c = DeleteConditions {
            if_match_size: Some(6),
            ..Default::default()
        };
        assert_eq!(code(check_delete(&c, Some(o)).unwrap_err()), "PreconditionFailed");
        assert!(!check_delete(&c, None).unwrap());
        assert!(check_delete(&DeleteConditions::default(), Some(o)).unwrap());
    }
}

//! SigV4 header signatures checked by the lab itself, for the requests s3s's own check
//! refuses: those signed for the `s3express` service (S3 Express `CreateSession`, and
//! requests signed with a session). The canonical request is built as S3 builds it
//! (path segments URI-encoded once, no normalisation; query pairs sorted; the signed
//! headers with trimmed values; the payload hash from `x-amz-content-sha256`), then
//! the signature is recomputed with the secret and compared in constant time.
//!
//! Before the signature, the same checks s3s makes on the ordinary path (and S3 on
//! both): `x-amz-date` well formed and within 15 minutes of the server's clock, the
//! credential scope's date equal to its date, `host` among the signed headers, and an
//! `x-amz-content-sha256` header. The payload hash itself is checked against the body
//! as it streams in ([`super::express::PayloadCheck`]).
//!
//! What S3 refuses before any of that ([`refused_scheme`]): a SigV2 `Authorization:
//! AWS AK:SIG` header or SigV2 query signature (`AWSAccessKeyId`, `Signature`) gets
//! S3's 400 `InvalidRequest` ("Please use AWS4-HMAC-SHA256"), never s3s's SigV2
//! check; a POST upload (an HTML form with a POST policy), which the lab does not
//! implement, gets 501 `NotImplemented`.

use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};

/// The parts of an `Authorization: AWS4-HMAC-SHA256 ...` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Authorization<'a> {
    pub(crate) access_key: &'a str,
    pub(crate) date: &'a str,
    pub(crate) region: &'a str,
    pub(crate) service: &'a str,
    pub(crate) signed_headers: Vec<&'a str>,
    pub(crate) signature: &'a str,
}

/// Parses an `AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request,
/// SignedHeaders=a;b, Signature=hex` header; `None` for anything else.
pub(crate) fn parse_authorization(value: &str) -> Option<Authorization<'_>> {
    let rest = value.strip_prefix("AWS4-HMAC-SHA256")?.trim_start();
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (name, v) = part.trim().split_once('=')?;
        match name {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => return None,
        }
    }
    let mut scope = credential?.split('/');
    let auth = Authorization {
        access_key: scope.next()?,
        date: scope.next()?,
        region: scope.next()?,
        service: scope.next()?,
        signed_headers: signed?.split(';').collect(),
        signature: signature?,
    };
    (scope.next()? == "aws4_request" && scope.next().is_none()).then_some(auth)
}

/// S3's message for a SigV2 signature.
pub(crate) const SIGV2_REFUSED: &str =
    "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.";

/// A request refused for its signing scheme or form, before its signature is looked
/// at: (HTTP status, S3's code, message); `None` for any other.
pub(crate) fn refused_scheme(parts: &http::request::Parts) -> Option<(u16, &'static str, &'static str)> {
    let header = parts.headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
    if header.is_some_and(|h| h.starts_with(b"AWS ")) {
        return Some((400, "InvalidRequest", SIGV2_REFUSED));
    }
    let query = parts.uri.query().unwrap_or("");
    let names = || query.split('&').map(|p| p.split('=').next().unwrap_or(""));
    if names().any(|n| n == "AWSAccessKeyId") && names().any(|n| n == "Signature") {
        return Some((400, "InvalidRequest", SIGV2_REFUSED));
    }
    let form = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"multipart/form-data"));
    if parts.method == http::Method::POST && form {
        return Some((
            501,
            "NotImplemented",
            "POST uploads (HTML forms with a POST policy) are not implemented by the lab",
        ));
    }
    None
}

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignatureProblem {
    /// A header the request says it signed is not in the request.
    MissingHeader(String),
    /// No `x-amz-date`.
    MissingDate,
    /// The signature is not the one the secret gives.
    Mismatch,
    /// `x-amz-date` is not `YYYYMMDDTHHMMSSZ`.
    BadDate,
    /// `x-amz-date` is more than [`MAX_SKEW_S`] from the server's clock.
    Skewed,
    /// The credential scope's date is not `x-amz-date`'s date.
    ScopeDate,
    /// `host` is not among the signed headers.
    HostNotSigned,
    /// No `x-amz-content-sha256`.
    MissingPayloadHash,
}

/// How far a request's `x-amz-date` may be from the server's clock (S3: 15 minutes).
pub(crate) const MAX_SKEW_S: i64 = 15 * 60;

/// Seconds since the epoch of an `x-amz-date` (`20130524T000000Z`).
pub(crate) fn parse_amz_date(v: &str) -> Option<i64> {
    let b = v.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = v.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// The checks made before the signature (see the module comment).
pub(crate) fn check_request(
    parts: &http::request::Parts,
    auth: &Authorization<'_>,
    now: SystemTime,
) -> Result<(), SignatureProblem> {
    let amz_date = parts
        .headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or(SignatureProblem::MissingDate)?;
    let at = parse_amz_date(amz_date).ok_or(SignatureProblem::BadDate)?;
    if auth.date != &amz_date[..8] {
        return Err(SignatureProblem::ScopeDate);
    }
    let now_s = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    if (now_s - at).abs() > MAX_SKEW_S {
        return Err(SignatureProblem::Skewed);
    }
    if !auth.signed_headers.iter().any(|h| h.eq_ignore_ascii_case("host")) {
        return Err(SignatureProblem::HostNotSigned);
    }
    if !parts.headers.contains_key("x-amz-content-sha256") {
        return Err(SignatureProblem::MissingPayloadHash);
    }
    Ok(())
}

/// Checks a header-signed request ([`check_request`]) and its signature with `secret`.
pub(crate) fn verify(
    parts: &http::request::Parts,
    auth: &Authorization<'_>,
    secret: &str,
) -> Result<(), SignatureProblem> {
    check_request(parts, auth, SystemTime::now())?;
    verify_signature(parts, auth, secret)
}

/// Checks a header-signed request's signature with `secret` (nothing else).
pub(crate) fn verify_signature(
    parts: &http::request::Parts,
    auth: &Authorization<'_>,
    secret: &str,
) -> Result<(), SignatureProblem> {
    let amz_date = parts
        .headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or(SignatureProblem::MissingDate)?;
    let canonical = canonical_request(parts, &auth.signed_headers)?;
    let scope = format!("{}/{}/{}/aws4_request", auth.date, auth.region, auth.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mut key = hmac_sha256(format!("AWS4{secret}").as_bytes(), auth.date.as_bytes());
    for part in [auth.region, auth.service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let expected = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    if constant_time_eq(expected.as_bytes(), auth.signature.as_bytes()) {
        Ok(())
    } else {
        Err(SignatureProblem::Mismatch)
    }
}

fn canonical_request(parts: &http::request::Parts, signed: &[&str]) -> Result<String, SignatureProblem> {
    let mut out = String::with_capacity(512);
    out.push_str(parts.method.as_str());
    out.push('\n');
    for (i, segment) in parts.uri.path().split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_into(&mut out, &percent_decode(segment));
    }
    out.push('\n');
    let mut pairs: Vec<(String, String)> = parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let mut key = String::new();
            encode_into(&mut key, &percent_decode(k));
            let mut value = String::new();
            encode_into(&mut value, &percent_decode(v));
            (key, value)
        })
        .collect();
    pairs.sort();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    out.push('\n');
    for name in signed {
        let values: Vec<String> = parts
            .headers
            .get_all(*name)
            .iter()
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        if values.is_empty() {
            return Err(SignatureProblem::MissingHeader(name.to_string()));
        }
        out.push_str(name);
        out.push(':');
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&signed.join(";"));
    out.push('\n');
    let payload = parts
        .headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("UNSIGNED-PAYLOAD");
    out.push_str(payload);
    Ok(out)
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hexval = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hexval(bytes[i + 1]), hexval(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// SigV4's URI encoding: unreserved characters as they are, every other byte `%XX`.
fn encode_into(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of AWS's SigV4 documentation for S3 ("GET Object", header auth):
    /// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
    fn aws_example() -> http::request::Parts {
        let (parts, ()) = http::Request::get("https://examplebucket.s3.amazonaws.com/test.txt")
            .header("host", "examplebucket.s3.amazonaws.com")
            .header("range", "bytes=0-9")
            .header(
                "x-amz-content-sha256",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            )
            .header("x-amz-date", "20130524T000000Z")
            .body(())
            .unwrap()
            .into_parts();
        parts
    }

    const EXAMPLE_AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

    #[test]
    fn the_documented_example_verifies() {
        let parts = aws_example();
        let auth = parse_authorization(EXAMPLE_AUTH).unwrap();
        assert_eq!(auth.access_key, "AKIAIOSFODNN7EXAMPLE");
        assert_eq!(auth.service, "s3");
        assert_eq!(
            auth.signed_headers,
            ["host", "range", "x-amz-content-sha256", "x-amz-date"]
        );
        verify_signature(&parts, &auth, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY").unwrap();
        assert_eq!(
            verify_signature(&parts, &auth, "another-secret"),
            Err(SignatureProblem::Mismatch)
        );
        let mut tampered = aws_example();
        tampered.headers.insert("range", "bytes=0-10".parse().unwrap());
        assert_eq!(
            verify_signature(&tampered, &auth, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            Err(SignatureProblem::Mismatch)
        );
        let mut missing = aws_example();
        missing.headers.remove("range");
        assert_eq!(
            verify_signature(&missing, &auth, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            Err(SignatureProblem::MissingHeader("range".into()))
        );
    }

    #[test]
    fn dates_scopes_host_and_payload_hash_are_checked_first() {
        assert_eq!(parse_amz_date("19700101T000000Z"), Some(0));
        assert_eq!(parse_amz_date("20130524T000000Z"), Some(1_369_353_600));
        assert_eq!(parse_amz_date("2013-05-24T00:00Z"), None);
        let parts = aws_example();
        let auth = parse_authorization(EXAMPLE_AUTH).unwrap();
        let at = UNIX_EPOCH + std::time::Duration::from_secs(1_369_353_600);
        check_request(&parts, &auth, at).unwrap();
        let late = at + std::time::Duration::from_secs(16 * 60);
        assert_eq!(check_request(&parts, &auth, late), Err(SignatureProblem::Skewed));
        let other_day = EXAMPLE_AUTH.replace("/20130524/", "/20130525/");
        let auth2 = parse_authorization(&other_day).unwrap();
        assert_eq!(check_request(&parts, &auth2, at), Err(SignatureProblem::ScopeDate));
        let no_host = EXAMPLE_AUTH.replace("SignedHeaders=host;", "SignedHeaders=");
        let auth3 = parse_authorization(&no_host).unwrap();
        assert_eq!(check_request(&parts, &auth3, at), Err(SignatureProblem::HostNotSigned));
        let mut no_hash = aws_example();
        no_hash.headers.remove("x-amz-content-sha256");
        assert_eq!(
            check_request(&no_hash, &auth, at),
            Err(SignatureProblem::MissingPayloadHash)
        );
    }

    #[test]
    fn sigv2_headers_queries_and_post_forms_are_refused_as_s3_does() {
        let parts = |req: http::request::Builder| req.body(()).unwrap().into_parts().0;
        let v2 = parts(http::Request::get("http://h/b/k").header("authorization", "AWS s3sweep:c2lnbmF0dXJl"));
        assert_eq!(refused_scheme(&v2), Some((400, "InvalidRequest", SIGV2_REFUSED)));
        let query = parts(http::Request::get(
            "http://h/b/k?AWSAccessKeyId=s3sweep&Expires=978307200&Signature=abc",
        ));
        assert_eq!(refused_scheme(&query).map(|r| r.0), Some(400));
        let form = parts(http::Request::post("http://h/b").header("content-type", "multipart/form-data; boundary=x"));
        assert_eq!(refused_scheme(&form).map(|r| r.1), Some("NotImplemented"));
        let v4 = parts(http::Request::get("http://h/b/k?X-Amz-Signature=abc").header("authorization", EXAMPLE_AUTH));
        assert_eq!(refused_scheme(&v4), None);
    }

    #[test]
    fn other_authorization_schemes_are_not_parsed() {
        assert!(parse_authorization("AWS AKID:signature").is_none());
        assert!(
            parse_authorization("AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=host, Signature=00").is_none()
        );
        assert!(parse_authorization(
            "AWS4-HMAC-SHA256 Credential=a/b/c/s3express/aws4_request, SignedHeaders=host, Signature=00"
        )
        .is_some());
    }

    #[test]
    fn canonical_queries_are_sorted_and_encoded() {
        let (parts, ()) = http::Request::get("http://127.0.0.1/b--x-s3/k%20y?x-id=GetObject&session&a=%2F")
            .body(())
            .unwrap()
            .into_parts();
        let c = canonical_request(&parts, &[]).unwrap();
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], "GET");
        assert_eq!(lines[1], "/b--x-s3/k%20y");
        assert_eq!(lines[2], "a=%2F&session=&x-id=GetObject");
    }
}

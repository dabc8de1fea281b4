//! The names a user gives that S3 and the SDK put in a request, checked in this one
//! place before any request is built (the SDK panics on some: a key too long for a
//! URI, a region with a line break in a signed header), so every command and the
//! function refuse them with the same clear error:
//!
//! - an object key: 1 to [`MAX_KEY_BYTES`] bytes of UTF-8 ("The object key name
//!   consists of a sequence of Unicode characters encoded in UTF-8, with a maximum
//!   length of 1,024 bytes", Amazon S3 User Guide, "Naming Amazon S3 objects"), no
//!   control characters (S3's XML 1.0 listings cannot carry most of them; s3sweep
//!   never writes one);
//! - a key prefix: the same, possibly empty;
//! - a region: what the SDK's S3 endpoint rules accept (`isValidHostLabel(Region,
//!   false)`, else "Invalid region: region was not a valid DNS name"): 1 to 63 ASCII
//!   letters, digits and hyphens, starting with a letter or digit (`us-east-1`,
//!   `us-gov-west-1`, `cn-north-1`);
//! - an endpoint: an `http://` or `https://` URL with a host, at most
//!   [`MAX_ENDPOINT_BYTES`], no whitespace or control characters.

use super::fields::preview;
pub use super::MAX_KEY_BYTES;

/// Longest region name: a DNS label.
pub const MAX_REGION_CHARS: usize = 63;
/// Longest endpoint URL, bytes (a host name is at most 253).
pub const MAX_ENDPOINT_BYTES: usize = 2048;

/// A value as an error shows it: quoted, escaped, cut after 60 characters.
pub fn shown(value: &str) -> String {
    preview(value)
}

/// Why a key, prefix, region or endpoint is refused; `shown` is the value as shown
/// ([`shown`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("an object key must not be empty")]
    EmptyKey,
    #[error("is {bytes} bytes; S3 object keys are at most {MAX_KEY_BYTES} bytes of UTF-8: {shown}")]
    KeyTooLong { bytes: usize, shown: String },
    #[error("must not contain control characters: {shown}")]
    KeyControl { shown: String },
    #[error("a region is 1 to {MAX_REGION_CHARS} letters, digits and hyphens, like us-east-1; got {shown}")]
    Region { shown: String },
    #[error("is {bytes} bytes; at most {MAX_ENDPOINT_BYTES}: {shown}")]
    EndpointTooLong { bytes: usize, shown: String },
    /// `reason`: the URL parser's own words.
    #[error("not a URL ({reason}): {shown}")]
    NotUrl { reason: String, shown: String },
    #[error("must not contain spaces or control characters: {shown}")]
    EndpointSpaces { shown: String },
    #[error("the scheme must be http or https (http://HOST[:PORT]): {shown}")]
    Scheme { shown: String },
    #[error("no host (http://HOST[:PORT]): {shown}")]
    NoHost { shown: String },
}

/// An object key S3 takes: 1 to 1,024 bytes, no control characters.
pub fn check_key(key: &str) -> Result<(), NameError> {
    if key.is_empty() {
        return Err(NameError::EmptyKey);
    }
    check_key_prefix(key)
}

/// A key prefix: at most 1,024 bytes (it is part of a key), no control characters.
pub fn check_key_prefix(prefix: &str) -> Result<(), NameError> {
    if prefix.len() > MAX_KEY_BYTES {
        return Err(NameError::KeyTooLong {
            bytes: prefix.len(),
            shown: preview(prefix),
        });
    }
    if prefix.chars().any(char::is_control) {
        return Err(NameError::KeyControl { shown: preview(prefix) });
    }
    Ok(())
}

/// A region the SDK's endpoint rules take (a DNS label).
pub fn check_region(region: &str) -> Result<(), NameError> {
    let label = (1..=MAX_REGION_CHARS).contains(&region.len())
        && region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && region.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric());
    if label {
        return Ok(());
    }
    Err(NameError::Region { shown: preview(region) })
}

/// An endpoint URL: `http://` or `https://`, a host, no whitespace or control
/// characters, at most [`MAX_ENDPOINT_BYTES`].
pub fn check_endpoint(url: &str) -> Result<(), NameError> {
    let shown = preview(url);
    if url.len() > MAX_ENDPOINT_BYTES {
        return Err(NameError::EndpointTooLong {
            bytes: url.len(),
            shown,
        });
    }
    let uri: http::Uri = match url.parse() {
        Ok(uri) => uri,
        Err(e) => {
            let reason = format!("{e}");
            return Err(NameError::NotUrl { reason, shown });
        }
    };
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(NameError::EndpointSpaces { shown });
    }
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(NameError::Scheme { shown });
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(NameError::NoHost { shown });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_1_to_1024_bytes_without_controls() {
        assert!(check_key("test/0/vectors").is_ok());
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES)).is_ok());
        // 512 two-byte characters: 1,024 bytes.
        assert!(check_key(&"é".repeat(512)).is_ok());
        assert!(check_key(&"é".repeat(513))
            .unwrap_err()
            .to_string()
            .contains("1026 bytes"));
        let long = check_key(&"k".repeat(70_000)).unwrap_err().to_string();
        assert!(long.contains("70000 bytes") && long.len() < 200, "{long}");
        assert!(check_key("").is_err());
        assert!(check_key("a\nb").is_err());
        assert!(check_key_prefix("").is_ok());
    }

    #[test]
    fn regions_are_dns_labels() {
        for ok in [
            "us-east-1",
            "us-gov-west-1",
            "cn-north-1",
            "eu-central-2",
            "il-central-1",
        ] {
            assert!(check_region(ok).is_ok(), "{ok}");
        }
        for bad in ["", "us-east-1\n", "-us", "us east", "us_east_1", &"a".repeat(64)] {
            assert!(check_region(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn endpoints_are_http_urls_with_a_host() {
        for ok in [
            "http://127.0.0.1:9000",
            "https://s3.eu-west-1.amazonaws.com",
            "http://[::1]:9000/",
        ] {
            assert!(check_endpoint(ok).is_ok(), "{ok}");
        }
        for bad in ["127.0.0.1:9000", "ftp://host", "http://", "http://h\n", "http://a b"] {
            assert!(check_endpoint(bad).is_err(), "{bad:?}");
        }
        assert!(check_endpoint(&format!("http://{}", "h".repeat(5000))).is_err());
    }
}

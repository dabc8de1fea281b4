//! One page of a bucket listing as S3 computes it, for ListObjects (v1) and
//! ListObjectsV2: keys in byte order from just after a marker, only those under a
//! prefix; with a delimiter, every key whose rest (after the prefix) holds the
//! delimiter rolls up into one common prefix (up to and including the first
//! delimiter); keys and common prefixes together count against max-keys. The next
//! marker is the last key or common prefix of a truncated page: resuming after a
//! common prefix skips every key under it, so no entry is given twice. The
//! continuation token of v2 is that marker in base64 (opaque to clients, as S3's).

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine as _;
use s3s::{s3_error, S3Error};

/// S3's largest page.
pub(crate) const MAX_KEYS: i32 = 1000;

/// What to list.
#[derive(Debug, Default)]
pub(crate) struct PageRequest<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) delimiter: Option<&'a str>,
    /// List only what sorts after this key or common prefix.
    pub(crate) after: Option<&'a str>,
    pub(crate) max_keys: usize,
}

/// One entry of a page.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry<'a, V> {
    Key(&'a str, &'a V),
    CommonPrefix(String),
}

/// A page: its entries in key order, and where the next one starts when truncated.
#[derive(Debug)]
pub(crate) struct Page<'a, V> {
    pub(crate) entries: Vec<Entry<'a, V>>,
    pub(crate) next_marker: Option<String>,
}

/// Lists one page of `objects` (see the module comment).
pub(crate) fn page<'a, V>(objects: &'a BTreeMap<String, V>, req: &PageRequest<'_>) -> Page<'a, V> {
    let start = match req.after {
        Some(after) if after >= req.prefix => Bound::Excluded(after),
        _ => Bound::Included(req.prefix),
    };
    let delimiter = req.delimiter.filter(|d| !d.is_empty());
    let mut entries: Vec<Entry<'a, V>> = Vec::new();
    let mut last_prefix: Option<String> = None;
    let mut truncated = false;
    for (key, value) in objects.range::<str, _>((start, Bound::Unbounded)) {
        if !key.starts_with(req.prefix) {
            break;
        }
        let rolled = delimiter.and_then(|d| {
            key[req.prefix.len()..]
                .find(d)
                .map(|i| key[..req.prefix.len() + i + d.len()].to_string())
        });
        if let Some(common) = &rolled {
            if req.after == Some(common.as_str()) || last_prefix.as_ref() == Some(common) {
                continue;
            }
        }
        if entries.len() == req.max_keys {
            truncated = req.max_keys > 0;
            break;
        }
        match rolled {
            Some(common) => {
                last_prefix = Some(common.clone());
                entries.push(Entry::CommonPrefix(common));
            }
            None => entries.push(Entry::Key(key, value)),
        }
    }
    let next_marker = truncated.then(|| entries.last()).flatten().map(|e| match e {
        Entry::Key(k, _) => (*k).to_string(),
        Entry::CommonPrefix(p) => p.clone(),
    });
    Page { entries, next_marker }
}

/// A client's max-keys, checked as S3 does (negative: InvalidArgument; over 1,000: 1,000).
pub(crate) fn max_keys(asked: Option<i32>) -> Result<usize, S3Error> {
    match asked {
        None => Ok(MAX_KEYS as usize),
        Some(n) if n < 0 => Err(s3_error!(InvalidArgument, "max-keys must be 0 or more, not {n}")),
        Some(n) => Ok(n.min(MAX_KEYS) as usize),
    }
}

/// The v2 continuation token of a marker.
pub(crate) fn token_of(marker: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(marker)
}

/// The marker of a v2 continuation token this server gave.
pub(crate) fn marker_of(token: &str) -> Result<String, S3Error> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| s3_error!(InvalidArgument, "The continuation token provided is incorrect"))
}

/// `encoding-type=url`: keys and prefixes URL-encoded in the answer, as S3 does
/// (every byte but unreserved characters and `/` as `%XX`).
pub(crate) fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(keys: &[&str]) -> BTreeMap<String, ()> {
        keys.iter().map(|k| (k.to_string(), ())).collect()
    }

    fn names<V>(p: &Page<'_, V>) -> Vec<String> {
        p.entries
            .iter()
            .map(|e| match e {
                Entry::Key(k, _) => k.to_string(),
                Entry::CommonPrefix(c) => format!("{c}*"),
            })
            .collect()
    }

    #[test]
    fn a_delimiter_rolls_keys_up_and_pages_give_every_entry_once() {
        let s = store(&["a", "d/1", "d/2", "d/e/3", "e/1", "f", "g/1"]);
        let mut after: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let p = page(
                &s,
                &PageRequest {
                    prefix: "",
                    delimiter: Some("/"),
                    after: after.as_deref(),
                    max_keys: 2,
                },
            );
            seen.extend(names(&p));
            match p.next_marker {
                Some(m) => after = Some(m),
                None => break,
            }
        }
        assert_eq!(seen, ["a", "d/*", "e/*", "f", "g/*"]);
        let p = page(
            &s,
            &PageRequest {
                prefix: "d/",
                delimiter: Some("/"),
                after: None,
                max_keys: 1000,
            },
        );
        assert_eq!(names(&p), ["d/1", "d/2", "d/e/*"]);
        assert!(p.next_marker.is_none());
    }

    #[test]
    fn tokens_and_encoding_round_trip() {
        assert_eq!(marker_of(&token_of("d/é")).unwrap(), "d/é");
        assert!(marker_of("%%%").is_err());
        assert_eq!(url_encode("a b/c+d"), "a%20b/c%2Bd");
        assert_eq!(max_keys(Some(5000)).unwrap(), 1000);
        assert!(max_keys(Some(-1)).is_err());
    }
}

//! Names: key templates (`test/{i}/vectors`) and S3 bucket-name rules, shared by the
//! request validation, `seed`, `serve` and the price table.

use crate::model::request::INDEX_PLACEHOLDER;

use super::fields::preview;
use super::MAX_KEY_BYTES;

/// A key template with exactly the `{i}` placeholder(s) substituted per object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<String>,
}

impl KeyTemplate {
    /// Parses a template; it must contain `{i}` and produce keys of at most 1,024 bytes.
    pub fn parse(template: &str, max_index: u32) -> Result<Self, String> {
        if !template.contains(INDEX_PLACEHOLDER) {
            return Err(format!(
                "must contain {INDEX_PLACEHOLDER} (the object index), got {}",
                preview(template)
            ));
        }
        if template.chars().any(|c| c.is_control()) {
            return Err("must not contain control characters".into());
        }
        let parts: Vec<String> = template.split(INDEX_PLACEHOLDER).map(str::to_string).collect();
        let t = KeyTemplate { parts };
        let longest = t.key(max_index).len();
        if longest > MAX_KEY_BYTES {
            return Err(format!(
                "produces keys of {longest} bytes; S3 keys are at most {MAX_KEY_BYTES}"
            ));
        }
        Ok(t)
    }

    /// The key of object `i`.
    pub fn key(&self, i: u32) -> String {
        let index = i.to_string();
        let mut key = String::with_capacity(self.parts.iter().map(String::len).sum::<usize>() + 8);
        for (n, part) in self.parts.iter().enumerate() {
            if n > 0 {
                key.push_str(&index);
            }
            key.push_str(part);
        }
        key
    }

    /// The index `i` whose key is `key`, if the template makes it (`{i}` in decimal,
    /// as [`KeyTemplate::key`] writes it).
    pub fn index_of(&self, key: &str) -> Option<u32> {
        let rest = key.strip_prefix(self.parts.first()?.as_str())?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count().min(10);
        (1..=digits)
            .filter_map(|n| rest[..n].parse::<u32>().ok())
            .find(|&i| self.key(i) == key)
    }

    /// The same template under `prefix` (its keys are `prefix` + this template's).
    pub fn under(&self, prefix: &str) -> KeyTemplate {
        let mut parts = self.parts.clone();
        parts[0] = format!("{prefix}{}", parts[0]);
        KeyTemplate { parts }
    }

    /// The template text.
    pub fn as_template(&self) -> String {
        self.parts.join(INDEX_PLACEHOLDER)
    }
}

/// S3 bucket naming rules (general purpose and directory buckets): 3 to 63 characters,
/// lowercase letters, digits, '.' and '-', starting and ending with a letter or digit.
pub fn check_bucket_name(name: &str) -> Result<(), String> {
    let len = name.len();
    if !(3..=63).contains(&len) {
        return Err(format!(
            "{} is not a bucket name: must be 3 to 63 characters long",
            preview(name)
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return Err(format!(
            "{} is not a bucket name: {c:?} is not allowed (lowercase letters, digits, '.' and '-' only)",
            preview(name)
        ));
    }
    let first = name.as_bytes()[0];
    let last = name.as_bytes()[len - 1];
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(format!(
            "{} is not a bucket name: must start and end with a letter or digit",
            preview(name)
        ));
    }
    if name.contains("..") {
        return Err(format!(
            "{} is not a bucket name: must not contain \"..\"",
            preview(name)
        ));
    }
    Ok(())
}

/// True for an S3 Express One Zone directory bucket name (`name--azid--x-s3`).
pub fn is_directory_bucket(name: &str) -> bool {
    name.ends_with("--x-s3")
}

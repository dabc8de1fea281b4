//! S3 bucket-name rules (general purpose and directory buckets), shared by the request
//! validation, `seed`, `serve` and the price table.

use super::fields::preview;

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

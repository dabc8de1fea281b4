//! S3 bucket-name rules (general purpose and directory buckets), shared by the request
//! validation, `seed`, `serve` and the price table.

use super::fields::preview;

/// Why a name is not a bucket name; `name` is the name as shown ([`preview`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BucketNameError {
    #[error("{name} is not a bucket name: must be 3 to 63 characters long")]
    Length { name: String },
    #[error("{name} is not a bucket name: {character:?} is not allowed (lowercase letters, digits, '.' and '-' only)")]
    Character { name: String, character: char },
    #[error("{name} is not a bucket name: must start and end with a letter or digit")]
    Ends { name: String },
    #[error("{name} is not a bucket name: must not contain \"..\"")]
    DoubleDot { name: String },
}

/// S3 bucket naming rules (general purpose and directory buckets): 3 to 63 characters,
/// lowercase letters, digits, '.' and '-', starting and ending with a letter or digit.
pub fn check_bucket_name(name: &str) -> Result<(), BucketNameError> {
    let len = name.len();
    let shown = || preview(name);
    if !(3..=63).contains(&len) {
        return Err(BucketNameError::Length { name: shown() });
    }
    if let Some(character) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return Err(BucketNameError::Character {
            name: shown(),
            character,
        });
    }
    let first = name.as_bytes()[0];
    let last = name.as_bytes()[len - 1];
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(BucketNameError::Ends { name: shown() });
    }
    if name.contains("..") {
        return Err(BucketNameError::DoubleDot { name: shown() });
    }
    Ok(())
}

/// True for an S3 Express One Zone directory bucket name (`name--azid--x-s3`).
pub fn is_directory_bucket(name: &str) -> bool {
    name.ends_with("--x-s3")
}

//! S3 URIs: where a result is written (`results_uri`, `s3://bucket/prefix`, the key
//! `<prefix>/<run_id>.json` made per run) and where `report` and `compare` read one
//! (`s3://bucket/key`). Parsed and checked here; nothing is sent.

use std::fmt;

use super::bucket_name::{check_bucket_name, BucketNameError};
use super::names::NameError;

/// Why an S3 URI or a metrics namespace is refused; `shown` is the text as shown
/// ([`super::fields::preview`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("must be an S3 URI like s3://my-bucket/s3sweep-results, got {shown}")]
    NotS3 { shown: String },
    #[error("names no bucket (s3://BUCKET/prefix), got {shown}")]
    NoBucket { shown: String },
    #[error("bucket {shown}: {reason}")]
    Bucket { shown: String, reason: BucketNameError },
    /// The path is no key prefix S3 takes.
    #[error(transparent)]
    Path(#[from] NameError),
    #[error("the prefix is {bytes} bytes; at most {MAX_RESULTS_PREFIX_BYTES} (the key adds the run id)")]
    PrefixTooLong { bytes: usize },
    #[error("names no object (s3://BUCKET/KEY), got {shown}")]
    NoObject { shown: String },
    #[error("must be 1 to {MAX_METRICS_NAMESPACE_CHARS} letters, digits, '.', '-', '_', '/', '#' or ':', got {shown}")]
    Namespace { shown: String },
    #[error("must not start with AWS/ (AWS's own namespaces), got {shown}")]
    ReservedNamespace { shown: String },
}

/// The scheme every S3 URI starts with.
pub const S3_SCHEME: &str = "s3://";
/// Longest prefix accepted, bytes: room under S3's 1,024-byte keys for the run id.
pub(crate) const MAX_RESULTS_PREFIX_BYTES: usize = 900;
/// Longest run id used in a key, bytes (a Lambda request id is 36).
const MAX_RUN_ID_BYTES: usize = 100;
/// Longest request `run_id`, characters.
pub(crate) const MAX_REQUEST_RUN_ID_CHARS: usize = 64;

/// A results destination: a bucket and a key prefix (empty, or without a trailing `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsUri {
    pub bucket: String,
    pub prefix: String,
}

/// One object: a bucket and a non-empty key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUri {
    pub bucket: String,
    pub key: String,
}

impl ObjectUri {
    /// The same key with `extension` in place of its last one (`a/b.json` -> `a/b.html`;
    /// a key without one gains it).
    pub fn with_extension(&self, extension: &str) -> ObjectUri {
        let name_at = self.key.rfind('/').map_or(0, |i| i + 1);
        let stem = match self.key[name_at..].rfind('.') {
            Some(dot) => &self.key[..name_at + dot],
            None => &self.key,
        };
        ObjectUri {
            bucket: self.bucket.clone(),
            key: format!("{stem}.{extension}"),
        }
    }
}

impl fmt::Display for ObjectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{S3_SCHEME}{}/{}", self.bucket, self.key)
    }
}

/// `s3://bucket/rest` split into a checked bucket name and `rest` (may be empty).
fn split(text: &str) -> Result<(String, String), DestinationError> {
    let shown = || super::fields::preview(text);
    let rest = text
        .strip_prefix(S3_SCHEME)
        .ok_or_else(|| DestinationError::NotS3 { shown: shown() })?;
    let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(DestinationError::NoBucket { shown: shown() });
    }
    check_bucket_name(bucket).map_err(|reason| DestinationError::Bucket {
        shown: super::fields::preview(bucket),
        reason,
    })?;
    super::names::check_key_prefix(path)?;
    Ok((bucket.to_string(), path.to_string()))
}

/// The request's destination fields: a `results_uri` and a `requests_log_uri` that
/// parse (returned parsed), a `run_id` that is a key as given (1 to
/// [`MAX_REQUEST_RUN_ID_CHARS`] of `A-Za-z0-9._-`), a `metrics_namespace` CloudWatch
/// accepts ([`check_metrics_namespace`]).
pub(crate) fn check_destination(
    request: &crate::model::SweepRequest,
    problems: &mut Vec<super::FieldProblem>,
) -> (Option<ResultsUri>, Option<ResultsUri>) {
    let mut parsed = |field: &str, uri: &Option<String>| match uri.as_deref().map(ResultsUri::parse) {
        Some(Ok(uri)) => Some(uri),
        Some(Err(e)) => {
            problems.push(super::FieldProblem {
                field: field.into(),
                message: e.to_string(),
            });
            None
        }
        None => None,
    };
    let uris = (
        parsed("results_uri", &request.results_uri),
        parsed("requests_log_uri", &request.requests_log_uri),
    );
    if let Some(id) = &request.run_id {
        let fits = (1..=MAX_REQUEST_RUN_ID_CHARS).contains(&id.chars().count());
        if !fits || !id.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
            problems.push(super::FieldProblem {
                field: "run_id".into(),
                message: format!(
                    "must be 1 to {MAX_REQUEST_RUN_ID_CHARS} letters, digits, '.', '_' or '-', got {}",
                    super::fields::preview(id)
                ),
            });
        }
    }
    if let Some(Err(e)) = request.metrics_namespace.as_deref().map(check_metrics_namespace) {
        problems.push(super::FieldProblem {
            field: "metrics_namespace".into(),
            message: e.to_string(),
        });
    }
    uris
}

/// Longest CloudWatch namespace, characters (PutMetricData's limit).
pub(crate) const MAX_METRICS_NAMESPACE_CHARS: usize = 255;

/// A namespace CloudWatch accepts for custom metrics: 1 to 255 of `A-Za-z0-9.-_/#:`,
/// not starting with `AWS/` (reserved for AWS's own services).
pub fn check_metrics_namespace(namespace: &str) -> Result<(), DestinationError> {
    let shown = super::fields::preview(namespace);
    let fits = (1..=MAX_METRICS_NAMESPACE_CHARS).contains(&namespace.chars().count());
    if !fits
        || !namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#:".contains(c))
    {
        return Err(DestinationError::Namespace { shown });
    }
    if namespace.starts_with("AWS/") {
        return Err(DestinationError::ReservedNamespace { shown });
    }
    Ok(())
}

impl ResultsUri {
    /// Parses `s3://bucket` or `s3://bucket/prefix` (a trailing `/` is dropped).
    pub fn parse(text: &str) -> Result<Self, DestinationError> {
        let (bucket, path) = split(text)?;
        let prefix = path.trim_end_matches('/').to_string();
        if prefix.len() > MAX_RESULTS_PREFIX_BYTES {
            return Err(DestinationError::PrefixTooLong { bytes: prefix.len() });
        }
        Ok(ResultsUri { bucket, prefix })
    }

    /// The same place one level down per UTC day of `unix_s`: `<prefix>/YYYY/MM/DD`
    /// (request `results_by_date`).
    pub fn dated(&self, unix_s: i64) -> ResultsUri {
        let day = time::OffsetDateTime::from_unix_timestamp(unix_s)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
            .date();
        let date = format!("{:04}/{:02}/{:02}", day.year(), u8::from(day.month()), day.day());
        let prefix = if self.prefix.is_empty() {
            date
        } else {
            format!("{}/{date}", self.prefix)
        };
        ResultsUri {
            bucket: self.bucket.clone(),
            prefix,
        }
    }

    /// The object of run `run_id`: `<prefix>/<run_id>.json`. Characters other than
    /// letters, digits, `-`, `_` and `.` in the id become `-`, so any id makes a key.
    pub fn object(&self, run_id: &str) -> ObjectUri {
        self.object_with(run_id, ".json")
    }

    /// [`Self::object`] with another ending: `<prefix>/<run_id><ending>`.
    pub fn object_with(&self, run_id: &str, ending: &str) -> ObjectUri {
        let id: String = run_id
            .chars()
            .take(MAX_RUN_ID_BYTES)
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let id = if id.is_empty() { "run".to_string() } else { id };
        let key = if self.prefix.is_empty() {
            format!("{id}{ending}")
        } else {
            format!("{}/{id}{ending}", self.prefix)
        };
        ObjectUri {
            bucket: self.bucket.clone(),
            key,
        }
    }
}

impl ObjectUri {
    /// Parses `s3://bucket/key` (the key not empty, not ending in `/`).
    pub fn parse(text: &str) -> Result<Self, DestinationError> {
        let (bucket, key) = split(text)?;
        if key.is_empty() || key.ends_with('/') {
            return Err(DestinationError::NoObject {
                shown: super::fields::preview(text),
            });
        }
        Ok(ObjectUri { bucket, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn destinations_and_objects() {
        let d = ResultsUri::parse("s3://my-results/sweeps/").unwrap();
        assert_eq!((d.bucket.as_str(), d.prefix.as_str()), ("my-results", "sweeps"));
        assert_eq!(
            d.object("6f1c-22aa").to_string(),
            "s3://my-results/sweeps/6f1c-22aa.json"
        );
        assert_eq!(
            ResultsUri::parse("s3://my-results").unwrap().object("a b/c").key,
            "a-b-c.json"
        );
        for bad in ["my-results/x", "https://x/y", "s3:///x", "s3://Bad_Bucket/x", ""] {
            assert!(ResultsUri::parse(bad).is_err(), "{bad}");
        }
        let o = ObjectUri::parse("s3://b-1/r/1.json").unwrap();
        assert_eq!((o.bucket.as_str(), o.key.as_str()), ("b-1", "r/1.json"));
        assert!(ObjectUri::parse("s3://b-1/").is_err());
        assert!(ObjectUri::parse("s3://b-1").is_err());
    }

    #[test]
    fn a_bad_results_uri_is_named_with_the_other_bad_fields() {
        let err = crate::plan::Plan::from_value(serde_json::json!(
            {"buckets": ["b-1"], "workers": [0], "results_uri": "my-results/runs"}
        ))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["workers[0]", "results_uri"], "{err}");
        assert!(err.to_string().contains("s3://"), "{err}");
        let err = crate::plan::Plan::from_value(serde_json::json!({"buckets": ["b-1"], "results_uri": 3})).unwrap_err();
        assert_eq!(err.fields(), vec!["results_uri"], "{err}");
        let plan = crate::plan::Plan::from_value(
            serde_json::json!({"buckets": ["b-1"], "results_uri": "s3://my-results/runs"}),
        )
        .unwrap();
        assert_eq!(plan.results_uri().unwrap().prefix, "runs");
    }

    #[test]
    fn an_object_beside_another_swaps_its_extension() {
        let uri = ResultsUri::parse("s3://r-1/runs.v2").unwrap().object("id.1");
        assert_eq!(uri.to_string(), "s3://r-1/runs.v2/id.1.json");
        assert_eq!(uri.with_extension("html").to_string(), "s3://r-1/runs.v2/id.1.html");
        let bare = ObjectUri {
            bucket: "r-1".into(),
            key: "a.b/c".into(),
        };
        assert_eq!(bare.with_extension("html").key, "a.b/c.html");
    }

    #[test]
    fn a_dated_destination_adds_the_utc_day() {
        let uri = ResultsUri::parse("s3://r-1/canary").unwrap();
        // 2026-12-01T23:59:59Z and a second later.
        assert_eq!(
            uri.dated(1_796_169_599).object("id").to_string(),
            "s3://r-1/canary/2026/12/01/id.json"
        );
        assert_eq!(
            uri.dated(1_796_169_600).object("id").to_string(),
            "s3://r-1/canary/2026/12/02/id.json"
        );
        let bare = ResultsUri::parse("s3://r-1").unwrap();
        assert_eq!(bare.dated(0).object("id").to_string(), "s3://r-1/1970/01/01/id.json");
    }

    #[test]
    fn a_metrics_namespace_is_one_cloudwatch_accepts() {
        assert!(check_metrics_namespace("s3sweep/canary").is_ok());
        for bad in ["", "AWS/S3", "has space", &"n".repeat(256)] {
            let err = check_metrics_namespace(bad).unwrap_err().to_string();
            assert!(err.contains("got"), "{bad}: {err}");
        }
        let problems = crate::plan::Plan::from_value(serde_json::json!({
            "buckets": ["b-1"], "metrics_namespace": "AWS/Lambda", "results_by_date": "yes"
        }))
        .unwrap_err()
        .to_string();
        assert!(
            problems.contains("metrics_namespace") && problems.contains("results_by_date"),
            "{problems}"
        );
    }

    #[test]
    fn a_run_id_is_checked_and_names_the_result() {
        let with = |id: serde_json::Value| {
            crate::plan::Plan::from_value(serde_json::json!({"buckets": ["b-1"], "run_id": id, "workers": [0]}))
                .unwrap_err()
                .fields()
                .contains(&"run_id")
        };
        for bad in [json!(""), json!("a/b"), json!("a b"), json!("x".repeat(65)), json!(7)] {
            assert!(with(bad.clone()), "{bad} accepted");
        }
        let longest = "x".repeat(64);
        for good in ["nightly-2026.12.01_a", longest.as_str()] {
            assert!(!with(json!(good)), "{good} refused");
        }
        let plan = crate::plan::Plan::from_value(json!({"buckets": ["b-1"], "run_id": "r-1"})).unwrap();
        let id = plan.request().run_id.as_deref().unwrap();
        let d = ResultsUri::parse("s3://my-results/runs").unwrap();
        assert_eq!(d.object(id).to_string(), "s3://my-results/runs/r-1.json");
    }
}

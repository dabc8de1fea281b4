//! What `seed` and `clean` check about a store before relying on its conditions:
//! [`check_conditional_writes`] (a probe key PUT twice with `If-None-Match: *` must
//! answer 412 the second time: `seed` counts on it to leave users' objects alone) and
//! [`check_conditional_deletes`] (a probe key deleted with a wrong ETag must be kept:
//! `clean` counts on it to keep an object a user wrote after it was proven). Each probe
//! writes one object under a random key no one else uses, `s3sweep-probe-*`, and
//! deletes it after.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use super::errors::{classify, Action, BucketError};
use super::manifest::new_owner_marker;

/// The probe object's body.
const PROBE_BODY: &[u8] = b"s3sweep probe: safe to delete";
/// An ETag no body has in practice: the condition the delete probe must fail.
const WRONG_ETAG: &str = "\"00000000000000000000000000000000\"";

/// A store that cannot be trusted with users' objects, or could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("{endpoint} overwrote an existing key on a PUT with If-None-Match: * (the probe key {key} in bucket {bucket}: the second PUT answered HTTP {status}, not 412): seed relies on that condition to leave users' objects alone, so it refuses to write to this store")]
    IgnoresIfNoneMatch {
        endpoint: String,
        bucket: String,
        key: String,
        status: u16,
    },
    #[error("{endpoint} deleted the probe key {key} in bucket {bucket} although the ETag sent with the delete did not match: it ignores conditional deletes, so an object a user writes at a seeded key after clean proved it would be deleted; clean refuses (--unconditional-deletes deletes without the condition, accepting that race)")]
    IgnoresDeleteCondition {
        endpoint: String,
        bucket: String,
        key: String,
    },
    #[error("checking that {endpoint} honours conditional deletes failed ({detail}); clean refuses (--unconditional-deletes deletes without the condition, accepting the race with a user's write)")]
    DeleteProbeFailed { endpoint: String, detail: String },
    /// The probe PUT itself failed (a missing bucket, refused credentials, ...).
    #[error(transparent)]
    Bucket(BucketError),
}

/// A fresh probe key.
fn probe_key(what: &str) -> String {
    format!("s3sweep-probe-{what}-{}", new_owner_marker())
}

/// A PUT of the probe body with `If-None-Match: *`: its ETag, or the HTTP status (0:
/// no answer) with the failure.
async fn put_probe(
    s3: &aws_sdk_s3::Client,
    endpoint: &str,
    bucket: &str,
    key: &str,
) -> Result<Option<String>, (u16, BucketError)> {
    match s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .if_none_match("*")
        .body(ByteStream::from_static(PROBE_BODY))
        .send()
        .await
    {
        Ok(out) => Ok(out.e_tag().map(str::to_string)),
        Err(e) => {
            let status = e.raw_response().map_or(0, |r| r.status().as_u16());
            Err((
                status,
                BucketError::from_failure(&classify(&e), Action::Write, bucket, key, endpoint),
            ))
        }
    }
}

/// Checks that the store answers 412 to a PUT with `If-None-Match: *` over a key that
/// exists, before `seed` writes anything else.
pub async fn check_conditional_writes(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    bucket: &str,
) -> Result<(), GuardError> {
    let name = super::endpoint_name(s3, endpoint);
    let key = probe_key("put");
    let etag = put_probe(s3, &name, bucket, &key)
        .await
        .map_err(|(_, e)| GuardError::Bucket(e))?;
    let second = put_probe(s3, &name, bucket, &key).await;
    let etag = match &second {
        Ok(again) => again.clone().or(etag),
        Err(_) => etag,
    };
    // The probe is ours either way: removed, conditional on the ETag last seen.
    let _ = delete_keys(s3, bucket, &[(key.clone(), etag)]).await;
    match second {
        Err((412, _)) => Ok(()),
        Err((_, e)) => Err(GuardError::Bucket(e)),
        Ok(_) => Err(GuardError::IgnoresIfNoneMatch {
            endpoint: name,
            bucket: bucket.to_string(),
            key,
            status: 200,
        }),
    }
}

/// What a DeleteObjects said about one key.
#[derive(Debug, PartialEq, Eq)]
enum DeleteAnswer {
    Deleted,
    /// A per-key error, with S3's code.
    Refused(String),
}

/// One DeleteObjects of `keys`, each conditional on its ETag when it has one.
async fn delete_keys(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    keys: &[(String, Option<String>)],
) -> Result<Vec<(String, DeleteAnswer)>, String> {
    let objects = keys
        .iter()
        .map(|(k, etag)| ObjectIdentifier::builder().key(k).set_e_tag(etag.clone()).build())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let delete = Delete::builder()
        .set_objects(Some(objects))
        .quiet(false)
        .build()
        .map_err(|e| e.to_string())?;
    let out = s3
        .delete_objects()
        .bucket(bucket)
        .delete(delete)
        .send()
        .await
        .map_err(|e| classify(&e).message)?;
    let mut answers: Vec<(String, DeleteAnswer)> = out
        .deleted()
        .iter()
        .filter_map(|d| d.key().map(|k| (k.to_string(), DeleteAnswer::Deleted)))
        .collect();
    answers.extend(out.errors().iter().filter_map(|e| {
        let code = e.code().unwrap_or("Error").to_string();
        e.key().map(|k| (k.to_string(), DeleteAnswer::Refused(code)))
    }));
    Ok(answers)
}

/// Checks that the store keeps an object whose delete names another ETag (the
/// condition `clean` puts on every delete), with a probe key written and removed here.
pub async fn check_conditional_deletes(
    s3: &aws_sdk_s3::Client,
    endpoint: &str,
    bucket: &str,
) -> Result<(), GuardError> {
    let failed = |detail: String| GuardError::DeleteProbeFailed {
        endpoint: endpoint.to_string(),
        detail,
    };
    let key = probe_key("delete");
    let etag = put_probe(s3, endpoint, bucket, &key)
        .await
        .map_err(|(_, e)| failed(format!("its probe PUT: {e}")))?;
    let answer = delete_keys(s3, bucket, &[(key.clone(), Some(WRONG_ETAG.into()))]).await;
    let still_there = s3.head_object().bucket(bucket).key(&key).send().await.is_ok();
    if still_there {
        let _ = delete_keys(s3, bucket, &[(key.clone(), etag)]).await;
    }
    match answer {
        Err(e) => Err(failed(format!("a DeleteObjects with an ETag condition: {e}"))),
        Ok(_) if !still_there => Err(GuardError::IgnoresDeleteCondition {
            endpoint: endpoint.to_string(),
            bucket: bucket.to_string(),
            key,
        }),
        Ok(answers) if answers.iter().any(|(k, a)| *k == key && *a != DeleteAnswer::Deleted) => Ok(()),
        Ok(answers) => Err(failed(format!(
            "the probe key was kept but the answer was {answers:?}, not PreconditionFailed"
        ))),
    }
}

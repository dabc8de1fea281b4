//! The lab's IAM gate (`serve --iam-policy FILE`, or [`IamGate::enforce`] in a test):
//! each S3 request authorized against a policy before the store sees it, as S3
//! authorizes it: `s3:GetObject` (GetObject, HeadObject) and `s3:PutObject`,
//! `s3:DeleteObject` on the object ARN `arn:aws:s3:::BUCKET/KEY`, `s3:ListBucket`
//! (ListObjects, HeadBucket) on the bucket ARN, and for a directory bucket
//! `s3express:CreateSession` on `arn:aws:s3express:REGION:ACCOUNT:bucket/NAME` with the
//! `s3express:SessionMode` condition key (the session then authorizes the bucket's
//! reads and writes, as in S3 Express). A refusal is S3's 403 `AccessDenied` naming the
//! action and resource. A GetObject or HeadObject of a missing key in a general purpose
//! bucket is S3's 404 only when the caller also has `s3:ListBucket` on the bucket, and
//! 403 `AccessDenied` without it ([`WithIam::missing`]). Without a policy every
//! request passes.

use std::sync::{Arc, RwLock};

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};

use super::iam::Enforcer;

/// The account and region the lab's ARNs name (the tests' expanded roles use them).
pub const LAB_ACCOUNT: &str = "123456789012";
pub const LAB_REGION: &str = "us-east-1";

/// The policy the lab enforces, if any; shared with the server's handle.
#[derive(Debug, Default)]
pub struct IamGate {
    enforcer: RwLock<Option<Arc<Enforcer>>>,
}

impl IamGate {
    /// Enforces `enforcer` from the next request on (`None`: every request passes).
    pub fn enforce(&self, enforcer: Option<Arc<Enforcer>>) {
        *self.enforcer.write().unwrap_or_else(|e| e.into_inner()) = enforcer;
    }

    /// The policy enforced, with what it allowed and refused.
    pub fn enforcer(&self) -> Option<Arc<Enforcer>> {
        self.enforcer.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Authorizes one request; a refusal is S3's `AccessDenied`.
    fn check(&self, action: &str, resource: &str, context: &[(&str, &str)]) -> S3Result<()> {
        let Some(enforcer) = self.enforcer() else {
            return Ok(());
        };
        enforcer.authorize(action, resource, context).map_err(|d| {
            tracing::info!(action, resource, "lab IAM: access denied");
            S3Error::with_message(S3ErrorCode::AccessDenied, d.message(true))
        })
    }
}

/// A directory bucket (`NAME--ZONE--x-s3`): authorized by its session.
fn is_directory(bucket: &str) -> bool {
    bucket.ends_with("--x-s3")
}

fn bucket_arn(bucket: &str) -> String {
    format!("arn:aws:s3:::{bucket}")
}

fn object_arn(bucket: &str, key: &str) -> String {
    format!("arn:aws:s3:::{bucket}/{key}")
}

fn directory_arn(bucket: &str) -> String {
    format!("arn:aws:s3express:{LAB_REGION}:{LAB_ACCOUNT}:bucket/{bucket}")
}

/// The store behind the gate.
#[derive(Debug, Clone)]
pub(crate) struct WithIam<S> {
    pub(crate) inner: S,
    pub(crate) gate: Arc<IamGate>,
}

impl<S> WithIam<S> {
    /// An object request: `action` on the object, unless the bucket is a directory
    /// bucket (its session was authorized at CreateSession).
    fn object(&self, action: &str, bucket: &str, key: &str) -> S3Result<()> {
        if is_directory(bucket) {
            return Ok(());
        }
        self.gate.check(action, &object_arn(bucket, key), &[])
    }

    /// A read of a missing key (`err` from the store): S3 answers 404 only to a caller
    /// who may list the bucket, and 403 `AccessDenied` to one who may not. From the
    /// GetObject and HeadObject API reference (Permissions, general purpose buckets):
    /// "If you have the s3:ListBucket permission on the bucket, Amazon S3 returns an
    /// HTTP status code 404 Not Found error. If you don't have the s3:ListBucket
    /// permission, Amazon S3 returns an HTTP status code 403 Access Denied error."
    /// A directory bucket's session authorizes its reads: its 404 stands.
    fn missing(&self, bucket: &str, err: S3Error) -> S3Error {
        let not_found = *err.code() == S3ErrorCode::NoSuchKey || err.status_code().is_some_and(|s| s.as_u16() == 404);
        if !not_found || is_directory(bucket) {
            return err;
        }
        self.list(bucket).err().unwrap_or(err)
    }

    /// A bucket-level list: `s3:ListBucket` on the bucket (directory: its session).
    fn list(&self, bucket: &str) -> S3Result<()> {
        if is_directory(bucket) {
            return Ok(());
        }
        self.gate.check("s3:ListBucket", &bucket_arn(bucket), &[])
    }
}

#[async_trait::async_trait]
impl<S: S3> S3 for WithIam<S> {
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        self.gate
            .check("s3:CreateBucket", &bucket_arn(&req.input.bucket), &[])?;
        self.inner.create_bucket(req).await
    }
    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.list(&req.input.bucket)?;
        self.inner.head_bucket(req).await
    }
    async fn create_session(&self, req: S3Request<CreateSessionInput>) -> S3Result<S3Response<CreateSessionOutput>> {
        let mode = req
            .input
            .session_mode
            .as_ref()
            .map_or("ReadWrite", |m| m.as_str())
            .to_string();
        self.gate.check(
            "s3express:CreateSession",
            &directory_arn(&req.input.bucket),
            &[("s3express:SessionMode", &mode)],
        )?;
        self.inner.create_session(req).await
    }
    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        self.object("s3:PutObject", &req.input.bucket, &req.input.key)?;
        self.inner.put_object(req).await
    }
    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        self.object("s3:GetObject", &req.input.bucket, &req.input.key)?;
        let bucket = req.input.bucket.clone();
        self.inner.get_object(req).await.map_err(|e| self.missing(&bucket, e))
    }
    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        self.object("s3:GetObject", &req.input.bucket, &req.input.key)?;
        let bucket = req.input.bucket.clone();
        self.inner.head_object(req).await.map_err(|e| self.missing(&bucket, e))
    }
    async fn list_buckets(&self, req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        self.gate.check("s3:ListAllMyBuckets", "*", &[])?;
        self.inner.list_buckets(req).await
    }
    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        self.list(&req.input.bucket)?;
        self.inner.list_objects(req).await
    }
    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.list(&req.input.bucket)?;
        self.inner.list_objects_v2(req).await
    }
    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.object("s3:DeleteObject", &req.input.bucket, &req.input.key)?;
        self.inner.delete_object(req).await
    }
    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        for o in &req.input.delete.objects {
            self.object("s3:DeleteObject", &req.input.bucket, &o.key)?;
        }
        self.inner.delete_objects(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iam::Policy;
    use crate::store::MemStore;

    use crate::layered::test_request as request;

    fn gated(policy: serde_json::Value) -> WithIam<MemStore> {
        let store = MemStore::new();
        store.insert("b", "k", bytes::Bytes::from_static(b"v"));
        let gate = Arc::new(IamGate::default());
        gate.enforce(Some(Arc::new(Enforcer::new(Policy::from_value(&policy).unwrap()))));
        WithIam { inner: store, gate }
    }

    #[tokio::test]
    async fn a_request_outside_the_policy_is_access_denied_naming_action_and_resource() {
        let s3 = gated(serde_json::json!({"Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
        ]}));
        let get = GetObjectInput::builder()
            .bucket("b".into())
            .key("k".into())
            .build()
            .unwrap();
        assert!(s3.get_object(request(get)).await.is_ok());
        let list = ListObjectsV2Input::builder().bucket("b".into()).build().unwrap();
        let err = s3.list_objects_v2(request(list)).await.unwrap_err();
        assert_eq!(*err.code(), S3ErrorCode::AccessDenied);
        let message = err.message().unwrap_or_default().to_string();
        assert!(
            message.contains("s3:ListBucket") && message.contains("\"arn:aws:s3:::b\""),
            "{message}"
        );
        let put = PutObjectInput::builder()
            .bucket("b".into())
            .key("k2".into())
            .build()
            .unwrap();
        assert_eq!(
            *s3.put_object(request(put)).await.unwrap_err().code(),
            S3ErrorCode::AccessDenied
        );
        let e = s3.gate.enforcer().unwrap();
        assert_eq!(e.denials().len(), 2);
        assert!(e.unused().is_empty(), "{:?}", e.unused());
    }

    fn get(key: &str) -> S3Request<GetObjectInput> {
        request(
            GetObjectInput::builder()
                .bucket("b".into())
                .key(key.into())
                .build()
                .unwrap(),
        )
    }

    fn head(key: &str) -> S3Request<HeadObjectInput> {
        request(
            HeadObjectInput::builder()
                .bucket("b".into())
                .key(key.into())
                .build()
                .unwrap(),
        )
    }

    /// S3's GetObject/HeadObject rule: a missing key is 404 with `s3:ListBucket`,
    /// 403 `AccessDenied` without it; a key that exists reads either way.
    #[tokio::test]
    async fn a_missing_key_is_403_without_list_bucket_and_404_with_it() {
        let read_only = gated(serde_json::json!({"Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
        ]}));
        assert!(read_only.get_object(get("k")).await.is_ok());
        let err = read_only.get_object(get("missing")).await.unwrap_err();
        assert_eq!(*err.code(), S3ErrorCode::AccessDenied, "{err:?}");
        assert!(err.message().unwrap_or_default().contains("s3:ListBucket"), "{err:?}");
        let err = read_only.head_object(head("missing")).await.unwrap_err();
        assert_eq!(*err.code(), S3ErrorCode::AccessDenied, "{err:?}");

        let with_list = gated(serde_json::json!({"Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"},
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b"}
        ]}));
        let err = with_list.get_object(get("missing")).await.unwrap_err();
        assert_eq!(*err.code(), S3ErrorCode::NoSuchKey, "{err:?}");
        assert!(with_list.head_object(head("k")).await.is_ok());
    }
}

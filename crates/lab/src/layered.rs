//! One wrapper for every behaviour the lab adds in front of its store: a [`ReadLayer`]
//! says what it does to reads (GetObject, HeadObject) and ListObjectsV2 pages, and [`Layered`] forwards every
//! operation the lab serves to the inner store, through the layer for reads. The
//! forwarding is written once here, not once per behaviour. An operation the store
//! implements and this wrapper does not forward would answer `NotImplemented`: every
//! operation of [`super::store::MemStore`] is listed here (a test in `store` checks).

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, S3};

/// What a layer does to reads; both default to passing the request through.
#[async_trait::async_trait]
pub(crate) trait ReadLayer: Send + Sync + 'static {
    async fn get_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        inner.get_object(req).await
    }

    async fn head_object<S: S3>(
        &self,
        inner: &S,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        inner.head_object(req).await
    }

    /// Listings pass through unless a layer delays them (the lab's listing delay).
    async fn list_objects_v2<S: S3>(
        &self,
        inner: &S,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        inner.list_objects_v2(req).await
    }
}

/// An inner store with a layer in front of its reads.
#[derive(Debug, Clone)]
pub(crate) struct Layered<S, L> {
    pub(crate) inner: S,
    pub(crate) layer: L,
}

#[async_trait::async_trait]
impl<S: S3, L: ReadLayer> S3 for Layered<S, L> {
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        self.inner.create_bucket(req).await
    }
    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.inner.head_bucket(req).await
    }
    async fn create_session(&self, req: S3Request<CreateSessionInput>) -> S3Result<S3Response<CreateSessionOutput>> {
        self.inner.create_session(req).await
    }
    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        self.inner.put_object(req).await
    }
    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        self.layer.get_object(&self.inner, req).await
    }
    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        self.layer.head_object(&self.inner, req).await
    }
    async fn list_buckets(&self, req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        self.inner.list_buckets(req).await
    }
    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        self.inner.list_objects(req).await
    }
    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.layer.list_objects_v2(&self.inner, req).await
    }
    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.inner.delete_object(req).await
    }
    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.inner.delete_objects(req).await
    }
}

/// A bare `S3Request` of `input` for the lab's unit tests (GET /, no credentials).
#[cfg(test)]
pub(crate) fn test_request<T>(input: T) -> S3Request<T> {
    S3Request {
        input,
        method: http::Method::GET,
        uri: http::Uri::from_static("/"),
        headers: Default::default(),
        extensions: Default::default(),
        credentials: None,
        region: None,
        service: None,
        trailing_headers: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemStore;

    struct PassThrough;
    impl ReadLayer for PassThrough {}

    use super::test_request as request;

    fn not_implemented<T: std::fmt::Debug>(r: &S3Result<T>) -> bool {
        matches!(r, Err(e) if *e.code() == s3s::S3ErrorCode::NotImplemented)
    }

    /// Every operation the store serves goes through the wrapper: none of them gets
    /// the trait's default `NotImplemented` answer.
    #[tokio::test]
    async fn every_store_operation_is_forwarded() {
        let store = MemStore::new();
        store.insert("b", "k", bytes::Bytes::from_static(b"v"));
        let l = Layered {
            inner: store,
            layer: PassThrough,
        };
        let lb = l.list_buckets(request(ListBucketsInput::default())).await;
        assert!(!not_implemented(&lb), "{lb:?}");
        let lo = l
            .list_objects(request(ListObjectsInput::builder().bucket("b".into()).build().unwrap()))
            .await;
        assert!(!not_implemented(&lo), "{lo:?}");
        let l2 = l
            .list_objects_v2(request(
                ListObjectsV2Input::builder().bucket("b".into()).build().unwrap(),
            ))
            .await;
        assert!(!not_implemented(&l2), "{l2:?}");
        let hb = l
            .head_bucket(request(HeadBucketInput::builder().bucket("b".into()).build().unwrap()))
            .await;
        assert!(hb.is_ok(), "{hb:?}");
        let ho = l
            .head_object(request(
                HeadObjectInput::builder()
                    .bucket("b".into())
                    .key("k".into())
                    .build()
                    .unwrap(),
            ))
            .await;
        assert!(ho.is_ok(), "{ho:?}");
        let d = l
            .delete_object(request(
                DeleteObjectInput::builder()
                    .bucket("b".into())
                    .key("k".into())
                    .build()
                    .unwrap(),
            ))
            .await;
        assert!(d.is_ok(), "{d:?}");
    }
}

//! One wrapper for every behaviour the lab adds in front of its store: a [`ReadLayer`]
//! says what it does to reads (GetObject, HeadObject), and [`Layered`] forwards every
//! operation the lab serves to the inner store, through the layer for reads. The
//! forwarding is written once here, not once per behaviour.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, S3};

/// What a layer does to reads; both default to passing the request through.
#[async_trait::async_trait]
pub trait ReadLayer: Send + Sync + 'static {
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
}

/// An inner store with a layer in front of its reads.
#[derive(Debug, Clone)]
pub struct Layered<S, L> {
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
    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.inner.list_objects_v2(req).await
    }
    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.inner.delete_object(req).await
    }
    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.inner.delete_objects(req).await
    }
}

//! aws-sdk-s3's endpoint rules with a cache that ignores the object key. The SDK puts
//! the key into the rules' parameters of every GetObject, and its own resolver keeps
//! one entry compared on every parameter, so with a new key per request it evaluated
//! the whole rule set (about 4% of the client's CPU per GET) every time. The rules of
//! aws-sdk-s3 1.157 never read `Key` (nor `Prefix` or `CopySource`): two requests
//! that differ only there get the same endpoint, which the tests below check against
//! the SDK's own resolver, so an SDK whose rules start to use them fails them.

use std::sync::RwLock;

use aws_sdk_s3::config::endpoint::{DefaultResolver, Params, ResolveEndpoint};
use aws_smithy_runtime_api::client::endpoint::EndpointFuture;
use aws_smithy_types::endpoint::Endpoint;

/// Most endpoints kept: one per bucket and region is the usual sweep.
const MAX_ENTRIES: usize = 64;

/// The SDK's default resolver behind a small cache keyed by every parameter but the
/// object key.
#[derive(Debug, Default)]
pub(crate) struct KeyBlindCache {
    rules: DefaultResolver,
    cache: RwLock<Vec<(Params, Endpoint)>>,
}

/// Whether `a` and `b` name the same endpoint: every parameter equal except `key`.
fn same_except_key(a: &Params, b: &Params) -> bool {
    a.bucket() == b.bucket()
        && a.region() == b.region()
        && a.use_fips() == b.use_fips()
        && a.use_dual_stack() == b.use_dual_stack()
        && a.endpoint() == b.endpoint()
        && a.force_path_style() == b.force_path_style()
        && a.accelerate() == b.accelerate()
        && a.use_global_endpoint() == b.use_global_endpoint()
        && a.use_object_lambda_endpoint() == b.use_object_lambda_endpoint()
        && a.prefix() == b.prefix()
        && a.copy_source() == b.copy_source()
        && a.disable_access_points() == b.disable_access_points()
        && a.disable_multi_region_access_points() == b.disable_multi_region_access_points()
        && a.use_arn_region() == b.use_arn_region()
        && a.use_s3_express_control_endpoint() == b.use_s3_express_control_endpoint()
        && a.disable_s3_express_session_auth() == b.disable_s3_express_session_auth()
}

impl KeyBlindCache {
    fn cached(&self, params: &Params) -> Option<Endpoint> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        cache
            .iter()
            .find(|(p, _)| same_except_key(p, params))
            .map(|(_, e)| e.clone())
    }
}

impl ResolveEndpoint for KeyBlindCache {
    fn resolve_endpoint<'a>(&'a self, params: &'a Params) -> EndpointFuture<'a> {
        if let Some(endpoint) = self.cached(params) {
            return EndpointFuture::ready(Ok(endpoint));
        }
        EndpointFuture::new(async move {
            let endpoint = self.rules.resolve_endpoint(params).await?;
            let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
            cache.push((params.clone(), endpoint.clone()));
            Ok(endpoint)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(bucket: &str, key: &str, endpoint: Option<&str>) -> Params {
        let mut b = Params::builder()
            .region("us-east-1")
            .use_fips(false)
            .use_dual_stack(false)
            .accelerate(false)
            .force_path_style(endpoint.is_some())
            .bucket(bucket)
            .key(key);
        if let Some(url) = endpoint {
            b = b.endpoint(url);
        }
        b.build().unwrap()
    }

    /// The SDK's rules give the same endpoint whatever the key: the cache's premise.
    #[tokio::test]
    async fn the_rules_ignore_the_key_and_the_cache_answers_as_they_do() {
        let rules = DefaultResolver::new();
        let cache = KeyBlindCache::default();
        for (bucket, endpoint) in [
            ("standard-bucket", None),
            ("standard-bucket", Some("https://127.0.0.1:9000")),
            ("express-like--lab1-az1--x-s3", Some("https://127.0.0.1:9000")),
            ("my-bucket--use1-az4--x-s3", None),
        ] {
            let a = params(bucket, "test/1/vectors", endpoint);
            let b = params(bucket, "another/key with spaces/%41", endpoint);
            let from_rules = rules.resolve_endpoint(&a).await.unwrap();
            assert_eq!(
                from_rules,
                rules.resolve_endpoint(&b).await.unwrap(),
                "{bucket} {endpoint:?}"
            );
            assert_eq!(cache.resolve_endpoint(&a).await.unwrap(), from_rules);
            // The second key is answered from the cache.
            assert!(cache.cached(&b).is_some());
            assert_eq!(cache.resolve_endpoint(&b).await.unwrap(), from_rules);
        }
        // Another bucket is another entry.
        assert!(cache
            .cached(&params("other-bucket", "k", Some("https://127.0.0.1:9000")))
            .is_none());
        assert_eq!(cache.cache.read().unwrap().len(), 4);
    }
}

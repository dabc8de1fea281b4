//! The preflight's own EC2 client: the two read-only calls `preflight --subnet-ids`
//! makes (DescribeSubnets by id, DescribeVpcEndpoints filtered on `vpc-id`), spoken in
//! EC2's Query API instead of through the SDK's EC2 crate (the largest crate of the
//! build, for two calls). Each call is a form-encoded POST (`Action=...&Version=
//! 2016-11-15&...`) to the region's endpoint `https://ec2.REGION.amazonaws.com` (or the
//! configured one: `AWS_ENDPOINT_URL_EC2`, the profile's `services` section, then
//! `AWS_ENDPOINT_URL`, as the SDK resolves it), signed with SigV4 for service `ec2` by
//! the SDK's own signer with the credentials of the AWS configuration's provider chain,
//! sent on the project's [`Transport`]. Pages are followed by `NextToken` (at most
//! [`MAX_PAGES`]); every answer is read within [`CALL_TIMEOUT`] and at most
//! [`MAX_RESPONSE_BYTES`]; an error answer (`<Response><Errors><Error><Code>`, with an
//! HTTP 4xx or 5xx) becomes an error naming its code, and throttling or a 5xx is tried
//! again, [`ATTEMPTS`] times in all. Shapes as in AWS's Amazon EC2 API Reference:
//! DescribeSubnets (docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html:
//! `subnetSet/item/{subnetId,availabilityZoneId,vpcId}`, `nextToken`),
//! DescribeVpcEndpoints (.../API_DescribeVpcEndpoints.html: `vpcEndpointSet/item/
//! serviceName`, `nextToken`; `Filter.N.Name`/`Filter.N.Value.M`), query requests and
//! their common parameters (.../Query-requests.html, .../CommonParameters.html), and
//! error answers (.../errors-overview.html#api-error-response).

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4::SigningParams;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::body::SdkBody;
use aws_types::service_config::ServiceConfigKey;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::transport::{Transport, TransportSettings};

/// The Query API version the calls are written to (the current EC2 API version).
const API_VERSION: &str = "2016-11-15";
/// Most bytes of one answer kept (a page of 1,000 VPC endpoints with their policies is
/// well under this); a longer answer is an error, not a truncated list.
pub(crate) const MAX_RESPONSE_BYTES: usize = 8 << 20;
/// Longest one attempt (its headers and its whole body) may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Most pages followed through `NextToken`.
pub(crate) const MAX_PAGES: usize = 100;
/// Attempts of one page when the answer is throttling, a 5xx or no answer.
const ATTEMPTS: u32 = 3;
/// Error codes EC2 answers when it throttles (docs: ec2-api-throttling).
const THROTTLING_CODES: [&str; 3] = ["RequestLimitExceeded", "Throttling", "ThrottlingException"];

/// One subnet as EC2 describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subnet {
    pub id: String,
    pub zone_id: String,
    pub vpc_id: String,
}

/// How an EC2 call failed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum Ec2Error {
    #[error("EC2 answered HTTP {status} {code}: {message}")]
    Answered { status: u16, code: String, message: String },
    #[error("EC2 answered HTTP {status} without an error code: {body}")]
    Unreadable { status: u16, body: String },
    #[error("EC2's answer could not be read: {0}")]
    Parse(String),
    #[error("EC2's answer is over {MAX_RESPONSE_BYTES} bytes")]
    TooLarge,
    #[error("EC2 did not answer within {} s", CALL_TIMEOUT.as_secs())]
    Timeout,
    #[error("EC2 could not be reached: {0}")]
    Connection(String),
    #[error("EC2 gave more than {MAX_PAGES} pages")]
    TooManyPages,
    #[error("no AWS credentials: {0}")]
    Credentials(String),
    #[error("signing the request: {0}")]
    Signing(String),
}

impl Ec2Error {
    /// Throttling, a 5xx or no answer: worth another attempt.
    fn transient(&self) -> bool {
        match self {
            Ec2Error::Answered { status, code, .. } => *status >= 500 || THROTTLING_CODES.contains(&code.as_str()),
            Ec2Error::Unreadable { status, .. } => *status >= 500,
            Ec2Error::Timeout | Ec2Error::Connection(_) => true,
            _ => false,
        }
    }
}

/// The preflight's EC2 client: endpoint, region, credentials and a small transport.
pub(crate) struct Ec2Query {
    transport: Transport,
    endpoint: String,
    region: String,
    credentials: Option<SharedCredentialsProvider>,
}

impl Ec2Query {
    /// The client of the AWS configuration (its credentials and EC2 endpoint), in `region`.
    pub(crate) async fn new(region: &str) -> Self {
        let transport = Transport::new(TransportSettings {
            pool_connections: 2,
            connect_timeout: Duration::from_secs(10),
            tcp_keepalive: None,
            pool_idle_timeout: Duration::from_secs(10),
            lanes: 1,
        });
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(transport.http_client())
            .region(aws_config::Region::new(region.to_string()))
            .load()
            .await;
        Ec2Query {
            endpoint: endpoint_of(&shared, region),
            region: region.to_string(),
            credentials: shared.credentials_provider(),
            transport,
        }
    }

    /// DescribeSubnets of `ids`, every page: each subnet's zone id and VPC.
    pub(crate) async fn describe_subnets(&self, ids: &[String]) -> Result<Vec<Subnet>, Ec2Error> {
        let mut params = vec![("Action".to_string(), "DescribeSubnets".to_string())];
        params.extend(
            ids.iter()
                .enumerate()
                .map(|(i, id)| (format!("SubnetId.{}", i + 1), id.clone())),
        );
        let pages: Vec<SubnetsPage> = self.pages(params).await?;
        Ok(pages
            .into_iter()
            .flat_map(|p| p.subnet_set.items)
            .map(SubnetItem::into_subnet)
            .collect())
    }

    /// DescribeVpcEndpoints filtered on `vpc`, every page: the endpoints' service names.
    pub(crate) async fn vpc_endpoint_services(&self, vpc: &str) -> Result<Vec<String>, Ec2Error> {
        let params = vec![
            ("Action".to_string(), "DescribeVpcEndpoints".to_string()),
            ("Filter.1.Name".to_string(), "vpc-id".to_string()),
            ("Filter.1.Value.1".to_string(), vpc.to_string()),
        ];
        let pages: Vec<EndpointsPage> = self.pages(params).await?;
        Ok(pages
            .into_iter()
            .flat_map(|p| p.vpc_endpoint_set.items)
            .filter_map(|e| e.service_name)
            .collect())
    }

    /// Every page of one action, signed with the configuration's credentials.
    async fn pages<P: DeserializeOwned + Paged>(&self, params: Vec<(String, String)>) -> Result<Vec<P>, Ec2Error> {
        let identity = self.identity().await?;
        follow_pages(params, |form| self.call(&identity, form)).await
    }

    async fn identity(&self) -> Result<Identity, Ec2Error> {
        let provider = self
            .credentials
            .as_ref()
            .ok_or_else(|| Ec2Error::Credentials("no credentials provider configured".into()))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| Ec2Error::Credentials(crate::s3::errors::chain(&e)))?;
        Ok(Identity::from(credentials))
    }

    /// One form POSTed: the 2xx answer's body, after at most [`ATTEMPTS`] attempts.
    async fn call(&self, identity: &Identity, form: String) -> Result<String, Ec2Error> {
        let mut attempt = 1;
        loop {
            let result = match tokio::time::timeout(CALL_TIMEOUT, self.attempt(identity, &form)).await {
                Ok(result) => result,
                Err(_) => Err(Ec2Error::Timeout),
            };
            match result {
                Err(e) if e.transient() && attempt < ATTEMPTS => {
                    tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn attempt(&self, identity: &Identity, form: &str) -> Result<String, Ec2Error> {
        let request = self.signed(identity, form)?;
        let response = self
            .transport
            .send(request, Some(CALL_TIMEOUT))
            .await
            .map_err(|e| Ec2Error::Connection(crate::s3::errors::chain(&e)))?;
        let status = response.status().as_u16();
        let body = read_bounded(response.into_body()).await?;
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(error_of(status, &body))
        }
    }

    /// The POST of `form` to the endpoint, signed for service `ec2`.
    fn signed(&self, identity: &Identity, form: &str) -> Result<http::Request<SdkBody>, Ec2Error> {
        let uri = format!("{}/", self.endpoint);
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        let params = SigningParams::builder()
            .identity(identity)
            .region(&self.region)
            .name("ec2")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| Ec2Error::Signing(e.to_string()))?
            .into();
        let headers = [("content-type", content_type)];
        let signable = SignableRequest::new(
            "POST",
            uri.as_str(),
            headers.into_iter(),
            SignableBody::Bytes(form.as_bytes()),
        )
        .map_err(|e| Ec2Error::Signing(e.to_string()))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| Ec2Error::Signing(e.to_string()))?
            .into_parts();
        let mut request = http::Request::post(uri)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(SdkBody::from(form.to_string()))
            .map_err(|e| Ec2Error::Signing(e.to_string()))?;
        instructions.apply_to_request_http1x(&mut request);
        Ok(request)
    }
}

/// Every page of one action: `params` plus `Version`, then `NextToken` until EC2
/// gives none (at most [`MAX_PAGES`]); `fetch` POSTs one form and gives the answer.
async fn follow_pages<P, F, Fut>(params: Vec<(String, String)>, fetch: F) -> Result<Vec<P>, Ec2Error>
where
    P: DeserializeOwned + Paged,
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<String, Ec2Error>>,
{
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        if pages.len() == MAX_PAGES {
            return Err(Ec2Error::TooManyPages);
        }
        let mut form = params.clone();
        form.push(("Version".to_string(), API_VERSION.to_string()));
        if let Some(t) = &token {
            form.push(("NextToken".to_string(), t.clone()));
        }
        let page: P = parse_page(&fetch(encode_form(&form)).await?)?;
        token = page.next_token();
        pages.push(page);
        if token.is_none() {
            return Ok(pages);
        }
    }
}

/// The EC2 endpoint as the SDK resolves it: `AWS_ENDPOINT_URL_EC2` or the profile's
/// `services` section, then the global `AWS_ENDPOINT_URL`/`endpoint_url`, then the
/// region's own.
fn endpoint_of(config: &SdkConfig, region: &str) -> String {
    let key = ServiceConfigKey::builder()
        .service_id("EC2")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build();
    key.ok()
        .and_then(|key| config.service_config().and_then(|c| c.load_config(key)))
        .or_else(|| config.endpoint_url().map(str::to_string))
        .map(|e| e.trim_end_matches('/').to_string())
        .unwrap_or_else(|| regional_endpoint(region))
}

/// `https://ec2.REGION.amazonaws.com` (`.amazonaws.com.cn` in the China regions).
fn regional_endpoint(region: &str) -> String {
    let suffix = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    format!("https://ec2.{region}.{suffix}")
}

/// `k=v&k=v`, each percent-encoded but for RFC 3986's unreserved characters.
fn encode_form(params: &[(String, String)]) -> String {
    let encode = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The body, at most [`MAX_RESPONSE_BYTES`] (a longer one is [`Ec2Error::TooLarge`]).
async fn read_bounded(mut body: SdkBody) -> Result<String, Ec2Error> {
    let mut kept = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Ec2Error::Connection(crate::s3::errors::chain(e.as_ref())))?;
        if let Some(data) = frame.data_ref() {
            if kept.len() + data.len() > MAX_RESPONSE_BYTES {
                return Err(Ec2Error::TooLarge);
            }
            kept.extend_from_slice(data);
        }
    }
    String::from_utf8(kept).map_err(|e| Ec2Error::Parse(e.to_string()))
}

/// An error answer: its first `<Error>`'s code and message, or its start when it has none.
pub(crate) fn error_of(status: u16, body: &str) -> Ec2Error {
    match quick_xml::de::from_str::<ErrorResponse>(body) {
        Ok(ErrorResponse { errors }) if !errors.error.is_empty() => {
            let first = errors.error.into_iter().next().unwrap_or_default();
            Ec2Error::Answered {
                status,
                code: first.code,
                message: first.message.unwrap_or_default(),
            }
        }
        _ => Ec2Error::Unreadable {
            status,
            body: body.chars().take(200).collect(),
        },
    }
}

/// One page of a 2xx answer.
pub(crate) fn parse_page<P: DeserializeOwned>(body: &str) -> Result<P, Ec2Error> {
    quick_xml::de::from_str(body).map_err(|e| Ec2Error::Parse(e.to_string()))
}

/// A page that may name the next one.
trait Paged {
    fn next_token(&self) -> Option<String>;
}

/// EC2's list: `<xSet><item>...</item>...</xSet>`.
#[derive(Debug, Deserialize)]
struct ItemSet<T> {
    #[serde(default, rename = "item")]
    items: Vec<T>,
}

impl<T> Default for ItemSet<T> {
    fn default() -> Self {
        ItemSet { items: Vec::new() }
    }
}

/// `<DescribeSubnetsResponse>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubnetsPage {
    #[serde(default)]
    subnet_set: ItemSet<SubnetItem>,
    next_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubnetItem {
    subnet_id: Option<String>,
    availability_zone_id: Option<String>,
    vpc_id: Option<String>,
}

impl SubnetItem {
    fn into_subnet(self) -> Subnet {
        Subnet {
            id: self.subnet_id.unwrap_or_default(),
            zone_id: self.availability_zone_id.unwrap_or_default(),
            vpc_id: self.vpc_id.unwrap_or_default(),
        }
    }
}

/// `<DescribeVpcEndpointsResponse>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EndpointsPage {
    #[serde(default)]
    vpc_endpoint_set: ItemSet<EndpointItem>,
    next_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EndpointItem {
    service_name: Option<String>,
}

/// A token that is absent or empty ends the pages.
fn token(t: &Option<String>) -> Option<String> {
    t.as_ref().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

impl Paged for SubnetsPage {
    fn next_token(&self) -> Option<String> {
        token(&self.next_token)
    }
}

impl Paged for EndpointsPage {
    fn next_token(&self) -> Option<String> {
        token(&self.next_token)
    }
}

/// `<Response><Errors><Error><Code/><Message/></Error></Errors></Response>`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorResponse {
    errors: ErrorList,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorList {
    #[serde(default)]
    error: Vec<ErrorItem>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorItem {
    code: String,
    message: Option<String>,
}

#[cfg(test)]
#[path = "ec2_query_tests.rs"]
mod tests;

//! Who measured a result and from where: the network path the Lambda function was
//! deployed with ([`Deployment`], from the template's environment variables) and, for
//! a result written by another client (the boto3 baseline function, `baseline/`), the
//! row fields that client could not measure ([`Unmeasured`]).

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;

closed_set! {
    /// How the function reached S3.
    pub enum NetworkPath {
        /// Outside any VPC: Lambda's own network, in any zone of the region.
        Default = "default",
        /// In the subnets the template was given (template parameters `SubnetIds`,
        /// `SecurityGroupIds`), reaching S3 through the VPC's routes (a gateway endpoint).
        Vpc = "vpc",
    }
}

/// Where the function was deployed (`environment.lambda.deployment`), from the
/// template's `S3SWEEP_NETWORK_PATH` and `S3SWEEP_SUBNET_ZONE_IDS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    pub network_path: NetworkPath,
    /// The zone ids of the function's subnets (e.g. `use1-az4`), as the deployment
    /// gave them (template parameter `SubnetZoneIds`); empty when not given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnet_zone_ids: Vec<String>,
}

impl Deployment {
    /// `default`, `vpc` or `vpc (use1-az4, use1-az6)`.
    pub fn describe(&self) -> String {
        if self.subnet_zone_ids.is_empty() {
            self.network_path.name().to_string()
        } else {
            format!("{} ({})", self.network_path, self.subnet_zone_ids.join(", "))
        }
    }
}

closed_set! {
    /// A row field a client other than s3sweep could not measure: it is left at zero
    /// in every row and listed in the result's `not_measured`.
    pub enum Unmeasured {
        /// First byte from the connection in hand (boto3's clock would include
        /// signing and the pool wait).
        TtfbMs = "ttfb_ms",
        PoolWaitMs = "pool_wait_ms",
        ConnectionsOpened = "connections_opened",
        ConnectMsTotal = "connect_ms_total",
        TlsHandshakes = "tls_handshakes",
        SessionRequests = "session_requests",
        RetriesByCause = "retries_by_cause",
        ThrottledResponses = "throttled_responses",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_describe_their_path_and_zones() {
        let d: Deployment =
            serde_json::from_str(r#"{"network_path": "vpc", "subnet_zone_ids": ["use1-az4"]}"#).unwrap();
        assert_eq!(d.describe(), "vpc (use1-az4)");
        let d: Deployment = serde_json::from_str(r#"{"network_path": "default"}"#).unwrap();
        assert_eq!(d.describe(), "default");
        assert!(serde_json::from_str::<Deployment>(r#"{"network_path": "nat"}"#).is_err());
        assert_eq!(Unmeasured::from_name("pool_wait_ms"), Some(Unmeasured::PoolWaitMs));
    }
}

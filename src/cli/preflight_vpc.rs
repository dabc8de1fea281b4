//! `s3sweep preflight --subnet-ids ...`: the function's subnets looked at through EC2,
//! not taken on trust. DescribeSubnets gives each subnet's zone id: Lambda places the
//! function's network interfaces in every subnet given and runs an invocation in any of
//! them, so every subnet must be in the directory bucket's zone, or part of an
//! "in-zone" run crosses zones. DescribeVpcEndpoints (filtered on the subnets' VPC)
//! says whether the endpoints docs/deploy.md names exist: S3 and S3 Express gateway
//! endpoints (required: the buckets), and Lambda's interface endpoint (a fan-out's and
//! a memory sweep's Lambda calls; a NAT gateway also reaches Lambda, so its absence is
//! a warning). Each problem and warning is one line with its fix.

pub(crate) use super::ec2_query::Subnet;
use super::ec2_query::{Ec2Error, Ec2Query};

/// The EC2 client of the preflight: the AWS configuration's credentials and endpoint
/// (`AWS_ENDPOINT_URL_EC2` for an emulator), in `region`.
pub(super) async fn ec2_client(region: &str) -> Ec2Query {
    Ec2Query::new(region).await
}

/// An EC2 call of the preflight that failed, with its fix.
#[derive(Debug, thiserror::Error)]
enum VpcProblem {
    #[error(
        "EC2 DescribeSubnets {} failed ({error}): check the ids (SUBNET_IDS) and that these credentials may describe them",
        ids.join(",")
    )]
    Subnets { ids: Vec<String>, error: Ec2Error },
    #[error("EC2 DescribeVpcEndpoints of {vpc} failed ({error})")]
    Endpoints { vpc: String, error: Ec2Error },
}

/// DescribeSubnets of `ids`: each subnet's zone id and VPC.
async fn describe_subnets(ec2: &Ec2Query, ids: &[String]) -> Result<Vec<Subnet>, VpcProblem> {
    ec2.describe_subnets(ids).await.map_err(|error| VpcProblem::Subnets {
        ids: ids.to_vec(),
        error,
    })
}

/// The subnets outside a directory bucket's zone: one problem per (bucket, subnet).
pub(crate) fn zone_problems(subnets: &[Subnet], directory_zones: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (bucket, zone) in directory_zones {
        for s in subnets.iter().filter(|s| &s.zone_id != zone) {
            problems.push(format!(
                "subnet {} is in zone {}, the directory bucket {bucket} in {zone}: Lambda runs the function in every subnet given, so part of an in-zone run would cross zones; deploy with subnets in {zone} only (SUBNET_IDS, SUBNET_ZONE_IDS={zone})",
                s.id, s.zone_id
            ));
        }
    }
    problems
}

/// The endpoints docs/deploy.md names for the VPC: (service suffix, why, how, required).
/// S3 and S3 Express gateway endpoints are required (step 3); for Lambda an interface
/// endpoint or a NAT gateway will do (step 4), so its absence is a warning.
const ENDPOINTS: &[(&str, &str, &str, bool)] = &[
    (
        "s3",
        "the Standard bucket",
        "--vpc-endpoint-type Gateway --route-table-ids RT",
        true,
    ),
    (
        "s3express",
        "the directory bucket (CreateSession and its reads)",
        "--vpc-endpoint-type Gateway --route-table-ids RT",
        true,
    ),
    (
        "lambda",
        "a fan-out's and a memory sweep's Lambda calls",
        "--vpc-endpoint-type Interface --subnet-ids SUBNET --security-group-ids SG --private-dns-enabled",
        false,
    ),
];

/// The endpoints missing from `services` (the VPC's endpoint service names):
/// (problems, warnings).
pub(crate) fn endpoint_problems(vpc: &str, region: &str, services: &[String]) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    for (suffix, why, how, required) in ENDPOINTS {
        let name = format!("com.amazonaws.{region}.{suffix}");
        if services.contains(&name) {
            continue;
        }
        let create = format!("aws ec2 create-vpc-endpoint --vpc-id {vpc} --service-name {name} {how}; docs/deploy.md");
        if *required {
            problems.push(format!(
                "VPC {vpc} has no endpoint for {name}, which {why} needs: the first invoke would time out; create it ({create})"
            ));
        } else {
            warnings.push(format!(
                "VPC {vpc} has no endpoint for {name}, which {why} need: unless the subnets route through a NAT gateway, a fan-out's children and a memory sweep fail; create it ({create})"
            ));
        }
    }
    (problems, warnings)
}

/// DescribeVpcEndpoints of `vpc`: the service names of its endpoints.
async fn endpoint_services(ec2: &Ec2Query, vpc: &str) -> Result<Vec<String>, VpcProblem> {
    ec2.vpc_endpoint_services(vpc)
        .await
        .map_err(|error| VpcProblem::Endpoints {
            vpc: vpc.to_string(),
            error,
        })
}

/// The subnets' and their VPC's lines: `ok` lines, problems and warnings.
pub(super) async fn vpc_lines(
    ec2: &Ec2Query,
    subnet_ids: &[String],
    directory_zones: &[(String, String)],
    region: &str,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let subnets = match describe_subnets(ec2, subnet_ids).await {
        Ok(s) => s,
        Err(p) => return (vec![], vec![p.to_string()], vec![]),
    };
    let mut ok = Vec::new();
    let mut warnings = Vec::new();
    let mut problems = zone_problems(&subnets, directory_zones);
    if problems.is_empty() {
        let zones: Vec<String> = subnets.iter().map(|s| format!("{} in {}", s.id, s.zone_id)).collect();
        ok.push(format!("subnets {}", zones.join(", ")));
    }
    let mut vpcs: Vec<&str> = subnets.iter().map(|s| s.vpc_id.as_str()).collect();
    vpcs.sort_unstable();
    vpcs.dedup();
    for vpc in vpcs {
        match endpoint_services(ec2, vpc).await {
            Ok(services) => {
                let (missing, warned) = endpoint_problems(vpc, region, &services);
                if missing.is_empty() && warned.is_empty() {
                    ok.push(format!("VPC {vpc} has the S3, S3 Express and Lambda endpoints"));
                }
                problems.extend(missing);
                warnings.extend(warned);
            }
            Err(p) => problems.push(p.to_string()),
        }
    }
    (ok, problems, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(id: &str, zone: &str) -> Subnet {
        Subnet {
            id: id.into(),
            zone_id: zone.into(),
            vpc_id: "vpc-1".into(),
        }
    }

    #[test]
    fn every_subnet_must_be_in_the_directory_buckets_zone() {
        let zones = vec![("b--use1-az4--x-s3".to_string(), "use1-az4".to_string())];
        assert!(zone_problems(&[subnet("subnet-a", "use1-az4")], &zones).is_empty());
        let p = zone_problems(
            &[subnet("subnet-a", "use1-az4"), subnet("subnet-b", "use1-az6")],
            &zones,
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("subnet subnet-b is in zone use1-az6, the directory bucket b--use1-az4--x-s3 in use1-az4"),
            "{p:?}"
        );
    }

    #[test]
    fn the_s3_s3express_and_lambda_endpoints_are_required() {
        let all: Vec<String> = ["s3", "s3express", "lambda"]
            .iter()
            .map(|s| format!("com.amazonaws.us-east-1.{s}"))
            .collect();
        assert_eq!(endpoint_problems("vpc-1", "us-east-1", &all), (vec![], vec![]));
        let (p, w) = endpoint_problems("vpc-1", "us-east-1", &all[..1]);
        assert_eq!((p.len(), w.len()), (1, 1), "{p:?} {w:?}");
        assert!(
            p[0].contains("no endpoint for com.amazonaws.us-east-1.s3express,"),
            "{p:?}"
        );
        assert!(
            w[0].contains("no endpoint for com.amazonaws.us-east-1.lambda,") && w[0].contains("NAT gateway"),
            "{w:?}"
        );
    }
}

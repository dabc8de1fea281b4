//! Issue 49, zones verified: `s3sweep preflight --subnet-ids` asks EC2 (moto's server,
//! started on 127.0.0.1 as in tests/it/moto_lambda.rs, reached through
//! `AWS_ENDPOINT_URL_EC2`) for the subnets' zones and their VPC's endpoints. Subnets in
//! two zones are a problem for a directory bucket in one of them (Lambda uses every
//! subnet); a VPC without the S3 and S3 Express endpoints is one problem each, without
//! Lambda's a warning (a NAT gateway also reaches it); with one subnet in the bucket's zone and the three endpoints, the
//! preflight passes. A subnet EC2 does not know is a problem naming EC2's error code.

use std::process::Command;

use crate::common::{run_bounded, Serve, BIN};
use crate::moto_lambda::moto;

const HERE: &str = "vpc-here";

#[test]
fn preflight_asks_ec2_for_the_subnets_zones_and_the_vpcs_endpoints() {
    let Some(moto) = moto() else { return };
    // A VPC with subnets in two zones; the zone ids as EC2 gives them.
    let made = moto.python(
        "ec2 = boto3.client('ec2', **kw)\n\
         vpc = ec2.create_vpc(CidrBlock='10.0.0.0/16')['Vpc']['VpcId']\n\
         a = ec2.create_subnet(VpcId=vpc, CidrBlock='10.0.1.0/24', AvailabilityZone='us-east-1a')['Subnet']\n\
         b = ec2.create_subnet(VpcId=vpc, CidrBlock='10.0.2.0/24', AvailabilityZone='us-east-1b')['Subnet']\n\
         print(json.dumps([vpc, a['SubnetId'], a['AvailabilityZoneId'], b['SubnetId'], b['AvailabilityZoneId']]))\n",
    );
    let made: Vec<String> = serde_json::from_str(&made).unwrap();
    let (vpc, a, zone_a, b, zone_b) = (&made[0], &made[1], &made[2], &made[3], &made[4]);
    assert_ne!(zone_a, zone_b);
    let directory = format!("vpc--{zone_a}--x-s3");
    let server = Serve::start(&[HERE, &format!("{directory}=express")], &[]);
    let preflight = |subnets: &str| {
        let out = run_bounded(
            Command::new(BIN)
                .args(["preflight", "--endpoint", &server.endpoint, "--region", "us-east-1"])
                .args(["--bucket", HERE, "--bucket", &directory, "--subnet-ids", subnets])
                .env("AWS_ENDPOINT_URL_EC2", &moto.endpoint)
                .env("AWS_ACCESS_KEY_ID", "t")
                .env("AWS_SECRET_ACCESS_KEY", "t")
                .env_remove("AWS_PROFILE"),
        );
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{text}");
        (out.status.success(), text)
    };

    // Two zones, no endpoints: the subnet outside the bucket's zone, and each endpoint.
    let (ok, text) = preflight(&format!("{a},{b}"));
    every_problem_of_two_zones_without_endpoints(ok, &text, &made, &directory);

    // A subnet EC2 does not know: EC2's error code, named (the Query API's error answer).
    let (ok, text) = preflight("subnet-0000000000000000f");
    assert!(!ok, "{text}");
    assert!(
        text.contains("PROBLEM: EC2 DescribeSubnets subnet-0000000000000000f failed (EC2 answered HTTP 400 InvalidSubnetID.NotFound:"),
        "{text}"
    );

    // One subnet in the bucket's zone, and the three endpoints: passes.
    moto.python(&format!(
        "ec2 = boto3.client('ec2', **kw)\n\
         rt = ec2.describe_route_tables(Filters=[{{'Name': 'vpc-id', 'Values': ['{vpc}']}}])['RouteTables'][0]['RouteTableId']\n\
         for s in ['s3', 's3express']:\n\
         \x20   ec2.create_vpc_endpoint(VpcId='{vpc}', ServiceName='com.amazonaws.us-east-1.' + s, VpcEndpointType='Gateway', RouteTableIds=[rt])\n\
         ec2.create_vpc_endpoint(VpcId='{vpc}', ServiceName='com.amazonaws.us-east-1.lambda', VpcEndpointType='Interface', SubnetIds=['{a}'])\n"
    ));
    let (ok, text) = preflight(a);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("ok: subnets {a} in {zone_a}")), "{text}");
    assert!(
        text.contains(&format!("ok: VPC {vpc} has the S3, S3 Express and Lambda endpoints")),
        "{text}"
    );
}

/// What preflight said (`ok`, `text`) of subnets `a` and `b` in two zones of a VPC
/// without endpoints (`made`: the VPC, then each subnet and its zone id): `b` is
/// outside the directory bucket's zone, `a` is not, and each endpoint is missing
/// (S3's and S3 Express's a problem, Lambda's a warning).
fn every_problem_of_two_zones_without_endpoints(ok: bool, text: &str, made: &[String], directory: &str) {
    let (vpc, a, zone_a, b, zone_b) = (&made[0], &made[1], &made[2], &made[3], &made[4]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "PROBLEM: subnet {b} is in zone {zone_b}, the directory bucket {directory} in {zone_a}"
        )),
        "{text}"
    );
    assert!(!text.contains(&format!("PROBLEM: subnet {a} ")), "{text}");
    for service in ["s3", "s3express"] {
        assert!(
            text.contains(&format!(
                "PROBLEM: VPC {vpc} has no endpoint for com.amazonaws.us-east-1.{service},"
            )),
            "{service}: {text}"
        );
    }
    assert!(
        text.contains(&format!(
            "WARNING: VPC {vpc} has no endpoint for com.amazonaws.us-east-1.lambda,"
        )),
        "{text}"
    );
}

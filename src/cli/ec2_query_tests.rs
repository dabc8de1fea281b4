//! The EC2 Query client's forms and answers: real-shaped DescribeSubnets and
//! DescribeVpcEndpoints answers (as in AWS's API reference examples, nested lists
//! included), an error answer, and pages followed through `NextToken`.

use std::sync::Mutex;

use super::*;

const SUBNETS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>7a62c49f-347e-4fc4-9331-6e8eEXAMPLE</requestId>
    <subnetSet>
        <item>
            <subnetId>subnet-9d4a7b6c</subnetId>
            <subnetArn>arn:aws:ec2:us-east-1:111122223333:subnet/subnet-9d4a7b6c</subnetArn>
            <state>available</state>
            <ownerId>111122223333</ownerId>
            <vpcId>vpc-1a2b3c4d</vpcId>
            <cidrBlock>10.0.1.0/24</cidrBlock>
            <ipv6CidrBlockAssociationSet/>
            <availableIpAddressCount>251</availableIpAddressCount>
            <availabilityZone>us-east-1a</availabilityZone>
            <availabilityZoneId>use1-az4</availabilityZoneId>
            <defaultForAz>false</defaultForAz>
            <mapPublicIpOnLaunch>false</mapPublicIpOnLaunch>
            <tagSet>
                <item><key>Name</key><value>sweep-a</value></item>
            </tagSet>
        </item>
        <item>
            <subnetId>subnet-6e7f829e</subnetId>
            <vpcId>vpc-1a2b3c4d</vpcId>
            <availabilityZone>us-east-1b</availabilityZone>
            <availabilityZoneId>use1-az6</availabilityZoneId>
            <tagSet/>
        </item>
    </subnetSet>
</DescribeSubnetsResponse>"#;

const ENDPOINTS: &str = r#"<DescribeVpcEndpointsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>19a9ff46-7df6-49b8-9726-3df27527089d</requestId>
    <vpcEndpointSet>
        <item>
            <vpcEndpointId>vpce-032a826a</vpcEndpointId>
            <vpcEndpointType>Gateway</vpcEndpointType>
            <vpcId>vpc-1a2b3c4d</vpcId>
            <serviceName>com.amazonaws.us-east-1.s3</serviceName>
            <state>available</state>
            <policyDocument>{"Version":"2008-10-17","Statement":[{"Sid":"","Effect":"Allow","Principal":"*","Action":"*","Resource":"*"}]}</policyDocument>
            <routeTableIdSet><item>rtb-123abc12</item></routeTableIdSet>
            <subnetIdSet/>
            <groupSet/>
            <creationTimestamp>2017-09-05T19:10:04.000Z</creationTimestamp>
        </item>
        <item>
            <vpcEndpointId>vpce-0f89a33420c1931d7</vpcEndpointId>
            <vpcEndpointType>Interface</vpcEndpointType>
            <vpcId>vpc-1a2b3c4d</vpcId>
            <serviceName>com.amazonaws.us-east-1.lambda</serviceName>
            <subnetIdSet><item>subnet-9d4a7b6c</item></subnetIdSet>
            <groupSet><item><groupId>sg-54e8bf31</groupId><groupName>default</groupName></item></groupSet>
            <dnsEntrySet><item><dnsName>vpce-0f8.lambda.us-east-1.vpce.amazonaws.com</dnsName></item></dnsEntrySet>
        </item>
    </vpcEndpointSet>
</DescribeVpcEndpointsResponse>"#;

const ERROR: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InvalidSubnetID.NotFound</Code><Message>The subnet ID 'subnet-0bb1c79de3EXAMPLE' does not exist</Message></Error></Errors><RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>"#;

#[test]
fn a_describe_subnets_answer_gives_each_subnets_zone_id_and_vpc() {
    let page: SubnetsPage = parse_page(SUBNETS).unwrap();
    assert_eq!(page.next_token(), None);
    let subnets: Vec<Subnet> = page.subnet_set.items.into_iter().map(SubnetItem::into_subnet).collect();
    let want = |id: &str, zone: &str| Subnet {
        id: id.into(),
        zone_id: zone.into(),
        vpc_id: "vpc-1a2b3c4d".into(),
    };
    assert_eq!(
        subnets,
        vec![want("subnet-9d4a7b6c", "use1-az4"), want("subnet-6e7f829e", "use1-az6")]
    );
}

#[test]
fn a_describe_vpc_endpoints_answer_gives_the_service_names() {
    let page: EndpointsPage = parse_page(ENDPOINTS).unwrap();
    let names: Vec<String> = page
        .vpc_endpoint_set
        .items
        .into_iter()
        .filter_map(|e| e.service_name)
        .collect();
    assert_eq!(names, ["com.amazonaws.us-east-1.s3", "com.amazonaws.us-east-1.lambda"]);
    let empty: EndpointsPage = parse_page(
        "<DescribeVpcEndpointsResponse><requestId>r</requestId><vpcEndpointSet/><nextToken/></DescribeVpcEndpointsResponse>",
    )
    .unwrap();
    assert!(empty.vpc_endpoint_set.items.is_empty());
    assert_eq!(empty.next_token(), None, "an empty token ends the pages");
}

#[test]
fn an_error_answer_names_its_code() {
    let e = error_of(400, ERROR);
    assert_eq!(
        e,
        Ec2Error::Answered {
            status: 400,
            code: "InvalidSubnetID.NotFound".into(),
            message: "The subnet ID 'subnet-0bb1c79de3EXAMPLE' does not exist".into(),
        }
    );
    assert!(e.to_string().contains("HTTP 400 InvalidSubnetID.NotFound"), "{e}");
    assert!(!e.transient());
    assert!(error_of(
        503,
        "<Response><Errors><Error><Code>Unavailable</Code></Error></Errors></Response>"
    )
    .transient());
    assert!(error_of(
        400,
        "<Response><Errors><Error><Code>RequestLimitExceeded</Code></Error></Errors></Response>"
    )
    .transient());
    let odd = error_of(502, "<html>bad gateway</html>");
    assert!(matches!(odd, Ec2Error::Unreadable { status: 502, .. }), "{odd:?}");
    assert!(parse_page::<SubnetsPage>("not xml <").is_err());
}

/// Answers `pages` in turn, recording each form.
fn server<'a>(
    pages: &'a [String],
    forms: &'a Mutex<Vec<String>>,
) -> impl Fn(String) -> std::future::Ready<Result<String, Ec2Error>> + 'a {
    move |form| {
        let mut seen = forms.lock().unwrap();
        seen.push(form);
        std::future::ready(Ok(pages[seen.len() - 1].clone()))
    }
}

fn subnets_page(id: &str, token: Option<&str>) -> String {
    let next = token.map(|t| format!("<nextToken>{t}</nextToken>")).unwrap_or_default();
    format!("<DescribeSubnetsResponse><subnetSet><item><subnetId>{id}</subnetId><vpcId>vpc-1</vpcId><availabilityZoneId>use1-az4</availabilityZoneId></item></subnetSet>{next}</DescribeSubnetsResponse>")
}

#[tokio::test]
async fn pages_are_followed_through_next_token() {
    let pages = vec![
        subnets_page("subnet-a", Some("tok/1+=")),
        subnets_page("subnet-b", Some("tok2")),
        subnets_page("subnet-c", None),
    ];
    let forms = Mutex::new(Vec::new());
    let params = vec![
        ("Action".to_string(), "DescribeSubnets".to_string()),
        ("SubnetId.1".to_string(), "subnet-a".to_string()),
    ];
    let got: Vec<SubnetsPage> = follow_pages(params, server(&pages, &forms)).await.unwrap();
    let ids: Vec<String> = got
        .into_iter()
        .flat_map(|p| p.subnet_set.items)
        .map(|s| s.into_subnet().id)
        .collect();
    assert_eq!(ids, ["subnet-a", "subnet-b", "subnet-c"]);
    assert_eq!(
        *forms.lock().unwrap(),
        [
            "Action=DescribeSubnets&SubnetId.1=subnet-a&Version=2016-11-15",
            "Action=DescribeSubnets&SubnetId.1=subnet-a&Version=2016-11-15&NextToken=tok%2F1%2B%3D",
            "Action=DescribeSubnets&SubnetId.1=subnet-a&Version=2016-11-15&NextToken=tok2",
        ]
    );
}

#[tokio::test]
async fn endless_pages_stop_at_the_cap() {
    let pages: Vec<String> = (0..=MAX_PAGES)
        .map(|i| subnets_page("s", Some(&format!("t{i}"))))
        .collect();
    let forms = Mutex::new(Vec::new());
    let got = follow_pages::<SubnetsPage, _, _>(vec![], server(&pages, &forms)).await;
    assert_eq!(got.unwrap_err(), Ec2Error::TooManyPages);
    assert_eq!(forms.lock().unwrap().len(), MAX_PAGES);
}

#[test]
fn the_endpoint_is_the_regions_unless_configured() {
    assert_eq!(regional_endpoint("us-east-1"), "https://ec2.us-east-1.amazonaws.com");
    assert_eq!(
        regional_endpoint("cn-north-1"),
        "https://ec2.cn-north-1.amazonaws.com.cn"
    );
}

#[test]
fn requests_are_form_posts_signed_for_ec2_in_the_region() {
    let query = Ec2Query {
        transport: Transport::new(TransportSettings {
            pool_connections: 1,
            connect_timeout: Duration::from_secs(1),
            tcp_keepalive: None,
            pool_idle_timeout: Duration::from_secs(1),
            lanes: 1,
        }),
        endpoint: "http://127.0.0.1:9".into(),
        region: "eu-west-1".into(),
        credentials: None,
    };
    let credentials = aws_credential_types::Credentials::new("AKIDEXAMPLE", "secret", Some("tok".into()), None, "test");
    let form = "Action=DescribeSubnets&Version=2016-11-15";
    let request = query.signed(&Identity::from(credentials), form).unwrap();
    assert_eq!(request.method(), "POST");
    assert_eq!(request.uri(), "http://127.0.0.1:9/");
    let header = |name: &str| request.headers()[name].to_str().unwrap().to_string();
    assert_eq!(
        header("content-type"),
        "application/x-www-form-urlencoded; charset=utf-8"
    );
    assert_eq!(header("x-amz-security-token"), "tok");
    let auth = header("authorization");
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "{auth}");
    assert!(auth.contains("/eu-west-1/ec2/aws4_request"), "{auth}");
    assert!(auth.contains("SignedHeaders=content-type;"), "{auth}");
    assert_eq!(request.body().bytes(), Some(form.as_bytes()));
}

#[tokio::test]
async fn an_answer_over_the_cap_is_an_error_not_a_truncated_list() {
    let at_cap = read_bounded(SdkBody::from(vec![b'a'; MAX_RESPONSE_BYTES])).await;
    assert_eq!(at_cap.map(|s| s.len()), Ok(MAX_RESPONSE_BYTES));
    let over = read_bounded(SdkBody::from(vec![b'a'; MAX_RESPONSE_BYTES + 1])).await;
    assert_eq!(over, Err(Ec2Error::TooLarge));
}

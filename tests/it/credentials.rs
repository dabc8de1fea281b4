//! Every credential source the AWS CLI supports, for `s3sweep seed`, `run` and
//! `clean` against the lab (`s3sweep serve` on 127.0.0.1, which checks every
//! signature against its own keys): each source hands out the lab's keys, so a command
//! that succeeds signed with the keys that source produced. The AWS configuration
//! lives in temp files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, HOME for the SSO
//! token cache), never the user's ~/.aws. The services behind the sources (STS
//! AssumeRole, the SSO portal, the container and instance metadata endpoints) are a
//! small HTTP server of the test on 127.0.0.1, reached through AWS_ENDPOINT_URL_STS,
//! AWS_ENDPOINT_URL_SSO, AWS_CONTAINER_CREDENTIALS_FULL_URI and
//! AWS_EC2_METADATA_SERVICE_ENDPOINT.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::common::{run_bounded, Serve, BIN};

const LAB_KEY: &str = "s3sweep";
const LAB_SECRET: &str = "s3sweep-local-secret";
const START_URL: &str = "https://s3sweep-test.awsapps.com/start";

/// A directory of its own under the temp dir, removed when dropped.
struct Home(PathBuf);

impl Home {
    fn new(name: &str) -> Home {
        let dir = std::env::temp_dir().join(format!("s3sweep-creds-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".aws/sso/cache")).unwrap();
        Home(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A canned HTTP server on 127.0.0.1: `answer(method, path)` gives status and body
/// (every answer carries IMDSv2's token TTL header); every request's first line,
/// headers and body are recorded.
fn fake_service(answer: fn(&str, &str) -> (u16, String)) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            head.push_str(&String::from_utf8_lossy(&body));
            let first = head.lines().next().unwrap_or("").to_string();
            let mut words = first.split_whitespace();
            let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let (status, text) = answer(method, path);
            log.lock().unwrap().push(head.clone());
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nx-aws-ec2-metadata-token-ttl-seconds: 21600\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (endpoint, seen)
}

/// STS AssumeRole, the SSO portal's GetRoleCredentials, the container credentials and
/// IMDSv2, all handing out the lab's keys.
fn aws_services(method: &str, path: &str) -> (u16, String) {
    let expiry = "2099-01-01T00:00:00Z";
    match (method, path) {
        ("POST", "/") => (
            200,
            format!(
                r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>{LAB_KEY}</AccessKeyId><SecretAccessKey>{LAB_SECRET}</SecretAccessKey><SessionToken>assumed-session-token</SessionToken><Expiration>{expiry}</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROATEST:s</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/reader/s</Arn></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></AssumeRoleResponse>"#
            ),
        ),
        ("GET", p) if p.starts_with("/federation/credentials") => (
            200,
            format!(
                r#"{{"roleCredentials":{{"accessKeyId":"{LAB_KEY}","secretAccessKey":"{LAB_SECRET}","sessionToken":"sso-session-token","expiration":4070908800000}}}}"#
            ),
        ),
        ("GET", "/container-credentials") => (
            200,
            format!(
                r#"{{"AccessKeyId":"{LAB_KEY}","SecretAccessKey":"{LAB_SECRET}","Token":"container-token","Expiration":"{expiry}"}}"#
            ),
        ),
        ("PUT", "/latest/api/token") => (200, "imds-token".into()),
        ("GET", "/latest/meta-data/iam/security-credentials/") => (200, "reader".into()),
        ("GET", "/latest/meta-data/iam/security-credentials/reader") => (
            200,
            format!(
                r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"{LAB_KEY}","SecretAccessKey":"{LAB_SECRET}","Token":"imds-token-creds","Expiration":"{expiry}","LastUpdated":"2026-01-01T00:00:00Z"}}"#
            ),
        ),
        _ => (404, String::new()),
    }
}

/// The binary with only the AWS settings `home` and `env` give (nothing from this
/// environment or the user's ~/.aws).
fn cmd(home: &Home, args: &[&str], env: &[(&str, String)]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).env("RUST_BACKTRACE", "0").env_remove("RUST_LOG");
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", &home.0)
        .env("AWS_CONFIG_FILE", home.path("config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", home.path("credentials"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// seed, run and clean with `--credentials chain` under `env`; panics with the output
/// of the first that fails.
fn seed_run_clean(lab: &Serve, home: &Home, bucket: &str, env: &[(&str, String)]) {
    let manifest = home.path("manifest.json").display().to_string();
    let ep = lab.endpoint.as_str();
    let steps: [Vec<&str>; 3] = [
        vec![
            "seed",
            "--bucket",
            bucket,
            "--count",
            "3",
            "--size",
            "256",
            "--endpoint",
            ep,
            "--credentials",
            "chain",
            "--manifest",
            &manifest,
        ],
        vec![
            "run",
            "--bucket",
            bucket,
            "--objects",
            "3",
            "--workers",
            "1",
            "--endpoint",
            ep,
            "--credentials",
            "chain",
            "--quiet",
        ],
        vec![
            "clean",
            "--manifest",
            &manifest,
            "--endpoint",
            ep,
            "--credentials",
            "chain",
        ],
    ];
    for args in steps {
        let out = run_bounded(&mut cmd(home, &args, env));
        assert!(
            out.status.success(),
            "{} failed:\nstdout: {}\nstderr: {}",
            args[0],
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let left: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(
        left["written"].as_array().map(Vec::len),
        Some(0),
        "clean left keys: {left}"
    );
}

fn sha1_hex(text: &str) -> String {
    let mut child = Command::new("sha1sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha1sum (coreutils)");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn profile(name: &str) -> Vec<(&'static str, String)> {
    vec![("AWS_PROFILE", name.to_string())]
}

#[test]
fn a_profile_with_static_keys() {
    let lab = Serve::start(&["creds-static"], &[]);
    let home = Home::new("static");
    home.write("config", "[profile lab]\nregion = us-east-1\n");
    home.write(
        "credentials",
        &format!("[lab]\naws_access_key_id = {LAB_KEY}\naws_secret_access_key = {LAB_SECRET}\n"),
    );
    seed_run_clean(&lab, &home, "creds-static", &profile("lab"));
    // The same profile with a wrong secret is refused: the keys do come from the file.
    home.write(
        "credentials",
        &format!("[lab]\naws_access_key_id = {LAB_KEY}\naws_secret_access_key = wrong\n"),
    );
    let out = run_bounded(&mut cmd(
        &home,
        &[
            "seed",
            "--bucket",
            "creds-static",
            "--count",
            "1",
            "--endpoint",
            &lab.endpoint,
            "--credentials",
            "chain",
            "--manifest",
            &home.path("m2.json").display().to_string(),
        ],
        &profile("lab"),
    ));
    assert!(!out.status.success(), "a wrong secret was accepted");
}

#[test]
fn a_credential_process_profile() {
    let lab = Serve::start(&["creds-process"], &[]);
    let home = Home::new("process");
    let ran = home.path("process-ran");
    let script = home.write(
        "creds.sh",
        &format!(
            "#!/bin/sh\ntouch {}\necho '{{\"Version\": 1, \"AccessKeyId\": \"{LAB_KEY}\", \"SecretAccessKey\": \"{LAB_SECRET}\"}}'\n",
            ran.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    home.write(
        "config",
        &format!(
            "[profile proc]\nregion = us-east-1\ncredential_process = {}\n",
            script.display()
        ),
    );
    seed_run_clean(&lab, &home, "creds-process", &profile("proc"));
    assert!(ran.exists(), "the credential_process script never ran");
}

#[test]
fn a_role_arn_profile_assumes_the_role_through_sts() {
    let lab = Serve::start(&["creds-role"], &[]);
    let (sts, seen) = fake_service(aws_services);
    let home = Home::new("role");
    home.write(
        "config",
        "[profile source]\nregion = us-east-1\n\n[profile reader]\nregion = us-east-1\nrole_arn = arn:aws:iam::123456789012:role/reader\nsource_profile = source\n",
    );
    home.write(
        "credentials",
        "[source]\naws_access_key_id = AKIASOURCEPROFILE\naws_secret_access_key = source-secret\n",
    );
    let mut env = profile("reader");
    env.push(("AWS_ENDPOINT_URL_STS", sts));
    seed_run_clean(&lab, &home, "creds-role", &env);
    let calls = seen.lock().unwrap().clone();
    assert!(!calls.is_empty(), "STS was never called");
    for call in &calls {
        assert!(call.contains("Action=AssumeRole"), "{call}");
        assert!(call.contains("role%2Freader"), "{call}");
        assert!(
            call.contains("Credential=AKIASOURCEPROFILE/"),
            "not signed by the source profile: {call}"
        );
    }
}

#[test]
fn sso_profiles_use_the_cached_token_and_the_portal() {
    let lab = Serve::start(&["creds-sso"], &[]);
    let (portal, seen) = fake_service(aws_services);
    let home = Home::new("sso");
    let token = |extra: &str| {
        format!(
            r#"{{"accessToken": "cached-sso-access-token", "expiresAt": "2099-01-01T00:00:00Z", "region": "us-east-1", "startUrl": "{START_URL}"{extra}}}"#
        )
    };
    // The legacy form (sso_start_url in the profile): token cached under sha1(start URL).
    home.write(&format!(".aws/sso/cache/{}.json", sha1_hex(START_URL)), &token(""));
    // The sso-session form: token cached under sha1(session name).
    home.write(&format!(".aws/sso/cache/{}.json", sha1_hex("corp")), &token(""));
    home.write(
        "config",
        &format!(
            "[profile legacy]\nregion = us-east-1\nsso_start_url = {START_URL}\nsso_region = us-east-1\nsso_account_id = 123456789012\nsso_role_name = Reader\n\n\
             [profile session]\nregion = us-east-1\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Reader\n\n\
             [sso-session corp]\nsso_start_url = {START_URL}\nsso_region = us-east-1\n"
        ),
    );
    for name in ["legacy", "session"] {
        seen.lock().unwrap().clear();
        let mut env = profile(name);
        env.push(("AWS_ENDPOINT_URL_SSO", portal.clone()));
        seed_run_clean(&lab, &home, "creds-sso", &env);
        let calls = seen.lock().unwrap().clone();
        assert!(!calls.is_empty(), "{name}: the portal was never called");
        for call in &calls {
            assert!(call.starts_with("GET /federation/credentials?"), "{name}: {call}");
            assert!(
                call.contains("account_id=123456789012") && call.contains("role_name=Reader"),
                "{call}"
            );
            assert!(
                call.to_ascii_lowercase()
                    .contains("x-amz-sso_bearer_token: cached-sso-access-token"),
                "{name}: not the cached token: {call}"
            );
        }
    }
}

#[test]
fn container_and_instance_metadata() {
    let lab = Serve::start(&["creds-metadata"], &[]);
    let (service, seen) = fake_service(aws_services);
    let home = Home::new("metadata");
    home.write("config", "");
    home.write("credentials", "");
    let env = vec![(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        format!("{service}/container-credentials"),
    )];
    seed_run_clean(&lab, &home, "creds-metadata", &env);
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|c| c.starts_with("GET /container-credentials")),
        "the container endpoint was never called"
    );
    seen.lock().unwrap().clear();
    let env = vec![
        ("AWS_EC2_METADATA_DISABLED", "false".to_string()),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", service.clone()),
    ];
    seed_run_clean(&lab, &home, "creds-metadata", &env);
    let calls = seen.lock().unwrap().clone();
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("GET /latest/meta-data/iam/security-credentials/reader")),
        "IMDS was never asked for the role's credentials: {calls:#?}"
    );
}

//! Conformance of the memory sweep's control-plane calls with moto's Lambda server
//! (`moto[server]`, pinned in requirements-moto.txt, installed into .venv-moto by `make
//! moto-venv`, which `make test` runs first), started by this test on 127.0.0.1 and
//! driven by the real aws-sdk-lambda client through `lambda::control` and
//! `lambda::memory`: the function (created in moto, with a version "1" of the user's)
//! gets each memory size set and a version published and invoked, then those versions
//! are deleted and the memory and description restored, which the test reads back.
//! moto runs no code without docker (it is told not to use it), so its Invoke answers
//! are canned: each size's step is recorded as failed (data), and the cleanup must
//! still happen. A description holding another sweep's marker is refused.
//!
//! The Python is `$S3SWEEP_MOTO_PYTHON`, else .venv-moto/bin/python; without it the
//! test fails saying how to install it (`S3SWEEP_SKIP_MOTO=1` skips it, loudly).

use crate::common::lambda_api::lambda_client;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use s3sweep::plan::Plan;
use s3sweep_lambda::control::{ControlPlane, PollSettings};
use s3sweep_lambda::invoke::Invoker;
use s3sweep_lambda::memory::{sweep_memory, MemorySweepError};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// moto's server in its own process group, killed on drop.
pub(crate) struct Moto {
    child: Child,
    pub(crate) endpoint: String,
    python: PathBuf,
    dir: PathBuf,
}

impl Drop for Moto {
    fn drop(&mut self) {
        // SAFETY: signals only the process group this test started (pgid = child pid).
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("S3SWEEP_MOTO_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "S3SWEEP_MOTO_PYTHON={} is not a file", p.display());
        return Some(p);
    }
    let venv = PathBuf::from(MANIFEST_DIR).join(".venv-moto/bin/python");
    venv.is_file().then_some(venv)
}

impl Moto {
    /// moto's server on a free port. The port is picked by binding port 0 and letting
    /// it go, so another test's server or client may take it before moto binds it:
    /// moto then exits, and a connect may even reach the other listener. So moto is
    /// ready when it is still running and its own API answers; if it exited, it is
    /// started again on another port (3 tries).
    fn start(python: PathBuf) -> Moto {
        for _ in 0..3 {
            if let Some(moto) = Moto::try_start(&python) {
                return moto;
            }
        }
        panic!("moto's server exited at start on 3 free ports in a row");
    }

    /// One start: `None` when moto exited before it answered (its port was taken).
    fn try_start(python: &Path) -> Option<Moto> {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("s3sweep-moto-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Its own empty folder as the working directory: nothing there can shadow a
        // module of Python's standard library.
        let child = Command::new(python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("moto's server starts");
        let mut moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            python: python.to_path_buf(),
            dir,
        };
        let start = Instant::now();
        loop {
            if moto.child.try_wait().unwrap().is_some() {
                return None;
            }
            if moto_api_answers(port) {
                return Some(moto);
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "moto did not answer within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs a Python snippet with boto3 (moto's dependency) against the server.
    pub(crate) fn python(&self, code: &str) -> String {
        let prelude = format!(
            "import boto3, io, json, zipfile, urllib.request\n\
             kw = dict(endpoint_url='{}', region_name='us-east-1', aws_access_key_id='t', aws_secret_access_key='t')\n\
             lam = boto3.client('lambda', **kw)\n",
            self.endpoint
        );
        let out = Command::new(&self.python)
            .args(["-c", &format!("{prelude}{code}")])
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A function `f` of 1,024 MB with the user's description and version "1", and
    /// Invoke without docker.
    fn create_function(&self) {
        self.python(
            "req = urllib.request.Request(kw['endpoint_url'] + '/moto-api/config', data=json.dumps({'lambda': {'use_docker': False}}).encode(), method='POST')\n\
             urllib.request.urlopen(req).read()\n\
             iam = boto3.client('iam', **kw)\n\
             role = iam.create_role(RoleName='r', AssumeRolePolicyDocument='{}')['Role']['Arn']\n\
             buf = io.BytesIO(); z = zipfile.ZipFile(buf, 'w'); z.writestr('bootstrap', 'x'); z.close()\n\
             lam.create_function(FunctionName='f', Runtime='provided.al2023', Role=role, Handler='bootstrap', Code={'ZipFile': buf.getvalue()}, MemorySize=1024, Description='user desc')\n\
             lam.publish_version(FunctionName='f', Description='the user version')\n",
        );
    }

    /// (memory, description) of $LATEST and the versions, read with boto3.
    fn read_back(&self) -> String {
        self.python(
            "c = lam.get_function_configuration(FunctionName='f')\n\
             v = [x['Version'] for x in lam.list_versions_by_function(FunctionName='f')['Versions']]\n\
             print(json.dumps([c['MemorySize'], c['Description'], v]))\n",
        )
    }
}

/// Whether moto's own API (`GET /moto-api/data.json`) answers 200 on `port`: a
/// listener that is not moto (another test's server on a reused port) does not.
fn moto_api_answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut tcp) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
    let ask = format!("GET /moto-api/data.json HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let mut head = [0u8; 12];
    tcp.write_all(ask.as_bytes()).is_ok()
        && tcp.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.")
        && &head[9..12] == b"200"
}

pub(crate) fn moto() -> Option<Moto> {
    match python() {
        Some(p) => Some(Moto::start(p)),
        None if std::env::var("S3SWEEP_SKIP_MOTO").as_deref() == Ok("1") => {
            eprintln!("SKIPPED the moto conformance test: S3SWEEP_SKIP_MOTO=1 and .venv-moto is missing");
            None
        }
        None => panic!(
            "moto's Python not found ($S3SWEEP_MOTO_PYTHON, {MANIFEST_DIR}/.venv-moto/bin/python): run `make moto-venv` (`make test` does it first); S3SWEEP_SKIP_MOTO=1 skips this test"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moto_serves_the_control_plane_sequence_and_the_cleanup() {
    let Some(moto) = moto() else { return };
    moto.create_function();
    assert_eq!(moto.read_back(), r#"[1024, "user desc", ["$LATEST", "1"]]"#);
    let client = lambda_client(&moto.endpoint);
    let poll = PollSettings {
        interval: Duration::from_millis(20),
        max_wait: Duration::from_secs(10),
    };
    let control = ControlPlane::new(client.clone(), "f", "moto-test 1", poll);
    let invoker = Invoker::with_client(client.clone());
    let plan = Plan::from_value(serde_json::json!({
        "buckets": ["b-1"], "object_count": 4, "workers": [1], "memory_mb": [512, 1769]
    }))
    .unwrap();
    let (results, report) =
        tokio::time::timeout(Duration::from_secs(60), sweep_memory(&invoker, &control, &plan, None))
            .await
            .expect("bounded")
            .expect("the control plane works against moto");
    eprintln!("{}", serde_json::to_string_pretty(&report).unwrap());
    // moto published 2 and 3 (its own "1" is the user's), at the sizes set.
    let versions: Vec<Option<&str>> = report.steps.iter().map(|s| s.version.as_deref()).collect();
    assert_eq!(versions, vec![Some("2"), Some("3")]);
    // Its canned Invoke answer is not a sweep result: each step failed, as data.
    assert!(results.is_empty());
    for s in &report.steps {
        assert_eq!(s.status, s3sweep::model::Outcome::Failed, "{s:?}");
        assert!(s.error.as_deref().unwrap().contains("Invoke f:"), "{s:?}");
    }
    assert_eq!(report.versions_deleted, vec!["2".to_string(), "3".to_string()]);
    assert_eq!(report.memory_restored, Some(true));
    assert_eq!(report.original_memory_mb, Some(1024));
    // Read back: memory and description as before, only the user's version left.
    assert_eq!(moto.read_back(), r#"[1024, "user desc", ["$LATEST", "1"]]"#);

    // Another sweep's marker in the description: refused, nothing changed.
    moto.python(
        "lam.update_function_configuration(FunctionName='f', Description='user desc [s3sweep-memory-sweep other running]')\n",
    );
    let err = sweep_memory(&invoker, &control, &plan, None).await.unwrap_err();
    assert!(matches!(err, MemorySweepError::Concurrent(_)), "{err}");
    assert_eq!(err.error_type(), "ConcurrentMemorySweep");
    assert_eq!(
        moto.read_back(),
        r#"[1024, "user desc [s3sweep-memory-sweep other running]", ["$LATEST", "1"]]"#
    );

    // A function that does not exist: the first read fails, nothing is changed.
    let missing = ControlPlane::new(client, "no-such-function", "moto-test 2", poll);
    let err = sweep_memory(&invoker, &missing, &plan, None).await.unwrap_err();
    assert_eq!(err.error_type(), "MemorySweepFailed");
    let text = err.to_string();
    assert!(
        text.contains("GetFunctionConfiguration") && text.contains("nothing was changed"),
        "{text}"
    );
}

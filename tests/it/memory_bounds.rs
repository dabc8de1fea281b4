//! Peak memory under hostile input (issue 35), each a child process measured: `clean`
//! with a manifest claiming a 3 GiB object and with one naming 2,000,000 keys in a
//! bucket that does not exist (the peak RSS `wait4` reports), and `serve` under cap
//! abuse (its `VmHWM` while it runs): 24 PUTs of 60 MiB at once against a 64 MiB
//! store, and thousands of empty objects with 1,000-byte keys against a 1 MiB one.
//! Each bound is stated beside what the unbounded code took (measured with the debug
//! binary these tests run). The lab is `s3sweep serve` on 127.0.0.1:0. The `clean`
//! tests run in a process of their own ([`isolated`]): a child's `ru_maxrss` starts
//! from its parent's peak, which the other tests of this binary would raise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{baseline_rss_kib, isolated, run_measured, vm_hwm_kib, Serve, BIN};
use crate::lab_limits::signed_put_head;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB_KIB: u64 = 1024;

/// Each measured test runs in a process of its own ([`isolated`]), at most this long.
const LIMIT: Duration = Duration::from_secs(300);

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3sweep-memory-bounds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The manifest at `path` changed by `edit`, its recorded ETags dropped (so `clean`
/// must compute the body's to prove a key), written back.
fn edit_manifest(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    m["etags"] = serde_json::json!({});
    edit(&mut m);
    std::fs::write(path, m.to_string()).unwrap();
}

/// Replaces the `"@KEYS@"` of the manifest at `path` with `count` template keys,
/// written as they are made: this process stays small, so the peak RSS `wait4`
/// reports is the child's (a child's figure starts from its parent's peak).
fn write_keys_into(path: &Path, count: u32) {
    use std::io::Write;
    let text = std::fs::read_to_string(path).unwrap();
    let (before, after) = text.split_once("\"@KEYS@\"").unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(before.as_bytes()).unwrap();
    for i in 0..count {
        let comma = if i == 0 { "" } else { "," };
        write!(out, "{comma}\"test/{i}/vectors\"").unwrap();
    }
    out.write_all(after.as_bytes()).unwrap();
    out.flush().unwrap();
}

/// `s3sweep clean` of `manifest` against `serve`: its output and peak RSS (KiB).
fn clean(serve: &Serve, manifest: &Path) -> (std::process::Output, u64) {
    run_measured(
        Command::new(BIN)
            .args(["clean", "--endpoint", &serve.endpoint, "--manifest"])
            .arg(manifest),
        Duration::from_secs(120),
    )
}

/// A manifest claiming 3 GiB for a seeded 8-byte object keeps it without building
/// (or hashing) 3 GiB; a 48 MiB object proven by its body's ETag is hashed streaming.
/// Building the body whole took 3.0 GiB for the claim here (3,169,600 KiB) and
/// would take 48 MiB more for the real object.
#[test]
fn clean_with_a_manifest_claiming_3_gib_stays_small() {
    if !isolated("memory_bounds::clean_with_a_manifest_claiming_3_gib_stays_small", LIMIT) {
        return;
    }
    let dir = tmp_dir("claim");
    let serve = Serve::start(&["claim-bucket=none", "real-bucket=none"], &[]);
    let base = baseline_rss_kib();
    let claim = dir.join("claim.json");
    serve.seed("claim-bucket", 1, 8, &claim);
    edit_manifest(&claim, |m| m["object_size_bytes"] = (3u64 << 30).into());
    let (out, rss) = clean(&serve, &claim);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("a 3 GiB claim over an 8-byte object: peak RSS {rss} KiB (baseline {base} KiB)");
    assert!(
        stderr.contains("its size is 8 bytes, seed wrote 3221225472"),
        "{stderr}"
    );
    assert!(rss < base + 64 * MIB_KIB, "peak RSS {rss} KiB, baseline {base} KiB");

    let real = dir.join("real.json");
    serve.seed("real-bucket", 1, 48 << 20, &real);
    edit_manifest(&real, |_| {});
    let (out, rss) = clean(&serve, &real);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("a 48 MiB object proven by its body's ETag: peak RSS {rss} KiB (baseline {base} KiB)");
    assert!(stderr.contains("deleted 1 of the 1 keys"), "{stderr}");
    assert!(rss < base + 32 * MIB_KIB, "peak RSS {rss} KiB, baseline {base} KiB");
    serve.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// 2,000,000 keys in a bucket that does not exist: one error, its text shared by
/// every key. A copy of the text per key took 812 MiB here (the issue: 692 MB);
/// shared, 376 MiB (the manifest's keys, and the list of keys left in it).
#[test]
fn clean_of_2m_keys_in_a_missing_bucket_stays_under_480_mib_above_baseline() {
    let test = "memory_bounds::clean_of_2m_keys_in_a_missing_bucket_stays_under_480_mib_above_baseline";
    if !isolated(test, LIMIT) {
        return;
    }
    let dir = tmp_dir("missing");
    let serve = Serve::start(&["present-bucket=none"], &[]);
    let base = baseline_rss_kib();
    let manifest = dir.join("m.json");
    serve.seed("present-bucket", 1, 8, &manifest);
    edit_manifest(&manifest, |m| {
        m["bucket"] = "no-such-bucket".into();
        m["written"] = serde_json::json!(["@KEYS@"]);
    });
    write_keys_into(&manifest, 2_000_000);
    let (out, rss) = clean(&serve, &manifest);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("2,000,000 keys, missing bucket: peak RSS {rss} KiB (baseline {base} KiB)");
    assert!(
        stderr.contains("BucketNotFound"),
        "{}",
        &stderr[..stderr.len().min(2000)]
    );
    assert!(
        stderr.contains("2000000 key(s) stay"),
        "{}",
        &stderr[..stderr.len().min(2000)]
    );
    assert!(stderr.len() < 4096, "{} bytes of error", stderr.len());
    assert!(rss < base + 480 * MIB_KIB, "peak RSS {rss} KiB, baseline {base} KiB");
    serve.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends the head of a PUT of `len` bytes; the answer if one comes within `wait`
/// before the body is sent, else `None` (the server is waiting for the body).
async fn head_only(addr: &str, key: &str, len: usize, wait: Duration) -> (tokio::net::TcpStream, Option<String>) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(signed_put_head(addr, "abuse", key, len).as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    match tokio::time::timeout(wait, tcp.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => {
            let answer = String::from_utf8_lossy(&buf[..n]).into_owned();
            (tcp, Some(answer))
        }
        _ => (tcp, None),
    }
}

/// Sends `len` bytes of body, then reads the answer's first bytes.
async fn body_then_answer(mut tcp: tokio::net::TcpStream, len: usize) -> String {
    let chunk = vec![b'x'; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        if tcp.write_all(&chunk[..n]).await.is_err() {
            break;
        }
        left -= n;
    }
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(30), tcp.read(&mut buf))
        .await
        .map_or(0, |r| r.unwrap_or(0));
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// 24 PUTs of 60 MiB at once against a 64 MiB store: room is reserved from each
/// `Content-Length` before any body is read, so one is let in and 23 are answered 507
/// at once; the lab's peak stays under 64 MiB of store plus 96 MiB above its start.
/// Reading the bodies first (the issue) peaked at 1.5 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_large_puts_against_a_small_cap_are_refused_before_their_bodies() {
    const LEN: usize = 60 << 20;
    let serve = Serve::start(&["abuse=none"], &["--max-store-bytes", "67108864"]);
    let addr = serve.addr().to_string();
    let started = vm_hwm_kib(serve.child.id());
    let keys: Vec<String> = (0..24).map(|i| format!("big-{i}")).collect();
    let heads = keys.iter().map(|k| head_only(&addr, k, LEN, Duration::from_secs(3)));
    let heads = futures_util::future::join_all(heads).await;
    let mut answers = Vec::new();
    let mut bodies = Vec::new();
    for (tcp, answer) in heads {
        match answer {
            Some(a) => answers.push(a),
            None => bodies.push(body_then_answer(tcp, LEN)),
        }
    }
    answers.extend(futures_util::future::join_all(bodies).await);
    let peak = vm_hwm_kib(serve.child.id());
    let refused = answers.iter().filter(|a| a.starts_with("HTTP/1.1 507")).count();
    let stored = answers.iter().filter(|a| a.starts_with("HTTP/1.1 200")).count();
    eprintln!("24 PUTs of 60 MiB, 64 MiB cap: {stored} stored, {refused} refused 507; lab peak {peak} KiB (at start {started} KiB)");
    assert_eq!((stored, refused), (1, 23), "{answers:?}");
    assert!(
        peak < started + (64 + 96) * MIB_KIB,
        "lab peak {peak} KiB, at start {started} KiB"
    );
    serve.stop();
}

/// 3,000 empty objects with 1,000-byte keys against a 1 MiB store: each counts its
/// key and 256 bytes, so 834 fit and the rest are refused 507; the lab's peak stays
/// within 64 MiB of its start. Counting bodies only, all 20,000 of the were
/// taken with "0 of 1 bytes held".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_objects_with_long_keys_are_refused_past_a_tiny_cap() {
    use futures_util::StreamExt;
    let serve = Serve::start(&["abuse=none"], &["--max-store-bytes", "1048576"]);
    let started = vm_hwm_kib(serve.child.id());
    let client = s3sweep::sweep_client(crate::common::lab::client_options(&serve.endpoint))
        .await
        .unwrap();
    let s3 = client.s3(crate::common::seed_settings());
    let statuses: Vec<u16> = futures_util::stream::iter(0..3000)
        .map(|i| {
            let s3 = s3.clone();
            async move {
                let put = s3.put_object().bucket("abuse").key(format!("{i:0>1000}"));
                match put.body(Vec::new().into()).send().await {
                    Ok(_) => 200,
                    Err(e) => e.raw_response().map_or(0, |r| r.status().as_u16()),
                }
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let peak = vm_hwm_kib(serve.child.id());
    let stored = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 507).count();
    eprintln!("3,000 empty objects, 1,000-byte keys, 1 MiB cap: {stored} stored, {refused} refused 507; lab peak {peak} KiB (at start {started} KiB)");
    assert_eq!(stored, (1 << 20) / (1000 + 256));
    assert_eq!(refused, 3000 - stored);
    assert!(
        peak < started + 64 * MIB_KIB,
        "lab peak {peak} KiB, at start {started} KiB"
    );
    serve.stop();
}

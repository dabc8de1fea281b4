//! `s3sweep local`: the whole demo on the embedded server. It starts the lab (a child
//! process by default, so its CPU is not the client's; over HTTPS with `--tls`) with a
//! Standard-like bucket and an Express-like directory bucket (read through S3 Express
//! sessions), writes the test objects, sweeps both, and prints the tables, the cost,
//! the sessions and TLS handshakes, and the server's CPU per GET.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::analysis::analyse;
use crate::analysis::cost::CostOverrides;
use crate::engine::SweepOptions;
use crate::lab::child::{ChildOptions, LabProcess};
use crate::lab::{self, LatencyProfile, ServerConfig, TlsOptions};
use crate::model::{Runner, SweepResult, Thresholds};
use crate::plan::{KeyTemplate, Plan};
use crate::render::{Layout, Style};
use crate::s3::seed::{seed, seed_probe_object, SeedSpec};
use crate::s3::{RequestSettings, SweepClient};
use crate::sys::usage;

use super::args::{check_session_ttl, LocalArgs};
use super::lab_network::one_memory_size;
use super::memory::sweep_steps;
use super::sweep_args::{request_fields, RunFieldArgs};
use super::{human, request, write_json, write_plot, CliError, Context};

/// The demo: the lab, the objects, the sweep, the tables (each step below).
pub(crate) async fn local(args: LocalArgs, thresholds: Thresholds) -> Result<(), CliError> {
    args.output.check()?;
    let session_ttl = check_session_ttl(args.session_ttl_s).map_err(CliError::Usage)?;
    let plan = demo_plan(&args)?;
    let steps = args.quota.steps(&plan)?;
    let server = start_lab(&args, session_ttl).await?;
    let endpoint = server.endpoint();
    let options = lab::client_options(&endpoint).with_ca_file(server.ca_file().map(Path::to_path_buf));
    let client = s3sweep_aws::sweep_client(options).await.map_err(CliError::other)?;
    seed_buckets(&client, &endpoint, &plan, (args.size, &args.sizes)).await?;
    // The quota takes the client only: the server was started before. With several
    // memory sizes the whole sweep runs once per size, each under its own quota.
    let seed_sessions = client.transport().counters().session_requests;
    let server_cpu_before = server.cpu_time();
    let (observer, requests_log) = args.output.observer()?;
    let swept = sweep_steps(
        &client,
        &plan,
        &steps,
        &SweepOptions {
            runner: Runner::Local,
            ..SweepOptions::default()
        },
        observer,
    )
    .await;
    let swept = swept.and_then(|r| super::finish_requests_log(requests_log.as_deref()).map(|()| r));
    let (mut result, requests) = match swept {
        Ok(swept) => (swept.result, swept.requests_sent),
        Err(e) => {
            server.stop().await;
            return Err(e);
        }
    };
    analyse(&mut result, &thresholds);
    let server_cpu = match (server_cpu_before, server.cpu_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    print_result(&args, &result, seed_sessions, server_cpu.map(|cpu| (cpu, requests)));
    let written = write_outputs(&args, &result);
    server.stop().await;
    written
}

/// The demo's two buckets and their latency profiles.
fn demo_buckets() -> Vec<(String, LatencyProfile)> {
    vec![
        (STANDARD_BUCKET.to_string(), LatencyProfile::Standard),
        (EXPRESS_BUCKET.to_string(), LatencyProfile::Express),
    ]
}

/// The sweep the flags ask for, validated (a bad value names its flag): the demo's
/// buckets with the flags' fields, built as `run` builds its request.
fn demo_plan(args: &LocalArgs) -> Result<Plan, CliError> {
    let buckets = RunFieldArgs {
        buckets: demo_buckets().into_iter().map(|(b, _)| b).collect(),
        ..RunFieldArgs::default()
    };
    let flags = [
        request_fields(&buckets),
        request_fields(&args.sweep),
        request_fields(&args.quota),
    ];
    let (map, from_flags) = request::with_flags(serde_json::Map::new(), flags, &args.sweep);
    let plan =
        Plan::from_value(serde_json::Value::Object(map)).map_err(|e| request::name_sources(&e, &from_flags, None))?;
    plan.check_fd_budget(args.in_process).map_err(CliError::other)?;
    check_lab_room(&plan)?;
    Ok(plan)
}

/// Objects that do not fit the lab's store ([`lab::StoreLimits`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabRoomError {
    #[error("--object-sizes: {size_bytes} bytes is larger than the lab's largest object ({max_object_bytes} bytes)")]
    ObjectTooLarge { size_bytes: u64, max_object_bytes: u64 },
    #[error("--objects {objects} x --object-sizes {sizes_bytes:?} x {buckets} buckets is {total_bytes} bytes; the lab holds at most {max_store_bytes}: use fewer --objects")]
    StoreTooSmall {
        objects: u32,
        sizes_bytes: Vec<u64>,
        buckets: usize,
        total_bytes: u64,
        max_store_bytes: u64,
    },
}

/// A size axis must fit the lab's store ([`lab::StoreLimits`]): every size at most its
/// largest object, and all sizes' objects in both buckets within its total.
fn check_lab_room(plan: &Plan) -> Result<(), LabRoomError> {
    let limits = lab::StoreLimits::default();
    let sizes = plan.object_sizes();
    if let Some(&size_bytes) = sizes.iter().find(|&&s| s > limits.max_object_bytes) {
        return Err(LabRoomError::ObjectTooLarge {
            size_bytes,
            max_object_bytes: limits.max_object_bytes,
        });
    }
    let total_bytes = sizes.iter().sum::<u64>() * u64::from(plan.object_count()) * plan.buckets().len() as u64;
    if total_bytes > limits.max_store_bytes {
        return Err(LabRoomError::StoreTooSmall {
            objects: plan.object_count(),
            sizes_bytes: sizes.to_vec(),
            buckets: plan.buckets().len(),
            total_bytes,
            max_store_bytes: limits.max_store_bytes,
        });
    }
    Ok(())
}

/// Starts the lab with the demo's buckets: in a child process by default, so its CPU
/// is not counted as the client's; says where it listens.
async fn start_lab(args: &LocalArgs, session_ttl: Duration) -> Result<LabProcess, CliError> {
    let memory_mb = one_memory_size(&args.network, &args.quota.memory_mb)?;
    let network = args
        .network
        .config(memory_mb)
        .map_err(|bad| CliError::Usage(bad.join("; ")))?;
    let buckets = demo_buckets();
    let server = if args.in_process {
        let running = lab::start(ServerConfig {
            buckets,
            tls: args.tls.then(TlsOptions::default),
            session_ttl,
            network: network.clone(),
            ..ServerConfig::default()
        })
        .await
        .context("starting the embedded server")?;
        running.profiles().set_tail(args.network.tail()?);
        LabProcess::InProcess(running)
    } else {
        let mut serve_args = args.network.serve_args();
        if let (Some(mb), Some(_)) = (memory_mb, &args.network.nic) {
            serve_args.extend(["--lambda-memory-mb".to_string(), mb.to_string()]);
        }
        let options = ChildOptions {
            tls: args.tls,
            session_ttl,
            serve_args,
        };
        LabProcess::spawn(&buckets, options).await.map_err(CliError::other)?
    };
    super::say!("embedded S3 server at {} ({})", server.endpoint(), server.describe());
    if let Some(nic) = &network.nic {
        super::say!("the lab's NIC: {}", nic.describe());
    }
    if let Some(ca) = server.ca_file() {
        super::say!("HTTPS with a CA made at start, trusted by the client: {}", ca.display());
    }
    super::say!(
        "{EXPRESS_BUCKET} is a directory bucket: read with ReadOnly S3 Express sessions of {} s",
        session_ttl.as_secs()
    );
    Ok(server)
}

/// Writes the plan's objects (of `size_bytes`, or the `sizes` cycled) to every bucket of the demo:
/// under the key template, or as PREFIX0, PREFIX1, ... with `--prefix`.
async fn seed_buckets(
    client: &SweepClient,
    endpoint: &str,
    plan: &Plan,
    (size_bytes, sizes): (u64, &[u64]),
) -> Result<(), CliError> {
    // With a prefix the objects are PREFIX0, PREFIX1, ..., then listed like anyone's.
    let template = plan
        .key_prefix()
        .map_or_else(|| plan.keys().as_template(), |p| format!("{p}{{i}}"));
    let seed_started = Instant::now();
    for bucket in plan.buckets() {
        let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(30)));
        seed(
            &s3,
            Some(endpoint),
            &SeedSpec {
                bucket: bucket.clone(),
                keys: KeyTemplate::parse(&template, plan.object_count()).map_err(|e| CliError::Usage(e.to_string()))?,
                object_count: plan.object_count(),
                object_size_bytes: sizes.first().copied().unwrap_or(size_bytes),
                size_cycle_bytes: sizes.to_vec(),
                object_sizes_bytes: plan.object_sizes().to_vec(),
                concurrency: 64,
                skip_existing: false,
            },
        )
        .await
        .context(format!("writing the test objects to {bucket}"))?;
    }
    if plan.probe_bandwidth() {
        let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
        let bucket = &plan.buckets()[0];
        seed_probe_object(
            &s3,
            Some(endpoint),
            bucket,
            plan.probe_key(),
            LOCAL_PROBE_OBJECT_BYTES,
            &crate::s3::manifest::new_owner_marker(),
        )
        .await
        .context(format!("writing the probe object to {bucket}"))?;
    }
    super::say!(
        "wrote {} objects of {} bytes to each bucket in {} ms; sweeping workers {:?} (pool {} connections)",
        plan.object_count(),
        match (sizes.is_empty(), plan.object_sizes()) {
            (_, axis) if !axis.is_empty() => format!("{axis:?} (each under s{{size}}/)"),
            (true, _) => size_bytes.to_string(),
            (false, _) => format!("{sizes:?} (cycled)"),
        },
        seed_started.elapsed().as_millis(),
        plan.workers(),
        plan.pool_connections()
    );
    Ok(())
}

/// The tables, the cold path, and the server's CPU per GET (`server_cpu`: its CPU time
/// and the GETs sent, when known).
fn print_result(args: &LocalArgs, result: &SweepResult, seed_sessions: u64, server_cpu: Option<(Duration, u64)>) {
    println!();
    let layout = args.output.layout().unwrap_or_else(|_| Layout::wide(Style::Terminal));
    print!("{}", human(result, &layout, CostOverrides::default()));
    println!("{}", layout.wrap(&cold_path_line(result, seed_sessions)));
    if let Some((cpu, requests)) = server_cpu {
        let line = format!(
            "embedded server CPU: {:.3} ms per GET ({} GETs incl. warm-up); client peak RSS {} MiB",
            cpu.as_secs_f64() * 1000.0 / requests.max(1) as f64,
            requests,
            usage::peak_rss_bytes() >> 20
        );
        println!("{}", layout.wrap(&line));
    }
}

/// The result JSON and the plot, where the flags ask for them.
fn write_outputs(args: &LocalArgs, result: &SweepResult) -> Result<(), CliError> {
    if let Some(path) = &args.json {
        write_json(path, result)?;
        super::say!("result JSON written to {}", path.display());
    }
    if let Some(path) = &args.output.plot {
        write_plot(result, path)?;
    }
    Ok(())
}

/// The probe object `local --probe-bandwidth` writes to the first bucket: 64 MiB.
const LOCAL_PROBE_OBJECT_BYTES: u64 = 64 << 20;

/// The demo's general purpose bucket.
pub(crate) const STANDARD_BUCKET: &str = "standard-like";
/// The demo's directory bucket (S3 Express One Zone's name form).
pub(crate) const EXPRESS_BUCKET: &str = "express-like--lab1-az1--x-s3";

/// One line on the cold path of the whole sweep: connections and TLS handshakes (warm-up
/// included), the median handshake of the rows, and the `CreateSession` calls.
fn cold_path_line(result: &SweepResult, seed_sessions: u64) -> String {
    let (mut connections, mut handshakes, mut sessions) = (0, 0, 0);
    let mut tls_p50 = Vec::new();
    for row in &result.results {
        for b in [row.warmup.as_ref(), row.breakdown.as_ref()].into_iter().flatten() {
            connections += b.connections_opened;
            handshakes += b.tls_handshakes;
            sessions += b.session_requests;
            if b.tls_handshakes > 0 {
                tls_p50.push(b.tls_handshake_ms.p50);
            }
        }
    }
    let tls = match crate::model::stats::median(tls_p50) {
        Some(p50) if handshakes > 0 => {
            format!("{handshakes} TLS handshakes (one per connection), median of the rows' handshake p50 {p50:.2} ms")
        }
        _ => "no TLS (plain HTTP)".to_string(),
    };
    format!(
        "cold path: {connections} connections opened, {tls}; CreateSession: {sessions} ReadOnly for the sweep's GETs (seeding made {seed_sessions} ReadWrite)"
    )
}

//! `s3sweep local`: the whole demo on the embedded server. It starts the lab (a child
//! process by default, so its CPU is not the client's) with a Standard-like and an
//! Express-like bucket, writes the test objects, sweeps both, and prints the tables,
//! the cost, and the server's CPU per GET.

use std::time::{Duration, Instant};

use crate::analysis::analyse;
use crate::analysis::cost::CostOverrides;
use crate::engine::{self, SweepOptions};
use crate::lab::child::LabProcess;
use crate::lab::{self, LatencyProfile, ServerConfig};
use crate::model::{SweepRequest, Thresholds};
use crate::plan::{KeyTemplate, Plan};
use crate::render::progress::ProgressMode;
use crate::render::Style;
use crate::s3::seed::{seed, SeedSpec};
use crate::s3::{RequestSettings, SweepClient};
use crate::sys::usage;

use super::args::LocalArgs;
use super::{human, request, write_json, write_plot, CliError, Context};

pub async fn local(args: LocalArgs, thresholds: Thresholds) -> Result<(), CliError> {
    args.output.check()?;
    args.quota.cores()?;
    let buckets = vec![
        ("standard-like".to_string(), LatencyProfile::Standard),
        ("express-like".to_string(), LatencyProfile::Express),
    ];
    let max_workers = args.workers.iter().copied().max().unwrap_or(1).max(1);
    let mut request = SweepRequest::new(buckets.iter().map(|(b, _)| b.clone()).collect());
    request.object_count = args.objects;
    request.workers = args.workers.clone();
    request.pool_connections = args.pool.unwrap_or(max_workers);
    request.repetitions = args.repetitions;
    request.target_wall_ms = args.target_wall_ms;
    // The Express-like bucket is priced as S3 Express One Zone.
    request.prices.express_buckets = vec!["express-like".to_string()];
    // Every field of this request comes from a flag (or its default): name the flags.
    let from_flags = request::FLAG_FIELDS.iter().map(|(f, _)| f.to_string()).collect();
    let plan = Plan::from_request(request).map_err(|e| request::name_sources(&e, &from_flags, None))?;
    plan.check_fd_budget(args.in_process).map_err(CliError::other)?;

    // The server runs in a child process by default so its CPU is not counted as the
    // client's.
    let server = if args.in_process {
        let running = lab::start(ServerConfig {
            buckets: buckets.clone(),
            ..ServerConfig::default()
        })
        .await
        .context("starting the embedded server")?;
        LabProcess::InProcess(running)
    } else {
        LabProcess::spawn(&buckets).await.map_err(CliError::other)?
    };
    let endpoint = server.endpoint();
    eprintln!("embedded S3 server at {endpoint} ({})", server.describe());

    let client = SweepClient::new(lab::client_options(&endpoint))
        .await
        .map_err(CliError::other)?;
    let seed_started = Instant::now();
    for (bucket, _) in &buckets {
        let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(30)));
        seed(
            &s3,
            Some(&endpoint),
            &SeedSpec {
                bucket: bucket.clone(),
                keys: KeyTemplate::parse(&plan.keys().as_template(), plan.object_count()).map_err(CliError::Usage)?,
                object_count: plan.object_count(),
                object_size_bytes: args.size,
                concurrency: 64,
                skip_existing: false,
            },
        )
        .await
        .context(format!("writing the test objects to {bucket}"))?;
    }
    eprintln!(
        "wrote {} objects of {} bytes to each bucket in {} ms; sweeping workers {:?} (pool {} connections)",
        plan.object_count(),
        args.size,
        seed_started.elapsed().as_millis(),
        plan.workers(),
        plan.pool_connections()
    );
    // The quota takes the client only: the server was started before.
    let quota = args.quota.enter()?;
    let server_cpu_before = server.cpu_time();
    let requests_before = client.transport().counters().requests_sent;
    let mut result = engine::run(
        &client,
        &plan,
        &SweepOptions {
            runner: "local".into(),
            ..SweepOptions::default()
        },
        ProgressMode::for_stderr(args.output.quiet).observer(),
    )
    .await;
    drop(quota);
    analyse(&mut result, &thresholds);
    let requests = client.transport().counters().requests_sent - requests_before;
    let server_cpu = match (server_cpu_before, server.cpu_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    println!();
    print!(
        "{}",
        human(
            &result,
            Style::markdown_if(args.output.markdown),
            CostOverrides::default()
        )
    );
    if let Some(cpu) = server_cpu {
        println!(
            "embedded server CPU: {:.3} ms per GET ({} GETs incl. warm-up); client peak RSS {} MiB",
            cpu.as_secs_f64() * 1000.0 / requests.max(1) as f64,
            requests,
            usage::peak_rss_bytes() >> 20
        );
    }
    if let Some(path) = &args.json {
        write_json(path, &result)?;
        eprintln!("result JSON written to {}", path.display());
    }
    if let Some(path) = &args.output.plot {
        write_plot(&result, path)?;
    }
    server.stop().await;
    Ok(())
}

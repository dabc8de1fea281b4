//! The s3sweep command line: parses the arguments and calls [`s3sweep::cli::run`].
//! Everything else is in the library (`src/cli/`).

// mimalloc: the SDK allocates a lot per request; glibc malloc cost ~15% of client CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let cli = s3sweep::cli::Cli::parse();
    // Many pooled connections need many descriptors: lift the soft limit to the hard one.
    let fd_limits = s3sweep::sys::limits::raise_nofile();
    if let Some(from) = fd_limits.raised_from {
        tracing::debug!(from, to = fd_limits.soft, "raised the soft RLIMIT_NOFILE");
    }
    s3sweep::cli::run(cli)?;
    Ok(())
}

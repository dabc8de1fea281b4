//! The s3sweep command line: parses the arguments, calls [`s3sweep::cli::run`], and
//! prints a failure as one line (`error: ...`) with a non-zero exit status. No
//! backtrace for a failed command, whatever RUST_BACKTRACE says: those are for panics.
//! Output piped to a reader that stops early (`s3sweep report r.json | head -1`) ends
//! the process quietly, as for any Unix filter: SIGPIPE (status 141 in a shell).
//! Everything else is in the library (`src/cli/`).

// mimalloc: the SDK allocates a lot per request; glibc malloc cost ~15% of client CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a closed stdout would make the next `println!` panic
    // ("failed printing to stdout: Broken pipe", status 101, a backtrace). Restore the
    // default: the process ends quietly, killed by SIGPIPE, like `cat`. Sockets: std's
    // `send` passes MSG_NOSIGNAL but the vectored writes of hyper and rustls (`writev`)
    // do not, so `serve` ignores SIGPIPE again once its banner is out; the lab's child
    // process dies with its parent (PR_SET_PDEATHSIG).
    // SAFETY: called first, before any thread starts; setting a signal's disposition to
    // SIG_DFL has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match s3sweep::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => match s3sweep::cli::parse_error_line(&err, &std::env::args().collect::<Vec<_>>()) {
            Some(line) => {
                eprintln!("error: {}", s3sweep::sys::redact::redact(&line));
                return ExitCode::from(err.exit_code().clamp(1, 255) as u8);
            }
            // --help, --version: clap prints them.
            None => err.exit(),
        },
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| s3sweep::cli::log_filter(cli.verbose).into());
    tracing_subscriber::fmt()
        // Every line redacted: at -vvv the SDK and hyper print request headers.
        .with_writer(s3sweep::sys::redact::Redacting(std::io::stderr))
        .with_env_filter(filter)
        .init();
    // Many pooled connections need many descriptors: lift the soft limit to the hard one.
    let fd_limits = s3sweep::sys::limits::raise_nofile();
    if let Some(from) = fd_limits.raised_from {
        tracing::debug!(from, to = fd_limits.soft, "raised the soft RLIMIT_NOFILE");
    }
    match s3sweep::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", s3sweep::sys::redact::redact(&err.line()));
            ExitCode::from(err.exit_code())
        }
    }
}

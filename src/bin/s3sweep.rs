//! The s3sweep command line: parses the arguments, calls [`s3sweep::cli::run`], and
//! prints a failure as one line (`error: ...`) with a non-zero exit status. No
//! backtrace for a failed command, whatever RUST_BACKTRACE says: those are for panics.
//! Output piped to a reader that stops early (`s3sweep report r.json | head -1`) ends
//! the process quietly, as for any Unix filter: SIGPIPE (status 141 in a shell). A
//! socket's peer that leaves never does: SIGPIPE stays ignored while the command runs.
//! Everything else is in the library (`src/cli/`).

// mimalloc: the SDK allocates a lot per request; glibc malloc cost ~15% of client CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    quiet_on_closed_stdout();
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
            let line = err.line();
            if line.starts_with("writing to stdout") && line.contains("Broken pipe") {
                end_as_a_filter();
            }
            eprintln!("error: {}", s3sweep::sys::redact::redact(&line));
            ExitCode::from(err.exit_code())
        }
    }
}

/// A closed stdout ends the process as it ends a Unix filter, killed by SIGPIPE (status
/// 141 in a shell), and nothing else does. SIGPIPE stays ignored (Rust's setting), so a
/// socket whose peer left fails a write with EPIPE, an error the command counts: the
/// vectored writes of hyper and rustls (`writev`) pass no MSG_NOSIGNAL, and with
/// SIGPIPE's default a client resetting a connection killed `serve --tls`. A closed
/// stdout makes `println!` panic (or a command fail "writing to stdout") instead; this
/// hook (and `main`, for the failure) turn that into SIGPIPE.
fn quiet_on_closed_stdout() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload_as_str().unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            end_as_a_filter();
        }
        default_hook(info);
    }));
}

/// Ends the process killed by SIGPIPE, quietly, as `cat` ends when its reader left.
fn end_as_a_filter() {
    // SAFETY: restoring SIGPIPE's default action and raising it ends the process;
    // neither call has a precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
}

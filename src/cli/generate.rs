//! What is generated from the clap definitions: shell completion scripts
//! (`s3sweep completions bash|zsh|fish|elvish|powershell`, clap_complete) and manual
//! pages (`s3sweep man [COMMAND]`, clap_mangen), both on stdout.

use std::io::Write;

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs, ManArgs};
use super::{CliError, Context};

/// The completion script for one shell.
pub(crate) fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "s3sweep", &mut out);
    out
}

/// The manual page (roff) of s3sweep, or of one of its commands (`s3sweep-run(1)`).
pub(crate) fn man_page(command: Option<&str>) -> Result<Vec<u8>, CliError> {
    let mut cli = Cli::command();
    cli.build();
    let page = match command {
        None => cli,
        Some(name) => {
            let commands: Vec<String> = cli.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let sub = cli.find_subcommand(name).cloned().ok_or_else(|| CliError::NoCommand {
                name: name.to_string(),
                commands,
            })?;
            let full = format!("s3sweep-{name}");
            sub.name(full).bin_name(format!("s3sweep {name}"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .context("rendering the manual page")?;
    Ok(out)
}

fn print(bytes: &[u8]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .context("writing to stdout")
}

pub(crate) fn completions(args: &CompletionsArgs) -> Result<(), CliError> {
    print(&completion_script(args.shell))
}

pub(crate) fn man(args: &ManArgs) -> Result<(), CliError> {
    print(&man_page(args.command.as_deref())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_name_the_commands_and_unknown_ones_are_refused() {
        let page = String::from_utf8(man_page(None).unwrap()).unwrap();
        assert!(page.starts_with(".ie"), "{}", &page[..40.min(page.len())]);
        for cmd in [
            "local",
            "run",
            "seed",
            "serve",
            "clean",
            "report",
            "compare",
            "completions",
        ] {
            assert!(page.contains(cmd), "{cmd} missing from the man page");
        }
        let run = String::from_utf8(man_page(Some("run")).unwrap()).unwrap();
        assert!(run.contains("s3sweep\\-run") && run.contains("print\\-event"), "{run}");
        let err = man_page(Some("nope")).unwrap_err().line();
        assert!(err.contains("nope") && err.contains("run"), "{err}");
    }
}

//! `offload completions`: the shell's completion script for `offload`, made from the command
//! lines the program parses.

use std::io;

use clap::Parser;

use crate::cli::{manual, parse_args, stdout_failed};

const PROG: &str = "offload completions";

/// Print the completion script of a shell for offload: its subcommands, their options and the
/// values they take. Load it in the running shell (bash: `source <(offload completions bash)`)
/// or save it where the shell looks for completions (bash:
/// ~/.local/share/bash-completion/completions/offload, zsh: a file _offload in a folder of
/// $fpath, fish: ~/.config/fish/completions/offload.fish).
#[derive(Debug, Parser)]
#[command(name = "offload completions")]
struct Args {
    /// The shell to complete for.
    shell: clap_complete::Shell,
}

/// The command line this module parses, for the manual pages and shell completions.
pub(crate) fn command() -> clap::Command {
    <Args as clap::CommandFactory>::command()
}

/// The completion script of `shell` for `offload`.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut manual::command(), "offload", &mut out);
    out
}

/// Runs `offload completions` with `args` (without the program name) and returns the exit
/// status.
pub fn run(args: &[String]) -> i32 {
    let args: Args = match parse_args(PROG, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let text = script(args.shell);
    match crate::cli::write_flushed(&mut io::stdout().lock(), &text) {
        Ok(()) => 0,
        Err(e) => stdout_failed(PROG, &mut io::stderr().lock(), &e),
    }
}

//! A command of `offload` as its file under `cli/` declares it: a clap `Args` struct and what
//! the command does with it, parsed and started the same way for every command.

use std::ffi::OsString;

use crate::cli::general::{GeneralOpts, OutputOpts};
use crate::cli::parse_args;

/// A command of `offload` whose arguments clap parses: one `Args` struct, and what the command
/// does with it. [`run_parsed`] parses, installs the log `-v` asks for, applies `--sync`, then
/// calls [`Subcommand::run`].
pub(crate) trait Subcommand: clap::Parser {
    /// The name the command's messages start with (`offload ls`).
    const PROG: &'static str;
    /// The options every command shares (`-v`), when the command takes them.
    fn general(&self) -> Option<GeneralOpts> {
        None
    }
    /// `--sync`, when the command writes files.
    fn output(&self) -> Option<OutputOpts> {
        None
    }
    /// Does what the command does and returns the exit status.
    fn run(self) -> i32;
}

/// Runs the command `A` with `args` (without the program name) and returns the exit status.
pub(crate) fn run_parsed<A: Subcommand>(args: &[OsString]) -> i32 {
    let parsed: A = match parse_args(A::PROG, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    if let Some(general) = parsed.general() {
        general.install_log();
    }
    if let Some(output) = parsed.output() {
        output.apply();
    }
    parsed.run()
}

/// The command line `A` parses, as clap describes it.
pub(crate) fn definition<A: clap::CommandFactory>() -> clap::Command {
    A::command()
}

/// Implements [`Subcommand`] for a command's `Args`: its name in messages, the function that
/// runs it, and which shared options it flattens (`general` for `-v`, `output_opts` for
/// `--sync`), e.g. `subcommand!(Args, "offload ls", run, general);`.
macro_rules! subcommand {
    ($args:ty, $prog:expr, $run:path $(, $option:ident)*) => {
        impl $crate::cli::subcommand::Subcommand for $args {
            const PROG: &'static str = $prog;
            $($crate::cli::subcommand::subcommand!(@$option);)*
            fn run(self) -> i32 {
                $run(self)
            }
        }
    };
    (@general) => {
        fn general(&self) -> Option<$crate::cli::general::GeneralOpts> {
            Some(self.general)
        }
    };
    (@output_opts) => {
        fn output(&self) -> Option<$crate::cli::general::OutputOpts> {
            Some(self.output_opts)
        }
    };
}
pub(crate) use subcommand;

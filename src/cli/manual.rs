//! The manual pages (`docs/man/`): one for `offload`, one per command of the registry, one per
//! LLVM name the program answers to, each made from the definition its command parses with, so
//! that no page can drift from the program.

use clap::Command;

use crate::cli::personalities::{bundler, clang_offload_wrapper, llvm_offload_wrapper, packager};
use crate::cli::registry::{Action, Commands};
use crate::target::processor::LlvmVersion;

/// The `offload` command with every subcommand: what the shell completions complete.
pub fn command() -> Command {
    Commands::standard().clap()
}

/// Every manual page: its name (`offload-ls`) and the command it documents. One for `offload`,
/// one per subcommand, and one per LLVM name the program answers to.
pub fn pages() -> Vec<(String, Command)> {
    let version = env!("CARGO_PKG_VERSION");
    let commands = Commands::standard();
    let mut pages = vec![("offload".to_string(), commands.clap())];
    let subcommands = commands
        .entries()
        .iter()
        .filter(|entry| !matches!(entry.action, Action::Help))
        .map(|entry| entry.subcommand());
    for sub in subcommands {
        let name = sub.get_name().to_string();
        let page = format!("offload-{name}");
        let command = sub
            .name(page.clone())
            .bin_name(format!("offload {name}"))
            .version(version);
        pages.push((page, command));
    }
    let llvm_names = [
        bundler::command(),
        packager::command(LlvmVersion::V19),
        packager::command(LlvmVersion::V22),
        clang_offload_wrapper::command(),
        llvm_offload_wrapper::command(),
    ];
    for command in llvm_names {
        let name = command.get_name().to_string();
        pages.push((name, command.version(version)));
    }
    pages
}

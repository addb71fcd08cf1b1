//! The command lines as clap commands, whole: what the manual pages (`docs/man/`) and the shell
//! completions (`offload completions`, run from here) are made from. Each part is the definition its command
//! parses with, so neither can drift from the program.

use std::io;

use clap::{Command, Parser};

use crate::cli::general::OutputOpts;
use crate::cli::personalities::{bundler, clang_offload_wrapper, llvm_offload_wrapper, packager};
use crate::cli::{
    check, du, extract, kpack, links, ls, parse_args, rewrite, stdout_failed, verify,
};
use crate::target::processor::LlvmVersion;

/// What `offload`'s manual page says after the list of commands: how the commands share their
/// options and how the LLVM names choose a tool.
const DESCRIPTION: &str = "offload lists, extracts, checks, strips, compresses and splits the \
device code (AMDGPU code objects, PTX, cubins, LLVM bitcode) that GPU offload fat binaries carry \
beside host code, in objects, programs, shared libraries and archives, and stands in for LLVM's \
clang-offload-bundler, clang-offload-packager (llvm-offload-binary), clang-offload-wrapper and \
llvm-offload-wrapper with the same command lines and output bytes.

ls, extract, verify, check, du, strip, compress and decompress take many files and folders (-r \
walks trees), read N at once (-j N; output in the order of the files) and, for more than one \
file, end with a summary. Most commands take -v (-vv, -vvv) to log what they do on standard \
error; OFFLOAD_LOG=offload=debug (a tracing filter) logs for every command.

A file that replaces one (in place, or over an existing file) is synced to the disk before it takes its place, and its folder after; new files are not. extract, strip, compress, decompress, kpack and wrapper take --sync to sync every file and folder written; OFFLOAD_SYNC=1 does so for every command.

Started through a link named clang-offload-bundler or offload-bundler, the program behaves as \
offload bundler; through clang-offload-packager, offload-packager or llvm-offload-binary, as \
offload packager; through clang-offload-wrapper or llvm-offload-wrapper, as that wrapper \
(offload links makes the links). A -19, -22 or -23 at the end of the name, else \
OFFLOAD_LLVM_VERSION, else 23 chooses the LLVM release they stand in for.";

/// The `offload` subcommands, each as it parses its arguments and under its own name (`ls`).
fn subcommands() -> Vec<Command> {
    vec![
        bundler::command().name("bundler"),
        packager::command(LlvmVersion::DEFAULT).name("packager"),
        ls::command(),
        extract::command(),
        check::command(),
        verify::command(),
        du::command(),
        clang_offload_wrapper::command()
            .name("wrapper")
            .args(wrapper_extensions())
            .args(output_options())
            .about("Wrap offload images in a host object that registers them (clang-offload-wrapper; with --kind, llvm-offload-wrapper)"),
        rewrite::strip_command(),
        rewrite::compress_command(),
        rewrite::decompress_command(),
        kpack::command(),
        links::command(),
        completions_command(),
    ]
    .into_iter()
    .map(|command| {
        let name = command.get_name().trim_start_matches("offload ").to_string();
        let long = command.get_long_about().or(command.get_about()).cloned();
        let about = summary(&name);
        let command = match long {
            Some(long) => command.long_about(long),
            None => command,
        };
        match about {
            Some(about) => command.about(about).name(name),
            None => command.name(name),
        }
    })
    .collect()
}

/// What `offload help` says of the command `name`, its lines joined.
fn summary(name: &str) -> Option<String> {
    let commands = super::USAGE.split("COMMANDS:\n").nth(1)?;
    let mut lines = commands.lines();
    let first = lines.find_map(|line| {
        let rest = line.strip_prefix("  ")?.strip_prefix(name)?;
        rest.starts_with("  ").then(|| rest.trim().to_string())
    })?;
    let more = lines
        .take_while(|line| line.starts_with("    "))
        .map(str::trim);
    Some(
        std::iter::once(first.as_str())
            .chain(more)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The options llvm-offload-wrapper's command line adds to clang-offload-wrapper's, for
/// `offload wrapper`, which takes either.
fn wrapper_extensions() -> Vec<clap::Arg> {
    let theirs = clang_offload_wrapper::command();
    llvm_offload_wrapper::command()
        .get_arguments()
        .filter(|arg| {
            !arg.is_positional() && theirs.get_arguments().all(|a| a.get_id() != arg.get_id())
        })
        .cloned()
        .collect()
}

/// The options `offload wrapper` takes beyond the LLVM wrappers' command lines: `--sync`, as
/// every subcommand that writes files.
fn output_options() -> Vec<clap::Arg> {
    <OutputOpts as clap::Args>::augment_args(Command::new("wrapper"))
        .get_arguments()
        .cloned()
        .collect()
}

/// The `offload` command with every subcommand: what the shell completions complete.
pub fn command() -> Command {
    Command::new("offload")
        .version(env!("CARGO_PKG_VERSION"))
        .about("GPU offload fat binary tools")
        .long_about(DESCRIPTION)
        .disable_help_subcommand(true)
        .subcommand_required(true)
        .subcommands(subcommands())
}

/// Every manual page: its name (`offload-ls`) and the command it documents. One for `offload`,
/// one per subcommand, and one per LLVM name the program answers to.
pub fn pages() -> Vec<(String, Command)> {
    let version = env!("CARGO_PKG_VERSION");
    let mut pages = vec![("offload".to_string(), command())];
    for sub in subcommands() {
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

/// The name `offload completions` gives itself in messages.
const COMPLETIONS: &str = "offload completions";

/// Print the completion script of a shell for offload: its subcommands, their options and the
/// values they take. Load it in the running shell (bash: `source <(offload completions bash)`)
/// or save it where the shell looks for completions (bash:
/// ~/.local/share/bash-completion/completions/offload, zsh: a file _offload in a folder of
/// $fpath, fish: ~/.config/fish/completions/offload.fish).
#[derive(Debug, Parser)]
#[command(name = "offload completions")]
struct CompletionsArgs {
    /// The shell to complete for.
    shell: clap_complete::Shell,
}

/// `offload completions`' command line.
fn completions_command() -> clap::Command {
    <CompletionsArgs as clap::CommandFactory>::command()
}

/// The completion script of `shell` for `offload`.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command(), "offload", &mut out);
    out
}

/// Runs `offload completions` with `args` (without the program name) and returns the exit
/// status.
pub fn run_completions(args: &[std::ffi::OsString]) -> i32 {
    let args: CompletionsArgs = match parse_args(COMPLETIONS, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let text = completion_script(args.shell);
    match crate::cli::write_flushed(&mut io::stdout().lock(), &text) {
        Ok(()) => 0,
        Err(e) => stdout_failed(COMPLETIONS, &mut io::stderr().lock(), &e),
    }
}

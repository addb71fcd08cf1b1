//! `offload wrapper`: clang-offload-wrapper's command line, or, given `--kind`,
//! llvm-offload-wrapper's (LLVM 22 or 23, as `OFFLOAD_LLVM_VERSION` says), plus the `-v` every subcommand takes and the `--sync` of
//! those that write files.

use crate::cli::general::{GeneralOpts, OutputOpts};
use crate::cli::personalities::{clang_offload_wrapper, llvm_offload_wrapper};
use std::ffi::OsString;
use std::io::Write;

/// Runs `offload wrapper` with `args` (without the program name), which it takes as text.
pub(crate) fn run(args: &[OsString]) -> i32 {
    match crate::cli::text_args("offload wrapper", args) {
        Some(args) => run_subcommand(&args),
        None => 1,
    }
}

/// `offload wrapper`'s command line: clang-offload-wrapper's, the options llvm-offload-wrapper
/// adds, and the `-v` and `--sync` of `offload`'s commands.
pub(crate) fn command() -> clap::Command {
    let theirs = clang_offload_wrapper::command();
    let extensions: Vec<clap::Arg> = llvm_offload_wrapper::command()
        .get_arguments()
        .filter(|arg| {
            !arg.is_positional() && theirs.get_arguments().all(|a| a.get_id() != arg.get_id())
        })
        .cloned()
        .collect();
    let ours = <OutputOpts as clap::Args>::augment_args(<GeneralOpts as clap::Args>::augment_args(
        clap::Command::new("wrapper"),
    ));
    let ours: Vec<clap::Arg> = ours
        .get_arguments()
        .filter(|arg| arg.get_id() != "max_decompressed")
        .cloned()
        .collect();
    theirs
        .name("wrapper")
        .args(extensions)
        .args(ours)
        .about("Wrap offload images in a host object that registers them (clang-offload-wrapper; with --kind, llvm-offload-wrapper)")
}

/// Runs `offload wrapper` with `args` (without the program name): the wrapper's command line,
/// plus the `-v` every `offload` subcommand takes and `--sync`. (Started as
/// clang-offload-wrapper, the program takes LLVM's options only: see
/// [`clang_offload_wrapper::run`].)
pub fn run_subcommand(args: &[String]) -> i32 {
    let (general, output, rest) = take_ours(args);
    general.install_log();
    output.apply();
    // `--kind` is llvm-offload-wrapper's: its command line, not clang-offload-wrapper's.
    let is_kind = |a: &String| {
        let body = a.trim_start_matches('-');
        a.starts_with('-') && (body == "kind" || body.starts_with("kind="))
    };
    if rest.iter().any(is_kind) {
        let var = std::env::var(crate::cli::LLVM_VERSION_VAR).ok();
        return match crate::cli::llvm_version("offload", var.as_deref()) {
            Ok(version) => llvm_offload_wrapper::run(llvm_offload_wrapper::OURS, &rest, version),
            Err(message) => {
                let _ = writeln!(std::io::stderr(), "offload wrapper: error: {message}");
                1
            }
        };
    }
    clang_offload_wrapper::run("offload wrapper", &rest)
}

/// Takes `-v`, `-vv`, `-vvv`, `--verbose` and `--sync` out of a wrapper command line. A value
/// of an option that takes one (`-o -v`) and whatever follows `--` stay.
fn take_ours(args: &[String]) -> (GeneralOpts, OutputOpts, Vec<String>) {
    let mut general = GeneralOpts::default();
    let mut output = OutputOpts::default();
    let mut rest = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
        match body {
            _ if arg == "--" => {
                rest.push(arg.clone());
                rest.extend(iter.by_ref().cloned());
            }
            Some("verbose") => general.verbose = general.verbose.saturating_add(1),
            Some("sync") => output.sync = true,
            Some(v) if !arg.starts_with("--") && !v.is_empty() && v.bytes().all(|b| b == b'v') => {
                let count = u8::try_from(v.len()).unwrap_or(u8::MAX);
                general.verbose = general.verbose.saturating_add(count);
            }
            Some("o" | "target" | "offload-arch" | "kind" | "triple" | "filetype") => {
                rest.push(arg.clone());
                rest.extend(iter.next().cloned());
            }
            _ => rest.push(arg.clone()),
        }
    }
    (general, output, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn verbosity_and_sync_leave_the_wrapper_options_alone() {
        let (general, output, rest) = take_ours(&strings(&[
            "-v",
            "-o",
            "-v",
            "--target=x86_64-pc-linux-gnu",
            "--verbose",
            "-vv",
            "a.bin",
            "--",
            "-v",
        ]));
        assert_eq!(general.verbose, 4);
        assert!(!output.sync);
        assert_eq!(
            rest,
            strings(&[
                "-o",
                "-v",
                "--target=x86_64-pc-linux-gnu",
                "a.bin",
                "--",
                "-v"
            ])
        );
    }

    #[test]
    fn sync_is_taken_out_but_not_as_a_value_or_after_the_end_of_options() {
        let (_, output, rest) = take_ours(&strings(&[
            "--sync", "-o", "--sync", "a.bin", "--", "--sync",
        ]));
        assert!(output.sync);
        assert_eq!(rest, strings(&["-o", "--sync", "a.bin", "--", "--sync"]));
        let (_, output, rest) = take_ours(&strings(&["-o", "--sync", "a.bin"]));
        assert!(!output.sync);
        assert_eq!(rest, strings(&["-o", "--sync", "a.bin"]));
    }
}

//! `offload wrapper`: clang-offload-wrapper's command line (with the per-image
//! `--offload-arch` of ROCm's version), writing a native object, LLVM IR or bitcode.

use super::general::GeneralOpts;
use super::llvm_cl::{self, Kind, Spec};
use crate::ops::wrapper::{self, WrapperConfig};
use std::io::Write;
use std::path::{Path, PathBuf};

const SPECS: &[Spec] = &[
    Spec {
        name: "o",
        kind: Kind::Value,
    },
    Spec {
        name: "target",
        kind: Kind::Value,
    },
    Spec {
        name: "offload-arch",
        kind: Kind::List,
    },
    Spec {
        name: "help",
        kind: Kind::Flag,
    },
    Spec {
        name: "version",
        kind: Kind::Flag,
    },
];

const HELP: &str = "OVERVIEW: A tool to create a wrapper for offload target binaries.
Takes offload target binaries as input and produces a host object (.o), LLVM IR (.ll) or
bitcode (.bc) that holds them and registers them in the offload runtime at startup.

USAGE: PROG [options] <input files>

OPTIONS:

Generic Options:

  --help                             - Display available options
  --version                          - Display the version of this program

clang-offload-wrapper options:

  -o <filename>                      - Output filename (.o/.obj, .ll or .bc)
  --offload-arch=<target id>         - Target ID of the image that follows
  --target=<triple>                  - Target triple for the output module
";

/// Runs `offload wrapper` with `args` (without the program name): the wrapper's command line,
/// plus the `-v` every `offload` subcommand takes. (Started as clang-offload-wrapper, the
/// program takes LLVM's options only: see [`run`].)
pub fn run_subcommand(args: &[String]) -> i32 {
    let (general, rest) = take_verbosity(args);
    general.install_log();
    run("offload wrapper", &rest)
}

/// Takes `-v`, `-vv`, `-vvv` and `--verbose` out of a wrapper command line. A value of an
/// option that takes one (`-o -v`) and whatever follows `--` stay.
fn take_verbosity(args: &[String]) -> (GeneralOpts, Vec<String>) {
    let mut general = GeneralOpts::default();
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
            Some(v) if !arg.starts_with("--") && v.bytes().all(|b| b == b'v') => {
                let count = u8::try_from(v.len()).unwrap_or(u8::MAX);
                general.verbose = general.verbose.saturating_add(count);
            }
            Some("o" | "target" | "offload-arch") => {
                rest.push(arg.clone());
                rest.extend(iter.next().cloned());
            }
            _ => rest.push(arg.clone()),
        }
    }
    (general, rest)
}

/// Runs the wrapper with `args` (without the program name); `prog` starts the messages.
pub fn run(prog: &str, args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(prog, args, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`], writing to the given streams.
pub fn run_with(prog: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let base = Path::new(prog)
        .file_name()
        .map_or_else(|| prog.to_string(), |n| n.to_string_lossy().into_owned());
    // Each --offload-arch names the input after it: read them in order.
    let mut arches = Vec::new();
    let mut images = Vec::new();
    let mut rest = Vec::new();
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
        match body {
            Some(b) if b.starts_with("offload-arch=") => {
                arches.push((images.len(), b["offload-arch=".len()..].to_string()));
            }
            Some("offload-arch") => {
                if let Some(v) = iter.next() {
                    arches.push((images.len(), v.clone()));
                }
            }
            Some(_) => {
                rest.push(arg.clone());
                // A value in the next argument belongs to the option.
                if matches!(body, Some("o" | "target")) {
                    if let Some(v) = iter.next() {
                        rest.push(v.clone());
                    }
                }
            }
            None => images.push(PathBuf::from(arg)),
        }
    }
    let parsed = match llvm_cl::parse(&rest, SPECS) {
        Ok(p) => p,
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            return 1;
        }
    };
    if parsed.flag("help") == Some(true) {
        let help = HELP.replace("PROG", prog);
        return super::write_out(prog, out, err, help.as_bytes()).map_or_else(|code| code, |()| 0);
    }
    if parsed.flag("version") == Some(true) {
        let version = format!(
            "offload-tools clang-offload-wrapper version {}\n",
            env!("CARGO_PKG_VERSION")
        );
        return super::write_out(prog, out, err, version.as_bytes())
            .map_or_else(|code| code, |()| 0);
    }
    images.extend(parsed.positional.iter().map(PathBuf::from));
    let Some(target) = parsed.value("target") else {
        let _ = writeln!(
            err,
            "{base}: for the --target option: must be specified at least once!"
        );
        return 1;
    };
    if images.is_empty() {
        let _ = writeln!(
            err,
            "{base}: Not enough positional command line arguments specified!\nMust specify at least 1 positional argument: See: {prog} --help"
        );
        return 1;
    }
    let Some(output) = parsed.value("o") else {
        let _ = writeln!(err, "{prog}: error: no output file specified (-o)");
        return 1;
    };
    // An --offload-arch names the image that follows it; one given after the last image has
    // none to name.
    let mut per_image = vec![String::new(); images.len()];
    for (index, arch) in &arches {
        match per_image.get_mut(*index) {
            Some(slot) => *slot = arch.clone(),
            None => {
                let _ = writeln!(
                    err,
                    "{prog}: error: --offload-arch={arch} is not followed by an image"
                );
                return 1;
            }
        }
    }
    let count = per_image
        .iter()
        .rposition(|a| !a.is_empty())
        .map_or(0, |i| i + 1);
    per_image.truncate(count);
    let config = WrapperConfig {
        target: target.to_string(),
        output: PathBuf::from(output),
        images,
        arches: per_image,
    };
    match wrapper::wrap(&config) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn verbosity_leaves_the_wrapper_options_alone() {
        let (general, rest) = take_verbosity(&strings(&[
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
}

//! `llvm-offload-wrapper` (LLVM 22): `--kind=openmp|cuda|hip --triple=T -o OUT IMAGE...`, the
//! module that registers a device image with the OpenMP, CUDA or HIP runtime, as bitcode.
//!
//! Beyond LLVM's options, `--filetype=obj` writes a native object instead (left out of
//! `--help`, which stays LLVM's). As `offload wrapper --kind=...`, the output's extension
//! chooses: `.o`/`.obj` a native object, `.ll` IR text, anything else bitcode.

use super::llvm_cl::{self, Kind, Spec};
use crate::ops::wrapper::{self, FileType, OffloadKind, OffloadWrapperConfig};
use std::io::Write;
use std::path::{Path, PathBuf};

const SPECS: &[Spec] = &[
    Spec {
        name: "kind",
        kind: Kind::Value,
    },
    Spec {
        name: "o",
        kind: Kind::Value,
    },
    Spec {
        name: "triple",
        kind: Kind::Value,
    },
    Spec {
        name: "filetype",
        kind: Kind::Value,
    },
    Spec {
        name: "help",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-list",
        kind: Kind::Flag,
    },
    Spec {
        name: "version",
        kind: Kind::Flag,
    },
];

const HELP: &str = "OVERVIEW: Generate runtime registration code for a device binary image

USAGE: PROG [options] Wrap input from <file>

OPTIONS:

Generic Options:

  --help            - Display available options (--help-hidden for more)
  --help-list       - Display list of available options (--help-list-hidden for more)
  --version         - Display the version of this program

llvm-offload-wrapper options:

  --kind=<value>    - Wrap for offload kind:
    =openmp         -   Wrap OpenMP binaries
    =cuda           -   Wrap CUDA binaries
    =hip            -   Wrap HIP binaries
  -o <file>         - Write output to <file>.
  --triple=<string> - Target triple for the wrapper module
";

/// What `--help` and `--version` print.
const ABOUT: llvm_cl::About = llvm_cl::About {
    tool: "llvm-offload-wrapper",
    help: HELP,
    help_flags: &["help", "help-list"],
    compatible_with: None,
};

/// The host triple when `--triple` is not given.
const DEFAULT_TRIPLE: &str = "x86_64-pc-linux-gnu";

/// How the output's file type is chosen when `--filetype` does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// As LLVM's tool: bitcode (IR text for a `.ll` output).
    Llvm,
    /// As `offload wrapper`: by the output's extension.
    Extension,
}

/// Runs `llvm-offload-wrapper` with `args` (without the program name); `prog` starts the
/// messages.
pub fn run(prog: &str, args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(prog, args, &mut stdout.lock(), &mut stderr.lock())
}

/// Runs `offload wrapper --kind=...` with `args`: as [`run`], but the output's extension
/// chooses its file type (`.o`/`.obj` a native object, `.ll` IR text, else bitcode).
pub fn run_by_extension(prog: &str, args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_choosing(
        prog,
        args,
        Choice::Extension,
        &mut stdout.lock(),
        &mut stderr.lock(),
    )
}

/// [`run`], writing to the given streams.
pub fn run_with(prog: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    run_choosing(prog, args, Choice::Llvm, out, err)
}

fn run_choosing(
    prog: &str,
    args: &[String],
    choice: Choice,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let base = Path::new(prog)
        .file_name()
        .map_or_else(|| prog.to_string(), |n| n.to_string_lossy().into_owned());
    let (images, options) = split(args);
    let (parsed, mut failed) = match llvm_cl::parse(&options, SPECS) {
        Ok(p) => (p, false),
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            (llvm_cl::Parsed::default(), true)
        }
    };
    if !failed {
        if let Some(code) = llvm_cl::help_or_version(prog, &parsed, &ABOUT, out, err) {
            return code;
        }
    }
    let mut images: Vec<PathBuf> = images.into_iter().map(PathBuf::from).collect();
    images.extend(parsed.positional.iter().map(PathBuf::from));
    // As LLVM's parser: the missing positional argument, then the missing or unknown kind.
    if images.is_empty() {
        let _ = writeln!(
            err,
            "{base}: Not enough positional command line arguments specified!\nMust specify at least 1 positional argument: See: {prog} --help"
        );
        failed = true;
    }
    let kind = match parsed.value("kind") {
        Some("openmp") => Some(OffloadKind::OpenMp),
        Some("cuda") => Some(OffloadKind::Cuda),
        Some("hip") => Some(OffloadKind::Hip),
        Some(other) => {
            let _ = writeln!(
                err,
                "{base}: for the --kind option: Cannot find option named '{other}'!"
            );
            return 1;
        }
        None => None,
    };
    let Some(kind) = kind else {
        let _ = writeln!(
            err,
            "{base}: for the --kind option: must be specified at least once!"
        );
        return 1;
    };
    if failed {
        return 1;
    }
    let output = PathBuf::from(parsed.value("o").unwrap_or(""));
    let file_type = match (parsed.value("filetype"), choice) {
        (Some("obj"), _) => FileType::Object,
        (Some("bc"), _) => FileType::Bitcode,
        (Some("ll" | "asm"), _) => FileType::IrText,
        (Some(other), _) => {
            let _ = writeln!(
                err,
                "{base}: for the --filetype option: Cannot find option named '{other}'! (obj, bc or ll)"
            );
            return 1;
        }
        (None, Choice::Extension) => FileType::of(&output),
        (None, Choice::Llvm) if FileType::of(&output) == FileType::IrText => FileType::IrText,
        (None, Choice::Llvm) => FileType::Bitcode,
    };
    let config = OffloadWrapperConfig {
        kind,
        triple: parsed.value("triple").unwrap_or(DEFAULT_TRIPLE).to_string(),
        output,
        file_type,
        images,
    };
    if config.output.as_os_str().is_empty() {
        let _ = writeln!(err, "{prog}: error: No such file or directory");
        return 1;
    }
    match wrapper::wrap_llvm22(&config) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            1
        }
    }
}

/// The images (arguments that are not options nor an option's value) and the options.
fn split(args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut images, mut options) = (Vec::new(), Vec::new());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            images.extend(iter.by_ref().cloned());
        } else if arg.starts_with('-') && arg != "-" {
            options.push(arg.clone());
            let body = arg.trim_start_matches('-');
            if matches!(body, "o" | "kind" | "triple" | "filetype") {
                options.extend(iter.next().cloned());
            }
        } else {
            images.push(arg.clone());
        }
    }
    (images, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(args: &[&str]) -> (i32, String) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with("W", &args, &mut out, &mut err);
        (code, String::from_utf8(err).unwrap())
    }

    #[test]
    fn command_line_errors_read_as_llvm_offload_wrapper_22() {
        assert_eq!(
            run_args(&[]),
            (
                1,
                "W: Not enough positional command line arguments specified!\n\
                 Must specify at least 1 positional argument: See: W --help\n\
                 W: for the --kind option: must be specified at least once!\n"
                    .into()
            )
        );
        assert_eq!(
            run_args(&["--kind=foo", "a.bin"]),
            (
                1,
                "W: for the --kind option: Cannot find option named 'foo'!\n".into()
            )
        );
        assert_eq!(
            run_args(&["--kind=hip", "a.bin"]),
            (1, "W: error: No such file or directory\n".into())
        );
    }
}

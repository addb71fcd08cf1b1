//! `offload wrapper`: clang-offload-wrapper's command line (with the per-image
//! `--offload-arch` of ROCm's version), writing a native object, LLVM IR or bitcode.

use crate::cli::personalities::llvm_cl::{self, Kind, Spec};
use crate::cli::personalities::wrapper_args::{per_image, CommandLine};
use crate::ops::wrapper::{self, WrapperConfig};
use std::io::Write;
use std::path::PathBuf;

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

  -o <filename>                      - Output filename: .o/.obj a native object, .ll LLVM IR,
                                       .bc bitcode
  --offload-arch=<target id>         - Target ID of the image that follows
  --target=<triple>                  - Target triple for the output module (native objects:
                                       x86_64 and aarch64 ELF, x86_64-pc-windows-msvc COFF)

With --kind=openmp|cuda|hip (and --triple=<triple>, not --target), the command line and the
module are LLVM 22's llvm-offload-wrapper's (see offload wrapper --kind=hip --help); the
output's extension chooses what is written in the same way. (Started as llvm-offload-wrapper,
the program writes bitcode for any name, as LLVM's, unless given --filetype=obj, bc or ll.)
";

/// The command line this tool parses, for its manual page and the shell completions.
pub(crate) fn command() -> clap::Command {
    let images = "The offload target binaries to wrap, each after the --offload-arch that names it";
    llvm_cl::command(
        "clang-offload-wrapper",
        SPECS,
        HELP,
        Some(("images", images)),
    )
}

/// Runs the wrapper with `args` (without the program name); `prog` starts the messages.
pub fn run(prog: &str, args: &[String]) -> i32 {
    llvm_cl::run_on_standard_streams(prog, args, run_with)
}

/// [`run`], writing to the given streams.
pub fn run_with(prog: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    // Command-line parser messages start with the program's file name, as LLVM's do; the
    // others with the program as it was started.
    let base = llvm_cl::base_name(prog);
    let line = CommandLine::split(args, &["o", "target"]);
    let parsed = match llvm_cl::parse(&line.rest, SPECS) {
        Ok(p) => p,
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            return 1;
        }
    };
    if let Some(code) = llvm_cl::help_or_version(prog, &parsed, &ABOUT, out, err) {
        return code;
    }
    let config = match config(prog, &base, &parsed, line, err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    match wrapper::wrap(&config) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            1
        }
    }
}

/// What `--help` and `--version` print.
const ABOUT: llvm_cl::About = llvm_cl::About {
    tool: "clang-offload-wrapper",
    help: HELP,
    help_flags: &["help"],
    compatible_with: None,
};

/// What to wrap, checked in the order clang-offload-wrapper checks it: the target, at least
/// one image, the output, then the target IDs. On a mistake, the message is printed and the
/// exit status returned.
fn config(
    prog: &str,
    base: &str,
    parsed: &llvm_cl::Parsed,
    line: CommandLine,
    err: &mut dyn Write,
) -> Result<WrapperConfig, i32> {
    let mut images = line.images;
    images.extend(parsed.positional.iter().map(PathBuf::from));
    let Some(target) = parsed.value("target") else {
        let _ = writeln!(
            err,
            "{base}: for the --target option: must be specified at least once!"
        );
        return Err(1);
    };
    if images.is_empty() {
        let _ = writeln!(
            err,
            "{base}: Not enough positional command line arguments specified!\nMust specify at least 1 positional argument: See: {prog} --help"
        );
        return Err(1);
    }
    let Some(output) = parsed.value("o") else {
        let _ = writeln!(err, "{prog}: error: no output file specified (-o)");
        return Err(1);
    };
    let arches = per_image(prog, images.len(), &line.arches, err)?;
    Ok(WrapperConfig {
        target: target.to_string(),
        output: PathBuf::from(output),
        images,
        arches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    fn run_args(args: &[&str]) -> (i32, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with("W", &strings(args), &mut out, &mut err);
        (code, String::from_utf8(err).unwrap())
    }

    #[test]
    fn each_offload_arch_names_the_image_after_it() {
        let line = CommandLine::split(
            &strings(&[
                "-o",
                "out.o",
                "a.bin",
                "--offload-arch=gfx906",
                "b.bin",
                "--offload-arch",
                "gfx90a",
                "-target",
                "x86_64",
                "c.bin",
            ]),
            &["o", "target"],
        );
        assert_eq!(
            line.arches,
            [(1, "gfx906".to_string()), (2, "gfx90a".to_string())]
        );
        assert_eq!(line.images, ["a.bin", "b.bin", "c.bin"].map(PathBuf::from));
        assert_eq!(line.rest, strings(&["-o", "out.o", "-target", "x86_64"]));
        let mut err = Vec::new();
        assert_eq!(
            per_image("W", 3, &line.arches, &mut err),
            Ok(strings(&["", "gfx906", "gfx90a"]))
        );
        assert_eq!(
            per_image("W", 3, &[(0, "gfx906".to_string())], &mut err),
            Ok(strings(&["gfx906"]))
        );
    }

    #[test]
    fn command_line_errors_read_as_clang_offload_wrapper() {
        assert_eq!(
            run_args(&["-o", "x.o", "a.bin"]),
            (
                1,
                "W: for the --target option: must be specified at least once!\n".into()
            )
        );
        assert_eq!(
            run_args(&["-target=x86_64", "-o", "x.o"]),
            (
                1,
                "W: Not enough positional command line arguments specified!\n\
                 Must specify at least 1 positional argument: See: W --help\n"
                    .into()
            )
        );
        assert_eq!(
            run_args(&["-target=x86_64", "a.bin"]),
            (1, "W: error: no output file specified (-o)\n".into())
        );
        assert_eq!(
            run_args(&[
                "-target=x86_64",
                "-o",
                "x.o",
                "a.bin",
                "--offload-arch=gfx906"
            ]),
            (
                1,
                "W: error: --offload-arch=gfx906 is not followed by an image\n".into()
            )
        );
    }
}

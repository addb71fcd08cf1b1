//! `llvm-offload-wrapper` (LLVM 22 and 23): `--kind=openmp|cuda|hip --triple=T -o OUT IMAGE...`,
//! the module that registers a device image with the OpenMP, CUDA or HIP runtime, as bitcode;
//! LLVM 23 adds `--kind=sycl` and `--relocatable`, and keeps the sanitizers off the CUDA and
//! HIP fat binary wrapper.
//!
//! Beyond LLVM's options, `--filetype=obj` writes a native object instead (left out of the
//! `--help` of LLVM's name, which stays LLVM's). As `offload wrapper --kind=...`, the output's
//! extension chooses: `.o`/`.obj` a native object, `.ll` IR text, anything else bitcode.

use crate::cli::personalities::llvm_cl::{self, Kind, Spec};
use crate::cli::personalities::wrapper_args::{per_image, CommandLine};
use crate::format::ccob::CompressOptions;
use crate::ops::wrapper::{
    self, FileType, HipBundling, OffloadKind, OffloadWrapperConfig, Relocatable,
};
use crate::target::processor::LlvmVersion;
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
        name: "bundle",
        kind: Kind::Flag,
    },
    Spec {
        name: "compress",
        kind: Kind::Flag,
    },
    Spec {
        name: "compression-level",
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
    // LLVM 23's: left out of LLVM 22's options.
    Spec {
        name: "relocatable",
        kind: Kind::Flag,
    },
];

/// The options of `version`'s tool.
fn specs(version: LlvmVersion) -> &'static [Spec] {
    match version {
        LlvmVersion::V23 => SPECS,
        _ => &SPECS[..SPECS.len() - 1],
    }
}

/// The part of `--help` both releases print alike: up to the offload kinds they share.
macro_rules! help_head {
    () => {
        "OVERVIEW: Generate runtime registration code for a device binary image

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
"
    };
}

const HELP: &str = concat!(
    help_head!(),
    "  -o <file>         - Write output to <file>.
  --triple=<string> - Target triple for the wrapper module
"
);

/// LLVM 23's `--help`.
const HELP_23: &str = concat!(
    help_head!(),
    "    =sycl           -   Wrap SYCL binaries
  -o <file>         - Write output to <file>.
  --relocatable     - Wrap for a relocatable offloading application (OpenMP only)
  --triple=<string> - Target triple for the wrapper module
"
);

/// `version`'s `--help`.
fn help(version: LlvmVersion) -> &'static str {
    match version {
        LlvmVersion::V23 => HELP_23,
        _ => HELP,
    }
}

/// The options `offload wrapper --kind=...` adds to LLVM's: the output's file type, and
/// bundling HIP code objects itself.
const EXTENSIONS: &str = "
offload-tools options:

  -o <file>                - .o/.obj: a native object (ELF x86-64 and AArch64, COFF x86-64 for
                             x86_64-pc-windows-msvc), .ll: IR text, anything else: bitcode
  --filetype=<obj|bc|ll>   - Write that, whatever the output's name (under the name
                             llvm-offload-wrapper, the only way to a native object)

offload-tools options (--kind=hip; any of them bundles the images first, as clang does):

  --bundle                 - Bundle the images, AMDGPU code objects, into one HIP fat binary
  --offload-arch=<id>      - Target ID of the code object that follows (default: its ELF header's)
  --compress               - Compress the bundle (CCOB version 3, zstd)
  --compression-level=<n>  - zstd level of --compress (default 3)
";

/// What `--help` and `--version` print.
const ABOUT: llvm_cl::About = llvm_cl::About {
    tool: "llvm-offload-wrapper",
    help: HELP,
    help_flags: &["help", "help-list"],
    compatible_with: None,
};

/// The command line this tool parses, with the options `offload wrapper --kind` adds, for
/// its manual page and the shell completions.
pub(crate) fn command() -> clap::Command {
    let help = format!("{HELP_23}{EXTENSIONS}");
    let image = "The device image to wrap (with --bundle, the code objects to bundle)";
    llvm_cl::command("llvm-offload-wrapper", SPECS, &help, Some(("image", image)))
}

/// The program name under which this tool's own behaviour (and help) applies, rather than
/// LLVM's.
pub(crate) const OURS: &str = "offload wrapper";

/// The host triple when `--triple` is not given.
const DEFAULT_TRIPLE: &str = "x86_64-pc-linux-gnu";

/// Runs `llvm-offload-wrapper` with `args` (without the program name), as LLVM `version`'s
/// tool; `prog` starts the messages.
pub fn run(prog: &str, args: &[String], version: LlvmVersion) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(prog, args, version, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`], writing to the given streams.
pub fn run_with(
    prog: &str,
    args: &[String],
    version: LlvmVersion,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let base = llvm_cl::base_name(prog);
    let line = CommandLine::split(
        args,
        &["o", "kind", "triple", "compression-level", "filetype"],
    );
    let specs = specs(version);
    let (parsed, failed) = match llvm_cl::parse(&line.rest, specs) {
        Ok(p) => (p, false),
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, specs);
            (llvm_cl::Parsed::default(), true)
        }
    };
    if !failed {
        // `offload wrapper --kind=... --help` shows the options this tool adds; under LLVM's
        // name, the help is LLVM's.
        let ours = format!("{}{EXTENSIONS}", help(version));
        let help = if prog == OURS { &ours } else { help(version) };
        let about = llvm_cl::About { help, ..ABOUT };
        if let Some(code) = llvm_cl::help_or_version(prog, &parsed, &about, out, err) {
            return code;
        }
    }
    let mut config = match config(prog, &base, (&parsed, version), line, failed, err) {
        Ok(config) => config,
        Err(code) => return code,
    };
    // LLVM 19 had no llvm-offload-wrapper: its release stands for 22's tool.
    config.llvm = version.max(LlvmVersion::V22);
    if parsed.given("relocatable") {
        config.relocatable = Relocatable::Yes;
    }
    match wrapper::wrap_llvm22(&config) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            1
        }
    }
}

/// What to wrap, checked in the order LLVM's tool checks it: the images (`failed` says the
/// option parser already complained), the kind, then the output; then this tool's own
/// options. On a mistake, the message is printed and the exit status returned.
fn config(
    prog: &str,
    base: &str,
    (parsed, version): (&llvm_cl::Parsed, LlvmVersion),
    line: CommandLine,
    mut failed: bool,
    err: &mut dyn Write,
) -> Result<OffloadWrapperConfig, i32> {
    let mut images = line.images;
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
        Some("openmp") => OffloadKind::OpenMp,
        Some("cuda") => OffloadKind::Cuda,
        Some("hip") => OffloadKind::Hip,
        Some("sycl") if version >= LlvmVersion::V23 => OffloadKind::Sycl,
        Some(other) => {
            let _ = writeln!(
                err,
                "{base}: for the --kind option: Cannot find option named '{other}'!"
            );
            return Err(1);
        }
        None => {
            let _ = writeln!(
                err,
                "{base}: for the --kind option: must be specified at least once!"
            );
            return Err(1);
        }
    };
    if failed {
        return Err(1);
    }
    let bundle = bundling(prog, parsed, &line.arches, images.len(), err)?;
    if bundle.is_some() && kind != OffloadKind::Hip {
        let _ = writeln!(
            err,
            "{prog}: error: --bundle, --offload-arch and --compress bundle HIP code objects: they need --kind=hip"
        );
        return Err(1);
    }
    let output = PathBuf::from(parsed.value("o").unwrap_or(""));
    let file_type = file_type(prog, base, parsed, &output, err)?;
    if output.as_os_str().is_empty() {
        let _ = writeln!(err, "{prog}: error: No such file or directory");
        return Err(1);
    }
    Ok(OffloadWrapperConfig {
        kind,
        triple: parsed.value("triple").unwrap_or(DEFAULT_TRIPLE).to_string(),
        output,
        file_type,
        images,
        bundle,
        llvm: LlvmVersion::DEFAULT,
        relocatable: Relocatable::No,
    })
}

/// What is written: `--filetype` when given; else `offload wrapper` goes by the output's
/// extension, and LLVM's name writes what LLVM's tool writes (bitcode; IR text for `.ll`).
fn file_type(
    prog: &str,
    base: &str,
    parsed: &llvm_cl::Parsed,
    output: &Path,
    err: &mut dyn Write,
) -> Result<FileType, i32> {
    Ok(match (parsed.value("filetype"), FileType::of(output)) {
        (Some("obj"), _) => FileType::Object,
        (Some("bc"), _) => FileType::Bitcode,
        (Some("ll"), _) => FileType::IrText,
        (Some(other), _) => {
            let _ = writeln!(
                err,
                "{base}: for the --filetype option: Cannot find option named '{other}'! (obj, bc or ll)"
            );
            return Err(1);
        }
        (None, by_extension) if prog == OURS => by_extension,
        (None, FileType::IrText) => FileType::IrText,
        (None, _) => FileType::Bitcode,
    })
}

/// Whether and how HIP code objects are bundled into one fat binary before it is wrapped:
/// when `--bundle`, `--offload-arch` or `--compress` asks for it (LLVM's own command lines
/// wrap their one image as it is, as LLVM's tool does).
fn bundling(
    prog: &str,
    parsed: &llvm_cl::Parsed,
    arches: &[(usize, String)],
    count: usize,
    err: &mut dyn Write,
) -> Result<Option<HipBundling>, i32> {
    let compress = parsed.given("compress") || parsed.given("compression-level");
    if !parsed.given("bundle") && arches.is_empty() && !compress {
        return Ok(None);
    }
    let arches = per_image(prog, count, arches, err)?;
    let compress = match compress {
        false => None,
        true => {
            let mut options = CompressOptions {
                version: CompressOptions::default_version(LlvmVersion::DEFAULT),
                ..CompressOptions::default()
            };
            if let Some(level) = parsed.value("compression-level") {
                let Ok(level) = level.parse() else {
                    let _ = writeln!(
                        err,
                        "{prog}: for the --compression-level option: '{level}' value invalid for integer argument!"
                    );
                    return Err(1);
                };
                options.level = level;
            }
            Some(options)
        }
    };
    Ok(Some(HipBundling { arches, compress }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(args: &[&str]) -> (i32, String) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with("W", &args, LlvmVersion::V22, &mut out, &mut err);
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

//! `offload packager`: the command line, messages and exit statuses of clang-offload-packager
//! 19 and of llvm-offload-binary 22 (which LLVM 22 also installs as clang-offload-packager).

use crate::cli::personalities::llvm_cl::{self, Kind, Spec};
use crate::ops::packager::{self, ImageArgs};
use crate::target::processor::LlvmVersion;
use std::io::Write;
use std::path::Path;

const SPECS: &[Spec] = &[
    Spec {
        name: "o",
        kind: Kind::Value,
    },
    Spec {
        name: "image",
        kind: Kind::List,
    },
    Spec {
        name: "archive",
        kind: Kind::Flag,
    },
    Spec {
        name: "help",
        kind: Kind::Flag,
    },
    Spec {
        name: "h",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-hidden",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-list",
        kind: Kind::Flag,
    },
    Spec {
        name: "help-list-hidden",
        kind: Kind::Flag,
    },
    Spec {
        name: "version",
        kind: Kind::Flag,
    },
];

/// The help's first lines, the same in both releases.
macro_rules! help_overview {
    () => {
        "OVERVIEW: A utility for bundling several object files into a single binary.
The output binary can then be embedded into the host section table
to create a fatbinary containing offloading code.

USAGE: PROG [options] Extract from <file>.

OPTIONS:
"
    };
}

/// The packager's own options, the same in both releases.
macro_rules! own_options {
    () => {
        "  --archive                   - Write extracted files to a static archive
  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.
  -o <file>                   - Write output to <file>.
"
    };
}

/// The generic options `--help` shows.
macro_rules! generic_options {
    () => {
        "  --help                      - Display available options (--help-hidden for more)
  --help-list                 - Display list of available options (--help-list-hidden for more)
  --version                   - Display the version of this program
"
    };
}

/// The generic options `--help-hidden` shows.
macro_rules! generic_options_hidden {
    () => {
        "  --help                      - Display available options (--help-hidden for more)
  --help-hidden               - Display all available options
  --help-list                 - Display list of available options (--help-list-hidden for more)
  --help-list-hidden          - Display list of all available options
  --print-all-options         - Print all option values after command line parsing
  --print-options             - Print non-default options after command line parsing
  --version                   - Display the version of this program
"
    };
}

/// The help by categories (`--help`, `--help-hidden`): the generic options, then the
/// packager's under its category's name.
macro_rules! categorized_help {
    ($generic:ident, $category:literal) => {
        concat!(
            help_overview!(),
            "\nGeneric Options:\n\n",
            $generic!(),
            "\n",
            $category,
            " options:\n\n",
            own_options!()
        )
    };
}

/// What `--help-list` prints in both releases, and llvm-offload-binary 22 when asked neither
/// to pack nor to unpack: every option in one list, by name.
const HELP_LIST: &str = concat!(
    help_overview!(),
    "  --archive                   - Write extracted files to a static archive
  --help                      - Display available options (--help-hidden for more)
  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.
  -o <file>                   - Write output to <file>.
  --version                   - Display the version of this program
"
);

/// What `--help-list-hidden` prints in both releases.
const HELP_LIST_HIDDEN: &str = concat!(
    help_overview!(),
    "  --archive                   - Write extracted files to a static archive
  --help                      - Display available options (--help-hidden for more)
  --help-hidden               - Display all available options
  --help-list                 - Display list of available options (--help-list-hidden for more)
  --help-list-hidden          - Display list of all available options
  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.
  -o <file>                   - Write output to <file>.
  --print-all-options         - Print all option values after command line parsing
  --print-options             - Print non-default options after command line parsing
  --version                   - Display the version of this program
"
);

/// What `--help` and `--version` print in one release, one [`llvm_cl::About`] per help flag.
fn about(version: LlvmVersion) -> [llvm_cl::About<'static>; 4] {
    let (tool, compatible_with, help, help_hidden) = match version {
        LlvmVersion::V19 => (
            "clang-offload-packager",
            Some("LLVM 19.1.7"),
            categorized_help!(generic_options, "clang-offload-packager"),
            categorized_help!(generic_options_hidden, "clang-offload-packager"),
        ),
        LlvmVersion::V22 | LlvmVersion::V23 => (
            "llvm-offload-binary",
            Some(if version == LlvmVersion::V22 {
                "LLVM 22.1.8"
            } else {
                "LLVM 23.1.4"
            }),
            categorized_help!(generic_options, "llvm-offload-binary"),
            categorized_help!(generic_options_hidden, "llvm-offload-binary"),
        ),
    };
    let about = |help, help_flags| llvm_cl::About {
        tool,
        help,
        help_flags,
        compatible_with,
    };
    [
        about(help, &["help"]),
        about(help_hidden, &["help-hidden"]),
        about(HELP_LIST, &["help-list"]),
        about(HELP_LIST_HIDDEN, &["help-list-hidden"]),
    ]
}

/// The command line the packager of `version` parses (`clang-offload-packager` for 19,
/// `llvm-offload-binary` for 22), for its manual page and the shell completions.
pub(crate) fn command(version: LlvmVersion) -> clap::Command {
    let [help, ..] = about(version);
    llvm_cl::command(help.tool, SPECS, help.help, None)
}

/// The warning LLVM 22 prints when started as `clang-offload-packager`, its old name.
pub const DEPRECATED_NAME: &str =
    "warning: 'clang-offload-packager' is deprecated. Use 'llvm-offload-binary' instead.";

/// Whether the packager of `version` started as `prog` warns that its name is deprecated:
/// LLVM 22 does when started as exactly `clang-offload-packager` (which Debian links to
/// llvm-offload-binary), not as `clang-offload-packager-22`.
fn warns_of_its_name(prog: &str, version: LlvmVersion) -> bool {
    let name = Path::new(prog)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".exe").unwrap_or(&name);
    version >= LlvmVersion::V22 && stem == "clang-offload-packager"
}

/// Runs the packager of LLVM `version` with `args` (without the program name); `prog` is the
/// name messages start with. Returns the exit status.
pub fn run(prog: &str, args: &[String], version: LlvmVersion) -> i32 {
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
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
    let parsed = match llvm_cl::parse(args, SPECS) {
        Ok(p) => p,
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            return 1;
        }
    };
    for about in &about(version) {
        if let Some(code) = llvm_cl::help_or_version(prog, &parsed, about, out, err) {
            return code;
        }
    }
    if parsed.positional.len() > 1 {
        let _ = writeln!(
            err,
            "{base}: Too many positional arguments specified!\nCan specify at most 1 positional arguments: See: {prog} --help"
        );
        return 1;
    }
    let fail = |err: &mut dyn Write, message: &str| {
        let _ = writeln!(err, "{prog}: error: {message}");
        1
    };
    // LLVM 22 warns after reading its options, unless it only printed its help or version or
    // found a mistake.
    if warns_of_its_name(prog, version) {
        let _ = writeln!(err, "{DEPRECATED_NAME}");
    }
    // `-h` lists the options, as does LLVM 22 asked neither to pack nor
    // to unpack; LLVM 19 then does nothing.
    let neither = parsed.value("o").is_none() && parsed.positional.is_empty();
    if parsed.flag("h") == Some(true) || (neither && version >= LlvmVersion::V22) {
        let name = Path::new(prog)
            .file_name()
            .map_or(prog.into(), |n| n.to_string_lossy());
        let text = HELP_LIST.replace("PROG", &name);
        return crate::cli::write_out(prog, out, err, text.as_bytes())
            .map_or_else(|code| code, |()| 0);
    }
    let images: Vec<ImageArgs> = parsed
        .list("image")
        .iter()
        .map(|i| ImageArgs::parse(i))
        .collect();
    let output = parsed.value("o");
    let input = parsed.positional.first();
    let result = match (output, input) {
        (Some(_), Some(_)) => return fail(
            err,
            "Packaging to an output file and extracting from an input file are mutually exclusive.",
        ),
        (Some(output), None) => packager::pack(Path::new(output), &images, version),
        (None, Some(input)) => packager::unpack(
            Path::new(input),
            &images,
            if parsed.flag("archive") == Some(true) {
                packager::Unpacked::IntoArchive
            } else {
                packager::Unpacked::IntoFiles
            },
            version,
            out,
            err,
            &format!("{prog}: "),
        ),
        (None, None) => Ok(()),
    };
    match result {
        Ok(()) => 0,
        Err(e) => fail(err, &e.to_string()),
    }
}

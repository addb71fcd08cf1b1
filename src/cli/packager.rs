//! `offload packager`: clang-offload-packager 19's command line, messages and exit statuses.

use super::llvm_cl::{self, Kind, Spec};
use crate::format::processor::LlvmVersion;
use crate::ops::packager::{self, ImageArgs};
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

/// What `--help` and `--version` print.
const ABOUT: llvm_cl::About = llvm_cl::About {
    tool: "clang-offload-packager",
    help: HELP,
    help_flags: llvm_cl::HELP_FLAGS,
    compatible_with: Some("LLVM 19.1.7"),
};

const HELP: &str = "OVERVIEW: A utility for bundling several object files into a single binary.
The output binary can then be embedded into the host section table
to create a fatbinary containing offloading code.

USAGE: PROG [options] Extract from <file>.

OPTIONS:

Generic Options:

  --help                      - Display available options (--help-hidden for more)
  --help-list                 - Display list of available options (--help-list-hidden for more)
  --version                   - Display the version of this program

clang-offload-packager options:

  --archive                   - Write extracted files to a static archive
  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.
  -o <file>                   - Write output to <file>.
";

/// Runs the packager with `args` (without the program name); `prog` is the name messages
/// start with. Returns the exit status.
pub fn run(prog: &str, args: &[String], version: LlvmVersion) -> i32 {
    let _ = version;
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    run_with(prog, args, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`], writing to the given streams.
pub fn run_with(prog: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let base = Path::new(prog)
        .file_name()
        .map_or_else(|| prog.to_string(), |n| n.to_string_lossy().into_owned());
    let parsed = match llvm_cl::parse(args, SPECS) {
        Ok(p) => p,
        Err(errors) => {
            llvm_cl::print_errors(err, &base, prog, &errors, SPECS);
            return 1;
        }
    };
    if let Some(code) = llvm_cl::help_or_version(prog, &parsed, &ABOUT, out, err) {
        return code;
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
        (Some(output), None) => packager::pack(Path::new(output), &images),
        (None, Some(input)) => packager::unpack(
            Path::new(input),
            &images,
            if parsed.flag("archive") == Some(true) {
                packager::Unpacked::IntoArchive
            } else {
                packager::Unpacked::IntoFiles
            },
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

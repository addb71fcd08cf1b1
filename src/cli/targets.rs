//! `offload targets`: the targets every unit of device code in files carries, and those only
//! some carry, in the forms build systems and packagers write them.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::cli::jobs::{self, Work};
use crate::ops::targets;

const PROG: &str = "offload targets";

/// Say which targets the files carry code for: those every unit of device code has (a bundle,
/// a CUDA fat binary, the offload binaries of one translation unit, a bare image, a split
/// binary's code object), over all the files, and those only some have. AMD and CUDA units
/// are judged apart. Files are read as `offload ls` reads them: objects, programs, libraries,
/// archives, packages, `.kpack` archives and split binaries; the kernel catalogue of rocBLAS
/// and hipBLASLt (the processors it has Tensile files for) is a unit of its own. For CUDA
/// code, a last line names
/// the oldest driver that can use every entry (PTX needs the driver of its PTX ISA's CUDA
/// release, a zstd-compressed entry CUDA 12.4) and the entry and file that decide it.
///
/// Exit status: 0, or 2 when a file cannot be read or is damaged (nothing is printed then: a
/// partial answer would understate what the files need).
#[derive(Debug, Parser)]
#[command(name = "offload targets")]
pub(crate) struct Args {
    /// The output: `text` (the default: `every:` and `some:` lines, then `driver:`), `debian`
    /// (the processors a device loads code from in every AMD unit, space separated, for
    /// Debian's `X-ROCm-Built-For:` field), `cmake` (`CMAKE_HIP_ARCHITECTURES='gfx90a;gfx1100'`,
    /// `CMAKE_CUDA_ARCHITECTURES='80-real;90'`), `torch` (`PYTORCH_ROCM_ARCH='gfx90a'`,
    /// `TORCH_CUDA_ARCH_LIST='8.0;9.0+PTX'`). The lists hold the targets every unit has.
    #[arg(long, value_enum, default_value = "text", conflicts_with = "json")]
    format: Format,
    /// Print one JSON object: `every`, `some`, `processors`, `driver`, and `files` (each with
    /// its own `every`, `some`, `units` and `driver_needs`).
    #[arg(long)]
    json: bool,
    /// The files to look into, and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
}

/// The forms of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// `every:`, `some:` and `driver:` lines.
    Text,
    /// One line of processors, for Debian's `X-ROCm-Built-For:`.
    Debian,
    /// CMake's architecture lists.
    Cmake,
    /// PyTorch's architecture lists.
    Torch,
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general);

/// Runs `offload targets` with `args` (without the program name) and returns the exit status.
fn run(args: Args) -> i32 {
    let (files, walk_failed) = args.work.tree.paths(PROG, &args.files);
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let read = jobs::each_file(&pool, &files, |path| {
        targets::read_file_finding(
            path,
            args.general.max_decompressed,
            &crate::ops::check::catalogue_targets,
        )
    });
    let mut failed = walk_failed;
    let mut found = Vec::new();
    for result in read {
        match result {
            Ok(file) => found.push(file),
            Err(e) => {
                failed = true;
                let _ = writeln!(std::io::stderr().lock(), "{PROG}: error: {e}");
            }
        }
    }
    if failed {
        return 2;
    }
    let report = targets::summary(found);
    let text = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => json + "\n",
            Err(e) => {
                let _ = writeln!(std::io::stderr().lock(), "{PROG}: error: JSON: {e}");
                return 2;
            }
        }
    } else {
        match args.format {
            Format::Text => targets::text(&report),
            Format::Debian => targets::debian_line(&report),
            Format::Cmake => targets::cmake_lines(&report),
            Format::Torch => targets::torch_lines(&report),
        }
    };
    match crate::cli::print(PROG, &text) {
        Ok(()) => 0,
        Err(code) => code,
    }
}

//! `offload targets`: the targets every unit of device code in files carries, and those only
//! some carry, in the forms build systems and packagers write them.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::cli::jobs::{self, Work};
use crate::cli::streamed::{write_nested, JsonArray};
use crate::ops::support::found::Records;
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
///
/// The files are read a chunk at a time and each is folded into the answer as it comes; with
/// `--json`, each file's part goes to an unnamed temporary file past a few pages
/// ([`Records`]) until the answer, which comes first, is known: memory follows the chunk, not
/// the number of files.
fn run(args: Args) -> i32 {
    let (files, walk_failed) = args.work.tree.files(PROG, &args.files);
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let max = args.general.max_decompressed;
    let find = &crate::ops::check::catalogue_targets;
    // The catalogue folders first: a code object in one counts in its catalogue's unit,
    // whichever comes first of it and its library.
    let libraries = files
        .paths()
        .filter(|p| crate::ops::check::is_catalogue_library(p));
    let folders = targets::catalogue_folders(libraries, max, find);
    let mut summary = targets::Summary::new(folders);
    let mut parts = Records::default();
    let mut array = JsonArray::new(1);
    let mut failed = walk_failed;
    let stderr = std::io::stderr();
    let read = jobs::each_listed(
        &pool,
        &files,
        |path| targets::read_file_finding(path, max, find),
        |_, result| {
            match result {
                Ok(file) => {
                    summary.add(&file);
                    if args.json && !failed {
                        let mut part = Vec::new();
                        array.push(&mut part, &file)?;
                        parts.append(&part)?;
                    }
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
                }
            }
            Ok::<(), std::io::Error>(())
        },
    );
    if failed {
        return 2;
    }
    let report = summary.finish();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written = read.and_then(|()| {
        if args.json {
            parts.seal()?;
            write_json(&mut out, &report, &parts, array)
        } else {
            let text = match args.format {
                Format::Text => targets::text(&report),
                Format::Debian => targets::debian_line(&report),
                Format::Cmake => targets::cmake_lines(&report),
                Format::Torch => targets::torch_lines(&report),
            };
            out.write_all(text.as_bytes())
        }
    });
    match written.and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e),
    }
}

/// Writes the JSON object of `report` to `out`, its `files` the parts kept in `parts` (the
/// elements `array` was given), as serde_json's pretty printer writes the whole.
fn write_json(
    out: &mut dyn Write,
    report: &targets::Targets,
    parts: &Records,
    array: JsonArray,
) -> std::io::Result<()> {
    out.write_all(b"{\n  \"every\": ")?;
    write_nested(out, &report.every, 1)?;
    out.write_all(b",\n  \"some\": ")?;
    write_nested(out, &report.some, 1)?;
    out.write_all(b",\n  \"processors\": ")?;
    write_nested(out, &report.processors, 1)?;
    out.write_all(b",\n  \"driver\": ")?;
    write_nested(out, &report.driver, 1)?;
    out.write_all(b",\n  \"files\": ")?;
    out.write_all(parts.bytes())?;
    array.end(out)?;
    out.write_all(b"\n}\n")
}

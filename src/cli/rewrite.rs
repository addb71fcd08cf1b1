//! `offload strip`, `offload compress` and `offload decompress`: rewrite the device code of a
//! file, into a new file or in place.

use std::io::Write;
use std::path::PathBuf;

use crate::format::target_id::TargetIdBuf;
use clap::{Args as ClapArgs, Parser};

use super::general::GeneralOpts;
use crate::format::ccob::{CompressOptions, Method};
use crate::ops::rewrite::{self, Change, Mode, Ptx, RewriteConfig, Summary};

/// Where the result goes: needed unless the run is dry, which writes nothing.
#[derive(Debug, ClapArgs)]
#[group(multiple = false)]
struct Destination {
    /// Write the result to this file (needed unless --in-place or --dry-run).
    #[arg(
        short = 'o',
        long = "output",
        required_unless_present_any = ["in_place", "dry_run"]
    )]
    output: Option<PathBuf>,
    /// Replace the file (written beside it, synced, renamed over it; the input is untouched
    /// on any error).
    #[arg(long)]
    in_place: bool,
}

/// Keep only the device images some target IDs can load, or remove them: in bundles, offload
/// binaries and CUDA fat binaries.
#[derive(Debug, Parser)]
#[command(name = "offload strip")]
struct StripArgs {
    /// The file: a relocatable object (ELF, COFF), a program or shared library (ELF, PE: an
    /// executable or DLL), an archive, a bundle, offload binary or CUDA fat binary file.
    file: PathBuf,
    /// Keep the images a device with this target ID loads (host code always stays). A CUDA
    /// compute capability (`sm_80`) keeps the cubins it runs and the PTX it may compile.
    #[arg(long, required_unless_present = "remove", conflicts_with = "remove")]
    keep: Vec<TargetIdBuf>,
    /// Remove the images a device with this target ID loads. For CUDA, `sm_XY` removes the
    /// cubins for that SM (and its `a` and `f` variants), `compute_XY` that PTX.
    #[arg(long)]
    remove: Vec<TargetIdBuf>,
    /// CUDA PTX: `keep` every PTX entry, `drop` every one, or treat it as any image (`asked`:
    /// kept when a device kept may compile it, removed when its `compute_XY` is named).
    #[arg(long, value_enum, default_value = "asked")]
    ptx: PtxArg,
    #[command(flatten)]
    destination: Destination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    general: GeneralOpts,
    /// Allow removing every device image.
    #[arg(long)]
    allow_empty: bool,
}

/// What `--ptx` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PtxArg {
    /// As any image.
    Asked,
    /// Keep every PTX entry.
    Keep,
    /// Drop every PTX entry.
    Drop,
}

/// Compress every bundle of a file (CCOB, as clang-offload-bundler writes it).
#[derive(Debug, Parser)]
#[command(name = "offload compress")]
struct CompressArgs {
    /// The file: a relocatable object, a program or shared library, an archive, a bundle file.
    file: PathBuf,
    #[command(flatten)]
    destination: Destination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    general: GeneralOpts,
    /// Compression level.
    #[arg(long)]
    level: Option<i32>,
    /// `zstd` (default) or `zlib`.
    #[arg(long, default_value = "zstd")]
    method: String,
    /// The compressed bundle format version to write: 2 (sizes in 32 bits, read by LLVM 19 and
    /// later) or 3 (64-bit sizes, LLVM 20 and later; needed past 4 GiB). Default: what the
    /// LLVM release of OFFLOAD_LLVM_VERSION (else 22) writes: 2 for 19, 3 for 22.
    #[arg(long, value_parser = clap::value_parser!(u16).range(2..=3))]
    format_version: Option<u16>,
}

/// Decompress every compressed bundle of a file.
#[derive(Debug, Parser)]
#[command(name = "offload decompress")]
struct DecompressArgs {
    /// The file: a relocatable object, a program or shared library (the grown bundles move to
    /// a new loaded segment at its end), an archive, a compressed bundle file.
    file: PathBuf,
    #[command(flatten)]
    destination: Destination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    general: GeneralOpts,
}

/// The mode a `--dry-run` flag asks for.
fn mode(dry_run: bool) -> Mode {
    if dry_run {
        Mode::DryRun
    } else {
        Mode::Write
    }
}

/// The summary line of a rewrite of `file`.
fn summary_line(file: &std::path::Path, summary: &Summary, mode: Mode) -> String {
    let verb = match mode {
        Mode::DryRun => "would go",
        Mode::Write => "went",
    };
    format!(
        "{}: {} device images {verb} to {}, {} bytes to {} ({} bundles or binaries rewritten)\n",
        file.display(),
        summary.images_before,
        summary.images_after,
        summary.size_before,
        summary.size_after,
        summary.rewritten
    )
}

fn execute(
    prog: &str,
    file: PathBuf,
    destination: Destination,
    config: RewriteConfig,
    mode: Mode,
) -> i32 {
    let output = destination.output.unwrap_or_else(|| file.clone());
    match rewrite::rewrite(&file, &output, &config, mode) {
        Ok(summary) => {
            let already = already_compressed_line(&file, &summary, &config).unwrap_or_default();
            super::print(prog, &(already + &summary_line(&file, &summary, mode)))
                .map_or_else(|code| code, |()| 0)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{prog}: error: {e}");
            1
        }
    }
}

/// Runs `offload strip` with `args` (without the program name).
pub fn strip(args: &[String]) -> i32 {
    let args: StripArgs = match super::parse_args("offload strip", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let change = if args.keep.is_empty() {
        Change::Remove(args.remove)
    } else {
        Change::Keep(args.keep)
    };
    let config = RewriteConfig {
        change,
        allow_empty: args.allow_empty,
        max_decompressed: args.general.max_decompressed,
        ptx: match args.ptx {
            PtxArg::Asked => Ptx::AsAsked,
            PtxArg::Keep => Ptx::Keep,
            PtxArg::Drop => Ptx::Drop,
        },
    };
    execute(
        "offload strip",
        args.file,
        args.destination,
        config,
        mode(args.dry_run),
    )
}

/// Runs `offload compress` with `args` (without the program name).
pub fn compress(args: &[String]) -> i32 {
    let args: CompressArgs = match super::parse_args("offload compress", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let method = match args.method.as_str() {
        "zstd" => Method::Zstd,
        "zlib" => Method::Zlib,
        other => {
            let _ = writeln!(
                std::io::stderr(),
                "offload compress: error: unknown compression method '{other}' (zstd or zlib)"
            );
            return 2;
        }
    };
    let var = std::env::var(super::LLVM_VERSION_VAR).ok();
    let llvm = match super::llvm_version("offload", var.as_deref()) {
        Ok(llvm) => llvm,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "offload compress: error: {message}");
            return 2;
        }
    };
    let options = CompressOptions {
        method,
        level: args.level.unwrap_or(method.default_level()),
        version: args
            .format_version
            .unwrap_or(CompressOptions::default_version(llvm)),
    };
    let config = RewriteConfig {
        change: Change::Compress(options),
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    };
    execute(
        "offload compress",
        args.file,
        args.destination,
        config,
        mode(args.dry_run),
    )
}

/// The line that says bundles were left alone because they were compressed as asked: the
/// whole answer when nothing else changed.
fn already_compressed_line(
    file: &std::path::Path,
    summary: &Summary,
    config: &RewriteConfig,
) -> Option<String> {
    let Change::Compress(options) = &config.change else {
        return None;
    };
    let count = summary.already_compressed;
    if count == 0 {
        return None;
    }
    let bundles = if count == 1 { "bundle" } else { "bundles" };
    let nothing = if summary.rewritten == 0 {
        ": nothing to do"
    } else {
        ""
    };
    Some(format!(
        "{}: {count} {bundles} already compressed with {}, format version {}, left as they were{nothing}\n",
        file.display(),
        options.method.name(),
        options.version
    ))
}

/// Runs `offload decompress` with `args` (without the program name).
pub fn decompress(args: &[String]) -> i32 {
    let args: DecompressArgs = match super::parse_args("offload decompress", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let config = RewriteConfig {
        change: Change::Decompress,
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    };
    execute(
        "offload decompress",
        args.file,
        args.destination,
        config,
        mode(args.dry_run),
    )
}

//! `offload kpack`: split programs and shared libraries into host files and `.kpack`
//! archives, or (`--merge`) put archived code back into split binaries.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::cli::general::{GeneralOpts, OutputOpts};
use crate::cli::kpack_wheels::{finish, scheme, usage_error, WheelRequest, PROG};
use crate::format::kpack::Scheme;
use crate::ops::kpack::{self, MergeConfig, MergeSummary, SplitConfig, SplitSummary};

/// Move the HIP device code of ELF programs and shared libraries into kpack archives, as AMD's
/// rocm-kpack splitter does: each host file keeps an empty .hip_fatbin, HIPK wrappers and a
/// .rocm_kpack_ref section naming it and where its archives are; the code objects go to
/// OUTPUT/.kpack/NAME_PROCESSOR.kpack, keyed BINARY#INDEX, INDEX being the wrapper's position
/// (what the loader asks for). Files without HIP device code are copied. Nothing is written
/// unless every file reads well. With --merge, put the code of archives back into split
/// binaries as ordinary bundles, so they run without kpack support.
#[derive(Debug, Parser)]
#[command(name = "offload kpack")]
pub(crate) struct Args {
    /// Programs and shared libraries (and, with -r, folders) to split; split binaries to merge.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The folder the host files (or merged files) and .kpack/ are written to.
    #[arg(short = 'o', long = "output", required = true)]
    output: PathBuf,
    /// Split every file under the folders given, keeping their paths (binaries' names in the
    /// archives are those paths); files without device code and symbolic links are copied.
    #[arg(short = 'r', long)]
    recursive: bool,
    /// The archives' group name: archives are NAME_PROCESSOR.kpack (default: the first
    /// input's name up to its first dot).
    #[arg(long)]
    name: Option<String>,
    /// Store several processors in one archive, NAME_GROUP.kpack: GROUP=PROCESSOR,PROCESSOR
    /// (repeatable). Its path is added to the search paths written into binaries.
    #[arg(long = "archive", value_name = "GROUP=PROCESSORS")]
    archives: Vec<String>,
    /// A search path to write into each binary instead of the default (repeatable): relative
    /// to the binary's folder unless absolute, @GFXARCH@ standing for a processor. Default:
    /// .kpack/NAME_@GFXARCH@.kpack at the top of the output, and each --archive group's file.
    #[arg(long = "search-path", value_name = "PATH")]
    search_paths: Vec<String>,
    /// Store code objects compressed, one zstd frame each (the zstd-per-kernel scheme), or
    /// plain (none). Default: none for files and trees (as AMD's splitter does them), zstd for
    /// wheels (as AMD's wheel splitter does them).
    #[arg(long, value_name = "none|zstd")]
    compression: Option<String>,
    /// The inputs are wheels: each .whl given, and every .whl in each folder given, split
    /// into a host wheel and device wheels (a .whl file given is taken as a wheel without it).
    /// With --merge: a host wheel and its device wheels, merged into one wheel.
    #[arg(long)]
    wheels: bool,
    /// Wheels: the device wheels' name prefix, as AMD names them (amd-torch-device gives
    /// amd-torch-device-gfx942). Default: amd-NAME-device, NAME the wheel's distribution name.
    #[arg(long, alias = "device-package-prefix", value_name = "PREFIX")]
    prefix: Option<String>,
    /// Wheels: the folder of the wheel whose binaries are split and where .kpack/ goes
    /// (torch/). Default: the one top folder holding every binary with device code.
    #[arg(long, value_name = "FOLDER")]
    overlay_root: Option<String>,
    /// Wheels: one more Requires-Dist of each device wheel (repeatable), @GFXARCH@ standing for
    /// its group (rocm-sdk-device-@GFXARCH@ == 7.1; given to processors' wheels only).
    #[arg(long = "device-requires-dist", value_name = "REQUIREMENT")]
    device_requires: Vec<String>,
    /// Put archived code back into split binaries instead of splitting.
    #[arg(long)]
    merge: bool,
    /// With --merge: take code objects from this archive (repeatable) instead of those the
    /// binary's search paths find (as the runtime finds them, ROCM_KPACK_PATH and
    /// ROCM_KPACK_PATH_PREFIX honoured).
    #[arg(long = "from", value_name = "ARCHIVE", requires = "merge")]
    from: Vec<PathBuf>,
    #[command(flatten)]
    general: GeneralOpts,
    #[command(flatten)]
    output_opts: OutputOpts,
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general, output_opts);

/// Runs `offload kpack` with `args` (without the program name) and returns the exit status.
fn run(args: Args) -> i32 {
    if args.wheels || crate::cli::kpack_wheels::all_wheels(&args.files) {
        if args.recursive
            || args.name.is_some()
            || !args.archives.is_empty()
            || !args.search_paths.is_empty()
        {
            return usage_error(
                "wheels take -o, --prefix, --overlay-root, --device-requires-dist and \
                 --compression (-r, --name, --archive and --search-path are for files and trees)",
            );
        }
        return crate::cli::kpack_wheels::run(WheelRequest {
            files: args.files,
            output: args.output,
            merge: args.merge,
            compression: args.compression,
            prefix: args.prefix,
            overlay_root: args.overlay_root,
            device_requires: args.device_requires,
            max_decompressed: args.general.max_decompressed,
        });
    }
    if args.prefix.is_some() || args.overlay_root.is_some() || !args.device_requires.is_empty() {
        return usage_error("--prefix, --overlay-root and --device-requires-dist are for wheels");
    }
    if args.merge {
        merge(args)
    } else {
        split(args)
    }
}

/// `--merge`: puts the code of the archives back into the split files.
fn merge(args: Args) -> i32 {
    if args.recursive || args.name.is_some() || !args.archives.is_empty() {
        return usage_error("--merge takes files, -o and --from only");
    }
    let config = MergeConfig {
        output: args.output,
        archives: args.from,
        max_decompressed: args.general.max_decompressed,
    };
    finish(kpack::merge(&args.files, &config).map(|summary| merge_lines(&summary)))
}

/// Splits the files' HIP device code out to kpack archives.
fn split(args: Args) -> i32 {
    let scheme = match scheme(args.compression.as_deref(), Scheme::None) {
        Ok(scheme) => scheme,
        Err(code) => return code,
    };
    let groups = match archive_groups(&args.archives) {
        Ok(groups) => groups,
        Err(code) => return code,
    };
    let config = SplitConfig {
        output: args.output,
        recursive: args.recursive,
        name: args.name,
        groups,
        search_paths: args.search_paths,
        scheme,
        max_decompressed: args.general.max_decompressed,
    };
    let summary = match kpack::split(&args.files, &config) {
        Ok(summary) => summary,
        Err(e) => return finish(Err(e)),
    };
    // The files of a tree that were left out are named, the rest is split all the same, and
    // the exit status says something failed.
    for e in &summary.failed {
        let _ = writeln!(std::io::stderr(), "{PROG}: error: {e}");
    }
    match print_split(&summary) {
        Ok(()) => i32::from(!summary.failed.is_empty()),
        Err(code) => code,
    }
}

/// The groups of processors `--archive GROUP=PROCESSOR,...` gives, or the exit status of a
/// usage error.
fn archive_groups(specs: &[String]) -> Result<Vec<(String, Vec<String>)>, i32> {
    let mut groups = Vec::new();
    for spec in specs {
        let Some((group, arches)) = spec.split_once('=') else {
            return Err(usage_error(&format!(
                "--archive {spec}: expected GROUP=PROCESSOR,..."
            )));
        };
        let arches: Vec<String> = arches
            .split(',')
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        if group.is_empty() || arches.is_empty() || group.contains('/') {
            return Err(usage_error(&format!(
                "--archive {spec}: expected GROUP=PROCESSOR,..."
            )));
        }
        groups.push((group.to_string(), arches));
    }
    Ok(groups)
}

/// A line per file merged.
fn merge_lines(summary: &MergeSummary) -> String {
    summary
        .files
        .iter()
        .map(|(path, bundles, objects)| {
            format!(
                "{}: {bundles} bundles, {objects} code objects put back\n",
                crate::io::shown(path)
            )
        })
        .collect()
}

/// Prints a line per binary split and per archive written, and the count of files copied, a
/// line at a time (the binaries are read back from their list, never held together); when
/// standard output fails, says so and gives the exit status.
fn print_split(summary: &SplitSummary) -> Result<(), i32> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    write_split(&mut out, summary)
        .and_then(|()| out.flush())
        .map_err(|e| crate::cli::stdout_failed(PROG, &mut std::io::stderr().lock(), &e))
}

/// Writes the lines of [`print_split`] to `out`.
fn write_split(out: &mut dyn Write, summary: &SplitSummary) -> std::io::Result<()> {
    for (path, indices) in summary.binaries.iter() {
        writeln!(
            out,
            "{}: {indices} code-object indices",
            crate::io::shown(&path)
        )?;
    }
    for (path, arches, objects, _) in &summary.archives {
        let noun = if *objects == 1 {
            "code object"
        } else {
            "code objects"
        };
        writeln!(
            out,
            "{}: {objects} {noun} for {}",
            crate::io::shown(path),
            arches.join(",")
        )?;
    }
    if summary.copied > 0 {
        writeln!(
            out,
            "{} files without HIP device code copied",
            summary.copied
        )?;
    }
    Ok(())
}

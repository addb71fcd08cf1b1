//! `offload extract` and `offload-extract`: write the device images a GPU can load, or the
//! code object the HIP runtime loads for each GPU of a machine.

use std::io::Write;
use std::path::PathBuf;

use crate::format::bare::BareKind;
use crate::format::image_target::Producer;
use crate::loads::runtime::parse_device;
use crate::target::target_id::TargetIdBuf;
use clap::Parser;

use crate::loads::hip::Via;
use crate::ops::du;
use crate::ops::extract::{self, ExtractConfig, Match};
use crate::ops::support::image::ImageRecord;

use crate::cli::jobs::{self, counted, JobBar, Work};

/// Extract the device images that a device with the given target ID can load (`--arch`), or
/// the one code object the HIP runtime loads from each bundle for each GPU (`--device`), from
/// objects, programs, shared libraries, archives, bundles and offload binaries, and from the
/// `.kpack` archives of binaries split by kpack (or `.kpack` archives named on their own).
/// Files are read in parallel (-j); one that cannot be read is named and the others are still
/// extracted from. For more than one file the listing ends with `total:` lines: the images
/// written and their bytes, and the same per target.
#[derive(Debug, Parser)]
#[command(name = "offload extract", after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Files to extract from, and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    /// Target ID of the device (`gfx90a`, `gfx90a:xnack+`, or the runtime's
    /// `amdgcn-amd-amdhsa--gfx90a:xnack+`): every image it can load; repeat for several. A
    /// CUDA compute capability (`sm_86`) takes every cubin it runs and the PTX it may compile;
    /// `compute_86` that PTX alone.
    #[arg(long = "arch", value_parser = device_arg, required_unless_present = "devices")]
    arches: Vec<TargetIdBuf>,
    /// A GPU as the HIP runtime names it (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`, or
    /// `gfx90a:sramecc+:xnack-`): from each bundle, the code object the runtime loads for it.
    /// Repeat for each GPU of one machine, in the runtime's order. A CUDA device (`sm_89`):
    /// from each CUDA fat binary, the entry the driver loads.
    #[arg(long = "device", value_parser = device_arg)]
    devices: Vec<TargetIdBuf>,
    /// Where to write: a folder (made if missing), or, for archives, a `.a` file to write one
    /// device archive.
    #[arg(short = 'o', long = "output", default_value = ".")]
    output: PathBuf,
    /// Match target IDs exactly, instead of by what the device loads (per translation unit:
    /// its native code, else a covering generic target's, else SPIR-V).
    #[arg(long)]
    exact: bool,
    /// Only images for this target triple.
    #[arg(long)]
    triple: Option<String>,
    /// Only images of this offload kind (`hip`, `openmp`, `cuda`).
    #[arg(long)]
    kind: Option<Producer>,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
    #[command(flatten)]
    output_opts: crate::cli::general::OutputOpts,
}

const AFTER_HELP: &str = "\
--device follows the HIP runtime (CLR with comgr): for all the GPUs named, it asks each bundle
for every GPU's full ISA name, the generic target of the runtime's own map (gfx942 and gfx950:
gfx9-4-generic; gfx90a and gfx940: none) and SPIR-V; each entry, in bundle order, goes to the
first request it fits that is still open, and each feature an entry sets must be set alike by
the GPU (name the GPU with its features, as the runtime reports it). Each GPU takes its native
entry, else its generic one, else SPIR-V. One file per bundle and GPU is written, named
FILE-bundleN-ENTRY-for-GPU; compressed bundles are read as the runtime's bundler reads them, and
a plain bundle whose header passes 4096 bytes gives nothing (the runtime rejects it).

For a binary split by kpack (and a .kpack archive named on its own), --arch takes each code
object index as a translation unit, and --device follows the kpack loader: the device's ISA
name, then its generic target, each with every subset of its features, most specific first,
archive by archive in the loader's search order; ROCM_KPACK_PATH, ROCM_KPACK_PATH_PREFIX and
ROCM_KPACK_DISABLE are honoured as the loader honours them. A code object a device finds in no
archive is a warning naming every path searched. Files are named FILE-KEY-ARCH.co (and
FILE-KEY-ARCH-for-GPU.co); code objects stored compressed are inflated as they are written.

--device sm_XY follows the CUDA driver: from each fat binary, the cubin closest to the device
(same major version, highest minor version not above it; arch-specific sm_XYa only on X.Y), else
the newest PTX it may compile. CUDA entries are written under cuobjdump's names
(FILE.N.sm_XY.cubin, FILE.N.sm_XY.ptx), inflated.

Exit status: 0 when every --arch and --device found code in the files and every --device
loads something from every bundle and code object; 1 when something asked for was missing (a warning names it, and what was found
is still written), when nothing was found at all, or on any error.";

/// Reads a target ID or a device in the runtime's spelling.
fn device_arg(text: &str) -> Result<TargetIdBuf, String> {
    parse_device(text).map_err(|e| e.to_string())
}

/// Runs `offload extract` with `args` (without the program name) and returns the exit status.
pub(crate) fn run_subcommand(args: &[std::ffi::OsString]) -> i32 {
    run("offload extract", args)
}

/// Runs the command with `args` (without the program name); `prog` names it in messages.
/// Returns the exit status: 0 when images were written and every file read cleanly.
pub fn run(prog: &str, args: &[std::ffi::OsString]) -> i32 {
    let args: Args = match crate::cli::parse_args(prog, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    args.output_opts.apply();
    let (walked, walk_failed) = args.work.tree.files(prog, &args.files);
    if walk_failed {
        return 1;
    }
    let several = jobs::several(&args.files, walked.len());
    let pool = match args.work.pool(prog) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let config = ExtractConfig {
        files: Vec::new(),
        arches: args.arches,
        devices: args.devices,
        exact: if args.exact {
            Match::Exact
        } else {
            Match::Loadable
        },
        triple: args.triple,
        kind: args.kind,
        output: args.output,
        max_decompressed: args.general.max_decompressed,
    };
    let bar = JobBar::bytes();
    let files = JobBar::new(0);
    // The listing is printed as the files are written, and the summary tallied from it.
    let mut listed = Ok(());
    let mut sums = Sums::default();
    let extraction = pool.install(|| {
        extract::extract_each_listed(&config, &walked, &files, &bar, &mut |written| {
            if args.quiet {
                return;
            }
            if listed.is_ok() {
                listed = crate::cli::print(prog, &listing(&written));
            }
            sums.add(&written);
        })
    });
    if extraction.result.is_ok() && !args.quiet && several && listed.is_ok() {
        let text = sums.summary(walked.len(), extraction.problems.len());
        listed = crate::cli::print(prog, &text);
    }
    let stderr = std::io::stderr();
    for p in &extraction.problems {
        let _ = writeln!(stderr.lock(), "{prog}: error: {p}");
    }
    for m in &extraction.missing {
        let _ = writeln!(stderr.lock(), "{prog}: warning: {m}");
    }
    if let Err(e) = &extraction.result {
        let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
        return 1;
    }
    match listed {
        Ok(()) => i32::from(!extraction.problems.is_empty() || !extraction.missing.is_empty()),
        Err(code) => code,
    }
}

/// What the summary of an extraction says, summed as the files are written: the files
/// images were written from, the images, and the same per target by `du`'s rule (its naming,
/// its order; the bytes written are the images' inflated bytes).
#[derive(Default)]
struct Sums {
    /// Files images were written from.
    from: u64,
    images: u64,
    by_target: du::Tally,
    /// The `.kpack` archives images were written from: one archive may give the images of
    /// binaries read in several groups, and counts once.
    archives: std::collections::BTreeSet<std::path::PathBuf>,
}

impl Sums {
    /// Adds the records of `written`, the files written from one group of input files (each
    /// input file's images are all in one group).
    fn add(&mut self, written: &[extract::Extracted]) {
        let mut by_file: std::collections::BTreeMap<&std::path::Path, Vec<ImageRecord>> =
            Default::default();
        for w in written {
            by_file
                .entry(w.image.path.as_path())
                .or_default()
                .push(w.image.clone());
        }
        for (file, images) in by_file {
            let archived = images.iter().any(|i| i.source.kpack().is_some());
            if !archived || self.archives.insert(file.to_path_buf()) {
                self.from += 1;
            }
            self.by_target.add(&du::listed_usage(file, &images));
        }
        self.images += written.len() as u64;
    }

    /// The summary of an extraction from `files` files with `errors` errors.
    fn summary(self, files: usize, errors: usize) -> String {
        let by_target = self.by_target.total();
        let bytes: u64 = by_target.iter().map(|t| t.inflated).sum();
        let mut text = format!(
            "total: {}, {} with images written, {}; {}, {bytes} bytes\n",
            counted(files as u64, "file", "files"),
            self.from,
            counted(errors as u64, "error", "errors"),
            counted(self.images, "image written", "images written"),
        );
        for target in by_target {
            text.push_str(&format!(
                "total {}: {}, {} bytes\n",
                crate::io::shown(&target.target),
                counted(target.images, "image", "images"),
                target.inflated
            ));
        }
        text
    }
}

/// One line per written image: where it went, its kind, target and size, and, for code a
/// device loads only because its translation unit has no native code for it, which device.
fn listing(written: &[extract::Extracted]) -> String {
    written
        .iter()
        .map(|w| {
            let how = match w.via {
                Via::Native => "natively",
                Via::Generic => "as generic target code",
                Via::Spirv => "as SPIR-V, compiled when loaded",
                Via::Forward => "as code for an earlier SM it runs",
                Via::Ptx => "as PTX, compiled when loaded",
                Via::Jit => "as bitcode, compiled when loaded",
            };
            let unit = match w.image.producer {
                Producer::Cuda => "fat binary",
                Producer::Bare(BareKind::CodeObject) => "code object",
                Producer::Bare(kind) => kind.name(),
                _ if w.image.source.entry_id().is_none() => "offload binaries",
                _ => "bundle",
            };
            let archived = w
                .image
                .source
                .kpack()
                .map(|k| format!("{}[{}]", crate::io::shown(&k.archive_path), k.key));
            let via = match (w.bundle, w.via, archived) {
                (_, _, Some(from)) if w.device_pick => {
                    format!(" ({from}: {} loads it {how})", w.asked)
                }
                (_, Via::Native, Some(from)) => format!(" ({from})"),
                (_, _, Some(from)) => format!(" ({from}: {} loads it {how})", w.asked),
                (Some(bundle), _, None) => {
                    format!(" ({unit} {bundle}: {} loads it {how})", w.asked)
                }
                (None, Via::Native | Via::Forward, None) => String::new(),
                (None, Via::Generic, None) => {
                    format!(" (generic target code, for {})", w.asked)
                }
                (None, Via::Spirv, None) => {
                    format!(" (SPIR-V, compiled for {} when loaded)", w.asked)
                }
                (None, Via::Ptx, None) => format!(" (PTX, compiled for {} when loaded)", w.asked),
                (None, Via::Jit, None) => {
                    format!(" (bitcode, compiled for {} when loaded)", w.asked)
                }
            };
            format!(
                "{}\t{} {} {} bytes{via}\n",
                crate::io::shown(&w.path),
                crate::io::shown(w.image.producer.name()),
                crate::io::shown(&w.image.target_id),
                w.image.size,
                via = crate::io::shown(&via),
            )
        })
        .collect()
}

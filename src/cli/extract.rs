//! `offload extract` and `offload-extract`: write the device images a GPU can load.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::format::image_target::Producer;
use crate::format::target_id::TargetIdBuf;
use clap::Parser;

use crate::format::loads::Via;
use crate::ops::extract::{self, ExtractConfig, Match, Progress};

/// Extract the device images that a device with the given target ID can load, from objects,
/// programs, shared libraries, archives, bundles and offload binaries.
#[derive(Debug, Parser)]
#[command(name = "offload extract")]
struct Args {
    /// Files to extract from.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Target ID of the device (`gfx90a`, `gfx90a:xnack+`, `sm_80`); repeat for several.
    #[arg(long = "arch", required = true)]
    arches: Vec<TargetIdBuf>,
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
    general: super::general::GeneralOpts,
}

/// A progress bar on standard error, shown when it is a terminal and the work is large.
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, bytes: u64) {
        if bytes >= 256 << 20 && std::io::stderr().is_terminal() {
            self.0.set_length(bytes);
            self.0
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Runs the command with `args` (without the program name); `prog` names it in messages.
/// Returns the exit status: 0 when images were written and every file read cleanly.
pub fn run(prog: &str, args: &[String]) -> i32 {
    let args: Args = match super::parse_args(prog, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let config = ExtractConfig {
        files: args.files,
        arches: args.arches,
        exact: if args.exact {
            Match::Exact
        } else {
            Match::Loadable
        },
        triple: args.triple,
        kind: args.kind,
        output: args.output,
    };
    let bar = Bar(indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::hidden(),
    ));
    let extraction = extract::extract(&config, &bar);
    let listed = match (&extraction.result, args.quiet) {
        (Ok(written), false) => super::print(prog, &listing(written)),
        _ => Ok(()),
    };
    let stderr = std::io::stderr();
    for p in &extraction.problems {
        let _ = writeln!(stderr.lock(), "{prog}: error: {p}");
    }
    if let Err(e) = &extraction.result {
        let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
        return 1;
    }
    match listed {
        Ok(()) => i32::from(!extraction.problems.is_empty()),
        Err(code) => code,
    }
}

/// One line per written image: where it went, its kind, target and size, and, for code a
/// device loads only because its translation unit has no native code for it, which device.
fn listing(written: &[extract::Extracted]) -> String {
    written
        .iter()
        .map(|w| {
            let via = match w.via {
                Via::Native => String::new(),
                Via::Generic => format!(" (generic target code, for {})", w.asked),
                Via::Spirv => format!(" (SPIR-V, compiled for {} when loaded)", w.asked),
            };
            format!(
                "{}\t{} {} {} bytes{via}\n",
                w.path.display(),
                w.image.offload_kind,
                w.image.arch,
                w.image.size
            )
        })
        .collect()
}

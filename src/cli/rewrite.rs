//! `offload strip`, `offload compress` and `offload decompress`: rewrite the device code of a
//! file, into a new file or in place.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::target::target_id::TargetIdBuf;
use clap::{Args as ClapArgs, Parser};

use crate::cli::general::{GeneralOpts, OutputOpts};
use crate::cli::jobs::{self, JobBar, Work};
use crate::cli::prune::{self, Settled};
use crate::format::ccob::{CompressOptions, Method};
use crate::host::package::manifest::installed::{ManifestKind, Updated};
use crate::host::package::variant::Variant;
use crate::ops::du;
use crate::ops::prune::{BareFile, Fate};
use crate::ops::rewrite::job::{self, JobOptions, Named, Outcome, Pruning, Stopped, Usages};
use crate::ops::rewrite::{
    rewrite_variant, Change, Mode, PruneMembers, Ptx, RewriteConfig, Summary,
};

/// Where the result goes: needed unless the run is dry, which writes nothing.
#[derive(Debug, ClapArgs)]
#[group(multiple = false)]
struct Destination {
    /// Write the result to this file (needed unless --in-place or --dry-run); for several
    /// inputs or a folder, to this folder (made if missing), which mirrors their tree.
    #[arg(
        short = 'o',
        long = "output",
        required_unless_present_any = ["in_place", "dry_run"]
    )]
    output: Option<PathBuf>,
    /// Replace each file (written beside it, synced, renamed over it; a file is untouched on
    /// any error of its own, and a file with several links is rewritten once).
    #[arg(long)]
    in_place: bool,
}

/// Where a strip's result goes: as [`Destination`], and with `--variant` the folder to write
/// into (which it says it needs when missing).
#[derive(Debug, ClapArgs)]
#[group(multiple = false)]
struct StripDestination {
    /// Write the result to this file (needed unless --in-place or --dry-run); for several
    /// inputs or a folder, to this folder (made if missing), which mirrors their tree; with
    /// --variant, the folder each package made goes into.
    #[arg(
        short = 'o',
        long = "output",
        required_unless_present_any = ["in_place", "dry_run", "variant"]
    )]
    output: Option<PathBuf>,
    /// Replace each file (written beside it, synced, renamed over it; a file is untouched on
    /// any error of its own, and a file with several links is rewritten once).
    #[arg(long)]
    in_place: bool,
}

/// Keep only the device images some target IDs can load, or remove them: in bundles, offload
/// binaries and CUDA fat binaries.
#[derive(Debug, Parser)]
#[command(name = "offload strip")]
pub(crate) struct StripArgs {
    /// The files: a relocatable object (ELF, COFF), a program or shared library (ELF, PE: an
    /// executable or DLL), an archive, a bundle, offload binary or CUDA fat binary file.
    /// Folders give their files (with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
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
    destination: StripDestination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Remove the files that are bare device images (code objects as a runtime loads them,
    /// in no container) only for other targets: in place they are deleted, with -o not
    /// copied. Without it they are left (copied) as they are and the summary names them.
    /// With -o, the files without device code are copied too, so that the output folder is
    /// the tree less what was pruned.
    #[arg(long)]
    prune: bool,
    /// With --prune, remove too the files without device code whose names carry processors
    /// (`TensileLibrary_lazy_gfx1100.dat`), none of which a device kept loads code for. The
    /// summary names them without it.
    #[arg(long, requires = "prune")]
    prune_named: bool,
    #[command(flatten)]
    general: GeneralOpts,
    #[command(flatten)]
    output_opts: OutputOpts,
    /// Allow removing every device image.
    #[arg(long)]
    allow_empty: bool,
    /// Make per-architecture packages: each wheel or conda package named (a CUDA build) is
    /// written, stripped to what the devices of the CUDA SMs kept load, into the folder -o
    /// names, under a name a resolver tells apart: a wheel's version gets a local label
    /// (`2.15.0+sm90`, `2.15.0+cu130.sm90`), a conda package's build string `_sm90` and its
    /// dependencies `__cuda_arch >=9.0,<10.0`.
    #[arg(long, requires = "keep", conflicts_with_all = ["in_place", "recursive"])]
    variant: bool,
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
pub(crate) struct CompressArgs {
    /// The files: a relocatable object, a program or shared library, an archive, a bundle file.
    /// Folders give their files (with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    destination: Destination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    general: GeneralOpts,
    #[command(flatten)]
    output_opts: OutputOpts,
    /// Compression level.
    #[arg(long)]
    level: Option<i32>,
    /// `zstd` (default) or `zlib`. Bundles compressed already stay as they are unless this,
    /// --level or --format-version is given: then they get what is asked.
    #[arg(long)]
    method: Option<String>,
    /// The compressed bundle format version to write: 2 (sizes in 32 bits, read by LLVM 19 and
    /// later) or 3 (64-bit sizes, LLVM 20 and later; needed past 4 GiB). Default: what the
    /// LLVM release of OFFLOAD_LLVM_VERSION (else 22) writes: 2 for 19, 3 for 22.
    #[arg(long, value_parser = clap::value_parser!(u16).range(2..=3))]
    format_version: Option<u16>,
}

/// Decompress every compressed bundle of a file.
#[derive(Debug, Parser)]
#[command(name = "offload decompress")]
pub(crate) struct DecompressArgs {
    /// The files: a relocatable object, a program or shared library (the grown bundles move to
    /// a new loaded segment at its end), an archive, a compressed bundle file.
    /// Folders give their files (with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    destination: Destination,
    /// Say what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    general: GeneralOpts,
    #[command(flatten)]
    output_opts: OutputOpts,
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
        crate::io::shown(file),
        summary.images_before,
        summary.images_after,
        summary.size_before,
        summary.size_after,
        summary.rewritten
    )
}

/// The line of a manifest of an installed environment brought up to date: `updated RECORD of
/// site-packages/demo-1.0.dist-info: 1 file rewritten, 1 removed`.
fn manifest_line(updated: &Updated, mode: Mode) -> String {
    let verb = match mode {
        Mode::DryRun => "would update",
        Mode::Write => "updated",
    };
    let what = match updated.kind {
        ManifestKind::Record => "RECORD of ",
        ManifestKind::Conda => "",
    };
    let rewritten = updated.counts.rewritten;
    let files = if rewritten == 1 { "file" } else { "files" };
    format!(
        "{verb} {what}{}: {rewritten} {files} rewritten, {} removed\n",
        crate::io::shown(updated.owner()),
        updated.counts.removed
    )
}

/// The totals of a job of several files.
#[derive(Debug, Default)]
struct Totals {
    files: usize,
    changed: usize,
    failed: usize,
    images_before: usize,
    images_after: usize,
    bytes_before: u64,
    bytes_after: u64,
}

impl Totals {
    fn line(&self, mode: Mode) -> String {
        let (verb, changed) = match mode {
            Mode::DryRun => ("would go", "would change"),
            Mode::Write => ("went", "changed"),
        };
        format!(
            "total: {} files, {} {changed}, {} failed; {} device images {verb} to {}, {} bytes to {}\n",
            self.files,
            self.changed,
            self.failed,
            self.images_before,
            self.images_after,
            self.bytes_before,
            self.bytes_after
        )
    }
}

/// The summary's line per target: its images, and the bytes of device code they took before
/// and take after (a strip: less what it removes; decompress: their inflated size; compress:
/// what the files written hold, known once they are written).
fn target_lines(change: &Change, mode: Mode, before: du::Tally, after: du::Tally) -> String {
    let verb = match mode {
        Mode::DryRun => "would go",
        Mode::Write => "went",
    };
    let after = after.total();
    let mut text = String::new();
    for usage in before.total() {
        let to = match change {
            Change::Keep(_) | Change::Remove(_) => Some(usage.stored - usage.removed.unwrap_or(0)),
            Change::Decompress => Some(usage.inflated),
            Change::Compress(_) | Change::CompressPlain(_) => after
                .iter()
                .find(|a| a.target == usage.target)
                .map(|a| a.stored),
        };
        text.push_str(&match to {
            Some(to) => format!(
                "total {}: {} images, {} bytes of device code {verb} to {to}\n",
                usage.target, usage.images, usage.stored
            ),
            None => format!(
                "total {}: {} images, {} bytes of device code, {} inflated\n",
                usage.target, usage.images, usage.stored, usage.inflated
            ),
        });
    }
    text
}

/// Rewrites the files of `roots` as `config` says, `work.jobs` at once; prints a line per
/// file, each failure on standard error with its path, and totals for several files. Returns
/// the exit status: 1 when any file failed, 2 when the files named cannot be worked on so.
fn execute(
    prog: &str,
    roots: &[PathBuf],
    work: Work,
    destination: &Destination,
    config: RewriteConfig,
    mode: Mode,
    pruning: Option<Pruning>,
) -> i32 {
    let options = JobOptions {
        files: roots.to_vec(),
        recursive: work.tree.recursive,
        links: work.tree.links(),
        output: destination.output.clone(),
        mode,
        config,
        pruning,
        threads: work.threads(),
    };
    let prepared = match job::prepare(&options) {
        Ok(prepared) => prepared,
        Err(Stopped { walk, refusal }) => {
            if let Some(walk) = &walk {
                crate::cli::inputs::report_walk(prog, walk);
            }
            let _ = writeln!(std::io::stderr(), "{prog}: error: {refusal}");
            return if refusal.is_usage() { 2 } else { 1 };
        }
    };
    crate::cli::inputs::report_walk(prog, &prepared.walk);
    let mut report = Report {
        pruning,
        ..Report::default()
    };
    for e in prepared.refused() {
        report.fail(prog, e);
    }
    let listed = prepared.listed();
    let to_stdout = destination
        .output
        .as_deref()
        .is_some_and(is_standard_output);
    // The lines are printed as the files are done (a chunk's worth at a time), the totals
    // summed as they come: no report is held. When the file's bytes go to standard output,
    // the report waits for the end, to go beside them on standard error.
    let mut printed = Ok(());
    let manifests = prepared.run_each(&JobBar::files(), &mut |file| {
        report.file(prog, &file.path, file.outcome, &options.config, mode);
        if !to_stdout && report.text.len() >= PRINTED_AT && printed.is_ok() {
            printed = crate::cli::print(prog, &std::mem::take(&mut report.text));
        }
    });
    let mut manifests_failed = false;
    for manifest in &manifests {
        match manifest {
            Ok(updated) => report.text.push_str(&manifest_line(updated, mode)),
            Err(e) => {
                manifests_failed = true;
                let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {e}");
            }
        }
    }
    let mut text = std::mem::take(&mut report.text);
    if jobs::several(roots, listed) {
        text.push_str(&report.totals.line(mode));
        text.push_str(&report.bare.line("only device code for other targets", mode));
        text.push_str(&report.named.line("named for removed processors", mode));
        text.push_str(&target_lines(
            &options.config.change,
            mode,
            std::mem::take(&mut report.before),
            std::mem::take(&mut report.after),
        ));
    }
    let failed = report.totals.failed > 0 || manifests_failed || !prepared.walk.errors.is_empty();
    if to_stdout {
        // The file's bytes went to standard output: the report goes beside them, not into them.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
        return i32::from(failed);
    }
    printed
        .and_then(|()| crate::cli::print(prog, &text))
        .map_or_else(|code| code, |()| i32::from(failed))
}

/// The lines of a rewrite's listing waiting to be printed are printed once they reach this
/// many bytes.
const PRINTED_AT: usize = 64 << 10;

/// Whether `path` is where standard output goes: `-`, or a name of what it is open on
/// (`/dev/stdout`, or the very file).
fn is_standard_output(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if path.as_os_str() == "-" {
        return true;
    }
    let (Ok(named), Ok(stdout)) = (
        std::fs::metadata(path),
        std::fs::metadata("/proc/self/fd/1"),
    ) else {
        return false;
    };
    (named.dev(), named.ino()) == (stdout.dev(), stdout.ino())
}

/// What a job prints: each file's lines, the totals, and the per-processor usages.
#[derive(Default)]
struct Report {
    text: String,
    totals: Totals,
    /// The device code of the files before the job, by target, and after it (of the files
    /// compressed), folded as the files come.
    before: du::Tally,
    after: du::Tally,
    /// What pruning the strip asks for, if it is one.
    pruning: Option<Pruning>,
    /// The files of bare device images only for other targets.
    bare: Settled,
    /// The files without device code named for removed processors.
    named: Settled,
}

impl Report {
    /// Counts a file that failed, its error said on standard error under the name `prog`.
    fn fail(&mut self, prog: &str, e: &crate::error::Error) {
        self.totals.files += 1;
        self.totals.failed += 1;
        let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {e}");
    }

    /// Adds the file `input`, which became `outcome`.
    fn file(
        &mut self,
        prog: &str,
        input: &Path,
        outcome: crate::error::Result<Outcome>,
        config: &RewriteConfig,
        mode: Mode,
    ) {
        match outcome {
            Ok(Outcome::Rewritten(summary, usages)) => {
                self.add(input, &summary, usages, config, mode)
            }
            Ok(Outcome::Bare(bare, fate, usages, names)) => {
                self.add_bare(input, &bare, fate, usages, mode);
                self.other_names(prog, input, names, mode);
            }
            Ok(Outcome::NoDeviceCode(Some(named))) => self.add_named(input, &named, mode),
            Ok(Outcome::NoDeviceCode(None)) => {}
            Err(e) => self.fail(prog, &e),
        }
    }

    /// Adds the file `input` of bare device images only for other targets, which became
    /// `fate`.
    fn add_bare(
        &mut self,
        input: &Path,
        bare: &BareFile,
        fate: Fate,
        usages: Option<Usages>,
        mode: Mode,
    ) {
        let pruning = self.pruning.unwrap_or(Pruning::of_flags(false, false));
        self.text
            .push_str(&prune::bare_line(input, bare, fate, pruning, mode));
        if let Some(usages) = usages {
            self.before.add(&usages.before);
        }
        self.bare.add(bare.size, Some(fate));
        let stays = matches!(fate, Fate::Left | Fate::Copied);
        let totals = &mut self.totals;
        totals.files += 1;
        totals.images_before += bare.targets.len();
        totals.bytes_before += bare.size;
        if stays {
            totals.images_after += bare.targets.len();
            totals.bytes_after += bare.size;
        }
    }

    /// Says what became of the other names of `input`, pruned with it.
    fn other_names(
        &mut self,
        prog: &str,
        input: &Path,
        names: Vec<(PathBuf, crate::error::Result<Fate>)>,
        mode: Mode,
    ) {
        let would = match mode {
            Mode::DryRun => "would be ",
            Mode::Write => "",
        };
        for (name, settled) in names {
            match settled {
                Ok(_) => self.text.push_str(&format!(
                    "{}: another name of {}: {would}pruned (removed)\n",
                    crate::io::shown(&name),
                    crate::io::shown(input)
                )),
                Err(e) => {
                    self.totals.failed += 1;
                    let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {e}");
                }
            }
        }
    }

    /// Adds the file `input` without device code, named for removed processors.
    fn add_named(&mut self, input: &Path, named: &Named, mode: Mode) {
        let pruning = self.pruning.unwrap_or(Pruning::of_flags(false, false));
        self.text
            .push_str(&prune::named_line(input, named, pruning, mode));
        self.named.add(named.0.size, named.1);
    }

    /// Adds the file `input`, rewritten as `summary` says.
    fn add(
        &mut self,
        input: &Path,
        summary: &Summary,
        usages: Option<Usages>,
        config: &RewriteConfig,
        mode: Mode,
    ) {
        let totals = &mut self.totals;
        totals.files += 1;
        if let Some(usages) = usages {
            self.before.add(&usages.before);
            if let Some(after) = &usages.after {
                self.after.add(after);
            }
        }
        if let Some(line) = already_compressed_line(input, summary, config) {
            self.text.push_str(&line);
        }
        if let Some(line) = embedded_line(input, summary, config) {
            self.text.push_str(&line);
        }
        // A package's members with device code, and those pruned, each have their line,
        // before the package's.
        for (member, theirs) in &summary.members {
            self.text.push_str(&summary_line(member, theirs, mode));
        }
        self.text.push_str(&summary_line(input, summary, mode));
        totals.changed += usize::from(summary.rewritten > 0);
        totals.images_before += summary.images_before;
        totals.images_after += summary.images_after;
        totals.bytes_before += summary.size_before;
        totals.bytes_after += summary.size_after;
    }
}

crate::cli::subcommand::subcommand!(StripArgs, "offload strip", strip, general, output_opts);

crate::cli::subcommand::subcommand!(
    CompressArgs,
    "offload compress",
    compress,
    general,
    output_opts
);

crate::cli::subcommand::subcommand!(
    DecompressArgs,
    "offload decompress",
    decompress,
    general,
    output_opts
);

/// Runs `offload strip` with `args` (without the program name).
fn strip(args: StripArgs) -> i32 {
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
    if args.variant {
        let prune = PruneMembers {
            bare: args.prune,
            named: args.prune && args.prune_named,
        };
        let output = args.destination.output.as_deref();
        return variants(&args.files, output, &config, (mode(args.dry_run), prune));
    }
    let destination = Destination {
        output: args.destination.output,
        in_place: args.destination.in_place,
    };
    execute(
        "offload strip",
        &args.files,
        args.work,
        &destination,
        config,
        mode(args.dry_run),
        Some(Pruning::of_flags(args.prune, args.prune_named)),
    )
}

/// `offload strip --variant`: each package of `files` written as the variant `config` keeps,
/// into the folder `output`. Every input is checked first (a package, named as one), so that
/// a refusal writes nothing. Returns the exit status.
fn variants(
    files: &[PathBuf],
    output: Option<&Path>,
    config: &RewriteConfig,
    how: (Mode, PruneMembers),
) -> i32 {
    const PROG: &str = "offload strip";
    let usage = |message: &str| {
        let _ = writeln!(std::io::stderr(), "{PROG}: error: {message}");
        2
    };
    let Change::Keep(kept) = &config.change else {
        return usage("--variant needs --keep sm_XY");
    };
    let targets: Vec<&str> = kept.iter().map(|k| k.as_str()).collect();
    let variant = match Variant::of_targets(&targets) {
        Ok(variant) => variant,
        Err(message) => return usage(&message),
    };
    let Some(folder) = output else {
        return usage("--variant writes each package under its variant's name: give -o with the folder to write into");
    };
    if folder.exists() && !folder.is_dir() {
        return usage(&format!(
            "{}: not a folder: --variant writes each package into the folder -o names",
            crate::io::shown(folder)
        ));
    }
    let refused: Vec<String> = files
        .iter()
        .filter_map(|file| variant_refusal(file, &variant))
        .collect();
    if !refused.is_empty() {
        for message in refused {
            let _ = writeln!(std::io::stderr(), "{PROG}: error: {message}");
        }
        return 1;
    }
    if how.0 == Mode::Write {
        if let Err(e) = std::fs::create_dir_all(folder) {
            return usage(&format!("{}: {e}", crate::io::shown(folder)));
        }
    }
    let mut report = Report::default();
    let mut failed = false;
    for file in files {
        match rewrite_variant(file, folder, config, &variant, how) {
            Ok((made, summary)) => {
                // The lines of any strip of the package: its members', then its own.
                report.add(file, &summary, None, config, how.0);
                let text = &mut report.text;
                let verb = if how.0 == Mode::DryRun {
                    "would make"
                } else {
                    "made"
                };
                text.push_str(&format!(
                    "{verb} {} for {}\n",
                    crate::io::shown(&made),
                    variant.names()
                ));
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(std::io::stderr(), "{PROG}: error: {e}");
            }
        }
    }
    crate::cli::print(PROG, &report.text).map_or_else(|code| code, |()| i32::from(failed))
}

/// Why the file `file` cannot be made a variant, if it cannot: a folder, a name of no wheel
/// or conda package, or contents of no package.
fn variant_refusal(file: &Path, variant: &Variant) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let shown = crate::io::shown(file);
    if file.is_dir() {
        return Some(format!(
            "{shown}: a folder: --variant takes packages, named one by one"
        ));
    }
    let named = file
        .file_name()
        .and_then(|name| variant.file_name(name.as_bytes()));
    if named.is_none() {
        return Some(format!("{shown}: not a wheel or conda package by its name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl, NAME-VERSION-BUILD.conda or .tar.bz2): --variant names the package it makes after it"));
    }
    match crate::io::Input::open(file) {
        Ok(data) if crate::host::package::kind(&data).is_some() => None,
        Ok(_) => Some(format!(
            "{shown}: not a package (a wheel, .conda or conda .tar.bz2): its contents are none"
        )),
        Err(e) => Some(e.to_string()),
    }
}

/// Runs `offload compress` with `args` (without the program name).
fn compress(args: CompressArgs) -> i32 {
    let method = match args.method.as_deref().unwrap_or("zstd") {
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
    let var = std::env::var(crate::cli::LLVM_VERSION_VAR).ok();
    let llvm = match crate::cli::llvm_version("offload", var.as_deref()) {
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
    // Bundles compressed already are recompressed only when the compression is asked for.
    let asked = args.level.is_some() || args.method.is_some() || args.format_version.is_some();
    let config = RewriteConfig {
        change: if asked {
            Change::Compress(options)
        } else {
            Change::CompressPlain(options)
        },
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    };
    execute(
        "offload compress",
        &args.files,
        args.work,
        &args.destination,
        config,
        mode(args.dry_run),
        None,
    )
}

/// The line that says bundles were left alone because they were compressed as asked: the
/// whole answer when nothing else changed.
fn already_compressed_line(
    file: &std::path::Path,
    summary: &Summary,
    config: &RewriteConfig,
) -> Option<String> {
    let how = match &config.change {
        Change::Compress(options) => format!(
            "already compressed with {}, format version {}",
            options.method.name(),
            options.version
        ),
        // Whatever their method and version: none was asked for.
        Change::CompressPlain(_) => "already compressed".to_string(),
        _ => return None,
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
        "{}: {count} {bundles} {how}, left as they were{nothing}\n",
        crate::io::shown(file),
    ))
}

/// The line that says a strip kept whole the device images embedded as data, which it
/// counts but cannot remove: the program loads them itself.
fn embedded_line(
    file: &std::path::Path,
    summary: &Summary,
    config: &RewriteConfig,
) -> Option<String> {
    let strips = matches!(config.change, Change::Keep(_) | Change::Remove(_));
    let count = summary.embedded;
    if !strips || count == 0 {
        return None;
    }
    let (images, are, them) = if count == 1 {
        ("image", "is", "it")
    } else {
        ("images", "are", "them")
    };
    Some(format!(
        "{}: {count} device {images} embedded as data {are} kept whole: the program loads {them} itself\n",
        crate::io::shown(file)
    ))
}

/// Runs `offload decompress` with `args` (without the program name).
fn decompress(args: DecompressArgs) -> i32 {
    let config = RewriteConfig {
        change: Change::Decompress,
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    };
    execute(
        "offload decompress",
        &args.files,
        args.work,
        &args.destination,
        config,
        mode(args.dry_run),
        None,
    )
}

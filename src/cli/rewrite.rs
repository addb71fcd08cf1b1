//! `offload strip`, `offload compress` and `offload decompress`: rewrite the device code of a
//! file, into a new file or in place.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::target::target_id::TargetIdBuf;
use clap::{Args as ClapArgs, Parser};

use crate::cli::general::{GeneralOpts, OutputOpts};
use crate::cli::inputs::TreeOpts;
use crate::cli::jobs::{self, Work};
use crate::cli::prune::{self, Named, Pruning, Settled};
use crate::format::ccob::{CompressOptions, Method};
use crate::ops::du::{self, FileUsage};
use crate::ops::prune::{Action, BareFile, Fate};
use crate::ops::rewrite::{self, Change, Mode, Ptx, RewriteConfig, Summary};
use crate::ops::support::inputs::{may_hold_device_code, Found, Taken};

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

/// Keep only the device images some target IDs can load, or remove them: in bundles, offload
/// binaries and CUDA fat binaries.
#[derive(Debug, Parser)]
#[command(name = "offload strip")]
struct StripArgs {
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
    destination: Destination,
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

/// The files to rewrite and where each result goes.
struct Plan {
    /// (input, output) pairs, in the order of the walk.
    pairs: Vec<(PathBuf, PathBuf)>,
    /// The files found in folders without device code, (input, output) pairs as `pairs`
    /// (taken only when pruning).
    others: Vec<(PathBuf, PathBuf)>,
    /// Whether the walk failed somewhere (a folder could not be read).
    walk_failed: bool,
    /// The folder the outputs mirror the inputs' tree under, if they do: no output may
    /// resolve outside it.
    root: Option<PathBuf>,
}

/// Where each of `found` is written: over itself in place (a file with several names once),
/// to `output` for a single file named, else mirrored under the folder `output`. Files found
/// in folders that hold no device code are among them only when `taken` takes them: they go
/// to [`Plan::others`].
fn plan(
    prog: &str,
    roots: &[PathBuf],
    tree: TreeOpts,
    destination: &Destination,
    taken: Taken,
) -> std::result::Result<Plan, String> {
    let (found, walk_failed) = tree.files_taking(prog, roots, taken);
    let (found, others): (Vec<Found>, Vec<Found>) = found.into_iter().partition(|f| {
        taken != Taken::Every || roots.contains(&f.path) || may_hold_device_code(&f.path)
    });
    let mut plan = Plan {
        pairs: Vec::new(),
        others: Vec::new(),
        walk_failed,
        root: None,
    };
    plan.pairs = destinations(roots, found, destination, &mut plan.root)?;
    plan.others = destinations(roots, others, destination, &mut plan.root)?;
    Ok(plan)
}

/// Where each of `found` is written (see [`plan`]); `root` becomes the output folder, if
/// the outputs go under one.
fn destinations(
    roots: &[PathBuf],
    found: Vec<Found>,
    destination: &Destination,
    root: &mut Option<PathBuf>,
) -> std::result::Result<Vec<(PathBuf, PathBuf)>, String> {
    use std::os::unix::fs::MetadataExt;
    let single_file = roots.len() == 1 && !roots[0].is_dir();
    let pairs = match &destination.output {
        Some(output) if single_file && !output.is_dir() => found
            .into_iter()
            .map(|f| (f.path, output.clone()))
            .collect(),
        Some(folder) => {
            *root = Some(folder.clone());
            let pairs: Vec<(PathBuf, PathBuf)> = found
                .into_iter()
                .map(|Found { path, relative, .. }| (path, folder.join(relative)))
                .collect();
            let mut seen = std::collections::HashSet::new();
            if let Some((input, output)) = pairs.iter().find(|(_, out)| !seen.insert(out)) {
                return Err(format!(
                    "'{}' and another input would both be written to '{}'",
                    crate::io::shown(input),
                    crate::io::shown(output)
                ));
            }
            pairs
        }
        None => {
            // In place, a file with several names is one file: rewritten once.
            let mut seen = std::collections::HashSet::new();
            found
                .into_iter()
                .filter(|f| {
                    std::fs::metadata(&f.path).map_or(true, |m| seen.insert((m.dev(), m.ino())))
                })
                .map(|f| (f.path.clone(), f.path))
                .collect()
        }
    };
    Ok(pairs)
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

/// The device code of one file by target, before a rewrite and (for compress, once written)
/// after it.
struct Usages {
    before: FileUsage,
    after: Option<FileUsage>,
}

/// The summary's line per target: its images, and the bytes of device code they took before
/// and take after (a strip: less what it removes; decompress: their inflated size; compress:
/// what the files written hold, known once they are written).
fn target_lines(change: &Change, mode: Mode, before: &[FileUsage], after: &[FileUsage]) -> String {
    let verb = match mode {
        Mode::DryRun => "would go",
        Mode::Write => "went",
    };
    let after = du::total(after);
    let mut text = String::new();
    for usage in du::total(before) {
        let to = match change {
            Change::Keep(_) | Change::Remove(_) => Some(usage.stored - usage.removed.unwrap_or(0)),
            Change::Decompress => Some(usage.inflated),
            Change::Compress(_) => after
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

/// Rewrites the files of `roots` as `config` says, `jobs` at once; prints a line per file,
/// each failure on standard error with its path, and totals for several files. Returns the
/// exit status: 1 when any file failed.
fn execute(
    prog: &str,
    roots: &[PathBuf],
    work: Work,
    destination: &Destination,
    config: &RewriteConfig,
    mode: Mode,
    pruning: Option<Pruning>,
) -> i32 {
    // Pruning, the files without device code are read too: their names may be for removed
    // processors.
    let taken = match pruning {
        Some(_) => Taken::Every,
        None => Taken::MayHoldDeviceCode,
    };
    let plan = match plan(prog, roots, work.tree, destination, taken) {
        Ok(plan) => plan,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "{prog}: error: {message}");
            return 2;
        }
    };
    let pool = match work.pool(prog) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let results = jobs::each_file(&pool, &plan.pairs, |(input, output)| {
        rewrite_file(&plan, input, output, config, mode, pruning)
    });
    let mut report = Report {
        pruning,
        ..Report::default()
    };
    for ((input, _), result) in plan.pairs.iter().zip(results) {
        match result {
            Ok(Outcome::Rewritten(summary, usages)) => {
                report.add(input, &summary, usages, config, mode)
            }
            Ok(Outcome::Bare(bare, fate, usages)) => {
                report.add_bare(input, &bare, fate, usages, mode)
            }
            Err(message) => report.fail(prog, &message),
        }
    }
    if let Some(pruning) = pruning {
        let settled = jobs::each_file(&pool, &plan.others, |(input, output)| {
            if pruning.bare == Action::Prune {
                prepare_output(&plan, input, output, mode)?;
            }
            prune::settle_other(input, output, config, pruning, mode)
        });
        for ((input, _), result) in plan.others.iter().zip(settled) {
            match result {
                Ok(Some(named)) => report.add_named(input, &named, mode),
                Ok(None) => {}
                Err(message) => report.fail(prog, &message),
            }
        }
    }
    let mut text = std::mem::take(&mut report.text);
    if jobs::several(roots, plan.pairs.len()) {
        text.push_str(&report.totals.line(mode));
        text.push_str(&report.bare.line("only device code for other targets", mode));
        text.push_str(&report.named.line("named for removed processors", mode));
        text.push_str(&target_lines(
            &config.change,
            mode,
            &report.before,
            &report.after,
        ));
    }
    let failed = report.totals.failed > 0 || plan.walk_failed;
    if destination
        .output
        .as_deref()
        .is_some_and(is_standard_output)
    {
        // The file's bytes went to standard output: the report goes beside them, not into them.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
        return i32::from(failed);
    }
    crate::cli::print(prog, &text).map_or_else(|code| code, |()| i32::from(failed))
}

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

/// What became of one file of a job.
enum Outcome {
    /// Rewritten as its summary says (a file of bare device images kept: left or copied as
    /// it is).
    Rewritten(Summary, Option<Usages>),
    /// A file of bare device images only for other targets, and what became of it.
    Bare(BareFile, Fate, Option<Usages>),
}

/// Makes the folder of `output` (inside the plan's root) when `input` is written there.
fn prepare_output(plan: &Plan, input: &Path, output: &Path, mode: Mode) -> Result<(), String> {
    if mode == Mode::Write && output != input {
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("'{}': {e}", crate::io::shown(parent)))?;
        }
        if let Some(root) = &plan.root {
            crate::io::inside(root, output).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Rewrites `input` to `output` (its folder made, inside the plan's root), with what its
/// processors' code takes before and, for compress, after; an error names the file. A file
/// of bare device images is kept or pruned whole, as `pruning` says.
fn rewrite_file(
    plan: &Plan,
    input: &Path,
    output: &Path,
    config: &RewriteConfig,
    mode: Mode,
    pruning: Option<Pruning>,
) -> Result<Outcome, String> {
    prepare_output(plan, input, output, mode)?;
    // What each processor's code takes before the rewrite (with what a strip removes), and,
    // for compress, after it: read from the headers, before and after.
    let strips = matches!(config.change, Change::Keep(_) | Change::Remove(_));
    let keep = strips.then_some(config);
    let mut before = du::file_usage(input, config.max_decompressed, keep).ok();
    // Bare device images hold no bundle to compress or inflate: compress and decompress keep
    // them as they are.
    let bare = match &before {
        Some(FileUsage {
            bare: Some(targets),
            ..
        }) => {
            let size = std::fs::metadata(input).map_or(0, |m| m.len());
            Some(BareFile::judge(targets, size, config))
        }
        _ => None,
    };
    let naming_the_file = |e: crate::error::Error| {
        let text = e.to_string();
        if text.contains(&*input.to_string_lossy()) {
            text
        } else {
            format!("'{}': {text}", crate::io::shown(input))
        }
    };
    if let Some(bare) = bare {
        let action = match (bare.kept, pruning) {
            (false, Some(pruning)) => pruning.bare,
            _ => Action::Keep,
        };
        let fate =
            crate::ops::prune::settle(input, output, action, mode).map_err(naming_the_file)?;
        if bare.kept {
            return Ok(Outcome::Rewritten(
                bare_summary(&bare),
                usages(before, output, config, mode),
            ));
        }
        if action == Action::Keep {
            // Left as it is: nothing of it is removed.
            for usage in before.iter_mut().flat_map(|b| &mut b.targets) {
                usage.removed = Some(0);
            }
        }
        return Ok(Outcome::Bare(bare, fate, before.map(usages_before)));
    }
    let summary = rewrite::rewrite(input, output, config, mode).map_err(naming_the_file)?;
    if summary.kept_whole {
        // Left as it is: nothing of it is removed.
        for usage in before.iter_mut().flat_map(|b| &mut b.targets) {
            usage.removed = Some(0);
        }
    }
    Ok(Outcome::Rewritten(
        summary,
        usages(before, output, config, mode),
    ))
}

/// The summary of a file of bare device images kept: as it was.
fn bare_summary(bare: &BareFile) -> Summary {
    Summary {
        images_before: bare.targets.len(),
        images_after: bare.targets.len(),
        size_before: bare.size,
        size_after: bare.size,
        ..Summary::default()
    }
}

/// The usages of a file not rewritten: as before.
fn usages_before(before: FileUsage) -> Usages {
    Usages {
        before,
        after: None,
    }
}

/// The usages of a file rewritten to `output`, whose code took `before`: for a compress
/// written, with what `output` holds. A file whose headers could not be read before, or (for
/// compress) after, counts in neither per-processor total, so both cover the same files.
fn usages(
    before: Option<FileUsage>,
    output: &Path,
    config: &RewriteConfig,
    mode: Mode,
) -> Option<Usages> {
    let compresses = matches!(config.change, Change::Compress(_));
    before.and_then(|before| {
        if compresses && mode == Mode::Write {
            du::file_usage(output, config.max_decompressed, None)
                .ok()
                .map(|after| Usages {
                    before,
                    after: Some(after),
                })
        } else {
            Some(Usages {
                before,
                after: None,
            })
        }
    })
}

/// What a job prints: each file's lines, the totals, and the per-processor usages.
#[derive(Default)]
struct Report {
    text: String,
    totals: Totals,
    before: Vec<FileUsage>,
    after: Vec<FileUsage>,
    /// What pruning the strip asks for, if it is one.
    pruning: Option<Pruning>,
    /// The files of bare device images only for other targets.
    bare: Settled,
    /// The files without device code named for removed processors.
    named: Settled,
}

impl Report {
    /// Counts a file that failed, its error said on standard error under the name `prog`.
    fn fail(&mut self, prog: &str, message: &str) {
        self.totals.files += 1;
        self.totals.failed += 1;
        let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {message}");
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
        self.before.extend(usages.map(|u| u.before));
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
            self.before.push(usages.before);
            self.after.extend(usages.after);
        }
        if let Some(line) = already_compressed_line(input, summary, config) {
            self.text.push_str(&line);
        }
        self.text.push_str(&summary_line(input, summary, mode));
        totals.changed += usize::from(summary.rewritten > 0);
        totals.images_before += summary.images_before;
        totals.images_after += summary.images_after;
        totals.bytes_before += summary.size_before;
        totals.bytes_after += summary.size_after;
    }
}

/// The command line this module parses, for the manual pages and shell completions.
pub(crate) fn strip_command() -> clap::Command {
    <StripArgs as clap::CommandFactory>::command()
}

/// The command line this module parses, for the manual pages and shell completions.
pub(crate) fn compress_command() -> clap::Command {
    <CompressArgs as clap::CommandFactory>::command()
}

/// The command line this module parses, for the manual pages and shell completions.
pub(crate) fn decompress_command() -> clap::Command {
    <DecompressArgs as clap::CommandFactory>::command()
}

/// Runs `offload strip` with `args` (without the program name).
pub fn strip(args: &[String]) -> i32 {
    let args: StripArgs = match crate::cli::parse_args("offload strip", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    args.output_opts.apply();
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
        &args.files,
        args.work,
        &args.destination,
        &config,
        mode(args.dry_run),
        Some(Pruning::of_flags(args.prune, args.prune_named)),
    )
}

/// Runs `offload compress` with `args` (without the program name).
pub fn compress(args: &[String]) -> i32 {
    let args: CompressArgs = match crate::cli::parse_args("offload compress", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    args.output_opts.apply();
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
    let config = RewriteConfig {
        change: Change::Compress(options),
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    };
    execute(
        "offload compress",
        &args.files,
        args.work,
        &args.destination,
        &config,
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
        crate::io::shown(file),
        options.method.name(),
        options.version
    ))
}

/// Runs `offload decompress` with `args` (without the program name).
pub fn decompress(args: &[String]) -> i32 {
    let args: DecompressArgs = match crate::cli::parse_args("offload decompress", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    args.output_opts.apply();
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
        &config,
        mode(args.dry_run),
        None,
    )
}

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
use crate::ops::rewrite::{self, Change, Mode, Placement, Ptx, RewriteConfig, Summary};
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

/// One file of a job and where its result goes.
struct Job {
    /// The file to read.
    input: PathBuf,
    /// Where its result goes.
    placement: Placement,
    /// In place, the other names the walk met for the same file (hard links), each with its
    /// placement: a file pruned loses them all.
    other_names: Vec<(PathBuf, Placement)>,
}

/// The files to rewrite and where each result goes.
struct Plan {
    /// The files, in the order of the walk.
    jobs: Vec<Job>,
    /// The files found in folders without device code (taken only when pruning).
    others: Vec<Job>,
    /// Files reached through a symbolic link the walk followed, which in place are left as
    /// they are: each an error naming it.
    refused: Vec<String>,
    /// Whether the walk failed somewhere (a folder could not be read).
    walk_failed: bool,
    /// The folder the outputs mirror the inputs' tree under, if they do: no output may
    /// resolve outside it.
    root: Option<PathBuf>,
    /// The files and folders named: a file found in a folder without device code is left
    /// alone and not listed, one named is reported.
    named: Vec<PathBuf>,
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
    if let Some(output) = &destination.output {
        output_outside_inputs(roots, output)?;
    }
    let (found, walk_failed) = tree.files_taking(prog, roots, taken);
    let (found, others): (Vec<Found>, Vec<Found>) = found.into_iter().partition(|f| {
        taken != Taken::Every || roots.contains(&f.path) || may_hold_device_code(&f.path)
    });
    let mut plan = Plan {
        jobs: Vec::new(),
        others: Vec::new(),
        refused: Vec::new(),
        walk_failed,
        root: None,
        named: roots.to_vec(),
    };
    plan.jobs = destinations(roots, found, destination, &mut plan)?;
    plan.others = destinations(roots, others, destination, &mut plan)?;
    Ok(plan)
}

/// Refuses an output folder that is one of the folders named, or lies inside one (its files
/// would be read again as inputs, and its names would be the inputs' own).
fn output_outside_inputs(roots: &[PathBuf], output: &Path) -> std::result::Result<(), String> {
    let Some(real_output) = real_path(output) else {
        return Ok(());
    };
    for root in roots.iter().filter(|r| r.is_dir()) {
        let Ok(real_root) = std::fs::canonicalize(root) else {
            continue;
        };
        if real_output.starts_with(&real_root) {
            let what = if real_output == real_root {
                "is the folder walked"
            } else {
                "lies inside the folder walked"
            };
            return Err(format!(
                "the output folder '{}' {what}, '{}': its files would be read as inputs and \
                 written over; choose a folder outside it, or --in-place",
                crate::io::shown(output),
                crate::io::shown(root)
            ));
        }
    }
    Ok(())
}

/// The real path `path` has or would have: its longest existing part with links resolved,
/// then the names still to be made.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return Some(missing.iter().rev().fold(real, |p, name| p.join(name)));
        }
        missing.push(existing.file_name()?);
        existing = match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
    }
}

/// Where the file `found`, found under one of `roots`, is rewritten in place.
fn in_place(roots: &[PathBuf], found: &Found) -> Placement {
    if roots.contains(&found.path) {
        return Placement::InPlace;
    }
    let depth = found.relative.components().count();
    let root = found.path.ancestors().nth(depth).unwrap_or(Path::new(""));
    Placement::InTree {
        root: root.to_path_buf(),
        relative: found.relative.clone(),
    }
}

/// Where each of `found` is written (see [`plan`]); the plan's root becomes the output
/// folder, if the outputs go under one.
fn destinations(
    roots: &[PathBuf],
    found: Vec<Found>,
    destination: &Destination,
    plan: &mut Plan,
) -> std::result::Result<Vec<Job>, String> {
    let single_file = roots.len() == 1 && !roots[0].is_dir();
    let new = |input: PathBuf, output: PathBuf| Job {
        input,
        placement: Placement::New(output),
        other_names: Vec::new(),
    };
    let jobs = match &destination.output {
        Some(output) if single_file && !output.is_dir() => found
            .into_iter()
            .map(|f| new(f.path, output.clone()))
            .collect(),
        Some(folder) => {
            plan.root = Some(folder.clone());
            let jobs: Vec<Job> = found
                .into_iter()
                .map(|Found { path, relative, .. }| new(path, folder.join(relative)))
                .collect();
            let mut seen = std::collections::HashSet::new();
            if let Some(job) = jobs.iter().find(|job| !seen.insert(&job.placement)) {
                let Placement::New(output) = &job.placement else {
                    unreachable!("every output is a new file");
                };
                return Err(format!(
                    "'{}' and another input would both be written to '{}'",
                    crate::io::shown(&job.input),
                    crate::io::shown(output)
                ));
            }
            jobs
        }
        None => in_place_jobs(roots, found, &mut plan.refused),
    };
    Ok(jobs)
}

/// The jobs of files rewritten in place: a file with several names once, under the first
/// name not reached through a symbolic link (its other names pruned with it). A file reached
/// only through links the walk followed is refused (added to `refused`): it may lie outside
/// the tree.
fn in_place_jobs(roots: &[PathBuf], found: Vec<Found>, refused: &mut Vec<String>) -> Vec<Job> {
    use std::collections::hash_map::Entry;
    use std::os::unix::fs::MetadataExt;
    let mut jobs: Vec<Job> = Vec::new();
    let mut by_file: std::collections::HashMap<(u64, u64), usize> = Default::default();
    let mut through_links = Vec::new();
    for f in found {
        if f.through_link {
            through_links.push(f);
            continue;
        }
        let placement = in_place(roots, &f);
        let Ok(meta) = std::fs::metadata(&f.path) else {
            // The command says why it cannot be read.
            jobs.push(Job {
                input: f.path,
                placement,
                other_names: Vec::new(),
            });
            continue;
        };
        match by_file.entry((meta.dev(), meta.ino())) {
            Entry::Occupied(first) => jobs[*first.get()].other_names.push((f.path, placement)),
            Entry::Vacant(slot) => {
                slot.insert(jobs.len());
                jobs.push(Job {
                    input: f.path,
                    placement,
                    other_names: Vec::new(),
                });
            }
        }
    }
    for f in through_links {
        let known =
            std::fs::metadata(&f.path).is_ok_and(|m| by_file.contains_key(&(m.dev(), m.ino())));
        if !known {
            refused.push(format!(
                "'{}': reached through a symbolic link: a walk rewrites and removes files only \
                 inside its tree; left as it is",
                crate::io::shown(&f.path)
            ));
        }
    }
    jobs
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
    if let Some(message) = keeps_nothing(&pool, &plan, config, pruning) {
        let _ = writeln!(std::io::stderr(), "{prog}: error: {message}");
        return 1;
    }
    let results = jobs::each_file(&pool, &plan.jobs, |job| {
        rewrite_file(&plan, job, config, mode, pruning)
    });
    let mut report = Report {
        pruning,
        ..Report::default()
    };
    for message in &plan.refused {
        report.fail(prog, message);
    }
    for (job, result) in plan.jobs.iter().zip(results) {
        match result {
            Ok(Outcome::Rewritten(summary, usages)) => {
                report.add(&job.input, &summary, usages, config, mode)
            }
            Ok(Outcome::Bare(bare, fate, usages, names)) => {
                report.add_bare(&job.input, &bare, fate, usages, mode);
                report.other_names(prog, &job.input, names, mode);
            }
            Ok(Outcome::NoDeviceCode(Some(named))) => report.add_named(&job.input, &named, mode),
            Ok(Outcome::NoDeviceCode(None)) => {}
            Err(message) => report.fail(prog, &message),
        }
    }
    if let Some(pruning) = pruning {
        let settled = jobs::each_file(&pool, &plan.others, |job| {
            if pruning.bare == Action::Prune {
                prepare_output(&plan, &job.placement, mode)?;
            }
            prune::settle_other(&job.input, &job.placement, config, pruning, mode)
        });
        for (job, result) in plan.others.iter().zip(settled) {
            match result {
                Ok(Some(named)) => report.add_named(&job.input, &named, mode),
                Ok(None) => {}
                Err(message) => report.fail(prog, &message),
            }
        }
    }
    let mut text = std::mem::take(&mut report.text);
    if jobs::several(roots, plan.jobs.len()) {
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
    /// A file of bare device images only for other targets, what became of it, and of its
    /// other names in the tree (removed with it).
    Bare(
        BareFile,
        Fate,
        Option<Usages>,
        Vec<(PathBuf, Result<Fate, String>)>,
    ),
    /// A file found by a walk that holds no device code, whatever its machine: settled as
    /// the files of folders without device code are (see [`prune::settle_other`]), listed
    /// only when named for removed processors.
    NoDeviceCode(Option<Named>),
}

/// With `--prune` (and no `--allow-empty`), the refusal of a strip that keeps no device image
/// of any file: every file of bare device images would go, as every image of a fat binary
/// would (which each file refuses on its own). A mistyped `--keep` must not empty a tree.
fn keeps_nothing(
    pool: &rayon::ThreadPool,
    plan: &Plan,
    config: &RewriteConfig,
    pruning: Option<Pruning>,
) -> Option<String> {
    let pruned = pruning.is_some_and(|p| p.bare == Action::Prune);
    // `--remove` names what goes: no mistake to guard against.
    let keeps = matches!(config.change, Change::Keep(_));
    if !pruned || !keeps || config.allow_empty {
        return None;
    }
    let (images, kept) = pool.install(|| {
        use rayon::prelude::*;
        plan.jobs
            .par_iter()
            .filter_map(|job| {
                du::file_usage(&job.input, config.max_decompressed, Some(config)).ok()
            })
            .map(|usage| {
                let images: u64 = usage.targets.iter().map(|u| u.images).sum();
                let kept = match &usage.bare {
                    Some(targets) => BareFile::judge(targets, 0, config).kept,
                    None => usage
                        .targets
                        .iter()
                        .any(|u| u.removed.unwrap_or(0) < u.stored),
                };
                (images, kept)
            })
            .reduce(|| (0, false), |a, b| (a.0 + b.0, a.1 || b.1))
    });
    (images > 0 && !kept).then(|| {
        format!(
            "the targets kept keep none of the {images} device images found: --prune would \
             remove every file of device code; nothing was changed (give --allow-empty to do it)"
        )
    })
}

/// Makes the folder of a new output (inside the plan's root) when one is written.
fn prepare_output(plan: &Plan, placement: &Placement, mode: Mode) -> Result<(), String> {
    let Placement::New(output) = placement else {
        return Ok(());
    };
    if mode == Mode::Write {
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

/// Rewrites the file of `job` (a new output's folder made, inside the plan's root), with
/// what its processors' code takes before and, for compress, after; an error names the
/// file. A file of bare device images is kept or pruned whole, as `pruning` says.
fn rewrite_file(
    plan: &Plan,
    job: &Job,
    config: &RewriteConfig,
    mode: Mode,
    pruning: Option<Pruning>,
) -> Result<Outcome, String> {
    let (input, placement) = (job.input.as_path(), &job.placement);
    let written = match placement {
        Placement::New(output) => output.as_path(),
        _ => input,
    };
    prepare_output(plan, placement, mode)?;
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
        if text.contains(&*crate::io::shown(input)) {
            text
        } else {
            format!("'{}': {text}", crate::io::shown(input))
        }
    };
    let found = !plan.named.iter().any(|named| named == input);
    if found && before.as_ref().is_some_and(|b| b.targets.is_empty()) {
        // As a file of a folder without device code is: named for removed processors, or
        // copied by --prune to an output folder, else left alone.
        let named = match pruning {
            Some(pruning) => prune::settle_other(input, placement, config, pruning, mode)?,
            None => None,
        };
        return Ok(Outcome::NoDeviceCode(named));
    }
    if let Some(bare) = bare {
        let action = match (bare.kept, pruning) {
            (false, Some(pruning)) => pruning.bare,
            _ => Action::Keep,
        };
        let read = before.as_ref().and_then(|b| b.read);
        let fate = crate::ops::prune::settle(input, placement, read, action, mode)
            .map_err(naming_the_file)?;
        if bare.kept {
            return Ok(Outcome::Rewritten(
                bare_summary(&bare),
                usages(before, written, config, mode),
            ));
        }
        if action == Action::Keep {
            // Left as it is: nothing of it is removed.
            for usage in before.iter_mut().flat_map(|b| &mut b.targets) {
                usage.removed = Some(0);
            }
        }
        let names = other_names_settled(job, read, fate, mode);
        return Ok(Outcome::Bare(bare, fate, before.map(usages_before), names));
    }
    let summary = rewrite::rewrite(input, placement, config, mode).map_err(naming_the_file)?;
    if summary.kept_whole {
        // Left as it is: nothing of it is removed.
        for usage in before.iter_mut().flat_map(|b| &mut b.targets) {
            usage.removed = Some(0);
        }
    }
    Ok(Outcome::Rewritten(
        summary,
        usages(before, written, config, mode),
    ))
}

/// A file pruned in place (`fate`) loses its other names in the tree too, each removed as
/// it was (through its folder, while it holds the file `read`); what became of each.
fn other_names_settled(
    job: &Job,
    read: Option<crate::io::beneath::Identity>,
    fate: Fate,
    mode: Mode,
) -> Vec<(PathBuf, Result<Fate, String>)> {
    if fate != Fate::Removed {
        return Vec::new();
    }
    job.other_names
        .iter()
        .map(|(name, placement)| {
            let settled = crate::ops::prune::settle(name, placement, read, Action::Prune, mode)
                .map_err(|e| e.to_string());
            (name.clone(), settled)
        })
        .collect()
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

/// The usages of a file rewritten to `written` (itself, in place), whose code took `before`:
/// for a compress written, with what the output holds. A file whose headers could not be read
/// before, or (for compress) after, counts in neither per-processor total, so both cover the
/// same files.
fn usages(
    before: Option<FileUsage>,
    written: &Path,
    config: &RewriteConfig,
    mode: Mode,
) -> Option<Usages> {
    let compresses = matches!(
        config.change,
        Change::Compress(_) | Change::CompressPlain(_)
    );
    before.and_then(|before| {
        if compresses && mode == Mode::Write {
            du::file_usage(written, config.max_decompressed, None)
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

    /// Says what became of the other names of `input`, pruned with it.
    fn other_names(
        &mut self,
        prog: &str,
        input: &Path,
        names: Vec<(PathBuf, Result<Fate, String>)>,
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
                Err(message) => {
                    self.totals.failed += 1;
                    let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {message}");
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
            self.before.push(usages.before);
            self.after.extend(usages.after);
        }
        if let Some(line) = already_compressed_line(input, summary, config) {
            self.text.push_str(&line);
        }
        if let Some(line) = embedded_line(input, summary, config) {
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
pub fn strip(args: &[std::ffi::OsString]) -> i32 {
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
pub fn compress(args: &[std::ffi::OsString]) -> i32 {
    let args: CompressArgs = match crate::cli::parse_args("offload compress", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    args.output_opts.apply();
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
pub fn decompress(args: &[std::ffi::OsString]) -> i32 {
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

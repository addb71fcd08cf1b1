//! The job of `offload strip`, `offload compress` and `offload decompress` (and of the linker
//! plugin): the files named, or the trees walked, each rewritten or settled whole where its
//! result goes, several at once; a typed report of what became of each.
//!
//! A strip settles whole the files it does not rewrite: a file of bare device images is kept
//! whole or, only for other targets, pruned (with [`Pruning::bare`]); a file without device
//! code named for removed processors is reported, or pruned (with [`Pruning::named`]).
//!
//! # Example
//!
//! Strip a bundle file to one target, as `offload strip --keep gfx1100 FILE` does.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::rewrite::job::{self, JobOptions, Outcome, Pruning};
//! use offload::ops::rewrite::{Change, Mode, RewriteConfig};
//! use offload::ops::Links;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"code for gfx1100"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//!
//! let options = JobOptions {
//!     files: vec![file.clone()],
//!     recursive: false,
//!     links: Links::Skip,
//!     output: None,
//!     mode: Mode::Write,
//!     config: RewriteConfig {
//!         change: Change::Keep(vec!["gfx1100".parse()?]),
//!         allow_empty: false,
//!         max_decompressed: DEFAULT_MAX_DECOMPRESSED,
//!         ptx: Default::default(),
//!     },
//!     pruning: Some(Pruning::of_flags(false, false)),
//!     threads: 1,
//! };
//! let report = job::run(&options, &()).map_err(|stopped| format!("{:?}", stopped.refusal))?;
//! assert_eq!(report.files.len(), 1);
//! let Ok(Outcome::Rewritten(summary, _)) = &report.files[0].outcome else {
//!     panic!("{:?}", report.files[0].outcome)
//! };
//! // Device images: the host entry is none.
//! assert_eq!((summary.images_before, summary.images_after), (2, 1));
//!
//! let stripped = std::fs::read(&file)?;
//! let ids: Vec<&str> = bundle::Bundle::parse(&stripped)?.unwrap().entries().iter().map(|e| e.id).collect();
//! assert_eq!(ids, ["host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx1100"]);
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::host::package::manifest::installed::{Touched, Updated};
use crate::io::beneath::Identity;
use crate::ops::du::{self, FileUsage};
use crate::ops::prune::{self, Action, BareFile, Fate, NamedFile};
use crate::ops::rewrite::environments;
use crate::ops::rewrite::plan::{self, Plan, Refusal, Task, Tasks};
use crate::ops::rewrite::{self as rewriting, Change, Mode, Placement, RewriteConfig, Summary};
use crate::ops::support::inputs::{Links, Taken, Walk};
use crate::ops::support::progress::Progress;

/// A job: the files, where their results go, and the rewrite.
#[derive(Debug, Clone)]
pub struct JobOptions {
    /// The files and folders named.
    pub files: Vec<PathBuf>,
    /// Walk the folders named to their last level (else a folder gives its own files).
    pub recursive: bool,
    /// What becomes of symbolic links met in folders.
    pub links: Links,
    /// Where the results go: the file (for one file named) or folder (mirroring the
    /// inputs' tree) to write; `None`, over each file (or, in a dry run, nowhere).
    pub output: Option<PathBuf>,
    /// Whether the results are written.
    pub mode: Mode,
    /// The rewrite.
    pub config: RewriteConfig,
    /// For a strip, what becomes of the files it settles whole; `None` for compress and
    /// decompress.
    pub pruning: Option<Pruning>,
    /// Files worked on at once.
    pub threads: usize,
}

/// What a strip does to whole files, as `--prune` and `--prune-named` ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruning {
    /// Files of bare device images wholly for other targets.
    pub bare: Action,
    /// Files without device code named for removed processors.
    pub named: Action,
}

impl Pruning {
    /// The pruning the flags ask for (`--prune-named` counts only with `--prune`).
    pub fn of_flags(prune: bool, prune_named: bool) -> Pruning {
        let action = |asked: bool| if asked { Action::Prune } else { Action::Keep };
        Pruning {
            bare: action(prune),
            named: action(prune && prune_named),
        }
    }
}

/// A file without device code named for removed processors, and what became of it: `None`
/// when it was not written to the output folder, as no file without device code is unless
/// pruning is asked.
pub type Named = (NamedFile, Option<Fate>);

/// The device code of one file by target, before a rewrite and (for compress, once written)
/// after it.
#[derive(Debug, Clone)]
pub struct Usages {
    /// Before.
    pub before: FileUsage,
    /// After, for a compress written.
    pub after: Option<FileUsage>,
}

/// What became of one file of a job.
#[derive(Debug)]
pub enum Outcome {
    /// Rewritten as its summary says (a file of bare device images kept: left or copied as
    /// it is).
    Rewritten(Summary, Option<Usages>),
    /// A file of bare device images only for other targets, what became of it, and of its
    /// other names in the tree (removed with it).
    Bare(BareFile, Fate, Option<Usages>, Vec<(PathBuf, Result<Fate>)>),
    /// A file found by a walk that holds no device code, whatever its machine: settled as
    /// the files of folders without device code are (see [`settle_other`]), listed only
    /// when named for removed processors.
    NoDeviceCode(Option<Named>),
}

/// One file of a job and what became of it.
#[derive(Debug)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// What became of it, or why nothing did (the error naming the file).
    pub outcome: Result<Outcome>,
}

/// What a job did.
#[derive(Debug)]
pub struct JobReport {
    /// The walk of the inputs: the folders that could not be read, the loops and special
    /// files skipped.
    pub walk: Walk,
    /// Files left as they are because the walk reached them through a symbolic link.
    pub refused: Vec<Error>,
    /// The files rewritten or settled whole, in the order of the walk.
    pub files: Vec<FileReport>,
    /// The files of folders without device code, settled when pruning.
    pub others: Vec<FileReport>,
    /// The manifests of environments installed in the trees (wheel RECORDs, conda records)
    /// that listed files changed, brought up to date (in a dry run, that would be), or the
    /// error naming each that could not be.
    pub manifests: Vec<Result<Updated>>,
}

/// Why a job did nothing, and the walk when it was made.
#[derive(Debug)]
pub struct Stopped {
    /// The walk of the inputs, when it came before the refusal.
    pub walk: Option<Box<Walk>>,
    /// Why.
    pub refusal: Refusal,
}

/// Runs the job `options` asks for, `files` hearing of each file done.
#[tracing::instrument(skip_all, fields(change = %options.config.change))]
pub fn run(options: &JobOptions, files: &dyn Progress) -> std::result::Result<JobReport, Stopped> {
    let prepared = prepare(options)?;
    let mut reports = Vec::new();
    let mut others = Vec::new();
    let listed = prepared.listed();
    let manifests = prepared.run_each(files, &mut |report| {
        if reports.len() < listed {
            reports.push(report);
        } else {
            others.push(report);
        }
    });
    let Prepared { walk, plan, .. } = prepared;
    Ok(JobReport {
        walk,
        files: reports,
        others,
        refused: plan.refused,
        manifests,
    })
}

/// A job walked and planned, its files not yet worked on.
pub struct Prepared<'o> {
    options: &'o JobOptions,
    /// The walk of the inputs: the folders that could not be read, the loops and special
    /// files skipped.
    pub walk: Walk,
    plan: Plan,
    pool: rayon::ThreadPool,
}

/// Walks and plans the job `options` asks for, without working on any file yet.
pub fn prepare(options: &JobOptions) -> std::result::Result<Prepared<'_>, Stopped> {
    let stopped = |walk, refusal| Stopped { walk, refusal };
    if let Some(output) = &options.output {
        plan::output_outside_inputs(&options.files, output).map_err(|r| stopped(None, r))?;
    }
    // Pruning, the files without device code are read too: their names may be for removed
    // processors.
    let taken = match options.pruning {
        Some(_) => Taken::Every,
        None => Taken::MayHoldDeviceCode,
    };
    let (found, walk) = plan::walk(&options.files, options.recursive, options.links, taken);
    let plan = match plan::plan(&options.files, &found, options.output.as_deref(), taken) {
        Ok(plan) => plan,
        Err(refusal) => return Err(stopped(Some(Box::new(walk)), refusal)),
    };
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
    {
        Ok(pool) => pool,
        Err(e) => {
            let refusal = Refusal::Threads(e.to_string());
            return Err(stopped(Some(Box::new(walk)), refusal));
        }
    };
    if let Some(images) = keeps_nothing(&pool, &plan, options) {
        return Err(stopped(
            Some(Box::new(walk)),
            Refusal::KeepsNothing { images },
        ));
    }
    Ok(Prepared {
        options,
        walk,
        plan,
        pool,
    })
}

impl Prepared<'_> {
    /// Files left as they are because the walk reached them through a symbolic link.
    pub fn refused(&self) -> &[Error] {
        &self.plan.refused
    }

    /// How many files are rewritten or settled whole (the files of folders without device
    /// code, settled when pruning, come after them).
    pub fn listed(&self) -> usize {
        self.plan.tasks.len()
    }

    /// Works on every file, `files` hearing of each: the report of each handed to `each` as
    /// it is done, in the order of the walk (the files rewritten or settled whole, then
    /// those of folders without device code), a chunk of files at a time, so that no report
    /// is held once handed. Gives the manifests brought up to date, as [`JobReport`] says.
    pub fn run_each(
        &self,
        files: &dyn Progress,
        each: &mut dyn FnMut(FileReport),
    ) -> Vec<Result<Updated>> {
        let (plan, options, pool) = (&self.plan, self.options, &self.pool);
        let mut changes = environments::Changes::new(plan, options.mode);
        each_file(pool, &plan.tasks, files, &mut changes, each, |task| {
            rewrite_file(plan, task, options)
        });
        if let Some(pruning) = options.pruning {
            each_file(pool, &plan.others, files, &mut changes, each, |task| {
                if pruning.bare == Action::Prune {
                    prepare_output(plan, &task.placement, options.mode)?;
                }
                settle_other(
                    &task.input,
                    &task.placement,
                    &options.config,
                    pruning,
                    options.mode,
                )
                .map(Outcome::NoDeviceCode)
            });
        }
        changes.update()
    }
}

/// Where the files of `task` that `outcome` changed were placed, and what became of each:
/// a file rewritten (with its other names, the same file), or removed (with those of its
/// other names removed).
fn changed<'t>((task, outcome): (&'t Task, &Result<Outcome>)) -> Vec<(&'t Placement, Touched)> {
    let gone = |fate: &Fate| matches!(fate, Fate::Removed | Fate::NotCopied);
    let names = task.other_names.iter().map(|(_, placement)| placement);
    match outcome {
        Ok(Outcome::Rewritten(summary, _)) if summary.rewritten > 0 => {
            let all = std::iter::once(&task.placement).chain(names);
            all.map(|p| (p, Touched::Rewritten)).collect()
        }
        Ok(Outcome::Bare(_, fate, _, settled)) if gone(fate) => {
            let removed = names
                .zip(settled)
                .filter(|(_, (_, settled))| settled.as_ref().is_ok_and(gone))
                .map(|(placement, _)| placement);
            let all = std::iter::once(&task.placement).chain(removed);
            all.map(|p| (p, Touched::Removed)).collect()
        }
        Ok(Outcome::NoDeviceCode(Some((_, Some(fate))))) if gone(fate) => {
            vec![(&task.placement, Touched::Removed)]
        }
        _ => Vec::new(),
    }
}

/// How many files are worked on at once, in parallel, before their reports are handed out.
const CHUNK: usize = 256;

/// `work` done on each of `tasks` on `pool`, `progress` hearing of each, a chunk at a time:
/// the reports handed to `each` in the order of `tasks`, whatever the order they were done
/// in, and where each file changed went to `changes`.
fn each_file(
    pool: &rayon::ThreadPool,
    tasks: &Tasks,
    progress: &dyn Progress,
    changes: &mut environments::Changes<'_>,
    each: &mut dyn FnMut(FileReport),
    work: impl Fn(&Task) -> Result<Outcome> + Sync,
) {
    progress.start(tasks.len() as u64);
    for chunk in tasks.chunks(CHUNK) {
        let outcomes: Vec<Result<Outcome>> = pool.install(|| {
            chunk
                .par_iter()
                .map(|task| {
                    let result = work(task);
                    progress.advance(1);
                    result
                })
                .collect()
        });
        for (task, outcome) in chunk.into_iter().zip(outcomes) {
            for (placement, touched) in changed((&task, &outcome)) {
                changes.add(placement, touched);
            }
            each(FileReport {
                path: task.input,
                outcome,
            });
        }
    }
    progress.finish();
}

/// With `--prune` (and no `--allow-empty`), the device images found when a strip keeps none
/// of any file: every file of bare device images would go, as every image of a fat binary
/// would (which each file refuses on its own). A mistyped `--keep` must not empty a tree.
fn keeps_nothing(pool: &rayon::ThreadPool, plan: &Plan, options: &JobOptions) -> Option<u64> {
    let config = &options.config;
    let pruned = options.pruning.is_some_and(|p| p.bare == Action::Prune);
    // `--remove` names what goes: no mistake to guard against.
    let keeps = matches!(config.change, Change::Keep(_));
    if !pruned || !keeps || config.allow_empty {
        return None;
    }
    let weigh = |task: &Task| {
        let usage = du::file_usage(&task.input, config.max_decompressed, Some(config)).ok()?;
        let images: u64 = usage.targets.iter().map(|u| u.images).sum();
        let kept = match &usage.bare {
            Some(targets) => BareFile::judge(targets, 0, config).kept,
            None => usage
                .targets
                .iter()
                .any(|u| u.removed.unwrap_or(0) < u.stored),
        };
        Some((images, kept))
    };
    let (images, kept) = plan
        .tasks
        .chunks(CHUNK)
        .map(|chunk| {
            pool.install(|| {
                chunk
                    .par_iter()
                    .filter_map(weigh)
                    .reduce(|| (0, false), |a, b| (a.0 + b.0, a.1 || b.1))
            })
        })
        .fold((0, false), |a, b| (a.0 + b.0, a.1 || b.1));
    (images > 0 && !kept).then_some(images)
}

/// Makes the folder of a new output (inside the plan's root) when one is written.
fn prepare_output(plan: &Plan, placement: &Placement, mode: Mode) -> Result<()> {
    let Placement::New(output) = placement else {
        return Ok(());
    };
    if mode == Mode::Write {
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::file(parent, e.to_string()))?;
        }
        if let Some(root) = &plan.root {
            crate::io::inside(root, output)?;
        }
    }
    Ok(())
}

/// Does what `pruning` asks to `input` (placed as `placement` says), a file the walk found
/// holding no device code: named for removed processors, it is reported; with `--prune` and
/// an output folder, a file not pruned is copied, so that the folder is the whole tree less
/// what was pruned.
pub fn settle_other(
    input: &Path,
    placement: &Placement,
    config: &RewriteConfig,
    pruning: Pruning,
    mode: Mode,
) -> Result<Option<Named>> {
    let named = prune::named_for_removed(input, config)?;
    let written = placement.in_place() || pruning.bare == Action::Prune;
    let action = match &named {
        Some(_) => pruning.named,
        None => Action::Keep,
    };
    let read = named.as_ref().map(|named| named.read);
    let fate = if written {
        Some(prune::settle(input, placement, read, action, mode)?)
    } else {
        None
    };
    Ok(named.map(|named| (named, fate)))
}

/// Rewrites the file of `task` (a new output's folder made, inside the plan's root), with
/// what its processors' code takes before and, for compress, after; an error names the
/// file. A file of bare device images is kept or pruned whole, as the pruning says.
fn rewrite_file(plan: &Plan, task: &Task, options: &JobOptions) -> Result<Outcome> {
    let (input, placement) = (task.input.as_path(), &task.placement);
    let (config, mode) = (&options.config, options.mode);
    let written = match placement {
        Placement::New(output) => output.as_path(),
        _ => input,
    };
    prepare_output(plan, placement, mode)?;
    // What each processor's code takes before the rewrite (with what a strip removes), and,
    // for compress, after it: read from the headers, before and after.
    let strips = matches!(config.change, Change::Keep(_) | Change::Remove(_));
    let keep = strips.then_some(config);
    // Opened once: the rewrite reads the file through the map the scan read it through.
    let opened = crate::io::Input::open(input).ok();
    // A new file's host code and data before its device code are copied into it while the
    // file is scanned and planned.
    let started = (opened.as_ref())
        .filter(|_| mode == Mode::Write)
        .and_then(|data| rewriting::start_ahead(input, data, placement));
    let mut before = (opened.as_ref())
        .and_then(|data| du::input_usage(input, data, config.max_decompressed, keep).ok());
    let found = !plan.named.iter().any(|named| named == input);
    if found && before.as_ref().is_some_and(|b| b.targets.is_empty()) {
        // As a file of a folder without device code is: named for removed processors, or
        // copied by --prune to an output folder, else left alone.
        let named = match options.pruning {
            Some(pruning) => settle_other(input, placement, config, pruning, mode)?,
            None => None,
        };
        return Ok(Outcome::NoDeviceCode(named));
    }
    // Bare device images hold no bundle to compress or inflate: compress and decompress keep
    // them as they are.
    if let Some(targets) = before.as_ref().and_then(|b| b.bare.as_ref()) {
        let size = std::fs::metadata(input).map_or(0, |m| m.len());
        let bare = BareFile::judge(targets, size, config);
        return settle_bare(task, bare, before, written, options);
    }
    // The scan just made counted the images embedded as data: the rewrite need not again.
    let embedded = before.as_ref().and_then(|b| Some((b.embedded?, b.read?)));
    let prune = pruned(options);
    let summary = match &opened {
        Some(data) => {
            let read = (input, data, placement);
            rewriting::rewrite_started(read, config, mode, prune, embedded, started)
        }
        None => rewriting::rewrite_scanned(input, placement, config, mode, prune, embedded),
    }
    .map_err(|e| e.about(input))?;
    drop(opened);
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

/// What a strip leaves out of a zip it rewrites, as `--prune` and `--prune-named` ask.
fn pruned(options: &JobOptions) -> rewriting::PruneMembers {
    let pruning = options.pruning.unwrap_or(Pruning::of_flags(false, false));
    rewriting::PruneMembers {
        bare: pruning.bare == Action::Prune,
        named: pruning.named == Action::Prune,
    }
}

/// Keeps whole or prunes the file of `task`, of bare device images judged `bare`, whose code
/// took `before`.
fn settle_bare(
    task: &Task,
    bare: BareFile,
    mut before: Option<FileUsage>,
    written: &Path,
    options: &JobOptions,
) -> Result<Outcome> {
    let (input, placement) = (task.input.as_path(), &task.placement);
    let (config, mode) = (&options.config, options.mode);
    let action = match (bare.kept, options.pruning) {
        (false, Some(pruning)) => pruning.bare,
        _ => Action::Keep,
    };
    let read = before.as_ref().and_then(|b| b.read);
    let fate = prune::settle(input, placement, read, action, mode).map_err(|e| e.about(input))?;
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
    let names = other_names_settled(task, read, fate, mode);
    Ok(Outcome::Bare(bare, fate, before.map(usages_before), names))
}

/// A file pruned in place (`fate`) loses its other names in the tree too, each removed as
/// it was (through its folder, while it holds the file `read`); what became of each.
fn other_names_settled(
    task: &Task,
    read: Option<Identity>,
    fate: Fate,
    mode: Mode,
) -> Vec<(PathBuf, Result<Fate>)> {
    if fate != Fate::Removed {
        return Vec::new();
    }
    task.other_names
        .iter()
        .map(|(name, placement)| {
            let settled = prune::settle(name, placement, read, Action::Prune, mode);
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
            Some(usages_before(before))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::rewrite::Ptx;

    /// A dry run of `offload strip --keep gfx90a` over `files`, results to `output`.
    fn keeping_gfx90a(files: Vec<PathBuf>, output: Option<PathBuf>) -> JobOptions {
        JobOptions {
            files,
            recursive: false,
            links: Links::Skip,
            output,
            mode: Mode::DryRun,
            config: RewriteConfig {
                change: Change::Keep(vec!["gfx90a".parse().unwrap()]),
                allow_empty: false,
                max_decompressed: u64::MAX,
                ptx: Ptx::AsAsked,
            },
            pruning: Some(Pruning::of_flags(false, false)),
            threads: 1,
        }
    }

    #[test]
    fn the_report_says_what_became_of_each_file_as_data() {
        let dir = tempfile::tempdir().unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/dev/kernel-gfx906.hsaco");
        let input = dir.path().join("k.hsaco");
        std::fs::copy(sample, &input).unwrap();
        let report = run(&keeping_gfx90a(vec![input.clone()], None), &()).unwrap();
        let [file] = &report.files[..] else {
            panic!("{report:?}");
        };
        assert_eq!(file.path, input);
        match &file.outcome {
            Ok(Outcome::Bare(bare, Fate::Left, _, names)) => {
                assert_eq!(bare.targets, ["gfx906"]);
                assert!(!bare.kept && names.is_empty());
            }
            other => panic!("{other:?}"),
        }
        // An output folder inside the folder walked is refused before anything is read.
        let inside = keeping_gfx90a(vec![dir.path().to_path_buf()], Some(dir.path().join("out")));
        let stopped = run(&inside, &()).unwrap_err();
        assert!(stopped.walk.is_none());
        assert!(matches!(
            stopped.refusal,
            Refusal::OutputInsideInputs { same: false, .. }
        ));
        assert!(stopped.refusal.is_usage());
    }
}

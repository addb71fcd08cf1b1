//! Work on many files at once: the files found (`-r`, `--follow`), how many are worked on at
//! a time (`-j`), one progress bar for the whole job on a terminal, and whether the job ends
//! with a summary.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args as ClapArgs;
use rayon::prelude::*;

use crate::cli::inputs::TreeOpts;
use crate::ops::support::inputs::FoundList;
use crate::ops::support::progress::Progress;

/// How the files are found and how many are worked on at once.
#[derive(Debug, Clone, Copy, ClapArgs)]
pub struct Work {
    /// How folders are walked.
    #[command(flatten)]
    pub tree: TreeOpts,
    /// Files worked on at once (default: the number of cores). Output comes in the order of
    /// the files, whatever the number.
    #[arg(short = 'j', long = "jobs", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

impl Work {
    /// The threads to work with: `-j`, else one per core.
    pub fn threads(self) -> usize {
        self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            usize::from,
        )
    }

    /// A pool of [`Work::threads`] threads; when it cannot be made, says so on standard error
    /// under the name `prog` and gives the exit status to return.
    pub fn pool(self, prog: &str) -> Result<rayon::ThreadPool, i32> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads())
            .build()
            .map_err(|e| {
                let _ = writeln!(std::io::stderr(), "{prog}: error: threads: {e}");
                1
            })
    }
}

/// A bar on standard error for a whole job, counting files (shown when there are several) or
/// bytes written (shown when they are many): shown only when standard error is a terminal.
pub struct JobBar {
    bar: indicatif::ProgressBar,
    unit: Unit,
}

/// What a [`JobBar`] counts.
#[derive(Clone, Copy)]
enum Unit {
    Files,
    Bytes,
}

/// The bytes written from which a bar shows.
const MANY_BYTES: u64 = 256 << 20;

impl JobBar {
    /// A bar for `files` files, hidden until it is drawn on a terminal.
    pub fn new(files: usize) -> JobBar {
        let bar = JobBar {
            bar: indicatif::ProgressBar::hidden(),
            unit: Unit::Files,
        };
        bar.start(files as u64);
        bar
    }

    /// A bar for files, [`Progress::start`] saying how many.
    pub fn files() -> JobBar {
        JobBar {
            bar: indicatif::ProgressBar::hidden(),
            unit: Unit::Files,
        }
    }

    /// A bar for bytes written, [`Progress::start`] saying how many.
    pub fn bytes() -> JobBar {
        JobBar {
            bar: indicatif::ProgressBar::hidden(),
            unit: Unit::Bytes,
        }
    }
}

impl Progress for JobBar {
    fn start(&self, amount: u64) {
        let shown = match self.unit {
            Unit::Files => amount >= 2,
            Unit::Bytes => amount >= MANY_BYTES,
        };
        if !shown || !std::io::stderr().is_terminal() {
            return;
        }
        self.bar.set_length(amount);
        if let Unit::Files = self.unit {
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {msg}")
            {
                self.bar.set_style(style);
            }
        }
        self.bar
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    fn advance(&self, amount: u64) {
        self.bar.inc(amount);
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `work` done on each of `items` on `pool`, a bar counting them on a terminal; the results
/// in the order of `items`, whatever the order they were done in.
pub fn each_file<P: Sync, T: Send>(
    pool: &rayon::ThreadPool,
    items: &[P],
    work: impl Fn(&P) -> T + Sync,
) -> Vec<T> {
    let bar = JobBar::new(items.len());
    let results = counted_in(pool, items, &work, &bar);
    bar.finish();
    results
}

/// `work` done on each of `items` on `pool`, in parallel, `bar` advanced for each.
fn counted_in<P: Sync, T: Send>(
    pool: &rayon::ThreadPool,
    items: &[P],
    work: &(impl Fn(&P) -> T + Sync),
    bar: &JobBar,
) -> Vec<T> {
    pool.install(|| {
        items
            .par_iter()
            .map(|item| {
                let result = work(item);
                bar.advance(1);
                result
            })
            .collect()
    })
}

/// How many items [`each_in_order`] works on at once: enough to keep every thread busy, few
/// enough that their results take little memory.
pub const CHUNK: usize = 256;

/// `work` done on each of `items` on `pool`, a bar counting them on a terminal, each result
/// handed to `take` with its item in the order of `items`: a chunk of [`CHUNK`] items at a
/// time, so that only one chunk's results are held however many items there are. Stops at
/// the first error `take` returns, and returns it.
pub fn each_in_order<P: Sync, T: Send, E>(
    pool: &rayon::ThreadPool,
    items: &[P],
    work: impl Fn(&P) -> T + Sync,
    take: impl FnMut(&P, T) -> Result<(), E>,
) -> Result<(), E> {
    in_chunks(pool, items.len(), items.chunks(CHUNK), work, take)
}

/// [`each_in_order`] over the paths of the files of `files`, a walk's list: read from it a
/// chunk at a time, so that neither the paths nor the results of more than a chunk are held.
pub fn each_listed<T: Send, E>(
    pool: &rayon::ThreadPool,
    files: &FoundList,
    work: impl Fn(&PathBuf) -> T + Sync,
    take: impl FnMut(&PathBuf, T) -> Result<(), E>,
) -> Result<(), E> {
    in_chunks(pool, files.len(), files.path_chunks(CHUNK), work, take)
}

/// [`each_in_order`] over `chunks`, `total` items in all.
fn in_chunks<P: Sync, T: Send, E, C: AsRef<[P]>>(
    pool: &rayon::ThreadPool,
    total: usize,
    chunks: impl Iterator<Item = C>,
    work: impl Fn(&P) -> T + Sync,
    mut take: impl FnMut(&P, T) -> Result<(), E>,
) -> Result<(), E> {
    let bar = JobBar::new(total);
    let mut outcome = Ok(());
    for chunk in chunks {
        let chunk = chunk.as_ref();
        let results = counted_in(pool, chunk, &work, &bar);
        outcome = chunk
            .iter()
            .zip(results)
            .try_for_each(|(item, result)| take(item, result));
        if outcome.is_err() {
            break;
        }
    }
    bar.finish();
    outcome
}

/// Whether a job over the inputs named, `roots`, which gave `files` files, ends with a
/// summary: when it is more than one file, or a folder.
pub fn several(roots: &[PathBuf], files: usize) -> bool {
    files > 1 || roots.len() > 1 || roots.iter().any(|r| r.is_dir())
}

/// `count` and the noun after it, plural but for one: `1 file`, `2 files`.
pub fn counted(count: impl Into<u64>, one: &str, many: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { one } else { many })
}

//! The options that say how folders among a command's inputs are walked, and the walk's
//! report on standard error.

use std::io::Write;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use crate::ops::support::inputs::{self, FoundList, Links, Taken, Walk, WalkOptions};

/// How folders named among the inputs are read.
#[derive(Debug, Clone, Copy, ClapArgs)]
pub struct TreeOpts {
    /// Walk the folders named to their last level (without it, a folder gives its own files).
    /// Files found in folders are taken when their first bytes say they may hold device code.
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// Follow symbolic links found in folders (a link back into a folder being walked is a
    /// loop: reported and skipped). Without it they are skipped.
    #[arg(long)]
    pub follow: bool,
}

impl TreeOpts {
    /// The files of `roots`, each folder walked; each folder that cannot be read and each
    /// symbolic link loop is reported on standard error under the name `prog`. The flag says
    /// a folder could not be read. The list is held out of memory ([`FoundList`]).
    pub fn files(self, prog: &str, roots: &[PathBuf]) -> (FoundList, bool) {
        self.files_taking(prog, roots, Taken::MayHoldDeviceCode)
    }

    /// [`TreeOpts::files`], taking from folders the files `taken` says.
    pub fn files_taking(self, prog: &str, roots: &[PathBuf], taken: Taken) -> (FoundList, bool) {
        let walk = inputs::walk(
            roots,
            WalkOptions {
                recursive: self.recursive,
                links: self.links(),
                files: taken,
            },
        );
        report_walk(prog, &walk);
        tracing::info!(
            files = walk.files.len(),
            skipped = walk.skipped,
            "inputs walked"
        );
        (walk.files, !walk.errors.is_empty())
    }

    /// What becomes of symbolic links met in folders, as `--follow` says.
    pub fn links(self) -> Links {
        if self.follow {
            Links::Follow
        } else {
            Links::Skip
        }
    }

    /// [`TreeOpts::files`], the paths alone, held in memory: for the commands that hold
    /// something of every file anyway.
    pub fn paths(self, prog: &str, roots: &[PathBuf]) -> (Vec<PathBuf>, bool) {
        self.paths_taking(prog, roots, Taken::MayHoldDeviceCode)
    }

    /// [`TreeOpts::files_taking`], the paths alone.
    pub fn paths_taking(self, prog: &str, roots: &[PathBuf], taken: Taken) -> (Vec<PathBuf>, bool) {
        let (found, failed) = self.files_taking(prog, roots, taken);
        (found.paths().collect(), failed)
    }
}

/// Says on standard error, under the name `prog`, each folder of `walk` that could not be
/// read, each symbolic link loop and the special files skipped.
pub fn report_walk(prog: &str, walk: &Walk) {
    let stderr = std::io::stderr();
    for e in &walk.errors {
        let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
    }
    for path in &walk.loops {
        let _ = writeln!(
            stderr.lock(),
            "{prog}: warning: '{}': symbolic link loop, skipped",
            crate::io::shown(path)
        );
    }
    if walk.not_walked > 0 {
        let folders = match walk.not_walked {
            1 => "1 folder".to_string(),
            n => format!("{n} folders"),
        };
        let _ = writeln!(
            stderr.lock(),
            "{prog}: note: {folders} inside the folders named not walked; give -r to walk them"
        );
    }
    if let Some(special) = walk.special.summary() {
        let _ = writeln!(
            stderr.lock(),
            "{prog}: warning: skipped {special}: not regular files"
        );
    }
}

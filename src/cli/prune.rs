//! The summary lines of what `offload strip --prune` and `--prune-named` did to the files a
//! strip does not rewrite (files of bare device images wholly for other targets, files
//! without device code named for removed processors): the job itself is
//! [`crate::ops::rewrite::job`]'s.

use std::path::Path;

use crate::ops::prune::{Action, BareFile, Fate};
use crate::ops::rewrite::job::{Named, Pruning};
use crate::ops::rewrite::Mode;

/// How a summary says the flags that would prune a file kept: a file of bare device images
/// (`named` false) or one named for removed processors.
fn hint(pruning: Pruning, named: bool) -> &'static str {
    match (named, pruning.bare) {
        (false, _) => "--prune",
        (true, Action::Prune) => "--prune-named",
        (true, Action::Keep) => "--prune --prune-named",
    }
}

/// What became of a file, as a summary line ends.
fn fate_text(fate: Option<Fate>, hint: &str, mode: Mode) -> String {
    let would = match mode {
        Mode::DryRun => "would be ",
        Mode::Write => "",
    };
    match fate {
        Some(Fate::Left) => format!("{would}left as it is (use {hint} to remove it)"),
        Some(Fate::Copied) => format!("{would}copied as it is (use {hint} to leave it out)"),
        Some(Fate::Removed) => format!("{would}pruned (removed)"),
        Some(Fate::NotCopied) => format!("{would}pruned (not copied)"),
        None if mode == Mode::DryRun => "would not be copied (no device code)".into(),
        None => "not copied (no device code)".into(),
    }
}

/// The summary line of a file of bare device images only for other targets.
pub(crate) fn bare_line(
    file: &Path,
    bare: &BareFile,
    fate: Fate,
    pruning: Pruning,
    mode: Mode,
) -> String {
    format!(
        "{}: only device code for other targets ({}), {} bytes: {}\n",
        crate::io::shown(file),
        crate::io::shown(&bare.targets.join(",")),
        bare.size,
        fate_text(Some(fate), hint(pruning, false), mode)
    )
}

/// The summary line of a file without device code named for removed processors.
pub(crate) fn named_line(file: &Path, named: &Named, pruning: Pruning, mode: Mode) -> String {
    let (named, fate) = named;
    format!(
        "{}: no device code, named for removed processors ({}), {} bytes: {}\n",
        crate::io::shown(file),
        named.processors.join(","),
        named.size,
        fate_text(*fate, hint(pruning, true), mode)
    )
}

/// The files of one kind a job settled whole, for the totals.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    files: usize,
    bytes: u64,
    /// What became of them (the same for all of a kind in one job).
    fate: Option<Fate>,
}

impl Settled {
    /// Counts a file of `size` bytes that became `fate`.
    pub(crate) fn add(&mut self, size: u64, fate: Option<Fate>) {
        self.files += 1;
        self.bytes += size;
        self.fate = fate;
    }

    /// The totals line for the files of the kind `what`; empty when there are none.
    pub(crate) fn line(&self, what: &str, mode: Mode) -> String {
        if self.files == 0 {
            return String::new();
        }
        let verb = match self.fate {
            Some(Fate::Left) => "left",
            Some(Fate::Copied) => "copied",
            Some(Fate::Removed | Fate::NotCopied) => "pruned",
            None => "not copied",
        };
        let verb = match (mode, self.fate) {
            (Mode::Write, _) => verb.to_string(),
            (Mode::DryRun, None) => "would not be copied".into(),
            (Mode::DryRun, Some(_)) => format!("would be {verb}"),
        };
        format!(
            "total {what}: {} files, {} bytes {verb}\n",
            self.files, self.bytes
        )
    }
}

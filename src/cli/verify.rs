//! `offload verify`: inflate and hash every compressed bundle of files.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::ops::support::found::FoundList;

use clap::Parser;

use crate::cli::jobs::{self, counted, Work};
use crate::ops::support::inflating::Budget;
use crate::ops::verify::{self, Verified};

const PROG: &str = "offload verify";

/// Check every compressed bundle of files whole: inflate each stream to its end and compare
/// its size and hash with its header's, in parallel across bundles and files (-j). `offload
/// ls` and `offload extract` inflate only what they need and so do not check this. Prints
/// one line per file, in the order of the files, and for more than one a `total:` line; each
/// damaged bundle is an error naming the file, the section and the offset.
///
/// The compressed entries of CUDA fat binaries (LZ or zstd) are inflated to their end too,
/// a window at a time, and must give the size their header says: a file that has any gets
/// their count on its line, and a damaged one is an error naming the file, the section and
/// the offset.
///
/// Compressed offload binaries (version 3) are counted apart, in their own words: one
/// inflated whole while it was found (64 KiB or less) is checked then, a larger one is
/// inflated to its end and must give its declared size.
///
/// A `.kpack` archive: every code object is read whole (one stored compressed must inflate
/// to its declared size). A binary split by kpack: every archive its search paths name (or
/// `ROCM_KPACK_PATH` and `ROCM_KPACK_PATH_PREFIX`, as set) must hold every code object the
/// binary asks for, for every processor the archive is for, and each of the binary's code
/// objects must read; a second line per file counts them. Each problem is an error naming
/// the archive and the key.
///
/// Exit status: 0 when everything is sound, 1 when something is not or a file cannot be
/// read.
#[derive(Debug, Parser)]
#[command(name = "offload verify")]
pub(crate) struct Args {
    /// The files to check, and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general);

/// Runs `offload verify` with `args` (without the program name) and returns the exit status.
/// Each file's line goes out as it is checked, in order: nothing of a file is kept.
fn run(args: Args) -> i32 {
    let (files, walk_failed) = args.work.tree.files(PROG, &args.files);
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let checked = report(
        PROG,
        &pool,
        &files,
        Listed::No,
        args.general.max_decompressed,
        &mut out,
    );
    let written = checked.and_then(|report| {
        if jobs::several(&args.files, files.len()) {
            out.write_all(report.totals.lines().as_bytes())?;
        }
        out.flush()?;
        Ok(report)
    });
    match written {
        Ok(report) => i32::from(walk_failed || report.failed),
        Err(e) => crate::cli::stdout_failed(PROG, &mut std::io::stderr().lock(), &e),
    }
}

/// Whether the files were listed before they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// No: the damage found while looking for the compressed bundles is reported too.
    No,
    /// Yes (`offload ls --verify`): that damage was reported with the listing.
    Yes,
}

/// What checking several files found.
#[derive(Debug, Default)]
pub struct Totals {
    files: usize,
    /// Files with compressed bundles, or kpack archives to check.
    with_code: usize,
    /// Files that could not be read, or with something damaged.
    failed: usize,
    sound: usize,
    damaged: usize,
    stored: u64,
    inflated: u64,
    /// Files that are kpack archives or binaries split by kpack.
    kpack_files: usize,
    /// The code objects found sound, by archive: each archive and each code object counted
    /// once, however many split binaries use them.
    kpack_sound: std::collections::BTreeMap<(u64, u64), std::collections::BTreeSet<usize>>,
    /// Archives that are no file (standard input), and the code objects found sound in them.
    kpack_unnamed: (usize, usize),
    kpack_problems: usize,
    /// Compressed CUDA entries sound and damaged.
    cuda_sound: usize,
    cuda_damaged: usize,
    /// Compressed offload binaries sound and damaged.
    binaries_sound: usize,
    binaries_damaged: usize,
}

impl Totals {
    /// `total: 6 files, 4 with compressed bundles, 1 failed; 30 compressed bundles sound, 1
    /// damaged, 1234 bytes inflated to 5678`, and for kpack archives a line like the files'.
    pub fn lines(&self) -> String {
        let mut text = format!(
            "total: {}, {} with compressed bundles, {} failed; {} sound, {} damaged, {} bytes inflated to {}\n",
            counted(self.files as u64, "file", "files"),
            self.with_code,
            self.failed,
            counted(self.sound as u64, "compressed bundle", "compressed bundles"),
            self.damaged,
            self.stored,
            self.inflated,
        );
        if self.binaries_sound + self.binaries_damaged > 0 {
            text.push_str(&format!(
                "total: {}, {} damaged\n",
                binaries(self.binaries_sound),
                self.binaries_damaged,
            ));
        }
        if self.cuda_sound + self.cuda_damaged > 0 {
            text.push_str(&format!(
                "total: {}, {} damaged\n",
                cuda_entries(self.cuda_sound),
                self.cuda_damaged,
            ));
        }
        if self.kpack_files > 0 {
            text.push_str(&format!(
                "total: {} in {} sound, {}\n",
                counted(
                    (self.kpack_sound.values().map(|s| s.len()).sum::<usize>()
                        + self.kpack_unnamed.1) as u64,
                    "code object",
                    "code objects"
                ),
                counted(
                    (self.kpack_sound.len() + self.kpack_unnamed.0) as u64,
                    "kpack archive",
                    "kpack archives"
                ),
                counted(self.kpack_problems as u64, "problem", "problems"),
            ));
        }
        text
    }
}

/// What [`report`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// Whether anything was wrong.
    pub failed: bool,
    /// The totals over the files.
    pub totals: Totals,
}

/// Checks `files` (a walk's list) on `pool`, several at once, a chunk at a time; writes each
/// error to standard error under the name `prog` and one line per file to `out`, in the order
/// of `files`, as they are checked: `FILE: N compressed bundles sound, K damaged`. The error
/// is `out`'s (the checking stops there).
pub fn report(
    prog: &str,
    pool: &rayon::ThreadPool,
    files: &FoundList,
    listed: Listed,
    max_decompressed: u64,
    out: &mut dyn Write,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    // One budget for the files checked at once, as for the streams of one file.
    let budget = Budget::new();
    let mut text = String::new();
    jobs::each_listed(
        pool,
        files,
        |path| verify::verify_file_within(path, max_decompressed, &budget),
        |path, result| {
            report.totals.files += 1;
            match result {
                Ok(verified) => {
                    text.clear();
                    report.add(prog, path, &verified, listed, &mut text);
                    out.write_all(text.as_bytes())
                }
                Err(e) => {
                    report.failed = true;
                    report.totals.failed += 1;
                    let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {e}");
                    Ok(())
                }
            }
        },
    )?;
    Ok(report)
}

impl Report {
    /// Adds what checking the file `path` found: its errors to standard error, its lines to
    /// `text`.
    fn add(
        &mut self,
        prog: &str,
        path: &Path,
        verified: &Verified,
        listed: Listed,
        text: &mut String,
    ) {
        let problems = match listed {
            Listed::No => verified.problems.as_slice(),
            Listed::Yes => &[],
        };
        let stderr = std::io::stderr();
        for e in verified
            .bad
            .iter()
            .chain(&verified.binaries_bad)
            .chain(&verified.cuda_bad)
            .chain(problems)
        {
            let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
        }
        let totals = &mut self.totals;
        let damaged = verified.bad.len() + verified.problems.len();
        let cuda_damaged = verified.cuda_bad.len();
        let binaries_damaged = verified.binaries_bad.len();
        let kpack_bad = verified.kpack.as_ref().map_or(0, |k| k.bad.len());
        self.failed |= damaged + cuda_damaged + binaries_damaged > 0;
        totals.failed += usize::from(damaged + cuda_damaged + binaries_damaged + kpack_bad > 0);
        totals.with_code +=
            usize::from(verified.streams + verified.binaries > 0 || verified.kpack.is_some());
        let sound = verified.streams - verified.bad.len();
        totals.sound += sound;
        totals.damaged += damaged;
        totals.stored += verified.stored;
        totals.inflated += verified.inflated;
        let archive = verified.kpack.as_ref().is_some_and(|k| k.is_archive);
        let cuda_sound = verified.cuda - cuda_damaged;
        totals.cuda_sound += cuda_sound;
        totals.cuda_damaged += cuda_damaged;
        let binaries_sound = verified.binaries - binaries_damaged;
        totals.binaries_sound += binaries_sound;
        totals.binaries_damaged += binaries_damaged;
        if !archive {
            text.push_str(&format!(
                "{}: {sound} compressed bundle{} sound, {} damaged",
                crate::io::shown(path),
                if sound == 1 { "" } else { "s" },
                damaged,
            ));
            if verified.binaries > 0 {
                let sound = binaries(binaries_sound);
                text.push_str(&format!("; {sound}, {binaries_damaged} damaged"));
            }
            if verified.cuda > 0 {
                let entries = cuda_entries(cuda_sound);
                text.push_str(&format!("; {entries}, {cuda_damaged} damaged"));
            }
            text.push('\n');
        }
        self.add_kpack(prog, path, verified, text);
    }

    /// Adds what checking the kpack archives of the file `path` found, if it is a kpack
    /// archive or a binary split by kpack.
    fn add_kpack(&mut self, prog: &str, path: &Path, verified: &Verified, text: &mut String) {
        let Some(kpack) = &verified.kpack else {
            return;
        };
        for e in &kpack.bad {
            let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {e}");
        }
        self.failed |= !kpack.bad.is_empty();
        let totals = &mut self.totals;
        totals.kpack_files += 1;
        for (identity, sound) in &kpack.read {
            match identity {
                Some(identity) => totals
                    .kpack_sound
                    .entry(*identity)
                    .or_default()
                    .extend(sound),
                None => {
                    totals.kpack_unnamed.0 += 1;
                    totals.kpack_unnamed.1 += sound.len();
                }
            }
        }
        totals.kpack_problems += kpack.bad.len();
        text.push_str(&format!(
            "{}: {} code object{} in {} kpack archive{} sound, {} problem{}\n",
            crate::io::shown(path),
            kpack.sound,
            if kpack.sound == 1 { "" } else { "s" },
            kpack.archives,
            if kpack.archives == 1 { "" } else { "s" },
            kpack.bad.len(),
            if kpack.bad.len() == 1 { "" } else { "s" },
        ));
    }
}

/// `N compressed offload binaries sound`, `1 compressed offload binary sound`.
fn binaries(sound: usize) -> String {
    let noun = counted(
        sound as u64,
        "compressed offload binary",
        "compressed offload binaries",
    );
    format!("{noun} sound")
}

/// `N compressed CUDA entries sound`, `1 compressed CUDA entry sound`.
fn cuda_entries(sound: usize) -> String {
    let noun = counted(
        sound as u64,
        "compressed CUDA entry",
        "compressed CUDA entries",
    );
    format!("{noun} sound")
}

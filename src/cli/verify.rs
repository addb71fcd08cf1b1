//! `offload verify`: inflate and hash every compressed bundle of files.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::ops::verify;

const PROG: &str = "offload verify";

/// Check every compressed bundle of files whole: inflate each stream to its end and compare
/// its size and hash with its header's, in parallel across bundles. `offload ls` and
/// `offload extract` inflate only what they need and so do not check this. Prints one line
/// per file; each damaged bundle is an error naming the file, the section and the offset.
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
struct Args {
    /// The files to check, and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    tree: super::inputs::TreeOpts,
    #[command(flatten)]
    general: super::general::GeneralOpts,
}

/// Runs `offload verify` with `args` (without the program name) and returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let args: Args = match super::parse_args(PROG, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let (files, walk_failed) = args.tree.paths(PROG, &args.files);
    let mut text = String::new();
    let failed = walk_failed
        | report(
            PROG,
            &files,
            Listed::No,
            args.general.max_decompressed,
            &mut text,
        );
    match super::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
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

/// Checks `files`, writes each error to standard error under the name `prog`, and adds one
/// line per file to `text`: `FILE: N compressed bundles sound, K damaged`. Returns whether
/// anything was wrong.
pub fn report(
    prog: &str,
    files: &[PathBuf],
    listed: Listed,
    max_decompressed: u64,
    text: &mut String,
) -> bool {
    let stderr = std::io::stderr();
    let mut failed = false;
    for path in files {
        match verify::verify_file(path, max_decompressed) {
            Ok(verified) => {
                let problems = match listed {
                    Listed::No => verified.problems.as_slice(),
                    Listed::Yes => &[],
                };
                for e in verified.bad.iter().chain(problems) {
                    let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
                }
                failed |= !verified.bad.is_empty() || !verified.problems.is_empty();
                let sound = verified.streams - verified.bad.len();
                let archive = verified.kpack.as_ref().is_some_and(|k| k.is_archive);
                if !archive {
                    text.push_str(&format!(
                        "{}: {sound} compressed bundle{} sound, {} damaged\n",
                        path.display(),
                        if sound == 1 { "" } else { "s" },
                        verified.bad.len() + verified.problems.len(),
                    ));
                }
                if let Some(kpack) = &verified.kpack {
                    for e in &kpack.bad {
                        let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
                    }
                    failed |= !kpack.bad.is_empty();
                    text.push_str(&format!(
                        "{}: {} code object{} in {} kpack archive{} sound, {} problem{}\n",
                        path.display(),
                        kpack.sound,
                        if kpack.sound == 1 { "" } else { "s" },
                        kpack.archives,
                        if kpack.archives == 1 { "" } else { "s" },
                        kpack.bad.len(),
                        if kpack.bad.len() == 1 { "" } else { "s" },
                    ));
                }
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(stderr.lock(), "{prog}: error: {e}");
            }
        }
    }
    failed
}

//! `offload ls`: every device image in files, as a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::cli::jobs::{self, counted, Work};
use crate::ops::du::{self, FileUsage};
use crate::ops::{ls, readobj};

const PROG: &str = "offload ls";

/// List the device images in files: objects, executables, shared libraries, archives and bare
/// offload binaries; each cubin and PTX entry of CUDA fat binaries, with its SM
/// (`compute_XX` for PTX) and how it is stored; for a binary split by kpack, the code objects its `.kpack` archives hold
/// for it; and the code objects of `.kpack` archives. Several files are read at once (-j);
/// for more than one, the table ends with `total:` lines: the files, the device images, the
/// bytes they take stored and inflated, and the same per target (not with --json or --uri).
#[derive(Debug, Parser)]
#[command(name = "offload ls")]
pub(crate) struct Args {
    /// Print a JSON array with one object per image, in file order.
    #[arg(long, conflicts_with = "uri")]
    json: bool,
    /// Print addresses instead of the table. `--uri` (or `--uri=absolute`): one
    /// `file://ABSOLUTE-PATH#offset=N&size=N` per image stored uncompressed, a byte range of
    /// the file; for an image inside a compressed bundle,
    /// `file://ABSOLUTE-PATH#offset=N&size=N&entry=ID`, the compressed bundle's byte range and
    /// the entry's ID in the bundle it inflates to. Path and ID are percent-encoded as the
    /// code object URI syntax asks: every byte outside `[a-zA-Z0-9/_.~-]` as `%XX`. `--uri=readobj`: the lines `llvm-readobj --offloading` (LLVM 22) prints,
    /// `ENTRY-ID<TAB>file://PATH#offset=N&size=N`, for the same bundle entries it finds, the
    /// path as given; after a compressed bundle LLVM gives offsets in the decompressed bundle,
    /// and so does this.
    #[arg(long, value_name = "FORM", num_args = 0..=1, require_equals = true,
          default_missing_value = "absolute")]
    uri: Option<UriForm>,
    /// After the listing, inflate and hash every compressed bundle as `offload verify` does
    /// (a listing inflates each only up to its bundle's header): each damaged one is an error
    /// naming the file, the section and the offset, and the exit status is 1.
    #[arg(long)]
    verify: bool,
    /// The files to look into, and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: Work,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
}

/// The addresses `--uri` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UriForm {
    /// Absolute paths, and only byte ranges of the file.
    Absolute,
    /// `llvm-readobj --offloading`'s lines, byte for byte.
    Readobj,
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general);

/// Runs `offload ls` with `args` (without the program name) and returns the exit status: 0
/// when every file could be read, 1 otherwise (the files that could be read are still listed).
fn run(mut args: Args) -> i32 {
    let (files, walk_failed) = args.work.tree.paths(PROG, &args.files);
    let several = jobs::several(&args.files, files.len());
    args.files = files;
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    if args.uri == Some(UriForm::Readobj) {
        return readobj_lines(&pool, &args.files).max(i32::from(walk_failed));
    }
    let listed = jobs::each_file(&pool, &args.files, |path| {
        ls::list_file(path, args.general.max_decompressed)
    });
    let mut images = Vec::new();
    let mut uris = String::new();
    let mut totals = Totals::default();
    let mut failed = walk_failed;
    let stderr = std::io::stderr();
    for (path, result) in args.files.iter().zip(listed) {
        totals.files += 1;
        match result {
            Ok((found, problems)) => {
                let usage = du::listed_usage(path, &found);
                totals.with_code += usize::from(!usage.targets.is_empty());
                totals.usages.push(usage);
                if args.uri.is_some() {
                    uris.extend(
                        found
                            .iter()
                            .filter_map(|i| ls::uri(path, i))
                            .map(|u| u + "\n"),
                    );
                }
                images.extend(found);
                totals.failed += usize::from(!problems.is_empty());
                for problem in problems {
                    failed = true;
                    let _ = writeln!(stderr.lock(), "{PROG}: error: {problem}");
                }
            }
            Err(e) => {
                failed = true;
                totals.failed += 1;
                let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
            }
        }
    }
    // When no file could be read whole and nothing was found there is no listing: an empty
    // table would read as "no device code" to a script. A JSON listing asked for is still valid
    // JSON.
    if failed && images.is_empty() && totals.failed == totals.files && !args.json {
        return 1;
    }
    let text = match listing(&args, &images, uris) {
        Ok(mut text) => {
            // A summary or verdicts would break a JSON listing or a list of addresses.
            let table = !args.json && args.uri.is_none();
            if several && table {
                text.push_str(&totals.lines());
            }
            if args.verify {
                let mut verdicts = String::new();
                failed |= crate::cli::verify::report(
                    PROG,
                    &pool,
                    &args.files,
                    crate::cli::verify::Listed::Yes,
                    args.general.max_decompressed,
                    &mut verdicts,
                )
                .failed;
                if table {
                    text.push_str(&verdicts);
                }
            }
            text
        }
        Err(e) => {
            let _ = writeln!(stderr.lock(), "{PROG}: error: JSON: {e}");
            return 1;
        }
    };
    match crate::cli::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
    }
}

/// What a listing of several files found.
#[derive(Debug, Default)]
struct Totals {
    files: usize,
    /// Files with device images.
    with_code: usize,
    /// Files that could not be read, or were damaged somewhere.
    failed: usize,
    /// The device code of each file read, by target.
    usages: Vec<FileUsage>,
}

impl Totals {
    /// `total: 6 files, 5 with device code, 1 failed; 18 device images, 138890 bytes stored,
    /// 301234 inflated`, then the same per target, most stored bytes first.
    fn lines(&self) -> String {
        let targets = du::total(&self.usages);
        let images: u64 = targets.iter().map(|t| t.images).sum();
        let stored: u64 = targets.iter().map(|t| t.stored).sum();
        let inflated: u64 = targets.iter().map(|t| t.inflated).sum();
        let mut text = format!(
            "total: {}, {} with device code, {} failed; {}, {stored} bytes stored, {inflated} inflated\n",
            counted(self.files as u64, "file", "files"),
            self.with_code,
            self.failed,
            counted(images, "device image", "device images"),
        );
        for t in targets {
            text.push_str(&format!(
                "total {}: {}, {} bytes stored, {} inflated\n",
                crate::io::shown(&t.target),
                counted(t.images, "image", "images"),
                t.stored,
                t.inflated
            ));
        }
        text
    }
}

/// `--uri=readobj`: prints the lines `llvm-readobj --offloading` prints for `files`, and says
/// which files could not be read. The exit status: 0 when every file could be read, else 1.
fn readobj_lines(pool: &rayon::ThreadPool, files: &[PathBuf]) -> i32 {
    let mut text = String::new();
    let mut failed = false;
    let read = jobs::each_file(pool, files, |path| readobj::readobj_entries(path));
    for result in read {
        match result {
            Ok(entries) => text.extend(entries.iter().map(readobj::ReadobjEntry::line)),
            Err(e) => {
                failed = true;
                let _ = writeln!(std::io::stderr().lock(), "{PROG}: error: {e}");
            }
        }
    }
    match crate::cli::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
    }
}

/// The listing of `images` in the form `args` ask for (`uris`, their addresses, for --uri).
fn listing(args: &Args, images: &[ls::ImageRecord], uris: String) -> serde_json::Result<String> {
    Ok(if args.uri.is_some() {
        uris
    } else if args.json {
        serde_json::to_string_pretty(&ls::rows(images))? + "\n"
    } else {
        ls::table(images)
    })
}

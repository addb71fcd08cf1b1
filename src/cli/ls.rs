//! `offload ls`: every device image in files, as a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::cli::jobs::{self, counted, Work};
use crate::cli::streamed::JsonArray;
use crate::ops::du;
use crate::ops::support::columns::Spooled;
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
///
/// The files are read a chunk at a time and their images go out as they come (the table's
/// rows through a spooled table, since its widths need every row): memory follows the chunk,
/// not the number of files.
fn run(args: Args) -> i32 {
    let (files, walk_failed) = args.work.tree.files(PROG, &args.files);
    let several = jobs::several(&args.files, files.len());
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    if args.uri == Some(UriForm::Readobj) {
        let paths: Vec<PathBuf> = files.paths().collect();
        return readobj_lines(&pool, &paths).max(i32::from(walk_failed));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut listing = Listing::new(&args);
    let mut totals = Totals::default();
    let mut failed = walk_failed;
    let stderr = std::io::stderr();
    let listed = jobs::each_listed(
        &pool,
        &files,
        |path| ls::list_file(path, args.general.max_decompressed),
        |path, result| {
            totals.files += 1;
            match result {
                Ok((found, problems)) => {
                    let usage = du::listed_usage(path, &found);
                    totals.read += usize::from(problems.is_empty() || !found.is_empty());
                    totals.with_code += usize::from(!usage.targets.is_empty());
                    totals.tally.add(&usage);
                    totals.failed += usize::from(!problems.is_empty());
                    for problem in problems {
                        failed = true;
                        let _ = writeln!(stderr.lock(), "{PROG}: error: {problem}");
                    }
                    listing.add(path, &found, &mut out)
                }
                Err(e) => {
                    failed = true;
                    totals.failed += 1;
                    let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
                    Ok(())
                }
            }
        },
    );
    if let Err(e) = listed {
        return crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e);
    }
    // When no file could be read whole and nothing was found there is no listing: an empty
    // table would read as "no device code" to a script. A JSON listing asked for is still valid
    // JSON.
    if totals.read == 0 && failed && !args.json {
        return 1;
    }
    // A summary or verdicts would break a JSON listing or a list of addresses.
    let table = matches!(listing, Listing::Table { .. });
    let mut ended = listing.end(&mut out);
    if several && table {
        ended = ended.and_then(|()| out.write_all(totals.lines().as_bytes()));
    }
    if args.verify {
        // What is listed goes out before the files are read again.
        ended = ended.and_then(|()| out.flush());
        // The verdicts follow the table; the other forms leave them out.
        let mut sink = std::io::sink();
        let verdicts: &mut dyn Write = if table && ended.is_ok() {
            &mut out
        } else {
            &mut sink
        };
        match crate::cli::verify::report(
            PROG,
            &pool,
            &files,
            crate::cli::verify::Listed::Yes,
            args.general.max_decompressed,
            verdicts,
        ) {
            Ok(report) => failed |= report.failed,
            Err(e) => ended = Err(e),
        }
    }
    match ended.and_then(|()| out.flush()) {
        Ok(()) => i32::from(failed),
        Err(e) => crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e),
    }
}

/// The listing being written, in the form the arguments ask for.
enum Listing {
    /// The table: its rows kept until the last, and the number of the next image.
    Table { rows: Spooled, next: usize },
    /// The JSON array, written as the images come.
    Json(JsonArray),
    /// `--uri`: the addresses, written as the images come.
    Uris,
}

impl Listing {
    /// Nothing listed yet, in the form `args` ask for.
    fn new(args: &Args) -> Listing {
        if args.uri.is_some() {
            Listing::Uris
        } else if args.json {
            Listing::Json(JsonArray::new(0))
        } else {
            Listing::Table {
                rows: Spooled::new(&ls::TABLE_HEADER, &ls::TABLE_ALIGN),
                next: 0,
            }
        }
    }

    /// Lists `images`, those of the file at `path`, after the others.
    fn add(
        &mut self,
        path: &std::path::Path,
        images: &[ls::ImageRecord],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match self {
            Listing::Table { rows, next } => images.iter().try_for_each(|image| {
                rows.push(&ls::table_row(*next, image))?;
                *next += 1;
                Ok(())
            }),
            Listing::Json(array) => images
                .iter()
                .try_for_each(|image| array.push(out, &ls::Image::of(image))),
            Listing::Uris => images
                .iter()
                .filter_map(|image| ls::uri(path, image))
                .try_for_each(|uri| writeln!(out, "{uri}")),
        }
    }

    /// Writes what is left: the table, or the end of the JSON array.
    fn end(self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Listing::Table { rows, .. } => rows.write(out),
            Listing::Json(array) => array.end(out).and_then(|()| out.write_all(b"\n")),
            Listing::Uris => Ok(()),
        }
    }
}

/// What a listing of several files found.
#[derive(Debug, Default)]
struct Totals {
    files: usize,
    /// Files read whole, or in which device code was found.
    read: usize,
    /// Files with device images.
    with_code: usize,
    /// Files that could not be read, or were damaged somewhere.
    failed: usize,
    /// The device code of the files read, by target.
    tally: du::Tally,
}

impl Totals {
    /// `total: 6 files, 5 with device code, 1 failed; 18 device images, 138890 bytes stored,
    /// 301234 inflated`, then the same per target, most stored bytes first.
    fn lines(self) -> String {
        let targets = self.tally.total();
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

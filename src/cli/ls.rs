//! `offload ls`: every device image in files, as a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::ops::{ls, readobj};

const PROG: &str = "offload ls";

/// List the device images in files: objects, executables, shared libraries, archives and bare
/// offload binaries; each cubin and PTX entry of CUDA fat binaries, with its SM
/// (`compute_XX` for PTX) and how it is stored; for a binary split by kpack, the code objects its `.kpack` archives hold
/// for it; and the code objects of `.kpack` archives.
#[derive(Debug, Parser)]
#[command(name = "offload ls")]
struct Args {
    /// Print a JSON array with one object per image, in file order.
    #[arg(long, conflicts_with = "uri")]
    json: bool,
    /// Print addresses instead of the table. `--uri` (or `--uri=absolute`): one
    /// `file://ABSOLUTE-PATH#offset=N&size=N` per image stored uncompressed, a byte range of
    /// the file; for an image inside a compressed bundle,
    /// `file://ABSOLUTE-PATH#offset=N&size=N&entry=ID`, the compressed bundle's byte range and
    /// the entry's ID in the bundle it inflates to. `--uri=readobj`: the lines `llvm-readobj --offloading` (LLVM 22) prints,
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
    tree: super::inputs::TreeOpts,
    #[command(flatten)]
    general: super::general::GeneralOpts,
}

/// The addresses `--uri` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UriForm {
    /// Absolute paths, and only byte ranges of the file.
    Absolute,
    /// `llvm-readobj --offloading`'s lines, byte for byte.
    Readobj,
}

/// Runs `offload ls` with `args` (without the program name) and returns the exit status: 0
/// when every file could be read, 1 otherwise (the files that could be read are still listed).
pub fn run(args: &[String]) -> i32 {
    let mut args: Args = match super::parse_args(PROG, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let (files, walk_failed) = args.tree.paths(PROG, &args.files);
    args.files = files;
    if args.uri == Some(UriForm::Readobj) {
        return readobj_lines(&args.files).max(i32::from(walk_failed));
    }
    let mut images = Vec::new();
    let mut failed = walk_failed;
    let stderr = std::io::stderr();
    for path in &args.files {
        match ls::list_file(path, args.general.max_decompressed) {
            Ok((found, problems)) => {
                images.extend(found);
                for problem in problems {
                    failed = true;
                    let _ = writeln!(stderr.lock(), "{PROG}: error: {problem}");
                }
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
            }
        }
    }
    let text = match listing(&args, &images) {
        Ok(mut text) => {
            if args.verify {
                let mut verdicts = String::new();
                failed |= super::verify::report(
                    PROG,
                    &args.files,
                    super::verify::Listed::Yes,
                    args.general.max_decompressed,
                    &mut verdicts,
                );
                // The verdicts would break a JSON listing or a list of addresses.
                if !args.json && args.uri.is_none() {
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
    match super::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
    }
}

/// `--uri=readobj`: prints the lines `llvm-readobj --offloading` prints for `files`, and says
/// which files could not be read. The exit status: 0 when every file could be read, else 1.
fn readobj_lines(files: &[PathBuf]) -> i32 {
    let mut text = String::new();
    let mut failed = false;
    for path in files {
        match readobj::readobj_entries(path) {
            Ok(entries) => text.extend(entries.iter().map(readobj::ReadobjEntry::line)),
            Err(e) => {
                failed = true;
                let _ = writeln!(std::io::stderr().lock(), "{PROG}: error: {e}");
            }
        }
    }
    match super::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
    }
}

/// The listing of `images` in the form `args` ask for.
fn listing(args: &Args, images: &[ls::Image]) -> serde_json::Result<String> {
    Ok(if args.uri.is_some() {
        images
            .iter()
            .filter_map(ls::uri)
            .map(|u| format!("{u}\n"))
            .collect()
    } else if args.json {
        serde_json::to_string_pretty(images)? + "\n"
    } else {
        ls::table(images)
    })
}

//! `offload ls`: every device image in files, as a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::ops::ls;

const PROG: &str = "offload ls";

/// List the device images in files: objects, executables, shared libraries, archives and bare
/// offload binaries.
#[derive(Debug, Parser)]
#[command(name = "offload ls")]
struct Args {
    /// Print a JSON array with one object per image, in file order.
    #[arg(long, conflicts_with = "uri")]
    json: bool,
    /// Print one `file://PATH#offset=N&size=N` address per uncompressed image.
    #[arg(long)]
    uri: bool,
    /// The files to look into.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    general: super::general::GeneralOpts,
}

/// Runs `offload ls` with `args` (without the program name) and returns the exit status: 0
/// when every file could be read, 1 otherwise (the files that could be read are still listed).
pub fn run(args: &[String]) -> i32 {
    let args: Args = match super::parse_args(PROG, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    args.general.install_log();
    let mut images = Vec::new();
    let mut failed = false;
    let stderr = std::io::stderr();
    for path in &args.files {
        match ls::list_file(path) {
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
        Ok(text) => text,
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

/// The listing of `images` in the form `args` ask for.
fn listing(args: &Args, images: &[ls::Image]) -> serde_json::Result<String> {
    Ok(if args.uri {
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

//! `offload ls`: every device image in files, as a table or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::ops::ls;

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
}

/// Runs `offload ls` with `args` (without the program name) and returns the exit status: 0
/// when every file could be read, 1 otherwise (the files that could be read are still listed).
pub fn run(args: &[String]) -> i32 {
    let args = match Args::try_parse_from(
        std::iter::once("offload ls".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let mut images = Vec::new();
    let mut failed = false;
    let stderr = std::io::stderr();
    for path in &args.files {
        match ls::list_file(path) {
            Ok((found, problems)) => {
                images.extend(found);
                for problem in problems {
                    failed = true;
                    let _ = writeln!(stderr.lock(), "offload ls: error: {problem}");
                }
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(stderr.lock(), "offload ls: error: {e}");
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.uri {
        images
            .iter()
            .filter_map(ls::uri)
            .try_for_each(|u| writeln!(out, "{u}"))
    } else if args.json {
        serde_json::to_writer_pretty(&mut out, &images)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        out.write_all(ls::table(&images).as_bytes())
    };
    if written.is_err() {
        return 1;
    }
    i32::from(failed)
}

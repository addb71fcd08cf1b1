//! `offload du`: how many bytes of device code each target takes, per file and in total.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::ops::du::{self, FileUsage, Usage};
use crate::ops::rewrite::{Change, Ptx, RewriteConfig};
use crate::ops::support::columns::{render, Align};
use crate::target::target_id::TargetIdBuf;

const PROG: &str = "offload du";

/// Show where the bytes of device code go: per target (processor, generic target, SPIR-V,
/// CUDA SM or PTX), per file and in total, as stored in the file and inflated, most stored
/// bytes first. Only headers are read (a compressed bundle up to its bundle's header), so a
/// tree of large libraries takes little time. With --keep, how many stored bytes `offload
/// strip --keep` with the same target IDs would remove (a file that is a bare code object
/// counts whole: what `strip --prune` would remove).
///
/// Exit status: 0 when every file could be read, 1 otherwise (the others are still counted).
#[derive(Debug, Parser)]
#[command(name = "offload du")]
pub(crate) struct Args {
    /// Files and folders (their files; with -r, their trees).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    work: crate::cli::jobs::Work,
    /// Print one JSON object: `files` (each with its `targets`) and `total`.
    #[arg(long)]
    json: bool,
    /// Count what stripping to these devices would remove (the rule of `strip --keep`);
    /// repeat for several.
    #[arg(long)]
    keep: Vec<TargetIdBuf>,
    #[command(flatten)]
    general: crate::cli::general::GeneralOpts,
}

/// The JSON `--json` prints.
#[derive(serde::Serialize)]
struct Report<'a> {
    files: &'a [FileUsage],
    total: &'a [Usage],
}

crate::cli::subcommand::subcommand!(Args, PROG, run, general);

/// Runs `offload du` with `args` (without the program name) and returns the exit status.
fn run(args: Args) -> i32 {
    let (files, mut failed) = args.work.tree.paths(PROG, &args.files);
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    let keep = (!args.keep.is_empty()).then(|| RewriteConfig {
        change: Change::Keep(args.keep.clone()),
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    });
    let mut usages = Vec::new();
    let stderr = std::io::stderr();
    let counted = crate::cli::jobs::each_file(&pool, &files, |path| {
        du::file_usage(path, args.general.max_decompressed, keep.as_ref())
    });
    for result in counted {
        match result {
            Ok(usage) => usages.push(usage),
            Err(e) => {
                failed = true;
                let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
            }
        }
    }
    // When no file could be read there is nothing to count: an empty table would read as "no
    // device code" to a script. A JSON report asked for is still valid JSON.
    if usages.is_empty() && failed && !args.json {
        return 1;
    }
    let total = du::total(&usages);
    let text = if args.json {
        match serde_json::to_string_pretty(&Report {
            files: &usages,
            total: &total,
        }) {
            Ok(json) => json + "\n",
            Err(e) => {
                let _ = writeln!(stderr.lock(), "{PROG}: error: JSON: {e}");
                return 1;
            }
        }
    } else {
        table(&usages, &total, keep.is_some())
    };
    match crate::cli::print(PROG, &text) {
        Ok(()) => i32::from(failed),
        Err(code) => code,
    }
}

/// The table: a block per file, then the total.
fn table(files: &[FileUsage], total: &[Usage], keep: bool) -> String {
    let mut header = vec!["TARGET", "IMAGES", "STORED", "INFLATED"];
    if keep {
        header.push("REMOVED");
    }
    header.push("FILE");
    let row = |usage: &Usage, file: &std::ffi::OsStr| {
        let mut row: Vec<std::ffi::OsString> = vec![
            usage.target.clone().into(),
            usage.images.to_string().into(),
            usage.stored.to_string().into(),
            usage.inflated.to_string().into(),
        ];
        if keep {
            row.push(usage.removed.unwrap_or(0).to_string().into());
        }
        row.push(file.to_owned());
        row
    };
    let mut rows = Vec::new();
    for file in files {
        // A package's members, then its totals.
        for member in &file.members {
            rows.extend(
                member
                    .targets
                    .iter()
                    .map(|u| row(u, member.path.as_os_str())),
            );
        }
        rows.extend(file.targets.iter().map(|u| row(u, file.path.as_os_str())));
    }
    rows.extend(total.iter().map(|u| row(u, "(total)".as_ref())));
    let sum = |f: fn(&Usage) -> u64| total.iter().map(f).sum::<u64>();
    let mut all = Usage {
        target: "(all)".into(),
        images: sum(|u| u.images),
        stored: sum(|u| u.stored),
        inflated: sum(|u| u.inflated),
        removed: None,
    };
    if keep {
        all.removed = Some(sum(|u| u.removed.unwrap_or(0)));
    }
    rows.push(row(&all, "(total)".as_ref()));
    // The target on the left, the numbers on the right, the file last.
    let mut align = vec![Align::Right; header.len()];
    align[0] = Align::Left;
    align[header.len() - 1] = Align::Left;
    render(&header, &rows, &align)
}

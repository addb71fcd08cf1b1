//! `offload du`: how many bytes of device code each target takes, per file and in total.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::cli::streamed::JsonArray;
use crate::ops::du::{self, FileUsage, Usage};
use crate::ops::rewrite::{Change, Ptx, RewriteConfig};
use crate::ops::support::columns::{render, Align, Spooled};
use crate::ops::support::inputs::FoundList;
use crate::target::target_id::TargetIdBuf;

const PROG: &str = "offload du";

/// Show where the bytes of device code go: per target (processor, generic target, SPIR-V,
/// CUDA SM or PTX), per file and in total, as stored in the file and inflated, most stored
/// bytes first. Only headers are read (a compressed bundle up to its bundle's header), so a
/// tree of large libraries takes little time. With --keep, how many stored bytes `offload
/// strip --keep` with the same target IDs would remove (a file that is a bare code object
/// counts whole: what `strip --prune` would remove). With --html, the same as a treemap in
/// one self-contained HTML page. With --kernels, which functions take the bytes instead, per
/// target, from the symbol tables of the code objects and cubins, and what is stored more
/// than once.
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
    /// Write a treemap of the bytes (by file, section and target, hatched what --keep would
    /// remove) to PATH as one self-contained HTML page; `-` writes it to standard output
    /// instead of the report.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// List each function's code size per target instead (kernels and device functions, from
    /// the symbol tables), the largest first, and the code objects and functions stored more
    /// than once with the bytes keeping one copy would save.
    #[arg(long, conflicts_with_all = ["keep", "html"])]
    kernels: bool,
    /// With --kernels: list only the N functions with the most bytes.
    #[arg(long, value_name = "N", requires = "kernels")]
    top: Option<usize>,
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
    let (files, mut failed) = args.work.tree.files(PROG, &args.files);
    let pool = match args.work.pool(PROG) {
        Ok(pool) => pool,
        Err(code) => return code,
    };
    if args.kernels {
        return kernels(&args, &pool, &files, failed);
    }
    let to_stdout = args.html.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout && args.json {
        eprintln!("{PROG}: error: --html - writes the page to standard output: --json cannot");
        return 2;
    }
    let keep = (!args.keep.is_empty()).then(|| RewriteConfig {
        change: Change::Keep(args.keep.clone()),
        allow_empty: true,
        max_decompressed: args.general.max_decompressed,
        ptx: Ptx::AsAsked,
    });
    if args.html.is_none() {
        return streamed(&args, &pool, &files, keep.as_ref(), failed);
    }
    // The page is made of every file's usage: they are held, and so are their paths.
    let files: Vec<PathBuf> = files.paths().collect();
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
    if let Some(path) = &args.html {
        let keep: Vec<String> = args.keep.iter().map(ToString::to_string).collect();
        let page = du::html::page(&usages, &total, &keep);
        if let Err(e) = write_page(path, &page) {
            let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
            return 1;
        }
        if to_stdout {
            return i32::from(failed);
        }
    }
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

/// `du` without a page: the files of `files` (read on `pool`, a chunk at a time) counted and
/// their rows written as they come, JSON straight out and the table's rows spooled, so that
/// memory does not grow with the number of files; `failed` says whether some file named could
/// not be walked.
fn streamed(
    args: &Args,
    pool: &rayon::ThreadPool,
    files: &FoundList,
    keep: Option<&RewriteConfig>,
    mut failed: bool,
) -> i32 {
    let stderr = std::io::stderr();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut tally = du::Tally::default();
    let mut read = false;
    let (header, align) = table_form(keep.is_some());
    let mut rows = Spooled::new(&header, &align);
    let mut array = JsonArray::new(1);
    if args.json {
        if let Err(e) = out.write_all(b"{\n  \"files\": ") {
            return crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e);
        }
    }
    let counted = crate::cli::jobs::each_listed(
        pool,
        files,
        |path| du::file_usage(path, args.general.max_decompressed, keep),
        |_, result| match result {
            Ok(usage) => {
                read = true;
                tally.add(&usage);
                if args.json {
                    array.push(&mut out, &usage)
                } else {
                    file_rows(&usage, keep.is_some()).try_for_each(|row| rows.push(&row))
                }
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
                Ok(())
            }
        },
    );
    // When no file could be read there is nothing to count: an empty table would read as "no
    // device code" to a script. A JSON report asked for is still valid JSON.
    if counted.is_ok() && !read && failed && !args.json {
        return 1;
    }
    let total = tally.total();
    let written = counted.and_then(|()| {
        if args.json {
            array.end(&mut out)?;
            out.write_all(b",\n  \"total\": ")?;
            crate::cli::streamed::write_nested(&mut out, &total, 1)?;
            out.write_all(b"\n}\n")
        } else {
            total_rows(&total, keep.is_some()).try_for_each(|row| rows.push(&row))?;
            rows.write(&mut out)
        }
    });
    match written.and_then(|()| out.flush()) {
        Ok(()) => i32::from(failed),
        Err(e) => crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e),
    }
}

/// Writes `page` to `path` (`-`: standard output), whole or not at all.
fn write_page(path: &std::path::Path, page: &str) -> crate::Result<()> {
    let mut output = crate::io::Output::create(path)?;
    output.write_bytes(page.as_bytes())?;
    Ok(output.commit()?)
}

/// `du --kernels`: the functions of `files` (read on `pool`), as a table or JSON; `failed`
/// says whether some file named could not be walked.
fn kernels(args: &Args, pool: &rayon::ThreadPool, files: &FoundList, mut failed: bool) -> i32 {
    let stderr = std::io::stderr();
    // Each file is counted in as it is read, in order, and let go.
    let mut reporting = du::report::Reporting::default();
    let mut read = false;
    let counted: Result<(), std::convert::Infallible> = crate::cli::jobs::each_listed(
        pool,
        files,
        |path| du::kernels::file_kernels(path, args.general.max_decompressed),
        |_, result| {
            match result {
                Ok(one) => {
                    read = true;
                    reporting.add(&one);
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(stderr.lock(), "{PROG}: error: {e}");
                }
            }
            Ok(())
        },
    );
    let Ok(()) = counted;
    if !read && failed && !args.json {
        return 1;
    }
    let report = match reporting.finish(args.top) {
        Ok(report) => report,
        Err(e) => {
            let _ = writeln!(
                stderr.lock(),
                "{PROG}: error: the places of the code objects could not be kept in a \
                 temporary file: {e}"
            );
            return 1;
        }
    };
    // Written as it is made: the rows of a large library are tens of megabytes of text.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
    } else {
        write_kernel_table(&report, &mut out)
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => i32::from(failed),
        Err(e) => crate::cli::stdout_failed(PROG, &mut stderr.lock(), &e),
    }
}

/// The cells of a function's row in `du --kernels`.
fn kernel_row(k: du::report::Kernel<'_>) -> [std::ffi::OsString; 8] {
    let files = match k.files.len() {
        1 => k.files.first().to_string(),
        n => format!("{} (+{} more)", k.files.first(), n - 1),
    };
    [
        k.bytes.to_string().into(),
        k.size.to_string().into(),
        k.copies.to_string().into(),
        k.saved.to_string().into(),
        k.target.into(),
        (if k.kernel { "kernel" } else { "function" }).into(),
        k.name.into(),
        files.into(),
    ]
}

/// Writes the text of `du --kernels` to `out`, a row at a time: a row per function, then the
/// code objects stored more than once, then the sums.
fn write_kernel_table(report: &du::report::Report, out: &mut dyn Write) -> std::io::Result<()> {
    let header = [
        "BYTES", "SIZE", "COPIES", "SAVED", "TARGET", "KIND", "NAME", "FILE",
    ];
    let mut align = vec![Align::Right; header.len()];
    for column in align.iter_mut().skip(4) {
        *column = Align::Left;
    }
    let rows = || report.kernels().map(kernel_row);
    crate::ops::support::columns::write_table(&header, rows, &align, out)?;
    if report.code_objects().len() > 0 {
        out.write_all(b"\nStored more than once:\n")?;
        let header = ["SIZE", "COPIES", "SAVED", "TARGET", "PLACES"];
        // A row at a time, made twice (to measure, then to write), its places written one
        // at a time as they are read back: a code object copied into every file of a tree
        // has a place per file.
        let rows = || {
            report.code_objects_unplaced().map(|c| {
                [
                    c.size.to_string(),
                    c.copies.to_string(),
                    c.saved.to_string(),
                    c.target,
                ]
            })
        };
        let align = [Align::Right, Align::Right, Align::Right, Align::Left];
        let mut places = |k: usize, piece: &mut dyn FnMut(&str) -> std::io::Result<()>| {
            for (n, p) in report.places(k).enumerate() {
                if n > 0 {
                    piece(", ")?;
                }
                piece(&place(&p))?;
            }
            Ok(())
        };
        crate::ops::support::columns::write_table_with_tail(
            &header,
            rows,
            &align,
            &mut places,
            out,
        )?;
    }
    let mut text = String::new();
    let t = &report.total;
    text.push_str(&format!(
        "\n{} device images, {} bytes; {} functions, {} bytes. Keeping one copy of each would \
         save {} bytes of code objects stored more than once, {} bytes of functions.\n",
        t.code_objects,
        t.code_object_bytes,
        t.functions,
        t.function_bytes,
        t.saved_code_objects,
        t.saved_functions
    ));
    out.write_all(text.as_bytes())
}

/// Where a copy is, for people: the file, member, section and offset.
fn place(place: &du::kernels::Place) -> String {
    let mut text = place.file.clone();
    if let Some(member) = &place.member {
        text = format!("{text}!{member}");
    }
    if !place.section.is_empty() {
        text = format!("{text} {}", place.section);
    }
    if let Some(offset) = place.offset {
        text = format!("{text} @{offset}");
    }
    text
}

/// The table's header and the alignment of its columns: the target on the left, the numbers
/// on the right, the file last.
fn table_form(keep: bool) -> (Vec<&'static str>, Vec<Align>) {
    let mut header = vec!["TARGET", "IMAGES", "STORED", "INFLATED"];
    if keep {
        header.push("REMOVED");
    }
    header.push("FILE");
    let mut align = vec![Align::Right; header.len()];
    align[0] = Align::Left;
    align[header.len() - 1] = Align::Left;
    (header, align)
}

/// The table's row of `usage` in `file`.
fn usage_row(usage: &Usage, file: &std::ffi::OsStr, keep: bool) -> Vec<std::ffi::OsString> {
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
}

/// The table's rows of one file: a package's members, then its totals.
fn file_rows(file: &FileUsage, keep: bool) -> impl Iterator<Item = Vec<std::ffi::OsString>> + '_ {
    let members = file.members.iter().flat_map(move |member| {
        member
            .targets
            .iter()
            .map(move |u| usage_row(u, member.path.as_os_str(), keep))
    });
    let own = (file.targets.iter()).map(move |u| usage_row(u, file.path.as_os_str(), keep));
    members.chain(own)
}

/// The table's last rows: the total per target, then of all targets.
fn total_rows(total: &[Usage], keep: bool) -> impl Iterator<Item = Vec<std::ffi::OsString>> + '_ {
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
    let all = usage_row(&all, "(total)".as_ref(), keep);
    (total.iter())
        .map(move |u| usage_row(u, "(total)".as_ref(), keep))
        .chain(std::iter::once(all))
}

/// The table: a block per file, then the total.
fn table(files: &[FileUsage], total: &[Usage], keep: bool) -> String {
    let (header, align) = table_form(keep);
    let rows: Vec<Vec<std::ffi::OsString>> = (files.iter())
        .flat_map(|file| file_rows(file, keep))
        .chain(total_rows(total, keep))
        .collect();
    render(&header, &rows, &align)
}

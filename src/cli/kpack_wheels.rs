//! `offload kpack` of wheels: each fat wheel split into a host wheel and device wheels, in
//! parallel, with a table of what was written and what a user of each processor downloads;
//! or (`--merge`) a host wheel and its device wheels merged into one.

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::format::kpack::Scheme;
use crate::ops::kpack::{self, WheelConfig, WheelSummary};

/// Whether every input is a `.whl` file or an unpacked wheel (so `offload kpack` takes them
/// as wheels).
pub(super) fn all_wheels(files: &[PathBuf]) -> bool {
    !files.is_empty()
        && files.iter().all(|f| {
            (f.extension().is_some_and(|e| e == "whl")
                && std::fs::metadata(f).is_ok_and(|m| m.is_file()))
                || is_unpacked_wheel(f)
        })
}

/// Whether `folder` holds an unpacked wheel: a `.dist-info` folder at its top.
fn is_unpacked_wheel(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            e.file_name().as_encoded_bytes().ends_with(b".dist-info")
                && e.file_type().is_ok_and(|t| t.is_dir())
        })
    })
}

/// The command's name in messages.
pub(super) const PROG: &str = "offload kpack";

/// What `offload kpack` is asked to do with wheels.
pub(super) struct WheelRequest {
    pub(super) files: Vec<PathBuf>,
    pub(super) output: PathBuf,
    pub(super) merge: bool,
    pub(super) compression: Option<String>,
    pub(super) prefix: Option<String>,
    pub(super) overlay_root: Option<String>,
    pub(super) device_requires: Vec<String>,
    pub(super) max_decompressed: u64,
}

/// Runs `offload kpack` on wheels.
pub(super) fn run(args: WheelRequest) -> i32 {
    let wheels = match wheels_of(&args.files) {
        Ok(wheels) => wheels,
        Err(code) => return code,
    };
    if args.merge {
        if args.prefix.is_some() || args.overlay_root.is_some() || !args.device_requires.is_empty()
        {
            return usage_error("--merge of wheels takes the wheels and -o only");
        }
        let merged = kpack::merge_wheels(&wheels, &args.output, args.max_decompressed);
        return finish(merged.map(|m| {
            format!(
                "{}: {} binaries given their code back from {} archives\n",
                crate::io::shown(&m.path),
                m.binaries.len(),
                m.archives.len()
            )
        }));
    }
    let scheme = match scheme(args.compression.as_deref(), Scheme::ZstdPerKernel) {
        Ok(scheme) => scheme,
        Err(code) => return code,
    };
    let config = WheelConfig {
        output: args.output,
        prefix: args.prefix,
        overlay: args.overlay_root,
        requires: args.device_requires,
        scheme,
        max_decompressed: args.max_decompressed,
    };
    let results: Vec<_> = wheels
        .par_iter()
        .map(|wheel| kpack::split_wheel(wheel, &config))
        .collect();
    let mut failed = 0;
    let mut text = String::new();
    for result in results {
        match result {
            Ok(summary) => text.push_str(&table(&summary)),
            Err(e) => {
                failed += 1;
                let _ = writeln!(std::io::stderr(), "{PROG}: error: {e}");
            }
        }
    }
    match finish(Ok(text)) {
        0 => i32::from(failed > 0),
        code => code,
    }
}

/// The wheels named: each `.whl` or unpacked wheel given, each `.whl` in each other folder
/// given (sorted); a usage
/// error's status when there are none.
fn wheels_of(files: &[PathBuf]) -> Result<Vec<PathBuf>, i32> {
    let mut wheels = Vec::new();
    for file in files {
        if file.is_dir() && !is_unpacked_wheel(file) {
            let entries = match std::fs::read_dir(file) {
                Ok(entries) => entries,
                Err(e) => return Err(usage_error(&format!("'{}': {e}", crate::io::shown(file)))),
            };
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "whl") && p.is_file())
                .collect();
            found.sort();
            wheels.extend(found);
        } else {
            wheels.push(file.clone());
        }
    }
    if wheels.is_empty() {
        return Err(usage_error("no wheel (.whl) among the inputs"));
    }
    Ok(wheels)
}

/// The packages written for one fat wheel with their sizes, then what a user of each
/// processor downloads against the fat wheel.
fn table(summary: &WheelSummary) -> String {
    let mut rows: Vec<[String; 3]> = vec![["PACKAGE".into(), "SIZE".into(), "HOLDS".into()]];
    rows.push([
        shown_name(&summary.host),
        summary.host_size.to_string(),
        format!("host: {} binaries split", summary.binaries.len()),
    ]);
    for device in &summary.devices {
        rows.push([
            shown_name(&device.path),
            device.size.to_string(),
            format!("{}: {}", device.key, device.processors.join(" ")),
        ]);
    }
    let mut text = format!(
        "{}: {} bytes, split into {} packages\n",
        crate::io::shown(&summary.input),
        summary.input_size,
        summary.devices.len() + 1
    );
    text.push_str(&columns(&rows));
    let mut targets: Vec<[String; 3]> =
        vec![["PROCESSOR".into(), "DOWNLOAD".into(), "OF FAT".into()]];
    for processor in summary.processors() {
        if let Some(bytes) = summary.download_for(processor) {
            let share = if summary.input_size == 0 {
                0.0
            } else {
                100.0 * bytes as f64 / summary.input_size as f64
            };
            targets.push([
                processor.to_string(),
                bytes.to_string(),
                format!("{share:.1}%"),
            ]);
        }
    }
    text.push_str(&columns(&targets));
    text
}

fn shown_name(path: &Path) -> String {
    crate::io::shown(Path::new(path.file_name().unwrap_or_default())).into_owned()
}

/// Rows in columns, each as wide as its widest cell, numbers to the right.
fn columns(rows: &[[String; 3]]) -> String {
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let (a, b) = (width(0), width(1));
    rows.iter()
        .map(|r| format!("{:<a$}  {:>b$}  {}\n", r[0], r[1], r[2]).replace(" \n", "\n"))
        .collect()
}

/// The storage scheme `--compression` names, `default` when it names none; a usage error's
/// exit status for a name not known.
pub(super) fn scheme(given: Option<&str>, default: Scheme) -> Result<Scheme, i32> {
    match given {
        None => Ok(default),
        Some("none") => Ok(Scheme::None),
        Some("zstd" | "zstd-per-kernel") => Ok(Scheme::ZstdPerKernel),
        Some(other) => Err(usage_error(&format!(
            "unknown compression '{other}' (none or zstd)"
        ))),
    }
}

/// Prints a usage error; the exit status.
pub(super) fn usage_error(message: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "{PROG}: error: {message}");
    2
}

/// Prints the text of a job done, or its error; the exit status.
pub(super) fn finish(result: crate::error::Result<String>) -> i32 {
    match result {
        Ok(text) => crate::cli::print(PROG, &text).map_or_else(|code| code, |()| 0),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{PROG}: error: {e}");
            1
        }
    }
}

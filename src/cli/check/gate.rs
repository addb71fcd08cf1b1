//! What `check --require` prints: a table of files against the required targets, a line per
//! failure, and a last line saying how the gate ended; or GitHub annotations, or JSON. The
//! files are checked once per machine, each judged as it comes ([`Gating`]); the gate's rows
//! are read back a row at a time as they are written, so nothing of a file is held.

use std::io::Write;

use crate::cli::jobs::JobBar;
use crate::cli::streamed::{write_nested, JsonArray};
use crate::error::Error;
use crate::loads::kpack_search;
use crate::ops::check::require::{self, Gate, Gating};
use crate::ops::check::{self, CatalogueEnvironment, Device};
use crate::ops::support::found::{FoundList, Records};
use crate::target::lists::Requirement;

/// What the gate is asked for.
pub(super) struct Asked<'a> {
    /// The requirements, in order.
    pub required: &'a [Requirement],
    /// For each requirement, the machine and device it is judged on.
    pub at: &'a [(usize, usize)],
    /// The devices of each machine.
    pub devices_of: &'a [Vec<Device>],
    /// Whether images embedded as data count.
    pub embedded: bool,
    /// The decompression limit.
    pub max_decompressed: u64,
}

/// The errors of reading the files: said on standard error as they come, or (for the
/// annotations) kept, a message a record, until the gate is written.
pub(super) struct Errors {
    kept: Option<Records>,
    /// How many.
    pub count: usize,
}

impl Errors {
    /// Errors said as they come, or kept when `keep` says so.
    pub fn new(keep: bool) -> Errors {
        Errors {
            kept: keep.then(Records::default),
            count: 0,
        }
    }

    /// Says or keeps `error`.
    fn add(&mut self, error: &Error) -> std::io::Result<()> {
        self.count += 1;
        match &mut self.kept {
            Some(kept) => {
                let mut record = Vec::new();
                crate::ops::support::found::put_bytes(&mut record, error.to_string().as_bytes());
                kept.append(&record)
            }
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{}: error: {error}", super::PROG);
                Ok(())
            }
        }
    }

    /// Ends the adding: the errors kept are read back from here on.
    pub fn seal(&mut self) -> std::io::Result<()> {
        self.kept.as_mut().map_or(Ok(()), Records::seal)
    }

    /// The messages kept, in order.
    fn messages(&self) -> impl Iterator<Item = String> + '_ {
        let mut bytes = self.kept.as_ref().map_or(&[][..], Records::bytes);
        std::iter::from_fn(move || {
            let (message, rest) = crate::ops::support::found::take_bytes(bytes)?;
            bytes = rest;
            Some(String::from_utf8_lossy(message).into_owned())
        })
    }
}

/// The gate of `asked` on `files`, checked once per machine on `pool`, the errors of the
/// first check handed to `errors`.
pub(super) fn check(
    asked: &Asked,
    pool: &rayon::ThreadPool,
    files: &FoundList,
    errors: &mut Errors,
) -> std::io::Result<Gate> {
    let kpack_env = kpack_search::Environment::from_vars(|name| std::env::var(name).ok());
    let catalogue_env = CatalogueEnvironment::from_vars(|name| std::env::var_os(name));
    let env = check::Environment::of_process();
    let bar = JobBar::new(0);
    let mut gating = Gating::new(asked.required, asked.at, asked.embedded);
    let mut said = |e: Error| errors.add(&e);
    // A package is read once for every machine, after the other files, as a check orders it.
    let (others, packages) = require::apart_packages(files)?;
    for (machine, devices) in asked.devices_of.iter().enumerate() {
        check::check_each(
            pool,
            others.as_ref().unwrap_or(files),
            devices,
            &env,
            &kpack_env,
            asked.max_decompressed,
            &bar,
            &mut gating.machine(machine, devices, &catalogue_env, &mut said),
        )?;
    }
    gating.packages(
        pool,
        &packages,
        asked.devices_of,
        &catalogue_env,
        asked.max_decompressed,
        &mut said,
    )?;
    gating.finish()
}

/// The cells of each row of the table: the file, then how each target loads (`MISSING` when
/// it fails).
fn rows(gate: &Gate) -> impl Iterator<Item = Vec<String>> + '_ {
    gate.rows().map(|row| {
        let mut cells = vec![crate::io::shown(&row.path).into_owned()];
        cells.extend(row.verdicts.into_iter().map(|v| {
            if v.ok {
                v.loads
            } else {
                "MISSING".to_string()
            }
        }));
        cells
    })
}

/// Writes the table (files down, required targets across), then a line per failure and the
/// verdict line, to `out`.
pub(super) fn table(gate: &Gate, errors: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let mut head = vec!["FILE".to_string()];
    head.extend(gate.required.iter().map(|r| r.written.clone()));
    let mut widths: Vec<usize> = head.iter().map(|s| s.chars().count()).collect();
    for row in rows(gate) {
        for (w, cell) in widths.iter_mut().zip(&row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &[String], out: &mut dyn Write| {
        let cells: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, &w)| format!("{cell:<w$}"))
            .collect();
        out.write_all(cells.join("  ").trim_end().as_bytes())?;
        out.write_all(b"\n")
    };
    line(&head, out)?;
    for row in rows(gate) {
        line(&row, out)?;
    }
    failures(gate, &mut |path, target, why| {
        writeln!(out, "{path}: {target} is required: {why}")
    })?;
    out.write_all(last_line(gate, errors).as_bytes())
}

/// Hands `each` every failing verdict: the file (shown), the target as the messages name it,
/// and why.
fn failures(
    gate: &Gate,
    each: &mut dyn FnMut(&str, &str, &str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    for row in gate.rows() {
        let path = crate::io::shown(&row.path);
        for v in row.verdicts.iter().filter(|v| !v.ok) {
            let Some(r) = gate.required.get(v.requirement) else {
                continue;
            };
            let why = v.why.as_deref().unwrap_or("no code");
            each(&path, &named(&r.target, &r.written), why)?;
        }
    }
    Ok(())
}

/// A required target as the messages name it: its device, and the item as written when that
/// differs (`sm_90 (9.0+PTX)`).
fn named(target: &str, written: &str) -> String {
    if target == written {
        target.to_string()
    } else {
        format!("{target} ({written})")
    }
}

/// The last line: which way the gate ended, and so the exit status.
fn last_line(gate: &Gate, errors: usize) -> String {
    let targets = gate.required.len();
    let files = gate.files;
    let mut line = format!(
        "required: {targets} target{} against {files} file{} with device code: ",
        if targets == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" }
    );
    match (gate.failures, errors) {
        (0, 0) => line.push_str("every one present (exit 0)"),
        (f, 0) => line.push_str(&format!("{f} missing (exit 1)")),
        (0, e) => line.push_str(&format!(
            "none missing, but {e} file(s) could not be read (exit 2)"
        )),
        (f, e) => line.push_str(&format!(
            "{f} missing, and {e} file(s) could not be read (exit 2)"
        )),
    }
    line.push('\n');
    line
}

/// Writes GitHub Actions annotations to `out`: an error per failing verdict (and per file
/// that could not be read, from `errors`), then the last line as a notice.
pub(super) fn github(gate: &Gate, errors: &Errors, out: &mut dyn Write) -> std::io::Result<()> {
    let escape = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let escape_property = |s: &str| escape(s).replace(':', "%3A").replace(',', "%2C");
    failures(gate, &mut |path, target, why| {
        writeln!(
            out,
            "::error file={},title=offload check::{} is required: {}",
            escape_property(path),
            escape(target),
            escape(why)
        )
    })?;
    for e in errors.messages() {
        writeln!(out, "::error title=offload check::{}", escape(&e))?;
    }
    let last = last_line(gate, errors.count);
    let kind = if gate.failures == 0 && errors.count == 0 {
        "notice"
    } else {
        "error"
    };
    writeln!(
        out,
        "::{kind} title=offload check::{}",
        escape(last.trim_end())
    )
}

/// Writes the gate to `out` as JSON: the requirements, every file with its verdicts, and how
/// many fail; the text serde's pretty printer makes of it whole.
pub(super) fn json(gate: &Gate, out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(b"{\n  \"required\": ")?;
    write_nested(out, &gate.required, 1)?;
    out.write_all(b",\n  \"files\": ")?;
    let mut files = JsonArray::new(1);
    for row in gate.rows() {
        files.push(out, &row)?;
    }
    files.end(out)?;
    writeln!(out, ",\n  \"failures\": {}\n}}", gate.failures)
}

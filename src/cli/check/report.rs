//! `offload check` of files (a tree's), its report made as the files are checked: each file's
//! part of the text (or of the JSON) goes to where it is kept or written as it comes
//! ([`Text`], the JSON's `files` straight to standard output), the totals and verdicts are
//! counted in, and nothing of a file is held once it is handed over but hashes of its path.

use std::io::Write;
use std::path::Path;

use super::text::Text;
use crate::cli::jobs::{counted, JobBar};
use crate::cli::streamed::{write_nested, JsonArray};
use crate::error::Error;
use crate::loads::cuda_driver::Version;
use crate::ops::check::{
    self, CatalogueEnvironment, Catalogues, Counts, Device, FileReport, NotFound, Receiver,
};
use crate::ops::support::found::{FoundList, Records};
use crate::ops::support::keys::{path_key, KeySet};
use crate::ops::targets;

/// What the check is asked for.
pub(super) struct Asked<'a> {
    /// The program's name, for messages.
    pub prog: &'a str,
    /// The devices.
    pub devices: &'a [Device],
    /// Whether the report is JSON.
    pub json: bool,
    /// Whether the report ends with totals (several files).
    pub several: bool,
    /// With `--driver`, the driver's CUDA release.
    pub driver: Option<Version>,
    /// Whether images embedded as data decide the exit status too.
    pub require_embedded: bool,
    /// The decompression limit.
    pub max_decompressed: u64,
}

/// Checks `files` (a walk's list) as `asked` says, on `pool`; prints the report and returns
/// the exit status.
pub(super) fn run(asked: &Asked, pool: &rayon::ThreadPool, files: &FoundList) -> i32 {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let catalogue_env = CatalogueEnvironment::from_vars(|name| std::env::var_os(name));
    let kpack_env =
        crate::loads::kpack_search::Environment::from_vars(|name| std::env::var(name).ok());
    let mut making = Making::new(asked, &catalogue_env);
    let bar = JobBar::new(0);
    let checked = making.start(&mut out).and_then(|()| {
        check::check_each(
            pool,
            files,
            asked.devices,
            &check::Environment::of_process(),
            &kpack_env,
            asked.max_decompressed,
            &bar,
            &mut Receiving {
                making: &mut making,
                out: &mut out,
            },
        )
    });
    let written = checked.and_then(|verdict| {
        making.driver_of_roots(files)?;
        making.end(verdict, files, &mut out)?;
        out.flush()?;
        Ok(verdict)
    });
    let verdict = match written {
        Ok(verdict) => verdict,
        Err(e) => return crate::cli::stdout_failed(asked.prog, &mut std::io::stderr().lock(), &e),
    };
    if making.errors > 0 || making.nothing_checked {
        2
    } else {
        let every = verdict.every_device_has_code && !making.lacking && making.unusable == 0;
        let embedded_fail = asked.require_embedded && !verdict.embedded_have_code;
        i32::from(!every || embedded_fail)
    }
}

/// The report being made.
struct Making<'a> {
    asked: &'a Asked<'a>,
    /// The text for people, when that is the report.
    text: Option<Text>,
    /// The JSON's `files`, written as they come.
    files: JsonArray,
    /// The JSON's `not_found`, kept until the files are written.
    missing: Records,
    missing_array: JsonArray,
    catalogues: Catalogues<'a>,
    /// Whether a device is without a kernel catalogue.
    lacking: bool,
    /// With `--driver`: what the driver cannot use, a file at a time (the notes, or the
    /// JSON's elements), and how many files.
    unusable_parts: Records,
    unusable_array: JsonArray,
    unusable: usize,
    /// The paths of the files checked (with `--driver`) and of the errors ([`path_key`]): in
    /// memory while few, in a mapped temporary file beyond ([`KeySet`]).
    file_paths: KeySet,
    error_paths: KeySet,
    errors: usize,
    totals: Totals,
    /// Whether nothing was checked, or every file named failed: then there is no report.
    nothing_checked: bool,
}

/// Hands the parts of the report to [`Making`] and the JSON's files to `out`.
struct Receiving<'m, 'a, 'o> {
    making: &'m mut Making<'a>,
    out: &'o mut dyn Write,
}

impl Receiver for Receiving<'_, '_, '_> {
    fn error(&mut self, error: Error) -> std::io::Result<()> {
        let making = &mut *self.making;
        let prog = making.asked.prog;
        let _ = writeln!(std::io::stderr().lock(), "{prog}: error: {error}");
        making.errors += 1;
        if let Some(path) = error.path() {
            making.error_paths.insert(path_key(path))?;
        }
        Ok(())
    }

    fn file(&mut self, mut file: FileReport) -> std::io::Result<()> {
        self.making.file(&mut file, self.out)
    }

    fn not_found(&mut self, missing: NotFound) -> std::io::Result<()> {
        let making = &mut *self.making;
        making.totals.not_found += 1;
        if let Some(text) = &mut making.text {
            return text.add_missing(&missing);
        }
        let mut part = Vec::new();
        making.missing_array.push(&mut part, &missing)?;
        making.missing.append(&part)
    }
}

impl<'a> Making<'a> {
    fn new(asked: &'a Asked<'a>, env: &'a CatalogueEnvironment) -> Making<'a> {
        Making {
            asked,
            text: (!asked.json).then(|| Text::new(asked.devices)),
            files: JsonArray::new(1),
            missing: Records::default(),
            missing_array: JsonArray::new(1),
            catalogues: Catalogues::new(asked.devices, env),
            lacking: false,
            unusable_parts: Records::default(),
            unusable_array: JsonArray::new(2),
            unusable: 0,
            file_paths: KeySet::new(),
            error_paths: KeySet::new(),
            errors: 0,
            totals: Totals::new(asked.devices),
            nothing_checked: false,
        }
    }

    /// Writes what comes before the files: the JSON's devices.
    fn start(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.text.is_none() {
            out.write_all(b"{\n  \"devices\": ")?;
            write_nested(out, &self.asked.devices, 1)?;
            out.write_all(b",\n  \"files\": ")?;
        }
        Ok(())
    }

    /// Adds `file`: its catalogues found, its part of the report kept or written to `out`.
    fn file(&mut self, file: &mut FileReport, out: &mut dyn Write) -> std::io::Result<()> {
        self.lacking |= self.catalogues.add(file);
        if self.asked.driver.is_some() {
            self.file_paths.insert(path_key(&file.path))?;
        }
        self.totals.add(file);
        self.driver_of(&file.path)?;
        match &mut self.text {
            Some(text) => text.add_file(file),
            None => self.files.push(out, &file),
        }
    }

    /// With `--driver`: what the driver cannot use in the file at `path`, kept.
    fn driver_of(&mut self, path: &Path) -> std::io::Result<()> {
        let Some(driver) = self.asked.driver else {
            return Ok(());
        };
        let Some(found) = targets::unusable(path, driver, self.asked.max_decompressed) else {
            return Ok(());
        };
        self.unusable += 1;
        let mut part = Vec::new();
        if self.text.is_some() {
            part.extend_from_slice(targets::unusable_note(driver, &found).as_bytes());
        } else {
            self.unusable_array.push(&mut part, &found)?;
        }
        self.unusable_parts.append(&part)
    }

    /// With `--driver`: what the driver cannot use in the files named that were not checked
    /// as such (packages: their members' entries noted under their name), after the others.
    fn driver_of_roots(&mut self, roots: &FoundList) -> std::io::Result<()> {
        if self.asked.driver.is_none() {
            return Ok(());
        }
        for root in roots.paths() {
            if !self.file_paths.contains(path_key(&root)) {
                self.driver_of(&root)?;
            }
        }
        Ok(())
    }

    /// Writes the rest of the report to `out`, `verdict` the check's: the text, or the JSON
    /// after its files. No text when nothing was checked.
    fn end(
        &mut self,
        verdict: check::Verdict,
        roots: &FoundList,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let every_root_failed = roots
            .paths()
            .all(|r| self.error_paths.contains(path_key(&r)));
        self.nothing_checked = self.errors > 0 && (self.totals.files == 0 || every_root_failed);
        self.unusable_parts.seal()?;
        let Some(text) = self.text.take() else {
            return self.end_json(verdict, out);
        };
        if self.nothing_checked {
            return Ok(());
        }
        text.write(out)?;
        if self.asked.several {
            out.write_all(
                self.totals
                    .lines(self.asked.devices, self.errors)
                    .as_bytes(),
            )?;
        }
        out.write_all(self.unusable_parts.bytes())
    }

    /// Writes the JSON after its files.
    fn end_json(&mut self, verdict: check::Verdict, out: &mut dyn Write) -> std::io::Result<()> {
        let files = std::mem::replace(&mut self.files, JsonArray::new(1));
        files.end(out)?;
        out.write_all(b",\n  \"not_found\": ")?;
        self.missing.seal()?;
        out.write_all(self.missing.bytes())?;
        std::mem::replace(&mut self.missing_array, JsonArray::new(1)).end(out)?;
        let every = verdict.every_device_has_code && !self.lacking && self.unusable == 0;
        let embedded = verdict.embedded_have_code;
        out.write_all(
            format!(
                ",\n  \"every_device_has_code\": {every},\n  \"embedded_have_code\": {embedded}"
            )
            .as_bytes(),
        )?;
        if let Some(driver) = self.asked.driver {
            out.write_all(b",\n  \"driver\": {\n    \"driver\": ")?;
            write_nested(out, &driver.to_string(), 2)?;
            out.write_all(b",\n    \"files\": ")?;
            out.write_all(self.unusable_parts.bytes())?;
            std::mem::replace(&mut self.unusable_array, JsonArray::new(2)).end(out)?;
            out.write_all(b"\n  }")?;
        }
        out.write_all(b"\n}\n")
    }
}

/// The totals of a check of several files.
struct Totals {
    files: usize,
    /// Files named (or package members checked for themselves).
    named: usize,
    with_code: usize,
    bundles: usize,
    embedded: usize,
    code_objects: usize,
    not_found: usize,
    /// Per device, how the bundles load.
    counts: Vec<Counts>,
}

impl Totals {
    fn new(devices: &[Device]) -> Totals {
        Totals {
            files: 0,
            named: 0,
            with_code: 0,
            bundles: 0,
            embedded: 0,
            code_objects: 0,
            not_found: 0,
            counts: (devices.iter())
                .map(|d| Counts {
                    device: d.index,
                    ..Counts::default()
                })
                .collect(),
        }
    }

    /// Counts `file` in.
    fn add(&mut self, file: &FileReport) {
        self.files += 1;
        self.named += usize::from(file.found_via == "argument" || file.found_via == "member");
        self.with_code += usize::from(!file.bundles.is_empty() || file.kpack.is_some());
        let embedded = file.bundles.iter().filter(|b| b.embedded).count();
        self.embedded += embedded;
        self.bundles += file.bundles.len() - embedded;
        self.code_objects += file.kpack.as_ref().map_or(0, |k| k.code_objects.len());
        for c in &file.counts {
            let Some(sum) = self.counts.iter_mut().find(|s| s.device == c.device) else {
                continue;
            };
            sum.native += c.native;
            sum.generic += c.generic;
            sum.spirv += c.spirv;
            sum.nothing += c.nothing;
            sum.fails += c.fails;
        }
    }

    /// The summary of a check of several files (with `errors` errors): the files, those with
    /// device code, the bundles and code objects, then per device how they load.
    fn lines(&self, devices: &[Device], errors: usize) -> String {
        let mut archived = if self.code_objects > 0 {
            format!(
                ", {} in kpack archives",
                counted(self.code_objects as u64, "code object", "code objects")
            )
        } else {
            String::new()
        };
        if self.embedded > 0 {
            archived.push_str(&format!(
                ", {} embedded as data",
                counted(self.embedded as u64, "device image", "device images")
            ));
        }
        let mut text = format!(
            "total: {} ({} named, {} they load), {} with device code, {} not found, {}; {}{archived}\n",
            counted(self.files as u64, "file", "files"),
            self.named,
            self.files - self.named,
            self.with_code,
            self.not_found,
            counted(errors as u64, "error", "errors"),
            counted(self.bundles as u64, "bundle", "bundles"),
        );
        for (device, sum) in devices.iter().zip(&self.counts) {
            text.push_str(&format!(
                "total {}: {} native, {} generic, {} SPIR-V or PTX, {} nothing; the runtime fails {}\n",
                crate::io::shown(&device.target_id),
                sum.native,
                sum.generic,
                sum.spirv,
                sum.nothing,
                sum.fails
            ));
        }
        text
    }
}

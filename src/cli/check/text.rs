//! The report `offload check` prints for people: the devices, the table of files, the code
//! in kpack archives, what leaves a device without code and what the runtime then does, and
//! the device images embedded as data, apart.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::kpack;
use crate::loads::runtime::AMDGCN_ISA_PREFIX;
use crate::ops::check::{
    hip_devices, BundleReport, Catalogue, CatalogueDevice, Device, FileReport, NotFound,
};
use crate::ops::support::columns::{ranges, Align, Spooled};
use crate::ops::support::found::Records;

/// Text kept until it is written, in an unnamed temporary file past a few pages.
#[derive(Default)]
struct Spool {
    records: Records,
    len: u64,
}

impl Spool {
    /// Adds `text` after what is kept.
    fn push(&mut self, text: &str) -> std::io::Result<()> {
        self.len += text.len() as u64;
        self.records.append(text.as_bytes())
    }

    /// Whether nothing is kept.
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes what is kept to `out`.
    fn write(mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.records.seal()?;
        out.write_all(self.records.bytes())
    }
}

/// The report for people, made a file at a time as the files are checked: each part of it
/// (the table, the catalogues, the code in kpack archives, the libraries not found, what
/// leaves a device without code, what the runtime does, the images embedded as data) kept
/// apart, out of memory past a few pages, until [`Text::write`] writes them in order. Nothing
/// of a file stays in memory once it is added.
pub struct Text {
    devices: Vec<Device>,
    rows: Spooled,
    catalogues: Spool,
    archived: Spool,
    /// The libraries not found, a line each.
    missing: Spool,
    /// The names a package's members need that it does not hold: each with the first member
    /// that needs it and how many others do.
    not_in_package: Vec<(String, PathBuf, usize)>,
    /// Per device, the bundles without code for it.
    without: Vec<Spool>,
    /// Per device, the code objects of kpack archives it finds nothing for.
    kpack_without: Vec<Spool>,
    kpack_consequences: Spool,
    consequences: Spool,
    /// Whether the HIP runtime fails a bundle for a device.
    hip_fails: bool,
    embedded: Spool,
    /// Per device, the images embedded as data without code for it.
    embedded_without: Vec<Spool>,
}

impl Text {
    /// The report of no file yet, for `devices`.
    pub fn new(devices: &[Device]) -> Text {
        let (l, r) = (Align::Left, Align::Right);
        let spools = || devices.iter().map(|_| Spool::default()).collect();
        Text {
            devices: devices.to_vec(),
            rows: Spooled::new(&TABLE_HEADER, &[l, r, l, r, r, r, r]),
            catalogues: Spool::default(),
            archived: Spool::default(),
            missing: Spool::default(),
            not_in_package: Vec::new(),
            without: spools(),
            kpack_without: spools(),
            kpack_consequences: Spool::default(),
            consequences: Spool::default(),
            hip_fails: false,
            embedded: Spool::default(),
            embedded_without: spools(),
        }
    }

    /// Adds `file`, after those added before.
    pub fn add_file(&mut self, file: &FileReport) -> std::io::Result<()> {
        let devices = &self.devices;
        for row in table_rows(devices, file) {
            self.rows.push(&row)?;
        }
        for c in &file.catalogues {
            self.catalogues.push(&catalogue(devices, &file.path, c))?;
        }
        self.archived.push(&kpack::text(devices, file))?;
        for (device, spool) in devices.iter().zip(&mut self.without) {
            spool.push(&without_code(device, file, false))?;
        }
        for (device, spool) in devices.iter().zip(&mut self.kpack_without) {
            spool.push(&kpack::without_code(device, file))?;
        }
        (self.kpack_consequences).push(&kpack::consequences(devices, file))?;
        self.consequences.push(&consequences(devices, file))?;
        self.hip_fails |=
            registered(file).any(|b| b.runtime == "hip" && b.first_without_code.is_some());
        self.embedded.push(&embedded_text(devices, file))?;
        for (device, spool) in devices.iter().zip(&mut self.embedded_without) {
            for line in without_code(device, file, true).lines() {
                spool.push(&format!("  {line}\n"))?;
            }
        }
        Ok(())
    }

    /// Adds a library not found, after those added before.
    pub fn add_missing(&mut self, missing: &NotFound) -> std::io::Result<()> {
        if !missing.in_package {
            return self
                .missing
                .push(&missing_line(&missing.name, &missing.needed_by, 0));
        }
        match (self.not_in_package.iter_mut()).find(|(name, _, _)| *name == missing.name) {
            Some((_, _, others)) => *others += 1,
            None => {
                (self.not_in_package).push((missing.name.clone(), missing.needed_by.clone(), 0))
            }
        }
        Ok(())
    }

    /// Writes the report to `out`.
    pub fn write(self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(b"Devices, in the runtime's order:\n")?;
        for d in &self.devices {
            let node = d
                .node
                .map(|n| format!(" (KFD node {n})"))
                .unwrap_or_default();
            out.write_all(format!("  {} {}{node}\n", d.index, d.target_id).as_bytes())?;
        }
        out.write_all(b"\n")?;
        self.rows.write(out)?;
        if !self.catalogues.is_empty() {
            out.write_all(b"\nKernel catalogues (the Tensile files each library opens for the device's processor):\n")?;
            self.catalogues.write(out)?;
        }
        if !self.archived.is_empty() {
            out.write_all(b"\nCode in kpack archives:\n")?;
            self.archived.write(out)?;
        }
        if !self.missing.is_empty() {
            out.write_all(format!("\n{NOT_FOUND}\n").as_bytes())?;
            self.missing.write(out)?;
        }
        for (k, (name, by, others)) in self.not_in_package.iter().enumerate() {
            if k == 0 {
                out.write_all(format!("\n{NOT_IN_PACKAGE}\n").as_bytes())?;
            }
            out.write_all(missing_line(name, by, *others).as_bytes())?;
        }
        let without = self.without.iter().chain(&self.kpack_without);
        if without.clone().any(|s| !s.is_empty()) {
            out.write_all(b"\nWithout code:\n")?;
            for spool in self.without.into_iter().chain(self.kpack_without) {
                spool.write(out)?;
            }
            out.write_all(b"\nWhat the runtime does:\n")?;
            self.kpack_consequences.write(out)?;
            self.consequences.write(out)?;
            if self.hip_fails {
                out.write_all(HIP_FAILS.as_bytes())?;
            }
        }
        if !self.embedded.is_empty() {
            out.write_all(EMBEDDED.as_bytes())?;
            self.embedded.write(out)?;
            if self.embedded_without.iter().any(|s| !s.is_empty()) {
                out.write_all(b"  Without code:\n")?;
                for spool in self.embedded_without {
                    spool.write(out)?;
                }
            }
        }
        Ok(())
    }
}

/// The title of the libraries not found.
const NOT_FOUND: &str = "Not found (not checked; ld.so would refuse to load what needs them):";

/// The title of the libraries a package's members need that it does not hold.
const NOT_IN_PACKAGE: &str = "Not in the package (looked for in the package alone, as it installs: another package or the system provides it; not checked):";

/// What the program sees of a bundle the HIP runtime fails.
const HIP_FAILS: &str =
    "  The program sees it when it launches a kernel of such a bundle on a failing device: \
     hipErrorInvalidImage, hipErrorNoBinaryForGpu or \"invalid device function\", by ROCm \
     release. Hiding a device without code (HIP_VISIBLE_DEVICES) lets the others load.\n";

/// The title of the images embedded as data.
const EMBEDDED: &str =
    "\nEmbedded as data (no runtime registers these: the program loads them itself, \
     with hipModuleLoadData or cuModuleLoadData, when it asks for them; they leave the \
     exit status alone unless --require-embedded is given):\n";

/// The line of the library `name` not found, needed by `by` (and, for a package's members,
/// by `others` other members: every program of a package needs `libc.so.6`).
fn missing_line(name: &str, by: &Path, others: usize) -> String {
    let more = match others {
        0 => String::new(),
        1 => " and 1 other member".to_string(),
        n => format!(" and {n} other members"),
    };
    format!(
        "  {} (needed by {}{more})\n",
        crate::io::shown(name),
        crate::io::shown(by)
    )
}

/// The bundles of `file` a runtime is given: those embedded as data left out.
fn registered(file: &FileReport) -> impl Iterator<Item = &BundleReport> {
    file.bundles.iter().filter(|b| !b.embedded)
}

/// The part of the report on the device images embedded as data in `file`, which the program
/// loads itself: per device, how many load; empty when there are none.
fn embedded_text(devices: &[Device], file: &FileReport) -> String {
    let mut out = String::new();
    let embedded: Vec<&BundleReport> = file.bundles.iter().filter(|b| b.embedded).collect();
    if embedded.is_empty() {
        return out;
    }
    let numbers: Vec<usize> = embedded.iter().map(|b| b.index).collect();
    out.push_str(&format!(
        "  {}: {} {}\n",
        crate::io::shown(&file.path),
        counted_images(embedded.len()),
        ranges(&numbers),
    ));
    for device in devices {
        let loading = embedded
            .iter()
            .filter(|b| {
                b.loads
                    .get(device.index)
                    .is_some_and(|l| !matches!(l.loads, "nothing" | "other"))
            })
            .count();
        out.push_str(&format!(
            "    {} (device {}): {loading} of {} have code for it\n",
            device.target_id,
            device.index,
            embedded.len()
        ));
    }
    out
}

/// "1 device image, number" or "N device images, numbers".
fn counted_images(n: usize) -> String {
    if n == 1 {
        "1 device image, number".to_string()
    } else {
        format!("{n} device images, numbers")
    }
}

/// The header of the table of files and counts.
const TABLE_HEADER: [&str; 7] = [
    "FILE", "BUNDLES", "DEVICE", "NATIVE", "GENERIC", "SPIR-V", "NOTHING",
];

/// The rows of `file` in the table of files and counts.
fn table_rows(devices: &[Device], file: &FileReport) -> Vec<[OsString; 7]> {
    let mut rows: Vec<[OsString; 7]> = Vec::new();
    let code_objects = file.kpack.as_ref().map_or(0, |k| k.code_objects.len());
    let units = registered(file).count() + code_objects;
    let first = [file.path.clone().into_os_string(), units.to_string().into()];
    if units == 0 {
        let mut row: [OsString; 7] = Default::default();
        row[..2].clone_from_slice(&first);
        rows.push(row);
        return rows;
    }
    for (k, c) in file.counts.iter().enumerate() {
        let device = devices
            .get(c.device)
            .map_or_else(String::new, |d| d.target_id.clone());
        let (path, bundles) = if k == 0 {
            (first[0].clone(), first[1].clone())
        } else {
            (OsString::new(), OsString::new())
        };
        rows.push([
            path,
            bundles,
            device.into(),
            c.native.to_string().into(),
            c.generic.to_string().into(),
            c.spirv.to_string().into(),
            c.nothing.to_string().into(),
        ]);
    }
    rows
}

/// "bundle 1" or "bundles 1-3, 5".
fn bundles_phrase(numbers: &[usize]) -> String {
    let noun = if numbers.len() == 1 {
        "bundle"
    } else {
        "bundles"
    };
    format!("{noun} {}", ranges(numbers))
}

/// The bundles of `file` without code for `device` (those embedded as data, or those a
/// runtime is given), grouped by what they have code for.
fn without_code(device: &Device, file: &FileReport, embedded: bool) -> String {
    let mut out = String::new();
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    // Modules (bare images) by their kind and target: runs of them read as one line.
    let mut modules: Vec<(&str, &[String], Vec<usize>)> = Vec::new();
    for bundle in file.bundles.iter().filter(|b| b.embedded == embedded) {
        let nothing = bundle
            .loads
            .get(device.index)
            .is_some_and(|l| l.loads == "nothing");
        if !nothing {
            continue;
        }
        if bundle.runtime.ends_with("module") {
            let what = if bundle.runtime == "module" {
                "code object"
            } else {
                "module"
            };
            let same = |(w, t, _): &&mut (&str, &[String], Vec<usize>)| {
                *w == what && *t == &bundle.targets[..]
            };
            match modules.iter_mut().find(same) {
                Some((_, _, numbers)) => numbers.push(bundle.index),
                None => modules.push((what, &bundle.targets, vec![bundle.index])),
            }
            continue;
        }
        match groups.iter_mut().find(|(t, _)| *t == bundle.targets) {
            Some((_, numbers)) => numbers.push(bundle.index),
            None => groups.push((bundle.targets.clone(), vec![bundle.index])),
        }
    }
    for (what, targets, numbers) in modules {
        let (what, verb) = if numbers.len() == 1 {
            (what.to_string(), "is")
        } else {
            (format!("{what}s"), "are each")
        };
        out.push_str(&format!(
            "  {} (device {}): {} {what} {} {verb} for {}\n",
            device.target_id,
            device.index,
            crate::io::shown(&file.path),
            ranges(&numbers),
            crate::io::shown(&targets.join(", ")),
        ));
    }
    for (targets, numbers) in groups {
        let has = if targets.is_empty() {
            "no code at all".to_string()
        } else {
            format!("code for {}", crate::io::shown(&targets.join(", ")))
        };
        out.push_str(&format!(
            "  {} (device {}): {} {} of {}: {} has {has}\n",
            device.target_id,
            device.index,
            crate::io::shown(&file.path),
            bundles_phrase(&numbers),
            file.bundles.len(),
            if numbers.len() == 1 { "it" } else { "each" },
        ));
    }
    out
}

/// What `hipModuleLoad` of the bare code object `module` of the file `path` does on the
/// devices it is not compatible with; empty when there are none.
fn module_consequence(devices: &[Device], path: &Path, module: &BundleReport) -> String {
    let failing: Vec<&Device> = module
        .loads
        .iter()
        .filter(|l| l.loads == "nothing")
        .filter_map(|l| devices.get(l.device))
        .collect();
    let Some(first) = failing.first() else {
        return String::new();
    };
    let names: Vec<&str> = failing.iter().map(|d| d.target_id.as_str()).collect();
    let target = module.targets.join(", ");
    if module.runtime == "cuda-module" {
        return format!(
            "  {} module {} ({}): cuModuleLoad on {} fails with CUDA_ERROR_NO_BINARY_FOR_GPU \
             (\"no kernel image is available for execution on the device\"); a device that \
             runs it loads it.\n",
            crate::io::shown(path),
            module.index,
            crate::io::shown(&target),
            names.join(", "),
        );
    }
    format!(
        "  {} code object {} ({}): hipModuleLoad on {} fails with hipErrorNoBinaryForGpu (the \
         build log says \"The program ISA {AMDGCN_ISA_PREFIX}{} is not compatible with the \
         device ISA {}\"); a device it is compatible with loads it.\n",
        crate::io::shown(path),
        module.index,
        crate::io::shown(&target),
        names.join(", "),
        crate::io::shown(&target),
        first.isa,
    )
}

/// The devices the HIP runtime fails for when `first` is the first without code: it and
/// those after it, among the devices it sees (AMD devices; with CUDA devices named too,
/// the words say so).
fn hip_failing(devices: &[Device], first: usize) -> String {
    let ids: Vec<&str> = devices.iter().map(|d| d.target_id.as_str()).collect();
    let hip = hip_devices(&ids);
    let noun = if hip.len() == ids.len() {
        "device"
    } else {
        "AMD device"
    };
    let name = ids.get(first).copied().unwrap_or_default();
    if hip.first() == Some(&first) {
        format!("every {noun}: it is the first {noun}")
    } else if hip.last() == Some(&first) {
        format!("{name} only; the {noun}s before it load the code")
    } else {
        format!("{name} and every {noun} after it; the {noun}s before it load the code")
    }
}

/// What the OpenMP runtime does with the images of `unit` (offload binaries of one place of
/// the file `path`) on the devices none of them suits; empty when there are none.
fn openmp_consequence(devices: &[Device], path: &Path, unit: &BundleReport) -> String {
    let failing: Vec<&str> = unit
        .loads
        .iter()
        .filter(|l| l.loads == "nothing")
        .filter_map(|l| devices.get(l.device))
        .map(|d| d.target_id.as_str())
        .collect();
    if failing.is_empty() {
        return String::new();
    }
    format!(
        "  {} bundle {} (OpenMP images for {}): libomptarget loads no image on {}; with no \
         device holding an image, target regions run on the host, and under \
         OMP_TARGET_OFFLOAD=MANDATORY the program stops with \"omptarget error: No images \
         found compatible with the installed hardware.\"; a region sent to such a device \
         fails (\"No image loaded for device id N\").\n",
        crate::io::shown(path),
        unit.index,
        crate::io::shown(&unit.targets.join(", ")),
        failing.join(", "),
    )
}

/// What the runtime does with the bundles of `file` that leave a device without code,
/// grouped by the first device without code.
fn consequences(devices: &[Device], file: &FileReport) -> String {
    let name = |i: usize| {
        devices
            .get(i)
            .map_or_else(String::new, |d| d.target_id.clone())
    };
    let mut out = String::new();
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut cuda: Vec<(usize, Vec<usize>)> = Vec::new();
    for bundle in registered(file).filter(|b| b.runtime == "cuda") {
        for load in bundle.loads.iter().filter(|l| l.loads == "nothing") {
            match cuda.iter_mut().find(|(d, _)| *d == load.device) {
                Some((_, numbers)) => numbers.push(bundle.index),
                None => cuda.push((load.device, vec![bundle.index])),
            }
        }
    }
    for (device, numbers) in cuda {
        out.push_str(&format!(
            "  {} {}: launching their kernels on {} fails with \
             cudaErrorNoKernelImageForDevice (\"no kernel image is available for execution \
             on the device\"); the other devices load their code.\n",
            crate::io::shown(&file.path),
            bundles_phrase(&numbers),
            name(device),
        ));
    }
    for bundle in registered(file).filter(|b| b.runtime.ends_with("module")) {
        out.push_str(&module_consequence(devices, &file.path, bundle));
    }
    for bundle in registered(file).filter(|b| b.runtime == "openmp") {
        out.push_str(&openmp_consequence(devices, &file.path, bundle));
    }
    for bundle in registered(file).filter(|b| b.runtime == "hip") {
        let Some(first) = bundle.first_without_code else {
            continue;
        };
        match groups.iter_mut().find(|(f, _)| *f == first) {
            Some((_, numbers)) => numbers.push(bundle.index),
            None => groups.push((first, vec![bundle.index])),
        }
    }
    for (first, numbers) in groups {
        let which = hip_failing(devices, first);
        out.push_str(&format!(
            "  {} {}: the runtime logs \"No compatible code objects found for: {}\" and \
             the load fails with hipErrorInvalidImage for {which}.\n",
            crate::io::shown(&file.path),
            bundles_phrase(&numbers),
            name(first),
        ));
    }
    out
}

/// One library's catalogue.
fn catalogue(devices: &[Device], path: &Path, c: &Catalogue) -> String {
    let mut out = format!(
        "  {}: {} catalogue {} (found via {})\n",
        crate::io::shown(path),
        c.library,
        crate::io::shown(&c.folder),
        c.found_via
    );
    for d in &c.devices {
        let name = devices
            .get(d.device)
            .map_or(d.processor.as_str(), |x| x.target_id.as_str());
        out.push_str(&format!("    {} {name}: {}\n", d.device, found(c, d)));
        if let (Some(message), Some(then)) = (&d.message, d.then) {
            out.push_str(&format!("      {} prints: {message}\n", c.library));
            out.push_str(&format!(
                "      then {then}; the device counts as without code\n"
            ));
        }
    }
    out
}

/// What a device finds: the catalogue opened, the helper and the code objects; or what is
/// missing.
fn found(c: &Catalogue, d: &CatalogueDevice) -> String {
    let Some(opens) = d.opens.as_deref().filter(|_| d.ok) else {
        return format!(
            "no Tensile catalogue ({})",
            d.missing.as_deref().unwrap_or("none exists")
        );
    };
    let mut text = format!("opens {opens}");
    if d.folder != c.folder {
        text.push_str(&format!(" in {}", crate::io::shown(&d.folder)));
    }
    if let Some(mapping) = &d.mapping {
        text.push_str(&format!(" and {mapping}"));
    }
    match &d.kernels {
        Some(k) => text.push_str(&format!("; helper {k}")),
        None => text.push_str("; no helper Kernels.so-000 code object"),
    }
    text.push_str(&format!(
        "; {} code object{} for {}",
        d.code_objects,
        if d.code_objects == 1 { "" } else { "s" },
        d.processor
    ));
    text
}

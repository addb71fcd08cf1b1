//! The report `offload check` prints for people: the devices, the table of files, the code
//! in kpack archives, what leaves a device without code and what the runtime then does, and
//! the device images embedded as data, apart.

use std::ffi::OsString;
use std::path::Path;

use super::kpack;
use crate::loads::runtime::AMDGCN_ISA_PREFIX;
use crate::ops::check::{
    hip_devices, BundleReport, Catalogue, CatalogueDevice, Device, FileReport, NotFound, Report,
};
use crate::ops::support::columns::{ranges, render, Align};

/// The report `offload check` prints for people: the devices, a table of files with, per
/// device, how many bundles (and code objects in kpack archives) load native, generic or
/// SPIR-V code or nothing; for split binaries, the archive each device finds each code object
/// in, or every path searched; the libraries not found; what leaves a device without code;
/// and what the runtime does then.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("Devices, in the runtime's order:\n");
    for d in &report.devices {
        let node = d
            .node
            .map(|n| format!(" (KFD node {n})"))
            .unwrap_or_default();
        out.push_str(&format!("  {} {}{node}\n", d.index, d.target_id));
    }
    out.push('\n');
    out.push_str(&table(report));
    out.push_str(&catalogues(report));
    let archived = kpack::text(report);
    if !archived.is_empty() {
        out.push_str("\nCode in kpack archives:\n");
        out.push_str(&archived);
    }
    for (in_package, title) in [
        (false, "Not found (not checked; ld.so would refuse to load what needs them):"),
        (true, "Not in the package (looked for in the package alone, as it installs: another package or the system provides it; not checked):"),
    ] {
        let missing = report.not_found.iter().filter(|m| m.in_package == in_package);
        for (k, line) in missing_lines(missing, in_package).iter().enumerate() {
            if k == 0 {
                out.push_str(&format!("\n{title}\n"));
            }
            out.push_str(line);
        }
    }
    let without = without_code(report, false) + &kpack::without_code(report);
    if !without.is_empty() {
        out.push_str("\nWithout code:\n");
        out.push_str(&without);
        out.push_str("\nWhat the runtime does:\n");
        out.push_str(&kpack::consequences(report));
        out.push_str(&consequences(report));
    }
    out.push_str(&embedded_text(report));
    out
}

/// A line per library of `missing`: each name with what needs it; for names a package's
/// members need (`grouped`), a line per name, with the first member that needs it and how
/// many others do (every program of a package needs `libc.so.6`).
fn missing_lines<'r>(missing: impl Iterator<Item = &'r NotFound>, grouped: bool) -> Vec<String> {
    let mut names: Vec<(&str, &Path, usize)> = Vec::new();
    for m in missing {
        match names
            .iter_mut()
            .find(|(name, _, _)| grouped && *name == m.name)
        {
            Some((_, _, others)) => *others += 1,
            None => names.push((&m.name, &m.needed_by, 0)),
        }
    }
    names
        .into_iter()
        .map(|(name, by, others)| {
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
        })
        .collect()
}

/// The bundles of `file` a runtime is given: those embedded as data left out.
fn registered(file: &FileReport) -> impl Iterator<Item = &BundleReport> {
    file.bundles.iter().filter(|b| !b.embedded)
}

/// The part of the report on device images embedded as data, which the program loads itself:
/// per file and device, how many load, and those without code; empty when there are none.
fn embedded_text(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        let embedded: Vec<&BundleReport> = file.bundles.iter().filter(|b| b.embedded).collect();
        if embedded.is_empty() {
            continue;
        }
        let numbers: Vec<usize> = embedded.iter().map(|b| b.index).collect();
        out.push_str(&format!(
            "  {}: {} {}\n",
            crate::io::shown(&file.path),
            counted_images(embedded.len()),
            ranges(&numbers),
        ));
        for device in &report.devices {
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
    }
    if out.is_empty() {
        return out;
    }
    let without = without_code(report, true);
    let mut text = String::from(
        "\nEmbedded as data (no runtime registers these: the program loads them itself, \
         with hipModuleLoadData or cuModuleLoadData, when it asks for them; they leave the \
         exit status alone unless --require-embedded is given):\n",
    );
    text.push_str(&out);
    if !without.is_empty() {
        text.push_str("  Without code:\n");
        for line in without.lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text
}

/// "1 device image, number" or "N device images, numbers".
fn counted_images(n: usize) -> String {
    if n == 1 {
        "1 device image, number".to_string()
    } else {
        format!("{n} device images, numbers")
    }
}

/// The table of files and counts.
fn table(report: &Report) -> String {
    let header = [
        "FILE", "BUNDLES", "DEVICE", "NATIVE", "GENERIC", "SPIR-V", "NOTHING",
    ];
    let mut rows: Vec<[OsString; 7]> = Vec::new();
    for file in &report.files {
        let code_objects = file.kpack.as_ref().map_or(0, |k| k.code_objects.len());
        let units = registered(file).count() + code_objects;
        let first = [file.path.clone().into_os_string(), units.to_string().into()];
        if units == 0 {
            let mut row: [OsString; 7] = Default::default();
            row[..2].clone_from_slice(&first);
            rows.push(row);
            continue;
        }
        for (k, c) in file.counts.iter().enumerate() {
            let device = report
                .devices
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
    }
    let (l, r) = (Align::Left, Align::Right);
    render(&header, &rows, &[l, r, l, r, r, r, r])
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

/// Per device and file, the bundles without code for it (those embedded as data, or those a
/// runtime is given), grouped by what they have code for.
fn without_code(report: &Report, embedded: bool) -> String {
    let mut out = String::new();
    for device in &report.devices {
        for file in &report.files {
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
        }
    }
    out
}

/// What `hipModuleLoad` of the bare code object `module` of the file `path` does on the
/// devices it is not compatible with; empty when there are none.
fn module_consequence(report: &Report, path: &Path, module: &BundleReport) -> String {
    let failing: Vec<&Device> = module
        .loads
        .iter()
        .filter(|l| l.loads == "nothing")
        .filter_map(|l| report.devices.get(l.device))
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
fn hip_failing(report: &Report, first: usize) -> String {
    let ids: Vec<&str> = report
        .devices
        .iter()
        .map(|d| d.target_id.as_str())
        .collect();
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
fn openmp_consequence(report: &Report, path: &Path, unit: &BundleReport) -> String {
    let failing: Vec<&str> = unit
        .loads
        .iter()
        .filter(|l| l.loads == "nothing")
        .filter_map(|l| report.devices.get(l.device))
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

/// What the runtime does with the bundles that leave a device without code, per file,
/// grouped by the first device without code.
fn consequences(report: &Report) -> String {
    let name = |i: usize| {
        report
            .devices
            .get(i)
            .map_or_else(String::new, |d| d.target_id.clone())
    };
    let mut out = String::new();
    for file in &report.files {
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
            out.push_str(&module_consequence(report, &file.path, bundle));
        }
        for bundle in registered(file).filter(|b| b.runtime == "openmp") {
            out.push_str(&openmp_consequence(report, &file.path, bundle));
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
            let which = hip_failing(report, first);
            out.push_str(&format!(
                "  {} {}: the runtime logs \"No compatible code objects found for: {}\" and \
                 the load fails with hipErrorInvalidImage for {which}.\n",
                crate::io::shown(&file.path),
                bundles_phrase(&numbers),
                name(first),
            ));
        }
    }
    let hip_fails = report
        .files
        .iter()
        .flat_map(registered)
        .any(|b| b.runtime == "hip" && b.first_without_code.is_some());
    if !hip_fails {
        return out;
    }
    out.push_str(
        "  The program sees it when it launches a kernel of such a bundle on a failing device: \
         hipErrorInvalidImage, hipErrorNoBinaryForGpu or \"invalid device function\", by ROCm \
         release. Hiding a device without code (HIP_VISIBLE_DEVICES) lets the others load.\n",
    );
    out
}

/// The kernel catalogues of rocBLAS and hipBLASLt: per file, the folder, and per device the
/// catalogue it opens, or what the library does without one.
fn catalogues(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        for c in &file.catalogues {
            if out.is_empty() {
                out.push_str("\nKernel catalogues (the Tensile files each library opens for the device's processor):\n");
            }
            out.push_str(&catalogue(report, &file.path, c));
        }
    }
    out
}

/// One library's catalogue.
fn catalogue(report: &Report, path: &Path, c: &Catalogue) -> String {
    let mut out = format!(
        "  {}: {} catalogue {} (found via {})\n",
        crate::io::shown(path),
        c.library,
        crate::io::shown(&c.folder),
        c.found_via
    );
    for d in &c.devices {
        let name = report
            .devices
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

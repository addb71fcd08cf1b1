//! The check of a binary split by kpack: for each device and each code object its HIP
//! wrappers ask for, the archive the kpack loader finds, or every path it searched, with its
//! environment variables as this process has them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::host::kpack::{runtime_path, ArchiveFiles, SplitBinary};
use crate::loads::kpack_search::{compatible_targets, device_arches, Environment, Outcome};
use crate::loads::runtime;
use crate::ops::check::{Device, Report};
use crate::ops::support::columns::ranges;
use crate::ops::support::names;
use crate::target::target_id::TargetIdBuf;

/// What a split binary keeps of its device code, and what each device finds of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KpackFile {
    /// The binary's name as its archives key it (`lib/libfoo.so`).
    pub kernel_name: String,
    /// The archive paths written in the binary, `@GFXARCH@` standing for a processor.
    pub search_paths: Vec<String>,
    /// The path the runtime knows the binary by (symbolic links resolved), against whose
    /// folder relative search paths resolve (text in JSON, as [`names`] carries names).
    #[serde(serialize_with = "names::text")]
    pub binary: PathBuf,
    /// The bytes of that path in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_bytes: Option<String>,
    /// One per code-object index the binary's wrappers ask for, in wrapper order.
    pub code_objects: Vec<KpackCodeObject>,
}

/// One code object a split binary asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KpackCodeObject {
    /// Its index (the HIP wrapper's).
    pub index: u64,
    /// The key the loader looks up: `"<kernel_name>#<index>"`.
    pub key: String,
    /// What each device finds, in device order.
    pub loads: Vec<KpackLoad>,
}

/// What one device finds of one code object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KpackLoad {
    /// The device's index.
    pub device: usize,
    /// `native` (code for its processor, or a subset of its features), `generic` (for the
    /// generic target the runtime maps it to), or `nothing`.
    pub loads: &'static str,
    /// The archive it is loaded from.
    #[serde(serialize_with = "names::optional_text")]
    pub archive: Option<PathBuf>,
    /// The bytes of that archive's path in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_bytes: Option<String>,
    /// The processor key of the archive's entry (`gfx90a`, `gfx90a:xnack-`).
    pub arch: Option<String>,
    /// The loader's result: `SUCCESS`, `ARCHIVE_NOT_FOUND`, `ARCH_NOT_FOUND`,
    /// `KERNEL_NOT_FOUND` or `NOT_IMPLEMENTED` (kpack turned off).
    pub loader: &'static str,
    /// Why nothing is loaded.
    pub why: Option<String>,
    /// When nothing is loaded: every path the loader tried, in its order, and what was there.
    pub searched: Vec<Searched>,
}

/// One path the loader tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Searched {
    /// The path.
    #[serde(serialize_with = "names::text")]
    pub path: PathBuf,
    /// The bytes of the path in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// What it held: `missing`, `not an archive: WHY`, `archive for PROCESSORS`.
    pub found: String,
}

/// What each of `devices` (read as `targets`) finds of each code object of the split binary
/// `split` at `path`.
pub fn check_split(
    path: &Path,
    split: &SplitBinary<'_>,
    devices: &[Device],
    targets: &[TargetIdBuf],
    env: &Environment,
) -> KpackFile {
    let binary = runtime_path(path);
    let mut archives = ArchiveFiles::new();
    let requests: Vec<Vec<String>> = targets
        .iter()
        .map(|t| {
            let isa = runtime::isa_name(t);
            let generic = runtime::generic_isa_name(&isa);
            device_arches(&isa, generic.as_deref())
        })
        .collect();
    let code_objects = split
        .distinct_indices()
        .into_iter()
        .map(|index| {
            let mut key = String::new();
            let loads = devices
                .iter()
                .zip(&requests)
                .map(|(device, arches)| {
                    let search = archives.search(&binary, split, index, arches, env);
                    key.clone_from(&search.key);
                    load(device.index, arches, &search)
                })
                .collect();
            KpackCodeObject { index, key, loads }
        })
        .collect();
    KpackFile {
        kernel_name: split.reference.kernel_name.to_string(),
        search_paths: split
            .reference
            .kpack_search_paths
            .iter()
            .map(|p| p.to_string())
            .collect(),
        binary_bytes: crate::io::bytes_unless_text(&binary),
        binary,
        code_objects,
    }
}

/// What device `device`, asking for `arches`, finds in `search`.
fn load(
    device: usize,
    arches: &[String],
    search: &crate::loads::kpack_search::Search,
) -> KpackLoad {
    let loader = search.outcome.loader_name();
    match &search.outcome {
        Outcome::Found { archive, arch } => {
            let native = arches
                .first()
                .is_some_and(|isa| compatible_targets(isa).contains(arch));
            KpackLoad {
                device,
                loads: if native { "native" } else { "generic" },
                archive: Some(archive.clone()),
                archive_bytes: crate::io::bytes_unless_text(archive),
                arch: Some(arch.clone()),
                loader,
                why: None,
                searched: Vec::new(),
            }
        }
        other => KpackLoad {
            device,
            loads: "nothing",
            archive: None,
            archive_bytes: None,
            arch: None,
            loader,
            why: other.why_not(),
            searched: search
                .tried
                .iter()
                .map(|t| Searched {
                    path: t.path.clone(),
                    path_bytes: crate::io::bytes_unless_text(&t.path),
                    found: t.opened.describe(),
                })
                .collect(),
        },
    }
}

/// The code objects of `kpack` whose loads for `device` are alike by `same` (in order of
/// first appearance): one load of each group and the indices in it.
fn groups<K: PartialEq>(
    kpack: &KpackFile,
    device: usize,
    same: impl Fn(&KpackLoad) -> K,
) -> Vec<(&KpackLoad, Vec<usize>)> {
    let mut groups: Vec<(&KpackLoad, K, Vec<usize>)> = Vec::new();
    for co in &kpack.code_objects {
        let Some(load) = co.loads.get(device) else {
            continue;
        };
        let index = usize::try_from(co.index).unwrap_or(usize::MAX);
        let key = same(load);
        match groups.iter_mut().find(|(_, k, _)| *k == key) {
            Some((_, _, indices)) => indices.push(index),
            None => groups.push((load, key, vec![index])),
        }
    }
    groups.into_iter().map(|(l, _, i)| (l, i)).collect()
}

/// "code object 3" or "code objects 0-2, 5".
fn code_objects_phrase(indices: &[usize]) -> String {
    let noun = if indices.len() == 1 {
        "code object"
    } else {
        "code objects"
    };
    format!("{noun} {}", ranges(indices))
}

/// The name of device `index` of `report`.
fn device_name(report: &Report, index: usize) -> String {
    report
        .devices
        .get(index)
        .map_or_else(String::new, |d| d.target_id.clone())
}

/// The devices' finds in the split binaries of `report`, for people: per file and device, the
/// code objects found alike (in the same archive, or nowhere after the same search).
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        let Some(kpack) = &file.kpack else { continue };
        out.push_str(&format!(
            "  {}: {} code object{}, keyed {}#N, searched at {}\n",
            crate::io::shown(&file.path),
            kpack.code_objects.len(),
            if kpack.code_objects.len() == 1 {
                ""
            } else {
                "s"
            },
            crate::io::shown(&kpack.kernel_name),
            crate::io::shown(&kpack.search_paths.join(", "))
        ));
        for device in &report.devices {
            let alike = groups(kpack, device.index, |l| {
                (
                    l.archive.clone(),
                    l.arch.clone(),
                    l.why.clone(),
                    l.searched.clone(),
                )
            });
            for (load, indices) in alike {
                let head = format!(
                    "    {} (device {}): {}",
                    device.target_id,
                    device.index,
                    code_objects_phrase(&indices)
                );
                match (&load.archive, &load.arch) {
                    (Some(archive), Some(arch)) => {
                        let how = match load.loads {
                            "generic" => " (generic target code)",
                            _ => "",
                        };
                        let archive = crate::io::shown(archive);
                        out.push_str(&format!("{head}: {archive} [{arch}]{how}\n"));
                    }
                    _ => {
                        let why = load.why.as_deref().unwrap_or("not found");
                        out.push_str(&format!("{head}: nothing: {why}\n"));
                        if !load.searched.is_empty() {
                            out.push_str("      searched:\n");
                        }
                        for s in &load.searched {
                            let path = crate::io::shown(&s.path);
                            out.push_str(&format!("        {path} ({})\n", s.found));
                        }
                    }
                }
            }
        }
    }
    out
}

/// Per device and file, the code objects it finds nothing for.
pub fn without_code(report: &Report) -> String {
    let mut out = String::new();
    for device in &report.devices {
        for file in &report.files {
            let Some(kpack) = &file.kpack else { continue };
            let lacking: Vec<usize> = groups(kpack, device.index, |l| l.loads == "nothing")
                .into_iter()
                .filter(|(l, _)| l.loads == "nothing")
                .flat_map(|(_, indices)| indices)
                .collect();
            if lacking.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "  {} (device {}): {} {} of {}: the kpack loader finds {}\n",
                device.target_id,
                device.index,
                crate::io::shown(&file.path),
                code_objects_phrase(&lacking),
                kpack.code_objects.len(),
                if lacking.len() == 1 {
                    "it nowhere"
                } else {
                    "none of them"
                },
            ));
        }
    }
    out
}

/// What the loader answers the runtime for the code objects a device finds nothing for.
pub fn consequences(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        let Some(kpack) = &file.kpack else { continue };
        for device in &report.devices {
            let answers = groups(kpack, device.index, |l| l.loader);
            for (load, indices) in answers.iter().filter(|(l, _)| l.loads == "nothing") {
                out.push_str(&format!(
                    "  {} {}: the kpack loader answers {} for {}: the runtime gets no code for \
                     that device.\n",
                    crate::io::shown(&file.path),
                    code_objects_phrase(indices),
                    load.loader,
                    device_name(report, device.index),
                ));
            }
        }
    }
    out
}

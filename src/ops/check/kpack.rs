//! The check of a binary split by kpack: for each device and each code object its HIP
//! wrappers ask for, the archive the kpack loader finds, or every path it searched, with its
//! environment variables as this process has them. The data only: `offload check` says it
//! for people.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::host::kpack::{runtime_path, ArchiveFiles, SplitBinary};
use crate::loads::kpack_search::{compatible_targets, device_arches, Environment, Outcome};
use crate::loads::runtime;
use crate::ops::check::Device;
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
    /// folder relative search paths resolve (text in JSON, as `names` carries names).
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
pub(crate) fn check_split(
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

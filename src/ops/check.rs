//! Whether a program and the libraries it loads have code for the machine's GPUs: for each
//! device and each bundle the HIP runtime is given (one per translation unit), what the
//! device loads by the runtime's own rule ([`runtime::loads`]), and what the runtime then
//! does with a device that has no code.
//!
//! The runtime goes through the devices in order for each bundle and stops at the first one
//! without code: that bundle's load fails with `hipErrorInvalidImage` for that device and
//! every device after it, and when it is the first device, for every device.
//!
//! A binary split by kpack keeps no bundles but asks the kpack loader for each code object
//! by index: for those, what each device finds is the loader's search (the `kpack` module).
//!
//! The check returns data only (a [`Report`], whose field names are `offload check --json`'s);
//! the text for people is the command line's (`cli/check/text.rs`).
//!
//! # Example
//!
//! What a gfx90a and a gfx1100 load from a bundle, as `offload check --device gfx90a
//! --device gfx1100 FILE` reports it.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::loads::kpack_search;
//! use offload::ops::check::{self, Device, Environment};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//!
//! let devices = Device::list(&[("gfx90a".parse()?, None), ("gfx1100".parse()?, None)]);
//! let (report, errors) = check::check(
//!     &[file.as_path()],
//!     &devices,
//!     &Environment::default(),
//!     &kpack_search::Environment::default(),
//!     DEFAULT_MAX_DECOMPRESSED,
//!     &(),
//! );
//! assert!(errors.is_empty(), "{errors:?}");
//! let loads: Vec<&str> = report.files[0].bundles[0].loads.iter().map(|l| l.loads).collect();
//! assert_eq!(loads, ["native", "nothing"]);
//! assert!(!report.every_device_has_code);
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::format::bare::{BareImage, BareKind};
use crate::format::container::Container;
use crate::format::image_target::Producer;
use crate::format::offload_binary::ImageKind;
use crate::host::kpack::split_binary;
use crate::host::ld_so;
/// What the dynamic loader reads from the process: `LD_LIBRARY_PATH`, its cache, the system
/// folders; [`check`] takes it to find a program's libraries as the loader would.
pub use crate::host::ld_so::{Environment, LdSoCache};
use crate::host::scan::{scan_reading, DeviceImage, Origin, Places, Reading};
use crate::host::BUNDLE_SECTION_PREFIX;
use crate::io::Input;
use crate::loads::cuda;
use crate::loads::kpack_search;
use crate::loads::openmp;
use crate::loads::runtime::{self, Load, AMDGCN_ISA_PREFIX};
use crate::ops::support::names;
use crate::ops::support::progress::Progress;
use crate::target::target_id::{TargetId, TargetIdBuf};

mod catalogue;
mod each;
mod kpack;
mod package;

pub use catalogue::{
    add_catalogues, catalogue_targets, is_catalogue_library, Catalogue, CatalogueDevice,
    CatalogueEnvironment, Catalogues,
};
#[cfg(feature = "cli")]
pub(crate) mod require;

pub use each::{check_each, Receiver, Verdict};
pub use kpack::{KpackCodeObject, KpackFile, KpackLoad, Searched};

/// One device of the check, in the runtime's order. The field names are a public interface
/// (`offload check --json`), as are those of every record below.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    /// Its place in the runtime's order, from 0.
    pub index: usize,
    /// Its full ISA name, as the runtime spells it (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
    pub isa: String,
    /// Its target ID (`gfx90a:sramecc+:xnack-`).
    pub target_id: String,
    /// The KFD node it was read from; `None` for a device named with `--device`.
    pub node: Option<u32>,
}

impl Device {
    /// The devices `targets` name, in order, read from KFD `nodes` when given.
    pub fn list(targets: &[(TargetIdBuf, Option<u32>)]) -> Vec<Device> {
        targets
            .iter()
            .enumerate()
            .map(|(index, (target, node))| Device {
                index,
                isa: if cuda::is_cuda_target(target.as_str()) {
                    target.to_string()
                } else {
                    format!("{AMDGCN_ISA_PREFIX}{target}")
                },
                target_id: target.to_string(),
                node: *node,
            })
            .collect()
    }
}

/// What one device loads from one bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceLoad {
    /// The device's index.
    pub device: usize,
    /// `native`, `generic`, `spirv` (compiled for the device when loaded) or `nothing`; for
    /// a CUDA fat binary, `native`, `forward` (a cubin for an earlier SM of its major version),
    /// `ptx` (compiled when loaded) or `nothing`; `other` for a device of another runtime (a
    /// CUDA device in a bundle, an AMD device in a CUDA fat binary).
    pub loads: &'static str,
    /// The entry ID of the entry it loads (a CUDA entry's SM: `sm_80`, `compute_90`).
    pub entry: Option<String>,
    /// What the runtime does for the device: `loads`, or `fails` when this device or an
    /// earlier one has no code in the bundle (for a CUDA fat binary, this device).
    pub runtime: &'static str,
}

impl DeviceLoad {
    /// A device of another runtime than the one that loads the code: it takes no part.
    fn other(device: usize) -> DeviceLoad {
        DeviceLoad {
            device,
            loads: "other",
            entry: None,
            runtime: "loads",
        }
    }
}

/// One bundle the runtime is given (or CUDA fat binary the CUDA runtime is given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleReport {
    /// Its number in the file, from 1, in file order.
    pub index: usize,
    /// The runtime that loads it: `hip` (a bundle), `module` (a bare code object, which
    /// `hipModuleLoad` takes as it is), `cuda` (a CUDA fat binary), `cuda-module` (a bare
    /// cubin or PTX, which `cuModuleLoad` takes as it is) or `openmp` (offload binaries).
    pub runtime: &'static str,
    /// The section that holds it.
    pub section: Option<String>,
    /// The archive member that holds it, if any.
    pub member: Option<String>,
    /// Whether it is stored compressed.
    pub compressed: bool,
    /// The target IDs it has code for (entries of HIP kinds with a size), each once, in
    /// bundle order.
    pub targets: Vec<String>,
    /// What each device loads, in device order.
    pub loads: Vec<DeviceLoad>,
    /// The first device without code, if any: the runtime stops there (for a bundle, the
    /// first AMD device without code; CUDA devices are not the HIP runtime's).
    pub first_without_code: Option<usize>,
    /// Whether it is embedded as data (a program's read-only data): no runtime registers it,
    /// the program loads it itself (`hipModuleLoadData`, `cuModuleLoadData`) when it asks for
    /// it. Numbered after the registered ones; a device without code in it is reported apart.
    pub embedded: bool,
}

/// How many of a file's bundles a device loads each way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// The device's index.
    pub device: usize,
    /// Bundles it loads native code from.
    pub native: usize,
    /// Bundles it loads a generic target's code from.
    pub generic: usize,
    /// Bundles it loads SPIR-V from.
    pub spirv: usize,
    /// Bundles it has no code in.
    pub nothing: usize,
    /// Bundles whose load fails for it (it or an earlier device has no code there).
    pub fails: usize,
}

/// One file: the program or library named, or a library it loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// Its path, as named or as found (text in JSON, as `names` carries names).
    #[serde(serialize_with = "names::text")]
    pub path: PathBuf,
    /// Its path's bytes in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The `DT_NEEDED` name it was loaded by; `None` for a file named on the command line.
    pub needed_as: Option<String>,
    /// The path of the file that first needed it.
    #[serde(serialize_with = "names::optional_text")]
    pub needed_by: Option<PathBuf>,
    /// The bytes of that path in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed_by_bytes: Option<String>,
    /// How it was found: `argument`, `path`, `rpath`, `LD_LIBRARY_PATH`, `runpath`,
    /// `ld.so.cache` or `default`; `member` for a package member no other member loads,
    /// checked for itself.
    pub found_via: &'static str,
    /// Its bundles.
    pub bundles: Vec<BundleReport>,
    /// Per device, how its bundles (and code objects in kpack archives) load.
    pub counts: Vec<Counts>,
    /// For a binary split by kpack: each code object it asks for, and what each device finds
    /// of it. Left out of the JSON for other files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kpack: Option<KpackFile>,
    /// For rocBLAS and hipBLASLt, the kernel catalogue each device opens (filled by
    /// [`add_catalogues`]). Left out of the JSON for other files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub catalogues: Vec<Catalogue>,
}

/// A library found nowhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotFound {
    /// The `DT_NEEDED` name.
    pub name: String,
    /// The path of the file that needs it.
    #[serde(serialize_with = "names::text")]
    pub needed_by: PathBuf,
    /// The bytes of that path in base64, only when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed_by_bytes: Option<String>,
    /// Whether the file that needs it is a package member (`PACKAGE!member`): the name was
    /// looked for in the package alone, as it installs, and the package does not hold it
    /// (another package, or the system, provides it). Left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_package: bool,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The devices, in the runtime's order.
    pub devices: Vec<Device>,
    /// Every file checked, each once, in load order.
    pub files: Vec<FileReport>,
    /// The libraries found nowhere (not checked).
    pub not_found: Vec<NotFound>,
    /// Whether every device has code in every bundle a runtime is given (images embedded as
    /// data left out) and in every code object of kpack archives.
    pub every_device_has_code: bool,
    /// Whether every device has code in every device image embedded as data (true when
    /// there are none).
    pub embedded_have_code: bool,
    /// With `--driver`: the entries of each file a driver that old cannot use. Left out of the
    /// JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<crate::ops::targets::DriverCheck>,
}

/// Checks `roots` and the libraries they load (found as ld.so finds them in `env`) for
/// `devices`, the code of binaries split by kpack searched for as the kpack loader does in
/// `kpack_env`. Files that cannot be read, or whose device code is damaged (a compressed
/// bundle declaring more than `max_decompressed` bytes among them), are returned as errors
/// beside the report. The files are read in parallel (on the current rayon pool), `progress`
/// told of each file checked; the report is in load order whatever the order they were read
/// in.
pub fn check(
    roots: &[&Path],
    devices: &[Device],
    env: &Environment,
    kpack_env: &kpack_search::Environment,
    max_decompressed: u64,
    progress: &dyn Progress,
) -> (Report, Vec<Error>) {
    let machines = [devices.to_vec()];
    let mut checked = check_machines(roots, &machines, env, kpack_env, max_decompressed, progress);
    checked
        .pop()
        .unwrap_or_else(|| (empty_report(devices), Vec::new()))
}

/// [`check`] for each of `machines` (the devices of one machine each), the files read once:
/// a report per machine, in order. The errors of reading the files come with the first.
pub fn check_machines(
    roots: &[&Path],
    machines: &[Vec<Device>],
    env: &Environment,
    kpack_env: &kpack_search::Environment,
    max_decompressed: u64,
    progress: &dyn Progress,
) -> Vec<(Report, Vec<Error>)> {
    let mut errors = Vec::new();
    // A package is the tree it installs to, searched apart from the file system; it is read
    // once for all the machines (a compressed package costs its inflating each time).
    let (packages, roots): (Vec<&Path>, Vec<&Path>) =
        roots.iter().partition(|root| package::is_package(root));
    let mut packages: Vec<std::vec::IntoIter<package::PackageCheck>> = packages
        .par_iter()
        .map(|p| package::check_package(p, machines, max_decompressed).into_iter())
        .collect();
    // What each root loads, its files closed again: a tree of thousands of programs is not
    // held open at once.
    let orders: Vec<Result<LoadOrder>> =
        roots.par_iter().map(|root| load_order(root, env)).collect();
    let mut seen = HashSet::new();
    let mut objects = Vec::new();
    let mut not_found = Vec::new();
    for order in orders {
        let order = match order {
            Ok(order) => order,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        for object in order.objects {
            let real = std::fs::canonicalize(&object.path).unwrap_or(object.path.clone());
            if seen.insert(real) {
                objects.push(object);
            }
        }
        not_found.extend(order.not_found);
    }
    let mut reports = Vec::new();
    for devices in machines {
        let mut report = empty_report(devices);
        report.not_found = not_found.clone();
        let mine: Vec<package::PackageCheck> =
            packages.iter_mut().filter_map(Iterator::next).collect();
        let mut found = machine_report(
            report,
            &objects,
            mine,
            kpack_env,
            max_decompressed,
            progress,
        );
        if reports.is_empty() {
            found.1.splice(0..0, std::mem::take(&mut errors));
        }
        reports.push(found);
    }
    reports
}

/// A report of `devices` with nothing checked yet.
fn empty_report(devices: &[Device]) -> Report {
    Report {
        devices: devices.to_vec(),
        files: Vec::new(),
        not_found: Vec::new(),
        every_device_has_code: true,
        embedded_have_code: true,
        driver: None,
    }
}

/// The report of one machine (`report`'s devices): the files `objects` checked for them,
/// and the packages checked.
fn machine_report(
    mut report: Report,
    objects: &[LoadedFile],
    packages: Vec<package::PackageCheck>,
    kpack_env: &kpack_search::Environment,
    max_decompressed: u64,
    progress: &dyn Progress,
) -> (Report, Vec<Error>) {
    let devices = report.devices.clone();
    let targets: Vec<TargetIdBuf> = devices
        .iter()
        .filter_map(|d| runtime::parse_device(&d.target_id).ok())
        .collect();
    let mut errors = Vec::new();
    progress.start(objects.len() as u64);
    let checked: Vec<(Option<FileReport>, Vec<Error>)> = objects
        .par_iter()
        .map(|object| {
            let checked = check_file(object, &devices, &targets, kpack_env, max_decompressed);
            progress.advance(1);
            checked
        })
        .collect();
    progress.finish();
    for (file, problems) in checked {
        errors.extend(problems);
        report.files.extend(file);
    }
    for package in packages {
        report.files.extend(package.files);
        report.not_found.extend(package.not_found);
        errors.extend(package.errors);
    }
    let kpack_loads = report
        .files
        .iter()
        .filter_map(|f| f.kpack.as_ref())
        .flat_map(|k| &k.code_objects)
        .flat_map(|co| &co.loads);
    let all_load = |embedded: bool| {
        report
            .files
            .iter()
            .flat_map(|f| &f.bundles)
            .filter(|b| b.embedded == embedded)
            .all(|b| b.first_without_code.is_none())
    };
    report.every_device_has_code =
        all_load(false) && kpack_loads.into_iter().all(|l| l.loads != "nothing");
    report.embedded_have_code = all_load(true);
    (report, errors)
}

/// A file a root loads, with how it was found.
#[derive(Clone)]
struct LoadedFile {
    path: std::path::PathBuf,
    needed_as: Option<String>,
    needed_by: Option<PathBuf>,
    found_via: &'static str,
}

/// What one root loads, in load order, and the libraries it needs that are found nowhere.
struct LoadOrder {
    objects: Vec<LoadedFile>,
    not_found: Vec<NotFound>,
}

/// [`ld_so::load_order`] of `root`, the files it maps closed again. An archive or a bare
/// container file (no ELF file, so no dependencies) is checked alone.
fn load_order(root: &Path, env: &Environment) -> Result<LoadOrder> {
    let (loaded, missing) = match ld_so::load_order(root, env) {
        Ok(found) => found,
        Err(e) if checked_alone(root) => {
            tracing::debug!("{e}: checked alone");
            let alone = LoadedFile {
                path: root.to_path_buf(),
                needed_as: None,
                needed_by: None,
                found_via: "argument",
            };
            return Ok(LoadOrder {
                objects: vec![alone],
                not_found: Vec::new(),
            });
        }
        Err(e) => return Err(e),
    };
    let name = |i: usize| loaded[i].path.clone();
    let not_found = missing
        .into_iter()
        .map(|m| NotFound {
            name: m.name,
            needed_by_bytes: crate::io::bytes_unless_text(&loaded[m.needed_by].path),
            needed_by: name(m.needed_by),
            in_package: false,
        })
        .collect();
    let objects = loaded
        .iter()
        .map(|object| LoadedFile {
            path: object.path.clone(),
            needed_as: object.needed_as.clone(),
            needed_by: object.needed_by.map(name),
            found_via: object.found_via.name(),
        })
        .collect();
    Ok(LoadOrder { objects, not_found })
}

/// What `check` does with `path` when it is a Windows image or object: a note saying that
/// its own bundles are checked and the libraries it loads are not searched for; `None` for
/// any other file.
pub fn checked_alone_note(path: &Path) -> Option<String> {
    let input = Input::open(path).ok()?;
    let what = match object::FileKind::parse(&*input).ok()? {
        object::FileKind::Pe32 | object::FileKind::Pe64 => "a PE image",
        object::FileKind::Coff => "a COFF object",
        _ => return None,
    };
    Some(format!(
        "'{}': {what}: its own bundles are checked; the DLLs it loads are not searched for (check follows the libraries of ELF programs only)",
        crate::io::shown(path)
    ))
}

/// Whether `path` is an archive, a file that starts with a container (a bundle, an offload
/// binary) or a bare device image: device code a runtime or a link takes, with no libraries
/// of its own; or a PE image or COFF object, whose own bundles are checked (the libraries a
/// Windows loader would find are not searched: the search followed is ELF's).
fn checked_alone(path: &Path) -> bool {
    let Ok(input) = Input::open(path) else {
        return false;
    };
    matches!(
        object::FileKind::parse(&*input),
        Ok(object::FileKind::Archive
            | object::FileKind::Pe32
            | object::FileKind::Pe64
            | object::FileKind::Coff)
    ) || Container::at_start(&input).is_some()
        || BareImage::parse(&input).is_some()
}

/// The report on one file and the problems found in it; no report when it cannot be read.
fn check_file(
    object: &LoadedFile,
    devices: &[Device],
    targets: &[TargetIdBuf],
    kpack_env: &kpack_search::Environment,
    max_decompressed: u64,
) -> (Option<FileReport>, Vec<Error>) {
    let input = match Input::open(&object.path) {
        Ok(input) => input,
        Err(e) => return (None, vec![e.into()]),
    };
    let (bundles, mut problems) = bundles_of(&object.path, &input, targets, max_decompressed);
    let kpack = match split_binary(&object.path, &input) {
        Ok(split) => {
            split.map(|split| kpack::check_split(&object.path, &split, devices, targets, kpack_env))
        }
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let report = FileReport {
        path_bytes: crate::io::bytes_unless_text(&object.path),
        path: object.path.clone(),
        needed_as: object.needed_as.clone(),
        needed_by_bytes: names::optional_bytes(object.needed_by.as_ref()),
        needed_by: object.needed_by.clone(),
        found_via: object.found_via,
        counts: counts(&bundles, kpack.as_ref(), devices.len()),
        bundles,
        kpack,
        catalogues: Vec::new(),
    };
    (Some(report), problems)
}

/// A bundle entry as the scan reports it.
struct FoundEntry {
    unit: usize,
    id: String,
    /// Whether its kind is one the HIP runtime takes.
    hip: bool,
    /// Its target ID.
    target_id: String,
    size: u64,
    compressed: bool,
    section: Option<String>,
    member: Option<String>,
}

/// The device images of one file a check takes, as the scan reports them.
#[derive(Default)]
struct Seen {
    /// Whether the file is a linked program or library (its bitcode is compiled when loaded).
    linked: bool,
    bundles: Vec<FoundEntry>,
    cuda: Vec<(usize, String, Option<String>, Option<String>)>,
    /// Bare cubins and PTX, which `cuModuleLoad` takes.
    cuda_modules: Vec<(usize, String, Option<String>, Option<String>)>,
    modules: Vec<(String, Option<String>, Option<String>)>,
    offloaded: Vec<OffloadedImage>,
}

impl Seen {
    /// Keeps `image` where a runtime takes it.
    fn see(&mut self, image: &DeviceImage<'_>) {
        let section = image.section.map(str::to_string);
        let member = image.members.last().cloned();
        let target_id = image.target.target_id.clone();
        match image.origin {
            Origin::OffloadImage(entry) if image.target.triple.starts_with("amdgcn") => {
                self.offloaded.push(OffloadedImage {
                    unit: image.unit,
                    openmp: image.target.producer == Producer::OpenMp,
                    target_id,
                    // Bitcode a program registers is compiled when loaded; an object's is
                    // linked first, for its own processor.
                    jit: entry.image_kind == ImageKind::Bitcode
                        && image.members.is_empty()
                        && self.linked,
                    section,
                    member,
                });
            }
            Origin::OffloadImage(_) => {}
            Origin::Bare(bare) => match bare.kind {
                BareKind::CodeObject => self.modules.push((target_id, section, member)),
                // cuModuleLoad takes a cubin or PTX as the driver takes a fat binary of one.
                BareKind::Cubin | BareKind::Ptx => {
                    self.cuda_modules
                        .push((image.unit, target_id, section, member));
                }
                // No runtime loads SPIR-V or bitcode as it is.
                BareKind::Spirv | BareKind::Bitcode => {}
            },
            Origin::CudaEntry(_) => self.cuda.push((image.unit, target_id, section, member)),
            // Bundles stored as sections of a relocatable object are no program's code yet.
            Origin::BundleEntry(_)
                if section
                    .as_deref()
                    .is_some_and(|s| s.starts_with(BUNDLE_SECTION_PREFIX)) => {}
            Origin::BundleEntry(id) => self.bundles.push(FoundEntry {
                unit: image.unit,
                id: id.to_string(),
                hip: is_hip(&image.target.producer),
                target_id,
                size: image.size,
                compressed: image.compressed,
                section,
                member,
            }),
        }
    }
}

/// The bundles of one file the runtime is given, each checked for `devices`.
fn bundles_of(
    path: &Path,
    input: &[u8],
    devices: &[TargetIdBuf],
    max_decompressed: u64,
) -> (Vec<BundleReport>, Vec<Error>) {
    let linked = crate::host::is_linked_elf(input);
    // Registered code, and device images embedded as data, which the program loads itself.
    let mut seen = [
        Seen {
            linked,
            ..Seen::default()
        },
        Seen {
            linked,
            ..Seen::default()
        },
    ];
    let visit = &mut |image: &DeviceImage<'_>| seen[usize::from(image.embedded)].see(image);
    // Which entry the runtime picks needs entry IDs and sizes only: compressed bundles are
    // inflated up to their bundle's header.
    let problems = match scan_reading(
        path,
        input,
        Places::Everywhere,
        max_decompressed,
        Reading::Headers,
        visit,
    ) {
        Ok(problems) => problems,
        Err(e) => vec![e],
    };
    let [registered, embedded] = seen;
    let mut bundles = Vec::new();
    reports_of(registered, devices, &mut bundles);
    let first_embedded = bundles.len();
    reports_of(embedded, devices, &mut bundles);
    for report in &mut bundles[first_embedded..] {
        report.embedded = true;
    }
    (bundles, problems)
}

/// The reports on the bundles, fat binaries, modules and offload binaries `seen` holds,
/// numbered on from those `bundles` holds, each checked for `devices`.
fn reports_of(seen: Seen, devices: &[TargetIdBuf], bundles: &mut Vec<BundleReport>) {
    let any_cuda = devices.iter().any(|d| cuda::is_cuda_target(d.as_str()));
    let all_cuda = any_cuda && devices.iter().all(|d| cuda::is_cuda_target(d.as_str()));
    for unit in seen.bundles.chunk_by(|a, b| a.unit == b.unit) {
        if !unit.iter().any(|e| e.hip) || all_cuda {
            // Only the HIP runtime's bundles: OpenMP's are another runtime's to load.
            continue;
        }
        bundles.push(check_bundle(bundles.len() + 1, unit, devices));
    }
    if any_cuda {
        for unit in seen.cuda.chunk_by(|a, b| a.0 == b.0) {
            bundles.push(check_fatbin(bundles.len() + 1, unit, devices));
        }
        for module in seen.cuda_modules {
            let mut report = check_fatbin(bundles.len() + 1, &[module], devices);
            report.runtime = "cuda-module";
            bundles.push(report);
        }
    }
    if !all_cuda {
        for module in seen.modules {
            bundles.push(check_module(bundles.len() + 1, module, devices));
        }
        for unit in seen.offloaded.chunk_by(|a, b| a.unit == b.unit) {
            bundles.push(check_offloaded(bundles.len() + 1, unit, devices));
        }
    }
}

/// An AMDGPU image of an offload binary (`.llvm.offloading`) as the scan reports it.
struct OffloadedImage {
    unit: usize,
    /// Whether OpenMP made it (else HIP, or no kind: linked into a bundle the HIP runtime
    /// loads).
    openmp: bool,
    target_id: String,
    /// Whether it is LLVM bitcode a program registers, which the OpenMP runtime compiles for
    /// any AMDGPU device.
    jit: bool,
    section: Option<String>,
    member: Option<String>,
}

/// What each device loads from the AMDGPU images of the offload binaries of one place (one
/// translation unit), numbered `index`. OpenMP's (libomptarget, LLVM 21 and later): the first
/// image, in stored order, compatible with the device (the same processor with the features
/// it fixes set alike, a generic target covering it, or bitcode, compiled when loaded); a
/// device with none runs the unit's target regions on the host. Others are linked into a
/// bundle the HIP runtime loads: native code, else generic, else SPIR-V.
fn check_offloaded(index: usize, unit: &[OffloadedImage], devices: &[TargetIdBuf]) -> BundleReport {
    let openmp = unit.iter().all(|i| i.openmp);
    let images: Vec<openmp::Image<'_>> = unit
        .iter()
        .map(|i| openmp::Image {
            target_id: TargetId::parse_syntax(&i.target_id),
            jit: i.jit,
        })
        .collect();
    let ids: Vec<&str> = unit.iter().map(|i| i.target_id.as_str()).collect();
    let loads = image_loads(devices, &images, openmp, &ids);
    let mut targets: Vec<String> = Vec::new();
    for image in unit {
        if !targets.contains(&image.target_id) {
            targets.push(image.target_id.clone());
        }
    }
    BundleReport {
        index,
        runtime: if openmp { "openmp" } else { "hip" },
        section: unit[0].section.clone(),
        member: unit[0].member.clone(),
        compressed: false,
        targets,
        first_without_code: loads.iter().position(|l| l.loads == "nothing"),
        loads,
        embedded: false,
    }
}

/// What each device loads from `images` (their target IDs as stored, `ids`), by
/// [`openmp::pick`]: the image's target ID, or nothing (the device fails); a CUDA device takes
/// no part.
fn image_loads(
    devices: &[TargetIdBuf],
    images: &[openmp::Image<'_>],
    openmp: bool,
    ids: &[&str],
) -> Vec<DeviceLoad> {
    devices
        .iter()
        .enumerate()
        .map(|(device, d)| {
            if cuda::is_cuda_target(d.as_str()) {
                return DeviceLoad::other(device);
            }
            let pick = openmp::pick(&d.target_id(), images, openmp);
            DeviceLoad {
                device,
                loads: pick.map_or("nothing", |(_, via)| via.name()),
                entry: pick.map(|(i, _)| ids[i].to_string()),
                runtime: if pick.is_some() { "loads" } else { "fails" },
            }
        })
        .collect()
}

/// What each device loads from a bare code object (its target ID, section and member),
/// numbered `index`: `hipModuleLoad` takes it as it is, on the current device alone, and
/// builds it when the device's ISA is compatible: the same processor with no feature set
/// otherwise (`xnack`, `sramecc`), or a generic target that covers the processor. A device
/// it is not compatible with fails alone (hipErrorNoBinaryForGpu); a CUDA device has no part.
fn check_module(
    index: usize,
    (target_id, section, member): (String, Option<String>, Option<String>),
    devices: &[TargetIdBuf],
) -> BundleReport {
    // hipModuleLoad builds one code object as the OpenMP runtime takes one image.
    let image = openmp::Image {
        target_id: TargetId::parse_syntax(&target_id),
        jit: false,
    };
    let loads = image_loads(devices, &[image], true, &[target_id.as_str()]);
    BundleReport {
        index,
        runtime: "module",
        section,
        member,
        compressed: false,
        targets: vec![target_id.clone()],
        first_without_code: loads.iter().position(|l| l.loads == "nothing"),
        loads,
        embedded: false,
    }
}

/// What each device loads from one CUDA fat binary (its entries' unit, target names,
/// section and member), numbered `index`: a CUDA device the driver's pick
/// ([`cuda::driver_pick`]); a device of another runtime nothing of it. A CUDA device
/// without code fails alone: the others still load theirs.
fn check_fatbin(
    index: usize,
    entries: &[(usize, String, Option<String>, Option<String>)],
    devices: &[TargetIdBuf],
) -> BundleReport {
    let unit: Vec<&str> = entries
        .iter()
        .map(|(_, name, _, _)| name.as_str())
        .collect();
    let loads: Vec<DeviceLoad> = devices
        .iter()
        .enumerate()
        .map(|(device, d)| {
            if !cuda::is_cuda_target(d.as_str()) {
                return DeviceLoad::other(device);
            }
            let load = cuda::driver_load(d.as_str(), &unit);
            DeviceLoad {
                device,
                loads: load.map_or("nothing", |(_, via)| via.name()),
                entry: load.map(|(pick, _)| unit[pick].to_string()),
                runtime: if load.is_some() { "loads" } else { "fails" },
            }
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for (_, name, _, _) in entries {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    BundleReport {
        index,
        runtime: "cuda",
        section: entries[0].2.clone(),
        member: entries[0].3.clone(),
        compressed: false,
        targets: names,
        first_without_code: loads.iter().position(|l| l.loads == "nothing"),
        loads,
        embedded: false,
    }
}

/// Whether entries of `producer` are of a kind the HIP runtime takes (`hip`, `hipv4`, `hcc`).
fn is_hip(producer: &Producer) -> bool {
    match producer {
        Producer::Hip => true,
        Producer::Other(kind) => kind == "hcc",
        _ => false,
    }
}

/// What each device loads from one bundle, numbered `index`: an AMD device by the HIP
/// runtime's choice among the AMD devices alone (the runtime sees no other), a CUDA device
/// nothing of it (`other`).
fn check_bundle(index: usize, entries: &[FoundEntry], devices: &[TargetIdBuf]) -> BundleReport {
    let bundle = runtime::Bundle::from_entries(
        entries.iter().map(|e| (e.id.as_str(), e.size)),
        entries[0].compressed,
    );
    let names: Vec<&str> = devices.iter().map(TargetIdBuf::as_str).collect();
    let hip = hip_devices(&names);
    let targets: Vec<TargetIdBuf> = hip.iter().map(|&d| devices[d].clone()).collect();
    let hip_loads = runtime::loads(&targets, &bundle);
    let first_without_code = hip_loads
        .iter()
        .position(|l| matches!(l, Load::Nothing(_)))
        .map(|k| hip[k]);
    let mut loads: Vec<DeviceLoad> = (0..devices.len()).map(DeviceLoad::other).collect();
    for (&device, load) in hip.iter().zip(&hip_loads) {
        loads[device] = DeviceLoad {
            device,
            loads: match load {
                Load::Entry(_, via) => via.name(),
                Load::Nothing(_) => "nothing",
            },
            entry: match load {
                Load::Entry(i, _) => entries.get(*i).map(|e| e.id.clone()),
                Load::Nothing(_) => None,
            },
            runtime: if first_without_code.is_some_and(|first| device >= first) {
                "fails"
            } else {
                "loads"
            },
        };
    }
    let mut targets: Vec<String> = Vec::new();
    for entry in entries.iter().filter(|e| e.size > 0 && e.hip) {
        if !entry.target_id.is_empty() && !targets.contains(&entry.target_id) {
            targets.push(entry.target_id.clone());
        }
    }
    BundleReport {
        index,
        runtime: "hip",
        section: entries[0].section.clone(),
        member: entries[0].member.clone(),
        compressed: entries[0].compressed,
        targets,
        loads,
        first_without_code,
        embedded: false,
    }
}

/// The indexes of the devices the HIP runtime sees (AMD devices, not CUDA ones), in order.
pub fn hip_devices(devices: &[&str]) -> Vec<usize> {
    (0..devices.len())
        .filter(|&d| !cuda::is_cuda_target(devices[d]))
        .collect()
}

/// Per device, how `bundles` (those embedded as data left out) and the code objects of `kpack`
/// load.
fn counts(bundles: &[BundleReport], kpack: Option<&KpackFile>, devices: usize) -> Vec<Counts> {
    let mut counts: Vec<Counts> = (0..devices)
        .map(|device| Counts {
            device,
            ..Counts::default()
        })
        .collect();
    let registered = bundles.iter().filter(|b| !b.embedded);
    for load in registered.flat_map(|b| &b.loads) {
        let Some(c) = counts.get_mut(load.device) else {
            continue;
        };
        match load.loads {
            "native" => c.native += 1,
            "generic" => c.generic += 1,
            "spirv" | "ptx" | "jit" => c.spirv += 1,
            "forward" => c.native += 1,
            "other" => {}
            _ => c.nothing += 1,
        }
        if load.runtime == "fails" {
            c.fails += 1;
        }
    }
    let kpack_loads = kpack.into_iter().flat_map(|k| &k.code_objects);
    for load in kpack_loads.flat_map(|co| &co.loads) {
        let Some(c) = counts.get_mut(load.device) else {
            continue;
        };
        match load.loads {
            "native" => c.native += 1,
            "generic" => c.generic += 1,
            _ => {
                c.nothing += 1;
                c.fails += 1;
            }
        }
    }
    counts
}

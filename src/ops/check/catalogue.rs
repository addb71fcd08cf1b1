//! The kernel catalogues of rocBLAS and hipBLASLt: besides the code in their own fat binaries,
//! both libraries open a Tensile catalogue named after the device's processor, in a folder
//! they find next to themselves (or where an environment variable says), and load their GEMM
//! kernels lazily from code objects in that folder. A device whose processor has no catalogue
//! gets no BLAS at all, however well the libraries' own bundles load (a generic target in a
//! bundle does not help: neither library looks for generic-named catalogues). This module
//! repeats their search on the files of a report; the rules and their sources are in
//! `docs/commands/check.md`, "Kernel catalogues".

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use serde::Serialize;

use super::Report;
use crate::io::{shown, Input};
use crate::loads::runtime::AMDGCN_ISA_PREFIX;
use crate::ops::support::names;
use crate::ops::targets::CatalogueTargets;
use crate::target::processor::PROCESSORS;

/// The variables the libraries read to find their catalogues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogueEnvironment {
    /// `ROCBLAS_TENSILE_LIBPATH`.
    pub rocblas: Option<OsString>,
    /// `HIPBLASLT_TENSILE_LIBPATH`.
    pub hipblaslt: Option<OsString>,
}

impl CatalogueEnvironment {
    /// The variables as `get` gives them (e.g. `std::env::var_os`).
    pub fn from_vars(get: impl Fn(&str) -> Option<OsString>) -> CatalogueEnvironment {
        CatalogueEnvironment {
            rocblas: get(ROCBLAS_VAR),
            hipblaslt: get(HIPBLASLT_VAR),
        }
    }
}

const ROCBLAS_VAR: &str = "ROCBLAS_TENSILE_LIBPATH";
const HIPBLASLT_VAR: &str = "HIPBLASLT_TENSILE_LIBPATH";

/// A library's catalogue folder and what each device finds in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Catalogue {
    /// `rocBLAS` or `hipBLASLt`.
    pub library: &'static str,
    /// The folder the library searches, before any folder of the processor's own.
    #[serde(serialize_with = "names::text")]
    pub folder: PathBuf,
    /// How it is found: the variable's name, or the path relative to the library's own folder
    /// (`hipblaslt/library`, Debian's `rocblas/4.4.1/library`...).
    pub found_via: String,
    /// Each device.
    pub devices: Vec<CatalogueDevice>,
}

/// What one device finds in a catalogue folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogueDevice {
    /// The device's index.
    pub device: usize,
    /// Its processor, the name the files carry (the device's name before the first `:`).
    pub processor: String,
    /// The folder its files are looked for in (the processor's own subfolder when there is one).
    #[serde(serialize_with = "names::text")]
    pub folder: PathBuf,
    /// The catalogue files the library tries, in order.
    pub tried: Vec<String>,
    /// The one it opens; `None` when none exists.
    pub opens: Option<String>,
    /// hipBLASLt's mapping of solutions to code objects, when found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// The helper code object loaded first (`Kernels.so-000-<processor>[-xnack±].hsaco`),
    /// when found (its absence is not fatal).
    pub kernels: Option<String>,
    /// How many code objects (`.co`, `.hsaco`) of the folder are named for the processor
    /// (those of the other xnack mode left out).
    pub code_objects: usize,
    /// Whether the library finds what it needs.
    pub ok: bool,
    /// When it does not: which files it opens where (none exists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// When it does not: what it prints, in its own words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it does not: what the program sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub then: Option<&'static str>,
}

/// Which library a file is, by its name as the libraries find themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    RocBlas,
    HipBlasLt,
}

impl Library {
    fn of(path: &Path) -> Option<Library> {
        let name = path.file_name()?.as_bytes();
        if name.starts_with(b"librocblas.so") {
            Some(Library::RocBlas)
        } else if name.starts_with(b"libhipblaslt.so") {
            Some(Library::HipBlasLt)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Library::RocBlas => "rocBLAS",
            Library::HipBlasLt => "hipBLASLt",
        }
    }
}

/// Where a library's catalogue folder is looked for: the file system, or the tree a package
/// installs to. Paths are the search's own (see [`crate::host::package::tree`]).
pub(super) trait Place {
    /// Whether `path` is a folder.
    fn is_dir(&self, path: &Path) -> bool;
    /// The names in the folder `path` (none when it is not one).
    fn names(&self, folder: &Path) -> Vec<OsString>;
    /// The folder a distribution patched into rocBLAS at `library`, when it did (Debian's
    /// `rocblas/4.4.1/library`).
    fn patched_folder(&self, library: &Path) -> Option<String>;
    /// `path` as shown to people.
    fn shown(&self, path: &Path) -> PathBuf;
}

/// The file system.
struct Disk;

impl Place for Disk {
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn names(&self, folder: &Path) -> Vec<OsString> {
        std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn patched_folder(&self, library: &Path) -> Option<String> {
        let input = Input::open(library).ok()?;
        patched_folder_in(&input)
    }

    fn shown(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
}

/// Adds to each file of `report` that is rocBLAS or hipBLASLt, installed on disk, its
/// catalogue, the variables read from `env`. The members of packages keep the catalogues
/// their package's check found in the package (the variables are not read for them: they
/// name folders of this machine, not of the package). A device without a catalogue, in any
/// file, leaves the report's `every_device_has_code` false.
pub fn add_catalogues(report: &mut Report, env: &CatalogueEnvironment) {
    let mut adding = Catalogues::new(&report.devices, env);
    let mut lacking = false;
    for file in &mut report.files {
        lacking |= adding.add(file);
    }
    if lacking {
        report.every_device_has_code = false;
    }
}

/// [`add_catalogues`] a file at a time, for files handed over as they are checked
/// ([`super::check_each`]): the folders listed are kept for the files after.
pub struct Catalogues<'e> {
    devices: Vec<(usize, String)>,
    env: &'e CatalogueEnvironment,
    listings: Listings<'static>,
}

impl<'e> Catalogues<'e> {
    /// For `devices`, the variables read from `env`.
    pub fn new(devices: &[super::Device], env: &'e CatalogueEnvironment) -> Catalogues<'e> {
        Catalogues {
            devices: (devices.iter())
                .map(|d| (d.index, d.target_id.clone()))
                .collect(),
            env,
            listings: Listings::new(&Disk),
        }
    }

    /// Adds to `file`, when it is rocBLAS or hipBLASLt installed on disk, its catalogue;
    /// whether a device is without a catalogue in it (a package member's included).
    pub fn add(&mut self, file: &mut super::FileReport) -> bool {
        if file.catalogues.is_empty() && file.path.is_file() {
            file.catalogues =
                catalogues_of(&file.path, &self.devices, self.env, &mut self.listings);
        }
        (file.catalogues.iter())
            .flat_map(|c| &c.devices)
            .any(|d| !d.ok)
    }
}

/// The catalogues of the library loaded as `library` in `place` (empty when it is neither
/// rocBLAS nor hipBLASLt), for `devices` (index and target ID), the variables not read.
pub(super) fn catalogues_in(
    place: &dyn Place,
    library: &Path,
    devices: &[(usize, String)],
) -> Vec<Catalogue> {
    let env = CatalogueEnvironment::default();
    catalogues_of(library, devices, &env, &mut Listings::new(place))
}

/// Whether the file named `name` is one of the libraries whose folder rocBLAS may have patched
/// in, and that folder from its bytes `data`.
pub(super) fn patched_folder_of(name: &Path, data: &[u8]) -> Option<String> {
    (Library::of(name)? == Library::RocBlas)
        .then(|| patched_folder_in(data))
        .flatten()
}

/// Whether a file named `name` is rocBLAS or hipBLASLt, whose kernels come from a catalogue
/// besides their bundles.
pub fn is_catalogue_library(name: &Path) -> bool {
    Library::of(name).is_some()
}

/// For the library at `path` (rocBLAS or hipBLASLt, on disk), or each such library among the
/// members of the package at `path`: the targets a device finds a kernel catalogue for, as
/// the library searches (its variables not read: the answer is what the files carry). A
/// processor is named bare when a catalogue serves it whatever its xnack mode, else with the
/// mode whose subfolder serves it (`gfx90a:xnack+`). Empty for other files, and for packages
/// none of whose `members` (as `ls` names them) is one of the libraries.
pub fn catalogue_targets(
    path: &Path,
    members: &[&Path],
    max_decompressed: u64,
) -> Vec<CatalogueTargets> {
    let candidates = candidates();
    let pairs: Vec<(usize, String)> = (candidates.iter())
        .map(|d| (d.index, d.target_id.clone()))
        .collect();
    let in_package = members.iter().any(|m| Library::of(m).is_some());
    let found: Vec<(PathBuf, Vec<Catalogue>)> = if in_package && super::package::is_package(path) {
        let machines = [candidates.clone()];
        let checks = super::package::check_package(path, &machines, max_decompressed);
        (checks.into_iter().flat_map(|c| c.files))
            .filter(|f| !f.catalogues.is_empty())
            .map(|f| (f.path, f.catalogues))
            .collect()
    } else if Library::of(path).is_some() && path.is_file() {
        vec![(path.to_path_buf(), catalogues_in(&Disk, path, &pairs))]
    } else {
        Vec::new()
    };
    found
        .into_iter()
        .filter_map(|(file, catalogues)| {
            let folder = catalogues.first()?.folder.clone();
            let ok: BTreeSet<&str> = (catalogues.iter())
                .flat_map(|c| &c.devices)
                .filter(|d| d.ok)
                .filter_map(|d| pairs.get(d.device).map(|(_, t)| t.as_str()))
                .collect();
            let targets: Vec<String> = (ok.iter())
                .filter(|t| match t.split_once(':') {
                    Some((processor, _)) => !ok.contains(processor),
                    None => true,
                })
                .map(|t| t.to_string())
                .collect();
            Some(CatalogueTargets {
                library: file,
                folder,
                targets,
            })
        })
        .collect()
}

/// The devices a catalogue is looked for: each processor of the table, bare and, where it
/// has an xnack mode, in each mode.
fn candidates() -> Vec<super::Device> {
    let mut targets = Vec::new();
    for p in PROCESSORS.iter().filter(|p| p.kind().name() == "native") {
        targets.push(p.name.to_string());
        if p.xnack {
            targets.push(format!("{}:xnack+", p.name));
            targets.push(format!("{}:xnack-", p.name));
        }
    }
    (targets.into_iter().enumerate())
        .map(|(index, target_id)| super::Device {
            index,
            isa: format!("{AMDGCN_ISA_PREFIX}{target_id}"),
            target_id,
            node: None,
        })
        .collect()
}

/// The catalogue of the library loaded as `library` when it is one of the libraries.
fn catalogues_of(
    library_path: &Path,
    devices: &[(usize, String)],
    env: &CatalogueEnvironment,
    listings: &mut Listings,
) -> Vec<Catalogue> {
    let Some(library) = Library::of(library_path) else {
        return Vec::new();
    };
    let place = listings.place;
    // The libraries take the folder of the path they were loaded by, links not resolved.
    let own = library_path.parent().unwrap_or(Path::new("."));
    let (folder, found_via, variable) = match library {
        Library::RocBlas => match &env.rocblas {
            Some(v) => (PathBuf::from(v), ROCBLAS_VAR.to_string(), true),
            None => {
                let last = place
                    .patched_folder(library_path)
                    .unwrap_or_else(|| "rocblas/library".to_string());
                let (f, via) = first_existing(place, own, &ROCBLAS_RELATIVE, &last);
                (f, via, false)
            }
        },
        Library::HipBlasLt => match &env.hipblaslt {
            Some(v) => (PathBuf::from(v), HIPBLASLT_VAR.to_string(), true),
            None => {
                let last = HIPBLASLT_RELATIVE[0];
                let (f, via) = first_existing(place, own, &HIPBLASLT_RELATIVE, last);
                (f, via, false)
            }
        },
    };
    let devices = devices
        .iter()
        .map(|(index, target_id)| {
            let processor = target_id.split(':').next().unwrap_or(target_id);
            let xnack = ["xnack+", "xnack-"]
                .into_iter()
                .find(|x| target_id.split(':').any(|f| f == *x));
            let base = match (library, variable) {
                // hipBLASLt looks for a folder of the processor only in the folder it finds.
                (Library::HipBlasLt, true) => folder.clone(),
                _ => subfolder(place, library, &folder, processor, xnack),
            };
            device(library, *index, processor, xnack, base, listings)
        })
        .collect();
    vec![Catalogue {
        library: library.name(),
        folder: place.shown(&folder),
        found_via,
        devices,
    }]
}

/// rocBLAS's folders relative to its own, tried in order (the first readable is taken).
const ROCBLAS_RELATIVE: [&str; 3] = ["../../Tensile/library", "library", "../rocblas/library"];

/// hipBLASLt's, tried in order (the first that exists is taken; the first when none does).
const HIPBLASLT_RELATIVE: [&str; 3] = ["hipblaslt/library", "../Tensile/library", "library"];

/// The first of `relative` that exists under `own`, else `last`, and how it was found.
fn first_existing(
    place: &dyn Place,
    own: &Path,
    relative: &[&str],
    last: &str,
) -> (PathBuf, String) {
    for r in relative {
        let candidate = own.join(r);
        if place.is_dir(&candidate) {
            return (candidate, (*r).to_string());
        }
    }
    (own.join(last), last.to_string())
}

/// The folder a distribution patched into rocBLAS, whose bytes are `data`: a string of its
/// `.rodata` (the library keeps it there: Debian's `/rocblas/4.4.1/library`).
fn patched_folder_in(data: &[u8]) -> Option<String> {
    let elf = object::File::parse(data).ok()?;
    let rodata = elf.section_by_name(".rodata")?.data().ok()?;
    patched_folder(rodata)
}

/// A string `/rocblas/<something>/library` standing alone in `data` (at its start or after a
/// NUL), the leading `/` dropped.
fn patched_folder(data: &[u8]) -> Option<String> {
    let starts = data.starts_with(b"/rocblas/").then_some(1);
    let after_nul = memchr::memmem::find_iter(data, b"\0/rocblas/").map(|at| at.checked_add(2));
    for start in starts.into_iter().map(Some).chain(after_nul) {
        let start = start?;
        let rest = data.get(start..)?;
        let end = memchr::memchr(0, rest)?;
        let text = std::str::from_utf8(rest.get(..end)?).ok()?;
        if end <= 64 && text.ends_with("/library") && !text.contains("..") {
            return Some(text.to_string());
        }
    }
    None
}

/// The folder a device's files are looked for in: the processor's own subfolder when it
/// exists (rocBLAS of the rocm-libraries monorepo tries `<processor>-xnack±` first).
fn subfolder(
    place: &dyn Place,
    library: Library,
    folder: &Path,
    processor: &str,
    xnack: Option<&str>,
) -> PathBuf {
    if library == Library::RocBlas {
        if let Some(x) = xnack {
            let own = folder.join(format!("{processor}-{x}"));
            if place.is_dir(&own) {
                return own;
            }
        }
    }
    let own = folder.join(processor);
    if place.is_dir(&own) {
        own
    } else {
        folder.to_path_buf()
    }
}

/// The names in the folders of a place, each folder listed once.
struct Listings<'p> {
    place: &'p dyn Place,
    names: HashMap<PathBuf, Vec<OsString>>,
}

impl<'p> Listings<'p> {
    fn new(place: &'p dyn Place) -> Listings<'p> {
        Listings {
            place,
            names: HashMap::new(),
        }
    }

    fn of(&mut self, folder: &Path) -> &[OsString] {
        let place = self.place;
        (self.names)
            .entry(folder.to_path_buf())
            .or_insert_with(|| place.names(folder))
    }

    fn has(&mut self, folder: &Path, name: &str) -> bool {
        self.of(folder)
            .iter()
            .any(|n| n.as_os_str() == OsStr::new(name))
    }
}

/// What device `index` of processor `processor` finds in `folder`.
fn device(
    library: Library,
    index: usize,
    processor: &str,
    xnack: Option<&str>,
    folder: PathBuf,
    listings: &mut Listings,
) -> CatalogueDevice {
    let tried: Vec<String> = match library {
        Library::RocBlas => vec![
            format!("TensileLibrary_lazy_{processor}.dat"),
            format!("TensileLibrary_{processor}.dat"),
            "TensileLibrary.dat".to_string(),
        ],
        Library::HipBlasLt => vec![format!("TensileLibrary_lazy_{processor}.dat")],
    };
    let opens = tried.iter().find(|n| listings.has(&folder, n)).cloned();
    let mapping = match library {
        Library::RocBlas => None,
        Library::HipBlasLt => [
            format!("TensileLiteLibrary_lazy_{processor}_Mapping.dat"),
            "TensileLiteLibrary_lazy_Mapping.dat".to_string(),
        ]
        .into_iter()
        .find(|n| listings.has(&folder, n)),
    };
    let kernels = ["", "-xnack-", "-xnack+"]
        .iter()
        .map(|x| format!("Kernels.so-000-{processor}{x}.hsaco"))
        .find(|n| listings.has(&folder, n));
    let code_objects = code_objects(listings.of(&folder), processor, xnack);
    let folder = listings.place.shown(&folder);
    let shown_folder = shown(&folder).into_owned();
    let (missing, message, then) = if opens.is_none() {
        let what = format!(
            "{} opens {} in {shown_folder}: none exists",
            library.name(),
            alternatives(&tried)
        );
        let (message, then) = match library {
            Library::RocBlas => (
                format!("rocBLAS error: Cannot read {shown_folder}/TensileLibrary.dat: No such file or directory for GPU arch : {processor}"),
                "the process aborts (SIGABRT) at the first call that needs Tensile",
            ),
            Library::HipBlasLt => (
                format!("rocblaslt error: Cannot read \"{shown_folder}/{}\": No such file or directory", tried.join("")),
                "every matmul returns an error (hipBLASLt error: Heuristic Fetch Failed)",
            ),
        };
        (Some(what), Some(message), Some(then))
    } else if library == Library::HipBlasLt && mapping.is_none() {
        (
            Some(format!("hipBLASLt opens TensileLiteLibrary_lazy_Mapping.dat in {shown_folder}: none exists")),
            Some(format!("No library mapping found in {shown_folder}; rocblaslt error: Could not initialize Tensile library mapping")),
            Some("every matmul returns an error (hipBLASLt error: Heuristic Fetch Failed)"),
        )
    } else {
        (None, None, None)
    };
    CatalogueDevice {
        device: index,
        processor: processor.to_string(),
        folder,
        tried,
        ok: missing.is_none(),
        opens,
        mapping,
        kernels,
        code_objects,
        missing,
        message,
        then,
    }
}

/// `a`, `a or b`, `a, b or c`.
fn alternatives(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} or {last}", first.join(", ")),
    }
}

/// How many of `names` the libraries load as code objects for `processor`: names ending in
/// `co` (`.co`, `.hsaco`) that contain it, not of the other xnack mode, not experimental.
fn code_objects(names: &[OsString], processor: &str, xnack: Option<&str>) -> usize {
    let other = match xnack {
        Some("xnack+") => Some("xnack-"),
        Some(_) => Some("xnack+"),
        None => None,
    };
    names
        .iter()
        .filter_map(|n| n.to_str())
        .filter(|n| n.ends_with("co") && n.contains(processor) && !n.contains("Experimental"))
        .filter(|n| other.is_none_or(|o| !n.contains(o)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_folder_is_read_from_the_strings() {
        let data = b"x\0/../rocblas/library\0/rocblas/4.4.1/library\0";
        assert_eq!(
            patched_folder(data).as_deref(),
            Some("rocblas/4.4.1/library")
        );
        assert_eq!(patched_folder(b"\0/../rocblas/library\0"), None);
        assert_eq!(patched_folder(b"\0/rocblas/library"), None);
        assert_eq!(
            patched_folder(b"/rocblas/4.4.1/library\0").as_deref(),
            Some("rocblas/4.4.1/library")
        );
    }

    #[test]
    fn alternatives_read_as_a_list() {
        let names = ["a".to_string(), "b".to_string(), "c".to_string()];
        assert_eq!(alternatives(&names), "a, b or c");
        assert_eq!(alternatives(&names[..1]), "a");
    }
}

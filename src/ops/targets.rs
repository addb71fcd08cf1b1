//! Which targets files carry code for: the targets every unit of code (a bundle, a CUDA fat
//! binary, the offload binaries of one translation unit, a bare image, the code objects a
//! split binary asks for by one index) has, and those only some have; AMD and CUDA units
//! apart, each runtime's targets judged over its own units. Also the oldest CUDA driver the
//! files' PTX and compressed entries need, and which entries a given driver cannot use.
//!
//! # Example
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::targets;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"code for gfx1100"),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 4096))?;
//!
//! let read = targets::read_file(&file, DEFAULT_MAX_DECOMPRESSED)?;
//! let report = targets::summary(vec![read]);
//! assert_eq!(report.every, ["gfx90a", "gfx1100"]);
//! assert!(report.some.is_empty());
//! assert_eq!(targets::cmake_lines(&report), "CMAKE_HIP_ARCHITECTURES='gfx90a;gfx1100'\n");
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;
use crate::format::bare::BareKind;
use crate::format::cuda_fatbin::{Compression, EntryKind};
use crate::format::image_target::Producer;
use crate::io::Input;
use crate::loads::cuda;
use crate::loads::cuda_driver::{self, Version};
use crate::ops::ls;
use crate::ops::support::image::{ImageRecord, Source};
use crate::target::processor::{Processor, PROCESSORS};

/// What one entry asks of a CUDA driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Need {
    /// The entry's target (`compute_90`, `sm_80`).
    pub target: String,
    /// Why: `PTX ISA 8.4`, or `zstd compression`.
    pub why: String,
    /// The oldest CUDA release whose driver can use it (`12.4`); `None` for a PTX ISA version
    /// newer than any release known.
    #[serde(serialize_with = "version_text")]
    pub cuda: Option<Version>,
}

/// One file: its units' targets, and what its CUDA entries ask of a driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileTargets {
    /// The file, as named (a name that is not UTF-8 with U+FFFD for each invalid sequence).
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub file: PathBuf,
    /// The file's name in base64, present only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<String>,
    /// How many units of device code it has.
    pub units: usize,
    /// The targets every unit of its runtime has.
    pub every: Vec<String>,
    /// The targets only some of them have.
    pub some: Vec<String>,
    /// What its CUDA entries ask of a driver, those that ask something.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub driver_needs: Vec<Need>,
    /// For rocBLAS and hipBLASLt (the file, or members of a package): each library and the
    /// targets a device finds its kernel catalogue for, each catalogue a unit of its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub catalogues: Vec<CatalogueTargets>,
    /// Each unit's targets, in file order.
    #[serde(skip)]
    pub unit_targets: Vec<BTreeSet<String>>,
}

/// The targets a library's kernel catalogue serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogueTargets {
    /// The library (`PACKAGE!member` for a member of a package).
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub library: PathBuf,
    /// Its catalogue folder: the code objects in it are the catalogue's, not units of their
    /// own (each is loaded only for the processor it is named for).
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub folder: PathBuf,
    /// The processors a device finds a catalogue for (bare: whatever its xnack mode; with
    /// `:xnack+` or `:xnack-` when only that mode's subfolder serves it), in the table's order.
    pub targets: Vec<String>,
}

/// The oldest driver the files need, and what decides it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Driver {
    /// The CUDA release (`12.4`); `None` when a PTX ISA is newer than any release known.
    #[serde(serialize_with = "version_text")]
    pub cuda: Option<Version>,
    /// Its first Linux driver (`550.54.14`), when known.
    pub linux: Option<&'static str>,
    /// What decides it: `PTX ISA 8.4`, `zstd compression`.
    pub why: String,
    /// The entry's target.
    pub target: String,
    /// The file that holds it.
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub file: PathBuf,
}

/// The answer for all the files: the field names are `offload targets --json`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Targets {
    /// The targets every unit (of their runtime, over all the files) has, AMD then CUDA.
    pub every: Vec<String>,
    /// The targets only some units have.
    pub some: Vec<String>,
    /// The AMD processors a device loads code from in every AMD unit (native code with any
    /// features, or a generic target's the HIP runtime loads for it).
    pub processors: Vec<String>,
    /// The oldest CUDA driver the files need, if they have PTX or zstd-compressed entries.
    pub driver: Option<Driver>,
    /// Each file, in the order given.
    pub files: Vec<FileTargets>,
}

fn version_text<S: serde::Serializer>(
    v: &Option<Version>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

fn plain_version<S: serde::Serializer>(v: &Version, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// A unit's key in its file: the scan's unit, or a split binary's code-object key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum UnitKey {
    Scanned(usize),
    Kpack(String),
}

/// Finds the kernel catalogues of the file at `path` (the members named in a package given
/// second), within a decompression limit: [`crate::ops::check::catalogue_targets`].
pub type CatalogueFinder = dyn Fn(&Path, &[&Path], u64) -> Vec<CatalogueTargets> + Sync;

/// Reads `path` as `offload ls` does (packages, archives, split binaries) and returns its
/// units and driver needs. Damage found in it is an error: a partial answer would understate.
pub fn read_file(path: &Path, max_decompressed: u64) -> Result<FileTargets> {
    read_file_finding(path, max_decompressed, &|_, _, _| Vec::new())
}

/// [`read_file`], the kernel catalogues `find` finds each a unit of their own.
pub fn read_file_finding(
    path: &Path,
    max_decompressed: u64,
    find: &CatalogueFinder,
) -> Result<FileTargets> {
    let (images, problems) = ls::list_file(path, max_decompressed)?;
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    let members: Vec<&Path> = (images.iter())
        .filter_map(|i| i.package.as_ref())
        .map(|m| m.name.as_path())
        .collect();
    let folders = find(path, &members, max_decompressed);
    // A package's catalogue code objects count in their catalogue's unit.
    let in_folder = |image: &ImageRecord| {
        let member = image.package.as_ref().map(|m| m.name.as_path());
        member.is_some_and(|m| folders.iter().any(|f| m.starts_with(&f.folder)))
    };
    let kept: Vec<ImageRecord> = (images.into_iter()).filter(|i| !in_folder(i)).collect();
    let mut file = of_images(path, &kept)?;
    for mut found in folders {
        found.targets.sort_by_key(|t| order(t));
        file.catalogues.push(found);
    }
    if !file.catalogues.is_empty() {
        let (every, some) = every_and_some(&file.all_units());
        file.units = file.unit_targets.len() + file.catalogues.len();
        file.every = every;
        file.some = some;
    }
    Ok(file)
}

impl FileTargets {
    /// Its units, and a unit for each kernel catalogue: a processor a catalogue serves counts
    /// as every target of that processor (and xnack mode) the other units name.
    fn all_units(&self) -> Vec<BTreeSet<String>> {
        let named: BTreeSet<&String> = self.unit_targets.iter().flatten().collect();
        let mut units = self.unit_targets.clone();
        for catalogue in &self.catalogues {
            units.push(catalogue_unit(&catalogue.targets, &named));
        }
        units
    }
}

/// A catalogue's unit: each of `targets` as the targets of `named` it serves (those of its
/// processor, of its xnack mode when it has one), or as itself when none is named.
fn catalogue_unit(targets: &[String], named: &BTreeSet<&String>) -> BTreeSet<String> {
    let mut unit = BTreeSet::new();
    for served in targets {
        let (processor, mode) = served.split_once(':').unwrap_or((served, ""));
        let matching: Vec<&&String> = (named.iter())
            .filter(|t| !is_cuda(t))
            .filter(|t| t.split(':').next() == Some(processor))
            .filter(|t| mode.is_empty() || t.split(':').any(|f| f == mode))
            .collect();
        if matching.is_empty() {
            unit.insert(served.clone());
        }
        unit.extend(matching.into_iter().map(|t| (*t).clone()));
    }
    unit
}

/// The units and driver needs of `images`, all of the file `path`.
pub fn of_images(path: &Path, images: &[ImageRecord]) -> Result<FileTargets> {
    let mut units: BTreeMap<UnitKey, BTreeSet<String>> = BTreeMap::new();
    let mut needs = Vec::new();
    let mut input: Option<Input> = None;
    for image in images {
        if image.producer == Producer::Host || image.target_id.is_empty() || image.size == 0 {
            continue;
        }
        let key = match image.source.kpack() {
            // `<binary>#<index>`: the code object the loader asks for once, whatever the device.
            Some(place) => UnitKey::Kpack(place.key.clone()),
            None => UnitKey::Scanned(image.unit),
        };
        units
            .entry(key)
            .or_default()
            .insert(image.target_id.clone());
        match &image.source {
            Source::CudaEntry(kind, place) => {
                if *kind == EntryKind::Ptx {
                    if let Ok(isa) = place.code_version.parse::<Version>() {
                        needs.push(ptx_need(&image.target_id, isa));
                    }
                }
                if place.compression == Compression::Zstd {
                    needs.push(Need {
                        target: image.target_id.clone(),
                        why: "zstd compression".into(),
                        cuda: Some(cuda_driver::ZSTD_CUDA),
                    });
                }
            }
            Source::Bare(BareKind::Ptx) if image.package.is_none() => {
                if input.is_none() {
                    input = Some(Input::open(path)?);
                }
                let text = input.as_ref().and_then(|i| bare_bytes(i, image));
                if let Some(isa) = text.and_then(cuda_driver::ptx_text_version) {
                    needs.push(ptx_need(&image.target_id, isa));
                }
            }
            _ => {}
        }
    }
    let unit_targets: Vec<BTreeSet<String>> = units.into_values().collect();
    let (every, some) = every_and_some(&unit_targets);
    Ok(FileTargets {
        file: path.to_path_buf(),
        file_bytes: crate::io::bytes_unless_text(path),
        units: unit_targets.len(),
        every,
        some,
        driver_needs: needs,
        catalogues: Vec::new(),
        unit_targets,
    })
}

/// The bytes of a bare image in the file `input`.
fn bare_bytes<'a>(input: &'a Input, image: &ImageRecord) -> Option<&'a [u8]> {
    let start = usize::try_from(image.offset?).ok()?;
    let end = start.checked_add(usize::try_from(image.size).ok()?)?;
    input.get(start..end)
}

/// What PTX of ISA version `isa` asks of a driver.
fn ptx_need(target: &str, isa: Version) -> Need {
    Need {
        target: target.to_string(),
        why: format!("PTX ISA {isa}"),
        cuda: cuda_driver::cuda_of_ptx(isa),
    }
}

/// Whether a target is CUDA's (else AMD's, or another runtime judged with AMD's).
fn is_cuda(target: &str) -> bool {
    cuda::is_cuda_target(target)
}

/// The targets every unit of each runtime has, and those only some have, each in order.
fn every_and_some(units: &[BTreeSet<String>]) -> (Vec<String>, Vec<String>) {
    let mut sides = Sides::default();
    for unit in units {
        sides.add(unit);
    }
    sides.every_and_some()
}

/// The targets of units folded in one at a time, each runtime's apart (AMD's, then CUDA's):
/// those all its units have, and those any has. A unit with no target of a runtime takes no
/// part in that runtime's answer.
#[derive(Debug, Default)]
struct Sides([Side; 2]);

/// One runtime's targets over its units.
#[derive(Debug, Default)]
struct Side {
    /// The targets every unit so far has; `None` before the first unit.
    every: Option<BTreeSet<String>>,
    /// The targets any unit has.
    any: BTreeSet<String>,
}

impl Sides {
    /// Folds in one unit.
    fn add(&mut self, unit: &BTreeSet<String>) {
        for (cuda_side, side) in [false, true].into_iter().zip(&mut self.0) {
            let mine: BTreeSet<&String> = unit.iter().filter(|t| is_cuda(t) == cuda_side).collect();
            if mine.is_empty() {
                continue;
            }
            side.any.extend(mine.iter().map(|t| (*t).clone()));
            side.every = Some(match side.every.take() {
                Some(before) => before.into_iter().filter(|t| mine.contains(t)).collect(),
                None => mine.into_iter().cloned().collect(),
            });
        }
    }

    /// Every target any unit has, of both runtimes.
    fn named(&self) -> BTreeSet<&String> {
        self.0.iter().flat_map(|side| &side.any).collect()
    }

    /// The targets every unit of each runtime has, and those only some have, each in order.
    fn every_and_some(&self) -> (Vec<String>, Vec<String>) {
        let mut every = Vec::new();
        let mut some = Vec::new();
        for side in &self.0 {
            for target in &side.any {
                if side.every.as_ref().is_some_and(|e| e.contains(target)) {
                    every.push(target.clone());
                } else {
                    some.push(target.clone());
                }
            }
        }
        every.sort_by_key(|t| order(t));
        some.sort_by_key(|t| order(t));
        (every, some)
    }
}

/// The order targets are listed in: AMD processors in the processor table's order (then
/// unknown ones by name), then CUDA by SM, a cubin before PTX of the same SM.
fn order(target: &str) -> (u8, usize, usize, String) {
    if let Some((kind, sm)) = cuda::target_of_name(target) {
        let number = target.trim_start_matches(|c: char| !c.is_ascii_digit());
        let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
        let value = digits.parse::<usize>().unwrap_or(usize::MAX);
        let ptx = usize::from(kind == EntryKind::Ptx);
        return (1, value, ptx, sm.to_string() + target);
    }
    let processor = target.split(':').next().unwrap_or(target);
    let at = PROCESSORS
        .iter()
        .position(|p| p.name == processor)
        .unwrap_or(usize::MAX);
    (0, at, 0, target.to_string())
}

/// The answer for the files read.
pub fn summary(files: Vec<FileTargets>) -> Targets {
    let mut summary = Summary::new(installed(files.iter().flat_map(|f| &f.catalogues)));
    for file in &files {
        summary.add(file);
    }
    Targets {
        files,
        ..summary.finish()
    }
}

/// The installed folders of `catalogues`, canonical (a folder of a package's tree is none).
fn installed<'a>(catalogues: impl Iterator<Item = &'a CatalogueTargets>) -> Vec<PathBuf> {
    catalogues
        .filter_map(|c| std::fs::canonicalize(&c.folder).ok())
        .collect()
}

/// The installed kernel catalogue folders of the files at `paths` (canonical), as `find`
/// finds them for the files themselves (rocBLAS and hipBLASLt on disk; members of packages
/// have none on disk): what [`Summary::new`] takes before the files are read.
pub fn catalogue_folders(
    paths: impl IntoIterator<Item = impl AsRef<Path>>,
    max_decompressed: u64,
    find: &CatalogueFinder,
) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for path in paths {
        folders.extend(installed(find(path.as_ref(), &[], max_decompressed).iter()));
    }
    folders
}

/// The answer for all the files, folded in a file at a time as they are read, so that
/// nothing of a file is kept once it is added (but a catalogue's targets, until the other
/// units are all in): [`Summary::finish`] gives it, its `files` empty. [`summary`] is this
/// over files held.
#[derive(Debug, Default)]
pub struct Summary {
    /// The installed catalogue folders (canonical): the code objects of the files in them
    /// count in their catalogue's unit, not as units of their own.
    folders: Vec<PathBuf>,
    /// The targets of the units so far.
    units: Sides,
    /// The AMD processors a device loads code from in every AMD unit so far; `None` before
    /// the first.
    processors: Option<BTreeSet<&'static str>>,
    /// The targets each catalogue serves: made units at the end, when the targets of their
    /// processors the other units name are all known.
    catalogues: Vec<Vec<String>>,
    /// The need that asks for the newest driver so far, and its file (the first, on a tie).
    driver: Option<(Need, PathBuf)>,
}

impl Summary {
    /// A summary of no file yet; `folders` are the installed catalogue folders of all the
    /// files to come (see [`catalogue_folders`]), canonical.
    pub fn new(folders: Vec<PathBuf>) -> Summary {
        Summary {
            folders,
            ..Summary::default()
        }
    }

    /// Folds in `file`, after those added before it.
    pub fn add(&mut self, file: &FileTargets) {
        if !self.in_folder(&file.file) {
            for unit in &file.unit_targets {
                self.add_unit(unit);
            }
        }
        (self.catalogues).extend(file.catalogues.iter().map(|c| c.targets.clone()));
        // A version the table does not know is newer than any it knows.
        let newer = |a: &Need, b: &Need| match (a.cuda, b.cuda) {
            (None, Some(_)) => true,
            (Some(x), Some(y)) => x > y,
            _ => false,
        };
        for need in &file.driver_needs {
            if self.driver.as_ref().is_none_or(|(b, _)| newer(need, b)) {
                self.driver = Some((need.clone(), file.file.clone()));
            }
        }
    }

    /// Whether the file at `path` lies in an installed catalogue folder.
    fn in_folder(&self, path: &Path) -> bool {
        !self.folders.is_empty()
            && std::fs::canonicalize(path)
                .is_ok_and(|real| self.folders.iter().any(|f| real.starts_with(f)))
    }

    /// Folds in one unit.
    fn add_unit(&mut self, unit: &BTreeSet<String>) {
        self.units.add(unit);
        let amd: Vec<&str> = unit
            .iter()
            .filter(|t| !is_cuda(t))
            .map(|t| t.split(':').next().unwrap_or(t))
            .collect();
        if amd.is_empty() {
            return;
        }
        let loads: BTreeSet<&'static str> = PROCESSORS
            .iter()
            .filter(|p| p.kind().name() == "native")
            .filter(|p| amd.contains(&p.name) || p.generic_hip.is_some_and(|g| amd.contains(&g)))
            .map(|p| p.name)
            .collect();
        self.processors = Some(match self.processors.take() {
            Some(before) => before.intersection(&loads).copied().collect(),
            None => loads,
        });
    }

    /// The answer for the files added, the catalogues' units folded in last; its `files`
    /// empty.
    pub fn finish(mut self) -> Targets {
        let named: BTreeSet<String> = self.units.named().into_iter().cloned().collect();
        let named: BTreeSet<&String> = named.iter().collect();
        for targets in std::mem::take(&mut self.catalogues) {
            self.add_unit(&catalogue_unit(&targets, &named));
        }
        let (every, some) = self.units.every_and_some();
        let common = self.processors.unwrap_or_default();
        let processors = (PROCESSORS.iter())
            .map(|p: &Processor| p.name)
            .filter(|name| common.contains(name))
            .map(str::to_string)
            .collect();
        let driver = self.driver.map(|(need, file)| Driver {
            cuda: need.cuda,
            linux: need.cuda.and_then(cuda_driver::linux_driver),
            why: need.why,
            target: need.target,
            file,
        });
        Targets {
            every,
            some,
            processors,
            driver,
            files: Vec::new(),
        }
    }
}

/// The default output: `every: ...`, `some: ...`, and the driver line when there is CUDA code
/// that asks for one.
pub fn text(report: &Targets) -> String {
    let mut text = format!(
        "every:{}\nsome:{}\n",
        spaced(&report.every),
        spaced(&report.some)
    );
    if let Some(driver) = &report.driver {
        text.push_str(&driver_line(driver));
    }
    text
}

/// ` a b c`, or nothing for no items.
fn spaced(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!(" {}", crate::io::shown(i)))
        .collect()
}

/// `driver: CUDA 12.4 (Linux 550.54.14) or newer: PTX ISA 8.4 (compute_90) in libx.so`.
pub fn driver_line(driver: &Driver) -> String {
    let release = match (driver.cuda, driver.linux) {
        (Some(cuda), Some(linux)) => format!("CUDA {cuda} (Linux {linux}) or newer"),
        (Some(cuda), None) => format!("CUDA {cuda} or newer"),
        (None, _) => "a CUDA release newer than any known".to_string(),
    };
    format!(
        "driver: {release}: {} ({}) in {}\n",
        driver.why,
        driver.target,
        crate::io::shown(&driver.file)
    )
}

/// `--format debian`: the processors, for Debian's `X-ROCm-Built-For:` field.
/// Nothing when no AMD unit is there.
pub fn debian_line(report: &Targets) -> String {
    if report.processors.is_empty() {
        return String::new();
    }
    report.processors.join(" ") + "\n"
}

/// The AMD targets of `every` that the lists users write can name (`gfx` target IDs).
fn amd_list(report: &Targets) -> Vec<&str> {
    report
        .every
        .iter()
        .filter(|t| !is_cuda(t) && t.starts_with("gfx"))
        .map(String::as_str)
        .collect()
}

/// The CUDA SMs of `every` (`80`, `90a`), each with whether a cubin and whether PTX is there,
/// in order.
fn cuda_sms(report: &Targets) -> Vec<(String, bool, bool)> {
    let mut sms: Vec<(String, bool, bool)> = Vec::new();
    for target in &report.every {
        let Some((kind, _)) = cuda::target_of_name(target) else {
            continue;
        };
        let sm = target
            .trim_start_matches("sm_")
            .trim_start_matches("compute_")
            .to_string();
        let at = match sms.iter().position(|(s, _, _)| *s == sm) {
            Some(at) => at,
            None => {
                sms.push((sm, false, false));
                sms.len() - 1
            }
        };
        if let Some(entry) = sms.get_mut(at) {
            match kind {
                EntryKind::Ptx => entry.2 = true,
                _ => entry.1 = true,
            }
        }
    }
    sms
}

/// `NAME='a;b'` lines for the lists that are not empty.
fn assignments(pairs: &[(&str, Vec<String>)]) -> String {
    pairs
        .iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(name, items)| format!("{name}='{}'\n", items.join(";")))
        .collect()
}

/// `--format cmake`: `CMAKE_HIP_ARCHITECTURES='gfx90a;gfx1100'` and
/// `CMAKE_CUDA_ARCHITECTURES='80-real;90'` (a cubin alone `-real`, PTX alone `-virtual`,
/// both plain), for the targets every unit has.
pub fn cmake_lines(report: &Targets) -> String {
    let amd = amd_list(report).into_iter().map(str::to_string).collect();
    let cuda = cuda_sms(report)
        .into_iter()
        .map(|(sm, cubin, ptx)| match (cubin, ptx) {
            (true, true) => sm,
            (true, false) => format!("{sm}-real"),
            _ => format!("{sm}-virtual"),
        })
        .collect();
    assignments(&[
        ("CMAKE_HIP_ARCHITECTURES", amd),
        ("CMAKE_CUDA_ARCHITECTURES", cuda),
    ])
}

/// `--format torch`: `PYTORCH_ROCM_ARCH='gfx90a;gfx1100'` and
/// `TORCH_CUDA_ARCH_LIST='8.0;9.0+PTX'`. PyTorch's list cannot ask for PTX without the SM's
/// code: an SM with PTX alone is left out.
pub fn torch_lines(report: &Targets) -> String {
    let amd = amd_list(report).into_iter().map(str::to_string).collect();
    let cuda = cuda_sms(report)
        .into_iter()
        .filter(|(_, cubin, _)| *cubin)
        .map(|(sm, _, ptx)| {
            let digits = sm.trim_end_matches(|c: char| !c.is_ascii_digit());
            let suffix = &sm[digits.len()..];
            let split = digits.len().saturating_sub(1);
            let (major, minor) = digits.split_at(split);
            let plus = if ptx { "+PTX" } else { "" };
            format!("{major}.{minor}{suffix}{plus}")
        })
        .collect();
    assignments(&[("PYTORCH_ROCM_ARCH", amd), ("TORCH_CUDA_ARCH_LIST", cuda)])
}

/// What a driver of CUDA `driver` cannot use in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unusable {
    /// The file.
    #[serde(serialize_with = "crate::ops::support::names::text")]
    pub path: PathBuf,
    /// The entries, with what each needs.
    pub entries: Vec<Need>,
}

/// `offload check --driver`: what a driver of CUDA release `driver` cannot use in each file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverCheck {
    /// The driver's CUDA release.
    #[serde(serialize_with = "plain_version")]
    pub driver: Version,
    /// The files with entries it cannot use.
    pub files: Vec<Unusable>,
}

/// What a driver of CUDA `driver` cannot use in `files` (read as `read_file` does; a file that
/// cannot be read is left out: the check names it).
pub fn driver_check(files: &[&Path], driver: Version, max_decompressed: u64) -> DriverCheck {
    DriverCheck {
        driver,
        files: (files.iter())
            .filter_map(|path| unusable(path, driver, max_decompressed))
            .collect(),
    }
}

/// What a driver of CUDA `driver` cannot use in the file at `path` (read as `read_file` does);
/// `None` when it can use everything, or the file cannot be read.
pub fn unusable(path: &Path, driver: Version, max_decompressed: u64) -> Option<Unusable> {
    let file = read_file(path, max_decompressed).ok()?;
    let entries: Vec<Need> = file
        .driver_needs
        .into_iter()
        .filter(|n| n.cuda.is_none_or(|c| c > driver))
        .collect();
    (!entries.is_empty()).then(|| Unusable {
        path: path.to_path_buf(),
        entries,
    })
}

/// The note `offload check --driver` prints for one file.
pub fn unusable_note(driver: Version, file: &Unusable) -> String {
    let entries: Vec<String> = file
        .entries
        .iter()
        .map(|n| match n.cuda {
            Some(cuda) => format!("{} ({}, needs CUDA {cuda})", n.target, n.why),
            None => format!("{} ({}, newer than any CUDA known)", n.target, n.why),
        })
        .collect();
    format!(
        "note: {}: a CUDA {driver} driver cannot use {}\n",
        crate::io::shown(&file.path),
        entries.join(", ")
    )
}
